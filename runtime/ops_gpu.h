/* ops_gpu.h - record one op into a command list: the vocabulary forward.c is written in.
 * No Vulkan types; each function picks the shader variant, workgroup size and grid, fills the
 * push constants and calls vkllm__cmd_dispatch (which checks everything). Buffers are f32 unless
 * said otherwise; shapes in the comments are (rows, cols), cols contiguous. */
#ifndef VKLLM_OPS_GPU_H
#define VKLLM_OPS_GPU_H

#include "gpu.h"

/* A tensor view on the device: a buffer range. */
struct vkllm__view {
    const struct vkllm__buffer *buf;
    uint64_t offset; /* bytes */
    uint64_t size;   /* bytes; 0 = to the end of buf */
};

static inline struct vkllm__view vkllm__view_of(const struct vkllm__buffer *b) {
    struct vkllm__view v = {b, 0, 0};
    return v;
}

/* Workgroup size used by the elementwise and row ops (0 = pick from the device). Tests set it to
 * exercise awkward sizes. */
void vkllm__ops_set_wg(uint32_t wg);

/* o (n,) = a (n,) + b (nb,) repeated */
vkllm_status vkllm__op_add(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view a,
                           struct vkllm__view b, uint32_t n, uint32_t nb);
/* o (n,) = a (n,) * b (nb,) repeated */
vkllm_status vkllm__op_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view a,
                           struct vkllm__view b, uint32_t n, uint32_t nb);
/* o (nrows, ncols) = rmsnorm(x) * w (ncols,) */
vkllm_status vkllm__op_rmsnorm(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x,
                               struct vkllm__view w, uint32_t ncols, uint32_t nrows, float eps);
/* o (nrows, ncols) = softmax(scale * x) */
vkllm_status vkllm__op_softmax(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x,
                               uint32_t ncols, uint32_t nrows, float scale);
/* o (n,) = silu(gate) * up */
vkllm_status vkllm__op_silu_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view gate,
                                struct vkllm__view up, uint32_t n);

#endif
