/* check_attn.c - RoPE, the KV-cache store, attention and argmax against the reference. Each op
 * is recorded once and replayed at every position of the case with only the position buffer
 * (pos0) changed, which is how the decode step runs. The KV cache is f16; the reference reads
 * the same f16-rounded values.
 *   rope       max abs at positions up to 4e9 (the shaders' angles are exact integer turns, their
 *              sin and cos polynomials; the reference is exact to double rounding)
 *   kv_store   bit-exact f16 (round to nearest even); rows past n_ctx untouched
 *   rope_kv    q as rope; the k cache within one f16 ulp of the reference's rotated k (the
 *              rotation's last bit may cross a rounding boundary), the v cache bit-exact, rows
 *              past n_ctx untouched: entries outside that count as errors
 *   attention  max abs on outputs (weighted means of V in [-1, 1]); rows past the current length
 *              hold NaNs that a kernel reading them would carry into its result; the kernel that
 *              ran (attn.comp or attn_tb) must be the one the device and tuning call for
 *   argmax     the exact index, the first on ties, over six kinds of input
 * q8_0 caches (KQ8 / VQ8 cases; shaders/include/kv_q8.glsl): kv_store and rope_kv write blocks
 * whose scale is max |x| / 127 (within 1e-6 relative) and whose values dequantize to within half a
 * step of the input (k: of the reference's rotated k); attention reads caches quantized here,
 * against the reference on the dequantized values.
 * PAGED cases: the cache is a pool of blocks of VKLLM__KV_BLOCK positions, a few more than the
 * context needs, handed out by a block table backwards from the pool's end (no position in its
 * own row); the expectations are the same, at each position's row in the pool. */
#include "check_impl.h"

static void set_pos(struct chk *k, struct vkllm__buffer *b, uint32_t pos0) { vkllm__chk_upload(k, b, &pos0, 4); }

/* Record one op into a new command list (NULL on failure, kept in k). */
#define RECORD(k, cmd, call)                                                                \
    struct vkllm__cmd *cmd = vkllm__chk_cmd(k);                                             \
    if ((k)->st || !vkllm__chk_ok(k, vkllm__cmd_begin(cmd)) || !vkllm__chk_ok(k, (call)) || \
        !vkllm__chk_ok(k, vkllm__cmd_end(cmd)))                                             \
    return

/* --- rope ---------------------------------------------------------------------------------- */

/* Frequencies inv (n_rot/2) on the device as the shaders take them (vkllm__rope_turns). The
 * reference computes each rotation directly from inv (vkllm__ref_rope), so the conversion is
 * checked too. */
static struct vkllm__buffer *rope_turns_buf(struct chk *k, const float *inv, uint32_t n_rot) {
    uint32_t *turns = vkllm__chk_alloc(k, (n_rot / 2 + 1) * 8ull);
    if (k->st) return NULL;
    vkllm__rope_turns(inv, n_rot, turns);
    return vkllm__chk_buf(k, (n_rot / 2 + 1) * 8ull, turns);
}

