/* check.c - the op table and what every runner shares (see check.h, check_impl.h). */
#include <stdarg.h>

#include "check_impl.h"

struct op_row {
    const char *name, *measure;
    double bound;
    void (*run)(struct chk *k);
};

static const struct op_row k_ops[VKLLM__OP_COUNT_] = {
#define VKLLM__OP_ROW_(op, name, measure, bound, runner) {name, measure, bound, vkllm__chk_##runner},
    VKLLM__OPS(VKLLM__OP_ROW_)
#undef VKLLM__OP_ROW_
};

const char *vkllm__op_name(enum vkllm__op op) { return (unsigned)op < VKLLM__OP_COUNT_ ? k_ops[op].name : "?"; }
const char *vkllm__op_measure(enum vkllm__op op) { return (unsigned)op < VKLLM__OP_COUNT_ ? k_ops[op].measure : "?"; }
double vkllm__op_bound(enum vkllm__op op) { return (unsigned)op < VKLLM__OP_COUNT_ ? k_ops[op].bound : 0; }

/* " @128k" (" @16M", " @2^31") for rope cases whose positions reach that far, else "" (short: the
 * shape has 63 characters). */
static const char *far_positions(const struct vkllm__op_case *c) {
    uint32_t far = 0;
    for (uint32_t i = 0; i < c->n_pos && i < VKLLM__CASE_MAX_POS; i++) far = c->pos[i] > far ? c->pos[i] : far;
    return far >= 1u << 31 ? " @2^31" : far >= 1u << 24 ? " @16M" : far >= 1u << 17 ? " @128k" : "";
}

