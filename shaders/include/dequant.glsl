// dequant.glsl - GGUF weight blocks read as plain 32-bit words and dequantized on the fly.
// One weight type per compilation, chosen with a define:
//   -DWTYPE_F32=1 -DWTYPE_F16=1 -DWTYPE_BF16=1 -DWTYPE_Q8_0=1 -DWTYPE_Q4_0=1 -DWTYPE_Q4_1=1
//   -DWTYPE_Q5_0=1 -DWTYPE_Q5_1=1 -DWTYPE_Q4_K=1 -DWTYPE_Q5_K=1 -DWTYPE_Q6_K=1 -DWTYPE_IQ4_NL=1
//   -DWTYPE_IQ4_XS=1 -DWTYPE_Q2_K=1 -DWTYPE_Q3_K=1 -DWTYPE_MXFP4=1
// Layouts are byte for byte those of GGUF (runtime/base/quant_blocks.h; the reference decoder is
// runtime/base/quant.c): keep the three in step.
//
// Needs no optional device feature: the weights are read as uint words (no 8/16-bit storage, no
// shaderFloat16 / shaderInt8); halves are converted with unpackHalf2x16.
//
// --- How to use it from another shader -------------------------------------------------------
//   #define DQ_BINDING 1            // binding of the weight buffer in set 0 (required)
//   #define DQ_W128                 // optional: the weights as 16-byte words too (w128)
//   #include "dequant.glsl"
// This declares
//   layout(std430, binding = DQ_BINDING) readonly buffer DqWeights { uint dq_w[]; };
// and with DQ_W128
//   layout(std430, binding = DQ_BINDING) readonly buffer DqWeights4 { uvec4 w128[]; };
// so the weights must be bound at a 4-byte-aligned offset (every storage-buffer offset is).
// Rows are addressed by their first byte inside that binding (row * row_bytes for a matrix
// bound from its first row); every row and block start is 2-byte aligned (all block sizes are
// even, F32 rows are 4-byte aligned) except MXFP4's 17-byte blocks, read with dq_u8 / dq_u32_any.
//
// Constants:
//   DQ_BLOCK        elements per block (1 for F32/F16/BF16, 32 for Q*_0/Q*_1, 256 for K-quants)
//   DQ_BLOCK_BYTES  bytes per block
//   dq_row_bytes(k) bytes of a row of k elements (k a multiple of DQ_BLOCK)
//
// Element access (any row start `rb` in bytes, element index `j` within the row):
//   float dq_get1(uint rb, uint j)    element j                      (any j)
//   vec4  dq_get4(uint rb, uint j)    elements j .. j+3              (j % 4 == 0; for F32/F16/BF16
//                                                                      also k % 4 == 0 then)
// Each call decodes its block's scale(s) again: fine for filling shared-memory tiles, where
// one invocation converts a few elements; hot loops (matvec.comp) work a whole block at a time.
//
// Byte access (used by the above, usable directly):
//   uint dq_u32(uint off)  4 bytes at a 2-byte-aligned byte offset, little-endian
//   uint dq_u16(uint off)  2 bytes at a 2-byte-aligned byte offset
//   float dq_f16(uint off) the IEEE half at off
#ifndef VKLLM_DEQUANT_GLSL
#define VKLLM_DEQUANT_GLSL

#ifndef DQ_BINDING
#error "define DQ_BINDING (the binding of the weight buffer) before including dequant.glsl"
#endif

layout(std430, binding = DQ_BINDING) readonly buffer DqWeights { uint dq_w[]; };
#if defined(DQ_W128)
layout(std430, binding = DQ_BINDING) readonly buffer DqWeights4 { uvec4 w128[]; };
#endif

uint dq_u32(uint off) {
    uint w = off >> 2;
    uint lo = dq_w[w];
    if ((off & 2u) == 0u) return lo;
    return (lo >> 16) | (dq_w[w + 1u] << 16);
}

uint dq_u16(uint off) { return (dq_w[off >> 2] >> ((off & 2u) * 8u)) & 0xffffu; }

float dq_f16(uint off) { return unpackHalf2x16(dq_u16(off)).x; }

