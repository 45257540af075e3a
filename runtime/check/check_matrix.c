/* check_matrix.c - the products with weight matrices against the reference: decode's matvec
 * (one column, and several that must each be bit-identical to the column alone), the CPU
 * devices' texel matvec on the repacked layout, prefill's matmul, and the embedding lookup.
 *
 * W: random rows of different magnitudes quantized with vkllm__quantize_row; the reference reads
 * the very same bytes (vkllm__ref_matvec_q, vkllm__dequantize_row), so only the kernels' decoding
 * and their f32 summation order are judged. Outputs are poisoned and a guard of GUARD values past
 * the end must stay untouched. */
#include "check_xq.h"

#define GUARD 5
#define POISON -12345.0f

/* W (rows x cols of c->type) quantized on the host: from a random stream of its own, seeded by
 * its type and shape, so that k->memo may hand the same bytes to the next case of that shape. */
struct mat {
    uint32_t type, m, k;
    uint64_t row_bytes;
    uint8_t *host;
};

static int mat_make(struct chk *k, struct mat *w) {
    const struct vkllm__op_case *c = k->c;
    *w = (struct mat){.type = c->type, .m = c->rows, .k = c->cols};
    if (w->m == 0 || w->k == 0 || !vkllm__type_traits(w->type) || !vkllm__type_traits(w->type)->compute ||
        vkllm__row_size(w->type, w->k, &w->row_bytes))
        return vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check %s: %s matrix of %u x %u",
                                           vkllm__op_name(c->op), vkllm__type_name(w->type), w->m, w->k));
    uint64_t bytes = w->row_bytes * w->m;
    w->host = vkllm__chk_alloc(k, bytes);
    if (k->st) return 0;
    struct vkllm__op_memo *memo = k->memo;
    if (memo && memo->host && memo->type == w->type && memo->m == w->m && memo->k == w->k && memo->bytes == bytes) {
        memcpy(w->host, memo->host, bytes);
        return 1;
    }
    float *row = vkllm__chk_floats(k, w->k, 0);
    if (k->st) return 0;
    uint64_t saved = k->rng;
    k->rng = ((uint64_t)w->type << 48 ^ (uint64_t)w->m << 24 ^ w->k) * 0x9E3779B97F4A7C15ull + 1;
    for (uint32_t r = 0; r < w->m; r++) {
        float scale = 0.05f + (float)(r % 5); /* rows of different magnitudes */
        for (uint32_t j = 0; j < w->k; j++) row[j] = scale * vkllm__chk_rand(k);
        vkllm__quantize_row(w->type, row, w->host + r * w->row_bytes, w->k);
    }
    k->rng = saved;
    if (memo && bytes <= (64u << 20)) { /* keep it (a failed allocation only loses the shortcut) */
        vkllm__free(memo->host);
        memo->host = NULL;
        if ((memo->host = vkllm__malloc((size_t)bytes))) {
            memcpy(memo->host, w->host, bytes);
            memo->type = w->type, memo->m = w->m, memo->k = w->k, memo->bytes = bytes;
        }
    }
    return 1;
}

/* W on the device as the ops take it: at byte 256 of its buffer with VKLLM__CASE_OFFSET, the
 * buffer ending at a whole word (the shaders read 32-bit words); with VKLLM__CASE_UPLOADED (SPLIT,
 * RP) made by vkllm__dtensor_upload, as models load (repacked where the tuning says so). */
