/* check_moe.c - mixture of experts against the reference (ops_moe.c):
 *   matvec_id  experts (n_expert stacked matrices of c->type, c->rows rows each) picked per column by
 *              random ids (one of them past n_expert: a zero column), x shared by x_div columns
 *              (c->n tokens of c->nb picks; c->heads experts); nmse against vkllm__ref_matvec_q on
 *              the picked expert's rows, a guard after y untouched; GROUPED: through moe_group and
 *              the grouped kernel, every column bit for bit what the one-column kernel computes;
 *              BOTH_PATHS: the experts also repacked (CPU devices' texel kernel, matvec_tb_id); on
 *              CPU devices q4_K experts without a repacked copy take that kernel on their GGUF blocks;
 *              GROUPED also runs the grouped GEMM (matmul_id) under each of k_gemm_tunings on uneven
 *              experts (one pick, none, more than a tile, ids past the experts), each element within
 *              matmul's bound of a double product (f16-rounded where its tiles are f16)
 *   moe_route  c->n tokens of c->cols router logits (with ties), c->nb picks: the ids exactly,
 *              the weights within the bound (vkllm__ref_moe_route)
 *   moe_sum    c->n tokens of c->nb picks of c->cols: max_abs against the sum in double
 *   moe_add_id c->n rows of c->cols plus the row of a (c->heads, c->cols) bias each one's id picks (one
 *              id past the bias: nothing added); one f32 addition each, as add */
#include "check_xq.h"

#define GUARD 5
#define POISON -12345.0f

/* GROUPED: the grouped GEMM (vkllm__op_matmul_id, matmul.comp's MATMUL_ID), forced by these
 * tunings on top of the case's: the device's tiles (f16 where it has f16 arithmetic), f32 tiles,
 * small tiles (several per expert, columns past a tile), the emulated cooperative matrices (F16,
 * Q4_K, Q5_0; others skip it). */
static const char *const k_gemm_tunings[] = {"matmul=tiled", "matmul=tiled,matmul_f16=0",
                                             "matmul_bm=16,matmul_bn=8,matmul_bk=8", "matmul=tiled,matmul_coopmat=2"};
#define N_GEMM (sizeof k_gemm_tunings / sizeof k_gemm_tunings[0])

/* The grouped GEMM's picks of expert ids[i] < ne against a double-accumulated product of the
 * dequantized experts and x (and, where the tiles are f16, of both rounded to f16 either way
 * Vulkan allows, the nearer counting): every element within 3e-5 sum |x w| + 1e-6 as matmul's
 * check; an id past ne gives zeros; nothing written past y. */
static void gemm_judge(struct chk *k, const char *tuning, int h16, const float *got, const float *wd, const float *x,
                       const uint32_t *ids, uint32_t ncols, uint32_t picks, uint32_t m, uint32_t kk, uint32_t ne) {
    for (uint32_t i = 0; i < ncols; i++) {
        const float *xr = x + (uint64_t)(i / picks) * kk;
        for (uint32_t j = 0; j < m; j++) {
            double g = got[(uint64_t)i * m + j];
            if (ids[i] >= ne) {
                if (g != 0)
                    return vkllm__chk_fail(k, "%s: column %u (id past the experts) row %u = %g", tuning, i, j, g);
                continue;
            }
            const float *wr = wd + ((uint64_t)ids[i] * m + j) * kk;
            double e = INFINITY, s0 = 0, sa = 0;
            for (int v = 0; v < (h16 ? 3 : 1); v++) {
                double s = 0;
                for (uint32_t q = 0; q < kk; q++) {
                    float a = v ? vkllm__chk_f16_round(xr[q], v - 1) : xr[q];
                    float b = v ? vkllm__chk_f16_round(wr[q], v - 1) : wr[q];
                    s += (double)a * b;
                    if (v == 0) sa += fabs((double)a * b);
                }
                if (v == 0) s0 = s;
                if (v || !h16) e = fmin(e, fabs(g - s));
            }
            if (!isfinite(g) || !(e <= 3e-5 * sa + 1e-6))
                return vkllm__chk_fail(k, "%s: column %u (expert %u) row %u = %g, reference %g", tuning, i, ids[i], j,
                                       g, s0);
        }
    }
    for (uint32_t i = 0; i < GUARD; i++)
        if (got[(uint64_t)ncols * m + i] != POISON) return vkllm__chk_fail(k, "%s: wrote past the end of y", tuning);
}

