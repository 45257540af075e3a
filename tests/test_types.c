/* test_types.c - ggml tensor types: the traits table, row sizes, f16/bf16 conversion (exhaustive),
 * dequantization of hand-built blocks with known values, and quantize -> dequantize error
 * within stated per-format bounds. CPU only. */
#include <float.h>

#include "harness.h"
#include "quant_blocks.h"
#include "types.h"

/* --- small helpers -------------------------------------------------------------------------- */

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* Decode a row and compare against expected values exactly (every value here is exact in f32). */
static void check_decode(uint32_t type, const void *blk, const float *want, int n) {
    float got[512];
    ASSERT(n <= 512);
    vkllm__dequantize_row(type, blk, got, (uint64_t)n);
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) FAILF("%s element %d: got %.9g, want %.9g", vkllm__type_name(type), i, got[i], want[i]);
}

/* --- traits --------------------------------------------------------------------------------- */

/* Written again from ggml-common.h (QK_K = 256), independently of runtime/base/types.c. */
static const struct {
    uint32_t id;
    const char *name;
    uint32_t block, size;
    int compute;
} want_traits[] = {
    {0, "f32", 1, 4, 1},         {1, "f16", 1, 2, 1},         {2, "q4_0", 32, 18, 1},      {3, "q4_1", 32, 20, 1},
    {6, "q5_0", 32, 22, 1},      {7, "q5_1", 32, 24, 1},      {8, "q8_0", 32, 34, 1},      {9, "q8_1", 32, 36, 0},
    {10, "q2_K", 256, 84, 1},    {11, "q3_K", 256, 110, 1},   {12, "q4_K", 256, 144, 1},   {13, "q5_K", 256, 176, 1},
    {14, "q6_K", 256, 210, 1},   {15, "q8_K", 256, 292, 0},   {16, "iq2_xxs", 256, 66, 0}, {17, "iq2_xs", 256, 74, 0},
    {18, "iq3_xxs", 256, 98, 0}, {19, "iq1_s", 256, 50, 0},   {20, "iq4_nl", 32, 18, 1},   {21, "iq3_s", 256, 110, 0},
    {22, "iq2_s", 256, 82, 0},   {23, "iq4_xs", 256, 136, 1}, {24, "i8", 1, 1, 0},         {25, "i16", 1, 2, 0},
    {26, "i32", 1, 4, 0},        {27, "i64", 1, 8, 0},        {28, "f64", 1, 8, 0},        {29, "iq1_m", 256, 56, 0},
    {30, "bf16", 1, 2, 1},       {34, "tq1_0", 256, 54, 0},   {35, "tq2_0", 256, 66, 0},   {39, "mxfp4", 32, 17, 1},
};

static void test_traits(void) {
    int known[64] = {0};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(want_traits); i++) {
        const struct vkllm__type_traits *t = vkllm__type_traits(want_traits[i].id);
        ASSERT(t != NULL);
        ASSERT_STREQ(t->name, want_traits[i].name);
        ASSERT_STREQ(vkllm__type_name(want_traits[i].id), want_traits[i].name);
        ASSERT_EQ(t->block_size, want_traits[i].block);
        ASSERT_EQ(t->type_size, want_traits[i].size);
        ASSERT_EQ(t->compute, want_traits[i].compute);
        known[want_traits[i].id] = 1;
    }
    /* Gaps (4, 5, the removed 31..33 and 36..38) and ids past the table are unknown. */
    for (uint32_t id = 0; id < 64; id++)
        if (!known[id]) ASSERT(vkllm__type_traits(id) == NULL);
    ASSERT(vkllm__type_traits(1000) == NULL);
    ASSERT(vkllm__type_traits(UINT32_MAX) == NULL);
    ASSERT_STREQ(vkllm__type_name(4), "type#4");
    ASSERT_STREQ(vkllm__type_name(UINT32_MAX), "type#4294967295");

    /* The block structs GPU shaders mirror have the GGUF sizes. */
    ASSERT_EQ(sizeof(struct vkllm__block_q4_0), vkllm__type_traits(VKLLM__TYPE_Q4_0)->type_size);
    ASSERT_EQ(sizeof(struct vkllm__block_q4_1), vkllm__type_traits(VKLLM__TYPE_Q4_1)->type_size);
    ASSERT_EQ(sizeof(struct vkllm__block_q5_0), vkllm__type_traits(VKLLM__TYPE_Q5_0)->type_size);
    ASSERT_EQ(sizeof(struct vkllm__block_q5_1), vkllm__type_traits(VKLLM__TYPE_Q5_1)->type_size);
    ASSERT_EQ(sizeof(struct vkllm__block_q8_0), vkllm__type_traits(VKLLM__TYPE_Q8_0)->type_size);
    ASSERT_EQ(sizeof(struct vkllm__block_q4_K), vkllm__type_traits(VKLLM__TYPE_Q4_K)->type_size);
    ASSERT_EQ(sizeof(struct vkllm__block_q5_K), vkllm__type_traits(VKLLM__TYPE_Q5_K)->type_size);
    ASSERT_EQ(sizeof(struct vkllm__block_q6_K), vkllm__type_traits(VKLLM__TYPE_Q6_K)->type_size);
}

static void test_row_size(void) {
    uint64_t b = 0;
    ASSERT_OK(vkllm__row_size(VKLLM__TYPE_F32, 7, &b));
    ASSERT_EQ(b, 28);
    ASSERT_OK(vkllm__row_size(VKLLM__TYPE_Q4_0, 64, &b));
    ASSERT_EQ(b, 36);
    ASSERT_OK(vkllm__row_size(VKLLM__TYPE_Q6_K, 4096, &b));
    ASSERT_EQ(b, 16 * 210);
    ASSERT_OK(vkllm__row_size(VKLLM__TYPE_Q8_K, 0, &b));
    ASSERT_EQ(b, 0);
    /* Not a whole number of blocks. */
    ASSERT_STATUS(vkllm__row_size(VKLLM__TYPE_Q4_0, 33, &b), VKLLM_STATUS_BAD_FORMAT);
    ASSERT_STATUS(vkllm__row_size(VKLLM__TYPE_Q4_K, 4096 + 32, &b), VKLLM_STATUS_BAD_FORMAT);
    ASSERT(strstr(vkllm_last_error(), "q4_K") != NULL);
    /* Unknown type. */
    ASSERT_STATUS(vkllm__row_size(4, 32, &b), VKLLM_STATUS_BAD_FORMAT);
    ASSERT_STATUS(vkllm__row_size(VKLLM__TYPE_COUNT_, 32, &b), VKLLM_STATUS_BAD_FORMAT);
    /* Overflow of n * bytes. */
    ASSERT_STATUS(vkllm__row_size(VKLLM__TYPE_F32, UINT64_C(1) << 62, &b), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__row_size(VKLLM__TYPE_I64, UINT64_MAX / 4, &b), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(vkllm__row_size(VKLLM__TYPE_I8, UINT64_MAX, &b));
    ASSERT(b == UINT64_MAX);

    /* Type check: the error names the tensor and the type. */
    ASSERT_OK(vkllm__type_check(VKLLM__TYPE_Q6_K, "output.weight"));
    ASSERT_STATUS(vkllm__type_check(VKLLM__TYPE_IQ2_XXS, "blk.3.ffn_up.weight"), VKLLM_STATUS_UNSUPPORTED);
    ASSERT(strstr(vkllm_last_error(), "blk.3.ffn_up.weight") != NULL);
    ASSERT(strstr(vkllm_last_error(), "iq2_xxs") != NULL);
    ASSERT_STATUS(vkllm__type_check(5, "tok_embd.weight"), VKLLM_STATUS_BAD_FORMAT);
    ASSERT(strstr(vkllm_last_error(), "tok_embd.weight") != NULL);
    ASSERT(strstr(vkllm_last_error(), "5") != NULL);
    ASSERT_STATUS(vkllm__type_check(VKLLM__TYPE_Q8_1, NULL), VKLLM_STATUS_UNSUPPORTED);
}

/* --- f16 / bf16 ----------------------------------------------------------------------------- */

static int is_nan_bits16(uint16_t h, int bf) {
    return bf ? ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) : ((h & 0x7c00) == 0x7c00 && (h & 0x3ff));
}

