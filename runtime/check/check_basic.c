/* check_basic.c - the elementwise and row ops against the reference: add, mul, silu_mul,
 * rmsnorm, add_rmsnorm (the sum written back must be bit for bit the reference's), softmax. */
#include "check_impl.h"

#define EPS 1e-5f

/* LARGE: magnitudes up to 1e4 times scale; with huge, also a few entries at +-1e30 (softmax
 * must subtract the maximum first; sums of squares of such values overflow fp32 by design). */
static void fill(struct chk *k, float *v, uint64_t n, uint32_t flags, float scale, int huge) {
    for (uint64_t i = 0; v && i < n; i++) {
        float x = vkllm__chk_rand(k) * scale;
        if (flags & VKLLM__CASE_LARGE) {
            x *= 1e4f;
            if (huge && i % 997 == 13) x = (i & 1) ? 1e30f : -1e30f;
        }
        v[i] = x;
    }
}

/* NONFINITE (softcap, gelu_mul): every 7th input an extreme, far past where tanh saturates (and
 * where a tanh of exponentials overflows to inf / inf): softcap's become +-cap; gelu's x^3
 * overflows fp32 at 1e13, and -4 and -3 are where 1 + tanh cancels. */
static void extremes(float *a, uint64_t n, enum vkllm__op op) {
    static const float sc[8] = {INFINITY, -INFINITY, 3e38f, -3e38f, 1e4f, -1e4f, 250.0f, -250.0f};
    static const float ge[8] = {1e13f, -1e13f, 1e20f, -1e20f, -4.0f, -3.0f, 50.0f, -50.0f};
    for (uint64_t i = 0; i < n; i += 7) a[i] = (op == VKLLM__OP_SOFTCAP ? sc : ge)[(i / 7) % 8];
}

/* The reference result of the case into want (sum: x + d for add_rmsnorm). */
static void reference(const struct vkllm__op_case *c, const float *a, const float *b, const float *w, uint32_t nb,
                      float *want, float *sum) {
    uint32_t n = c->rows * c->cols;
    switch (c->op) {
    case VKLLM__OP_ADD: vkllm__ref_add(want, a, b, n, nb); break;
    case VKLLM__OP_MUL: vkllm__ref_mul(want, a, b, n, nb); break;
    case VKLLM__OP_SILU_MUL: vkllm__ref_silu_mul(want, a, b, n); break;
    case VKLLM__OP_GELU_MUL: vkllm__ref_gelu_mul(want, a, b, n); break;
    case VKLLM__OP_SWIGLU_OAI: vkllm__ref_swiglu_oai(want, a, b, n); break;
    case VKLLM__OP_SOFTCAP: vkllm__ref_softcap(want, a, b[0], n); break;
    case VKLLM__OP_RMSNORM: vkllm__ref_rmsnorm(want, a, b, c->cols, c->rows, EPS); break;
    case VKLLM__OP_SOFTMAX: vkllm__ref_softmax(want, a, c->cols, c->rows, 1.0f); break;
    default: vkllm__ref_add(sum, a, b, n, n); vkllm__ref_rmsnorm(want, sum, w, c->cols, c->rows, EPS);
    }
}

