/* test_op_attn.c - RoPE, KV-cache store, attention and argmax on the device against runtime/ref.
 * Every op is recorded once and replayed with only the position buffer (pos0) changed, which is
 * how the decode step runs. The KV cache is f16; the reference reads the same f16-rounded
 * values. Bounds (inputs of order 1):
 *   RoPE       max abs 1e-5 at positions up to 65000 (the shader reduces the angle exactly; a
 *              float angle pos * inv_freq alone is off by 2e-4 at 5000)
 *   kv_store   bit-exact f16 (round to nearest even), rows past n_ctx untouched
 *   attention  max abs 1e-4 on outputs (weighted means of V in [-1, 1]), both kernels: attn.comp
 *              (VKLLM_ATTN_TEXEL=0) and attn_tb.comp (=1, where the shape allows it); a profiled
 *              recording checks which one ran
 *   argmax     exact index, the first on ties */
#include "gpu_test.h"
#include "ops_gpu.h"
#include "ref_ops.h"
#include "ref.h"
#include "types.h"

#define ROPE_TOL 1e-5
#define ATTN_TOL 1e-4

static int n_fail, n_run;
static int attn_texel;      /* the kernel test_attention asks for: VKLLM_ATTN_TEXEL */
static int kernel_checked;  /* recordings whose kernel was checked (needs timestamps) */
static int kernel_unchecked;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float frand(void) { /* uniform [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static struct vkllm__buffer *buf_new(struct vkllm__gpu *gpu, uint64_t bytes) {
    struct vkllm__buffer *b = NULL;
    ASSERT_OK(vkllm__buffer_alloc(gpu, bytes, VKLLM__MEM_DEVICE, &b));
    return b;
}

static struct vkllm__buffer *buf_from(struct vkllm__gpu *gpu, const void *data, uint64_t bytes) {
    struct vkllm__buffer *b = buf_new(gpu, bytes);
    ASSERT_OK(vkllm__buffer_upload(b, 0, data, bytes));
    return b;
}

static void set_pos(struct vkllm__buffer *pos, uint32_t pos0) { ASSERT_OK(vkllm__buffer_upload(pos, 0, &pos0, 4)); }

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    ASSERT(p);
    return p;
}

static double worst_rope, worst_attn; /* printed at the end: how far inside the bounds */

static void report(const char *what, double err, double tol) {
    n_run++;
    if (tol == ROPE_TOL) worst_rope = fmax(worst_rope, err);
    if (tol == ATTN_TOL) worst_attn = fmax(worst_attn, err);
    if (!(err <= tol)) {
        n_fail++;
        fprintf(stderr, "FAIL %s: max abs %.3g (bound %.1g)\n", what, err, tol);
    }
}

/* --------------------------------------------------------------------------------- rope */

static void test_rope(struct vkllm__gpu *gpu, uint32_t n, uint32_t n_head, uint32_t head_dim, uint32_t n_rot,
                      int neox, float freq_scale) {
    uint32_t len = n * n_head * head_dim;
    float *x = xmalloc(len * 4), *ref = xmalloc(len * 4), *got = xmalloc(len * 4);
    float *inv = xmalloc((n_rot / 2 + 1) * 4);
    for (uint32_t i = 0; i < n_rot / 2; i++) inv[i] = freq_scale * powf(10000.0f, -2.0f * i / n_rot);
    for (uint32_t i = 0; i < len; i++) x[i] = frand();
    struct vkllm__buffer *bx = buf_new(gpu, len * 4), *bp = buf_new(gpu, 4),
                         *bf = buf_from(gpu, inv, (n_rot / 2 + 1) * 4);
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_rope(c, vkllm__view_of(bx), vkllm__view_of(bp), vkllm__view_of(bf), n, n_head, head_dim,
                             n_rot, neox));
    ASSERT_OK(vkllm__cmd_end(c));
    static const uint32_t starts[] = {0, 1, 5000, 65000};
    for (size_t s = 0; s < VKLLM_ARRAY_LEN(starts); s++) { /* replay: only pos0 and x change */
        ASSERT_OK(vkllm__buffer_upload(bx, 0, x, len * 4));
        set_pos(bp, starts[s]);
        ASSERT_OK(vkllm__cmd_submit(c));
        ASSERT_OK(vkllm__buffer_download(bx, 0, got, len * 4));
        memcpy(ref, x, len * 4);
        for (uint32_t t = 0; t < n; t++)
            vkllm__ref_rope(ref + (uint64_t)t * n_head * head_dim, n_head, head_dim, n_rot, neox, starts[s] + t, inv);
        double err = 0;
        for (uint32_t i = 0; i < len; i++) {
            double e = fabs((double)got[i] - ref[i]);
            err = fmax(err, isnan(e) ? INFINITY : e);
        }
        char what[160];
        snprintf(what, sizeof what, "rope n=%u heads=%u dim=%u rot=%u neox=%d scale=%g pos0=%u", n, n_head, head_dim,
                 n_rot, neox, freq_scale, starts[s]);
        report(what, err, ROPE_TOL);
    }
    vkllm__cmd_free(c);
    vkllm__buffer_free(bx);
    vkllm__buffer_free(bp);
    vkllm__buffer_free(bf);
    free(x), free(ref), free(got), free(inv);
}