static struct vkllm__dtensor mat_upload(struct chk *k, const struct mat *w) {
    if (k->c->flags & (VKLLM__CASE_UPLOADED | VKLLM__CASE_SPLIT | VKLLM__CASE_RP)) {
        struct vkllm__dtensor t = {0};
        if (vkllm__chk_ok(k, vkllm__dtensor_upload(k->gpu, w->type, w->k, w->m, w->host, &t)))
            for (uint32_t i = 0; i < VKLLM_MAX(t.n_parts, 1u); i++) vkllm__chk_own(k, i ? t.part[i] : t.buf);
        if (!k->st && (k->c->flags & VKLLM__CASE_SPLIT) && t.n_parts < 2)
            vkllm__chk_fail(k, "the matrix was not split (max_alloc too large for it)");
        if (!k->st && (k->c->flags & VKLLM__CASE_RP) && !t.rp) vkllm__chk_not_rp(k);
        return t;
    }
    uint64_t off = k->c->flags & VKLLM__CASE_OFFSET ? 256 : 0, bytes = w->row_bytes * w->m;
    struct vkllm__dtensor t = {.type = w->type, .k = w->k, .m = w->m, .row_bytes = w->row_bytes, .offset = off};
    t.buf = vkllm__chk_buf(k, (off + bytes + 3) & ~(uint64_t)3, NULL);
    if (t.buf) vkllm__chk_ok(k, vkllm__buffer_upload(t.buf, off, w->host, bytes));
    return t;
}

/* A buffer of n floats, all POISON. */
static struct vkllm__buffer *poisoned(struct chk *k, uint64_t n, float *scratch) {
    for (uint64_t i = 0; scratch && i < n; i++) scratch[i] = POISON;
    return vkllm__chk_buf(k, n * 4, scratch);
}

static int guard_ok(const float *y, uint64_t from) {
    for (uint64_t i = from; i < from + GUARD; i++)
        if (y[i] != POISON) return 0;
    return 1;
}

/* Record and run one op through fn on a fresh command list. */
#define RUN1(k, cmd, call)                                                                      \
    do {                                                                                        \
        struct vkllm__cmd *cmd = vkllm__chk_cmd(k);                                             \
        if ((k)->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) || !vkllm__chk_ok(k, (call)) || \
            !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))                                             \
            return;                                                                             \
        vkllm__chk_submit(k, cmd);                                                              \
    } while (0)

/* Each row of got within 1e-5 of sum_j |w_ij x_j| of want (row: k floats of scratch). The measure
 * for a handful of rows, where one row's cancellation rules the NMSE. */
static void rows_within(struct chk *k, const struct mat *w, const float *x, const float *got, const float *want,
                        float *row) {
    for (uint32_t i = 0; i < w->m; i++) {
        vkllm__dequantize_row(w->type, w->host + i * w->row_bytes, row, w->k);
        double a = 0;
        for (uint32_t j = 0; j < w->k; j++) a += fabs((double)row[j] * x[j]);
        if (!(fabs((double)got[i] - want[i]) <= 1e-5 * a))
            vkllm__chk_fail(k, "row %u: %g, reference %g (bound 1e-5 of %g)", i, got[i], want[i], a);
    }
}

/* --- matvec -------------------------------------------------------------------------------- */

/* Where the int8-x kernel takes W: y (ny floats) again with x (bx, ncx columns of kk) quantized
 * once (check_xq.h) through op, into gq (ny + GUARD floats, poisoned first); recorded right after
 * the case's own run, before anything is downloaded (a compile-only context, `vkllm pipelines`,
 * stops at the first download), and compared with the case's result at the end (xq_same). */
#define XQ_RUN(k, bx, xr, ncx, kk, ny, gq, op)                                           \
    do {                                                                                 \
        struct vkllm__cmd *cq_;                                                          \
        struct vkllm__buffer *bq_, *yq_ = poisoned(k, (ny) + GUARD, gq);                 \
        if (vkllm__chk_xq_begin(k, bx, ncx, kk, &cq_, &bq_) && vkllm__chk_ok(k, (op)) && \
            vkllm__chk_xq_end(k, cq_, bq_, xr, ncx, kk))                                 \
            vkllm__chk_download(k, yq_, gq, 4 * ((ny) + GUARD));                         \
    } while (0)

/* got's ny floats must be gq's bits (XQ_RUN), gq's guard untouched. */
static void xq_same(struct chk *k, const float *gq, const float *got, uint64_t ny) {
    if (k->st || !gq) return;
    if (memcmp(gq, got, 4 * ny))
        vkllm__chk_fail(k, "x quantized once per step (quantize_x8): not the bits of x quantized per workgroup");
    if (!guard_ok(gq, ny)) vkllm__chk_fail(k, "x quantized once per step: wrote past the output");
}