void vkllm__chk_rope(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    uint32_t n = c->n, nh = c->heads, hd = c->head_dim, nr = c->n_rot;
    int neox = (c->flags & VKLLM__CASE_NEOX) != 0;
    uint64_t len = (uint64_t)n * nh * hd;
    float *x = vkllm__chk_floats(k, len, 1.0f), *ref = vkllm__chk_floats(k, len, 0),
          *got = vkllm__chk_floats(k, len, 0);
    float *inv = vkllm__chk_floats(k, nr / 2 + 1, 0);
    if (k->st) return;
    float scale = c->scale ? c->scale : 1.0f;
    for (uint32_t i = 0; i < nr / 2; i++) inv[i] = scale * powf(10000.0f, -2.0f * i / (nr ? nr : 1));
    struct vkllm__buffer *bx = vkllm__chk_buf(k, len * 4, NULL), *bp = vkllm__chk_buf(k, 4, NULL);
    struct vkllm__buffer *bf = rope_turns_buf(k, inv, nr);
    float ms = c->flags & VKLLM__CASE_MAGNITUDE ? 1.25f : 1.0f;
    RECORD(k, cmd,
           vkllm__op_rope(cmd, vkllm__view_of(bx), vkllm__view_of(bp), vkllm__view_of(bf), n, nh, hd, nr, neox, ms));
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

/* --- paged caches -------------------------------------------------------------------------- */

struct pages {
    uint32_t shift, rows; /* shift 0: not paged, rows = n_ctx */
    uint32_t *table;
    struct vkllm__buffer *buf; /* the table on the device */
};

static void pages_init(struct chk *k, struct pages *pg, uint32_t n_ctx) {
    memset(pg, 0, sizeof *pg);
    pg->rows = n_ctx;
    if (!(k->c->flags & VKLLM__CASE_PAGED)) return;
    uint32_t nb = (n_ctx + VKLLM__KV_BLOCK - 1) / VKLLM__KV_BLOCK, pool = nb + 3;
    pg->shift = VKLLM__KV_SHIFT;
    pg->rows = pool * VKLLM__KV_BLOCK;
    pg->table = vkllm__chk_alloc(k, (uint64_t)nb * 4);
    if (k->st) return;
    for (uint32_t i = 0; i < nb; i++) pg->table[i] = pool - 1 - i;
    pg->buf = vkllm__chk_buf(k, (uint64_t)nb * 4, pg->table);
}

/* The row of position p. */
static uint64_t prow(const struct pages *pg, uint64_t p) {
    return pg->shift ? (uint64_t)pg->table[p >> pg->shift] * VKLLM__KV_BLOCK + (p & (VKLLM__KV_BLOCK - 1)) : p;
}

static struct vkllm__kv_pages pages_of(const struct pages *pg) {
    struct vkllm__kv_pages p = {pg->buf ? vkllm__view_of(pg->buf) : (struct vkllm__view){0}, pg->shift};
    return p;
}

/* --- q8_0 caches --------------------------------------------------------------------------- */

/* Quantize one row of w values (w % 32 == 0) into quants q (w int8) and scales d (w / 32). */
static void q8_row(const float *x, uint32_t w, int8_t *q, float *d) {
    for (uint32_t b = 0; b < w / 32; b++) {
        float amax = 0;
        for (uint32_t i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[32 * b + i]));
        d[b] = amax / 127.0f;
        float id = d[b] > 0 ? 1.0f / d[b] : 0.0f;
        for (uint32_t i = 0; i < 32; i++) q[32 * b + i] = (int8_t)lroundf(x[32 * b + i] * id);
    }
}

/* How far the q8_0 rows [r0, r0 + n) of a cache image (rows x w: quants, then scales) are from the
 * values want (n x w): the count of values further than half a step (plus rounding slack) and of
 * scales that are not max |x| / 127. */
static uint64_t q8_bad_rows(const uint8_t *img, const struct pages *pg, uint32_t w, uint32_t r0, const float *want,
                            uint32_t n) {
    uint64_t bad = 0;
    const float *sc = (const float *)(img + (uint64_t)pg->rows * w);
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t b = 0; b < w / 32; b++) {
            const float *x = want + (uint64_t)r * w + 32 * b;
            uint64_t row = prow(pg, r0 + r);
            float amax = 0, d = sc[row * (w / 32) + b];
            for (uint32_t i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
            if (!(fabsf(d - amax / 127.0f) <= 1e-6f * amax)) bad++;
            for (uint32_t i = 0; i < 32; i++) {
                float got = (float)(int8_t)img[row * w + 32 * b + i] * d;
                if (!(fabsf(got - x[i]) <= 0.5f * d * 1.0001f + 1e-6f * fabsf(x[i]))) bad++;
            }
        }
    return bad;
}

/* kv_store into a q8_0 cache: every written row within half a step; the bytes past the cache's
 * view (a guard) keep their sentinel. */
