/* check_xq.h - the int8-x products (matvec_x8.comp) run again with x quantized once per step
 * (vkllm__op_quantize_x8 into a buffer, the X_Q8 kernels), as the forward pass runs them: the
 * quantized buffer must hold what vkllm__ref_quantize_x8 makes of x, and the products must be the
 * very bits of the in-workgroup quantization's (check_matrix.c, check_moe.c). */
#ifndef VKLLM_CHECK_XQ_H
#define VKLLM_CHECK_XQ_H

#include "check_impl.h"

/* A command list begun with x (bx: ncx columns of kk) quantized into *bq (a new buffer); the
 * caller records the product reading *bq, then calls vkllm__chk_xq_end. 0 on failure (k->st). */
int vkllm__chk_xq_begin(struct chk *k, struct vkllm__buffer *bx, uint32_t ncx, uint32_t kk, struct vkllm__cmd **cmd,
                        struct vkllm__buffer **bq);
/* Ends and submits cmd (k->r untouched), then checks that its dispatches were quantize_x8 and the
 * X_Q8 kernels (where timed) and that bq holds xr (vkllm__chk_x_seen's copy of x) as
 * vkllm__ref_quantize_x8 rounds it, each block's d * sum too. 0 on failure. */
int vkllm__chk_xq_end(struct chk *k, struct vkllm__cmd *cmd, struct vkllm__buffer *bq, const float *xr, uint32_t ncx,
                      uint32_t kk);

#endif /* VKLLM_CHECK_XQ_H */