/* y (n, m) = x (n, k) @ W^T in one op; with n > 1, each column also alone (results at aligned
 * offsets), and every column must be the same bits. Where the int8-x kernel takes W, also with x
 * quantized once per step (the same bits). */
void vkllm__chk_matvec(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    struct mat w;
    if (!mat_make(k, &w)) return;
    uint32_t n = c->n ? c->n : 1;
    uint64_t nx = (uint64_t)n * w.k, ny = (uint64_t)n * w.m, mp = (w.m + 63) / 64 * 64;
    float *x = vkllm__chk_floats(k, nx, 1.0f), *want = vkllm__chk_floats(k, w.m, 0);
    float *got = vkllm__chk_floats(k, ny + GUARD, 0), *one = vkllm__chk_floats(k, (uint64_t)n * mp, 0);
    int bad_cols = c->flags & VKLLM__CASE_NONFINITE ? (n > 1 ? 2 : 1) : 0;
    if (!k->st && bad_cols) {
        x[w.k / 3] = INFINITY;
        if (bad_cols > 1) x[w.k + w.k / 2] = NAN;
    }
    struct vkllm__dtensor t = mat_upload(k, &w);
    const int x8 = vkllm__matvec_x8_applies(k->gpu, &t, n);
    const float *xr = vkllm__chk_x_seen(k, x8, x, n, w.k);
    struct vkllm__buffer *xb = vkllm__chk_buf(k, nx * 4, x), *yb = poisoned(k, ny + GUARD, got);
    struct vkllm__buffer *yb1 = n > 1 ? poisoned(k, (uint64_t)n * mp, one) : NULL;
    float *gq = x8 ? vkllm__chk_floats(k, ny + GUARD, 0) : NULL;
    RUN1(k, cmd, vkllm__op_matvec(cmd, vkllm__view_of(yb), &t, vkllm__view_of(xb), n));
    if (x8)
        XQ_RUN(k, xb, xr, n, w.k, ny, gq,
               vkllm__op_matvec_xq(cq_, vkllm__view_of(yq_), &t, vkllm__view_of(xb), vkllm__view_of(bq_), n));
    vkllm__chk_download(k, yb, got, 4 * (ny + GUARD));
    if (n > 1) {
        struct vkllm__cmd *c1 = vkllm__chk_cmd(k);
        if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(c1))) return;
        for (uint32_t j = 0; j < n; j++) {
            struct vkllm__view xj = {xb, 4ull * j * w.k, 4ull * w.k}, yj = {yb1, 4ull * j * mp, 4ull * w.m};
            if (!vkllm__chk_ok(k, vkllm__op_matvec(c1, yj, &t, xj, 1))) return;
        }
        if (!vkllm__chk_ok(k, vkllm__cmd_end(c1)) || !vkllm__chk_ok(k, vkllm__cmd_submit(c1))) return;
        vkllm__chk_download(k, yb1, one, 4ull * n * mp);
    }
    float *row = w.m < 7 ? vkllm__chk_floats(k, w.k, 0) : NULL;
    if (k->st) return;
    if (!guard_ok(got, ny)) vkllm__chk_fail(k, "wrote past the output");
    for (uint32_t j = 0; j < n; j++) {
        if ((int)j < bad_cols) { /* an inf or NaN in x: no row of its product is finite */
            for (uint32_t i = 0; i < w.m; i++)
                if (isfinite(got[(uint64_t)j * w.m + i]))
                    vkllm__chk_fail(k, "column %u (x holds %s): row %u is finite (%g)", j, j ? "a NaN" : "an inf", i,
                                    got[(uint64_t)j * w.m + i]);
        } else {
            vkllm__ref_matvec_q(want, w.type, w.host, w.row_bytes, xr + (uint64_t)j * w.k, w.m, w.k);
            struct chk_stats s;
            vkllm__chk_compare(got + (uint64_t)j * w.m, want, w.m, &s);
            if (row) { /* a handful of rows: each within its bound instead */
                rows_within(k, &w, xr + (uint64_t)j * w.k, got + (uint64_t)j * w.m, want, row);
                s.nmse = 0;
            }
            vkllm__chk_fold(k, &s);
        }
        if (n > 1 && memcmp(got + (uint64_t)j * w.m, one + (uint64_t)j * mp, 4ull * w.m))
            vkllm__chk_fail(k, "column %u of %u differs from the column alone", j, n);
    }
    xq_same(k, gq, got, ny);
}