/* Run the grouped GEMM under each of k_gemm_tunings (one command list, the tuning switched between
 * the recordings) on the grouping bg already made, and judge each. */
static void gemm_id_check(struct chk *k, const struct vkllm__dtensor *t, const uint8_t *w, uint64_t row_bytes, float *x,
                          const uint32_t *ids, struct vkllm__buffer *bx, struct vkllm__buffer *bg, uint32_t ncols,
                          uint32_t picks, uint32_t m, uint32_t kk, uint32_t ne) {
    const struct vkllm__op_case *c = k->c;
    uint64_t ny = (uint64_t)ncols * m + GUARD;
    float *wd = vkllm__chk_floats(k, (uint64_t)m * ne * kk, 0), *got = vkllm__chk_floats(k, ny, 0);
    if (k->st) return;
    for (uint64_t r = 0; r < (uint64_t)m * ne; r++) vkllm__dequantize_row(c->type, w + r * row_bytes, wd + r * kk, kk);
    for (uint64_t i = 0; i < ny; i++) got[i] = POISON;
    struct vkllm__buffer *by[N_GEMM];
    int ran[N_GEMM] = {0}, h16[N_GEMM] = {0};
    for (size_t v = 0; v < N_GEMM; v++) by[v] = vkllm__chk_buf(k, 4 * ny, got);
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd))) return;
    struct vkllm__tuning saved = *vkllm__gpu_tuning(k->gpu);
    for (size_t v = 0; v < N_GEMM && !k->st; v++) {
        struct vkllm__tuning tu = saved;
        if (!vkllm__chk_ok(k, vkllm__tuning_parse(&tu, k_gemm_tunings[v]))) break;
        vkllm__gpu_set_tuning(k->gpu, &tu);
        struct vkllm__mm_coopmat cm;
        if (tu.matmul_coopmat == 2 &&
            !vkllm__matmul_coopmat_can(vkllm__gpu_info(k->gpu), c->type, 8, m, 1, &cm)) /* not this type, device */
            continue;
        if (!vkllm__matmul_id_applies(k->gpu, t, ne, ncols, &h16[v])) {
            vkllm__chk_fail(k, "%s: the grouped GEMM does not take the experts", k_gemm_tunings[v]);
            break;
        }
        ran[v] = vkllm__chk_ok(k, vkllm__op_matvec_id_grouped(cmd, vkllm__view_of(by[v]), t, ne, vkllm__view_of(bx),
                                                              picks, kk, vkllm__view_of(bg), ncols));
    }
    vkllm__gpu_set_tuning(k->gpu, &saved);
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_end(cmd))) return;
    vkllm__chk_submit(k, cmd);
    for (size_t v = 0; v < N_GEMM && !k->st; v++) {
        if (!ran[v]) continue;
        vkllm__chk_download(k, by[v], got, 4 * ny);
        if (!k->st) gemm_judge(k, k_gemm_tunings[v], h16[v], got, wd, x, ids, ncols, picks, m, kk, ne);
    }
}

/* The experts' products again with x quantized once (check_xq.h; grouped: the grouped matvec, bg
 * already grouped by the case's own run), into gq (ny + GUARD floats); recorded before anything
 * is downloaded (`vkllm pipelines` stops at the first download), compared at the end. */
