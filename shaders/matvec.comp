#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
// matvec.comp - decode's matrix-vector product y (m,) = W (m, k) @ x (k,), W in its GGUF
// encoding (one WTYPE_* define per variant, see dequant.glsl), dequantized as it is read.
//
// Work split (specialization constants, chosen per device by runtime/ops/ops_matvec.c):
//   NT  invocations that share a row group; they walk the row's "units" (UNIT elements: one
//       block, a K-quant sub-block or quarter of 32, or 16 plain elements) with stride NT, so on a GPU
//       neighbouring invocations read neighbouring bytes (coalesced), then reduce with
//       subgroupAdd (-DSG_REDUCE=1, when NT is the subgroup size) or through shared memory.
//       NT = 1 (CPU devices such as lavapipe): one invocation per row group, no reduction,
//       and the x reads are uniform across the subgroup.
//   NR  rows per invocation: each x unit loaded is used for NR rows.
// A workgroup covers (WG / NT) * NR rows. Rows past the end are clamped (computed twice, not
// written), so control flow stays uniform.
//
// Weights are read as 32-bit words; blocks whose size is 2 mod 4 bytes (Q8_0, Q4_0, Q5_0,
// Q6_K, F16/BF16 rows) are re-aligned in registers, MXFP4's 17-byte ones byte by byte. The weight binding must cover whole words
// (runtime/ops/ops_matvec.c binds ranges rounded up to 4 bytes). Exceptions: F16/BF16 rows that
// start 16-byte aligned (A16) and Q8_0/Q4_0/Q5_0/Q6_K rows repacked at load into the 16-byte layout
// (DQ_RP, dequant.glsl) are read as 16-byte words.
#if defined(SG_REDUCE)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "common.glsl"
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0) || defined(WTYPE_Q5_0) || defined(WTYPE_Q6_K)
#define DQ_RP_TYPE 1  // DQ_RP (constant 7) = 1: rows in the 16-byte layout (dequant.glsl), quants read as 16-byte words
#else
#define DQ_RP_TYPE 0
#endif
#define DQ_BINDING 0
#if defined(WTYPE_F16) || defined(WTYPE_BF16) || DQ_RP_TYPE
#define DQ_W128  // W as 16-byte words too (w128)
#endif
#include "dequant.glsl"

layout(constant_id = 1) const uint NT = 1;
layout(constant_id = 2) const uint NR = 2;
// XS > 0 (with NT = 1 and -DSG_REDUCE): the subgroup size. The lanes of a subgroup then load x
// together, each a different XS-th of the unit, and pass it around with subgroupShuffle (a
// broadcast from a lane the loop computes: SPIR-V 1.3, what Vulkan 1.1 takes, allows broadcasts
// from constant lanes only): one load per lane instead of every lane loading all of it (on
// lavapipe each lane's load costs the same whether or not the address is uniform).
layout(constant_id = 3) const uint XS = 0;
// NC columns (x vectors) per dispatch: each weight unit loaded is used for all of them (batched
// decode). Every column goes through exactly the arithmetic of a one-column dispatch, in the same
// order, so its result is bit-identical whatever NC is.
layout(constant_id = 4) const uint NC = 1;
// GLU = 1 (one column): W is gate's rows stacked over up's (2 m rows, the up row of row r at r +
// m); each invocation takes both rows of its NR, with exactly the arithmetic of two separate rows,
// and stores silu(gate) * up as silu_mul.comp does: the feed-forward's gate/up products and the
// SiLU in one dispatch.
layout(constant_id = 5) const uint GLU = 0;
// A16 = 1 (F16, BF16): every row and the binding start 16-byte aligned (the runtime checks); a
// unit (16 elements, 32 bytes) is then read as two 16-byte words, neighbouring lanes reading
// neighbouring words; 0: as 32-bit words, realigned where a row starts 2 bytes into one.
layout(constant_id = 6) const uint A16 = 0;

layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };   // (k,) as vec4 (k % 4 == 0) ...
layout(std430, binding = 1) readonly buffer Xs { float xs[]; }; // ... or as floats (tail)
layout(std430, binding = 2) writeonly buffer Y { float y[]; };  // (y0 + m,)

// C twin: struct vkllm__pc_matvec (runtime/ops/shader_abi_matvec.h); -DMATVEC_ID: vkllm__pc_matvec_id
layout(push_constant) uniform PC {
    uint k;          // elements per row
    uint m;          // rows in this dispatch (one chunk of W; MATVEC_ID: of one expert)
    uint row_bytes;  // bytes per row
    uint y0;         // y index of the chunk's first row (first column)
    uint x0;         // x index of the first column's first element (a multiple of 4)
    uint x_stride;   // x elements from one column to the next (a multiple of 4)
    uint y_stride;   // y elements from one column to the next
#if defined(MATVEC_ID)
    uint n_expert;   // experts stacked in W
    uint x_div;      // columns that share one x vector
    uint e0, e1;     // the experts bound: W's binding starts at expert e0
#endif
} p;

// MATVEC_ID (mixture of experts): W holds n_expert matrices of m rows one after another; column c
// multiplies expert ids[c] (a zero column for an id past n_expert) with x vector c / x_div, into y
// column c. GLU = 0. Each column reads only its expert's rows, with exactly the arithmetic of a
// plain matvec of that expert.
// W larger than one binding is bound in chunks of whole experts [e0, e1), one dispatch each: a
// workgroup whose expert is not bound leaves at once (ids past n_expert: zeros by the chunk of e0 = 0).
//   NC = 1: the dispatch's z is the column.
//   NC > 1 (columns grouped by expert, prefill): the ids binding holds moe.comp's MOE_GROUP
//     output: [0] the number of tiles, tile t at 4 + 4t (expert, first, count <= NC), then from
//     4 + 4 * (tiles the dispatch has room for: its z) the columns ordered by expert. z is the
//     tile: its up to NC columns share each weight unit loaded, as batched decode's columns do.
#if defined(MATVEC_ID)
layout(std430, binding = 3) readonly buffer Ids { uint ids[]; };
#endif

#if defined(WTYPE_F32) || defined(WTYPE_F16) || defined(WTYPE_BF16)
#define UNIT 16u
#else
#define UNIT 32u
#endif

vec4 xq[UNIT / 4];  // x of the current unit
float xsum;         // sum of x over the unit (for the types with an offset)

// Nibbles and bytes of a word as floats.
vec4 lo4(uint v) { return vec4((uvec4(v) >> uvec4(0, 8, 16, 24)) & 15u); }
vec4 hi4(uint v) { return vec4((uvec4(v) >> uvec4(4, 12, 20, 28)) & 15u); }
vec4 s8(uint v) { return vec4(ivec4(uvec4(v) << uvec4(24, 16, 8, 0)) >> 24); }
// Bit b of each byte of a word, times 16.
vec4 bit16(uint v, uint b) { return vec4(((uvec4(v) >> (uvec4(0, 8, 16, 24) + b)) & 1u) << 4); }

// Dot product of unit u of the row starting at byte rb with xq.
float unit_dot(uint rb, uint u) {
#if defined(WTYPE_F32)
    uint o = (rb >> 2) + u * 16u;  // word aligned: the compilers merge these into 16-byte loads
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++)
        s += dot(uintBitsToFloat(uvec4(dq_w[o + 4u * i], dq_w[o + 4u * i + 1u], dq_w[o + 4u * i + 2u],
                                       dq_w[o + 4u * i + 3u])), xq[i]);
    return s;
#elif defined(WTYPE_F16) || defined(WTYPE_BF16)
    uint a[8];
    if (A16 != 0u) {
        uint o = (rb >> 4) + u * 2u;
        uvec4 a0 = w128[o], a1 = w128[o + 1u];
        a = uint[8](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
    } else {
        DQ_LOAD_WORDS(a, rb + u * 32u, 8u);
    }
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
#if defined(WTYPE_F16)
        vec4 w = vec4(unpackHalf2x16(a[2u * i]), unpackHalf2x16(a[2u * i + 1u]));
#else
        vec4 w = uintBitsToFloat(uvec4(a[2u * i] << 16, a[2u * i] & 0xffff0000u, a[2u * i + 1u] << 16,
                                       a[2u * i + 1u] & 0xffff0000u));
#endif
        s += dot(w, xq[i]);
    }
    return s;