/* --- matvec_glu ---------------------------------------------------------------------------- */

/* W: gate's rows over up's (the case's rows, even). Against silu(gate) * up of the reference
 * products, and bit-identical to vkllm__op_matvec then vkllm__op_silu_mul on the device (what the
 * forward pass runs where the fused kernel does not apply). */
void vkllm__chk_matvec_glu(struct chk *k) {
    struct mat w;
    if (!mat_make(k, &w)) return;
    uint32_t m = w.m / 2;
    float *x = vkllm__chk_floats(k, w.k, 1.0f), *gu = vkllm__chk_floats(k, w.m, 0);
    float *want = vkllm__chk_floats(k, m, 0), *got = vkllm__chk_floats(k, m + GUARD, 0);
    float *two = vkllm__chk_floats(k, w.m + GUARD, 0);
    struct vkllm__dtensor t = mat_upload(k, &w);
    if (k->st) return;
    if (w.m % 2 || !vkllm__matvec_glu_applies(k->gpu, &t)) {
        k->r->skipped = 1;
        vkllm__chk_fail(k, "the fused kernel does not take this matrix here (texel path or one binding too small)");
        return;
    }
    const int x8 = vkllm__matvec_x8_applies(k->gpu, &t, 1);
    const float *xr = vkllm__chk_x_seen(k, x8, x, 1, w.k);
    struct vkllm__buffer *xb = vkllm__chk_buf(k, 4ull * w.k, x), *yb = poisoned(k, m + GUARD, got);
    struct vkllm__buffer *gb = poisoned(k, w.m + GUARD, two), *ob = poisoned(k, m + GUARD, two);
    float *gq = x8 ? vkllm__chk_floats(k, m + GUARD, 0) : NULL;
    RUN1(k, cmd, vkllm__op_matvec_glu(cmd, vkllm__view_of(yb), &t, vkllm__view_of(xb)));
    if (x8)
        XQ_RUN(k, xb, xr, 1, w.k, (uint64_t)m, gq,
               vkllm__op_matvec_glu_xq(cq_, vkllm__view_of(yq_), &t, vkllm__view_of(xb), vkllm__view_of(bq_)));
    vkllm__chk_download(k, yb, got, 4ull * (m + GUARD));
    struct vkllm__cmd *c2 = vkllm__chk_cmd(k);
    struct vkllm__view g = {gb, 0, 4ull * m}, u = {gb, 4ull * m, 4ull * m}, o = {ob, 0, 4ull * m};
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(c2)) ||
        !vkllm__chk_ok(k, vkllm__op_matvec(c2, vkllm__view_of(gb), &t, vkllm__view_of(xb), 1)) ||
        !vkllm__chk_ok(k, vkllm__op_silu_mul(c2, o, g, u, m)) || !vkllm__chk_ok(k, vkllm__cmd_end(c2)))
        return;
    vkllm__chk_submit(k, c2);
    vkllm__chk_download(k, ob, two, 4ull * m);
    if (k->st) return;
    if (!guard_ok(got, m)) vkllm__chk_fail(k, "wrote past the output");
    vkllm__ref_matvec_q(gu, w.type, w.host, w.row_bytes, xr, w.m, w.k);
    for (uint32_t i = 0; i < m; i++) want[i] = gu[i] / (1.0f + expf(-gu[i])) * gu[m + i];
    struct chk_stats s;
    vkllm__chk_compare(got, want, m, &s);
    vkllm__chk_fold(k, &s);
    if (memcmp(got, two, 4ull * m)) vkllm__chk_fail(k, "differs from matvec then silu_mul on the device");
    xq_same(k, gq, got, m);
}