/* Exhaustive: every 16-bit pattern decodes and encodes back to itself (NaN payloads included),
 * and for each pair of adjacent finite values the f32 midpoint rounds to the even one while the
 * floats just below/above it round down/up. */
static void test_half_exhaustive(int bf) {
    float (*dec)(uint16_t) = bf ? vkllm__bf16_to_f32 : vkllm__f16_to_f32;
    uint16_t (*enc)(float) = bf ? vkllm__f32_to_bf16 : vkllm__f32_to_f16;
    uint16_t inf = bf ? 0x7f80 : 0x7c00;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = dec((uint16_t)h);
        if (enc(f) != h) FAILF("%s 0x%04x -> %.9g -> 0x%04x", bf ? "bf16" : "f16", h, f, enc(f));
        ASSERT_EQ(isnan(f) != 0, is_nan_bits16((uint16_t)h, bf));
        if (h + 1 < inf) { /* positive finite: the rounding boundaries up to the next value */
            float a = f, b = dec((uint16_t)(h + 1));
            float mid = (float)(((double)a + (double)b) / 2); /* exact: needs one bit more */
            ASSERT((double)mid == ((double)a + (double)b) / 2);
            uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            ASSERT_EQ(enc(mid), even);
            ASSERT_EQ(enc(-mid), even | 0x8000);
            ASSERT_EQ(enc(nextafterf(mid, 0.0f)), h);
            ASSERT_EQ(enc(nextafterf(mid, INFINITY)), h + 1);
        }
    }
}