#elif defined(WTYPE_Q8_0)
    if (DQ_RP != 0u) {  // the 16-byte layout: the quants two 16-byte words, d apart
        uint qo = dq_rp_q(rb, u) >> 4;
        uvec4 a0 = w128[qo], a1 = w128[qo + 1u];
        uint a[8] = uint[8](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
        float s = 0.0;
        [[unroll]] for (uint i = 0u; i < 8u; i++) s += dot(s8(a[i]), xq[i]);
        return dq_f16(dq_rp_d(rb, u)) * s;
    }
    // 34 bytes: d, qs[32]. Realign on the quants: 9 loads.
    uint bb = rb + u * 34u;
    uint w0 = bb >> 2;
    bool mis = (bb & 2u) != 0u;  // block starts 2 bytes into a word: quants are word aligned
    uint a0 = dq_w[w0];
    float d = unpackHalf2x16(mis ? a0 >> 16 : a0).x;
    float s = 0.0;
    uint prev = a0;
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint nx = dq_w[w0 + i + 1u];
        s += dot(s8(mis ? nx : (prev >> 16) | (nx << 16)), xq[i]);
        prev = nx;
    }
    return d * s;
#elif defined(WTYPE_IQ4_NL)
    // as Q4_0's 18 bytes, each nibble an index into the 16 levels
    uint bb = rb + u * 18u;
    uint a[5];
    DQ_LOAD_WORDS(a, bb, 5u);
    float d = unpackHalf2x16(a[0]).x;
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint q = (a[i] >> 16) | (a[i + 1u] << 16);
        s += dot(dq_iq4nl4(q), xq[i]) + dot(dq_iq4nl4(q >> 4), xq[4u + i]);
    }
    return d * s;
#elif defined(WTYPE_MXFP4)
    // 17 bytes: e, qs[16], at any byte offset
    uint bb = rb + u * 17u;
    float d = dq_mxfp4_scale(bb);
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint q = dq_u32_any(bb + 1u + 4u * i);
        s += dot(dq_mxfp4_4(q), xq[i]) + dot(dq_mxfp4_4(q >> 4), xq[4u + i]);
    }
    return d * s;
#elif defined(WTYPE_IQ4_XS)
    // unit u: sub-block u % 8 of block u / 8 (136 bytes, word aligned); its 16 bytes at 8 + 16 ib
    uint bb = rb + (u >> 3) * 136u, ib = u & 7u;
    float d = dq_iq4xs_scale(bb, ib);
    uint o = (bb + 8u + 16u * ib) >> 2;
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint q = dq_w[o + i];
        s += dot(dq_iq4nl4(q), xq[i]) + dot(dq_iq4nl4(q >> 4), xq[4u + i]);
    }
    return d * s;
#elif defined(WTYPE_Q4_0) || defined(WTYPE_Q5_0)
    if (DQ_RP != 0u) {  // the 16-byte layout: the quants one 16-byte word, qh and d apart
        uvec4 q = w128[dq_rp_q(rb, u) >> 4];
        float d = dq_f16(dq_rp_d(rb, u));
        float s = 0.0;
#if defined(WTYPE_Q4_0)
        [[unroll]] for (uint i = 0u; i < 4u; i++) s += dot(lo4(q[i]), xq[i]) + dot(hi4(q[i]), xq[4u + i]);
        return d * (s - 8.0 * xsum);
#else
        uint qh = dq_w[dq_rp_qh(rb, u) >> 2];
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            uint hl = qh >> (4u * i), hh = qh >> (16u + 4u * i);
            vec4 bl = vec4((uvec4(hl) >> uvec4(0, 1, 2, 3)) & 1u) * 16.0;
            vec4 bh = vec4((uvec4(hh) >> uvec4(0, 1, 2, 3)) & 1u) * 16.0;
            s += dot(lo4(q[i]) + bl, xq[i]) + dot(hi4(q[i]) + bh, xq[4u + i]);
        }
        return d * (s - 16.0 * xsum);
