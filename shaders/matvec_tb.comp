#version 450
#extension GL_GOOGLE_include_directive : require
// texel buffers as textureBuffer + texelFetch (no combined sampler: OpTypeSampledImage with Dim=Buffer
// is invalid from SPIR-V 1.6 on, which Mesa 25 warns about)
#extension GL_EXT_samplerless_texture_functions : require
#extension GL_EXT_control_flow_attributes : enable
// matvec_tb.comp - decode's matrix-vector product for CPU devices (lavapipe):
// y (NC, m) = x (NC, k) @ W^T, W (m, k) in a layout repacked at load time
// (runtime/ops/ops_matvec_tb.c), read through a uniform texel buffer, and x through another.
// On lavapipe every storage-buffer load a lane makes costs about the same whatever its width;
// texel fetches of 16 bytes are several times cheaper. x is a texel buffer too: lavapipe 22.3
// reads a uniform buffer at an index it cannot prove uniform (any loop counter) one lane and one
// component at a time, which made x's reads as costly as the weights' arithmetic.
//
// Repacked layout: rows in groups of 8, the groups' rows interleaved unit by unit, so that the
// 8 rows' texels of one unit are neighbours. A unit is 32 elements (the quantized variants), 4
// (F32) or 8 (F16); nu units per row (the last one zero-padded). Texel index of unit u, half h
// (the int8 variants have 2 texels per unit, the others 1) of row r:
//     ((r / 8 * nu + u) * TPU + h) * 8 + r % 8
// The variants are storage formats; runtime/ops/ops_matvec_tb.c repacks each GGUF type into one:
//   TB_Q8_0  int8 quants (Q8_0's qs as they are), scale d            (Q8_0, Q5_0)
//   TB_Q6_K  int8 quants, a scale for elements 0..15 and one for 16..31 (Q6_K, Q3_K)
//   TB_Q5_K  int8 quants, scale d and offset m: d * q + m             (Q5_1, Q5_K)
//   TB_Q2_K  int8 quants, a scale and an offset for elements 0..15 and for 16..31 (Q2_K)
//   TB_Q4_0  nibbles (byte i: elements i and 16 + i, as Q4_0's qs), d * (q - 8)   (Q4_0)
//   TB_Q4_K  nibbles in the same order, d * q + m                     (Q4_1, Q4_K)
//   TB_F32, TB_F16 the values (BF16 is widened to F32)
//   TB_GG_Q4_K, TB_GG_Q5_K  no repacking (MATVEC_ID only): the GGUF blocks as they are, for
//               experts too large to repack in the device's memory (see below)
// The NS scales per unit, as f32, are a second texel buffer (read as 4 per texel): scale j of
// unit u of row r at ((r / 8 * nu + u) * NS + j) * 8 + r % 8. Rows past m in the last group are
// zero.
//
// -DMATVEC_ID (mixture of experts, CPU devices): W is n_expert matrices of m rows (m % 8 == 0)
// repacked as one, so expert e's rows are groups e m / 8 ..; column c multiplies expert ids[c] (an
// id past n_expert: a zero column) with x vector (col0 + c) / x_div - col0 / x_div of the binding,
// into y column col0 + c. NC = 1: z is the column (from col0). NC > 1: z is a tile of the columns
// grouped by expert (moe.comp's MOE_GROUP layout in the ids binding, as matvec.comp's grouped
// MATVEC_ID), each unit of the expert's rows loaded once for its up to NC columns.
//
// -DTB_GG_Q4_K reads the tensor's GGUF encoding: a Q4_K block (256 elements) is 144 bytes, 9
// texels. Texel 0: d and dmin (two halves), then the 12 bytes of 6-bit scales and mins; texels
// 1 + 2j and 2 + 2j: the 32 bytes of elements 64j..64j+63, byte i holding element 64j + i in its
// low nibble and 64j + 32 + i in its high one; an element is d sc q - dmin mn (sc, mn of its 32).
// -DTB_GG_Q5_K: Q5_K's blocks, 176 bytes, 11 texels: the same header, then texels 1 and 2 hold qh
// (byte i: bit 2j the fifth bit of element 64j + i, bit 2j + 1 that of 64j + 32 + i), then the
// nibbles as Q4_K's from texel 3.
// Row r of expert e is texels (e m + r) nu BT .. (nu: blocks per row, BT texels per block); an
// invocation's rows are consecutive (past m: the last row again, not stored).
//
// Specialization constants: 0 workgroup size, NR rows per invocation (1, 2, 4 or 8: one
// invocation's rows are in one group), NC columns of x. Each column's
// arithmetic is the same whatever NC is, so a column's result does not depend on the batch.
// (Sharing x across a subgroup by broadcasts instead of every lane reading it was tried: on
// lavapipe 22.3 it made the kernel about 1.8x slower.)
#include "common.glsl"

layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint NC = 1;

layout(push_constant) uniform PC {
    uint k;       // elements per row
    uint nu;      // units per row
    uint m;       // rows in this dispatch (a chunk of whole groups; the last may end mid-group)
    uint y0;      // y index of row 0 of column 0 in the y binding
    uint ystride; // y elements between columns
    uint x0;      // vec4 index of column 0 in the x binding
    uint xstride; // vec4s between columns (k / 4)
#if defined(MATVEC_ID)
    uint n_expert;
    uint x_div;   // columns that share one x vector
    uint col0;    // NC = 1: the column of z = 0
#endif
} p;

layout(binding = 0) uniform utextureBuffer wq;
#if defined(TB_Q8_0) || defined(TB_Q4_0) || defined(TB_Q4_K) || defined(TB_Q5_K) || defined(TB_Q6_K) || defined(TB_Q2_K)
#define TB_SCALES 1
layout(binding = 1) uniform utextureBuffer ws;
#define XB 2
#define YB 3
#else
#define XB 1
#define YB 2
#endif
layout(binding = XB) uniform utextureBuffer xt; // f32 x, 4 per texel
vec4 xv4(uint i) { return uintBitsToFloat(texelFetch(xt, int(i))); }
layout(std430, binding = YB) writeonly buffer Y { float y[]; };
#if defined(MATVEC_ID)
layout(std430, binding = YB + 1) readonly buffer Ids { uint ids[]; };
#endif

// s + the 4 signed bytes of v (byte 0 first) times xv, each byte times 2^24: a byte moved to the
// top of an int converts exactly without a sign extension (the caller scales by 2^-24, which
// changes no rounding). One fma per element: lavapipe does not contract a * b + c by itself.
float q8dot(uint v, vec4 xv, float s) {
    s = fma(float(int(v << 24)), xv.x, s);
    s = fma(float(int((v << 16) & 0xff000000u)), xv.y, s);
    s = fma(float(int((v << 8) & 0xff000000u)), xv.z, s);
    return fma(float(int(v & 0xff000000u)), xv.w, s);
}
// Q4_0 / Q4_K: s + the low nibbles (elements 0..15 of the unit) or the high nibbles (16..31) of
// the 4 bytes of v, minus Q4_BIAS (Q4_0: 8; Q4_K: 0, its offset is applied per unit), times xv
#if defined(TB_Q4_K) || defined(TB_GG_Q4_K) || defined(TB_GG_Q5_K)
#define Q4_BIAS 0.0
#else
#define Q4_BIAS 8.0
#endif
float q4dot(uint v, uint sh, vec4 xv, float s) {
    s = fma(float((v >> sh) & 15u) - Q4_BIAS, xv.x, s);
    s = fma(float((v >> (sh + 8u)) & 15u) - Q4_BIAS, xv.y, s);
    s = fma(float((v >> (sh + 16u)) & 15u) - Q4_BIAS, xv.z, s);
    return fma(float((v >> (sh + 24u)) & 15u) - Q4_BIAS, xv.w, s);
}
// The NR values of scale j (of NS per unit) of this invocation's rows: 4 per texel, NR >= 4
// starting a texel (lane % 4 == 0).
#if defined(TB_Q2_K)
#define NS 4u
#elif defined(TB_Q4_K) || defined(TB_Q5_K) || defined(TB_Q6_K)
#define NS 2u
#else
#define NS 1u
#endif
#ifdef TB_SCALES
void unit_scales(uint unit, uint j, uint lane, out float v[NR]) {
    uint s0 = (unit * NS + j) * 8u + lane, j0 = NR >= 4u ? 0u : s0 % 4u;
    uvec4 sc0 = texelFetch(ws, int(s0 / 4u)), sc1 = uvec4(0u);
    if (NR == 8u) sc1 = texelFetch(ws, int(s0 / 4u + 1u));
    [[unroll]] for (uint r = 0u; r < NR; r++) v[r] = uintBitsToFloat(j0 + r < 4u ? sc0[j0 + r] : sc1[j0 + r - 4u]);
}
#endif
// s + the 4 bytes of v (byte 0 first, unsigned) times xv
float b4dot(uint v, vec4 xv, float s) {
    s = fma(float(v & 0xffu), xv.x, s);
    s = fma(float((v >> 8) & 0xffu), xv.y, s);
    s = fma(float((v >> 16) & 0xffu), xv.z, s);
    return fma(float(v >> 24), xv.w, s);
}
vec4 h4(uint a, uint b) { return vec4(unpackHalf2x16(a), unpackHalf2x16(b)); }