/* ----------------------------------------------------------------------------- kv store */

/* Store n rows at several pos0 (replayed), some running past n_ctx; the rows past the cache (a
 * guard area in the same buffer, outside the bound view) must keep their sentinel. */
static void test_kv_store(struct vkllm__gpu *gpu, uint32_t n, uint32_t width, uint32_t n_ctx) {
    const uint32_t guard = 4;
    uint64_t cache_halves = (uint64_t)(n_ctx + guard) * width;
    uint16_t *want = xmalloc(cache_halves * 2), *got = xmalloc(cache_halves * 2);
    float *src = xmalloc((uint64_t)n * width * 4);
    for (uint64_t i = 0; i < cache_halves; i++) want[i] = 0x7bffu; /* sentinel: max finite half */
    struct vkllm__buffer *bc = buf_from(gpu, want, cache_halves * 2), *bs = buf_new(gpu, (uint64_t)n * width * 4),
                         *bp = buf_new(gpu, 4);
    struct vkllm__view cache = {bc, 0, (uint64_t)n_ctx * width * 2};
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_kv_store(c, cache, vkllm__view_of(bs), vkllm__view_of(bp), n, width, n_ctx));
    ASSERT_OK(vkllm__cmd_end(c));
    uint32_t starts[] = {0, 3, n_ctx - n, n_ctx - 2, n_ctx, n_ctx + 10, 0xfffffffeu};
    for (size_t s = 0; s < VKLLM_ARRAY_LEN(starts); s++) {
        for (uint64_t i = 0; i < (uint64_t)n * width; i++) src[i] = frand() * (i % 7 == 0 ? 3000.0f : 1.0f);
        src[0] = 1.0f + 1.0f / 2048; /* a tie: rounds to even (1.0) */
        ASSERT_OK(vkllm__buffer_upload(bs, 0, src, (uint64_t)n * width * 4));
        set_pos(bp, starts[s]);
        ASSERT_OK(vkllm__cmd_submit(c));
        for (uint32_t r = 0; r < n; r++)
            if ((uint64_t)starts[s] + r < n_ctx)
                for (uint32_t j = 0; j < width; j++)
                    want[(uint64_t)(starts[s] + r) * width + j] = vkllm__f32_to_f16(src[(uint64_t)r * width + j]);
        ASSERT_OK(vkllm__buffer_download(bc, 0, got, cache_halves * 2));
        uint64_t bad = 0;
        for (uint64_t i = 0; i < cache_halves; i++) bad += got[i] != want[i];
        char what[128];
        snprintf(what, sizeof what, "kv_store n=%u width=%u n_ctx=%u pos0=%u (halves wrong)", n, width, n_ctx,
                 starts[s]);
        report(what, (double)bad, 0);
    }
    vkllm__cmd_free(c);
    vkllm__buffer_free(bc);
    vkllm__buffer_free(bs);
    vkllm__buffer_free(bp);
    free(want), free(got), free(src);
}