#endif
    }
#if defined(WTYPE_Q4_0)
    uint bb = rb + u * 18u;
    uint a[5];
    DQ_LOAD_WORDS(a, bb, 5u);  // a[0] = d | qs0..1, a[1..4]: the rest, shifted by 2 bytes
    float d = unpackHalf2x16(a[0]).x;
    uint q[4];
    [[unroll]] for (uint i = 0u; i < 4u; i++) q[i] = (a[i] >> 16) | (a[i + 1u] << 16);
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) s += dot(lo4(q[i]), xq[i]) + dot(hi4(q[i]), xq[4u + i]);
    return d * (s - 8.0 * xsum);
#else
    uint bb = rb + u * 22u;
    uint a[6];
    DQ_LOAD_WORDS(a, bb, 6u);  // d | qh lo, qh hi | qs0..1, ...
    float d = unpackHalf2x16(a[0]).x;
    uint qh = (a[0] >> 16) | (a[1] << 16);
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint q = (a[i + 1u] >> 16) | (a[i + 2u] << 16);
        uint hl = qh >> (4u * i), hh = qh >> (16u + 4u * i);
        vec4 bl = vec4((uvec4(hl) >> uvec4(0, 1, 2, 3)) & 1u) * 16.0;
        vec4 bh = vec4((uvec4(hh) >> uvec4(0, 1, 2, 3)) & 1u) * 16.0;
        s += dot(lo4(q) + bl, xq[i]) + dot(hi4(q) + bh, xq[4u + i]);
    }
    return d * (s - 16.0 * xsum);
#endif
#elif defined(WTYPE_Q4_1) || defined(WTYPE_Q5_1)
#if defined(WTYPE_Q4_1)
    uint o = (rb + u * 20u) >> 2;  // 20-byte blocks of word-aligned rows stay aligned
    vec2 dm = unpackHalf2x16(dq_w[o]);
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint q = dq_w[o + 1u + i];
        s += dot(lo4(q), xq[i]) + dot(hi4(q), xq[4u + i]);
    }
#else
    uint o = (rb + u * 24u) >> 2;
    vec2 dm = unpackHalf2x16(dq_w[o]);
    uint qh = dq_w[o + 1u];
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        uint q = dq_w[o + 2u + i];
        uint hl = qh >> (4u * i), hh = qh >> (16u + 4u * i);
        vec4 bl = vec4((uvec4(hl) >> uvec4(0, 1, 2, 3)) & 1u) * 16.0;
        vec4 bh = vec4((uvec4(hh) >> uvec4(0, 1, 2, 3)) & 1u) * 16.0;
        s += dot(lo4(q) + bl, xq[i]) + dot(hi4(q) + bh, xq[4u + i]);
    }
#endif
    return dm.x * s + dm.y * xsum;
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
    // Unit = sub-block b (32 elements) of a super-block: the low (b even) or high nibbles of the
    // 32 quant bytes of group b / 2. (Two sub-blocks as the unit spilled on AMD's GFX11 at two
    // columns.)
    uint sb = u & 7u, c = sb >> 1, hi = sb & 1u;
#if defined(WTYPE_Q4_K)
    uint o = (rb + (u >> 3) * 144u) >> 2;  // 144-byte blocks stay word aligned
    uint qo = o + 4u + 8u * c;
#else
    uint o = (rb + (u >> 3) * 176u) >> 2;
    uint qo = o + 12u + 8u * c;
#endif
    vec2 dd = unpackHalf2x16(dq_w[o]);
    uvec2 sm = dq_scale_min_k4_w(dq_w[o + 1u], dq_w[o + 2u], dq_w[o + 3u], sb);  // scales[0..11]
    float sq = 0.0, sx = 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint q = dq_w[qo + i] >> (4u * hi);