/* --- matvec_tb ----------------------------------------------------------------------------- */

/* Column y (m,) against the reference: folded into the result, and each row within 1e-5 of
 * sum_j |w_ij x_j| (one row's NMSE is dominated by cancellation). */
static void tb_column(struct chk *k, const struct mat *w, const float *x, const float *got, float *want, float *row) {
    vkllm__ref_matvec_q(want, w->type, w->host, w->row_bytes, x, w->m, w->k);
    rows_within(k, w, x, got, want, row);
    struct chk_stats s;
    vkllm__chk_compare(got, want, w->m, &s);
    if (w->m < 7) s.nmse = 0; /* a handful of rows: the per-row bound is the measure */
    vkllm__chk_fold(k, &s);
}

/* y of nc columns from column c0 of x through vkllm__op_matvec_tb (tb) or vkllm__op_matvec,
 * recorded into cmd (re-recorded each time) with y in yb (poisoned first). */
static void tb_run(struct chk *k, struct vkllm__cmd *cmd, struct vkllm__buffer *yb, const struct vkllm__dtensor *t,
                   struct vkllm__buffer *xb, uint32_t c0, uint32_t nc, int tb, float *got) {
    uint64_t ny = (uint64_t)nc * t->m + GUARD;
    for (uint64_t i = 0; i < ny; i++) got[i] = POISON;
    vkllm__chk_upload(k, yb, got, 4 * ny);
    struct vkllm__view x = {xb, 4ull * c0 * t->k, 0}, y = {yb, 0, 4 * ny};
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) ||
        !vkllm__chk_ok(k, tb ? vkllm__op_matvec_tb(cmd, y, t, x, nc) : vkllm__op_matvec(cmd, y, t, x, nc)) ||
        !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))
        return;
    vkllm__chk_submit(k, cmd);
    vkllm__chk_download(k, yb, got, 4 * ny);
}

static void set_texel(struct chk *k, int on) {
    struct vkllm__tuning t = *vkllm__gpu_tuning(k->gpu);
    t.matvec_texel = on;
    if (!on) t.matvec_x8 = 0; /* compared with x as it is */
    vkllm__gpu_set_tuning(k->gpu, &t);
}