static void xq_run(struct chk *k, const struct vkllm__dtensor *t, struct vkllm__buffer *bx, struct vkllm__buffer *bi,
                   struct vkllm__buffer *bg, const float *xr, float *gq, uint32_t ncols, uint32_t picks, uint32_t m,
                   uint32_t kk, uint32_t ne) {
    const struct vkllm__op_case *c = k->c;
    uint64_t ny = (uint64_t)ncols * m;
    for (uint64_t i = 0; gq && i < ny + GUARD; i++) gq[i] = POISON;
    struct vkllm__buffer *by = vkllm__chk_buf(k, 4 * (ny + GUARD), gq), *bq;
    struct vkllm__cmd *cmd;
    struct vkllm__tuning saved = *vkllm__gpu_tuning(k->gpu), tu = saved;
    if (!vkllm__chk_ok(k, vkllm__tuning_parse(&tu, "matmul=matvec"))) return;
    if (!vkllm__chk_xq_begin(k, bx, c->n, kk, &cmd, &bq)) return;
    vkllm__gpu_set_tuning(k->gpu, &tu);
    int ok =
        vkllm__chk_ok(k, bg ? vkllm__op_matvec_id_grouped_xq(cmd, vkllm__view_of(by), t, ne, vkllm__view_of(bx), picks,
                                                             kk, vkllm__view_of(bg), vkllm__view_of(bq), ncols)
                            : vkllm__op_matvec_id_xq(cmd, vkllm__view_of(by), t, ne, vkllm__view_of(bx), picks, kk,
                                                     vkllm__view_of(bi), vkllm__view_of(bq), ncols));
    vkllm__gpu_set_tuning(k->gpu, &saved);
    if (ok && vkllm__chk_xq_end(k, cmd, bq, xr, c->n, kk)) vkllm__chk_download(k, by, gq, 4 * (ny + GUARD));
}

