/* quant_blocks.h - the block layouts of the ggml quantized types vkllm computes with, byte for
 * byte as ggml-common.h and GGUF files define them (little-endian; f16 fields are IEEE half bits).
 * GPU shaders mirror these layouts in shaders/include/dequant.glsl: keep the two in step.
 *
 * Every struct has only uint8_t/int8_t/uint16_t members placed so that there is no padding; the
 * _Static_asserts below pin the sizes that GGUF files use. */
#ifndef VKLLM_QUANT_BLOCKS_H
#define VKLLM_QUANT_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#define VKLLM_QK4_0 32
#define VKLLM_QK4_1 32
#define VKLLM_QK5_0 32
#define VKLLM_QK5_1 32
#define VKLLM_QK8_0 32
#define VKLLM_QK_K 256        /* super-block size of the K-quants */
#define VKLLM_K_SCALE_SIZE 12 /* packed 6-bit scales and mins of Q4_K / Q5_K */

/* x[j] = (q[j] - 8) * d; element j < 16 is the low nibble of qs[j], element j + 16 the high. */
struct vkllm__block_q4_0 {
    uint16_t d;                  /* f16 scale */
    uint8_t qs[VKLLM_QK4_0 / 2]; /* 4-bit quants */
};

/* x[j] = k_iq4nl[q[j]] * d (a non-linear table of 16 levels, runtime/base/quant.c); nibbles as
 * in Q4_0. */
#define VKLLM_QK4_NL 32
struct vkllm__block_iq4_nl {
    uint16_t d;                   /* f16 scale */
    uint8_t qs[VKLLM_QK4_NL / 2]; /* 4-bit indices into the table */
};

/* IQ4_XS: 8 sub-blocks of 32, sub-block ib scaled by d * (ls - 32), ls = 6 bits (the low 4 in
 * scales_l[ib / 2] >> 4 * (ib % 2), the high 2 in scales_h >> 2 * ib); its 16 bytes of qs index
 * the IQ4_NL levels as in IQ4_NL. */
struct vkllm__block_iq4_xs {
    uint16_t d; /* f16 super-block scale */
    uint16_t scales_h;
    uint8_t scales_l[VKLLM_QK_K / 64];
    uint8_t qs[VKLLM_QK_K / 2];
};

/* MXFP4 (OCP microscaling FP4, gpt-oss): x[j] = k_mxfp4[q[j]] * 2^(e - 128), the table the E2M1
 * values doubled (0, 0.5, ..., 6 -> 0, 1, ..., 12, and their negatives), e an E8M0 exponent;
 * nibbles as in Q4_0. 17 bytes: blocks (and rows) need not start on an even byte. */
#define VKLLM_QK_MXFP4 32
struct vkllm__block_mxfp4 {
    uint8_t e;
    uint8_t qs[VKLLM_QK_MXFP4 / 2];
};

/* x[j] = q[j] * d + m; nibbles as in Q4_0. */
struct vkllm__block_q4_1 {
    uint16_t d; /* f16 scale */
    uint16_t m; /* f16 min */
    uint8_t qs[VKLLM_QK4_1 / 2];
};

/* x[j] = (q[j] - 16) * d, q[j] = nibble as in Q4_0 | bit j of qh (a little-endian u32) << 4. */
struct vkllm__block_q5_0 {
    uint16_t d;
    uint8_t qh[4]; /* 5th bits, bit j for element j */
    uint8_t qs[VKLLM_QK5_0 / 2];
};

/* x[j] = q[j] * d + m; q[j] as in Q5_0. */
struct vkllm__block_q5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[VKLLM_QK5_1 / 2];
};

/* x[j] = qs[j] * d. */
struct vkllm__block_q8_0 {
    uint16_t d;
    int8_t qs[VKLLM_QK8_0];
};

/* 8 sub-blocks of 32. Sub-block s has a 6-bit scale sc[s] and a 6-bit min mn[s] packed in
 * scales[12]: for s < 4, sc = scales[s] & 63, mn = scales[s + 4] & 63; for s >= 4,
 * sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4, mn = (scales[s + 4] >> 4) |
 * (scales[s] >> 6) << 4. x = d * sc[s] * q - dmin * mn[s]. Quants: each 64 elements share 32
 * bytes of qs; elements 0..31 are the low nibbles, 32..63 the high nibbles. */
