/* check_attn.c - RoPE, the KV-cache store, attention and argmax against the reference. Each op
 * is recorded once and replayed at every position of the case with only the position buffer
 * (pos0) changed, which is how the decode step runs. The KV cache is f16; the reference reads
 * the same f16-rounded values.
 *   rope       max abs over positions up to 65000 (the shader reduces the angle exactly)
 *   kv_store   bit-exact f16 (round to nearest even); rows past n_ctx untouched
 *   rope_kv    q as rope; the k cache within one f16 ulp of the reference's rotated k (the
 *              rotation's last bit may cross a rounding boundary), the v cache bit-exact, rows
 *              past n_ctx untouched: entries outside that count as errors
 *   attention  max abs on outputs (weighted means of V in [-1, 1]); rows past the current length
 *              hold NaNs that a kernel reading them would carry into its result; the kernel that
 *              ran (attn.comp or attn_tb) must be the one the device and tuning call for
 *   argmax     the exact index, the first on ties, over six kinds of input */
#include "check_impl.h"

static void set_pos(struct chk *k, struct vkllm__buffer *b, uint32_t pos0) { vkllm__chk_upload(k, b, &pos0, 4); }

/* Record one op into a new command list (NULL on failure, kept in k). */
#define RECORD(k, cmd, call)                                                                            \
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);                                                         \
    if ((k)->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) || !vkllm__chk_ok(k, (call)) ||            \
        !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))                                                         \
        return

/* --- rope ---------------------------------------------------------------------------------- */

void vkllm__chk_rope(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint32_t n = c->n, nh = c->heads, hd = c->head_dim, nr = c->n_rot;
    int neox = (c->flags & VKLLM__CASE_NEOX) != 0;
    uint64_t len = (uint64_t)n * nh * hd;
    float *x = vkllm__chk_floats(k, len, 1.0f), *ref = vkllm__chk_floats(k, len, 0), *got = vkllm__chk_floats(k, len, 0);
    float *inv = vkllm__chk_floats(k, nr / 2 + 1, 0);
    if (k->st) return;
    float scale = c->scale ? c->scale : 1.0f;
    for (uint32_t i = 0; i < nr / 2; i++) inv[i] = scale * powf(10000.0f, -2.0f * i / (nr ? nr : 1));
    struct vkllm__buffer *bx = vkllm__chk_buf(k, len * 4, NULL), *bp = vkllm__chk_buf(k, 4, NULL);
    struct vkllm__buffer *bf = vkllm__chk_buf(k, (nr / 2 + 1) * 4ull, inv);
    float ms = c->flags & VKLLM__CASE_MAGNITUDE ? 1.25f : 1.0f;
    RECORD(k, cmd, vkllm__op_rope(cmd, vkllm__view_of(bx), vkllm__view_of(bp), vkllm__view_of(bf), n, nh, hd, nr, neox, ms));
    for (uint32_t s = 0; s < c->n_pos && !k->st; s++) { /* replay: only pos0 and x change */
        vkllm__chk_upload(k, bx, x, len * 4);
        set_pos(k, bp, c->pos[s]);
        vkllm__chk_submit(k, cmd);
        vkllm__chk_download(k, bx, got, len * 4);
        if (k->st) return;
        memcpy(ref, x, len * 4);
        for (uint32_t t = 0; t < n; t++)
            vkllm__ref_rope(ref + (uint64_t)t * nh * hd, nh, hd, nr, neox, ms, c->pos[s] + t, inv);
        struct chk_stats st;
        vkllm__chk_compare(got, ref, len, &st);
        vkllm__chk_fold(k, &st);
    }
}

/* --- kv_store ------------------------------------------------------------------------------ */

/* n rows at every pos0, some running past n_ctx; a guard of rows past the cache (in the same
 * buffer, outside the bound view) keeps its sentinel. */
