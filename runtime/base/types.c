/* types.c - ggml tensor type traits, row sizes, and exact fp16/bf16 <-> f32 conversion.
 * Block sizes follow ggml-common.h (QK_K = 256); the block structs vkllm computes with are in
 * runtime/base/quant_blocks.h, which asserts that its sizes agree with this table. */
#include "types.h"

#include <stdio.h>
#include <string.h>

/* --- traits --------------------------------------------------------------------------------- */

/* Indexed by ggml type id; an entry with a NULL name is a gap (a removed or never-used id). */
static const struct vkllm__type_traits type_table[VKLLM__TYPE_COUNT_] = {
    [VKLLM__TYPE_F32] = {"f32", 1, 4, 1},
    [VKLLM__TYPE_F16] = {"f16", 1, 2, 1},
    [VKLLM__TYPE_Q4_0] = {"q4_0", 32, 18, 1},   /* d:f16, qs[16] */
    [VKLLM__TYPE_Q4_1] = {"q4_1", 32, 20, 1},   /* d, m:f16, qs[16] */
    [VKLLM__TYPE_Q5_0] = {"q5_0", 32, 22, 1},   /* d:f16, qh[4], qs[16] */
    [VKLLM__TYPE_Q5_1] = {"q5_1", 32, 24, 1},   /* d, m:f16, qh[4], qs[16] */
    [VKLLM__TYPE_Q8_0] = {"q8_0", 32, 34, 1},   /* d:f16, qs[32] */
    [VKLLM__TYPE_Q8_1] = {"q8_1", 32, 36, 0},   /* d, s:f16, qs[32] */
    [VKLLM__TYPE_Q2_K] = {"q2_K", 256, 84, 1},  /* scales[16], qs[64], d, dmin:f16 */
    [VKLLM__TYPE_Q3_K] = {"q3_K", 256, 110, 1}, /* hmask[32], qs[64], scales[12], d:f16 */
    [VKLLM__TYPE_Q4_K] = {"q4_K", 256, 144, 1}, /* d, dmin:f16, scales[12], qs[128] */
    [VKLLM__TYPE_Q5_K] = {"q5_K", 256, 176, 1}, /* d, dmin:f16, scales[12], qh[32], qs[128] */
    [VKLLM__TYPE_Q6_K] = {"q6_K", 256, 210, 1}, /* ql[128], qh[64], scales[16], d:f16 */
    [VKLLM__TYPE_Q8_K] = {"q8_K", 256, 292, 0}, /* d:f32, qs[256], bsums:i16[16] */
    [VKLLM__TYPE_IQ2_XXS] = {"iq2_xxs", 256, 66, 0},
    [VKLLM__TYPE_IQ2_XS] = {"iq2_xs", 256, 74, 0},
    [VKLLM__TYPE_IQ3_XXS] = {"iq3_xxs", 256, 98, 0},
    [VKLLM__TYPE_IQ1_S] = {"iq1_s", 256, 50, 0},
    [VKLLM__TYPE_IQ4_NL] = {"iq4_nl", 32, 18, 1}, /* d:f16, qs[16]: indices into a 16-level table */
    [VKLLM__TYPE_IQ3_S] = {"iq3_s", 256, 110, 0},
    [VKLLM__TYPE_IQ2_S] = {"iq2_s", 256, 82, 0},
    [VKLLM__TYPE_IQ4_XS] = {"iq4_xs", 256, 136, 1}, /* d:f16, scales_h, scales_l[4], qs[128] */
    [VKLLM__TYPE_I8] = {"i8", 1, 1, 0},
    [VKLLM__TYPE_I16] = {"i16", 1, 2, 0},
    [VKLLM__TYPE_I32] = {"i32", 1, 4, 0},
    [VKLLM__TYPE_I64] = {"i64", 1, 8, 0},
    [VKLLM__TYPE_F64] = {"f64", 1, 8, 0},
    [VKLLM__TYPE_IQ1_M] = {"iq1_m", 256, 56, 0},
    [VKLLM__TYPE_BF16] = {"bf16", 1, 2, 1},
    [VKLLM__TYPE_TQ1_0] = {"tq1_0", 256, 54, 0},
    [VKLLM__TYPE_TQ2_0] = {"tq2_0", 256, 66, 0},
    [VKLLM__TYPE_MXFP4] = {"mxfp4", 32, 17, 1}, /* e:u8 (E8M0), qs[16] */
};