#if defined(WTYPE_Q4_K)
        sq += dot(lo4(q), xq[i]);
#else
        sq += dot(lo4(q) + bit16(dq_w[o + 4u + i], sb), xq[i]);  // qh[4i .. 4i+3], bit sb
#endif
        sx += dot(xq[i], vec4(1.0));
    }
    return dd.x * float(sm.x) * sq - dd.y * float(sm.y) * sx;
#elif defined(WTYPE_Q2_K) || defined(WTYPE_Q3_K)
    // Unit = quarter j (32 elements) of half n of a super-block. Element 4 i + b of the quarter is
    // bits 2j of byte b of qs word 8 n + i; its sub-block of 16 is 8 n + 2 j + i / 4. (A half as
    // the unit held 128 floats of x per lane: AMD's compiler spilled them at three columns.)
    uint j = u & 3u, n = (u >> 2) & 1u;
#if defined(WTYPE_Q2_K)
    uint o = (rb + (u >> 3) * 84u) >> 2;  // 84-byte blocks stay word aligned
    vec2 dd = unpackHalf2x16(dq_w[o + 20u]);  // (d, dmin)
    uint sw = dq_w[o + 2u * n + (j >> 1u)];  // scales[8n + 4 (j >> 1) ..]: this quarter's two at 2 (j & 1)
    uint qw[8];
    [[unroll]] for (uint i = 0u; i < 8u; i++) qw[i] = dq_w[o + 4u + 8u * n + i];
    float s = 0.0, mn = 0.0;
#else
    uint bb = rb + (u >> 3) * 110u;
    uint qw[8], hw[8], sw[3];
    DQ_LOAD_WORDS(qw, bb + 32u + 32u * n, 8u);
    DQ_LOAD_WORDS(hw, bb, 8u);  // hmask: bit 4 n + j of byte l
    DQ_LOAD_WORDS(sw, bb + 96u, 3u);
    float s = 0.0;
#endif
    [[unroll]] for (uint half16 = 0u; half16 < 2u; half16++) {
        float part = 0.0, xs = 0.0;
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            uint li = 4u * half16 + i;
            vec4 q = vec4((uvec4(qw[li] >> (2u * j)) >> uvec4(0, 8, 16, 24)) & 3u);
#if defined(WTYPE_Q3_K)
            q += 4.0 * vec4((uvec4(hw[li] >> (4u * n + j)) >> uvec4(0, 8, 16, 24)) & 1u) - 4.0;
#else
            xs += dot(xq[li], vec4(1.0));
#endif
            part += dot(q, xq[li]);
        }
#if defined(WTYPE_Q2_K)
        uint sc = (sw >> (8u * (2u * (j & 1u) + half16))) & 0xffu;
        s += float(sc & 15u) * part;
        mn += float(sc >> 4) * xs;
#else
        s += dq_q3k_scale(sw[0], sw[1], sw[2], 8u * n + 2u * j + half16) * part;
#endif
    }
#if defined(WTYPE_Q2_K)
    return dd.x * s - dd.y * mn;
#else
    return dq_f16(bb + 108u) * s;