static void test_half_values(void) {
    /* f16 */
    ASSERT(vkllm__f16_to_f32(0x3c00) == 1.0f);
    ASSERT(vkllm__f16_to_f32(0xc000) == -2.0f);
    ASSERT(vkllm__f16_to_f32(0x7bff) == 65504.0f);
    ASSERT(vkllm__f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    ASSERT(vkllm__f16_to_f32(0x03ff) == 1023.0f * ldexpf(1.0f, -24));
    ASSERT(vkllm__f16_to_f32(0x0400) == ldexpf(1.0f, -14));
    ASSERT(vkllm__f16_to_f32(0x3555) == 0x555 * ldexpf(1.0f, -12)); /* 0.333251953125 */
    ASSERT_EQ(bits(vkllm__f16_to_f32(0x8000)), 0x80000000u);
    ASSERT(vkllm__f16_to_f32(0x7c00) == INFINITY);
    ASSERT(vkllm__f16_to_f32(0xfc00) == -INFINITY);
    ASSERT(isnan(vkllm__f16_to_f32(0x7e00)));
    ASSERT_EQ(vkllm__f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);     /* tie -> even */
    ASSERT_EQ(vkllm__f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02); /* tie -> even */
    ASSERT_EQ(vkllm__f32_to_f16(65519.0f), 0x7bff);
    ASSERT_EQ(vkllm__f32_to_f16(65520.0f), 0x7c00); /* rounds to inf */
    ASSERT_EQ(vkllm__f32_to_f16(1e30f), 0x7c00);
    ASSERT_EQ(vkllm__f32_to_f16(-FLT_MAX), 0xfc00);
    ASSERT_EQ(vkllm__f32_to_f16(ldexpf(1.0f, -25)), 0x0000); /* tie -> even (0) */
    ASSERT_EQ(vkllm__f32_to_f16(nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
    ASSERT_EQ(vkllm__f32_to_f16(3 * ldexpf(1.0f, -25)), 0x0002);
    ASSERT_EQ(vkllm__f32_to_f16(ldexpf(1.0f, -14) - ldexpf(1.0f, -25)), 0x0400); /* into normal */
    ASSERT_EQ(vkllm__f32_to_f16(FLT_MIN), 0x0000);
    ASSERT_EQ(vkllm__f32_to_f16(-1e-30f), 0x8000);
    ASSERT_EQ(vkllm__f32_to_f16(from_bits(0x00000001)), 0x0000); /* f32 subnormal */
    ASSERT(is_nan_bits16(vkllm__f32_to_f16(NAN), 0));
    ASSERT(is_nan_bits16(vkllm__f32_to_f16(from_bits(0x7f800001)), 0)); /* payload below f16 */
    ASSERT(is_nan_bits16(vkllm__f32_to_f16(from_bits(0xffc00000)), 0));
    /* bf16 */
    ASSERT(vkllm__bf16_to_f32(0x3f80) == 1.0f);
    ASSERT(vkllm__bf16_to_f32(0x4049) == 3.140625f);
    ASSERT_EQ(vkllm__f32_to_bf16(3.14159265f), 0x4049);
    ASSERT_EQ(vkllm__f32_to_bf16(from_bits(0x3f808000)), 0x3f80); /* tie -> even */
    ASSERT_EQ(vkllm__f32_to_bf16(from_bits(0x3f818000)), 0x3f82); /* tie -> even */
    ASSERT_EQ(vkllm__f32_to_bf16(FLT_MAX), 0x7f80);               /* rounds to inf */
    ASSERT_EQ(vkllm__f32_to_bf16(from_bits(0x00000001)), 0x0000); /* subnormal */
    ASSERT_EQ(vkllm__f32_to_bf16(from_bits(0x00018000)), 0x0002); /* subnormal tie */
    ASSERT(is_nan_bits16(vkllm__f32_to_bf16(from_bits(0x7f800001)), 1));
    ASSERT(is_nan_bits16(vkllm__f32_to_bf16(from_bits(0xff800001)), 1));
}

/* --- hand-built blocks ---------------------------------------------------------------------- */

static void test_decode_plain(void) {
    float f32[3] = {1.5f, -0.0f, 1e-40f};
    check_decode(VKLLM__TYPE_F32, f32, f32, 3);
    uint8_t h[6];
    wr16(h, 0x3c00), wr16(h + 2, 0xc000), wr16(h + 4, 0x3800);
    check_decode(VKLLM__TYPE_F16, h, (const float[]){1.0f, -2.0f, 0.5f}, 3);
    /* An odd start address: the decoders must not assume alignment. */
    uint8_t h2[7];
    memcpy(h2 + 1, h, 6);
    check_decode(VKLLM__TYPE_F16, h2 + 1, (const float[]){1.0f, -2.0f, 0.5f}, 3);
    wr16(h, 0x3f80), wr16(h + 2, 0xc000), wr16(h + 4, 0x4049);
    check_decode(VKLLM__TYPE_BF16, h, (const float[]){1.0f, -2.0f, 3.140625f}, 3);
}

static void test_decode_q8_0(void) {
    uint8_t blk[34];
    float want[32];
    wr16(blk, 0x3400); /* d = 0.25 */
    for (int j = 0; j < 32; j++) {
        blk[2 + j] = (uint8_t)(int8_t)(j - 16);
        want[j] = (float)(j - 16) * 0.25f;
    }
    blk[2 + 31] = (uint8_t)(int8_t)-128; /* the full int8 range decodes */
    want[31] = -32.0f;
    check_decode(VKLLM__TYPE_Q8_0, blk, want, 32);
}

/* ggml's kvalues_iq4nl (ggml-common.h), copied here as the test's own oracle */
static const int k_iq4nl_ref[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static double f16_val(const uint8_t *p);

/* IQ4_NL / IQ4_XS: every element is the level nearest to it under its (sub-)block's scale dl (as
 * the bytes say): within half the widest gap between levels (24 / 2) of dl, plus how far past
 * the table's ends it lies (IQ4_XS: plus 64 d, as each sub-block scale is its own best one
 * rounded to a multiple of d, which a sub-block far smaller than the largest loses entirely, as
 * in ggml); and the decoder gives dl * level exactly. */
static void check_iq4(uint32_t type, const float *x, const float *y, const uint8_t *q, int n) {
    for (int i = 0; i < n; i++) {
        const uint8_t *blk = q + (type == VKLLM__TYPE_IQ4_NL ? (size_t)(i / 32) * 18 : (size_t)(i / 256) * 136);
        int j = type == VKLLM__TYPE_IQ4_NL ? i % 32 : i % 256, ib = j / 32, l = j % 32;
        double d = f16_val(blk), dl = d, slack = 0;
        const uint8_t *qs = blk + 2;
        if (type == VKLLM__TYPE_IQ4_XS) { /* ls is the sub-block's own scale / d rounded: half a d off */
            slack = 64 * fabs(d);
            int ls = ((blk[4 + ib / 2] >> 4 * (ib % 2)) & 15) | (((blk[2] | blk[3] << 8) >> 2 * ib) & 3) << 4;
            dl *= ls - 32;
            qs = blk + 8 + 16 * ib;
        }
        int nib = l < 16 ? qs[l] & 15 : qs[l - 16] >> 4;
        ASSERT(y[i] == (float)(dl * k_iq4nl_ref[nib]));
        double r = dl != 0 ? x[i] / dl : 0, past = r > 113 ? r - 113 : r < -127 ? -127 - r : 0;
        double bound = fabs(dl) * (12 + past) + slack + 1e-6 * fabs(x[i]) + 1e-30;
        if (fabs((double)y[i] - x[i]) > bound)
            FAILF("%s element %d: %.9g came back as %.9g (scale %.9g)", vkllm__type_name(type), i, x[i], y[i], dl);
    }
}

/* ggml's kvalues_mxfp4 (ggml-common.h), the test's own copy */
static const int k_mxfp4_ref[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* MXFP4: d = 2^(e - 128) exactly (ggml's E8M0 half); every element d * level; the exponent the
 * smallest that holds the block's largest magnitude (12 d >= amax > 6 d unless e is 0 or 254);
 * each element within half the widest gap (4 d / 2) of its value. */
static void check_mxfp4(const float *x, const float *y, const uint8_t *q, int n) {
    for (int b = 0; b < n / 32; b++) {
        const uint8_t *blk = q + 17 * b;
        double d = ldexp(1.0, blk[0] - 128), amax = 0;
        for (int j = 0; j < 32; j++) amax = fmax(amax, fabs(x[32 * b + j]));
        if (!(amax <= 12 * d * (1 + 1e-6)) || (blk[0] > 0 && blk[0] < 254 && !(amax > 6 * d)))
            FAILF("mxfp4 block %d: exponent %d for largest %.9g", b, blk[0], amax);
        for (int j = 0; j < 32; j++) {
            int nib = j < 16 ? blk[1 + j] & 15 : blk[1 + j - 16] >> 4;
            float want = (float)(d * k_mxfp4_ref[nib]);
            ASSERT(y[32 * b + j] == want);
            if (fabs((double)y[32 * b + j] - x[32 * b + j]) > 2 * d + 1e-6 * fabs(x[32 * b + j]) + 1e-38)
                FAILF("mxfp4 element %d: %.9g came back as %.9g (d %.9g)", 32 * b + j, x[32 * b + j], y[32 * b + j], d);
        }
    }
}

static void test_decode_q4(void) {
    /* Q4_0: d = 0.5, byte j = j | (15 - j) << 4: element j = (j - 8) * 0.5, element 16 + j =
     * (15 - j - 8) * 0.5. */
    uint8_t b0[18], b1[20];
    float want[32];
    wr16(b0, 0x3800);
    for (int j = 0; j < 16; j++) {
        b0[2 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)(j - 8) * 0.5f;
        want[16 + j] = (float)(7 - j) * 0.5f;
    }
    ASSERT(want[0] == -4.0f && want[15] == 3.5f && want[16] == 3.5f && want[31] == -4.0f);
    check_decode(VKLLM__TYPE_Q4_0, b0, want, 32);
    /* IQ4_NL: the same bytes index ggml's kvalues_iq4nl: element j = 0.5 * k[j], 16 + j = 0.5 * k[15 - j] */
    for (int j = 0; j < 16; j++)
        want[j] = 0.5f * (float)k_iq4nl_ref[j], want[16 + j] = 0.5f * (float)k_iq4nl_ref[15 - j];
    ASSERT(want[0] == -63.5f && want[15] == 56.5f);
    check_decode(VKLLM__TYPE_IQ4_NL, b0, want, 32);
    /* MXFP4: e = 127 (d = 0.5), the same nibbles index kvalues_mxfp4 */
    uint8_t bm[17];
    bm[0] = 127;
    for (int j = 0; j < 16; j++) bm[1 + j] = (uint8_t)(j | (15 - j) << 4);
    for (int j = 0; j < 16; j++)
        want[j] = 0.5f * (float)k_mxfp4_ref[j], want[16 + j] = 0.5f * (float)k_mxfp4_ref[15 - j];
    ASSERT(want[7] == 6.0f && want[16] == -6.0f);
    check_decode(VKLLM__TYPE_MXFP4, bm, want, 32);
    /* IQ4_XS: d = 0.5, sub-block ib's ls = 32 + ib - 4 (4 low bits in scales_l, 2 high in
     * scales_h), its 16 bytes j | (15 - j) << 4 */
    uint8_t bx[136] = {0};
    float wantx[256];
    wr16(bx, 0x3800);
    uint16_t sh = 0;
    for (int ib = 0; ib < 8; ib++) {
        int ls = 32 + ib - 4;
        bx[4 + ib / 2] |= (uint8_t)((ls & 15) << 4 * (ib % 2));
        sh |= (uint16_t)((ls >> 4) << 2 * ib);
        for (int j = 0; j < 16; j++) {
            bx[8 + 16 * ib + j] = (uint8_t)(j | (15 - j) << 4);
            wantx[32 * ib + j] = 0.5f * (float)(ls - 32) * (float)k_iq4nl_ref[j];
            wantx[32 * ib + 16 + j] = 0.5f * (float)(ls - 32) * (float)k_iq4nl_ref[15 - j];
        }
    }
    wr16(bx + 2, sh);
    ASSERT(wantx[0] == 254.0f && wantx[32 * 7] == -190.5f);
    check_decode(VKLLM__TYPE_IQ4_XS, bx, wantx, 256);

    /* Q4_1: d = 0.5, m = -1: element j = j * 0.5 - 1, element 16 + j = (15 - j) * 0.5 - 1. */
    wr16(b1, 0x3800);
    wr16(b1 + 2, 0xbc00);
    for (int j = 0; j < 16; j++) {
        b1[4 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)j * 0.5f - 1.0f;
        want[16 + j] = (float)(15 - j) * 0.5f - 1.0f;
    }
    ASSERT(want[0] == -1.0f && want[16] == 6.5f);
    check_decode(VKLLM__TYPE_Q4_1, b1, want, 32);
}

static void test_decode_q5(void) {
    /* Q5_0: d = 0.25, nibbles as in Q4_0, qh = 0xa5a50f0f (bytes 0f 0f a5 a5): element j has
     * 5th bit = bit j of qh. Element j = ((nibble | bit << 4) - 16) * 0.25. */
    const uint32_t qh = 0xa5a50f0fu;
    uint8_t b0[22], b1[24];
    float want[32];
    wr16(b0, 0x3400);
    b0[2] = 0x0f, b0[3] = 0x0f, b0[4] = 0xa5, b0[5] = 0xa5;
    for (int j = 0; j < 16; j++) {
        b0[6 + j] = (uint8_t)(j | (15 - j) << 4);
        want[j] = (float)((j | (int)(qh >> j & 1) << 4) - 16) * 0.25f;
        want[16 + j] = (float)(((15 - j) | (int)(qh >> (16 + j) & 1) << 4) - 16) * 0.25f;
    }
    /* Spot values worked out by hand: element 0: nibble 0, bit 0 = 1 -> 16 - 16 = 0;
     * element 4: nibble 4, bit 4 = 0 -> -12 * 0.25; element 16: nibble 15, bit 16 = 1 ->
     * 31 - 16 = 15 -> 3.75; element 17: nibble 14, bit 17 = 0 -> -0.5. */
    ASSERT(want[0] == 0.0f && want[4] == -3.0f && want[16] == 3.75f && want[17] == -0.5f);
    check_decode(VKLLM__TYPE_Q5_0, b0, want, 32);

    /* Q5_1: d = 0.5, m = 2: element = q * 0.5 + 2. */
    wr16(b1, 0x3800);
    wr16(b1 + 2, 0x4000);
    memcpy(b1 + 4, b0 + 2, 4 + 16);
    for (int j = 0; j < 16; j++) {
        want[j] = (float)(j | (int)(qh >> j & 1) << 4) * 0.5f + 2.0f;
        want[16 + j] = (float)((15 - j) | (int)(qh >> (16 + j) & 1) << 4) * 0.5f + 2.0f;
    }
    ASSERT(want[0] == 10.0f && want[16] == 17.5f);
    check_decode(VKLLM__TYPE_Q5_1, b1, want, 32);
}

/* Q4_K / Q5_K sub-block scales sc = {1, 2, 3, 4, 17, 33, 50, 63} and mins mn = {0, 1, 2, 3, 20,
 * 40, 5, 63}, packed by hand into the 12 bytes:
 *   bytes 0..3  = sc[0..3] | (sc[4..7] >> 4) << 6      = 41 82 c3 c4
 *   bytes 4..7  = mn[0..3] | (mn[4..7] >> 4) << 6      = 40 81 02 c3
 *   bytes 8..11 = (sc[4..7] & 15) | (mn[4..7] & 15) << 4 = 41 81 52 ff */
static const uint8_t k_scales[12] = {0x41, 0x82, 0xc3, 0xc4, 0x40, 0x81, 0x02, 0xc3, 0x41, 0x81, 0x52, 0xff};
static const int k_sc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
static const int k_mn[8] = {0, 1, 2, 3, 20, 40, 5, 63};

static void test_decode_q4_K(void) {
    /* d = 1, dmin = 0.5; qs[i] = 7 * i mod 256. Group c (64 elements) uses qs[32c..32c+31]:
     * element 64c + l = sc[2c] * (qs & 15) - 0.5 * mn[2c], element 64c + 32 + l =
     * sc[2c + 1] * (qs >> 4) - 0.5 * mn[2c + 1]. */
    uint8_t blk[144];
    float want[256];
    wr16(blk, 0x3c00);
    wr16(blk + 2, 0x3800);
    memcpy(blk + 4, k_scales, 12);
    for (int i = 0; i < 128; i++) blk[16 + i] = (uint8_t)(7 * i);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            uint8_t q = (uint8_t)(7 * (32 * c + l));
            want[64 * c + l] = (float)(k_sc[2 * c] * (q & 15)) - 0.5f * (float)k_mn[2 * c];
            want[64 * c + 32 + l] = (float)(k_sc[2 * c + 1] * (q >> 4)) - 0.5f * (float)k_mn[2 * c + 1];
        }
    }
    /* By hand: element 1: qs[1] = 7 -> 1 * 7 - 0 = 7; element 33: 7 >> 4 = 0 -> 0 - 0.5 = -0.5;
     * element 255 (c = 3, l = 31, high): qs[127] = 889 mod 256 = 121 = 0x79 -> 63 * 7 - 31.5. */
    ASSERT(want[1] == 7.0f && want[33] == -0.5f && want[255] == 63.0f * 7 - 31.5f);
    check_decode(VKLLM__TYPE_Q4_K, blk, want, 256);
}

static void test_decode_q5_K(void) {
    /* As Q4_K with d = 0.5, dmin = 1, plus qh[l] = 37 * l mod 256: element 64c + l takes bit 2c
     * of qh[l] as its 5th bit, element 64c + 32 + l takes bit 2c + 1. */
    uint8_t blk[176];
    float want[256];
    wr16(blk, 0x3800);
    wr16(blk + 2, 0x3c00);
    memcpy(blk + 4, k_scales, 12);
    for (int l = 0; l < 32; l++) blk[16 + l] = (uint8_t)(37 * l);
    for (int i = 0; i < 128; i++) blk[48 + i] = (uint8_t)(7 * i);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            uint8_t q = (uint8_t)(7 * (32 * c + l)), h = (uint8_t)(37 * l);
            int lo = (q & 15) | (h >> (2 * c) & 1) << 4, hi = (q >> 4) | (h >> (2 * c + 1) & 1) << 4;
            want[64 * c + l] = 0.5f * (float)(k_sc[2 * c] * lo) - (float)k_mn[2 * c];
            want[64 * c + 32 + l] = 0.5f * (float)(k_sc[2 * c + 1] * hi) - (float)k_mn[2 * c + 1];
        }
    }
    /* By hand: element 1: qs 7, qh[1] = 37 = 0b100101, bit 0 = 1 -> q = 23 -> 0.5 * 23 = 11.5;
     * element 33: qs 7 >> 4 = 0, bit 1 = 0 -> 0 - 1 = -1; element 65 (c = 1, l = 1): qs[33] = 231
     * = 0xe7 -> 7, bit 2 of 37 = 1 -> 23 * 3 * 0.5 - 2 = 32.5. */
    ASSERT(want[1] == 11.5f && want[33] == -1.0f && want[65] == 32.5f);
    check_decode(VKLLM__TYPE_Q5_K, blk, want, 256);
}

/* Q2_K and Q3_K, expected values from ggml's loops (dequantize_row_q2_K / _q3_K): for half n
 * (128 elements, q = qs + 32 n), j < 4 (shift 2j), l < 32, scale index is = 8n + 2j + l / 16:
 *   y[128n + 32j + l] = Q2_K: d * (sc[is] & 15) * (q[l] >> 2j & 3) - dmin * (sc[is] >> 4)
 *                       Q3_K: d * (sc6[is] - 32) * ((q[l] >> 2j & 3) - (hmask[l] & 1 << (4n + j) ? 0 : 4))
 * with Q3_K's 6-bit scales unpacked as ggml does with kmask1 / kmask2 over 3 words. */
static void test_decode_q2_q3_K(void) {
    uint8_t b2[84], b3[110];
    float want[256];
    for (int s = 0; s < 16; s++) b2[s] = (uint8_t)(s | (15 - s) << 4);
    for (int i = 0; i < 64; i++) b2[16 + i] = (uint8_t)(37 * i + 5);
    wr16(b2 + 80, 0x3800); /* d = 0.5 */
    wr16(b2 + 82, 0x3400); /* dmin = 0.25 */
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                int is = 8 * n + 2 * j + l / 16, q = b2[16 + 32 * n + l] >> 2 * j & 3;
                want[128 * n + 32 * j + l] = 0.5f * (float)(b2[is] & 15) * (float)q - 0.25f * (float)(b2[is] >> 4);
            }
    /* element 0: is 0 (scale 0, min 15), qs[0] = 5 -> q 1: 0 - 3.75; element 200 = 128 + 64 + 8:
     * n 1, j 2, l 8, is 12 (scale 12, min 3), qs[40] = 1485 & 255 = 205 -> bits 4-5 = 0: -0.75 */
    ASSERT(want[0] == -3.75f && want[200] == -0.75f);
    check_decode(VKLLM__TYPE_Q2_K, b2, want, 256);

    for (int i = 0; i < 32; i++) b3[i] = (uint8_t)(53 * i + 1);      /* hmask */
    for (int i = 0; i < 64; i++) b3[32 + i] = (uint8_t)(29 * i + 7); /* qs */
    for (int i = 0; i < 12; i++) b3[96 + i] = (uint8_t)(71 * i + 13);
    wr16(b3 + 108, 0x3800);
    uint32_t aux[4], tmp;
    memcpy(aux, b3 + 96, 12);
    tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
    aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
    aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
    aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
    uint8_t sc6[16];
    memcpy(sc6, aux, 16);
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                int is = 8 * n + 2 * j + l / 16, q = b3[32 + 32 * n + l] >> 2 * j & 3;
                int h = b3[l] & 1 << (4 * n + j) ? 0 : 4;
                want[128 * n + 32 * j + l] = 0.5f * (float)(sc6[is] - 32) * (float)(q - h);
            }
    /* element 0: sc6[0] = (13 & 15) | (b3[104] & 3) << 4 = 13 | 1 << 4 = 29 -> -3; qs[0] = 7 -> q 3;
     * hmask[0] = 1, bit 0 set -> 3: 0.5 * -3 * 3 */
    ASSERT(sc6[0] == 29 && want[0] == -4.5f);
    check_decode(VKLLM__TYPE_Q3_K, b3, want, 256);
}