void main() {
    uint r0 = global_index_2d() * NR;
    if (r0 >= p.m) return;
    uint xcol[NC], ycol[NC]; // each column's first x texel and y index
#if defined(MATVEC_ID)
    uint expert, ncol = 1u;
    if (NC == 1u) {
        uint col = p.col0 + gl_WorkGroupID.z;
        expert = ids[col];
        xcol[0] = p.x0 + (col / p.x_div - p.col0 / p.x_div) * p.xstride;
        ycol[0] = p.y0 + col * p.ystride;
    } else {
        uint tile = gl_WorkGroupID.z;
        if (tile >= ids[0]) return;  // past the tiles this batch has
        expert = ids[4u + 4u * tile];
        uint first = ids[4u + 4u * tile + 1u], ob = 4u + 4u * gl_NumWorkGroups.z;
        ncol = ids[4u + 4u * tile + 2u];
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            uint col = ids[ob + first + min(c, ncol - 1u)];  // past ncol: the last again, not stored
            xcol[c] = p.x0 + (col / p.x_div) * p.xstride;
            ycol[c] = p.y0 + col * p.ystride;
        }
    }
    bool valid = expert < p.n_expert;
    uint g = (valid ? expert : 0u) * (p.m / 8u) + r0 / 8u, lane = r0 % 8u;
#else
    const bool valid = true;
    const uint ncol = NC;
    [[unroll]] for (uint c = 0u; c < NC; c++) xcol[c] = p.x0 + c * p.xstride, ycol[c] = p.y0 + c * p.ystride;
    uint g = r0 / 8u, lane = r0 % 8u;
#endif
    float acc[NR * NC];
    [[unroll]] for (uint i = 0u; i < NR * NC; i++) acc[i] = 0.0;

#if defined(TB_Q8_0) || defined(TB_Q4_0) || defined(TB_Q4_K) || defined(TB_Q5_K) || defined(TB_Q6_K) || defined(TB_Q2_K)
    for (uint u = 0u; u < p.nu; u++) {
        uint unit = g * p.nu + u;
        // scales: Q8_0, Q4_0 d; Q4_K d and min; Q6_K d of elements 0..15 and of 16..31
        float d[NR], e[NR];
        unit_scales(unit, 0u, lane, d);
        if (NS >= 2u) unit_scales(unit, 1u, lane, e);
#if defined(TB_Q2_K)
        float ma[NR], mb[NR];  // Q2_K: the offsets of elements 0..15 and of 16..31
        unit_scales(unit, 2u, lane, ma);
        unit_scales(unit, 3u, lane, mb);
#endif
#if defined(TB_Q8_0) || defined(TB_Q5_K) || defined(TB_Q6_K) || defined(TB_Q2_K)
        uvec4 qa[NR], qb[NR];
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            qa[r] = texelFetch(wq, int(unit * 16u + lane + r));
            qb[r] = texelFetch(wq, int(unit * 16u + 8u + lane + r));
        }