/* ---------------------------------------------------------------------------- attention */

struct attn_case {
    uint32_t n, n_head, n_head_kv, head_dim, n_ctx;
};

static struct vkllm__gpu *g_gpu;

static void set_texel(int texel) {
    attn_texel = texel;
    gpu_test_tune(g_gpu, "attn_texel", texel ? "1" : "0");
}

/* Whether attn_tb.comp should take shape t: asked for, head rows of whole 8-half texels, q and the
 * cache within one texel binding (tests lower maxTexelBufferElements to refuse it). */
static int expect_tb(struct vkllm__gpu *gpu, struct attn_case t) {
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    return attn_texel && bl->texel_formats && t.head_dim % 8 == 0 &&
           (uint64_t)t.n * t.n_head * t.head_dim / 4 <= bl->max_texels &&
           (uint64_t)t.n_ctx * t.n_head_kv * t.head_dim / 8 <= bl->max_texels;
}

/* One recording of vkllm__op_attention, replayed for every pos0 in starts: query i sees cache
 * positions 0 .. pos0+i. The whole cache holds random f16 K/V, so rows after the current
 * length are garbage the op must not read into its result: every 7th of their values is NaN (half
 * 0x7e00), which a kernel that weighed such a row by 0 instead of skipping it would turn into a
 * NaN output. */