void vkllm__chk_matvec_tb(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    struct mat w;
    if (!mat_make(k, &w)) return;
    if (!vkllm__matvec_tb_bytes(k->gpu, w.type, w.k, w.m)) {
        k->r->skipped = 1;
        vkllm__chk_fail(k, "no texel matvec here (device, type, shape or matvec_texel=0)");
        return;
    }
    struct vkllm__dtensor t = {0};
    if (!vkllm__chk_ok(k, vkllm__dtensor_upload(k->gpu, w.type, w.k, w.m, w.host, &t))) return;
    vkllm_status st = vkllm__dtensor_add_tb(k->gpu, &t, w.host);
    vkllm__chk_own(k, t.buf); /* both layouts are freed with the case */
    vkllm__chk_own(k, t.tb);
    if (!vkllm__chk_ok(k, st)) return;
    if ((c->flags & VKLLM__CASE_RP) && !t.rp) {
        vkllm__chk_not_rp(k);
        return;
    }
    if (!t.tb) {
        vkllm__chk_fail(k, "no repacked copy was made");
        return;
    }
    uint32_t n = c->n ? c->n : 1;
    uint64_t ny = (uint64_t)n * w.m + GUARD;
    float *x = vkllm__chk_floats(k, (uint64_t)n * w.k, 1.0f), *want = vkllm__chk_floats(k, w.m, 0);
    float *got = vkllm__chk_floats(k, ny, 0), *alone = vkllm__chk_floats(k, ny, 0), *row = vkllm__chk_floats(k, w.k, 0);
    struct vkllm__buffer *xb = vkllm__chk_buf(k, 4ull * n * w.k, x), *yb = vkllm__chk_buf(k, 4 * ny, NULL);
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);
    /* each column alone, at its offset in x */
    for (uint32_t j = 0; j < n && !k->st; j++) {
        tb_run(k, cmd, yb, &t, xb, j, 1, 1, got);
        if (k->st) return;
        if (!guard_ok(got, w.m)) vkllm__chk_fail(k, "wrote past the output");
        memcpy(alone + (uint64_t)j * w.m, got, 4ull * w.m);
        tb_column(k, &w, x + (uint64_t)j * w.k, got, want, row);
    }
    /* batches of 2..n columns ending at the last one: each column the same bits as alone */
    for (uint32_t nc = 2; nc <= n && !k->st; nc++) {
        tb_run(k, cmd, yb, &t, xb, n - nc, nc, 1, got);
        if (k->st) return;
        if (memcmp(got, alone + (uint64_t)(n - nc) * w.m, 4ull * nc * w.m) || !guard_ok(got, (uint64_t)nc * w.m))
            vkllm__chk_fail(k, "a batch of %u columns is not bit-identical to its columns alone", nc);
    }
    /* vkllm__op_matvec on a matrix with both layouts: the texel path (the same bits) while it is
     * on, the storage-buffer path when it is off */
    if ((c->flags & VKLLM__CASE_BOTH_PATHS) && n >= 2 && !k->st) {
        for (int on = 1; on >= 0 && !k->st; on--) {
            set_texel(k, on);
            if (vkllm__matvec_tb_applies(k->gpu, &t) != on) vkllm__chk_fail(k, "matvec_texel=%d not followed", on);
            tb_run(k, cmd, yb, &t, xb, 0, 2, 0, got);
            if (k->st) return;
            for (uint32_t j = 0; j < 2; j++)
                tb_column(k, &w, x + (uint64_t)j * w.k, got + (uint64_t)j * w.m, want, row);
            if (on && memcmp(got, alone, 8ull * w.m)) vkllm__chk_fail(k, "vkllm__op_matvec differs from matvec_tb");
        }
    }
}

/* --- matmul -------------------------------------------------------------------------------- */

/* v rounded to f16 (round to nearest even, or toward zero), back in f32: what the f16 tiles hold
 * (check_moe.c's grouped GEMM too).
 * Vulkan leaves the rounding of an f32 -> f16 conversion to the implementation (either). */
float vkllm__chk_f16_round(float v, int toward_zero) {
    uint16_t h = vkllm__f32_to_f16(v);
    float r = vkllm__f16_to_f32(h);
    if (toward_zero && isfinite(r) && fabsf(r) > fabsf(v)) r = vkllm__f16_to_f32((uint16_t)(h - 1u));
    return r;
}

/* y (n, m) = x (n, k) @ W^T against a double-accumulated product: NMSE over the output, and
 * every element within 3e-5 * sum_t |x_t w_t| + 1e-6 (f32 accumulation of thousands of terms
 * stays far below this; a wrong element, scale or unwritten output does not). Where the f16
 * tiles run, the reference multiplies x and W rounded to f16 as the kernel stages them, each
 * element judged against the nearer of the two roundings Vulkan allows. */
