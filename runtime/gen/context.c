/* context.c - the public device API: listing devices and opening one (vkllm_ctx_t). */
#include <string.h>

#include "check.h"
#include "context.h"
#include "ops_gpu.h"
#include "types.h"

const char *vkllm_device_type_str(vkllm_device_type t) {
    switch (t) {
    case VKLLM_DEVICE_INTEGRATED_GPU: return "integrated GPU";
    case VKLLM_DEVICE_DISCRETE_GPU: return "discrete GPU";
    case VKLLM_DEVICE_VIRTUAL_GPU: return "virtual GPU";
    case VKLLM_DEVICE_CPU: return "CPU";
    default: return "other";
    }
}

vkllm_status vkllm_devices_list(struct vkllm_device_info **out, uint32_t *count) {
    if (!out || !count) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_devices_list: NULL argument");
    return vkllm__gpu_list(out, count);
}

void vkllm_devices_free(struct vkllm_device_info *devices) { vkllm__free(devices); }

struct vkllm_ctx_params vkllm_ctx_params_default(void) {
    struct vkllm_ctx_params p = {.device = -1, .validate = -1, .tuning = NULL, .compile_only = 0};
    return p;
}

/* The cooperative-matrix kernels (ops_matmul.c, ops_attn.c) have not run on any device we had
 * (none here has cooperative matrices; their emulation has). Where one would run by default, a
 * known-answer case goes first (the selftest's, against the reference): if it fails, the scalar
 * kernel is used instead and a warning says so. An explicit matmul_coopmat / attn_coopmat (0, 1
 * or 2) skips this. */
static int coopmat_case_fails(struct vkllm__gpu *gpu, const struct vkllm__op_case *c, const char *what) {
    struct vkllm__op_result r;
    vkllm_status st = vkllm__op_check(gpu, c, 1, 0, NULL, &r);
    const char *dev = vkllm__gpu_info(gpu)->name;
    if (!st && r.ok) {
        vkllm__log(VKLLM_LOG_DEBUG, "cooperative-matrix %s checked on %s: error %.3g (bound %.3g)", what, dev, r.err,
                   r.bound);
        return 0;
    }
    vkllm__log(VKLLM_LOG_WARN, "the cooperative-matrix %s failed its check on %s (%s); the scalar kernel runs instead",
               what, dev,
               st            ? vkllm_last_error()
               : r.detail[0] ? r.detail
                             : "outside the bound");
    return 1;
}

static void check_coopmat(struct vkllm__gpu *gpu) {
    const struct vkllm__tuning *tu = vkllm__gpu_tuning(gpu);
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    struct vkllm__mm_coopmat cm;
    /* compile-only: nothing runs, so nothing can be checked; the kernels stay as the tuning says */
    if (!d->fp16_arith || !vkllm__matmul_coopmat_default(d) || vkllm__gpu_compile_only(gpu)) return;
    struct vkllm__tuning t = *tu;
    if (tu->matmul_coopmat == -1 && tu->matmul_f16 != 0 && vkllm__matmul_coopmat_plan(d, 70, 100, &cm)) {
        struct vkllm__op_case c = {.op = VKLLM__OP_MATMUL,
                                   .type = VKLLM__TYPE_Q4_K,
                                   .rows = 100,
                                   .cols = 512,
                                   .n = 70,
                                   .tuning = "matmul=tiled,matmul_coopmat=1",
                                   .flags = VKLLM__CASE_COOPMAT};
        if (coopmat_case_fails(gpu, &c, "matmul")) t.matmul_coopmat = 0;
    }
    if (tu->attn_coopmat == -1 && vkllm__attn_coopmat_can(d, 0)) {
        struct vkllm__op_case c = {.op = VKLLM__OP_ATTENTION,
                                   .n = 17,
                                   .heads = 8,
                                   .heads_kv = 2,
                                   .head_dim = 64,
                                   .n_ctx = 256,
                                   .pos = {0, 100},
                                   .n_pos = 2,
                                   .tuning = "attn_texel=0,attn_coopmat=1",
                                   .flags = VKLLM__CASE_COOPMAT};
        if (coopmat_case_fails(gpu, &c, "attention")) t.attn_coopmat = 0;
    }
    vkllm__gpu_set_tuning(gpu, &t);
}

