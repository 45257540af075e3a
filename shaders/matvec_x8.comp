#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// matvec_x8.comp - decode's matrix-vector product on GPUs with x in int8: y (NC, m) = x (NC, k) @
// W^T, W (m, k) in its GGUF encoding (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K or Q6_K: -DWTYPE_*),
// each product of 4 weight quants with 4 x quants one packed int8 dot product.
//
// x is quantized to int8 in blocks of 32 elements as ggml's q8_1 (quant_x8.glsl: d = max|x| / 127,
// q = roundEven(x / d) (as x * (1 / d)), and s = d * sum(q) for the types with an offset), either
// - by each workgroup into shared memory (the plain variants): no extra dispatch, but each
//   workgroup reads x (4 bytes an element) from the cache and quantizes it; x longer than KC
//   elements (a specialization constant, a multiple of 256) goes KC at a time; or
// - -DX_Q8: once per step by quantize_x8.comp into a buffer (binding 1, quant_x8.glsl's layout of
//   groups of 4 blocks, 1.25 bytes an element), which every lane reads directly (16-byte words,
//   neighbouring lanes neighbouring words): no shared memory, no barrier. Push constants x0 and
//   x_stride count groups there. The loop keeps KC's chunks, so each lane sums its items in the
//   same order and the products are the same bits as the plain variants'.
// runtime/ref's vkllm__ref_quantize_x8 is the host twin of the quantization.
//
// -DDOT_HW: the products are SPIR-V's OpSDot on 4x8-bit packed vectors (SPV_KHR_integer_dot_product,
// emitted through GL_EXT_spirv_intrinsics because glslang 12 lacks GL_EXT_integer_dot_product):
// only where the device offers shaderIntegerDotProduct. Without it, the same sums in 32-bit
// integer arithmetic. Both are exact, so the two variants give the same bits.
//
// Work split (specialization constants): NT lanes (the subgroup size, required with full
// subgroups by the runtime) share NR rows, walking the row's 32-element items with stride NT,
// then subgroupAdd; a workgroup has WG / NT such row groups. An item is 32 elements: one block
// (Q8_0, Q4_0, Q5_0: 34, 18 and 22 bytes, read as realigned 32-bit words; Q4_1, Q5_1: 20 and 24), one 16-byte word of a Q4_K or
// Q5_K super-block's quants (16 low nibbles of one sub-block and 16 high ones of the next; the
// 16-byte header word holds d, dmin and the 6-bit scales): neighbouring lanes read neighbouring
// 16-byte words; or a quarter of a Q6_K half (realigned words of its low and high bits).
// Rows past m are clamped (computed, not stored). NC columns (batched decode) share each weight
// item; every column's arithmetic is the one-column dispatch's, so its bits do not depend on NC:
// lane t sums the row's items t, t + NT, t + 2 NT, ... in that order whatever KC (which the
// runtime sizes by NC) cuts k into: each chunk's loop starts at the lane's first item in it.
// GLU = 1: W is gate's m rows over up's, the output silu(gate) * up (as matvec.comp's GLU).
#if defined(DOT_HW)
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot_4x8_packed(int a, int b, spirv_literal int packed_vector_format);
int dot4(uint a, uint b) { return sdot_4x8_packed(int(a), int(b), 0); }  // 0: PackedVectorFormat4x8Bit
#else
int dot4(uint a, uint b) {
    ivec4 va = ivec4(uvec4(a) << uvec4(24, 16, 8, 0)) >> 24;
    ivec4 vb = ivec4(uvec4(b) << uvec4(24, 16, 8, 0)) >> 24;
    return va.x * vb.x + va.y * vb.y + va.z * vb.z + va.w * vb.w;
}
#endif
#include "common.glsl"
#include "quant_x8.glsl"

layout(constant_id = 1) const uint NT = 32;
layout(constant_id = 2) const uint NR = 2;
layout(constant_id = 3) const uint NC = 1;
layout(constant_id = 4) const uint GLU = 0;
layout(constant_id = 5) const uint KC = 4096;