static void test_attention(struct vkllm__gpu *gpu, struct attn_case t, const uint32_t *starts, size_t n_starts) {
    uint32_t qw = t.n_head * t.head_dim, kvw = t.n_head_kv * t.head_dim;
    uint64_t nq = (uint64_t)t.n * qw, nkv = (uint64_t)t.n_ctx * kvw;
    float *q = xmalloc(nq * 4), *got = xmalloc(nq * 4), *ref = xmalloc(qw * 4), *att = xmalloc(t.n_ctx * 4);
    float *kf = xmalloc(nkv * 4), *vf = xmalloc(nkv * 4);
    uint16_t *kh = xmalloc(nkv * 2), *vh = xmalloc(nkv * 2);
    for (uint64_t i = 0; i < nq; i++) q[i] = 2.5f * frand();
    uint16_t *kp = xmalloc(nkv * 2), *vp = xmalloc(nkv * 2); /* poisoned copies */
    for (uint64_t i = 0; i < nkv; i++) {
        kh[i] = vkllm__f32_to_f16(frand()), kf[i] = vkllm__f16_to_f32(kh[i]);
        vh[i] = vkllm__f32_to_f16(frand()), vf[i] = vkllm__f16_to_f32(vh[i]);
    }
    struct vkllm__attn_shape sh = {t.n, t.n_head, t.n_head_kv, t.head_dim, t.n_ctx, 1.0f / sqrtf((float)t.head_dim)};
    uint64_t scratch_bytes = vkllm__attention_scratch_bytes(gpu, &sh);
    struct vkllm__buffer *bq = buf_from(gpu, q, nq * 4), *bk = buf_from(gpu, kh, nkv * 2),
                         *bv = buf_from(gpu, vh, nkv * 2), *bo = buf_new(gpu, nq * 4), *bp = buf_new(gpu, 4);
    struct vkllm__buffer *bs = scratch_bytes ? buf_new(gpu, scratch_bytes) : NULL;
    struct vkllm__view scratch = {bs, 0, 0};
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    vkllm__cmd_set_profile(c, 1); /* to see which kernel ran */
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_attention(c, vkllm__view_of(bo), vkllm__view_of(bq), vkllm__view_of(bk), vkllm__view_of(bv),
                                  vkllm__view_of(bp), scratch, &sh));
    ASSERT_OK(vkllm__cmd_end(c));
    int want_tb = expect_tb(gpu, t);
    for (size_t s = 0; s < n_starts; s++) {
        uint32_t pos0 = starts[s];
        ASSERT(pos0 + t.n <= t.n_ctx);
        set_pos(bp, pos0);
        /* every 7th value of the rows past the current length NaN (half 0x7e00) */
        memcpy(kp, kh, nkv * 2), memcpy(vp, vh, nkv * 2);
        for (uint64_t i = (uint64_t)(pos0 + t.n) * kvw; i < nkv; i += 7) kp[i] = vp[i] = 0x7e00u;
        ASSERT_OK(vkllm__buffer_upload(bk, 0, kp, nkv * 2));
        ASSERT_OK(vkllm__buffer_upload(bv, 0, vp, nkv * 2));
        ASSERT_OK(vkllm__cmd_submit(c));
        if (s == 0 && vkllm__cmd_profile_count(c) > 0) {
            struct vkllm__dispatch_time dt;
            ASSERT_OK(vkllm__cmd_profile_get(c, 0, &dt));
            int got_tb = dt.shader == VKLLM__SHADER_ATTN_TB_F16 || dt.shader == VKLLM__SHADER_ATTN_TB_SPLIT_F16;
            kernel_checked++;
            n_run++;
            if (got_tb != want_tb) {
                n_fail++;
                fprintf(stderr, "FAIL attention n=%u heads=%u/%u dim=%u n_ctx=%u texel=%d: ran %s, want %s\n", t.n,
                        t.n_head, t.n_head_kv, t.head_dim, t.n_ctx, attn_texel, dt.label,
                        want_tb ? "attn_tb" : "attn.comp");
            }
        } else if (s == 0) {
            kernel_unchecked++;
        }
        ASSERT_OK(vkllm__buffer_download(bo, 0, got, nq * 4));
        double err = 0;
        for (uint32_t i = 0; i < t.n; i++) {
            vkllm__ref_attention(ref, q + (uint64_t)i * qw, kf, vf, att, t.n_head, t.n_head_kv, t.head_dim,
                                 pos0 + i + 1, sh.scale);
            for (uint32_t j = 0; j < qw; j++) {
                double e = fabs((double)got[(uint64_t)i * qw + j] - ref[j]);
                err = fmax(err, isnan(e) ? INFINITY : e); /* fmax would drop a NaN */
            }
        }
        char what[160];
        snprintf(what, sizeof what, "attention n=%u heads=%u/%u dim=%u n_ctx=%u pos0=%u (len %u..%u)%s%s", t.n,
                 t.n_head, t.n_head_kv, t.head_dim, t.n_ctx, pos0, pos0 + 1, pos0 + t.n, bs ? " split" : "",
                 want_tb ? " attn_tb" : " attn.comp");
        report(what, err, ATTN_TOL);
    }
    vkllm__cmd_free(c);
    vkllm__buffer_free(bq), vkllm__buffer_free(bk), vkllm__buffer_free(bv), vkllm__buffer_free(bo);
    vkllm__buffer_free(bp), vkllm__buffer_free(bs);
    free(q), free(got), free(ref), free(att), free(kf), free(vf), free(kh), free(vh), free(kp), free(vp);
}

static void test_attention_args(struct vkllm__gpu *gpu) {
    struct vkllm__buffer *b = buf_new(gpu, 4096);
    struct vkllm__view v = vkllm__view_of(b);
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    struct vkllm__attn_shape odd = {1, 4, 2, 7, 16, 1.0f}, gqa = {1, 6, 4, 8, 16, 1.0f}, big = {1, 4, 2, 8, 4096, 1.0f};
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &odd), VKLLM_STATUS_INVALID_ARGUMENT); /* odd dim */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &gqa), VKLLM_STATUS_INVALID_ARGUMENT); /* 6 % 4 */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &big), VKLLM_STATUS_INVALID_ARGUMENT); /* cache > view */
    ASSERT_STATUS(vkllm__op_kv_store(c, v, v, v, 1, 7, 4), VKLLM_STATUS_INVALID_ARGUMENT);       /* odd width */
    ASSERT_STATUS(vkllm__op_rope(c, v, v, v, 1, 1, 8, 10, 0), VKLLM_STATUS_INVALID_ARGUMENT);     /* n_rot > dim */
    ASSERT_STATUS(vkllm__op_argmax(c, v, v, 0), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(vkllm__cmd_end(c));
    vkllm__cmd_free(c);
    vkllm__buffer_free(b);
}