static void test_decode_q6_K(void) {
    /* d = 0.5, scales[s] = s - 8 (negative ones included), ql[i] = 11 * i, qh[i] = 29 * i + 3.
     * Expected values from ggml's loop: for half n (128 elements) and l < 32, with ql += 64n,
     * qh += 32n, sc += 8n:
     *   y[l]      = d * sc[l/16]     * ((ql[l] & 15)      | (qh[l] >> 0 & 3) << 4) - 32)
     *   y[l + 32] = d * sc[l/16 + 2] * ((ql[l + 32] & 15) | (qh[l] >> 2 & 3) << 4) - 32)
     *   y[l + 64] = d * sc[l/16 + 4] * ((ql[l] >> 4)      | (qh[l] >> 4 & 3) << 4) - 32)
     *   y[l + 96] = d * sc[l/16 + 6] * ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32) */
    uint8_t blk[210];
    float want[256];
    for (int i = 0; i < 128; i++) blk[i] = (uint8_t)(11 * i);
    for (int i = 0; i < 64; i++) blk[128 + i] = (uint8_t)(29 * i + 3);
    for (int s = 0; s < 16; s++) blk[192 + s] = (uint8_t)(int8_t)(s - 8);
    wr16(blk + 208, 0x3800);
    for (int n = 0; n < 2; n++) {
        const uint8_t *ql = blk + 64 * n, *qh = blk + 128 + 32 * n;
        const int sc0 = 8 * n - 8; /* scales[8n + k] = 8n + k - 8 */
        float *y = want + 128 * n;
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 15) | (qh[l] >> 0 & 3) << 4) - 32;
            int q2 = ((ql[l + 32] & 15) | (qh[l] >> 2 & 3) << 4) - 32;
            int q3 = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
            int q4 = ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32;
            y[l] = 0.5f * (float)((sc0 + is + 0) * q1);
            y[l + 32] = 0.5f * (float)((sc0 + is + 2) * q2);
            y[l + 64] = 0.5f * (float)((sc0 + is + 4) * q3);
            y[l + 96] = 0.5f * (float)((sc0 + is + 6) * q4);
        }
    }
    /* By hand: element 0: ql 0, qh 3 -> q = 48 - 32 = 16, scale -8 -> 0.5 * -128 = -64;
     * element 64: ql[0] >> 4 = 0, qh bits 4-5 of 3 = 0 -> -32, scale -4 -> 64;
     * element 255 (half 1, l = 31, 4th quarter): ql[64 + 63] = 11 * 127 mod 256 = 117 = 0x75 ->
     * 7; qh[32 + 31] = 29 * 63 + 3 = 1830 mod 256 = 38 = 0b00100110 -> bits 6-7 = 0 -> q = -25,
     * scale index 15 -> 7 -> 0.5 * 7 * -25 = -87.5. */
    ASSERT(want[0] == -64.0f && want[64] == 64.0f && want[255] == -87.5f);
    check_decode(VKLLM__TYPE_Q6_K, blk, want, 256);
}