void vkllm__chk_kv_store(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    const uint32_t guard = 4, width = c->heads_kv * c->head_dim, n = c->n;
    uint64_t halves = (uint64_t)(c->n_ctx + guard) * width;
    uint16_t *want = vkllm__chk_alloc(k, halves * 2), *got = vkllm__chk_alloc(k, halves * 2);
    float *src = vkllm__chk_floats(k, (uint64_t)n * width, 0);
    if (k->st) return;
    for (uint64_t i = 0; i < halves; i++) want[i] = 0x7bffu; /* sentinel: the largest finite half */
    struct vkllm__buffer *bc = vkllm__chk_buf(k, halves * 2, want), *bs = vkllm__chk_buf(k, 4ull * n * width, NULL);
    struct vkllm__buffer *bp = vkllm__chk_buf(k, 4, NULL);
    struct vkllm__view cache = {bc, 0, (uint64_t)c->n_ctx * width * 2};
    RECORD(k, cmd, vkllm__op_kv_store(cmd, cache, vkllm__view_of(bs), vkllm__view_of(bp), n, width, c->n_ctx, 0));
    for (uint32_t s = 0; s < c->n_pos && !k->st; s++) {
        uint32_t p0 = c->pos[s];
        for (uint64_t i = 0; i < (uint64_t)n * width; i++) src[i] = vkllm__chk_rand(k) * (i % 7 == 0 ? 3000.0f : 1.0f);
        src[0] = 1.0f + 1.0f / 2048; /* a tie: rounds to even (1.0) */
        vkllm__chk_upload(k, bs, src, 4ull * n * width);
        set_pos(k, bp, p0);
        vkllm__chk_submit(k, cmd);
        for (uint32_t r = 0; r < n; r++)
            if ((uint64_t)p0 + r < c->n_ctx)
                for (uint32_t j = 0; j < width; j++)
                    want[(uint64_t)(p0 + r) * width + j] = vkllm__f32_to_f16(src[(uint64_t)r * width + j]);
        vkllm__chk_download(k, bc, got, halves * 2);
        if (k->st) return;
        uint64_t bad = 0;
        for (uint64_t i = 0; i < halves; i++) bad += got[i] != want[i];
        if ((double)bad > k->r->err) k->r->err = (double)bad;
    }
}

/* --- rope + kv_store ------------------------------------------------------------------------ */

