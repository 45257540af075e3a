/* ops_gpu.c - op recording helpers (see ops_gpu.h). */
#include "ops_gpu.h"
#include "shader_abi.h"

/* Workgroup size for elementwise and row ops: the tuning's ops_wg, else a power of two, a multiple
 * of the subgroup size where possible, within the device's limits. */
static uint32_t pick_wg(const struct vkllm__gpu *gpu) {
    long forced = vkllm__gpu_tuning(gpu)->ops_wg;
    if (forced > 0 && forced <= 65536) return (uint32_t)forced;
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    uint32_t wg = 256;
    while (wg > d->max_workgroup_invocations || wg > d->max_workgroup_size[0]) wg /= 2;
    return wg ? wg : 1;
}

/* flops: per output element (add, mul 1; silu_mul: exp, add, division, multiply). */
static vkllm_status elementwise(struct vkllm__cmd *c, enum vkllm__shader_id id, const char *label, uint32_t flops,
                                struct vkllm__view o, struct vkllm__view a, struct vkllm__view b, uint32_t n,
                                uint32_t nb) {
    if (n == 0 || nb == 0 || nb > n) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: n=%u nb=%u", label, n, nb);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_elementwise pc = {n, nb};
    struct vkllm__dispatch d = {
        .shader = id,
        .n_spec = 1,
        .spec = {pick_wg(gpu)},
        .n_bind = 3,
        .bind = {vkllm__bind(a), vkllm__bind(b), vkllm__bind(o)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = label,
        .cost = {.bytes_read = ((uint64_t)n + nb) * 4, .bytes_written = (uint64_t)n * 4, .flops = (uint64_t)n * flops},
    };
    vkllm__gpu_grid_1d(gpu, n, d.spec[0], d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

vkllm_status vkllm__op_add(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view a, struct vkllm__view b,
                           uint32_t n, uint32_t nb) {
    return elementwise(c, VKLLM__SHADER_ADD_F32, "add", 1, o, a, b, n, nb);
}

vkllm_status vkllm__op_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view a, struct vkllm__view b,
                           uint32_t n, uint32_t nb) {
    return elementwise(c, VKLLM__SHADER_MUL_F32, "mul", 1, o, a, b, n, nb);
}

vkllm_status vkllm__op_silu_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view gate,
                                struct vkllm__view up, uint32_t n) {
    return elementwise(c, VKLLM__SHADER_SILU_MUL_F32, "silu_mul", 4, o, gate, up, n, n);
}

vkllm_status vkllm__op_gelu_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view gate,
                                struct vkllm__view up, uint32_t n) {
    return elementwise(c, VKLLM__SHADER_GELU_MUL_F32, "gelu_mul", 9, o, gate, up, n, n);
}

vkllm_status vkllm__op_swiglu_oai(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view gate,
                                  struct vkllm__view up, uint32_t n) {
    return elementwise(c, VKLLM__SHADER_SWIGLU_OAI_F32, "swiglu_oai", 7, o, gate, up, n, n);
}

vkllm_status vkllm__op_softcap(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, struct vkllm__view cap,
                               uint32_t n) {
    return elementwise(c, VKLLM__SHADER_SOFTCAP_F32, "softcap", 4, o, x, cap, n, 1);
}

vkllm_status vkllm__op_need(const char *op, const char *what, struct vkllm__view v, uint64_t bytes) {
    uint64_t have = vkllm__view_bytes(v);
    if (have < bytes)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: %s covers %llu bytes, needs %llu", op, what,
                          (unsigned long long)have, (unsigned long long)bytes);
    return VKLLM_STATUS_OK;
}

/* One workgroup per row, rows spread over x and y. */
static void row_grid(const struct vkllm__gpu *gpu, uint32_t nrows, uint32_t groups[3]) {
    vkllm__gpu_grid_1d(gpu, nrows, 1, groups);
}

vkllm_status vkllm__op_rmsnorm(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, struct vkllm__view w,
                               uint32_t ncols, uint32_t nrows, float eps) {
    if (ncols == 0 || nrows == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "rmsnorm: %u x %u", nrows, ncols);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_rows pc = {ncols, nrows, eps, 1.0f};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_RMSNORM_F32,
        .n_spec = 1,
        .spec = {pick_wg(gpu)},
        .n_bind = 3,
        .bind = {vkllm__bind(x), vkllm__bind(w), vkllm__bind(o)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "rmsnorm",
        /* sum of squares (2 per element), 1/sqrt (2 per row), x * inv * w (2 per element) */
        .cost = {.bytes_read = ((uint64_t)nrows + 1) * ncols * 4,
                 .bytes_written = (uint64_t)nrows * ncols * 4,
                 .flops = (uint64_t)nrows * (4ull * ncols + 2)},
    };
    row_grid(gpu, nrows, d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

vkllm_status vkllm__op_add_rmsnorm(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x,
                                   struct vkllm__view d, struct vkllm__view w, uint32_t ncols, uint32_t nrows,
                                   float eps) {
    if (ncols == 0 || nrows == 0)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "add_rmsnorm: %u x %u", nrows, ncols);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_rows pc = {ncols, nrows, eps, 1.0f};
    uint64_t elems = (uint64_t)nrows * ncols;
    struct vkllm__dispatch d_ = {
        .shader = VKLLM__SHADER_ADD_RMSNORM_F32,
        .n_spec = 1,
        .spec = {pick_wg(gpu)},
        .n_bind = 4,
        .bind = {vkllm__bind(x), vkllm__bind(d), vkllm__bind(w), vkllm__bind(o)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "add_rmsnorm",
        /* x and d read, x written, x read again with w, o written; flops: the add, then rmsnorm's */
        .cost = {.bytes_read = (3 * elems + ncols) * 4,
                 .bytes_written = 2 * elems * 4,
                 .flops = elems * 5 + 2ull * nrows},
    };
    row_grid(gpu, nrows, d_.groups);
    return vkllm__cmd_dispatch(c, &d_);
}

vkllm_status vkllm__op_softmax(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, uint32_t ncols,
                               uint32_t nrows, float scale) {
    if (ncols == 0 || nrows == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "softmax: %u x %u", nrows, ncols);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_rows pc = {ncols, nrows, 0.0f, scale};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_SOFTMAX_F32,
        .n_spec = 1,
        .spec = {pick_wg(gpu)},
        .n_bind = 2,
        .bind = {vkllm__bind(x), vkllm__bind(o)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "softmax",
        /* scale and max (2), subtract and exp (2), sum (1), divide (1) per element */
        .cost = {.bytes_read = (uint64_t)nrows * ncols * 4,
                 .bytes_written = (uint64_t)nrows * ncols * 4,
                 .flops = (uint64_t)nrows * ncols * 6},
    };
    row_grid(gpu, nrows, d.groups);
    return vkllm__cmd_dispatch(c, &d);
}
