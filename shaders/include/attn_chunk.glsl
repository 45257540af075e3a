// attn_chunk.glsl - attn.comp's reads of K/V head rows in 8-value chunks (f16: one 16-byte load
// where head rows are whole 16-byte words; q8_0: two quant words and their blocks' scales), shared
// by the decode (attn_decode.glsl) and the scalar prefill (attn_prefill.glsl). Included by
// attn.comp after its bindings (kc, vc at 1 and 2), push constants and HD.
#ifndef VKLLM_ATTN_CHUNK_GLSL
#define VKLLM_ATTN_CHUNK_GLSL

layout(std430, binding = 1) readonly buffer K4 { uvec4 kc4[]; }; // binding 1 again, 16-byte words
layout(std430, binding = 2) readonly buffer V4 { uvec4 vc4[]; };
const uint HC = (HD + 7u) / 8u;      // 8-value chunks per head row (the last part-filled when HD % 8)
const bool F16_VEC = HD % 8u == 0u;  // f16 head rows of whole 16-byte words

// Values 8j .. 8j+7 of a head row of f16 words (uint view w, 16-byte view w4), zeros past HD.
#define F16_CHUNK(BUF, BUF4, hr, j, lo, hi)                                                            \
    {                                                                                            \
        uint b_ = (hr) * (HD / 2u) + 4u * (j);                                                   \
        uvec4 u_;                                                                                \
        if (F16_VEC) u_ = BUF4[b_ / 4u];                                                           \
        else u_ = uvec4(BUF[b_], 4u * (j) + 1u < HD / 2u ? BUF[b_ + 1u] : 0u,                        \
                        4u * (j) + 2u < HD / 2u ? BUF[b_ + 2u] : 0u, 4u * (j) + 3u < HD / 2u ? BUF[b_ + 3u] : 0u); \
        lo = vec4(unpackHalf2x16(u_.x), unpackHalf2x16(u_.y));                                   \
        hi = vec4(unpackHalf2x16(u_.z), unpackHalf2x16(u_.w));                                   \
    }
// The same of a q8_0 cache (kv_q8.glsl): two quant words, each quad times its block's scale.
#define Q8_CHUNK(BUF, hr, j, lo, hi)                                                                 \
    {                                                                                            \
        uint e_ = (hr) * HD + 8u * (j), s_ = p.n_rows * p.kv_hn * HD / 4u;                       \
        lo = q8_unpack(BUF[e_ / 4u], uintBitsToFloat(BUF[s_ + e_ / 32u]));                          \
        hi = 8u * (j) + 4u < HD ? q8_unpack(BUF[e_ / 4u + 1u], uintBitsToFloat(BUF[s_ + (e_ + 4u) / 32u])) : vec4(0.0); \
    }

#if defined(ATTN_F16)
// ATTN_F16: the same chunks as f16 vectors for f16 arithmetic. An f16 cache's words are its
// halves as they are (no conversion); a q8_0 cache's values are made in f32 (quant times scale,
// as above) and rounded to f16 once, so a small block's scale never goes subnormal in f16.
#define F16_CHUNK_H(BUF, BUF4, hr, j, lo, hi)                                                          \
    {                                                                                            \
        uint b_ = (hr) * (HD / 2u) + 4u * (j);                                                   \
        uvec4 u_;                                                                                \
        if (F16_VEC) u_ = BUF4[b_ / 4u];                                                           \
        else u_ = uvec4(BUF[b_], 4u * (j) + 1u < HD / 2u ? BUF[b_ + 1u] : 0u,                        \
                        4u * (j) + 2u < HD / 2u ? BUF[b_ + 2u] : 0u, 4u * (j) + 3u < HD / 2u ? BUF[b_ + 3u] : 0u); \
        lo = f16vec4(unpackFloat2x16(u_.x), unpackFloat2x16(u_.y));                              \
        hi = f16vec4(unpackFloat2x16(u_.z), unpackFloat2x16(u_.w));                              \
    }
#define Q8_CHUNK_H(BUF, hr, j, lo, hi)                                                               \
    {                                                                                            \
        vec4 l_, h_;                                                                             \
        Q8_CHUNK(BUF, hr, j, l_, h_)                                                             \
        lo = f16vec4(l_);                                                                        \
        hi = f16vec4(h_);                                                                        \
    }
void k_chunk_h(uint hr, uint j, out f16vec4 lo, out f16vec4 hi) {
#ifdef K_Q8
    Q8_CHUNK_H(kc, hr, j, lo, hi)
#else
    F16_CHUNK_H(kc, kc4, hr, j, lo, hi)
#endif
}
void v_chunk_h(uint hr, uint j, out f16vec4 lo, out f16vec4 hi) {
#ifdef V_Q8
    Q8_CHUNK_H(vc, hr, j, lo, hi)
#else
    F16_CHUNK_H(vc, vc4, hr, j, lo, hi)
#endif
}
#else
void k_chunk(uint hr, uint j, out vec4 lo, out vec4 hi) {
#ifdef K_Q8
    Q8_CHUNK(kc, hr, j, lo, hi)
#else
    F16_CHUNK(kc, kc4, hr, j, lo, hi)
#endif
}
void v_chunk(uint hr, uint j, out vec4 lo, out vec4 hi) {
#ifdef V_Q8
    Q8_CHUNK(vc, hr, j, lo, hi)
#else
    F16_CHUNK(vc, vc4, hr, j, lo, hi)
#endif
}
#endif

#endif