static void chk_kv_store_q8(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    const uint32_t width = c->heads_kv * c->head_dim, n = c->n, guard = 256;
    struct pages pg;
    pages_init(k, &pg, c->n_ctx);
    const uint64_t bytes = (uint64_t)pg.rows * (width + width / 8);
    uint8_t *got = vkllm__chk_alloc(k, bytes + guard), *init = vkllm__chk_alloc(k, bytes + guard);
    float *src = vkllm__chk_floats(k, (uint64_t)n * width, 0);
    if (k->st) return;
    memset(init, 0xa5, bytes + guard);
    struct vkllm__buffer *bc = vkllm__chk_buf(k, bytes + guard, init), *bs = vkllm__chk_buf(k, 4ull * n * width, NULL);
    struct vkllm__buffer *bp = vkllm__chk_buf(k, 4, NULL);
    struct vkllm__view cache = {bc, 0, bytes};
    struct vkllm__kv_pages kp = pages_of(&pg);
    RECORD(
        k, cmd,
        vkllm__op_kv_store_q(cmd, cache, vkllm__view_of(bs), vkllm__view_of(bp), n, width, c->n_ctx, pg.rows, 1, &kp));
    for (uint32_t s = 0; s < c->n_pos && !k->st; s++) {
        uint32_t p0 = c->pos[s];
        for (uint64_t i = 0; i < (uint64_t)n * width; i++) src[i] = vkllm__chk_rand(k) * (i % 7 == 0 ? 3000.0f : 1.0f);
        for (uint32_t i = 0; i < 32 && i < width; i++) src[i] = 0.0f; /* a block of zeros: scale 0 */
        vkllm__chk_upload(k, bs, src, 4ull * n * width);
        set_pos(k, bp, p0);
        vkllm__chk_submit(k, cmd);
        vkllm__chk_download(k, bc, got, bytes + guard);
        if (k->st) return;
        uint32_t m = p0 >= c->n_ctx ? 0 : VKLLM_MIN(n, c->n_ctx - p0);
        uint64_t bad = q8_bad_rows(got, &pg, width, p0, src, m);
        for (uint64_t i = bytes; i < bytes + guard; i++) bad += got[i] != 0xa5;
        if ((double)bad > k->r->err) k->r->err = (double)bad;
    }
}

/* --- kv_store ------------------------------------------------------------------------------ */

/* n rows at every pos0, some running past n_ctx; a guard of rows past the cache (in the same
 * buffer, outside the bound view) keeps its sentinel. */
void vkllm__chk_kv_store(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    if (c->flags & VKLLM__CASE_KQ8) {
        chk_kv_store_q8(k);
        return;
    }
    const uint32_t guard = 4, width = c->heads_kv * c->head_dim, n = c->n;
    struct pages pg;
    pages_init(k, &pg, c->n_ctx);
    uint64_t halves = (uint64_t)(pg.rows + guard) * width;
    uint16_t *want = vkllm__chk_alloc(k, halves * 2), *got = vkllm__chk_alloc(k, halves * 2);
    float *src = vkllm__chk_floats(k, (uint64_t)n * width, 0);
    if (k->st) return;
    for (uint64_t i = 0; i < halves; i++) want[i] = 0x7bffu; /* sentinel: the largest finite half */
    struct vkllm__buffer *bc = vkllm__chk_buf(k, halves * 2, want), *bs = vkllm__chk_buf(k, 4ull * n * width, NULL);
    struct vkllm__buffer *bp = vkllm__chk_buf(k, 4, NULL);
    struct vkllm__view cache = {bc, 0, (uint64_t)pg.rows * width * 2};
    struct vkllm__kv_pages kp = pages_of(&pg);
    RECORD(k, cmd,
           pg.shift ? vkllm__op_kv_store_q(cmd, cache, vkllm__view_of(bs), vkllm__view_of(bp), n, width, c->n_ctx,
                                           pg.rows, 0, &kp)
                    : vkllm__op_kv_store(cmd, cache, vkllm__view_of(bs), vkllm__view_of(bp), n, width, c->n_ctx, 0));
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
                    want[prow(&pg, p0 + r) * width + j] = vkllm__f32_to_f16(src[(uint64_t)r * width + j]);
        vkllm__chk_download(k, bc, got, halves * 2);
        if (k->st) return;
        uint64_t bad = 0;
        for (uint64_t i = 0; i < halves; i++) bad += got[i] != want[i];
        if ((double)bad > k->r->err) k->r->err = (double)bad;
    }
}

/* --- rope + kv_store ------------------------------------------------------------------------ */

/* rope_kv: q as rope. An f16 cache (sentinels in every row, a guard of rows past n_ctx): k within
 * one f16 ulp of the reference's rotated k (the rotation's last bit may cross a rounding
 * boundary), v bit-exact, every other half untouched. A q8_0 cache (KQ8, VQ8): each written row
 * within half a step of the rotated k (of v), the bytes past the cache's view untouched. */
struct rkv_cache {
    int q8;
    uint64_t bytes, alloc; /* the view, and the buffer (with its guard) */
    uint8_t *want, *got;   /* want: the f16 image expected (sentinels, then what was written) */
    struct vkllm__buffer *buf;
};