/* --- quantize -> dequantize ----------------------------------------------------------------- */

#define N 4096

enum data_kind {
    DATA_UNIFORM, /* [-1, 1) */
    DATA_GAUSS,   /* sum of 4 uniforms, heavier center */
    DATA_COS,     /* ggml test-quantize-fns: 0.1 + 2 cos(i + offset) */
    DATA_ZERO,
    DATA_CONST,     /* 3.25 everywhere */
    DATA_CONST_NEG, /* -7 everywhere */
    DATA_OUTLIER,   /* uniform with one value 1000 in each 4096 */
    DATA_NEG_ONLY,  /* -0.5 - |uniform| */
    DATA_POS_ONLY,  /* 100 + uniform: a large offset and a small range */
    DATA_TINY,      /* uniform * 1e-5 */
    DATA_COUNT_
};

static const char *data_names[] = {"uniform",   "gauss",   "cos",      "zero",     "const",
                                   "const-neg", "outlier", "neg-only", "pos-only", "tiny"};

static void make_data(enum data_kind kind, float *x) {
    uint64_t s = 0x9e3779b97f4a7c15ULL + (uint64_t)kind;
    for (int i = 0; i < N; i++) {
        float u = vkllm_test_randf(&s);
        switch (kind) {
        case DATA_UNIFORM: x[i] = u; break;
        case DATA_GAUSS: x[i] = u + vkllm_test_randf(&s) + vkllm_test_randf(&s) + vkllm_test_randf(&s); break;
        case DATA_COS: x[i] = 0.1f + 2.0f * cosf((float)i + 0.5f); break;
        case DATA_ZERO: x[i] = 0.0f; break;
        case DATA_CONST: x[i] = 3.25f; break;
        case DATA_CONST_NEG: x[i] = -7.0f; break;
        case DATA_OUTLIER: x[i] = i == 1234 ? 1000.0f : u; break;
        case DATA_NEG_ONLY: x[i] = -0.5f - fabsf(u); break;
        case DATA_POS_ONLY: x[i] = 100.0f + u; break;
        case DATA_TINY: x[i] = u * 1e-5f; break;
        default: break;
        }
    }
}

