/* ops_matvec_xq.h - x quantized to int8 once per step for the decode products that take it
 * (matvec_x8.comp's X_Q8 variants; ops_matvec.c). The forward pass owns the buffer: it quantizes
 * an activation once with vkllm__op_quantize_x8 (a dispatch), then hands the buffer to every
 * product of that activation; each product that runs matvec_x8 reads it instead of quantizing x in
 * every workgroup, and gives the same bits. Products that do not run matvec_x8 ignore it. */
#ifndef VKLLM_OPS_MATVEC_XQ_H
#define VKLLM_OPS_MATVEC_XQ_H

#include "ops_gpu.h"

/* Groups of 128 elements (4 blocks of 32, 160 bytes: shaders/include/quant_x8.glsl) per column of
 * k elements, and the bytes of ncols such columns. */
uint64_t vkllm__xq8_col_groups(uint64_t k);
uint64_t vkllm__xq8_bytes(uint64_t k, uint64_t ncols);

/* xq = x (ncols columns of k elements, one after another; k % 32 == 0) quantized as matvec_x8
 * quantizes it (vkllm__ref_quantize_x8's rounding), column j at group j * vkllm__xq8_col_groups(k).
 * xq's offset must be aligned for a storage binding. */
vkllm_status vkllm__op_quantize_x8(struct vkllm__cmd *c, struct vkllm__view xq, struct vkllm__view x, uint32_t k,
                                   uint32_t ncols);

/* 1 where the forward pass quantizes x once per step for these products (the tuning's matvec_xq). */
int vkllm__matvec_xq_on(const struct vkllm__gpu *gpu);

/* vkllm__op_matvec, vkllm__op_matvec_glu, vkllm__op_matvec_id and vkllm__op_matvec_id_grouped with
 * x also quantized in xq (vkllm__op_quantize_x8 of x; the experts' products: of x's columns
 * 0, 1, .. that picks share x_div at a time). xq.buf NULL, or a product that does not run
 * matvec_x8 (vkllm__matvec_x8_applies, vkllm__matvec_id_x8_applies): the same as those ops. */
vkllm_status vkllm__op_matvec_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 struct vkllm__view x, struct vkllm__view xq, uint32_t ncols);
vkllm_status vkllm__op_matvec_glu_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                     struct vkllm__view x, struct vkllm__view xq);
vkllm_status vkllm__op_matvec_id_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                    uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                    struct vkllm__view ids, struct vkllm__view xq, uint32_t ncols);
vkllm_status vkllm__op_matvec_id_grouped_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                            uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                            struct vkllm__view group, struct vkllm__view xq, uint32_t ncols);

#endif /* VKLLM_OPS_MATVEC_XQ_H */