#endif
#elif defined(WTYPE_Q6_K)
    // Unit = quarter qt (32 elements) of half h of a super-block: ql[64h + 32 (qt & 1) ..] nibble
    // qt >> 1, qh[32h ..] bits 2 qt, scales[8h + 2 qt ..]. Element l of the quarter is byte l of
    // those. (A half as the unit held 128 floats of x per lane: spilled on AMD at three columns.)
    uint qt = u & 3u, h = (u >> 2) & 1u, ql[8], qh[8], sw[1];
    uint so = dq_q6k_quarter(rb, u >> 3, h, qt, ql, qh) + 192u + 8u * h + 4u * (qt >> 1u);
    if (DQ_RP != 0u) sw[0] = dq_w[so >> 2];  // scales 2 qt, 2 qt + 1 at bytes 2 (qt & 1) ..
    else DQ_LOAD_WORDS(sw, so, 1u);
    float d = dq_f16(dq_q6k_d(rb, u >> 3));
    float s = 0.0;
    [[unroll]] for (uint half16 = 0u; half16 < 2u; half16++) {  // sub-block of 16: scale 2qt + half16
        float part = 0.0;
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            uint li = 4u * half16 + i;  // word of l / 4
            uint v = ql[li] >> (4u * (qt >> 1));
            uint hv = qh[li] >> (2u * qt);
            vec4 q = vec4((uvec4(v) >> uvec4(0, 8, 16, 24)) & 15u) +
                     vec4(((uvec4(hv) >> uvec4(0, 8, 16, 24)) & 3u) << 4) - 32.0;
            part += dot(q, xq[li]);
        }
        uint si = 2u * (qt & 1u) + half16;
        float scl = float(bitfieldExtract(int(sw[0]), int(8u * si), 8));
        s += scl * part;
    }
    return d * s;
#endif
}

shared float red[(GLU + 1u) * NR * gl_WorkGroupSize.x];  // the shared-memory reduction

void main() {
    uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint lane = t % NT;
    uint row0 = (wg * (gl_WorkGroupSize.x / NT) + t / NT) * NR;
    uint xcol[NC], ycol[NC];  // each column's first x element and y index
#if defined(MATVEC_ID)
    uint expert, ncol = 1u;
    if (NC == 1u) {
        uint col = gl_WorkGroupID.z;
        expert = ids[col];
        xcol[0] = p.x0 + (col / p.x_div) * p.x_stride;
        ycol[0] = p.y0 + col * p.y_stride;
    } else {
        uint tile = gl_WorkGroupID.z;
        if (tile >= ids[0]) return;  // uniform: past the tiles this batch has
        expert = ids[4u + 4u * tile];
        uint first = ids[4u + 4u * tile + 1u], ob = 4u + 4u * gl_NumWorkGroups.z;
        ncol = ids[4u + 4u * tile + 2u];
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            uint col = ids[ob + first + min(c, ncol - 1u)];  // past ncol: the last again, not stored
            xcol[c] = p.x0 + (col / p.x_div) * p.x_stride;
            ycol[c] = p.y0 + col * p.y_stride;
        }
    }
    bool valid = expert < p.n_expert;
    if (valid ? expert < p.e0 || expert >= p.e1 : p.e0 != 0u) return;  // uniform: another chunk's
    uint eo = (valid ? expert - p.e0 : 0u) * p.m * p.row_bytes;  // the expert's first row in the binding
#else
    const bool valid = true;
    const uint eo = 0u, ncol = NC;
    [[unroll]] for (uint c = 0u; c < NC; c++) xcol[c] = p.x0 + c * p.x_stride, ycol[c] = p.y0 + c * p.y_stride;