void vkllm__chk_matvec_id(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint32_t ne = c->heads, m = c->rows, kk = c->cols, picks = c->nb ? c->nb : 1, ncols = c->n * picks;
    uint64_t row_bytes;
    if (!ne || !m || !kk || !c->n || vkllm__row_size(c->type, kk, &row_bytes) || kk % 4) {
        vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check matvec_id: %s %u x %u x %u",
                                    vkllm__type_name(c->type), ne, m, kk));
        return;
    }
    uint8_t *w = vkllm__chk_alloc(k, row_bytes * m * ne);
    float *row = vkllm__chk_floats(k, kk, 0), *x = vkllm__chk_floats(k, (uint64_t)c->n * kk, 1.0f);
    float *want = vkllm__chk_floats(k, (uint64_t)ncols * m, 0),
          *got = vkllm__chk_floats(k, (uint64_t)ncols * m + GUARD, 0);
    uint32_t *ids = vkllm__chk_alloc(k, 4ull * ncols);
    if (k->st) return;
    for (uint64_t r = 0; r < (uint64_t)m * ne; r++) {
        float scale = 0.05f + (float)(r % 7);
        for (uint32_t j = 0; j < kk; j++) row[j] = scale * vkllm__chk_rand(k);
        vkllm__quantize_row(c->type, row, w + r * row_bytes, kk);
    }
    int grouped = (c->flags & VKLLM__CASE_GROUPED) != 0;
    for (uint32_t i = 0; i < ncols; i++) {
        uint32_t r = (uint32_t)((vkllm__chk_rand(k) + 1.0f) * 0.5f * ne) % ne;
        /* grouped: uneven experts (one pick for expert 0, none for expert 1, half of the picks
         * for the last, more than a tile of the GEMM's where there are enough) */
        if (grouped && ne > 2 && ncols > 3) r = i == 0 ? 0 : r % 2 ? ne - 1 : 2 + r % (ne - 2);
        ids[i] = r;
        if (i == ncols / 2 && ncols > 1) ids[i] = ne + 3; /* out of range: a zero column */
    }
    struct vkllm__dtensor t = {.type = c->type, .k = kk, .m = (uint64_t)m * ne, .row_bytes = row_bytes};
    if (c->flags & (VKLLM__CASE_SPLIT | VKLLM__CASE_RP)) { /* as models load them: split between experts past
                                                              max_alloc, repacked where the tuning says so */
        if (vkllm__chk_ok(k, vkllm__dtensor_upload_grouped(k->gpu, c->type, kk, (uint64_t)m * ne, m, w, &t)))
            for (uint32_t i = 0; i < VKLLM_MAX(t.n_parts, 1u); i++) vkllm__chk_own(k, i ? t.part[i] : t.buf);
        if (!k->st && (c->flags & VKLLM__CASE_SPLIT) && t.n_parts < 2)
            vkllm__chk_fail(k, "the experts were not split (max_alloc too large for them)");
        if (!k->st && (c->flags & VKLLM__CASE_RP) && !t.rp) vkllm__chk_not_rp(k);
    } else {
        t.buf = vkllm__chk_buf(k, (row_bytes * m * ne + 3) & ~(uint64_t)3, NULL);
        if (t.buf) vkllm__chk_ok(k, vkllm__buffer_upload(t.buf, 0, w, row_bytes * m * ne));
    }
    /* BOTH_PATHS: a repacked copy too, which the texel kernel takes where the path is on */
    int want_tb =
        (c->flags & VKLLM__CASE_BOTH_PATHS) && vkllm__matvec_tb_id_fits(k->gpu, c->type, kk, (uint64_t)m * ne, ne);
    if (want_tb && !k->st) {
        vkllm__chk_ok(k, vkllm__dtensor_add_tb(k->gpu, &t, w));
        vkllm__chk_own(k, t.tb); /* freed with the case */
    }
    /* GPUs' int8-x kernel (matvec_x8.comp): judged on x as it quantizes it */
    const int x8 = vkllm__matvec_id_x8_applies(k->gpu, &t, grouped);
    const float *xr = vkllm__chk_x_seen(k, x8, x, c->n, kk);
    for (uint32_t i = 0; i < ncols && !k->st; i++) {
        if (ids[i] < ne)
            vkllm__ref_matvec_q(want + (uint64_t)i * m, c->type, w + (uint64_t)ids[i] * m * row_bytes, row_bytes,
                                xr + (uint64_t)(i / picks) * kk, m, kk);
        else memset(want + (uint64_t)i * m, 0, 4ull * m);
    }
    for (uint64_t i = 0; i < (uint64_t)ncols * m + GUARD; i++) got[i] = POISON;
    struct vkllm__buffer *bx = vkllm__chk_buf(k, 4ull * c->n * kk, x), *bi = vkllm__chk_buf(k, 4ull * ncols, ids);
    struct vkllm__buffer *by = vkllm__chk_buf(k, 4ull * ((uint64_t)ncols * m + GUARD), got);
    float *one = grouped ? vkllm__chk_floats(k, (uint64_t)ncols * m, 0) : NULL; /* the one-column kernel's */
    struct vkllm__buffer *bg = grouped ? vkllm__chk_buf(k, vkllm__moe_group_bytes(ncols, ne), NULL) : NULL;
    struct vkllm__buffer *b1 = grouped ? vkllm__chk_buf(k, 4ull * ncols * m, NULL) : NULL;
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd))) return;
    if (grouped) { /* the grouped matvec (matmul=matvec: not the GEMM, which gemm_id_check runs) */
        struct vkllm__tuning saved = *vkllm__gpu_tuning(k->gpu), tu = saved;
        if (!vkllm__chk_ok(k, vkllm__tuning_parse(&tu, "matmul=matvec"))) return;
        vkllm__gpu_set_tuning(k->gpu, &tu);
        int ok = vkllm__chk_ok(k, vkllm__op_moe_group(cmd, vkllm__view_of(bg), vkllm__view_of(bi), ncols, ne)) &&
                 vkllm__chk_ok(k, vkllm__op_matvec_id_grouped(cmd, vkllm__view_of(by), &t, ne, vkllm__view_of(bx),
                                                              picks, kk, vkllm__view_of(bg), ncols)) &&
                 vkllm__chk_ok(k, vkllm__op_matvec_id(cmd, vkllm__view_of(b1), &t, ne, vkllm__view_of(bx), picks, kk,
                                                      vkllm__view_of(bi), ncols));
        vkllm__gpu_set_tuning(k->gpu, &saved);
        if (!ok) return;
    } else if (!vkllm__chk_ok(k, vkllm__op_matvec_id(cmd, vkllm__view_of(by), &t, ne, vkllm__view_of(bx), picks, kk,
                                                     vkllm__view_of(bi), ncols))) {
        return;
    }
    if (!vkllm__chk_ok(k, vkllm__cmd_end(cmd))) return;
    vkllm__chk_submit(k, cmd);
    float *gq = x8 ? vkllm__chk_floats(k, (uint64_t)ncols * m + GUARD, 0) : NULL;
    if (gq) xq_run(k, &t, bx, bi, bg, xr, gq, ncols, picks, m, kk, ne);
    vkllm__chk_download(k, by, got, 4ull * ((uint64_t)ncols * m + GUARD));
    if (grouped) vkllm__chk_download(k, b1, one, 4ull * ncols * m);
    if (k->st) return;
    if (grouped && memcmp(one, got, 4ull * ncols * m))
        vkllm__chk_fail(k, "grouped columns differ from the one-column kernel's");
    want_tb = want_tb || vkllm__matvec_tb_gg_applies(k->gpu, &t);
    if (want_tb && k->r->dispatches && strncmp(k->r->kernel, grouped ? "moe_group" : "matvec_tb_id", 9))
        vkllm__chk_fail(k, "ran %s, want the texel kernel", k->r->kernel);
    struct chk_stats s;
    vkllm__chk_compare(got, want, (uint64_t)ncols * m, &s);
    vkllm__chk_fold(k, &s);
    for (uint32_t i = 0; i < GUARD; i++)
        if (got[(uint64_t)ncols * m + i] != POISON) vkllm__chk_fail(k, "wrote past the end of y");
    if (gq && !k->st) {
        if (memcmp(gq, got, 4ull * ncols * m))
            vkllm__chk_fail(k, "x quantized once per step (quantize_x8): not the bits of x quantized per workgroup");
        for (uint32_t i = 0; i < GUARD; i++)
            if (gq[(uint64_t)ncols * m + i] != POISON) vkllm__chk_fail(k, "x quantized once per step: wrote past y");
    }
    if (grouped && !k->st) { /* the case's result stays the grouped matvec's (kernel, time, bytes) */
        struct vkllm__op_result keep = *k->r;
        gemm_id_check(k, &t, w, row_bytes, x, ids, bx, bg, ncols, picks, m, kk, ne);
        memcpy(k->r->kernel, keep.kernel, sizeof keep.kernel);
        k->r->dispatches = keep.dispatches, k->r->gpu_ns = keep.gpu_ns, k->r->bytes = keep.bytes;
        k->r->flops = keep.flops;
    }
}