/* Record the op: o = op(a, b) (rmsnorm: w = b's first row; add_rmsnorm: a += b, o = norm). */
static vkllm_status record(struct vkllm__cmd *cmd, const struct vkllm__op_case *c, struct vkllm__view o,
                           struct vkllm__view a, struct vkllm__view b, struct vkllm__view w, uint32_t nb) {
    uint32_t n = c->rows * c->cols;
    b.size = (uint64_t)(c->op == VKLLM__OP_RMSNORM ? c->cols : nb) * sizeof(float);
    switch (c->op) {
    case VKLLM__OP_ADD: return vkllm__op_add(cmd, o, a, b, n, nb);
    case VKLLM__OP_MUL: return vkllm__op_mul(cmd, o, a, b, n, nb);
    case VKLLM__OP_SILU_MUL: return vkllm__op_silu_mul(cmd, o, a, b, n);
    case VKLLM__OP_GELU_MUL: return vkllm__op_gelu_mul(cmd, o, a, b, n);
    case VKLLM__OP_SWIGLU_OAI: return vkllm__op_swiglu_oai(cmd, o, a, b, n);
    case VKLLM__OP_SOFTCAP: return vkllm__op_softcap(cmd, o, a, b, n);
    case VKLLM__OP_RMSNORM: return vkllm__op_rmsnorm(cmd, o, a, b, c->cols, c->rows, EPS);
    case VKLLM__OP_SOFTMAX: return vkllm__op_softmax(cmd, o, a, c->cols, c->rows, 1.0f);
    default:
        b.size = (uint64_t)n * sizeof(float);
        if (c->flags & VKLLM__CASE_INPLACE) o = b; /* the result is read from b */
        return vkllm__op_add_rmsnorm(cmd, o, a, b, w, c->cols, c->rows, EPS);
    }
}

void vkllm__chk_elementwise(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint64_t n = (uint64_t)c->cols * c->rows;
    uint32_t nb = c->nb ? c->nb : (uint32_t)n;
    if (n == 0 || n > (1u << 28) || nb > n) {
        vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check %s: bad shape %u x %u", vkllm__op_name(c->op),
                                    c->rows, c->cols));
        return;
    }
    int softmax = c->op == VKLLM__OP_SOFTMAX;
    float *a = vkllm__chk_floats(k, n, 0), *b = vkllm__chk_floats(k, n, 0), *w = vkllm__chk_floats(k, c->cols, 2.0f);
    float *want = vkllm__chk_floats(k, n, 0), *got = vkllm__chk_floats(k, n, 0), *sum = vkllm__chk_floats(k, n, 0);
    if (k->st) return;
    fill(k, a, n, c->flags, softmax ? 10.0f : 3.0f, softmax);
    fill(k, b, n, 0, 2.0f, 0);
    if (c->op == VKLLM__OP_SOFTCAP) b[0] = 2.5f; /* the cap */
    if (c->flags & VKLLM__CASE_NONFINITE) extremes(a, n, c->op);
    if (softmax && (c->flags & VKLLM__CASE_NEG_INF)) {
        for (uint64_t i = 0; i < n; i += 3) a[i] = -INFINITY;
        if (c->rows > 1)
            for (uint32_t i = 0; i < c->cols; i++) a[(uint64_t)(c->rows - 1) * c->cols + i] = -INFINITY;
    }
    reference(c, a, b, w, nb, want, sum);
    struct vkllm__buffer *ba = vkllm__chk_buf(k, n * 4, a), *bb = vkllm__chk_buf(k, n * 4, b);
    struct vkllm__buffer *bo = vkllm__chk_buf(k, n * 4, NULL), *bw = vkllm__chk_buf(k, (uint64_t)c->cols * 4, w);
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) ||
        !vkllm__chk_ok(
            k, record(cmd, c, vkllm__view_of(bo), vkllm__view_of(ba), vkllm__view_of(bb), vkllm__view_of(bw), nb)) ||
        !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))
        return;
    vkllm__chk_submit(k, cmd);
    int in_place = c->op == VKLLM__OP_ADD_RMSNORM && (c->flags & VKLLM__CASE_INPLACE);
    vkllm__chk_download(k, in_place ? bb : bo, got, n * 4);
    if (k->st) return;
    struct chk_stats s;
    vkllm__chk_compare(got, want, n, &s);
    vkllm__chk_fold(k, &s);
    if (c->op == VKLLM__OP_ADD_RMSNORM) { /* x must hold the sum, exactly */
        vkllm__chk_download(k, ba, got, n * 4);
        if (!k->st && memcmp(got, sum, n * 4)) vkllm__chk_fail(k, "x += d is not the reference's sum bit for bit");
    }
}