// The byte at any offset, and 4 bytes at any offset (the next word clamped to the binding).
uint dq_u8(uint off) { return (dq_w[off >> 2] >> (8u * (off & 3u))) & 0xffu; }
uint dq_u32_any(uint off) {
    uint w = off >> 2, sh = 8u * (off & 3u);
    uint lo = dq_w[w];
    if (sh == 0u) return lo;
    return (lo >> sh) | (dq_w[min(w + 1u, uint(dq_w.length()) - 1u)] << (32u - sh));
}

// Signed bytes b0..b3 of a word as floats.
vec4 dq_s8x4(uint v) {
    return vec4(bitfieldExtract(int(v), 0, 8), bitfieldExtract(int(v), 8, 8),
                bitfieldExtract(int(v), 16, 8), bitfieldExtract(int(v), 24, 8));
}
// Unsigned bytes b0..b3 of a word as floats.
vec4 dq_u8x4(uint v) { return vec4(v & 0xffu, (v >> 8) & 0xffu, (v >> 16) & 0xffu, v >> 24); }

#if defined(WTYPE_F32)
#define DQ_BLOCK 1u
#define DQ_BLOCK_BYTES 4u
#elif defined(WTYPE_F16) || defined(WTYPE_BF16)
#define DQ_BLOCK 1u
#define DQ_BLOCK_BYTES 2u
#elif defined(WTYPE_Q8_0)
#define DQ_BLOCK 32u
#define DQ_BLOCK_BYTES 34u
#elif defined(WTYPE_Q4_0) || defined(WTYPE_IQ4_NL)
#define DQ_BLOCK 32u
#define DQ_BLOCK_BYTES 18u
#elif defined(WTYPE_Q4_1)
#define DQ_BLOCK 32u
#define DQ_BLOCK_BYTES 20u
#elif defined(WTYPE_Q5_0)
#define DQ_BLOCK 32u
#define DQ_BLOCK_BYTES 22u
#elif defined(WTYPE_Q5_1)
#define DQ_BLOCK 32u
#define DQ_BLOCK_BYTES 24u
#elif defined(WTYPE_Q4_K)
#define DQ_BLOCK 256u
#define DQ_BLOCK_BYTES 144u
#elif defined(WTYPE_Q5_K)
#define DQ_BLOCK 256u
#define DQ_BLOCK_BYTES 176u
#elif defined(WTYPE_Q6_K)
#define DQ_BLOCK 256u
#define DQ_BLOCK_BYTES 210u
#elif defined(WTYPE_IQ4_XS)
#define DQ_BLOCK 256u
#define DQ_BLOCK_BYTES 136u
#elif defined(WTYPE_Q2_K)
#define DQ_BLOCK 256u
#define DQ_BLOCK_BYTES 84u
#elif defined(WTYPE_Q3_K)
#define DQ_BLOCK 256u
#define DQ_BLOCK_BYTES 110u
#elif defined(WTYPE_MXFP4)
#define DQ_BLOCK 32u
#define DQ_BLOCK_BYTES 17u
#else
#error "dequant.glsl: define one WTYPE_* (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K IQ4_NL IQ4_XS Q2_K Q3_K MXFP4)"
#endif

// DQ_RP (specialization constant 7) = 1: Q8_0, Q4_0, Q5_0 and Q6_K rows in the 16-byte layout
// (made at load on GPUs by repack.comp; the layout: runtime/base/quant.c, vkllm__rp_pack): each row
// in groups of 8 blocks (272, 144, 176, 1680 bytes; a Q6_K row's last group may be short, 16 + 208 n
// bytes), each holding its blocks' quants (Q5_0: then their qh), then their 8 f16 d; Q6_K its 8 d
// (16 bytes), then its blocks' ql, qh and scales (208 bytes a block). Rows start 16-byte aligned
// (p.row_bytes: the layout's), so every block's quants do. Block b of the row at rb:
//   dq_rp_q(rb, b)   its quants (Q6_K: its 208 bytes)
//   dq_rp_qh(rb, b)  Q5_0's 4 bytes of fifth bits
//   dq_rp_d(rb, b)   its d
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0) || defined(WTYPE_Q5_0) || defined(WTYPE_Q6_K)
layout(constant_id = 7) const uint DQ_RP = 0;
uint dq_rp_group(uint rb, uint b) { return rb + (b >> 3) * (8u * DQ_BLOCK_BYTES); }
#if defined(WTYPE_Q6_K)
uint dq_rp_q(uint rb, uint b) { return dq_rp_group(rb, b) + 16u + (b & 7u) * 208u; }
uint dq_rp_d(uint rb, uint b) { return dq_rp_group(rb, b) + 2u * (b & 7u); }
#else
#if defined(WTYPE_Q8_0)
#define DQ_RP_Q 32u
#else
#define DQ_RP_Q 16u
#endif
uint dq_rp_q(uint rb, uint b) { return dq_rp_group(rb, b) + (b & 7u) * DQ_RP_Q; }
uint dq_rp_qh(uint rb, uint b) { return dq_rp_group(rb, b) + 128u + 4u * (b & 7u); }
uint dq_rp_d(uint rb, uint b) { return dq_rp_group(rb, b) + 8u * DQ_BLOCK_BYTES - 16u + 2u * (b & 7u); }
#endif
#else
const uint DQ_RP = 0u;
#endif