vkllm_status vkllm_ctx_init(const struct vkllm_ctx_params *params, vkllm_ctx_t *out) {
    if (!out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_ctx_init: out is NULL");
    *out = NULL;
    struct vkllm_ctx_params p = params ? *params : vkllm_ctx_params_default();
    struct vkllm_ctx *ctx = vkllm__calloc(1, sizeof *ctx);
    if (!ctx) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    struct vkllm__gpu_params gp = {
        .device = p.device, .validate = p.validate, .tuning = p.tuning, .compile_only = p.compile_only};
    vkllm_status st = vkllm__gpu_open(&gp, &ctx->gpu);
    if (st) {
        vkllm__free(ctx);
        return st;
    }
    check_coopmat(ctx->gpu);
    *out = ctx;
    return VKLLM_STATUS_OK;
}

void vkllm_ctx_free(vkllm_ctx_t ctx) {
    if (!ctx) return;
    vkllm__gpu_close(ctx->gpu);
    vkllm__free(ctx);
}

const struct vkllm_device_info *vkllm_ctx_device(vkllm_ctx_t ctx) { return ctx ? vkllm__gpu_info(ctx->gpu) : NULL; }

uint64_t vkllm_ctx_validation_messages(vkllm_ctx_t ctx) { return ctx ? vkllm__gpu_validation_count(ctx->gpu) : 0; }

uint64_t vkllm_ctx_device_memory_used(vkllm_ctx_t ctx) { return ctx ? vkllm__gpu_memory_allocated(ctx->gpu) : 0; }

_Static_assert((int)VKLLM_MEMORY_OTHER == (int)VKLLM__USE_OTHER && (int)VKLLM_MEMORY_EMPTY == (int)VKLLM__USE_COUNT_,
               "enum vkllm_memory_use follows enum vkllm__mem_use");

void vkllm_ctx_memory_breakdown(vkllm_ctx_t ctx, struct vkllm_memory_breakdown *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (ctx) vkllm__gpu_memory_by_use(ctx->gpu, out->device, out->host);
}

const char *vkllm_memory_use_name(enum vkllm_memory_use u) {
    static const char *const names[] = {"weights", "repacked", "kv",       "activations", "logits",
                                        "inputs",  "staging",  "readback", "other",       "empty"};
    return (unsigned)u < VKLLM_ARRAY_LEN(names) ? names[u] : "?";
}

int vkllm_tuning_knob(size_t i, struct vkllm_tuning_knob *out) {
    const struct vkllm__tuning_knob *k = vkllm__tuning_knob(i);
    if (!k || !out) return 0;
    *out = (struct vkllm_tuning_knob){k->name, k->env, k->names, k->help, k->def};
    return 1;
}

vkllm_status vkllm_ctx_tune(vkllm_ctx_t ctx, const char *name, const char *value) {
    if (!ctx) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_ctx_tune: ctx is NULL");
    struct vkllm__tuning t = *vkllm__gpu_tuning(ctx->gpu);
    vkllm_status st = vkllm__tuning_set(&t, name, value);
    if (!st) vkllm__gpu_set_tuning(ctx->gpu, &t);
    return st;
}

vkllm_status vkllm_ctx_pipelines(vkllm_ctx_t ctx, vkllm_pipeline_fn fn, void *user_data, uint32_t *count) {
    if (!ctx) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_ctx_pipelines: ctx is NULL");
    uint32_t n = vkllm__gpu_pipeline_count(ctx->gpu), i = 0;
    struct vkllm_pipeline_info *info = vkllm__malloc(sizeof *info);
    if (!info) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm_status st = VKLLM_STATUS_OK;
    for (; i < n && !st; i++) {
        st = vkllm__gpu_pipeline_info(ctx->gpu, i, info);
        if (!st && fn && fn(info, user_data)) {
            i++;
            break;
        }
    }
    vkllm__free(info);
    if (count) *count = st ? 0 : i;
    return st;
}

long vkllm_ctx_tuning_value(vkllm_ctx_t ctx, size_t i) {
    return ctx ? vkllm__tuning_get(vkllm__gpu_tuning(ctx->gpu), i) : 0;
}
