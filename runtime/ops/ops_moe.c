/* ops_moe.c - mixture of experts on the device (shaders/moe.comp, shaders/matvec_id.comp): the
 * router's top-k per token, the picked experts' products (each column reads only its expert's
 * rows, so a decode step reads the active parameters, not all of them), the weighted sum. */
#include "ops_gpu.h"
#include "shader_abi.h"
#include "types.h"

#define MOE_WG 64
#define MATVEC_ID_WG 64


vkllm_status vkllm__op_moe_route(struct vkllm__cmd *c, struct vkllm__view ids, struct vkllm__view w,
                                 struct vkllm__view logits, uint32_t n, uint32_t n_expert, uint32_t k) {
    if (n == 0 || n_expert == 0 || n_expert > 1024 || k == 0 || k > 64 || k > n_expert)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "moe_route: %u tokens, %u of %u experts (1..64 of at most 1024)",
                          n, k, n_expert);
    vkllm_status st;
    if ((st = vkllm__op_need("moe_route", "logits", logits, (uint64_t)n * n_expert * 4)) ||
        (st = vkllm__op_need("moe_route", "ids", ids, (uint64_t)n * k * 4)) || (st = vkllm__op_need("moe_route", "w", w, (uint64_t)n * k * 4)))
        return st;
    if (n > vkllm__gpu_info(vkllm__cmd_gpu(c))->max_workgroup_count[0])
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "moe_route: %u tokens in one dispatch", n);
    struct vkllm__pc_moe pc = {n, n_expert, k, 0};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_MOE_ROUTE_F32, .n_spec = 1, .spec = {MOE_WG},
        .n_bind = 3, .bind = {vkllm__bind(logits), vkllm__bind(ids), vkllm__bind(w)},
        .push = &pc, .push_size = sizeof pc, .label = "moe_route",
        .groups = {n, 1, 1},
        .cost = {.bytes_read = (uint64_t)n * n_expert * 4, .bytes_written = (uint64_t)n * k * 8,
                 .flops = (uint64_t)n * n_expert * (3 + k)},
    };
    return vkllm__cmd_dispatch(c, &d);
}

vkllm_status vkllm__op_moe_sum(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view y, struct vkllm__view w,
                               uint32_t n, uint32_t k, uint32_t width) {
    if (n == 0 || k == 0 || width == 0)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "moe_sum: %u tokens, %u picks, width %u", n, k, width);
    vkllm_status st;
    uint64_t out = (uint64_t)n * width;
    if ((st = vkllm__op_need("moe_sum", "y", y, out * k * 4)) || (st = vkllm__op_need("moe_sum", "w", w, (uint64_t)n * k * 4)) ||
        (st = vkllm__op_need("moe_sum", "o", o, out * 4)))
        return st;
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_moe pc = {n, 0, k, width};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_MOE_SUM_F32, .n_spec = 1, .spec = {MOE_WG},
        .n_bind = 3, .bind = {vkllm__bind(y), vkllm__bind(w), vkllm__bind(o)},
        .push = &pc, .push_size = sizeof pc, .label = "moe_sum",
        .cost = {.bytes_read = out * k * 4 + (uint64_t)n * k * 4, .bytes_written = out * 4, .flops = out * k * 2},
    };
    vkllm__gpu_grid_1d(gpu, out, MOE_WG, d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

vkllm_status vkllm__op_matvec_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                 struct vkllm__view ids, uint32_t ncols) {
    const struct vkllm__type_kernels *tk = w ? vkllm__type_kernels(w->type, "matvec_id") : NULL;
    if (!tk) return w ? VKLLM_STATUS_UNSUPPORTED : vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_id: no matrix");
    if (!w->buf)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matvec_id: the experts' matrix has no plain (GGUF) copy");
    if (n_expert == 0 || w->m % n_expert || ncols == 0 || x_div == 0 || w->k % 4 || x_stride % 4 || x_stride < w->k)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_id: %llu rows of %llu for %u experts, %u columns, "
                          "x_div %u, x_stride %u", (unsigned long long)w->m, (unsigned long long)w->k, n_expert, ncols,
                          x_div, x_stride);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    const struct vkllm_device_info *di = vkllm__gpu_info(gpu);
    uint64_t m = w->m / n_expert, bytes = w->m * w->row_bytes;
    if (bytes > di->max_storage_buffer_range || bytes > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matvec_id: the experts' matrix (%.1f MiB) is larger than one "
                          "storage binding may cover on this device (%.1f MiB)", bytes / 1048576.0,
                          di->max_storage_buffer_range / 1048576.0);
    if (m > di->max_workgroup_count[0] || ncols > di->max_workgroup_count[1])
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matvec_id: %llu rows x %u columns exceed the dispatch grid",
                          (unsigned long long)m, ncols);
    vkllm_status st;
    uint64_t nx = (uint64_t)((ncols + x_div - 1) / x_div - 1) * x_stride + w->k;
    if ((st = vkllm__op_need("matvec_id", "x", x, nx * 4)) || (st = vkllm__op_need("matvec_id", "ids", ids, (uint64_t)ncols * 4)) ||
        (st = vkllm__op_need("matvec_id", "y", y, (uint64_t)ncols * m * 4)))
        return st;
    uint32_t wg = MATVEC_ID_WG;
    while (wg > di->max_workgroup_invocations || wg > di->max_workgroup_size[0]) wg /= 2;
    struct vkllm__pc_matvec_id pc = {(uint32_t)w->k, (uint32_t)m, (uint32_t)w->row_bytes, n_expert, x_div, x_stride};
    struct vkllm__dispatch d = {
        .shader = tk->matvec_id, .n_spec = 1, .spec = {wg},
        .n_bind = 4, .bind = {{w->buf, w->offset, (bytes + 3) / 4 * 4}, vkllm__bind(x), vkllm__bind(ids), vkllm__bind(y)},
        .push = &pc, .push_size = sizeof pc, .label = "matvec_id",
        .groups = {(uint32_t)m, ncols, 1},
        .cost = {.bytes_read = (uint64_t)ncols * m * w->row_bytes + nx * 4, .bytes_written = (uint64_t)ncols * m * 4,
                 .flops = 2ull * ncols * m * w->k},
    };
    return vkllm__cmd_dispatch(c, &d);
}