#define DQ_BINDING 0
#define DQ_W128
#include "dequant.glsl"  // dq_w, w128: W as words and as 16-byte words; DQ_LOAD_WORDS, dq_scale_min_k4_w
#if defined(X_Q8)
layout(std430, binding = 1) readonly buffer XQ { uvec4 xq[]; };  // x quantized (quant_x8.glsl) ...
layout(std430, binding = 1) readonly buffer XD { vec2 xds[]; };  // ... one buffer
#else
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };
#endif
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

// C twin: struct vkllm__pc_matvec (runtime/ops/shader_abi_matvec.h); -DMATVEC_ID: vkllm__pc_matvec_id
layout(push_constant) uniform PC {
    uint k, m, row_bytes, y0, x0, x_stride, y_stride;
#if defined(MATVEC_ID)
    uint n_expert, x_div, e0, e1;
#endif
} p;

// -DMATVEC_ID (mixture of experts): as matvec.comp's MATVEC_ID (its comment says how the ids
// binding and the chunks of experts work): NC = 1, z the column; NC > 1, z a tile of up to NC
// columns of one expert (moe.comp's MOE_GROUP layout). Each column's x is quantized as alone.
#if defined(MATVEC_ID)
layout(std430, binding = 3) readonly buffer Ids { uint ids[]; };
#endif

uint xcol[NC];  // each column's first x element (X_Q8: its first block, 4 a group)

#if defined(X_Q8)
// Block xi's quants h (elements 16 h .. 16 h + 15) and its (d, d * sum).
uvec4 x_half(uint xi, uint h) { return xq[xq8_quant_word(xi, h)]; }
vec2 x_ds(uint xi) { return xds[xq8_ds_index(xi)]; }
#else
// x quants of the chunk in two planes of 16-byte words: plane h holds quants 16 h .. 16 h + 15 of
// every block of 32 (column by column), so a lane reads a block's 32 quants as two 16-byte words and
// neighbouring lanes (neighbouring blocks) read neighbouring words: no bank conflicts (a 32-bit word
// per read at 32-byte strides was an 8-way conflict). The planes lie XP words apart, XP = 1 mod 8:
// Q4_K's lanes read plane hf of block bl (bl even, hf alternating), which XP spreads over 8
// different 16-byte bank groups per 8 lanes.
#define XP (NC * KC / 32u + 1u)
shared uvec4 sxq[2u * XP];
shared vec2 sxd[NC * KC / 32u];  // per block of 32: d and d * sum(q)

uvec4 x_half(uint xi, uint h) { return sxq[h * XP + xi]; }
vec2 x_ds(uint xi) { return sxd[xi]; }

// Quantize elements [c0, c0 + kc) of every column into shared memory (kc % 32 == 0).
void load_x(uint c0, uint kc) {
    uint nb = kc / 32u;
    for (uint i = gl_LocalInvocationID.x; i < NC * nb; i += gl_WorkGroupSize.x) {
        uint col = i / nb, b = i - col * nb;
        uint xo = (xcol[col] + c0) / 4u + 8u * b;
        vec4 v[8];
        [[unroll]] for (uint j = 0u; j < 8u; j++) v[j] = xv[xo + j];
        uint o = col * (KC / 32u) + b;
        uvec4 q0, q1;
        vec2 ds;
        quant_x8_block(v, q0, q1, ds);
        sxq[o] = q0;
        sxq[XP + o] = q1;
        sxd[o] = ds;
    }
}
#endif