void vkllm__op_case_shape(const struct vkllm__op_case *c, char *buf, size_t n) {
    switch (c->op) {
    case VKLLM__OP_MATVEC:
    case VKLLM__OP_MATVEC_TB:
    case VKLLM__OP_MATVEC_GLU:
    case VKLLM__OP_MATMUL:
    case VKLLM__OP_GET_ROWS:
        snprintf(buf, n, "%s %ux%u n=%u%s%s", vkllm__type_name(c->type), c->rows, c->cols, c->n,
                 c->flags & VKLLM__CASE_OFFSET ? " +256" : "", c->flags & VKLLM__CASE_NONFINITE ? " inf/nan" : "");
        break;
    case VKLLM__OP_ROPE:
        snprintf(buf, n, "n=%u heads=%u dim=%u rot=%u%s%s%s%s", c->n, c->heads, c->head_dim, c->n_rot,
                 c->flags & VKLLM__CASE_NEOX ? " neox" : "", c->scale && c->scale != 1.0f ? " scaled" : "",
                 c->flags & VKLLM__CASE_MAGNITUDE ? " x1.25" : "", far_positions(c));
        break;
    case VKLLM__OP_KV_STORE:
        snprintf(buf, n, "n=%u width=%u ctx=%u%s%s", c->n, c->heads_kv * c->head_dim, c->n_ctx,
                 c->flags & VKLLM__CASE_KQ8 ? " q8_0" : "", c->flags & VKLLM__CASE_PAGED ? " paged" : "");
        break;
    case VKLLM__OP_ROPE_KV:
        snprintf(buf, n, "n=%u heads=%u/%u dim=%u rot=%u ctx=%u%s%s%s%s%s%s", c->n, c->heads, c->heads_kv, c->head_dim,
                 c->n_rot, c->n_ctx, c->flags & VKLLM__CASE_NEOX ? " neox" : "",
                 c->flags & VKLLM__CASE_MAGNITUDE ? " x1.25" : "", c->flags & VKLLM__CASE_KQ8 ? " k q8_0" : "",
                 c->flags & VKLLM__CASE_VQ8 ? " v q8_0" : "", c->flags & VKLLM__CASE_PAGED ? " paged" : "",
                 far_positions(c));
        break;
    case VKLLM__OP_ATTENTION: {
        int w = snprintf(buf, n, "n=%u heads=%u/%u dim=%u ctx=%u", c->n, c->heads, c->heads_kv, c->head_dim, c->n_ctx);
        if (w > 0 && (size_t)w < n && c->window) w += snprintf(buf + w, n - (size_t)w, " win=%u", c->window);
        if (w > 0 && (size_t)w < n && c->softcap > 0)
            w += snprintf(buf + w, n - (size_t)w, " cap=%g", (double)c->softcap);
        if (w > 0 && (size_t)w < n && (c->flags & VKLLM__CASE_SINKS)) w += snprintf(buf + w, n - (size_t)w, " sinks");
        if (w > 0 && (size_t)w < n && (c->flags & VKLLM__CASE_RING)) w += snprintf(buf + w, n - (size_t)w, " ring");
        if (w > 0 && (size_t)w < n && (c->flags & VKLLM__CASE_PAGED)) w += snprintf(buf + w, n - (size_t)w, " paged");
        if (w > 0 && (size_t)w < n && (c->flags & VKLLM__CASE_PARTS)) w += snprintf(buf + w, n - (size_t)w, " 2 parts");
        if (w > 0 && (size_t)w < n && (c->flags & (VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8)))
            snprintf(buf + w, n - (size_t)w, " %s",
                     (c->flags & VKLLM__CASE_KQ8) && (c->flags & VKLLM__CASE_VQ8) ? "q8_0"
                     : c->flags & VKLLM__CASE_KQ8                                 ? "k q8_0"
                                                                                  : "v q8_0");
        break;
    }
    case VKLLM__OP_ARGMAX: snprintf(buf, n, "%u", c->cols); break;
    case VKLLM__OP_MATVEC_ID:
        snprintf(buf, n, "%s %ux%ux%u n=%u k=%u%s%s", vkllm__type_name(c->type), c->heads, c->rows, c->cols, c->n,
                 c->nb, c->flags & VKLLM__CASE_GROUPED ? " grouped" : "", c->flags & VKLLM__CASE_SPLIT ? " split" : "");
        break;
    case VKLLM__OP_MOE_ROUTE:
    case VKLLM__OP_MOE_SUM: snprintf(buf, n, "n=%u %u k=%u", c->n, c->cols, c->nb); break;
    case VKLLM__OP_MOE_ADD_ID: snprintf(buf, n, "n=%u %u experts=%u", c->n, c->cols, c->heads); break;
    default:
        snprintf(buf, n, "%ux%u%s%s%s%s", c->rows, c->cols, c->flags & VKLLM__CASE_LARGE ? " large" : "",
                 c->flags & VKLLM__CASE_NEG_INF ? " -inf" : "", c->flags & VKLLM__CASE_INPLACE ? " in place" : "",
                 c->flags & VKLLM__CASE_NONFINITE ? " extremes" : "");
    }
}

// --- the case's resources ------------------------------------------------------------------

float vkllm__chk_rand(struct chk *k) { /* xorshift64*, uniform in [-1, 1) */
    uint64_t x = k->rng;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    k->rng = x;
    return (float)((x * 0x2545F4914F6CDD1DULL) >> 40) / (float)(1u << 23) - 1.0f;
}

int vkllm__chk_ok(struct chk *k, vkllm_status st) {
    if (st && !k->st) k->st = st;
    return !k->st;
}

void *vkllm__chk_alloc(struct chk *k, uint64_t bytes) {
    if (k->st) return NULL;
    if (k->n_host == CHK_MAX_ALLOCS) {
        vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INTERNAL, "check: too many allocations"));
        return NULL;
    }
    void *p = bytes <= SIZE_MAX ? vkllm__malloc((size_t)(bytes ? bytes : 1)) : NULL;
    if (!p) {
        vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_OOM, "check: %llu bytes of host memory", (unsigned long long)bytes));
        return NULL;
    }
    return k->host[k->n_host++] = p;
}