void vkllm__chk_matmul(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    struct mat w;
    if (!mat_make(k, &w)) return;
    uint32_t n = c->n ? c->n : 1;
    float *wd = vkllm__chk_floats(k, (uint64_t)w.m * w.k, 0), *x = vkllm__chk_floats(k, (uint64_t)n * w.k, 1.0f);
    float *y = vkllm__chk_floats(k, (uint64_t)n * w.m, 0);
    if (k->st) return;
    for (uint32_t r = 0; r < w.m; r++)
        vkllm__dequantize_row(w.type, w.host + r * w.row_bytes, wd + (uint64_t)r * w.k, w.k);
    for (uint64_t i = 0; i < (uint64_t)n * w.m; i++) y[i] = NAN; /* unwritten outputs show up */
    struct vkllm__dtensor t = mat_upload(k, &w);
    if (!k->st && (c->flags & VKLLM__CASE_COOPMAT) && !vkllm__matmul_uses_coopmat(k->gpu, &t, n)) {
        k->r->skipped = 1;
        vkllm__chk_fail(k, "no cooperative matrices here (VK_KHR_cooperative_matrix with an f16 x f16 -> f32 "
                           "subgroup shape, a required subgroup size)");
        return;
    }
    /* prefill through the matvec kernel (matmul=matvec): x in int8 where that kernel takes it */
    const float *xs[2] = {vkllm__chk_x_seen(
        k, vkllm__matmul_uses_matvec(k->gpu, &t, n) && vkllm__matvec_x8_applies(k->gpu, &t, n), x, n, w.k)};
    const float *ws[2] = {wd};
    int nv = 1;
    if (vkllm__matmul_uses_h16(k->gpu, &t, n)) {
        nv = 2;
        for (int v = 0; v < 2; v++) {
            float *xh = vkllm__chk_floats(k, (uint64_t)n * w.k, 0), *wh = vkllm__chk_floats(k, (uint64_t)w.m * w.k, 0);
            if (k->st) return;
            for (uint64_t i = 0; i < (uint64_t)n * w.k; i++) xh[i] = vkllm__chk_f16_round(x[i], v);
            for (uint64_t i = 0; i < (uint64_t)w.m * w.k; i++) wh[i] = vkllm__chk_f16_round(wd[i], v);
            xs[v] = xh, ws[v] = wh;
        }
    }
    struct vkllm__buffer *xb = vkllm__chk_buf(k, 4ull * n * w.k, x), *yb = vkllm__chk_buf(k, 4ull * n * w.m, y);
    RUN1(k, cmd, vkllm__op_matmul(cmd, vkllm__view_of(yb), &t, vkllm__view_of(xb), n));
    vkllm__chk_download(k, yb, y, 4ull * n * w.m);
    if (k->st) return;
    double err2 = 0, ref2 = 0, worst = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < w.m; j++) {
            double g = y[(uint64_t)i * w.m + j], e = INFINITY, s0 = 0, sa = 0;
            for (int v = 0; v < nv; v++) {
                const float *xr = xs[v] + (uint64_t)i * w.k, *wr = ws[v] + (uint64_t)j * w.k;
                double s = 0, a = 0;
                for (uint32_t q = 0; q < w.k; q++) s += (double)xr[q] * wr[q], a += fabs((double)xr[q] * wr[q]);
                if (v == 0) s0 = s, sa = a;
                if (fabs(g - s) < e) e = fabs(g - s);
            }
            err2 += isfinite(g) ? e * e : INFINITY;
            ref2 += s0 * s0;
            if (!(e <= k->r->max_abs)) k->r->max_abs = isfinite(g) ? e : INFINITY;
            double ratio = isfinite(g) ? e / (3e-5 * sa + 1e-6) : INFINITY;
            if (!(ratio <= worst)) worst = ratio;
            if (!(ratio <= 1.0))
                vkllm__chk_fail(k, "y[%u][%u] = %g, reference %g: %.3g of its bound", i, j, g, s0, ratio);
        }
    double nmse = ref2 > 0 ? err2 / ref2 : err2;
    if (!(nmse <= k->r->err)) k->r->err = nmse;
}

/* --- get_rows ------------------------------------------------------------------------------ */

/* o (n, k) = rows ids of W: the last row, the first, repeats, the middle. */
void vkllm__chk_get_rows(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    struct mat w;
    if (!mat_make(k, &w)) return;
    uint32_t n = c->n ? c->n : 7;
    uint32_t *ids = vkllm__chk_alloc(k, 4ull * n);
    float *want = vkllm__chk_floats(k, (uint64_t)n * w.k, 0), *got = vkllm__chk_floats(k, (uint64_t)n * w.k, 0);
    if (k->st) return;
    const uint32_t pattern[] = {w.m - 1, 0, w.m - 1, 3 % w.m, w.m / 2, w.m - 1, 1 % w.m};
    for (uint32_t i = 0; i < n; i++) {
        ids[i] = i < 7 ? pattern[i] : (uint32_t)((i * 2654435761u) % w.m);
        vkllm__dequantize_row(w.type, w.host + (uint64_t)ids[i] * w.row_bytes, want + (uint64_t)i * w.k, w.k);
    }
    struct vkllm__dtensor t = mat_upload(k, &w);
    struct vkllm__buffer *ib = vkllm__chk_buf(k, 4ull * n, ids), *ob = vkllm__chk_buf(k, 4ull * n * w.k, NULL);
    if (ob) vkllm__chk_ok(k, vkllm__buffer_fill_zero(ob));
    RUN1(k, cmd, vkllm__op_get_rows(cmd, vkllm__view_of(ob), &t, vkllm__view_of(ib), n));
    vkllm__chk_download(k, ob, got, 4ull * n * w.k);
    if (k->st) return;
    struct chk_stats s;
    vkllm__chk_compare(got, want, (uint64_t)n * w.k, &s);
    vkllm__chk_fold(k, &s);
}