// The 32 quants of block xi, 4 to a word.
void x_words(uint xi, out uint w[8]) {
    uvec4 a = x_half(xi, 0u), b = x_half(xi, 1u);
    w = uint[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
}

#if defined(WTYPE_Q4_1)
#define BLOCK_BYTES 20u
#elif defined(WTYPE_Q5_1)
#define BLOCK_BYTES 24u
#endif
// Bits 0..3 of h as the lowest bit of bytes 0..3.
uint spread4(uint h) { return (h & 1u) | (h & 2u) << 7 | (h & 4u) << 14 | (h & 8u) << 21; }

// Item g of the row at byte rb, with x item xi of the shared chunk (xi: 32-element block index
// in sxd, Q4_K: the item index, its blocks derived below).
float item_dot(uint rb, uint g, uint xi) {
#if defined(WTYPE_Q8_0)
    uint xw[8];
    x_words(xi, xw);
    int s = 0;
    if (DQ_RP != 0u) {  // the 16-byte layout (dequant.glsl): the quants two 16-byte words, d apart
        uint qo = dq_rp_q(rb, g) >> 4;
        uvec4 q0 = w128[qo], q1 = w128[qo + 1u];
        [[unroll]] for (uint i = 0u; i < 4u; i++) s += dot4(q0[i], xw[i]) + dot4(q1[i], xw[4u + i]);
        return dq_f16(dq_rp_d(rb, g)) * x_ds(xi).x * float(s);
    }
    uint a[9];
    DQ_LOAD_WORDS(a, rb + g * 34u, 9u);  // a[0] = d | qs0..1 (realigned: the block's first 36 bytes)
    float d = unpackHalf2x16(a[0]).x;
    [[unroll]] for (uint i = 0u; i < 8u; i++) s += dot4((a[i] >> 16) | (a[i + 1u] << 16), xw[i]);
    return d * x_ds(xi).x * float(s);
#elif defined(WTYPE_Q4_0)
    if (DQ_RP != 0u) {  // the 16-byte layout: the quants one 16-byte word, d apart
        uvec4 q = w128[dq_rp_q(rb, g) >> 4];
        uint xw[8];
        x_words(xi, xw);
        int s = 0;
        [[unroll]] for (uint i = 0u; i < 4u; i++)
            s += dot4(q[i] & 0x0f0f0f0fu, xw[i]) + dot4((q[i] >> 4) & 0x0f0f0f0fu, xw[4u + i]);
        vec2 xd = x_ds(xi);
        return dq_f16(dq_rp_d(rb, g)) * (xd.x * float(s) - 8.0 * xd.y);
    }
    uint a[5];
    DQ_LOAD_WORDS(a, rb + g * 18u, 5u);
    float d = unpackHalf2x16(a[0]).x;
    uint xw[8];
    x_words(xi, xw);
    int s = 0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint q = (a[i] >> 16) | (a[i + 1u] << 16);  // byte b: element b (low nibble), 16 + b (high)
        s += dot4(q & 0x0f0f0f0fu, xw[i]) + dot4((q >> 4) & 0x0f0f0f0fu, xw[4u + i]);
    }
    vec2 xd = x_ds(xi);
    return d * (xd.x * float(s) - 8.0 * xd.y);
#elif defined(WTYPE_Q4_1) || defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
    // d * q + m (Q4_1, Q5_1: 20- and 24-byte blocks, word aligned), d * (q - 16) (Q5_0: 22 bytes);
    // Q5_*: bit j of qh is the fifth bit of element j, bit 16 + j that of element 16 + j
#if defined(WTYPE_Q5_0)
    vec2 dm;
    uint qh, q[4];
    if (DQ_RP != 0u) {  // the 16-byte layout: the quants one 16-byte word, qh and d apart
        uvec4 qv = w128[dq_rp_q(rb, g) >> 4];
        q = uint[4](qv.x, qv.y, qv.z, qv.w);
        qh = dq_w[dq_rp_qh(rb, g) >> 2];
        dm = vec2(dq_f16(dq_rp_d(rb, g)), 0.0);
    } else {
        uint a[6];
        DQ_LOAD_WORDS(a, rb + g * 22u, 6u);  // d | qh lo, qh hi | qs0..1, ...
        dm = vec2(unpackHalf2x16(a[0]).x, 0.0);
        qh = (a[0] >> 16) | (a[1] << 16);
        [[unroll]] for (uint i = 0u; i < 4u; i++) q[i] = (a[i + 1u] >> 16) | (a[i + 2u] << 16);
    }
#else
    uint o = (rb + g * BLOCK_BYTES) >> 2;
    vec2 dm = unpackHalf2x16(dq_w[o]);
#if defined(WTYPE_Q5_1)
    uint qh = dq_w[o + 1u], q[4];
    [[unroll]] for (uint i = 0u; i < 4u; i++) q[i] = dq_w[o + 2u + i];
#else
    uint q[4];
    [[unroll]] for (uint i = 0u; i < 4u; i++) q[i] = dq_w[o + 1u + i];
#endif
#endif
    uint xw[8];
    x_words(xi, xw);
    int s = 0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint lo = q[i] & 0x0f0f0f0fu, hi = (q[i] >> 4) & 0x0f0f0f0fu;
#if !defined(WTYPE_Q4_1)
        lo |= spread4(qh >> (4u * i)) << 4;
        hi |= spread4(qh >> (16u + 4u * i)) << 4;
#endif
        s += dot4(lo, xw[i]) + dot4(hi, xw[4u + i]);
    }
    vec2 xd = x_ds(xi);