#if defined(WTYPE_IQ4_NL) || defined(WTYPE_IQ4_XS)
// IQ4_NL's 16 levels (ggml's kvalues_iq4nl; runtime/base/quant.c has the same table)
const float k_iq4nl[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0,
                                    38.0, 53.0, 69.0, 89.0, 113.0);
vec4 dq_iq4nl4(uint v) { // the levels of the nibbles at bits 0, 8, 16, 24 of v
    return vec4(k_iq4nl[v & 15u], k_iq4nl[(v >> 8) & 15u], k_iq4nl[(v >> 16) & 15u], k_iq4nl[(v >> 24) & 15u]);
}
#endif

#if defined(WTYPE_MXFP4)
// MXFP4's levels (the E2M1 values doubled; ggml's kvalues_mxfp4, runtime/base/quant.c)
const float k_mxfp4[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0,
                                    -12.0);
vec4 dq_mxfp4_4(uint v) { // the levels of the nibbles at bits 0, 8, 16, 24 of v
    return vec4(k_mxfp4[v & 15u], k_mxfp4[(v >> 8) & 15u], k_mxfp4[(v >> 16) & 15u], k_mxfp4[(v >> 24) & 15u]);
}
// The block at byte bb's scale 2^(e - 128), built as ggml builds it (e < 2: subnormal).
float dq_mxfp4_scale(uint bb) {
    uint e = dq_u8(bb);
    return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23));
}
#endif

#if defined(WTYPE_IQ4_XS)
// Sub-block ib's scale of the IQ4_XS block at byte bb: d * (ls - 32), ls 6 bits split in two.
float dq_iq4xs_scale(uint bb, uint ib) {
    uint h = dq_u32(bb);                        // d | scales_h << 16
    uint l = dq_u32(bb + 4u);                   // scales_l[0..3]
    uint ls = ((l >> (4u * ib)) & 15u) | (((h >> (16u + 2u * ib)) & 3u) << 4);
    return unpackHalf2x16(h).x * (float(ls) - 32.0);
}
#endif

uint dq_row_bytes(uint k) { return k / DQ_BLOCK * DQ_BLOCK_BYTES; }

// --- K-quant helpers -------------------------------------------------------------------------
// The 6-bit scale and min of sub-block s (0..7) of a Q4_K / Q5_K block whose 12 scale bytes
// start at byte `so` (see get_scale_min_k4 in quant.c). Returns (scale, min) as integers.
// dq_scale_min_k4_w: the same from the 12 bytes as three words a (bytes 0-3), b (4-7), c (8-11).
uvec2 dq_scale_min_k4_w(uint a, uint b, uint c, uint s) {
    uint sh = (s & 3u) * 8u;
    if (s < 4u) return uvec2((a >> sh) & 63u, (b >> sh) & 63u);
    uint q8 = (c >> sh) & 0xffu;           // scales[s + 4]
    uint hs = ((a >> sh) >> 6) & 3u;       // scales[s - 4] >> 6
    uint hm = ((b >> sh) >> 6) & 3u;       // scales[s] >> 6
    return uvec2((q8 & 15u) | (hs << 4), (q8 >> 4) | (hm << 4));
}
uvec2 dq_scale_min_k4(uint so, uint s) {
    return dq_scale_min_k4_w(dq_u32(so), dq_u32(so + 4u), dq_u32(so + 8u), s);
}