/* The attention cases, run once per kernel (set_texel). */
static void attention_cases(struct vkllm__gpu *gpu) {
    /* Decode: one query over the cache, one recording replayed at current lengths 1..3000 of
     * n_ctx 4096 (split path), GQA ratios 1, 2, 4, 8, head dims 8, 64, 128. */
    /* The full length first, so that every split's partial holds stale values afterwards: a reduce
     * that read splits past the current length would be caught. */
    static const uint32_t decode_pos[] = {4095, 0, 1, 30, 256, 2999};
    static const uint32_t dims[] = {8, 64, 128};
    static const uint32_t ratios[] = {1, 2, 4, 8};
    for (size_t d = 0; d < VKLLM_ARRAY_LEN(dims); d++)
        for (size_t r = 0; r < VKLLM_ARRAY_LEN(ratios); r++) {
            struct attn_case t = {1, 2 * ratios[r], 2, dims[d], 4096};
            test_attention(gpu, t, decode_pos, VKLLM_ARRAY_LEN(decode_pos));
        }
    /* Decode on a short cache (no split) and on an n_ctx that is no multiple of the split. */
    static const uint32_t short_pos[] = {0, 5, 99};
    test_attention(gpu, (struct attn_case){1, 4, 1, 64, 100}, short_pos, VKLLM_ARRAY_LEN(short_pos));
    static const uint32_t odd_pos[] = {999, 0, 299, 300};
    test_attention(gpu, (struct attn_case){1, 6, 3, 80, 1000}, odd_pos, VKLLM_ARRAY_LEN(odd_pos));
    test_attention(gpu, (struct attn_case){1, 8, 8, 256, 1000}, odd_pos, VKLLM_ARRAY_LEN(odd_pos));

    /* Prefill: n queries, from an empty cache and continuing a conversation (earlier rows). */
    static const uint32_t prefill_n[] = {1, 5, 64, 100};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(prefill_n); i++)
        for (size_t d = 0; d < VKLLM_ARRAY_LEN(dims); d++)
            for (size_t r = 0; r < VKLLM_ARRAY_LEN(ratios); r += 2) { /* ratios 1, 4 */
                uint32_t starts[] = {0, 37, 155};
                struct attn_case t = {prefill_n[i], 2 * ratios[r], 2, dims[d], 256};
                test_attention(gpu, t, starts, VKLLM_ARRAY_LEN(starts));
            }
    static const uint32_t pf_pos[] = {0, 13};
    test_attention(gpu, (struct attn_case){33, 16, 2, 64, 300}, pf_pos, 2);  /* ratio 8 */
    test_attention(gpu, (struct attn_case){17, 4, 2, 64, 300}, pf_pos, 2);   /* ratio 2 */
    test_attention(gpu, (struct attn_case){20, 6, 2, 80, 300}, pf_pos, 2);   /* ratio 3, dim 80 */
    test_attention(gpu, (struct attn_case){9, 4, 4, 256, 300}, pf_pos, 2);   /* dim 256 */
    /* head_dim 2 mod 4: the last quad of a head row is half padding */
    test_attention(gpu, (struct attn_case){7, 3, 1, 18, 64}, pf_pos, 2);
    static const uint32_t d6_pos[] = {599, 0, 300};
    test_attention(gpu, (struct attn_case){1, 4, 2, 6, 600}, d6_pos, VKLLM_ARRAY_LEN(d6_pos));

}

/* Shapes aimed at attn_tb's cuts (decode on a cache of 256 or more: 8 splits of the current
 * length, each a multiple of 8 positions, so splits past the length at short ones; 8 lanes per
 * workgroup: one kv head's query heads times consecutive queries or splits): GQA ratios 1, 3, 5,
 * 16, 32, head dims 8 .. 72, lengths around block and split boundaries, prefill batches crossing
 * them from several starting positions. */