static void rkv_cache_init(struct chk *k, struct rkv_cache *kc, int q8, uint32_t n_ctx, uint32_t width,
                           uint32_t guard) {
    /* n_ctx: the rows (a paged case's pool) */
    kc->q8 = q8;
    kc->bytes = n_ctx * vkllm__kv_row_bytes(width, q8);
    kc->alloc = q8 ? kc->bytes + 256 : (uint64_t)(n_ctx + guard) * width * 2;
    kc->want = vkllm__chk_alloc(k, kc->alloc), kc->got = vkllm__chk_alloc(k, kc->alloc);
    if (k->st) return;
    if (q8) memset(kc->want, 0xa5, kc->alloc);
    else
        for (uint64_t i = 0; i < kc->alloc / 2; i++) ((uint16_t *)kc->want)[i] = 0x7bffu; /* the largest finite half */
    kc->buf = vkllm__chk_buf(k, kc->alloc, kc->want);
}

/* Wrong entries of cache kc after rows p0 .. p0+m-1 took vals (m x width; the rotated k when
 * exact is 0, v when 1). */
static uint64_t rkv_cache_bad(struct rkv_cache *kc, const struct pages *pg, uint32_t width, uint32_t p0, uint32_t m,
                              const float *vals, int exact) {
    uint64_t bad = 0;
    if (kc->q8) {
        bad = q8_bad_rows(kc->got, pg, width, p0, vals, m);
        for (uint64_t i = kc->bytes; i < kc->alloc; i++) bad += kc->got[i] != 0xa5;
        return bad;
    }
    uint16_t *w = (uint16_t *)kc->want, *g = (uint16_t *)kc->got;
    for (uint64_t i = 0; i < (uint64_t)m * width; i++)
        w[prow(pg, p0 + i / width) * width + i % width] = vkllm__f32_to_f16(vals[i]);
    for (uint64_t i = 0; i < kc->alloc / 2; i++) {
        int d = (int)g[i] - (int)w[i]; /* adjacent halves of one sign differ by 1 in their bits */
        bad += exact ? g[i] != w[i] : g[i] != w[i] && ((g[i] ^ w[i]) & 0x8000u || d > 1 || d < -1);
    }
    return bad;
}