const struct vkllm__type_traits *vkllm__type_traits(uint32_t type) {
    if (type >= VKLLM__TYPE_COUNT_ || type_table[type].name == NULL) return NULL;
    return &type_table[type];
}

const char *vkllm__type_name(uint32_t type) {
    /* Unknown ids get "type#N"; a small ring of buffers keeps a few names alive at once (this
     * is only for messages, and ids are few). */
    static _Thread_local char buf[4][24];
    static _Thread_local unsigned next;
    const struct vkllm__type_traits *t = vkllm__type_traits(type);
    if (t) return t->name;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "type#%u", (unsigned)type);
    return b;
}

vkllm_status vkllm__row_size(uint32_t type, uint64_t n, uint64_t *bytes) {
    const struct vkllm__type_traits *t = vkllm__type_traits(type);
    if (!t) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "unknown tensor type id %u", (unsigned)type);
    if (n % t->block_size != 0)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT,
                          "%llu elements of type %s are not a whole number of %u-element blocks", (unsigned long long)n,
                          t->name, (unsigned)t->block_size);
    uint64_t r;
    if (!vkllm__mul_u64(n / t->block_size, t->type_size, &r))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "size of %llu elements of type %s overflows",
                          (unsigned long long)n, t->name);
    *bytes = r;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__type_check(uint32_t type, const char *tensor) {
    const struct vkllm__type_traits *t = vkllm__type_traits(type);
    const char *what = tensor ? tensor : "?";
    if (!t) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "tensor %s: unknown tensor type id %u", what, (unsigned)type);
    if (!t->compute) return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "tensor %s: type %s is not supported", what, t->name);
    return VKLLM_STATUS_OK;
}

/* --- fp16 / bf16 ---------------------------------------------------------------------------- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float vkllm__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m << 13)); /* inf, NaN (payload kept) */
    if (e == 0) {
        if (m == 0) return bits_f32(sign); /* +-0 */
        /* Subnormal m * 2^-24: normalize so that bit 10 is the implicit one. */
        e = 127 - 15 + 1;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        return bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
    }
    return bits_f32(sign | ((e + 127 - 15) << 23) | (m << 13));
}

uint16_t vkllm__f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) { /* NaN: keep the top payload bits; never turn it into inf */
        uint32_t m = (ax >> 13) & 0x3ffu;
        return (uint16_t)(sign | 0x7c00u | (m ? m : 0x200u));
    }
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {
        /* Below 2^-14: a half subnormal, round(|f| / 2^-24) with ties to even. |f| is
         * mant24 * 2^(e-150), so the quotient is mant24 >> (126 - e). */
        uint32_t e = ax >> 23;
        if (e < 102) return (uint16_t)sign; /* < 2^-25: rounds to zero */
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++; /* may become 0x400: smallest normal */
        return (uint16_t)(sign | q);
    }
    /* Normal: rebias the exponent, drop 13 mantissa bits with ties to even (a carry rolls into
     * the exponent, which is the right answer). */
    uint32_t h = (ax >> 13) - ((127u - 15u) << 10);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float vkllm__bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t vkllm__f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) { /* NaN: keep payload, make sure it stays a NaN */
        uint32_t h = x >> 16;
        return (uint16_t)((h & 0x7fu) ? h : (h | 0x40u));
    }
    x += 0x7fffu + ((x >> 16) & 1u); /* ties to even; overflow into inf is correct */
    return (uint16_t)(x >> 16);
}