static void attention_tb_cases(struct vkllm__gpu *gpu) {
    static const uint32_t p700[] = {699, 0, 6, 7, 8, 62, 63, 64, 65, 511, 512, 513, 600};
    test_attention(gpu, (struct attn_case){1, 3, 3, 40, 700}, p700, VKLLM_ARRAY_LEN(p700));     /* ratio 1 */
    static const uint32_t p333[] = {332, 63, 64, 191, 192, 200};
    test_attention(gpu, (struct attn_case){1, 6, 2, 24, 333}, p333, VKLLM_ARRAY_LEN(p333));     /* ratio 3 */
    test_attention(gpu, (struct attn_case){1, 10, 2, 72, 333}, p333, VKLLM_ARRAY_LEN(p333));    /* ratio 5 */
    static const uint32_t p130[] = {129, 0, 64, 100};
    test_attention(gpu, (struct attn_case){1, 16, 1, 16, 130}, p130, VKLLM_ARRAY_LEN(p130));    /* ratio 16 */
    static const uint32_t pf13[] = {0, 1, 64, 187};
    test_attention(gpu, (struct attn_case){13, 10, 2, 32, 200}, pf13, VKLLM_ARRAY_LEN(pf13));   /* ratio 5 */
    static const uint32_t pf3[] = {0, 47};
    test_attention(gpu, (struct attn_case){3, 32, 1, 8, 50}, pf3, VKLLM_ARRAY_LEN(pf3));        /* ratio 32 */
    static const uint32_t pf129[] = {0, 171};
    test_attention(gpu, (struct attn_case){129, 4, 4, 64, 300}, pf129, VKLLM_ARRAY_LEN(pf129)); /* ratio 1 */
}

/* ------------------------------------------------------------------------------- argmax */

static void test_argmax(struct vkllm__gpu *gpu, uint32_t n) {
    float *x = xmalloc((uint64_t)n * 4);
    struct vkllm__buffer *bx = buf_new(gpu, (uint64_t)n * 4), *bo = buf_new(gpu, 4);
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_argmax(c, vkllm__view_of(bo), vkllm__view_of(bx), n));
    ASSERT_OK(vkllm__cmd_end(c));
    const float ninf = -INFINITY;
    for (int kind = 0; kind < 6; kind++) { /* replayed with new data each time */
        for (uint32_t i = 0; i < n; i++) x[i] = frand() * 10.0f;
        const char *name = "random";
        if (kind == 1) { /* ties: the same max at three places, the first wins */
            name = "ties";
            x[n / 2] = 20.0f, x[n - 1] = 20.0f, x[n / 3 + (n > 1)] = 20.0f;
        } else if (kind == 2) {
            name = "all -inf";
            for (uint32_t i = 0; i < n; i++) x[i] = ninf;
        } else if (kind == 3) {
            name = "-inf and one finite at the end";
            for (uint32_t i = 0; i < n; i++) x[i] = ninf;
            x[n - 1] = -1e30f;
        } else if (kind == 4) {
            name = "all equal";
            for (uint32_t i = 0; i < n; i++) x[i] = 0.5f;
        } else if (kind == 5) {
            name = "max at 0, +inf ties";
            x[0] = INFINITY;
            if (n > 1) x[n - 1] = INFINITY;
        }
        ASSERT_OK(vkllm__buffer_upload(bx, 0, x, (uint64_t)n * 4));
        ASSERT_OK(vkllm__cmd_submit(c));
        uint32_t got = 0;
        ASSERT_OK(vkllm__buffer_download(bo, 0, &got, 4));
        uint32_t want = vkllm__ref_argmax(x, n);
        n_run++;
        if (got != want) {
            n_fail++;
            fprintf(stderr, "FAIL argmax n=%u %s: got %u, want %u\n", n, name, got, want);
        }
    }
    vkllm__cmd_free(c);
    vkllm__buffer_free(bx), vkllm__buffer_free(bo);
    free(x);
}