// NW words of the bytes starting at the 2-byte-aligned offset off, re-aligned: NW + 1 loads
// (the last one clamped to the binding when the start is aligned and it is not needed).
#define DQ_LOAD_WORDS(dst, off, NW)                                                 \
    {                                                                               \
        uint w_ = (off) >> 2;                                                       \
        bool mis_ = ((off) & 2u) != 0u;                                             \
        uint prev_ = dq_w[w_];                                                      \
        [[unroll]] for (uint i_ = 0u; i_ < (NW); i_++) {                            \
            uint nx_ = dq_w[min(w_ + i_ + 1u, uint(dq_w.length()) - 1u)];            \
            dst[i_] = mis_ ? ((prev_ >> 16) | (nx_ << 16)) : prev_;                 \
            prev_ = nx_;                                                            \
        }                                                                           \
    }

#if defined(WTYPE_Q6_K) && defined(DQ_W128)
// Q6_K as matvec.comp and matvec_x8.comp read it, a quarter at a time: quarter qt (0..3) of half h
// (0..1) of block b of the row at rb, from either layout. Its element l (0..31) is nibble qt / 2 of
// low-bit byte l (ql[64 h + 32 (qt & 1) + l]) with bits 2 qt of high-bit byte l (qh[32 h + l])
// above it, minus 32, times int8 scales[8 h + 2 qt + l / 16]. ql and qh: those 32 bytes each as 8
// words. Returns the block's first byte (its scales at + 192; the callers read them as suits their
// registers); its d is at dq_q6k_d(rb, b).
uint dq_q6k_quarter(uint rb, uint b, uint h, uint qt, out uint ql[8], out uint qh[8]) {
    if (DQ_RP != 0u) { // the 16-byte layout: the block's 208 bytes 16-byte aligned, d apart
        uint bb = dq_rp_q(rb, b), o = bb >> 4;
        uvec4 l0 = w128[o + 4u * h + 2u * (qt & 1u)], l1 = w128[o + 4u * h + 2u * (qt & 1u) + 1u];
        uvec4 h0 = w128[o + 8u + 2u * h], h1 = w128[o + 8u + 2u * h + 1u];
        ql = uint[8](l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w);
        qh = uint[8](h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w);
        return bb;
    }
    uint bb = rb + b * 210u;
    DQ_LOAD_WORDS(ql, bb + 64u * h + 32u * (qt & 1u), 8u);
    DQ_LOAD_WORDS(qh, bb + 128u + 32u * h, 8u);
    return bb;
}
uint dq_q6k_d(uint rb, uint b) { return DQ_RP != 0u ? dq_rp_d(rb, b) : rb + b * 210u + 208u; }
#endif

#if defined(WTYPE_Q3_K)
// The signed scale (sc - 32) of sub-block s (0..15) of a Q3_K block from its 12 scale bytes as
// three words a (bytes 0-3), b (4-7), c (8-11): low 4 bits in byte s & 7 (the high nibble for
// s >= 8), high 2 in byte 8 + s % 4 at bit 2 (s / 4).
float dq_q3k_scale(uint a, uint b, uint c, uint s) {
    uint w = (s & 4u) != 0u ? b : a;
    uint lo = (w >> (8u * (s & 3u) + 4u * (s >> 3))) & 15u;
    uint hi = (c >> (8u * (s & 3u) + 2u * (s >> 2))) & 3u;
    return float(int(lo | (hi << 4)) - 32);
}
#endif

