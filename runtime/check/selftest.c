/* selftest.c - device op vs scalar reference (see selftest.h). */
#include <math.h>
#include <string.h>

#include "ops_gpu.h"
#include "ref_ops.h"
#include "selftest.h"

const char *vkllm__check_op_name(enum vkllm__check_op op) {
    static const char *names[] = {"add", "mul", "rmsnorm", "softmax", "silu_mul", "add_rmsnorm"};
    return (unsigned)op < VKLLM__CHECK_COUNT_ ? names[op] : "?";
}

const struct vkllm__check_case vkllm__selftest_cases[] = {
    {VKLLM__CHECK_ADD, 1000, 3, 0, 0, 0},
    {VKLLM__CHECK_ADD, 1u << 20, 2, 0, 0, 0}, /* 8 MiB per operand */
    {VKLLM__CHECK_ADD, 4099, 7, 4099, 0, 0},   /* bias row repeated */
    {VKLLM__CHECK_MUL, 777, 5, 777, 0, 0},
    {VKLLM__CHECK_RMSNORM, 4096, 3, 0, 0, 0},
    {VKLLM__CHECK_RMSNORM, 333, 17, 0, VKLLM__CHECK_LARGE, 0},
    {VKLLM__CHECK_SOFTMAX, 1, 5, 0, 0, 0},
    {VKLLM__CHECK_SOFTMAX, 1000, 4, 0, VKLLM__CHECK_NEG_INF, 0},
    {VKLLM__CHECK_SOFTMAX, 32000, 2, 0, VKLLM__CHECK_LARGE, 0},
    {VKLLM__CHECK_SILU_MUL, 5632, 3, 0, 0, 0},
    {VKLLM__CHECK_ADD_RMSNORM, 2048, 3, 0, VKLLM__CHECK_INPLACE, 0},
};
const uint32_t vkllm__selftest_n_cases = VKLLM_ARRAY_LEN(vkllm__selftest_cases);

static float rnd(uint64_t *s) { /* xorshift64*, uniform in [-1, 1) */
    uint64_t x = *s;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *s = x;
    return (float)((x * 0x2545F4914F6CDD1DULL) >> 40) / (float)(1u << 23) - 1.0f;
}

/* LARGE: magnitudes up to 1e4 times scale; with huge, also a few entries at +-1e30 (softmax
 * must subtract the maximum first; sums of squares of such values overflow fp32 by design). */
static void fill(float *v, uint64_t n, uint64_t *seed, uint32_t flags, float scale, int huge) {
    for (uint64_t i = 0; i < n; i++) {
        float x = rnd(seed) * scale;
        if (flags & VKLLM__CHECK_LARGE) {
            x *= 1e4f;
            if (huge && i % 997 == 13) x = (i & 1) ? 1e30f : -1e30f;
        }
        v[i] = x;
    }
}

/* Bound per op: max relative error for elementwise/rmsnorm, max absolute error for softmax
 * (its outputs are probabilities). exp() on GPUs is not correctly rounded, hence the looser
 * bounds where it is used. */
static double bound_of(enum vkllm__check_op op) {
    switch (op) {
    case VKLLM__CHECK_ADD:
    case VKLLM__CHECK_MUL: return 1e-6;
    case VKLLM__CHECK_RMSNORM:
    case VKLLM__CHECK_ADD_RMSNORM: return 1e-4;
    case VKLLM__CHECK_SOFTMAX: return 1e-5;
    case VKLLM__CHECK_SILU_MUL: return 1e-4;
    default: return 0;
    }
}

static vkllm_status upload_new(struct vkllm__gpu *gpu, const float *src, uint64_t n, struct vkllm__buffer **b) {
    vkllm_status st = vkllm__buffer_alloc(gpu, n * sizeof(float), VKLLM__MEM_DEVICE, b);
    if (st) return st;
    return vkllm__buffer_upload(*b, 0, src, n * sizeof(float));
}

static void compare(const float *got, const float *want, uint64_t n, struct vkllm__check_result *r) {
    double num = 0, den = 0;
    r->max_abs = r->max_rel = 0;
    for (uint64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(got[i]) != isnan(want[i]) || (isinf(want[i]) && got[i] != want[i])) d = INFINITY;
        else if (isnan(want[i]) || isinf(want[i])) d = 0;
        if (d > r->max_abs) r->max_abs = d;
        if (fabs(want[i]) > 1e-6 && d / fabs(want[i]) > r->max_rel) r->max_rel = d / fabs(want[i]);
        if (isfinite(d)) {
            num += d * d;
            den += (double)want[i] * want[i];
        }
    }
    r->nmse = den > 0 ? num / den : num;
}