void vkllm__chk_moe_route(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint32_t n = c->n, ne = c->cols, kk = c->nb;
    float *lg = vkllm__chk_floats(k, (uint64_t)n * ne, 4.0f), *want = vkllm__chk_floats(k, (uint64_t)n * kk, 0);
    float *got = vkllm__chk_floats(k, (uint64_t)n * kk, 0);
    uint32_t *wid = vkllm__chk_alloc(k, 4ull * n * kk), *gid = vkllm__chk_alloc(k, 4ull * n * kk);
    if (k->st) return;
    for (uint32_t t = 0; t < n; t++) { /* ties in every other token: equal logits pick the lower index */
        if (t % 2 && ne > 3) lg[(uint64_t)t * ne + ne - 1] = lg[(uint64_t)t * ne + 1] = 9.0f;
        vkllm__ref_moe_route(lg + (uint64_t)t * ne, ne, kk, wid + (uint64_t)t * kk, want + (uint64_t)t * kk);
    }
    struct vkllm__buffer *bl = vkllm__chk_buf(k, 4ull * n * ne, lg), *bi = vkllm__chk_buf(k, 4ull * n * kk, NULL);
    struct vkllm__buffer *bw = vkllm__chk_buf(k, 4ull * n * kk, NULL);
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) ||
        !vkllm__chk_ok(
            k, vkllm__op_moe_route(cmd, vkllm__view_of(bi), vkllm__view_of(bw), vkllm__view_of(bl), n, ne, kk)) ||
        !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))
        return;
    vkllm__chk_submit(k, cmd);
    vkllm__chk_download(k, bi, gid, 4ull * n * kk);
    vkllm__chk_download(k, bw, got, 4ull * n * kk);
    if (k->st) return;
    if (memcmp(gid, wid, 4ull * n * kk)) vkllm__chk_fail(k, "picked other experts than the reference");
    struct chk_stats s;
    vkllm__chk_compare(got, want, (uint64_t)n * kk, &s);
    vkllm__chk_fold(k, &s);
}