#if defined(WTYPE_Q5_0)
    return dm.x * (xd.x * float(s) - 16.0 * xd.y);
#else
    return dm.x * xd.x * float(s) + dm.y * xd.y;
#endif
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
    // Super-block g / 8 in 16-byte words: the header (d, dmin, the 6-bit scales and mins), Q5_K's
    // two words of fifth bits, the quants; quant word t = g % 8: group c = t / 2 of 64 elements,
    // half hf: elements 16 hf .. of sub-blocks 2c (low nibbles) and 2c + 1 (high). Q5_K: qh byte i
    // holds the fifth bit of element 64 c + i at bit 2c, of 64 c + 32 + i at bit 2c + 1.
    uint t = g & 7u, c = t >> 1, hf = t & 1u;
#if defined(WTYPE_Q4_K)
    uint tb = rb / 16u + (g >> 3) * 9u;
    uvec4 h = w128[tb], q = w128[tb + 1u + t];
#else
    uint tb = rb / 16u + (g >> 3) * 11u;
    uvec4 h = w128[tb], qh = w128[tb + 1u + hf], q = w128[tb + 3u + t];
#endif
    vec2 dd = unpackHalf2x16(h.x);
    uint s0 = 2u * c;  // (scale, min) of sub-blocks 2c and 2c + 1 from scales[0..11]
    uvec2 sm0 = dq_scale_min_k4_w(h.y, h.z, h.w, s0), sm1 = dq_scale_min_k4_w(h.y, h.z, h.w, s0 + 1u);
    uint bl = (xi >> 3) * 8u + s0;  // x blocks of the two sub-blocks: bl, bl + 1
    uvec4 xlq = x_half(bl, hf), xhq = x_half(bl + 1u, hf);  // their quants 16 hf ..
    int il = 0, ih = 0;
    [[unroll]] for (uint w = 0u; w < 4u; w++) {
        uint lo = q[w] & 0x0f0f0f0fu, hi = (q[w] >> 4) & 0x0f0f0f0fu;
#if defined(WTYPE_Q5_K)
        lo |= ((qh[w] >> s0) & 0x01010101u) << 4;
        hi |= ((qh[w] >> (s0 + 1u)) & 0x01010101u) << 4;
#endif
        il += dot4(lo, xlq[w]);
        ih += dot4(hi, xhq[w]);
    }
    vec2 xl = x_ds(bl), xh = x_ds(bl + 1u);
    float r = dd.x * (float(sm0.x) * xl.x * float(il) + float(sm1.x) * xh.x * float(ih));
    // the offsets once per sub-block pair: by the item of the first half
    return hf == 0u ? r - dd.y * (float(sm0.y) * xl.y + float(sm1.y) * xh.y) : r;
#elif defined(WTYPE_Q6_K)
    // Super-block g / 8, item j = g % 8: quarter j % 4 of half j / 4 (dequant.glsl's dq_q6k_quarter)
    uint j = g & 7u, qt = j & 3u, ql[8], qh[8], sw[1];
    uint so = dq_q6k_quarter(rb, g >> 3, j >> 2, qt, ql, qh) + 192u + 8u * (j >> 2) + 2u * qt;
    if (DQ_RP != 0u) sw[0] = dq_u32(so);  // its two scales in the low half
    else DQ_LOAD_WORDS(sw, so, 1u);
    uint db = dq_q6k_d(rb, g >> 3);
    uint xw[8];
    x_words(xi, xw);
    int s[2] = int[2](0, 0), xs[2] = int[2](0, 0);
    [[unroll]] for (uint w = 0u; w < 8u; w++) {
        uint v = ((ql[w] >> (4u * (qt >> 1))) & 0x0f0f0f0fu) | (((qh[w] >> (2u * qt)) & 0x03030303u) << 4);
        s[w >> 2] += dot4(v, xw[w]);
        xs[w >> 2] += dot4(0x01010101u, xw[w]);  // for the - 32
    }
    int sa = bitfieldExtract(int(sw[0]), 0, 8), sb = bitfieldExtract(int(sw[0]), 8, 8);
    return dq_f16(db) * x_ds(xi).x * float(sa * (s[0] - 32 * xs[0]) + sb * (s[1] - 32 * xs[1]));