void vkllm__chk_rope_kv(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    const uint32_t n = c->n, nh = c->heads, nkv = c->heads_kv, hd = c->head_dim, nr = c->n_rot, guard = 4;
    const uint32_t width = nkv * hd;
    const int neox = (c->flags & VKLLM__CASE_NEOX) != 0;
    uint64_t qlen = (uint64_t)n * nh * hd, kvlen = (uint64_t)n * width, halves = (uint64_t)(c->n_ctx + guard) * width;
    float *q = vkllm__chk_floats(k, qlen, 1.0f), *kx = vkllm__chk_floats(k, kvlen, 1.0f);
    float *vx = vkllm__chk_floats(k, kvlen, 1.0f), *qref = vkllm__chk_floats(k, qlen, 0);
    float *kref = vkllm__chk_floats(k, kvlen, 0), *got = vkllm__chk_floats(k, qlen, 0);
    float *inv = vkllm__chk_floats(k, nr / 2 + 1, 0);
    uint16_t *kw = vkllm__chk_alloc(k, halves * 2), *vw = vkllm__chk_alloc(k, halves * 2);
    uint16_t *kg = vkllm__chk_alloc(k, halves * 2), *vg = vkllm__chk_alloc(k, halves * 2);
    if (k->st) return;
    for (uint32_t i = 0; i < nr / 2; i++) inv[i] = powf(10000.0f, -2.0f * i / (nr ? nr : 1));
    for (uint64_t i = 0; i < halves; i++) kw[i] = vw[i] = 0x7bffu; /* sentinel: the largest finite half */
    struct vkllm__buffer *bq = vkllm__chk_buf(k, qlen * 4, NULL), *bk = vkllm__chk_buf(k, kvlen * 4, kx);
    struct vkllm__buffer *bv = vkllm__chk_buf(k, kvlen * 4, vx), *bp = vkllm__chk_buf(k, 4, NULL);
    struct vkllm__buffer *bf = vkllm__chk_buf(k, (nr / 2 + 1) * 4ull, inv);
    struct vkllm__buffer *bkc = vkllm__chk_buf(k, halves * 2, kw), *bvc = vkllm__chk_buf(k, halves * 2, vw);
    struct vkllm__view kc = {bkc, 0, (uint64_t)c->n_ctx * width * 2}, vc = {bvc, 0, (uint64_t)c->n_ctx * width * 2};
    float ms = c->flags & VKLLM__CASE_MAGNITUDE ? 1.25f : 1.0f;
    struct vkllm__rope_kv_shape sh = {n, nh, nkv, hd, nr, neox, c->n_ctx, ms, 0};
    RECORD(k, cmd, vkllm__op_rope_kv(cmd, vkllm__view_of(bq), vkllm__view_of(bk), vkllm__view_of(bv), vkllm__view_of(bp),
                                     vkllm__view_of(bf), kc, vc, &sh));
    for (uint32_t s = 0; s < c->n_pos && !k->st; s++) { /* replay: only pos0 and q change */
        uint32_t p0 = c->pos[s];
        vkllm__chk_upload(k, bq, q, qlen * 4);
        set_pos(k, bp, p0);
        vkllm__chk_submit(k, cmd);
        vkllm__chk_download(k, bq, got, qlen * 4);
        vkllm__chk_download(k, bkc, kg, halves * 2);
        vkllm__chk_download(k, bvc, vg, halves * 2);
        if (k->st) return;
        memcpy(qref, q, qlen * 4);
        memcpy(kref, kx, kvlen * 4);
        for (uint32_t t = 0; t < n; t++) {
            vkllm__ref_rope(qref + (uint64_t)t * nh * hd, nh, hd, nr, neox, ms, p0 + t, inv);
            vkllm__ref_rope(kref + (uint64_t)t * width, nkv, hd, nr, neox, ms, p0 + t, inv);
            if ((uint64_t)p0 + t < c->n_ctx)
                for (uint32_t j = 0; j < width; j++) {
                    kw[(uint64_t)(p0 + t) * width + j] = vkllm__f32_to_f16(kref[(uint64_t)t * width + j]);
                    vw[(uint64_t)(p0 + t) * width + j] = vkllm__f32_to_f16(vx[(uint64_t)t * width + j]);
                }
        }
        struct chk_stats st;
        vkllm__chk_compare(got, qref, qlen, &st);
        vkllm__chk_fold(k, &st);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < halves; i++) {
            int d = (int)kg[i] - (int)kw[i]; /* adjacent halves of one sign differ by 1 in their bits */
            bad += vg[i] != vw[i] || (kg[i] != kw[i] && ((kg[i] ^ kw[i]) & 0x8000u || d > 1 || d < -1));
        }
        if (bad) vkllm__chk_fail(k, "%llu cache entries wrong at pos0 %u", (unsigned long long)bad, p0);
    }
}

/* --- attention ----------------------------------------------------------------------------- */

/* Whether attn_tb.comp should take the case: asked for (tuning, or a CPU device), texel formats,
 * head rows of whole 8-half texels, q and the cache within one texel binding. The plan may still
 * refuse shapes for grid or work-split reasons; such cases are not in the lists. */
static int expect_tb(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(k->gpu);
    long on = vkllm__gpu_tuning(k->gpu)->attn_texel;
    int want = on == 1 || (on != 0 && vkllm__gpu_info(k->gpu)->type == VKLLM_DEVICE_CPU);
    return want && bl->texel_formats && c->head_dim % 8 == 0 &&
           (uint64_t)c->n * c->heads * c->head_dim / 4 <= bl->max_texels &&
           (uint64_t)c->n_ctx * c->heads_kv * c->head_dim / 8 <= bl->max_texels;
}