#else
        uvec4 qa[NR];
        [[unroll]] for (uint r = 0u; r < NR; r++) qa[r] = texelFetch(wq, int(unit * 8u + lane + r));
#endif
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            uint xb = xcol[c] + u * 8u;
            vec4 x0 = xv4(xb), x1 = xv4(xb + 1u), x2 = xv4(xb + 2u), x3 = xv4(xb + 3u);
            vec4 x4 = xv4(xb + 4u), x5 = xv4(xb + 5u), x6 = xv4(xb + 6u), x7 = xv4(xb + 7u);
#if defined(TB_Q4_K) || defined(TB_Q5_K)
            float xs = dot((x0 + x1) + (x2 + x3) + ((x4 + x5) + (x6 + x7)), vec4(1.0)); // the unit's sum of x
#endif
#if defined(TB_Q2_K)
            float xsa = dot((x0 + x1) + (x2 + x3), vec4(1.0)), xsb = dot((x4 + x5) + (x6 + x7), vec4(1.0));
#endif
            [[unroll]] for (uint r = 0u; r < NR; r++) {
#if defined(TB_Q8_0) || defined(TB_Q5_K) || defined(TB_Q6_K) || defined(TB_Q2_K)
                // two chains (elements 0..15 and 16..31) for the fma latency
                float sa = q8dot(qa[r].w, x3, q8dot(qa[r].z, x2, q8dot(qa[r].y, x1, q8dot(qa[r].x, x0, 0.0))));
                float sb = q8dot(qb[r].w, x7, q8dot(qb[r].z, x6, q8dot(qb[r].y, x5, q8dot(qb[r].x, x4, 0.0))));
#if defined(TB_Q8_0)
                acc[r * NC + c] += d[r] * ((sa + sb) * (1.0 / 16777216.0));
#elif defined(TB_Q5_K)
                acc[r * NC + c] += d[r] * ((sa + sb) * (1.0 / 16777216.0)) + e[r] * xs;
#elif defined(TB_Q2_K)
                acc[r * NC + c] += d[r] * (sa * (1.0 / 16777216.0)) + e[r] * (sb * (1.0 / 16777216.0)) +
                                   (ma[r] * xsa + mb[r] * xsb);
#else
                acc[r * NC + c] += d[r] * (sa * (1.0 / 16777216.0)) + e[r] * (sb * (1.0 / 16777216.0));
#endif
#else
                float sa = q4dot(qa[r].w, 0u, x3, q4dot(qa[r].z, 0u, x2, q4dot(qa[r].y, 0u, x1, q4dot(qa[r].x, 0u, x0, 0.0))));
                float sb = q4dot(qa[r].w, 4u, x7, q4dot(qa[r].z, 4u, x6, q4dot(qa[r].y, 4u, x5, q4dot(qa[r].x, 4u, x4, 0.0))));
#if defined(TB_Q4_0)
                acc[r * NC + c] += d[r] * (sa + sb);
#else
                acc[r * NC + c] += d[r] * (sa + sb) + e[r] * xs;
#endif
#endif
            }
        }
    }
#elif defined(TB_GG_Q4_K) || defined(TB_GG_Q5_K)
#if defined(TB_GG_Q5_K)
    const uint BT = 11u, QS = 3u; // texels per block, the first of the nibbles
#else
    const uint BT = 9u, QS = 1u;