void vkllm__chk_moe_sum(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint32_t n = c->n, kk = c->nb, wd = c->cols;
    float *y = vkllm__chk_floats(k, (uint64_t)n * kk * wd, 3.0f), *w = vkllm__chk_floats(k, (uint64_t)n * kk, 1.0f);
    float *want = vkllm__chk_floats(k, (uint64_t)n * wd, 0), *got = vkllm__chk_floats(k, (uint64_t)n * wd, 0);
    if (k->st) return;
    for (uint64_t t = 0; t < n; t++)
        for (uint64_t e = 0; e < wd; e++) {
            double s = 0;
            for (uint64_t j = 0; j < kk; j++) s += (double)w[t * kk + j] * y[(t * kk + j) * wd + e];
            want[t * wd + e] = (float)s;
        }
    struct vkllm__buffer *by = vkllm__chk_buf(k, 4ull * n * kk * wd, y), *bw = vkllm__chk_buf(k, 4ull * n * kk, w);
    struct vkllm__buffer *bo = vkllm__chk_buf(k, 4ull * n * wd, NULL);
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) ||
        !vkllm__chk_ok(k,
                       vkllm__op_moe_sum(cmd, vkllm__view_of(bo), vkllm__view_of(by), vkllm__view_of(bw), n, kk, wd)) ||
        !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))
        return;
    vkllm__chk_submit(k, cmd);
    vkllm__chk_download(k, bo, got, 4ull * n * wd);
    if (k->st) return;
    struct chk_stats s;
    vkllm__chk_compare(got, want, (uint64_t)n * wd, &s);
    vkllm__chk_fold(k, &s);
}

void vkllm__chk_moe_add_id(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint32_t n = c->n, wd = c->cols, ne = c->heads;
    float *y = vkllm__chk_floats(k, (uint64_t)n * wd, 3.0f), *bias = vkllm__chk_floats(k, (uint64_t)ne * wd, 1.0f);
    float *got = vkllm__chk_floats(k, (uint64_t)n * wd, 0);
    uint32_t *ids = vkllm__chk_alloc(k, 4ull * n);
    if (k->st) return;
    struct vkllm__buffer *by = vkllm__chk_buf(k, 4ull * n * wd, y), *bb = vkllm__chk_buf(k, 4ull * ne * wd, bias);
    for (uint32_t r = 0; r < n; r++) {
        ids[r] = r == n / 2 && n > 1 ? ne + 1 : (uint32_t)((vkllm__chk_rand(k) + 1.0f) * 0.5f * ne) % ne;
        for (uint32_t e = 0; ids[r] < ne && e < wd; e++) y[(uint64_t)r * wd + e] += bias[(uint64_t)ids[r] * wd + e];
    }
    struct vkllm__buffer *bi = vkllm__chk_buf(k, 4ull * n, ids);
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);
    if (k->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) ||
        !vkllm__chk_ok(
            k, vkllm__op_moe_add_id(cmd, vkllm__view_of(by), vkllm__view_of(bb), vkllm__view_of(bi), n, wd, ne)) ||
        !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))
        return;
    vkllm__chk_submit(k, cmd);
    vkllm__chk_download(k, by, got, 4ull * n * wd);
    if (k->st) return;
    struct chk_stats s;
    vkllm__chk_compare(got, y, (uint64_t)n * wd, &s);
    vkllm__chk_fold(k, &s);
}