#endif
}

#if defined(X_Q8)
#define XCOL(g) (4u * (g))  // x0 and x_stride count groups of 4 blocks
#else
#define XCOL(e) (e)
#endif

void main() {
    uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint lane = t % NT;
    uint row0 = (wg * (gl_WorkGroupSize.x / NT) + t / NT) * NR;
    uint ycol[NC];  // each column's y index of row 0
#if defined(MATVEC_ID)
    uint expert, ncol = 1u;
    if (NC == 1u) {
        uint col = gl_WorkGroupID.z;
        expert = ids[col];
        xcol[0] = XCOL(p.x0 + (col / p.x_div) * p.x_stride);
        ycol[0] = p.y0 + col * p.y_stride;
    } else {
        uint tile = gl_WorkGroupID.z;
        if (tile >= ids[0]) return;  // uniform: past the tiles this batch has
        expert = ids[4u + 4u * tile];
        uint first = ids[4u + 4u * tile + 1u], ob = 4u + 4u * gl_NumWorkGroups.z;
        ncol = ids[4u + 4u * tile + 2u];
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            uint col = ids[ob + first + min(c, ncol - 1u)];  // past ncol: the last again, not stored
            xcol[c] = XCOL(p.x0 + (col / p.x_div) * p.x_stride);
            ycol[c] = p.y0 + col * p.y_stride;
        }
    }
    bool valid = expert < p.n_expert;
    if (valid ? expert < p.e0 || expert >= p.e1 : p.e0 != 0u) return;  // uniform: another chunk's
    uint eo = (valid ? expert - p.e0 : 0u) * p.m * p.row_bytes;         // the expert's first row
#else
    const bool valid = true;
    const uint eo = 0u, ncol = NC;
    [[unroll]] for (uint c = 0u; c < NC; c++) xcol[c] = XCOL(p.x0 + c * p.x_stride), ycol[c] = p.y0 + c * p.y_stride;
#endif
    uint rb[NR];
    float acc[NC][NR], acc2[NC][NR];  // acc2: GLU's up rows
    [[unroll]] for (uint r = 0u; r < NR; r++) rb[r] = eo + min(row0 + r, p.m - 1u) * p.row_bytes;
    [[unroll]] for (uint c = 0u; c < NC; c++)
        [[unroll]] for (uint r = 0u; r < NR; r++) acc[c][r] = 0.0, acc2[c][r] = 0.0;
    for (uint c0 = 0u; c0 < p.k; c0 += KC) {
        uint kc = min(KC, p.k - c0), items = kc / 32u;
#if !defined(X_Q8)
        barrier();  // the previous chunk is read
        load_x(c0, kc);
        barrier();
#endif
        // the lane's items continue from the previous chunk's (c0 / 32 need not be a multiple of NT)
        for (uint it = (lane + NT - (c0 / 32u) % NT) % NT; it < items; it += NT) {
            uint g = c0 / 32u + it;
            [[unroll]] for (uint c = 0u; c < NC; c++) {
#if defined(X_Q8)
                uint xi = xcol[c] + g;
#else
                uint xi = c * (KC / 32u) + it;
#endif
                [[unroll]] for (uint r = 0u; r < NR; r++) acc[c][r] += item_dot(rb[r], g, xi);
                if (GLU != 0u) {
                    [[unroll]] for (uint r = 0u; r < NR; r++) acc2[c][r] += item_dot(rb[r] + p.m * p.row_bytes, g, xi);
                }
            }
        }
    }
    [[unroll]] for (uint c = 0u; c < NC; c++) {
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            float g = subgroupAdd(acc[c][r]);
            float u = GLU != 0u ? subgroupAdd(acc2[c][r]) : 0.0;
            if (lane == 0u && c < ncol && row0 + r < p.m)
                y[ycol[c] + row0 + r] = !valid ? 0.0 : GLU != 0u ? g / (1.0 + exp(-g)) * u : g;
        }
    }
}