#endif
    uint row0 = (valid ? expert : 0u) * p.m;
    for (uint b = 0u; b < p.nu; b++) {
        // each row's block header: d, dmin and the 8 scales and mins as bytes, 4 to a word
        uint t[NR], sc[NR * 2], mn[NR * 2];
        float d[NR], dm[NR];
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            t[r] = ((row0 + min(r0 + r, p.m - 1u)) * p.nu + b) * BT;
            uvec4 h = texelFetch(wq, int(t[r]));
            vec2 dd = unpackHalf2x16(h.x);
            d[r] = dd.x, dm[r] = dd.y;
            sc[2u * r] = h.y & 0x3f3f3f3fu;                                           // scales 0..3
            mn[2u * r] = h.z & 0x3f3f3f3fu;                                           // mins 0..3
            sc[2u * r + 1u] = (h.w & 0x0f0f0f0fu) | ((h.y >> 2) & 0x30303030u);       // scales 4..7
            mn[2u * r + 1u] = ((h.w >> 4) & 0x0f0f0f0fu) | ((h.z >> 2) & 0x30303030u); // mins 4..7
        }
#if defined(TB_GG_Q5_K)
        uvec4 qh0[NR], qh1[NR]; // qh: the fifth bits of bytes 0..15 and 16..31 of each chunk
        [[unroll]] for (uint r = 0u; r < NR; r++) qh0[r] = texelFetch(wq, int(t[r] + 1u)), qh1[r] = texelFetch(wq, int(t[r] + 2u));
#endif
        [[unroll]] for (uint j = 0u; j < 4u; j++) { // elements 64j..64j+63: sub-blocks 2j (low nibbles), 2j+1
            uvec4 qa[NR], qb[NR];
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                qa[r] = texelFetch(wq, int(t[r] + QS + 2u * j));
                qb[r] = texelFetch(wq, int(t[r] + QS + 1u + 2u * j));
            }
            [[unroll]] for (uint c = 0u; c < NC; c++) {
                uint xb = xcol[c] + b * 64u + j * 16u;
                vec4 x0 = xv4(xb), x1 = xv4(xb + 1u), x2 = xv4(xb + 2u), x3 = xv4(xb + 3u);
                vec4 x4 = xv4(xb + 4u), x5 = xv4(xb + 5u), x6 = xv4(xb + 6u), x7 = xv4(xb + 7u);
                vec4 x8 = xv4(xb + 8u), x9 = xv4(xb + 9u), x10 = xv4(xb + 10u), x11 = xv4(xb + 11u);
                vec4 x12 = xv4(xb + 12u), x13 = xv4(xb + 13u), x14 = xv4(xb + 14u), x15 = xv4(xb + 15u);
                float xl = dot((x0 + x1) + (x2 + x3) + ((x4 + x5) + (x6 + x7)), vec4(1.0));     // sums of x
                float xh = dot((x8 + x9) + (x10 + x11) + ((x12 + x13) + (x14 + x15)), vec4(1.0)); // per sub-block
                [[unroll]] for (uint r = 0u; r < NR; r++) {
                    // four chains for the fma latency: low nibbles of qa, of qb, high of qa, of qb
                    float la = q4dot(qa[r].w, 0u, x3, q4dot(qa[r].z, 0u, x2, q4dot(qa[r].y, 0u, x1, q4dot(qa[r].x, 0u, x0, 0.0))));
                    float lb = q4dot(qb[r].w, 0u, x7, q4dot(qb[r].z, 0u, x6, q4dot(qb[r].y, 0u, x5, q4dot(qb[r].x, 0u, x4, 0.0))));
                    float ha = q4dot(qa[r].w, 4u, x11, q4dot(qa[r].z, 4u, x10, q4dot(qa[r].y, 4u, x9, q4dot(qa[r].x, 4u, x8, 0.0))));
                    float hb = q4dot(qb[r].w, 4u, x15, q4dot(qb[r].z, 4u, x14, q4dot(qb[r].y, 4u, x13, q4dot(qb[r].x, 4u, x12, 0.0))));
#if defined(TB_GG_Q5_K)
                    // + 16 times x where the element's fifth bit is set: bytes of 0 or 1, times 16 after
                    uint sl = 2u * j, sh = 2u * j + 1u;
                    la += 16.0 * b4dot((qh0[r].w >> sl) & 0x01010101u, x3, b4dot((qh0[r].z >> sl) & 0x01010101u, x2,
                          b4dot((qh0[r].y >> sl) & 0x01010101u, x1, b4dot((qh0[r].x >> sl) & 0x01010101u, x0, 0.0))));
                    lb += 16.0 * b4dot((qh1[r].w >> sl) & 0x01010101u, x7, b4dot((qh1[r].z >> sl) & 0x01010101u, x6,
                          b4dot((qh1[r].y >> sl) & 0x01010101u, x5, b4dot((qh1[r].x >> sl) & 0x01010101u, x4, 0.0))));
                    ha += 16.0 * b4dot((qh0[r].w >> sh) & 0x01010101u, x11, b4dot((qh0[r].z >> sh) & 0x01010101u, x10,
                          b4dot((qh0[r].y >> sh) & 0x01010101u, x9, b4dot((qh0[r].x >> sh) & 0x01010101u, x8, 0.0))));
                    hb += 16.0 * b4dot((qh1[r].w >> sh) & 0x01010101u, x15, b4dot((qh1[r].z >> sh) & 0x01010101u, x14,
                          b4dot((qh1[r].y >> sh) & 0x01010101u, x13, b4dot((qh1[r].x >> sh) & 0x01010101u, x12, 0.0))));
#endif
                    uint sw = sc[2u * r + j / 2u] >> (16u * (j % 2u)), mw = mn[2u * r + j / 2u] >> (16u * (j % 2u));
                    acc[r * NC + c] += d[r] * (float(sw & 0xffu) * (la + lb) + float((sw >> 8) & 0xffu) * (ha + hb)) -
                                       dm[r] * (float(mw & 0xffu) * xl + float((mw >> 8) & 0xffu) * xh);
                }
            }
        }
    }