#endif
    uint rb[NR], rb2[NR];
    float acc[NC][NR], acc2[NR];  // acc2: GLU's up rows
    [[unroll]] for (uint r = 0u; r < NR; r++) rb[r] = eo + min(row0 + r, p.m - 1u) * p.row_bytes;
    [[unroll]] for (uint r = 0u; r < NR; r++) rb2[r] = rb[r] + p.m * p.row_bytes;
    [[unroll]] for (uint c = 0u; c < NC; c++)
        [[unroll]] for (uint r = 0u; r < NR; r++) acc[c][r] = 0.0;
    [[unroll]] for (uint r = 0u; r < NR; r++) acc2[r] = 0.0;
    uint nu = p.k / UNIT;
    for (uint u = lane; u < nu; u += NT) {
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            uint xc = xcol[c];  // this column's first element
#if defined(SG_REDUCE)
            if (NT == 1u && XS > 0u && gl_SubgroupSize == XS) {
                float xl[UNIT / (XS > 0u ? XS : 1u)];
                uint xe = xc + u * UNIT + gl_SubgroupInvocationID;
                [[unroll]] for (uint i = 0u; i < UNIT / XS; i++) xl[i] = xs[xe + i * XS];
                [[unroll]] for (uint i = 0u; i < UNIT / 4u; i++) {
                    [[unroll]] for (uint e4 = 0u; e4 < 4u; e4++) {
                        uint e = 4u * i + e4;
                        xq[i][e4] = subgroupShuffle(xl[e / XS], e % XS);
                    }
                }
            } else
#endif
            {
                uint xo = (xc >> 2) + u * (UNIT / 4u);
                [[unroll]] for (uint i = 0u; i < UNIT / 4u; i++) xq[i] = xv[xo + i];
            }
#if defined(WTYPE_Q4_0) || defined(WTYPE_Q5_0) || defined(WTYPE_Q4_1) || defined(WTYPE_Q5_1)
            vec4 xs4 = vec4(0.0);
            [[unroll]] for (uint i = 0u; i < UNIT / 4u; i++) xs4 += xq[i];
            xsum = dot(xs4, vec4(1.0));
#endif
            [[unroll]] for (uint r = 0u; r < NR; r++) acc[c][r] += unit_dot(rb[r], u);
            if (GLU != 0u) {
                [[unroll]] for (uint r = 0u; r < NR; r++) acc2[r] += unit_dot(rb2[r], u);
            }
        }
    }
#if defined(WTYPE_F32) || defined(WTYPE_F16) || defined(WTYPE_BF16)
    // plain types: the k % UNIT elements after the last unit
    for (uint e = nu * UNIT + lane; e < p.k; e += NT) {
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            float xe = xs[xcol[c] + e];
            [[unroll]] for (uint r = 0u; r < NR; r++) acc[c][r] += dq_get1(rb[r], e) * xe;
            if (GLU != 0u) {
                [[unroll]] for (uint r = 0u; r < NR; r++) acc2[r] += dq_get1(rb2[r], e) * xe;
            }
        }
    }
#endif
    [[unroll]] for (uint c = 0u; c < NC; c++) {
        if (NT > 1u) {
#if defined(SG_REDUCE)
            // A row group is one subgroup when the device runs this shader at the subgroup size it
            // reported; otherwise (some drivers pick another size per shader) go through memory.
            if (gl_SubgroupSize == NT) {
                [[unroll]] for (uint r = 0u; r < NR; r++) acc[c][r] = subgroupAdd(acc[c][r]);
                if (GLU != 0u) {
                    [[unroll]] for (uint r = 0u; r < NR; r++) acc2[r] = subgroupAdd(acc2[r]);
                }
            } else
#endif
            {
                const uint NV = (GLU + 1u) * NR;  // values per invocation: its rows (and up rows)
                [[unroll]] for (uint r = 0u; r < NR; r++) red[r * gl_WorkGroupSize.x + t] = acc[c][r];
                if (GLU != 0u) {
                    [[unroll]] for (uint r = 0u; r < NR; r++) red[(NR + r) * gl_WorkGroupSize.x + t] = acc2[r];
                }
                barrier();
                for (uint s = NT / 2u; s > 0u; s >>= 1) {
                    if (lane < s) {
                        [[unroll]] for (uint r = 0u; r < NV; r++)
                            red[r * gl_WorkGroupSize.x + t] += red[r * gl_WorkGroupSize.x + t + s];
                    }
                    barrier();
                }
                [[unroll]] for (uint r = 0u; r < NR; r++) acc[c][r] = red[r * gl_WorkGroupSize.x + t];
                if (GLU != 0u) {
                    [[unroll]] for (uint r = 0u; r < NR; r++) acc2[r] = red[(NR + r) * gl_WorkGroupSize.x + t];
                }
                barrier();  // red is reused by the next column
            }
        }
        if (lane == 0u && c < ncol) {
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                if (row0 + r >= p.m) continue;
                float g = acc[c][r];
                y[ycol[c] + row0 + r] = !valid ? 0.0 : GLU != 0u ? g / (1.0 + exp(-g)) * acc2[r] : g;
            }
        }
    }
}