int main(void) {
    struct vkllm__gpu *gpu = g_gpu = gpu_test_open();

    /* RoPE: normal and NeoX, partial rotation, scaled frequencies, several tokens. */
    for (int neox = 0; neox <= 1; neox++) {
        test_rope(gpu, 1, 1, 8, 8, neox, 1.0f);
        test_rope(gpu, 5, 3, 64, 64, neox, 1.0f);
        test_rope(gpu, 7, 4, 64, 32, neox, 1.0f);     /* n_rot < head_dim: the rest passes through */
        test_rope(gpu, 3, 2, 128, 128, neox, 0.25f);  /* linear scaling folded into inv_freq */
        test_rope(gpu, 2, 5, 80, 24, neox, 1.0f);
    }

    test_kv_store(gpu, 5, 24, 37);
    test_kv_store(gpu, 1, 2, 3);
    test_kv_store(gpu, 9, 128, 4096);

    test_attention_args(gpu);

    for (int texel = 0; texel <= 1; texel++) {
        set_texel(texel);
        attention_cases(gpu);
        attention_tb_cases(gpu);
    }
    /* attn_tb's work split overridden (VKLLM_ATTN_TB_*): blocks that divide nothing, one lane per
     * workgroup, many lanes, one split (none), many more splits than positions */
    set_texel(1);
    static const char *const tb_env[][4] = {{"1", "8", "8", "8"},    {"5", "1", "1", "7"},  {"3", "32", "32", "13"},
                                            {"16", "64", "64", "1"}, {"8", "2", "3", "1000"}};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(tb_env); i++) {
        gpu_test_tune(gpu, "attn_tb_block", tb_env[i][0]);
        gpu_test_tune(gpu, "attn_tb_lanes", tb_env[i][1]);
        gpu_test_tune(gpu, "attn_tb_dlanes", tb_env[i][2]);
        gpu_test_tune(gpu, "attn_tb_splits", tb_env[i][3]);
        static const uint32_t dpos[] = {299, 0, 6, 7, 64, 65, 150};
        test_attention(gpu, (struct attn_case){1, 6, 2, 16, 300}, dpos, VKLLM_ARRAY_LEN(dpos));
        test_attention(gpu, (struct attn_case){1, 4, 4, 8, 300}, dpos, VKLLM_ARRAY_LEN(dpos));
        static const uint32_t ppos[] = {0, 29};
        test_attention(gpu, (struct attn_case){11, 6, 2, 16, 64}, ppos, VKLLM_ARRAY_LEN(ppos));
    }
    gpu_test_tune(gpu, "attn_tb_block", NULL), gpu_test_tune(gpu, "attn_tb_lanes", NULL);
    gpu_test_tune(gpu, "attn_tb_dlanes", NULL), gpu_test_tune(gpu, "attn_tb_splits", NULL);
    /* Shapes past one texel binding take attn.comp even when attn_tb is asked for. */
    gpu_test_tune(gpu, "max_texels", "1000");
    static const uint32_t big_pos[] = {299, 0, 100};
    test_attention(gpu, (struct attn_case){1, 8, 4, 64, 300}, big_pos, VKLLM_ARRAY_LEN(big_pos));  /* cache: 9600 */
    test_attention(gpu, (struct attn_case){70, 4, 1, 16, 300}, big_pos + 1, 2);                    /* q: 1120 */
    test_attention(gpu, (struct attn_case){5, 4, 1, 16, 300}, big_pos + 1, 2);                     /* fits: 80, 600 */
    gpu_test_tune(gpu, "max_texels", NULL);

    static const uint32_t argmax_n[] = {1, 2, 7, 32000, 151936, 262144};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(argmax_n); i++) test_argmax(gpu, argmax_n[i]);

    gpu_test_close(gpu);
    printf("worst max abs error: rope %.3g (bound %g), attention %.3g (bound %g)\n", worst_rope, ROPE_TOL, worst_attn,
           ATTN_TOL);
    printf("kernel choice checked for %d recordings, not checked (no timestamps) for %d\n", kernel_checked,
           kernel_unchecked);
    printf("%d cases, %d failed\n", n_run, n_fail);
    return n_fail ? 1 : 0;
}