float *vkllm__chk_floats(struct chk *k, uint64_t n, float scale) {
    float *v = vkllm__chk_alloc(k, n * sizeof(float));
    for (uint64_t i = 0; v && scale != 0.0f && i < n; i++) v[i] = scale * vkllm__chk_rand(k);
    return v;
}

struct vkllm__buffer *vkllm__chk_buf(struct chk *k, uint64_t bytes, const void *data) {
    if (k->st) return NULL;
    if (k->n_bufs == CHK_MAX_ALLOCS) {
        vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INTERNAL, "check: too many buffers"));
        return NULL;
    }
    struct vkllm__buffer *b = NULL;
    if (!vkllm__chk_ok(k, vkllm__buffer_alloc(k->gpu, bytes ? bytes : 4, VKLLM__MEM_DEVICE, &b))) return NULL;
    k->bufs[k->n_bufs++] = b;
    if (data) vkllm__chk_upload(k, b, data, bytes);
    return b;
}

void vkllm__chk_own(struct chk *k, struct vkllm__buffer *b) {
    if (!b) return;
    if (k->n_bufs < CHK_MAX_ALLOCS) {
        k->bufs[k->n_bufs++] = b;
        return;
    }
    vkllm__buffer_free(b);
    vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INTERNAL, "check: too many buffers"));
}

void vkllm__chk_upload(struct chk *k, struct vkllm__buffer *b, const void *src, uint64_t bytes) {
    if (!k->st) vkllm__chk_ok(k, vkllm__buffer_upload(b, 0, src, bytes));
}

void vkllm__chk_download(struct chk *k, struct vkllm__buffer *b, void *dst, uint64_t bytes) {
    if (!k->st) vkllm__chk_ok(k, vkllm__buffer_download(b, 0, dst, bytes));
}

struct vkllm__cmd *vkllm__chk_cmd(struct chk *k) {
    if (k->st) return NULL;
    if (k->n_cmds == VKLLM_ARRAY_LEN(k->cmds)) {
        vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INTERNAL, "check: too many command lists"));
        return NULL;
    }
    struct vkllm__cmd *c = NULL;
    if (!vkllm__chk_ok(k, vkllm__cmd_init(k->gpu, &c))) return NULL;
    k->cmds[k->n_cmds++] = c;
    vkllm__cmd_set_profile(c, 1); /* to see which kernel ran (and, with --profile, how long) */
    return c;
}

void vkllm__chk_submit(struct chk *k, struct vkllm__cmd *c) {
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_submit(c))) return;
    uint32_t n = vkllm__cmd_profile_count(c);
    k->r->dispatches = n;
    k->r->gpu_ns = 0;
    k->r->bytes = k->r->flops = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct vkllm__dispatch_time t;
        if (vkllm__cmd_profile_get(c, i, &t)) continue;
        if (i == 0) snprintf(k->r->kernel, sizeof k->r->kernel, "%s", vkllm__shader_blobs[t.shader].name);
        struct vkllm__cost at;
        vkllm__cost_at(&t.cost, k->c->n_pos ? k->c->pos[0] : 0, &at);
        k->r->gpu_ns += t.ns;
        k->r->bytes += at.bytes_read + at.bytes_written;
        k->r->flops += at.flops;
    }
}

// --- comparison ----------------------------------------------------------------------------

void vkllm__chk_compare(const float *got, const float *want, uint64_t n, struct chk_stats *s) {
    double num = 0, den = 0;
    s->max_abs = s->max_rel = 0;
    for (uint64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(got[i]) != isnan(want[i]) || (isinf(want[i]) && got[i] != want[i]) ||
            (isinf(got[i]) && !isinf(want[i])))
            d = INFINITY;
        else if (isnan(want[i]) || isinf(want[i])) d = 0;
        if (!(d <= s->max_abs)) s->max_abs = d;
        if (fabs(want[i]) > 1e-6 && !(d / fabs(want[i]) <= s->max_rel)) s->max_rel = d / fabs(want[i]);
        if (isfinite(d)) {
            num += d * d;
            den += (double)want[i] * want[i];
        } else {
            num = INFINITY;
        }
    }
    s->nmse = den > 0 ? num / den : num;
}