/* The attention buffers of a case. */
struct attn_bufs {
    struct vkllm__buffer *q, *k, *v, *o, *pos, *scratch;
};

void vkllm__chk_attention(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint32_t qw = c->heads * c->head_dim, kvw = c->heads_kv * c->head_dim;
    uint64_t nq = (uint64_t)c->n * qw, nkv = (uint64_t)c->n_ctx * kvw;
    float *q = vkllm__chk_floats(k, nq, 2.5f), *got = vkllm__chk_floats(k, nq, 0), *ref = vkllm__chk_floats(k, qw, 0);
    float *att = vkllm__chk_floats(k, c->n_ctx, 0), *kf = vkllm__chk_floats(k, nkv, 0), *vf = vkllm__chk_floats(k, nkv, 0);
    uint16_t *kh = vkllm__chk_alloc(k, nkv * 2), *vh = vkllm__chk_alloc(k, nkv * 2);
    uint16_t *kp = vkllm__chk_alloc(k, nkv * 2), *vp = vkllm__chk_alloc(k, nkv * 2); /* poisoned copies */
    if (k->st) return;
    for (uint64_t i = 0; i < nkv; i++) {
        kh[i] = vkllm__f32_to_f16(vkllm__chk_rand(k)), kf[i] = vkllm__f16_to_f32(kh[i]);
        vh[i] = vkllm__f32_to_f16(vkllm__chk_rand(k)), vf[i] = vkllm__f16_to_f32(vh[i]);
    }
    float *sinks = c->flags & VKLLM__CASE_SINKS ? vkllm__chk_floats(k, c->heads, 6.0f) : NULL; /* scores are O(3) */
    if (k->st) return;
    struct vkllm__buffer *bs = sinks ? vkllm__chk_buf(k, 4ull * c->heads, sinks) : NULL;
    /* RING: a sliding-window layer's cache, position p in row p % rows, as few rows as allowed */
    uint32_t rows = c->flags & VKLLM__CASE_RING && c->window ? VKLLM_MIN(c->n_ctx, c->window + c->n - 1) : c->n_ctx;
    uint64_t nring = (uint64_t)rows * kvw;
    struct vkllm__attn_shape sh = {c->n,     c->heads,  c->heads_kv, c->head_dim, c->n_ctx, 1.0f / sqrtf((float)c->head_dim),
                                   c->window, c->softcap, bs ? vkllm__view_of(bs) : (struct vkllm__view){0}, rows};
    uint64_t scratch = vkllm__attention_scratch_bytes(k->gpu, &sh);
    struct attn_bufs b = {vkllm__chk_buf(k, nq * 4, q), vkllm__chk_buf(k, nring * 2, NULL), vkllm__chk_buf(k, nring * 2, NULL),
                          vkllm__chk_buf(k, nq * 4, NULL), vkllm__chk_buf(k, 4, NULL),
                          scratch ? vkllm__chk_buf(k, scratch, NULL) : NULL};
    struct vkllm__view sv = {b.scratch, 0, 0};
    RECORD(k, cmd, vkllm__op_attention(cmd, vkllm__view_of(b.o), vkllm__view_of(b.q), vkllm__view_of(b.k),
                                       vkllm__view_of(b.v), vkllm__view_of(b.pos), sv, &sh));
    int want_tb = expect_tb(k);
    for (uint32_t s = 0; s < c->n_pos && !k->st; s++) {
        uint32_t p0 = c->pos[s];
        if ((uint64_t)p0 + c->n > c->n_ctx) {
            vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check attention: pos0 %u + %u > n_ctx %u", p0,
                                        c->n, c->n_ctx));
            return;
        }
        set_pos(k, b.pos, p0);
        /* every 7th value of the rows past the current length NaN (half 0x7e00) */
        memcpy(kp, kh, nkv * 2), memcpy(vp, vh, nkv * 2);
        for (uint64_t i = (uint64_t)(p0 + c->n) * kvw; i < nkv; i += 7) kp[i] = vp[i] = 0x7e00u;
        if (rows < c->n_ctx) { /* the ring as writing positions 0 .. p0 + n - 1 in order leaves it */
            for (uint64_t p = 0; p < rows; p++) /* rows no position reached yet: NaN, never read */
                for (uint32_t j = 0; j < kvw; j++) kp[p * kvw + j] = vp[p * kvw + j] = 0x7e00u;
            for (uint64_t p = 0; p < (uint64_t)p0 + c->n; p++) {
                memcpy(kp + p % rows * kvw, kh + p * kvw, kvw * 2ull);
                memcpy(vp + p % rows * kvw, vh + p * kvw, kvw * 2ull);
            }
        }
        vkllm__chk_upload(k, b.k, kp, nring * 2);
        vkllm__chk_upload(k, b.v, vp, nring * 2);
        vkllm__chk_submit(k, cmd);
        vkllm__chk_download(k, b.o, got, nq * 4);
        if (k->st) return;
        if (s == 0 && k->r->dispatches) {
            int got_tb = !strncmp(k->r->kernel, "attn_tb", 7);
            if (got_tb != want_tb) vkllm__chk_fail(k, "ran %s, want %s", k->r->kernel, want_tb ? "attn_tb" : "attn");
        }
        for (uint32_t i = 0; i < c->n; i++) {
            vkllm__ref_attention(ref, q + (uint64_t)i * qw, kf, vf, att, c->heads, c->heads_kv, c->head_dim, p0 + i + 1,
                                 sh.scale, c->window, c->softcap, sinks);
            struct chk_stats st;
            vkllm__chk_compare(got + (uint64_t)i * qw, ref, qw, &st);
            vkllm__chk_fold(k, &st);
        }
    }
}