struct vkllm__block_q4_K {
    uint16_t d;    /* f16 super-block scale of the scales */
    uint16_t dmin; /* f16 super-block scale of the mins */
    uint8_t scales[VKLLM_K_SCALE_SIZE];
    uint8_t qs[VKLLM_QK_K / 2];
};

/* As Q4_K plus a 5th bit: for the c-th group of 64 elements (c = 0..3), element l (< 32) takes
 * bit 2c of qh[l] and element 32 + l takes bit 2c + 1. */
struct vkllm__block_q5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[VKLLM_K_SCALE_SIZE];
    uint8_t qh[VKLLM_QK_K / 8];
    uint8_t qs[VKLLM_QK_K / 2];
};

/* Q2_K and Q3_K place their 2-bit quants alike: element i = 128 n + 32 j + l (n < 2, j < 4,
 * l < 32) is bits 2j..2j+1 of qs[32 n + l]; sub-block s = i / 16 has its own scale.
 *
 * Q2_K: x = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4), q 0..3. */
struct vkllm__block_q2_K {
    uint8_t scales[VKLLM_QK_K / 16]; /* 4-bit scale (low) and min (high) per sub-block */
    uint8_t qs[VKLLM_QK_K / 4];
    uint16_t d;    /* f16 super-block scale of the scales */
    uint16_t dmin; /* f16 super-block scale of the mins */
};

/* Q3_K: x = d * (sc[s] - 32) * (q - 4 + 4 * h), q 0..3 as Q2_K's and h bit i / 32 of hmask[i % 32];
 * sc 6 bits: low 4 in scales[s] & 15 (s < 8) or scales[s - 8] >> 4, high 2 in
 * scales[8 + s % 4] >> 2 (s / 4). */
struct vkllm__block_q3_K {
    uint8_t hmask[VKLLM_QK_K / 8];
    uint8_t qs[VKLLM_QK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};

/* 16 sub-blocks of 16, x = d * scales[s] * (q - 32), q 6 bits. Each half (128 elements) uses
 * 64 bytes of ql and 32 of qh: for l < 32, element l = ql[l] low | (qh[l] bits 0-1) << 4,
 * l + 32 = ql[l + 32] low | bits 2-3, l + 64 = ql[l] high | bits 4-5, l + 96 = ql[l + 32]
 * high | bits 6-7. */
struct vkllm__block_q6_K {
    uint8_t ql[VKLLM_QK_K / 2]; /* low 4 bits */
    uint8_t qh[VKLLM_QK_K / 4]; /* high 2 bits */
    int8_t scales[VKLLM_QK_K / 16];
    uint16_t d;
};

_Static_assert(sizeof(struct vkllm__block_q4_0) == 18, "block_q4_0 is 18 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_iq4_nl) == 18, "block_iq4_nl is 18 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_iq4_xs) == 136, "block_iq4_xs is 136 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q4_1) == 20, "block_q4_1 is 20 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q5_0) == 22, "block_q5_0 is 22 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q5_1) == 24, "block_q5_1 is 24 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q8_0) == 34, "block_q8_0 is 34 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_mxfp4) == 17, "block_mxfp4 is 17 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q2_K) == 84, "block_q2_K is 84 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q3_K) == 110, "block_q3_K is 110 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q4_K) == 144, "block_q4_K is 144 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q5_K) == 176, "block_q5_K is 176 bytes in GGUF");
_Static_assert(sizeof(struct vkllm__block_q6_K) == 210, "block_q6_K is 210 bytes in GGUF");
_Static_assert(offsetof(struct vkllm__block_q5_K, qh) == 16, "q5_K: qh follows the scales");
_Static_assert(offsetof(struct vkllm__block_q6_K, d) == 208, "q6_K: d is last");

#endif /* VKLLM_QUANT_BLOCKS_H */