static double f16_val(const uint8_t *p) { return (double)vkllm__f16_to_f32(rd16(p)); }

/* Per-element bounds for the 32-element formats, from the stored block parameters:
 *   Q8_0: |err| <= d/2; d must be amax/127 (rounded up to f16).
 *   Q4_0, Q5_0: d = -vmax/8 (resp. /16) with vmax the largest-magnitude value, which maps to
 *     the lowest quant; values whose ideal quant lies past the top (7, resp. 15) clamp there, so
 *     |err| <= |d| * max(1/2, ideal - top) <= |d|; all others |err| <= |d|/2.
 *   Q4_1, Q5_1: d = (max - min)/15 (resp. /31), m = min rounded to f16: |err| <= d/2 + |m - min|
 *     (the f16 rounding of the min shifts every level; at the ends it may clamp).
 * Plus 1e-6 relative slack for float arithmetic. */
static void check_block_bounds(uint32_t type, const float *x, const float *y, const uint8_t *blk) {
    float amax = 0.0f, vmax = 0.0f, lo = x[0], hi = x[0];
    for (int j = 0; j < 32; j++) {
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), vmax = x[j];
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    double d = f16_val(blk), slack = 1e-6 * (fabs(hi) + fabs(lo)) + 1e-30;
    double ideal_d = 0, m = 0;
    int top = 0;
    switch (type) {
    case VKLLM__TYPE_Q8_0: ideal_d = amax / 127.0; break;
    case VKLLM__TYPE_Q4_0: ideal_d = vmax / -8.0, top = 7; break;
    case VKLLM__TYPE_Q5_0: ideal_d = vmax / -16.0, top = 15; break;
    case VKLLM__TYPE_Q4_1: ideal_d = (hi - lo) / 15.0, m = f16_val(blk + 2); break;
    case VKLLM__TYPE_Q5_1: ideal_d = (hi - lo) / 31.0, m = f16_val(blk + 2); break;
    default: FAILF("no block bounds for %s", vkllm__type_name(type));
    }
    /* The stored scale is the ideal one rounded away from zero to f16: at most one f16 step
     * (relative 2^-10, or 2^-24 among subnormals) larger in magnitude, never smaller. */
    if (!(fabs(d) >= fabs(ideal_d) && fabs(d) - fabs(ideal_d) <= fabs(ideal_d) * ldexp(1, -10) + ldexp(1, -24)))
        FAILF("%s: stored d %.9g, ideal %.9g", vkllm__type_name(type), d, ideal_d);
    for (int j = 0; j < 32; j++) {
        double err = fabs((double)y[j] - (double)x[j]), bound;
        if (type == VKLLM__TYPE_Q8_0) {
            bound = fabs(d) / 2;
        } else if (type == VKLLM__TYPE_Q4_0 || type == VKLLM__TYPE_Q5_0) {
            double ideal = d != 0 ? x[j] / d : 0;
            bound = fabs(d) * fmax(0.5, ideal - top);
            ASSERT(ideal - top <= 1.0 + 1e-3);
        } else {
            bound = fabs(d) / 2 + fabs(m - lo);
        }
        if (!(err <= bound + slack))
            FAILF("%s element %d: x %.9g, y %.9g, err %.3g > bound %.3g (d %.9g)", vkllm__type_name(type), j, x[j],
                  y[j], err, bound, d);
    }
}