/* --- argmax -------------------------------------------------------------------------------- */

/* Input kind i of n values: random, ties (the first wins), all -inf, -inf but the last, all
 * equal, +inf at the start and the end. */
static void argmax_input(struct chk *k, int kind, float *x, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) x[i] = vkllm__chk_rand(k) * 10.0f;
    if (kind == 1) x[n / 2] = 20.0f, x[n - 1] = 20.0f, x[n / 3 + (n > 1)] = 20.0f;
    if (kind == 2 || kind == 3)
        for (uint32_t i = 0; i < n; i++) x[i] = -INFINITY;
    if (kind == 3) x[n - 1] = -1e30f;
    if (kind == 4)
        for (uint32_t i = 0; i < n; i++) x[i] = 0.5f;
    if (kind == 5) x[0] = INFINITY, x[n - 1] = INFINITY;
}

void vkllm__chk_argmax(struct chk *k) {
    uint32_t n = k->c->cols;
    float *x = vkllm__chk_floats(k, n, 0);
    struct vkllm__buffer *bx = vkllm__chk_buf(k, 4ull * n, NULL), *bo = vkllm__chk_buf(k, 4, NULL);
    RECORD(k, cmd, vkllm__op_argmax(cmd, vkllm__view_of(bo), vkllm__view_of(bx), n));
    for (int kind = 0; kind < 6 && !k->st; kind++) { /* replayed with new data each time */
        argmax_input(k, kind, x, n);
        vkllm__chk_upload(k, bx, x, 4ull * n);
        vkllm__chk_submit(k, cmd);
        uint32_t got = 0;
        vkllm__chk_download(k, bo, &got, 4);
        if (k->st) return;
        uint32_t want = vkllm__ref_argmax(x, n);
        if (got != want) {
            k->r->err += 1;
            vkllm__chk_fail(k, "input kind %d: index %u, want %u", kind, got, want);
        }
    }
}