// --- elements j .. j+3 of the row starting at byte rb (j % 4 == 0) ----------------------------
vec4 dq_get4(uint rb, uint j) {
#if defined(WTYPE_F32)
    uint o = (rb >> 2) + j;
    return uintBitsToFloat(uvec4(dq_w[o], dq_w[o + 1u], dq_w[o + 2u], dq_w[o + 3u]));
#elif defined(WTYPE_F16)
    uint o = rb + 2u * j;
    return vec4(unpackHalf2x16(dq_u32(o)), unpackHalf2x16(dq_u32(o + 4u)));
#elif defined(WTYPE_BF16)
    uint o = rb + 2u * j;
    uint a = dq_u32(o), b = dq_u32(o + 4u);
    return uintBitsToFloat(uvec4(a << 16, a & 0xffff0000u, b << 16, b & 0xffff0000u));
#else
    uint bb = rb + (j / DQ_BLOCK) * DQ_BLOCK_BYTES;  // block start
    uint i = j % DQ_BLOCK;                           // element within the block
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0) || defined(WTYPE_Q5_0)
    if (DQ_RP != 0u) {  // the 16-byte layout: quants (word aligned), qh, d apart
        uint b = j / DQ_BLOCK, qo = dq_rp_q(rb, b);
        float d = dq_f16(dq_rp_d(rb, b));
#if defined(WTYPE_Q8_0)
        return d * dq_s8x4(dq_w[(qo + i) >> 2]);
#else
        uint v = dq_w[(qo + (i & 15u)) >> 2] >> ((i & 16u) >> 2);
        vec4 q = vec4(v & 15u, (v >> 8) & 15u, (v >> 16) & 15u, (v >> 24) & 15u);
#if defined(WTYPE_Q4_0)
        return d * (q - 8.0);
#else
        uint h = dq_w[dq_rp_qh(rb, b) >> 2] >> i;
        return d * (q + vec4((uvec4(h) >> uvec4(0, 1, 2, 3) & 1u) << 4) - 16.0);
#endif
#endif
    }
#endif
#if defined(WTYPE_Q8_0)
    return dq_f16(bb) * dq_s8x4(dq_u32(bb + 2u + i));
#elif defined(WTYPE_IQ4_NL)
    uint v = dq_u32(bb + 2u + (i & 15u)) >> ((i & 16u) >> 2);  // low nibbles, or high for i >= 16
    return dq_f16(bb) * dq_iq4nl4(v);
#elif defined(WTYPE_MXFP4)
    uint v = dq_u32_any(bb + 1u + (i & 15u)) >> ((i & 16u) >> 2);  // low nibbles, or high for i >= 16
    return dq_mxfp4_scale(bb) * dq_mxfp4_4(v);
#elif defined(WTYPE_IQ4_XS)
    uint ib = i / 32u, l = i % 32u;
    uint v = dq_u32(bb + 8u + 16u * ib + (l & 15u)) >> ((l & 16u) >> 2);
    return dq_iq4xs_scale(bb, ib) * dq_iq4nl4(v);
#elif defined(WTYPE_Q4_0) || defined(WTYPE_Q4_1)
#if defined(WTYPE_Q4_0)
    const uint qs = 2u;
#else
    const uint qs = 4u;
#endif
    uint v = dq_u32(bb + qs + (i & 15u)) >> ((i & 16u) >> 2);  // low nibbles, or high for i >= 16
    vec4 q = vec4(v & 15u, (v >> 8) & 15u, (v >> 16) & 15u, (v >> 24) & 15u);
#if defined(WTYPE_Q4_0)
    return dq_f16(bb) * (q - 8.0);
#else
    return dq_f16(bb) * q + dq_f16(bb + 2u);
#endif
#elif defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
#if defined(WTYPE_Q5_0)
    const uint qh_off = 2u;
#else
    const uint qh_off = 4u;
#endif
    uint v = dq_u32(bb + qh_off + 4u + (i & 15u)) >> ((i & 16u) >> 2);
    uint h = dq_u32(bb + qh_off) >> i;  // bit i of qh for element i
    vec4 q = vec4((v & 15u) | ((h & 1u) << 4), ((v >> 8) & 15u) | ((h & 2u) << 3),
                  ((v >> 16) & 15u) | ((h & 4u) << 2), ((v >> 24) & 15u) | ((h & 8u) << 1));
#if defined(WTYPE_Q5_0)
    return dq_f16(bb) * (q - 16.0);
#else
    return dq_f16(bb) * q + dq_f16(bb + 2u);
#endif
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
    uint s = i / 32u, c = i / 64u, l = i % 32u, hi = (i / 32u) & 1u;
    uvec2 sm = dq_scale_min_k4(bb + 4u, s);
    uint d2 = dq_u32(bb);
    vec2 dd = unpackHalf2x16(d2);  // (d, dmin)
#if defined(WTYPE_Q4_K)
    uint v = dq_u32(bb + 16u + 32u * c + l) >> (4u * hi);
    uvec4 q = uvec4(v & 15u, (v >> 8) & 15u, (v >> 16) & 15u, (v >> 24) & 15u);
