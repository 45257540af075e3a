/* ops_moe.c - mixture of experts on the device (shaders/moe.comp): the router's top-k per token and
 * the weighted sum of the picked experts' outputs. The experts' products are vkllm__op_matvec_id
 * (ops_matvec.c, matvec.comp's MATVEC_ID variants: each column reads only its expert's rows, so a
 * decode step reads the active parameters, not all of them); in prefill, where many picks share an
 * expert, vkllm__op_matvec_id_grouped runs the grouped GEMM instead (ops_matmul.c, matmul.comp's
 * MATMUL_ID), both on the grouping vkllm__op_moe_group makes. */
#include "ops_gpu.h"
#include "shader_abi.h"
#include "types.h"

#define MOE_WG 64

vkllm_status vkllm__op_moe_route(struct vkllm__cmd *c, struct vkllm__view ids, struct vkllm__view w,
                                 struct vkllm__view logits, uint32_t n, uint32_t n_expert, uint32_t k) {
    if (n == 0 || n_expert == 0 || n_expert > 1024 || k == 0 || k > 64 || k > n_expert)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "moe_route: %u tokens, %u of %u experts (1..64 of at most 1024)", n, k, n_expert);
    vkllm_status st;
    if ((st = vkllm__op_need("moe_route", "logits", logits, (uint64_t)n * n_expert * 4)) ||
        (st = vkllm__op_need("moe_route", "ids", ids, (uint64_t)n * k * 4)) ||
        (st = vkllm__op_need("moe_route", "w", w, (uint64_t)n * k * 4)))
        return st;
    if (n > vkllm__gpu_info(vkllm__cmd_gpu(c))->max_workgroup_count[0])
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "moe_route: %u tokens in one dispatch", n);
    struct vkllm__pc_moe pc = {n, n_expert, k, 0};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_MOE_ROUTE_F32,
        .n_spec = 1,
        .spec = {MOE_WG},
        .n_bind = 3,
        .bind = {vkllm__bind(logits), vkllm__bind(ids), vkllm__bind(w)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "moe_route",
        .groups = {n, 1, 1},
        .cost = {.bytes_read = (uint64_t)n * n_expert * 4,
                 .bytes_written = (uint64_t)n * k * 8,
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
    if ((st = vkllm__op_need("moe_sum", "y", y, out * k * 4)) ||
        (st = vkllm__op_need("moe_sum", "w", w, (uint64_t)n * k * 4)) ||
        (st = vkllm__op_need("moe_sum", "o", o, out * 4)))
        return st;
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_moe pc = {n, 0, k, width};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_MOE_SUM_F32,
        .n_spec = 1,
        .spec = {MOE_WG},
        .n_bind = 3,
        .bind = {vkllm__bind(y), vkllm__bind(w), vkllm__bind(o)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "moe_sum",
        .cost = {.bytes_read = out * k * 4 + (uint64_t)n * k * 4, .bytes_written = out * 4, .flops = out * k * 2},
    };
    vkllm__gpu_grid_1d(gpu, out, MOE_WG, d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

vkllm_status vkllm__op_moe_add_id(struct vkllm__cmd *c, struct vkllm__view y, struct vkllm__view bias,
                                  struct vkllm__view ids, uint32_t rows, uint32_t width, uint32_t n_expert) {
    uint64_t n = (uint64_t)rows * width;
    if (rows == 0 || width == 0 || n_expert == 0 || n > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "moe_add_id: %u rows of %u, %u experts", rows, width,
                          n_expert);
    vkllm_status st;
    if ((st = vkllm__op_need("moe_add_id", "y", y, n * 4)) ||
        (st = vkllm__op_need("moe_add_id", "ids", ids, (uint64_t)rows * 4)) ||
        (st = vkllm__op_need("moe_add_id", "bias", bias, (uint64_t)n_expert * width * 4)))
        return st;
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_moe pc = {rows, n_expert, 0, width};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_MOE_ADD_ID_F32,
        .n_spec = 1,
        .spec = {MOE_WG},
        .n_bind = 3,
        .bind = {vkllm__bind(bias), vkllm__bind(ids), vkllm__bind(y)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "moe_add_id",
        .cost = {.bytes_read = n * 8 + (uint64_t)rows * 4, .bytes_written = n * 4, .flops = n},
    };
    vkllm__gpu_grid_1d(gpu, n, MOE_WG, d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

vkllm_status vkllm__op_moe_group(struct vkllm__cmd *c, struct vkllm__view group, struct vkllm__view ids, uint32_t ncols,
                                 uint32_t n_expert) {
    if (ncols == 0 || n_expert == 0 || n_expert > 1024)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "moe_group: %u columns, %u experts (at most 1024)", ncols,
                          n_expert);
    vkllm_status st;
    uint64_t gb = vkllm__moe_group_bytes(ncols, n_expert);
    if ((st = vkllm__op_need("moe_group", "ids", ids, 4ull * ncols)) ||
        (st = vkllm__op_need("moe_group", "group", group, gb)))
        return st;
    struct vkllm__pc_moe pc = {ncols, n_expert, vkllm__moe_group_cols(), vkllm__moe_group_tiles(ncols, n_expert)};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_MOE_GROUP_U32,
        .n_spec = 1,
        .spec = {MOE_WG},
        .n_bind = 2,
        .bind = {vkllm__bind(ids), vkllm__bind(group)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "moe_group",
        .groups = {1, 1, 1},
        .cost = {.bytes_read = 8ull * ncols, .bytes_written = gb},
    };
    return vkllm__cmd_dispatch(c, &d);
}