struct kbound {
    uint32_t type;
    double rel_rmse;  /* rmse / rms(x) on uniform and cos data */
    double max_rel;   /* max |err| / (max - min of the super-block, with 0 included) */
    double cos_total; /* ggml's test-quantize-fns bound on the cos data (0: its default 0.002) */
};

/* K-quant bounds. An ideal b-bit uniform quantizer over a range R has max error R/(2(2^b-1))
 * and rmse R/((2^b-1) sqrt 12); for uniform data on [-1, 1] that is rmse/rms = 2/((2^b - 1)
 * sqrt 12) / (1/sqrt 3) = 1/(2^b - 1): 0.0667 (4 bits), 0.0323 (5), 0.0159 (6). The bounds:
 *   - rmse/rms <= 1.15 x that on uniform and cos data (15% for the 6/8-bit quantized sub-block
 *     scales and mins); 1.3 x on the 4-uniform sum, whose sub-block ranges are wider relative to
 *     its rms; 1.25 x on tiny data (1e-5), where the f16 super-block scales are subnormal;
 *   - every element within 1.5 ideal steps, 1.5 R/(2^b - 1), of its value, R the super-block's
 *     range with 0 included (K-quant offsets only subtract); not on tiny data;
 *   - ggml's own test-quantize-fns bound, sqrt(sum err^2) / n <= 0.002 on the cos data (its
 *     MAX_QUANTIZATION_TOTAL_ERROR_2BITS 0.0075 for Q2_K and _3BITS 0.0040 for Q3_K). */
static const struct kbound kbounds[] = {
    {VKLLM__TYPE_Q2_K, 0.333 * 1.15, 1.5 / 3, 0.0075}, {VKLLM__TYPE_Q3_K, 0.143 * 1.15, 1.5 / 7, 0.0040},
    {VKLLM__TYPE_Q4_K, 0.0667 * 1.15, 1.5 / 15, 0},    {VKLLM__TYPE_Q5_K, 0.0323 * 1.15, 1.5 / 31, 0},
    {VKLLM__TYPE_Q6_K, 0.0159 * 1.15, 1.5 / 63, 0},
};

static void check_kquant(const struct kbound *kb, enum data_kind kind, const float *x, const float *y) {
    double se = 0, sx = 0;
    for (int i = 0; i < N; i++) {
        double e = (double)y[i] - (double)x[i];
        se += e * e;
        sx += (double)x[i] * x[i];
    }
    double rel = sqrt(se / N) / sqrt(sx / N), rel_bound = kb->rel_rmse;
    if (kind == DATA_GAUSS) rel_bound *= 1.3;
    if (kind == DATA_TINY) rel_bound *= 1.25;
    if ((kind == DATA_UNIFORM || kind == DATA_GAUSS || kind == DATA_COS || kind == DATA_TINY) && !(rel <= rel_bound))
        FAILF("%s on %s: rmse/rms %.4f > %.4f", vkllm__type_name(kb->type), data_names[kind], rel, rel_bound);
    double cos_total = kb->cos_total > 0 ? kb->cos_total : 0.002;
    if (kind == DATA_COS && !(sqrt(se) / N <= cos_total))
        FAILF("%s on cos: ggml total error %.5f > %.4f", vkllm__type_name(kb->type), sqrt(se) / N, cos_total);
    if (kind == DATA_TINY) return;
    for (int b = 0; b < N / 256; b++) {
        double lo = 0, hi = 0, emax = 0;
        for (int i = 256 * b; i < 256 * (b + 1); i++) {
            lo = fmin(lo, x[i]);
            hi = fmax(hi, x[i]);
            emax = fmax(emax, fabs((double)y[i] - x[i]));
        }
        double bound = kb->max_rel * (hi - lo) + 1e-6 * fmax(hi, -lo);
        if (!(emax <= bound))
            FAILF("%s on %s, super-block %d: max err %.4g > %.4g (range %.4g)", vkllm__type_name(kb->type),
                  data_names[kind], b, emax, bound, hi - lo);
    }
}

static void test_roundtrip_type(uint32_t type, enum data_kind kind) {
    static float x[N], y[N];
    static uint8_t q[N * 4];
    uint64_t bytes;
    make_data(kind, x);
    ASSERT_OK(vkllm__row_size(type, N, &bytes));
    ASSERT(bytes <= sizeof q);
    memset(q, 0xcd, sizeof q);
    vkllm__quantize_row(type, x, q, N);
    for (size_t i = bytes; i < sizeof q; i++) ASSERT_EQ(q[i], 0xcd); /* writes stay in the row */
    vkllm__dequantize_row(type, q, y, N);
    for (int i = 0; i < N; i++)
        if (!isfinite(y[i])) FAILF("%s on %s: element %d is %g", vkllm__type_name(type), data_names[kind], i, y[i]);

    /* Constant rows, zero rows: every format reproduces them up to its storage precision. */
    if (kind == DATA_ZERO)
        for (int i = 0; i < N; i++) ASSERT(y[i] == 0.0f);

    switch (type) {
    case VKLLM__TYPE_F32: ASSERT(memcmp(x, y, sizeof x) == 0); break;
    case VKLLM__TYPE_F16: /* normal range: relative 2^-11 */
        for (int i = 0; i < N; i++) ASSERT(fabs((double)y[i] - x[i]) <= fabs(x[i]) * ldexp(1, -11) + ldexp(1, -25));
        break;
    case VKLLM__TYPE_BF16: /* relative 2^-8 */
        for (int i = 0; i < N; i++) ASSERT(fabs((double)y[i] - x[i]) <= fabs(x[i]) * ldexp(1, -8));
        break;
    case VKLLM__TYPE_Q8_0:
    case VKLLM__TYPE_Q4_0:
    case VKLLM__TYPE_Q4_1:
    case VKLLM__TYPE_Q5_0:
    case VKLLM__TYPE_Q5_1: {
        uint32_t ts = vkllm__type_traits(type)->type_size;
        for (int b = 0; b < N / 32; b++) check_block_bounds(type, x + 32 * b, y + 32 * b, q + ts * b);
        break;
    }
    case VKLLM__TYPE_IQ4_NL:
    case VKLLM__TYPE_IQ4_XS: check_iq4(type, x, y, q, N); break;
    case VKLLM__TYPE_MXFP4: check_mxfp4(x, y, q, N); break;
    default:
        for (size_t k = 0; k < VKLLM_ARRAY_LEN(kbounds); k++)
            if (kbounds[k].type == type) check_kquant(&kbounds[k], kind, x, y);
        break;
    }

    /* Constant rows: the K-quants and the min-offset formats reproduce the value to within
     * f16/6-bit precision of the (single) level; stated as relative 1/64. (MXFP4's scale is a power
     * of two over 8 coarse levels: check_mxfp4's bound is all it promises.) */
    if ((kind == DATA_CONST || kind == DATA_CONST_NEG) && type != VKLLM__TYPE_MXFP4)
        for (int i = 0; i < N; i++) ASSERT_NEAR(y[i], x[i], fabs(x[i]) / 64);
}