void vkllm__chk_rope_kv(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    const uint32_t n = c->n, nh = c->heads, nkv = c->heads_kv, hd = c->head_dim, nr = c->n_rot, guard = 4;
    const uint32_t width = nkv * hd;
    const int neox = (c->flags & VKLLM__CASE_NEOX) != 0, kq = (c->flags & VKLLM__CASE_KQ8) != 0,
              vq = (c->flags & VKLLM__CASE_VQ8) != 0;
    uint64_t qlen = (uint64_t)n * nh * hd, kvlen = (uint64_t)n * width;
    float *q = vkllm__chk_floats(k, qlen, 1.0f), *kx = vkllm__chk_floats(k, kvlen, 1.0f);
    float *vx = vkllm__chk_floats(k, kvlen, 1.0f), *qref = vkllm__chk_floats(k, qlen, 0);
    float *kref = vkllm__chk_floats(k, kvlen, 0), *got = vkllm__chk_floats(k, qlen, 0);
    float *inv = vkllm__chk_floats(k, nr / 2 + 1, 0);
    struct rkv_cache kc, vc;
    struct pages pg;
    pages_init(k, &pg, c->n_ctx);
    rkv_cache_init(k, &kc, kq, pg.rows, width, guard);
    rkv_cache_init(k, &vc, vq, pg.rows, width, guard);
    if (k->st) return;
    for (uint32_t i = 0; i < nr / 2; i++) inv[i] = powf(10000.0f, -2.0f * i / (nr ? nr : 1));
    struct vkllm__buffer *bq = vkllm__chk_buf(k, qlen * 4, NULL), *bk = vkllm__chk_buf(k, kvlen * 4, kx);
    struct vkllm__buffer *bv = vkllm__chk_buf(k, kvlen * 4, vx), *bp = vkllm__chk_buf(k, 4, NULL);
    struct vkllm__buffer *bf = rope_turns_buf(k, inv, nr);
    struct vkllm__view kv = {kc.buf, 0, kc.bytes}, vv = {vc.buf, 0, vc.bytes};
    float ms = c->flags & VKLLM__CASE_MAGNITUDE ? 1.25f : 1.0f;
    struct vkllm__rope_kv_shape sh = {n,        nh, nkv,     hd,          nr,          neox,
                                      c->n_ctx, ms, pg.rows, (uint8_t)kq, (uint8_t)vq, pages_of(&pg)};
    RECORD(k, cmd,
           vkllm__op_rope_kv(cmd, vkllm__view_of(bq), vkllm__view_of(bk), vkllm__view_of(bv), vkllm__view_of(bp),
                             vkllm__view_of(bf), kv, vv, &sh));
    for (uint32_t s = 0; s < c->n_pos && !k->st; s++) { /* replay: only pos0 and q change */
        uint32_t p0 = c->pos[s];
        vkllm__chk_upload(k, bq, q, qlen * 4);
        set_pos(k, bp, p0);
        vkllm__chk_submit(k, cmd);
        vkllm__chk_download(k, bq, got, qlen * 4);
        vkllm__chk_download(k, kc.buf, kc.got, kc.alloc);
        vkllm__chk_download(k, vc.buf, vc.got, vc.alloc);
        if (k->st) return;
        memcpy(qref, q, qlen * 4);
        memcpy(kref, kx, kvlen * 4);
        for (uint32_t t = 0; t < n; t++) {
            vkllm__ref_rope(qref + (uint64_t)t * nh * hd, nh, hd, nr, neox, ms, p0 + t, inv);
            vkllm__ref_rope(kref + (uint64_t)t * width, nkv, hd, nr, neox, ms, p0 + t, inv);
        }
        struct chk_stats st;
        vkllm__chk_compare(got, qref, qlen, &st);
        vkllm__chk_fold(k, &st);
        uint32_t m = p0 >= c->n_ctx ? 0 : VKLLM_MIN(n, c->n_ctx - p0); /* rows written */
        uint64_t bad = rkv_cache_bad(&kc, &pg, width, p0, m, kref, 0) + rkv_cache_bad(&vc, &pg, width, p0, m, vx, 1);
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

/* Whether attn.comp's walk should run in f16 arithmetic (attn_split_h16_*, attn_split_sg_h16_*):
 * as ops_attn.c's walk_f16, shaderFloat16 offered and the tuning's attn_f16 = 1. */
static int expect_h16(struct chk *k) {
    return vkllm__gpu_info(k->gpu)->fp16_arith && vkllm__gpu_tuning(k->gpu)->attn_f16 == 1;
}

/* The attention buffers of a case. */
struct attn_bufs {
    struct vkllm__buffer *q, *k, *v, *o, *pos, *scratch;
};

/* One cache as the kernel sees it after positions 0 .. len-1 were written in order: f16 halves
 * (h) or q8_0 quants and scales (q, d); rows * w values, position p in row p % rows; rows no
 * position reached yet, and (every 7th value, q8_0: every scale of) positions past len, NaN. */
static void cache_image(uint8_t *img, uint32_t rows, uint32_t n_ctx, uint32_t w, uint32_t len, const uint16_t *h,
                        const int8_t *q, const float *d) {
    const float nan = NAN;
    if (rows == n_ctx) { /* all positions, the ones past len poisoned */
        if (h) {
            uint16_t *o = (uint16_t *)img;
            memcpy(o, h, (uint64_t)n_ctx * w * 2);
            for (uint64_t i = (uint64_t)len * w; i < (uint64_t)n_ctx * w; i += 7) o[i] = 0x7e00u;
        } else {
            float *sc = (float *)(img + (uint64_t)rows * w);
            memcpy(img, q, (uint64_t)n_ctx * w);
            memcpy(sc, d, (uint64_t)n_ctx * (w / 32) * 4);
            for (uint64_t i = (uint64_t)len * (w / 32); i < (uint64_t)n_ctx * (w / 32); i++) sc[i] = nan;
        }
        return;
    }
    for (uint64_t p = 0; p < rows; p++) { /* a ring: rows no position reached yet are NaN */
        if (h)
            for (uint32_t j = 0; j < w; j++) ((uint16_t *)img)[p * w + j] = 0x7e00u;
        else
            for (uint32_t b = 0; b < w / 32; b++) ((float *)(img + (uint64_t)rows * w))[p * (w / 32) + b] = nan;
    }
    for (uint64_t p = 0; p < len; p++) {
        uint64_t r = p % rows;
        if (h) {
            memcpy(img + r * w * 2, h + p * w, w * 2ull);
        } else {
            memcpy(img + r * w, q + p * w, w);
            memcpy(img + (uint64_t)rows * w + r * (w / 32) * 4, d + p * (w / 32), (w / 32) * 4ull);
        }
    }
}

/* A pool image from a context's image (n_ctx rows of w values, f16 or q8_0): each position's row
 * (and q8_0 scales) at its row in the pool; rows no position has, NaN. */
static void page_image(uint8_t *img, const uint8_t *ctx, const struct pages *pg, uint32_t n_ctx, uint32_t w, int q8) {
    const uint64_t rb = q8 ? w : (uint64_t)w * 2, sb = q8 ? (w / 32) * 4ull : 0;
    memset(img, 0xff, (uint64_t)pg->rows * (rb + sb)); /* all-ones halves and floats: NaN */
    for (uint64_t p = 0; p < n_ctx; p++) {
        uint64_t r = prow(pg, p);
        memcpy(img + r * rb, ctx + p * rb, rb);
        if (q8) memcpy(img + (uint64_t)pg->rows * rb + r * sb, ctx + (uint64_t)n_ctx * rb + p * sb, sb);
    }
}

/* Part i of a cache image (rows of w values, f16 or q8_0) split by kv heads into parts of pw
 * values a row: its columns of every row, then (q8_0) their scales, as a cache of width pw. */
static void part_image(uint8_t *dst, const uint8_t *img, uint64_t rows, uint32_t w, uint32_t pw, uint32_t i, int q8) {
    const uint64_t vb = q8 ? 1 : 2;
    for (uint64_t r = 0; r < rows; r++) {
        memcpy(dst + r * pw * vb, img + (r * w + (uint64_t)i * pw) * vb, pw * vb);
        if (q8)
            memcpy(dst + rows * pw + r * (pw / 32) * 4, img + rows * w + (r * (w / 32) + i * (pw / 32)) * 4,
                   (pw / 32) * 4);
    }
}

void vkllm__chk_attention(struct chk *k) {
    const struct vkllm__op_case *c = k->c;
    const int kq = (c->flags & VKLLM__CASE_KQ8) != 0, vq = (c->flags & VKLLM__CASE_VQ8) != 0;
    uint32_t qw = c->heads * c->head_dim, kvw = c->heads_kv * c->head_dim;
    uint64_t nq = (uint64_t)c->n * qw, nkv = (uint64_t)c->n_ctx * kvw;
    float *q = vkllm__chk_floats(k, nq, 2.5f), *got = vkllm__chk_floats(k, nq, 0), *ref = vkllm__chk_floats(k, qw, 0);
    float *att = vkllm__chk_floats(k, c->n_ctx, 0), *kf = vkllm__chk_floats(k, nkv, 0),
          *vf = vkllm__chk_floats(k, nkv, 0);
    uint16_t *kh = vkllm__chk_alloc(k, nkv * 2), *vh = vkllm__chk_alloc(k, nkv * 2);
    int8_t *kq8 = vkllm__chk_alloc(k, nkv), *vq8 = vkllm__chk_alloc(k, nkv);
    float *ks = vkllm__chk_floats(k, nkv / 32 + 1, 0), *vs = vkllm__chk_floats(k, nkv / 32 + 1, 0);
    if (k->st) return;
    for (uint64_t i = 0; i < nkv; i++) {
        kh[i] = vkllm__f32_to_f16(vkllm__chk_rand(k)), kf[i] = vkllm__f16_to_f32(kh[i]);
        vh[i] = vkllm__f32_to_f16(vkllm__chk_rand(k)), vf[i] = vkllm__f16_to_f32(vh[i]);
    }
    for (uint32_t p = 0; p < c->n_ctx && (kq || vq); p++) /* q8_0: the reference reads the dequantized values */
        for (int which = 0; which < 2; which++) {
            if (!(which ? vq : kq)) continue;
            float *x = (which ? vf : kf) + (uint64_t)p * kvw, *d = (which ? vs : ks) + (uint64_t)p * (kvw / 32);
            int8_t *qq = (which ? vq8 : kq8) + (uint64_t)p * kvw;
            q8_row(x, kvw, qq, d);
            for (uint32_t j = 0; j < kvw; j++) x[j] = (float)qq[j] * d[j / 32];
        }
    float *sinks = c->flags & VKLLM__CASE_SINKS ? vkllm__chk_floats(k, c->heads, 6.0f) : NULL; /* scores are O(3) */
    if (k->st) return;
    struct vkllm__buffer *bs = sinks ? vkllm__chk_buf(k, 4ull * c->heads, sinks) : NULL;
    /* RING: a sliding-window layer's cache, position p in row p % rows, as few rows as allowed */
    uint32_t rows = c->flags & VKLLM__CASE_RING && c->window ? VKLLM_MIN(c->n_ctx, c->window + c->n - 1) : c->n_ctx;
    struct pages pg;
    pages_init(k, &pg, c->n_ctx);
    if (pg.shift) rows = pg.rows;
    uint64_t kbytes = rows * vkllm__kv_row_bytes(kvw, kq), vbytes = rows * vkllm__kv_row_bytes(kvw, vq);
    uint64_t lk = (uint64_t)c->n_ctx * vkllm__kv_row_bytes(kvw, kq),
             lv = (uint64_t)c->n_ctx * vkllm__kv_row_bytes(kvw, vq);
    uint8_t *kimg = vkllm__chk_alloc(k, kbytes), *vimg = vkllm__chk_alloc(k, vbytes);
    uint8_t *klog = pg.shift ? vkllm__chk_alloc(k, lk) : NULL, *vlog = pg.shift ? vkllm__chk_alloc(k, lv) : NULL;
    if (k->st) return;
    struct vkllm__attn_shape sh = {c->n,          c->heads,    c->heads_kv,
                                   c->head_dim,   c->n_ctx,    1.0f / sqrtf((float)c->head_dim),
                                   c->window,     c->softcap,  bs ? vkllm__view_of(bs) : (struct vkllm__view){0},
                                   rows,          (uint8_t)kq, (uint8_t)vq,
                                   pages_of(&pg), 0,           NULL,
                                   NULL};
    /* by cooperative matrices (or their emulation): q (scaled) and each tile's probabilities in
     * f16. The reference takes q rounded as the kernel stages it; the probabilities' rounding
     * moves an output by up to 2^-11 of the largest |v| it weighs (here |v| <= 1): bound 1e-3 */
    int cm = vkllm__attention_uses_coopmat(k->gpu, &sh);
    /* the texel kernel: f16, or q8_0 K and V with whole blocks per head and the scales' end a
     * whole texel */
    int want_tb = expect_tb(k) && kq == vq &&
                  (!kq || (c->head_dim % 32 == 0 &&
                           (uint64_t)rows * ((c->flags & VKLLM__CASE_PARTS) ? kvw / 2 : kvw) / 32 % 4 == 0));
    /* the walk in f16 arithmetic: q (scaled) in f16 as the kernel rounds it, which the reference
     * takes; each quad of q.k summed in f16, the step's B = 4 products p v per output value in f16
     * (then added in f32), the softmax in f32. P V: the probabilities (<= 1) rounded and the 4
     * products summed in f16 err by at most ~5 ulp of f16 (5 * 2^-11) of sum p |v| a step, so an
     * output by at most 5 * 2^-11 * max |v| = 2.4e-3 here (|v| <= 1), at any depth (the sums are
     * f32 across steps); typically far less, the errors being of both signs. q.k: a quad's 4 products
     * and 3 sums rounded, each within 2^-12 relative, as independent errors: a score's error has
     * a standard deviation of about 2^-12 / sqrt(3) * sqrt(7 d / 4) * rms(q k) = 2.4e-4 here (q
     * scaled by 1 / sqrt(d): independent of the head size), which moves an output by at most
     * about twice that times max |v - o|. Bound: 3e-3 (the largest seen: see the commit). */
    int h16 = !cm && !want_tb && expect_h16(k);
    if ((c->flags & VKLLM__CASE_COOPMAT) && !cm) {
        k->r->skipped = 1;
        vkllm__chk_fail(k, "no cooperative matrices here (VK_KHR_cooperative_matrix with a 16x16x16 f16 x f16 -> f32 "
                           "subgroup shape, a required subgroup size) or not this shape");
        return;
    }
    float *qr = q;
    if (cm || h16) {
        qr = vkllm__chk_floats(k, nq, 0);
        if (k->st) return;
        for (uint64_t i = 0; i < nq; i++) qr[i] = vkllm__f16_to_f32(vkllm__f32_to_f16(q[i] * sh.scale));
        k->r->bound = cm ? 1e-3 : 3e-3;
    }
    uint64_t scratch = vkllm__attention_scratch_bytes(k->gpu, &sh);
    struct attn_bufs b = {vkllm__chk_buf(k, nq * 4, q),    vkllm__chk_buf(k, kbytes, NULL),
                          vkllm__chk_buf(k, vbytes, NULL), vkllm__chk_buf(k, nq * 4, NULL),
                          vkllm__chk_buf(k, 4, NULL),      scratch ? vkllm__chk_buf(k, scratch, NULL) : NULL};
    struct vkllm__view sv = {b.scratch, 0, 0};
    /* PARTS: the caches as two of half the kv heads each (the kernels take each part's heads) */
    const uint32_t pw = kvw / 2;
    const uint64_t pkb = kbytes / 2, pvb = vbytes / 2;
    struct vkllm__buffer *kpb[2] = {0}, *vpb[2] = {0};
    struct vkllm__view kpv[2], vpv[2];
    uint8_t *pimg = NULL;
    if (c->flags & VKLLM__CASE_PARTS) {
        if (c->heads_kv % 2 || ((kq || vq) && pw % 32)) {
            vkllm__chk_ok(
                k, vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check attention: %u kv heads in two parts", c->heads_kv));
            return;
        }
        pimg = vkllm__chk_alloc(k, VKLLM_MAX(pkb, pvb));
        for (int i = 0; i < 2; i++) {
            kpb[i] = vkllm__chk_buf(k, pkb, NULL), vpb[i] = vkllm__chk_buf(k, pvb, NULL);
            if (k->st) return;
            kpv[i] = vkllm__view_of(kpb[i]), vpv[i] = vkllm__view_of(vpb[i]);
        }
        sh.chunk_heads = c->heads_kv / 2, sh.k_chunks = kpv, sh.v_chunks = vpv;
    }
    RECORD(k, cmd,
           vkllm__op_attention(cmd, vkllm__view_of(b.o), vkllm__view_of(b.q), vkllm__view_of(b.k), vkllm__view_of(b.v),
                               vkllm__view_of(b.pos), sv, &sh));
    for (uint32_t s = 0; s < c->n_pos && !k->st; s++) {
        uint32_t p0 = c->pos[s];
        if ((uint64_t)p0 + c->n > c->n_ctx) {
            vkllm__chk_ok(k, vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "check attention: pos0 %u + %u > n_ctx %u", p0,
                                        c->n, c->n_ctx));
            return;
        }
        set_pos(k, b.pos, p0);
        if (pg.shift) { /* the context's image, then each position's row put where its block is */
            cache_image(klog, c->n_ctx, c->n_ctx, kvw, p0 + c->n, kq ? NULL : kh, kq8, ks);
            cache_image(vlog, c->n_ctx, c->n_ctx, kvw, p0 + c->n, vq ? NULL : vh, vq8, vs);
            page_image(kimg, klog, &pg, c->n_ctx, kvw, kq);
            page_image(vimg, vlog, &pg, c->n_ctx, kvw, vq);
        } else {
            cache_image(kimg, rows, c->n_ctx, kvw, p0 + c->n, kq ? NULL : kh, kq8, ks);
            cache_image(vimg, rows, c->n_ctx, kvw, p0 + c->n, vq ? NULL : vh, vq8, vs);
        }
        if (pimg) {
            for (uint32_t i = 0; i < 2; i++) {
                part_image(pimg, kimg, rows, kvw, pw, i, kq);
                vkllm__chk_upload(k, kpb[i], pimg, pkb);
                part_image(pimg, vimg, rows, kvw, pw, i, vq);
                vkllm__chk_upload(k, vpb[i], pimg, pvb);
            }
        } else {
            vkllm__chk_upload(k, b.k, kimg, kbytes);
            vkllm__chk_upload(k, b.v, vimg, vbytes);
        }
        vkllm__chk_submit(k, cmd);
        vkllm__chk_download(k, b.o, got, nq * 4);
        if (k->st) return;
        if (s == 0 && k->r->dispatches) {
            int got_tb = !strncmp(k->r->kernel, "attn_tb", 7);
            if (got_tb != want_tb) vkllm__chk_fail(k, "ran %s, want %s", k->r->kernel, want_tb ? "attn_tb" : "attn");
            if ((strstr(k->r->kernel, "_h16_") != NULL) != h16)
                vkllm__chk_fail(k, "ran %s, want %s arithmetic", k->r->kernel, h16 ? "f16" : "f32");
        }
        for (uint32_t i = 0; i < c->n; i++) {
            vkllm__ref_attention(ref, qr + (uint64_t)i * qw, kf, vf, att, c->heads, c->heads_kv, c->head_dim,
                                 p0 + i + 1, cm || h16 ? 1.0f : sh.scale, c->window, c->softcap, sinks);
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