vkllm_status vkllm__check_run(struct vkllm__gpu *gpu, const struct vkllm__check_case *c, uint64_t seed,
                              struct vkllm__check_result *r) {
    vkllm_status st = VKLLM_STATUS_OK;
    uint64_t n = (uint64_t)c->ncols * c->nrows;
    uint32_t nb = c->nb ? c->nb : (uint32_t)n;
    if (n == 0 || n > (1u << 28) || nb > n)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check %s: bad shape %u x %u", vkllm__check_op_name(c->op),
                          c->nrows, c->ncols);
    float *a = vkllm__malloc(n * sizeof(float)), *b = vkllm__malloc(n * sizeof(float));
    float *want = vkllm__malloc(n * sizeof(float)), *got = vkllm__malloc(n * sizeof(float));
    float *w = vkllm__malloc(c->ncols * sizeof(float)), *sum = vkllm__malloc(n * sizeof(float));
    struct vkllm__buffer *ba = NULL, *bb = NULL, *bo = NULL, *bw = NULL, *bres;
    struct vkllm__cmd *cmd = NULL;
    if (!a || !b || !want || !got || !w || !sum) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto done;
    }
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    int softmax = c->op == VKLLM__CHECK_SOFTMAX;
    fill(a, n, &s, c->flags, softmax ? 10.0f : 3.0f, softmax);
    fill(b, n, &s, 0, 2.0f, 0);
    fill(w, c->ncols, &s, 0, 2.0f, 0);
    if (c->op == VKLLM__CHECK_SOFTMAX && (c->flags & VKLLM__CHECK_NEG_INF)) {
        for (uint64_t i = 0; i < n; i += 3) a[i] = -INFINITY;
        if (c->nrows > 1)
            for (uint32_t i = 0; i < c->ncols; i++) a[(uint64_t)(c->nrows - 1) * c->ncols + i] = -INFINITY;
    }
    switch (c->op) {
    case VKLLM__CHECK_ADD: vkllm__ref_add(want, a, b, (uint32_t)n, nb); break;
    case VKLLM__CHECK_MUL: vkllm__ref_mul(want, a, b, (uint32_t)n, nb); break;
    case VKLLM__CHECK_RMSNORM: vkllm__ref_rmsnorm(want, a, b, c->ncols, c->nrows, 1e-5f); break;
    case VKLLM__CHECK_SOFTMAX: vkllm__ref_softmax(want, a, c->ncols, c->nrows, 1.0f); break;
    case VKLLM__CHECK_SILU_MUL: vkllm__ref_silu_mul(want, a, b, (uint32_t)n); break;
    case VKLLM__CHECK_ADD_RMSNORM:
        vkllm__ref_add(sum, a, b, (uint32_t)n, (uint32_t)n);
        vkllm__ref_rmsnorm(want, sum, w, c->ncols, c->nrows, 1e-5f);
        break;
    default: st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "unknown check op %d", (int)c->op); goto done;
    }
    VKLLM_TRY(st, upload_new(gpu, a, n, &ba), done);
    VKLLM_TRY(st, upload_new(gpu, b, n, &bb), done);
    VKLLM_TRY(st, vkllm__buffer_alloc(gpu, n * sizeof(float), VKLLM__MEM_DEVICE, &bo), done);
    VKLLM_TRY(st, upload_new(gpu, w, c->ncols, &bw), done);
    VKLLM_TRY(st, vkllm__cmd_init(gpu, &cmd), done);
    VKLLM_TRY(st, vkllm__cmd_begin(cmd), done);
    struct vkllm__tuning saved = *vkllm__gpu_tuning(gpu), tu = saved;
    tu.ops_wg = c->wg;
    vkllm__gpu_set_tuning(gpu, &tu);
    struct vkllm__view vo = vkllm__view_of(bo), va = vkllm__view_of(ba), vb = vkllm__view_of(bb);
    vb.size = (uint64_t)(c->op == VKLLM__CHECK_RMSNORM ? c->ncols : nb) * sizeof(float);
    switch (c->op) {
    case VKLLM__CHECK_ADD: st = vkllm__op_add(cmd, vo, va, vb, (uint32_t)n, nb); break;
    case VKLLM__CHECK_MUL: st = vkllm__op_mul(cmd, vo, va, vb, (uint32_t)n, nb); break;
    case VKLLM__CHECK_RMSNORM: st = vkllm__op_rmsnorm(cmd, vo, va, vb, c->ncols, c->nrows, 1e-5f); break;
    case VKLLM__CHECK_SOFTMAX: st = vkllm__op_softmax(cmd, vo, va, c->ncols, c->nrows, 1.0f); break;
    case VKLLM__CHECK_SILU_MUL: st = vkllm__op_silu_mul(cmd, vo, va, vb, (uint32_t)n); break;
    case VKLLM__CHECK_ADD_RMSNORM:
        vb.size = n * sizeof(float);
        if (c->flags & VKLLM__CHECK_INPLACE) vo = vb; /* the result is read from bb */
        st = vkllm__op_add_rmsnorm(cmd, vo, va, vb, vkllm__view_of(bw), c->ncols, c->nrows, 1e-5f);
        break;
    default: break;
    }
    vkllm__gpu_set_tuning(gpu, &saved);
    if (st) goto done;
    VKLLM_TRY(st, vkllm__cmd_end(cmd), done);
    VKLLM_TRY(st, vkllm__cmd_submit(cmd), done);
    bres = c->op == VKLLM__CHECK_ADD_RMSNORM && (c->flags & VKLLM__CHECK_INPLACE) ? bb : bo;
    VKLLM_TRY(st, vkllm__buffer_download(bres, 0, got, n * sizeof(float)), done);
    compare(got, want, n, r);
    if (c->op == VKLLM__CHECK_ADD_RMSNORM) { /* x must hold the sum, exactly */
        VKLLM_TRY(st, vkllm__buffer_download(ba, 0, got, n * sizeof(float)), done);
        if (memcmp(got, sum, n * sizeof(float))) r->max_rel = INFINITY;
    }
    r->bound = bound_of(c->op);
    r->pass = c->op == VKLLM__CHECK_SOFTMAX ? r->max_abs <= r->bound : r->max_rel <= r->bound;
done:
    vkllm__cmd_free(cmd);
    vkllm__buffer_free(ba);
    vkllm__buffer_free(bb);
    vkllm__buffer_free(bo);
    vkllm__buffer_free(bw);
    vkllm__free(w);
    vkllm__free(sum);
    vkllm__free(a);
    vkllm__free(b);
    vkllm__free(want);
    vkllm__free(got);
    return st;
}