/* Data that a format represents exactly must come back exactly: this pins the encoders' bit
 * packing (scales, mins, 5th/6th bits), which error bounds alone would let slip. The values
 * are built from grids whose scales are exact in f16 and whose extremes are present, so the
 * encoder's first (min/max) candidate already fits with zero error. */
static void make_exact(uint32_t type, float *x) {
    static const int ls[8] = {63, 5, 17, 33, 40, 1, 62, 20}, lm[8] = {0, 63, 16, 31, 47, 2, 50, 63};
    static const int sc6[16] = {-128, 5, -17, 33, 127, -1, 60, -90, 2, 100, -64, 7, -3, 45, -100, 11};
    static const int sc2[8] = {15, 5, 1, 7, 12, 3, 9, 2}, mn2[8] = {0, 15, 4, 8, 15, 1, 11, 6};
    for (int i = 0; i < 256; i++) {
        int j = i % 32, s = i / 32;
        switch (type) {
        case VKLLM__TYPE_Q8_0: x[i] = j == 0 ? -127.0f / 64 : (float)(4 * j - 62) / 64; break;
        case VKLLM__TYPE_Q4_0: x[i] = (float)(j % 16 - 8) * 0.5f; break;
        /* d = 1/64 (-127 is the largest magnitude): every level, in a different order per block */
        case VKLLM__TYPE_IQ4_NL: x[i] = j == 0 ? -127.0f / 64 : (float)k_iq4nl_ref[(j * 7 + s) % 16] / 64; break;
        /* d = 2^(s - 3): 12 d (the largest level) in every block, every level */
        case VKLLM__TYPE_MXFP4: x[i] = (float)ldexp(j == 0 ? 12 : k_mxfp4_ref[(j * 5 + s) % 16], s - 3); break;
        case VKLLM__TYPE_Q4_1: x[i] = (float)(j % 16) * 0.25f - 1.0f; break;
        case VKLLM__TYPE_Q5_0: x[i] = (float)(j - 16) * 0.25f; break;
        case VKLLM__TYPE_Q5_1: x[i] = (float)j * 0.5f + 2.0f; break;
        /* d = 1/32, dmin = 1/16 (the largest ls and lm are 63); every level of each sub-block. */
        case VKLLM__TYPE_Q4_K: x[i] = (float)(ls[s] * (j % 16)) / 32 - (float)lm[s] / 16; break;
        case VKLLM__TYPE_Q5_K: x[i] = (float)(ls[s] * j) / 32 - (float)lm[s] / 16; break;
        /* d = 1/64; sub-block t (16 elements) has q = -32, -28, ..., 28, so -32 is its extreme. */
        case VKLLM__TYPE_Q6_K: x[i] = (float)(sc6[i / 16] * (4 * (i % 16) - 32)) / 64; break;
        /* Q2_K: d = 1/32, dmin = 1/16 (scale 15 and min 15 present), q = 0..3 in every sub-block */
        case VKLLM__TYPE_Q2_K: x[i] = (float)(sc2[s] * (i % 4)) / 32 - (float)mn2[s] / 16; break;
        /* Q3_K: d = 1/64, sub-block scales sc6 / 4 (-32..31, -32 present), q = -4..3 each */
        case VKLLM__TYPE_Q3_K: x[i] = (float)(sc6[i / 16] / 4 * (i % 8 - 4)) / 64; break;
        default: FAILF("no exact data for %s", vkllm__type_name(type));
        }
    }
}

static void test_exact_roundtrip(void) {
    static const uint32_t types[] = {VKLLM__TYPE_Q8_0,   VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q4_1, VKLLM__TYPE_Q5_0,
                                     VKLLM__TYPE_Q5_1,   VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K,
                                     VKLLM__TYPE_IQ4_NL, VKLLM__TYPE_Q2_K, VKLLM__TYPE_Q3_K, VKLLM__TYPE_MXFP4};
    float x[256], y[256];
    uint8_t q[256 * 2];
    for (size_t t = 0; t < VKLLM_ARRAY_LEN(types); t++) {
        make_exact(types[t], x);
        vkllm__quantize_row(types[t], x, q, 256);
        vkllm__dequantize_row(types[t], q, y, 256);
        for (int i = 0; i < 256; i++)
            if (y[i] != x[i])
                FAILF("%s element %d: exact value %.9g came back as %.9g", vkllm__type_name(types[t]), i, x[i], y[i]);
    }
}

static void test_roundtrip(void) {
    static const uint32_t types[] = {VKLLM__TYPE_F32,    VKLLM__TYPE_F16,  VKLLM__TYPE_BF16, VKLLM__TYPE_Q8_0,
                                     VKLLM__TYPE_Q4_0,   VKLLM__TYPE_Q4_1, VKLLM__TYPE_Q5_0, VKLLM__TYPE_Q5_1,
                                     VKLLM__TYPE_Q4_K,   VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K, VKLLM__TYPE_IQ4_NL,
                                     VKLLM__TYPE_IQ4_XS, VKLLM__TYPE_Q2_K, VKLLM__TYPE_Q3_K, VKLLM__TYPE_MXFP4};
    int n_compute = 0;
    for (uint32_t id = 0; id < VKLLM__TYPE_COUNT_; id++) {
        const struct vkllm__type_traits *t = vkllm__type_traits(id);
        n_compute += t && t->compute;
    }
    ASSERT_EQ(n_compute, VKLLM_ARRAY_LEN(types));
    for (size_t t = 0; t < VKLLM_ARRAY_LEN(types); t++)
        for (int k = 0; k < DATA_COUNT_; k++) test_roundtrip_type(types[t], (enum data_kind)k);
}

int main(void) {
    test_traits();
    test_row_size();
    test_half_values();
    test_half_exhaustive(0);
    test_half_exhaustive(1);
    test_decode_plain();
    test_decode_q8_0();
    test_decode_q4();
    test_decode_q5();
    test_decode_q4_K();
    test_decode_q5_K();
    test_decode_q2_q3_K();
    test_decode_q6_K();
    test_exact_roundtrip();
    test_roundtrip();
    printf("test_types: ok\n");
    return 0;
}