#else
    uint v = dq_u32(bb + 48u + 32u * c + l) >> (4u * hi);
    uint h = dq_u32(bb + 16u + l) >> (2u * c + hi);  // bit 2c+hi of qh[l .. l+3]
    uvec4 q = uvec4((v & 15u) | ((h & 1u) << 4), ((v >> 8) & 15u) | (((h >> 8) & 1u) << 4),
                    ((v >> 16) & 15u) | (((h >> 16) & 1u) << 4), ((v >> 24) & 15u) | (((h >> 24) & 1u) << 4));
#endif
    return dd.x * float(sm.x) * vec4(q) - dd.y * float(sm.y);
#elif defined(WTYPE_Q2_K) || defined(WTYPE_Q3_K)
    // 2-bit quants of elements i..i+3: bits 2j of qs[32 n + l .. + 3] (i = 128 n + 32 j + l)
    uint n = i / 128u, j2 = (i % 128u) / 32u, l = i % 32u, s = i / 16u;
#if defined(WTYPE_Q2_K)
    uint v = dq_w[(bb + 16u + 32u * n + l) >> 2] >> (2u * j2);  // 84-byte blocks stay word aligned
    vec4 q = vec4((uvec4(v) >> uvec4(0, 8, 16, 24)) & 3u);
    uint sc = (dq_w[(bb + (s & ~3u)) >> 2] >> (8u * (s & 3u))) & 0xffu;
    vec2 dd = unpackHalf2x16(dq_w[(bb + 80u) >> 2]);  // (d, dmin)
    return dd.x * float(sc & 15u) * q - dd.y * float(sc >> 4);
#else
    uint v = dq_u32(bb + 32u + 32u * n + l) >> (2u * j2);
    uint h = dq_u32(bb + l) >> (i / 32u);  // bit i / 32 of hmask[l .. l+3]
    vec4 q = vec4((uvec4(v) >> uvec4(0, 8, 16, 24)) & 3u) + 4.0 * vec4((uvec4(h) >> uvec4(0, 8, 16, 24)) & 1u) - 4.0;
    float sc = dq_q3k_scale(dq_u32(bb + 96u), dq_u32(bb + 100u), dq_u32(bb + 104u), s);
    return dq_f16(bb + 108u) * sc * q;
#endif
#elif defined(WTYPE_Q6_K)
    float d6 = dq_f16(bb + 208u);
    if (DQ_RP != 0u) {  // the 16-byte layout: the block's 208 bytes as they were, d apart
        d6 = dq_f16(dq_rp_d(rb, j / DQ_BLOCK));
        bb = dq_rp_q(rb, j / DQ_BLOCK);
    }
    uint half_ = i / 128u, r = i % 128u, quarter = r / 32u, l = r % 32u;
    uint v = dq_u32(bb + 64u * half_ + l + 32u * (quarter & 1u)) >> (4u * (quarter >> 1));
    uint h = dq_u32(bb + 128u + 32u * half_ + l) >> (2u * quarter);
    ivec4 q = ivec4((v & 15u) | ((h & 3u) << 4), ((v >> 8) & 15u) | (((h >> 8) & 3u) << 4),
                    ((v >> 16) & 15u) | (((h >> 16) & 3u) << 4), ((v >> 24) & 15u) | (((h >> 24) & 3u) << 4));
    uint so = bb + 192u + i / 16u;  // int8 scale of the sub-block of 16
    float sc = float(bitfieldExtract(int(dq_u16(so & ~1u)), int((so & 1u) * 8u), 8));
    return d6 * sc * vec4(q - 32);
#endif
#endif
}

// --- element j of the row starting at byte rb (any j) ---------------------------------------
float dq_get1(uint rb, uint j) {
#if defined(WTYPE_F32)
    return uintBitsToFloat(dq_w[(rb >> 2) + j]);
#elif defined(WTYPE_F16)
    return dq_f16(rb + 2u * j);
#elif defined(WTYPE_BF16)
    return uintBitsToFloat(dq_u16(rb + 2u * j) << 16);
#else
    // Every quantized block holds a multiple of 4 elements: decode the group of 4 and pick.
    vec4 v = dq_get4(rb, j & ~3u);
    return v[j & 3u];
#endif
}

#endif // VKLLM_DEQUANT_GLSL