#elif defined(TB_F32)
    for (uint u = 0u; u < p.nu; u++) {
        uint base = (g * p.nu + u) * 8u + lane;
        vec4 w[NR];
        [[unroll]] for (uint r = 0u; r < NR; r++) w[r] = uintBitsToFloat(texelFetch(wq, int(base + r)));
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            vec4 xv = xv4(xcol[c] + u);
            [[unroll]] for (uint r = 0u; r < NR; r++) acc[r * NC + c] += dot(w[r], xv);
        }
    }
#elif defined(TB_F16)
    // 8 halves per texel; when k % 8 == 4 the last unit's second half is past x: a tail step
    uint full = p.k / 8u;
    for (uint u = 0u; u < full; u++) {
        uint base = (g * p.nu + u) * 8u + lane;
        uvec4 w[NR];
        [[unroll]] for (uint r = 0u; r < NR; r++) w[r] = texelFetch(wq, int(base + r));
        [[unroll]] for (uint c = 0u; c < NC; c++) {
            uint xb = xcol[c] + u * 2u;
            vec4 xa = xv4(xb), xc = xv4(xb + 1u);
            [[unroll]] for (uint r = 0u; r < NR; r++)
                acc[r * NC + c] += dot(h4(w[r].x, w[r].y), xa) + dot(h4(w[r].z, w[r].w), xc);
        }
    }
    if (full < p.nu) {
        uint base = (g * p.nu + full) * 8u + lane;
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            uvec4 w = texelFetch(wq, int(base + r));
            [[unroll]] for (uint c = 0u; c < NC; c++)
                acc[r * NC + c] += dot(h4(w.x, w.y), xv4(xcol[c] + full * 2u));
        }
    }
#else
#error "one TB_* define per variant"
#endif

    [[unroll]] for (uint r = 0u; r < NR; r++) {
        if (r0 + r < p.m) {
            [[unroll]] for (uint c = 0u; c < NC; c++)
                if (c < ncol) y[ycol[c] + r0 + r] = valid ? acc[r * NC + c] : 0.0;
        }
    }
}