void vkllm__chk_fold(struct chk *k, const struct chk_stats *s) {
    const char *m = vkllm__op_measure(k->c->op);
    double e = !strcmp(m, "max_rel") ? s->max_rel : !strcmp(m, "max_abs") ? s->max_abs : s->nmse;
    if (!(e <= k->r->err)) k->r->err = e;
    if (!(s->max_abs <= k->r->max_abs)) k->r->max_abs = s->max_abs;
}

void vkllm__chk_fail(struct chk *k, const char *fmt, ...) {
    if (k->r->detail[0]) return; /* the first thing wrong is the one to read */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->r->detail, sizeof k->r->detail, fmt, ap);
    va_end(ap);
}

void vkllm__chk_not_rp(struct chk *k) { vkllm__chk_fail(k, "%s", "W was not put in the 16-byte layout"); }

const float *vkllm__chk_x_seen(struct chk *k, int x8, float *x, uint32_t n, uint32_t kk) {
    if (k->st) return x;
    if (!x8) {
        if (k->c->flags & VKLLM__CASE_X8) {
            k->r->skipped = 1;
            vkllm__chk_fail(k, "the int8-x kernel cannot run here (subgroup arithmetic or size)");
        }
        return x;
    }
    float *xq = vkllm__chk_floats(k, (uint64_t)n * kk, 0);
    if (k->st) return x;
    for (uint32_t j = 0; j < n; j++) vkllm__ref_quantize_x8(xq + (uint64_t)j * kk, x + (uint64_t)j * kk, kk, 1);
    return xq;
}

// --- running a case ------------------------------------------------------------------------

void vkllm__op_memo_free(struct vkllm__op_memo *memo) {
    if (!memo) return;
    vkllm__free(memo->host);
    vkllm__buffer_free(memo->keep);
    memset(memo, 0, sizeof *memo);
}

vkllm_status vkllm__op_check(struct vkllm__gpu *gpu, const struct vkllm__op_case *c, uint64_t seed, int profile,
                             struct vkllm__op_memo *memo, struct vkllm__op_result *r) {
    if (!c || (unsigned)c->op >= VKLLM__OP_COUNT_ || c->n_pos > VKLLM__CASE_MAX_POS)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check: bad case");
    memset(r, 0, sizeof *r);
    r->bound = k_ops[c->op].bound;
    struct chk k = {
        .gpu = gpu, .c = c, .r = r, .rng = seed * 0x9E3779B97F4A7C15ull + 1, .profile = profile, .memo = memo};
    struct vkllm__tuning saved = *vkllm__gpu_tuning(gpu), t = saved;
    vkllm_status st = vkllm__tuning_parse(&t, c->tuning);
    if (st) return st;
    vkllm__gpu_set_tuning(gpu, &t);
    /* a failed allocation only loses the shortcut (the case then reports its own) */
    if (memo && !memo->keep && vkllm__buffer_alloc(gpu, 256, VKLLM__MEM_DEVICE, &memo->keep)) memo->keep = NULL;
    k_ops[c->op].run(&k);
    vkllm__gpu_set_tuning(gpu, &saved);
    for (uint32_t i = 0; i < k.n_cmds; i++) vkllm__cmd_free(k.cmds[i]);
    for (uint32_t i = 0; i < k.n_bufs; i++) vkllm__buffer_free(k.bufs[i]);
    for (uint32_t i = 0; i < k.n_host; i++) vkllm__free(k.host[i]);
    if (k.st) return k.st;
    r->ok = !r->skipped && r->err <= r->bound && !r->detail[0];
    return VKLLM_STATUS_OK;
}