/* --- x quantized once per step (check_xq.h) ------------------------------------------------ */

int vkllm__chk_xq_begin(struct chk *k, struct vkllm__buffer *bx, uint32_t ncx, uint32_t kk, struct vkllm__cmd **cmd,
                        struct vkllm__buffer **bq) {
    *bq = vkllm__chk_buf(k, vkllm__xq8_bytes(kk, ncx), NULL);
    *cmd = vkllm__chk_cmd(k);
    return !k->st && vkllm__chk_ok(k, vkllm__cmd_begin(*cmd)) &&
           vkllm__chk_ok(k, vkllm__op_quantize_x8(*cmd, vkllm__view_of(*bq), vkllm__view_of(bx), kk, ncx));
}

int vkllm__chk_xq_end(struct chk *k, struct vkllm__cmd *cmd, struct vkllm__buffer *bq, const float *xr, uint32_t ncx,
                      uint32_t kk) {
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_end(cmd)) || !vkllm__chk_ok(k, vkllm__cmd_submit(cmd))) return 0;
    for (uint32_t i = 0, n = vkllm__cmd_profile_count(cmd); i < n; i++) {
        struct vkllm__dispatch_time t;
        if (vkllm__cmd_profile_get(cmd, i, &t)) continue;
        const char *name = vkllm__shader_blobs[t.shader].name;
        if (i == 0 ? strcmp(name, "quantize_x8") != 0 : !strstr(name, "_xq8"))
            vkllm__chk_fail(k, "x quantized once: dispatch %u ran %s", i, name);
    }
    uint64_t cg = vkllm__xq8_col_groups(kk), bytes = vkllm__xq8_bytes(kk, ncx);
    uint8_t *q = vkllm__chk_alloc(k, bytes);
    vkllm__chk_download(k, bq, q, bytes);
    if (k->st) return 0;
    for (uint32_t j = 0; j < ncx; j++) {
        for (uint32_t b = 0; b < kk / 32; b++) {
            uint64_t xi = 4 * j * cg + b, g = 160 * (xi / 4);
            float ds[2];
            memcpy(ds, q + g + 8 * (xi % 4), 8);
            const int8_t *qs = (const int8_t *)(q + g + 32 + 32 * (xi % 4));
            const float *want = xr + (uint64_t)j * kk + 32 * b;
            int sum = 0;
            for (uint32_t e = 0; e < 32; e++) {
                float v = qs[e] * ds[0];
                sum += qs[e];
                /* the same quants; d within a few ulps (a device's division may round otherwise) */
                if (isnan(v) != isnan(want[e]) || (!isnan(v) && !(fabsf(v - want[e]) <= 1e-6f * fabsf(want[e])))) {
                    vkllm__chk_fail(k, "quantize_x8: column %u element %u: %g, reference %g", j, 32 * b + e, v,
                                    want[e]);
                    return 0;
                }
            }
            float s = ds[0] * (float)sum;
            if (memcmp(&s, &ds[1], 4) && !(isnan(s) && isnan(ds[1]))) {
                vkllm__chk_fail(k, "quantize_x8: column %u block %u: d * sum %g, want %g", j, b, ds[1], s);
                return 0;
            }
        }
    }
    return 1;
}
