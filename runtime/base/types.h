/* types.h - ggml tensor types: ids, block layouts, sizes, fp16/bf16 conversion.
 * Dequantization and quantization (the scalar reference) live in runtime/base/quant.c. */
#ifndef VKLLM_TYPES_H
#define VKLLM_TYPES_H

#include <stdint.h>

#include "internal.h"

/* ggml's type ids, as stored in GGUF tensor infos. */
enum vkllm__type {
    VKLLM__TYPE_F32 = 0,
    VKLLM__TYPE_F16 = 1,
    VKLLM__TYPE_Q4_0 = 2,
    VKLLM__TYPE_Q4_1 = 3,
    VKLLM__TYPE_Q5_0 = 6,
    VKLLM__TYPE_Q5_1 = 7,
    VKLLM__TYPE_Q8_0 = 8,
    VKLLM__TYPE_Q8_1 = 9,
    VKLLM__TYPE_Q2_K = 10,
    VKLLM__TYPE_Q3_K = 11,
    VKLLM__TYPE_Q4_K = 12,
    VKLLM__TYPE_Q5_K = 13,
    VKLLM__TYPE_Q6_K = 14,
    VKLLM__TYPE_Q8_K = 15,
    VKLLM__TYPE_IQ2_XXS = 16,
    VKLLM__TYPE_IQ2_XS = 17,
    VKLLM__TYPE_IQ3_XXS = 18,
    VKLLM__TYPE_IQ1_S = 19,
    VKLLM__TYPE_IQ4_NL = 20,
    VKLLM__TYPE_IQ3_S = 21,
    VKLLM__TYPE_IQ2_S = 22,
    VKLLM__TYPE_IQ4_XS = 23,
    VKLLM__TYPE_I8 = 24,
    VKLLM__TYPE_I16 = 25,
    VKLLM__TYPE_I32 = 26,
    VKLLM__TYPE_I64 = 27,
    VKLLM__TYPE_F64 = 28,
    VKLLM__TYPE_IQ1_M = 29,
    VKLLM__TYPE_BF16 = 30,
    /* 31..33 (Q4_0_4_4 & co.) and 36..38 (IQ4_NL_4_4 & co.) were removed from GGUF. */
    VKLLM__TYPE_TQ1_0 = 34,
    VKLLM__TYPE_TQ2_0 = 35,
    VKLLM__TYPE_MXFP4 = 39,
    VKLLM__TYPE_COUNT_ = 40
};

struct vkllm__type_traits {
    const char *name;    /* "q4_K" */
    uint32_t block_size; /* elements per block (1 for plain types) */
    uint32_t type_size;  /* bytes per block */
    int compute;         /* 1 if vkllm computes with it (dequantize/quantize exist) */
};

/* Traits of a ggml type id; NULL when the id is not a known ggml type (size unknown). */
const struct vkllm__type_traits *vkllm__type_traits(uint32_t type);

/* Name of a type id ("q8_0", or "type#N" for an unknown id; static storage). */
const char *vkllm__type_name(uint32_t type);

/* Bytes of a row of n elements; VKLLM_STATUS_BAD_FORMAT if n is not a multiple of the block
 * size or the type is unknown; VKLLM_STATUS_INVALID_ARGUMENT on overflow. */
vkllm_status vkllm__row_size(uint32_t type, uint64_t n, uint64_t *bytes);

/* VKLLM_STATUS_OK when vkllm can compute with `type`; otherwise VKLLM_STATUS_UNSUPPORTED (a
 * known ggml type vkllm does not compute with) or VKLLM_STATUS_BAD_FORMAT (an unknown id), with
 * a last-error text that names the tensor and the type ("tensor blk.0.attn_q.weight: type
 * iq2_xxs is not supported"). `tensor` may be NULL. */
vkllm_status vkllm__type_check(uint32_t type, const char *tensor);

/* IEEE half and bfloat16 <-> float, exact (round-to-nearest-even when narrowing). */
float vkllm__f16_to_f32(uint16_t h);
uint16_t vkllm__f32_to_f16(float f);
float vkllm__bf16_to_f32(uint16_t h);
uint16_t vkllm__f32_to_bf16(float f);

/* Reference (de)quantization, runtime/base/quant.c. n must be a multiple of the block size and the
 * type must have compute = 1 (callers check with vkllm__row_size / traits first). */
void vkllm__dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n);
void vkllm__quantize_row(uint32_t type, const float *src, void *dst, uint64_t n);

/* The pieces of one block of a quantized type, for repacking (runtime/base/quant.c): element i
 * = d[i / sub] * q[i] + m[i / sub], the sub-blocks 16 elements long for Q2_K, Q3_K and Q6_K and 32 for the
 * others; q small integers (-32..31 at most; Q2_K 0..3, Q4_1 and Q4_K 0..15, Q5_1 and Q5_K 0..31, the
 * others signed) and m 0 for the symmetric types. Returns the block's elements (32 or 256), 0
 * for a type without pieces (the plain types). */
int vkllm__block_parts(uint32_t type, const void *block, int *q, float *d, float *m);

/* The 16-byte layout the GPU readers take for Q8_0, Q4_0, Q5_0 and Q6_K rows (quant.c, docs/gpu.md):
 * groups of 8 blocks, each field of the group's blocks together (n fields of (offset in the block,
 * length, full: 8 places even in a short group), in their new order). vkllm__rp_fields: the fields
 * and the block's bytes, 0 for a type without the layout. vkllm__rp_row_bytes: bytes of a row of k
 * elements in the layout, 0 where it has none (Q8_0/Q4_0/Q5_0 need k % 256 == 0; Q6_K takes any
 * row, which grows where its blocks are not whole groups of 8). vkllm__rp_pack: rows of k elements
 * at src (GGUF) into dst (rows of vkllm__rp_row_bytes, not overlapping src), as
 * shaders/repack.comp does on the device. */
struct vkllm__rp_field {
    uint32_t off, len, full;
};
uint32_t vkllm__rp_fields(uint32_t type, struct vkllm__rp_field f[3], uint32_t *block_bytes);
uint64_t vkllm__rp_row_bytes(uint32_t type, uint64_t k);
void vkllm__rp_pack(uint32_t type, uint64_t k, uint64_t rows, const void *src, void *dst);

#endif /* VKLLM_TYPES_H */
