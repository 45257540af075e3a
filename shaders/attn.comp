#version 450
#extension GL_GOOGLE_include_directive : require
#if defined(ATTN_CM_EMU)
#define ATTN_CM 1
#else
#if defined(ATTN_CM)
#extension GL_NV_cooperative_matrix : require
#endif
#endif
#if defined(ATTN_SG)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if defined(ATTN_CM)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#if defined(ATTN_F16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
// attn.comp - causal attention over an f16 KV cache, flash-attention style: the cache is walked in
// blocks (tiles) of positions with an online softmax, so no score matrix larger than (rows, tile)
// ever exists. One workgroup serves R = QT * HG "rows": QT consecutive queries times HG query heads
// that share one kv head (GQA), so each K/V row is read once for all of them. Query i (at
// position pos0 + i) sees cache positions 0 .. pos0 + i.
//
// ATTN_SPLIT (attn_split_*, attn_split_sg_*) walks the cache as ggml's flash-attention decode
// does (shaders/include/attn_decode.glsl): key groups of lanes that split the head dimension, the
// queries and outputs in registers, the partial scores added by subgroup operations (_sg) or in
// shared memory. It serves the decode (one query; grid x = split: the span the query sees cut into
// a fixed number of splits whose length follows the position, partials for attn_reduce.comp) and
// the prefill where cooperative matrices are not taken (QT queries a workgroup, one split; grid
// y = query tile, z = head group; the output final, o (n, n_head, HD)).
// ATTN_CM (below) is the prefill by cooperative matrices: grid x = 1, y = query tile, z = head group.
//
// With p.sinks, head h's softmax also counts the score sinks[h] (gpt-oss's attention sinks), which
// has no value: the final output's denominator takes exp(sinks[h] - m) (attn_reduce.comp's, split).
//
// The cache holds f16 pairs packed in uint words (unpackHalf2x16; no 16-bit storage feature);
// position t is row t % p.n_rows (a sliding-window layer's cache is a ring of n_rows >= window +
// the batch's queries: the rows a query sees were written after any position they replaced), or
// in a paged cache the row its block table gives (kv_page.glsl).
//
// With K_Q8 (V_Q8) the k (v) cache is q8_0 (kv_q8.glsl; head_dim a multiple of 4, the cache's
// width of 32): each quad is one quant word times its block's scale.
//
// ATTN_CM=1 (attn_cm_*, prefill, devices with VK_KHR_cooperative_matrix and a 16 x 16 x 16 f16 ->
// f32 subgroup shape): the two products of a tile by cooperative matrices. The queries (rows padded
// to TM = 16) and each tile's K rows, then its V rows, are staged as f16 in shared memory
// (head_dim padded to a multiple of 16); the subgroups take the tile's 16-column blocks of
// scores S = Q K^T, then the 16-column blocks of P V (P the tile's probabilities in f16), each
// summed in f32 accumulators and stored to shared memory, where the online softmax and the
// rescaled running output stay scalar f32. Specialization constants 4 5 6 are TM TN TK there.
// Written in GL_NV_cooperative_matrix
// and rewritten to SPV_KHR at build time, as matmul.comp's COOPMAT (shaders/coopmat/).
// ATTN_CM_EMU=1 (attn_cm_emu_*, tests): the same with the matrix operations emulated by plain
// arithmetic, so that it runs on lavapipe.
#include "common.glsl"
#include "pc_attn.glsl"
#include "kv_q8.glsl"
#include "tanh.glsl"

layout(constant_id = 1) const uint HD = 64;  // head_dim (even)
layout(constant_id = 2) const uint QT = 1;   // queries per workgroup
layout(constant_id = 3) const uint HG = 1;   // heads per workgroup (divides n_head / n_head_kv)
#if defined(ATTN_CM)
layout(constant_id = 4) const uint TM = 16;  // cooperative matrix shape (16 x 16 x 16: the op makes sure)
layout(constant_id = 5) const uint TN = 16;
layout(constant_id = 6) const uint TK = 16;
#else // ATTN_SPLIT (attn_decode.glsl)
layout(constant_id = 4) const uint NG = 8;   // key groups (WG = NG * DS)
layout(constant_id = 5) const uint DS = 8;   // lanes of a key group (split the head dim)
layout(constant_id = 6) const uint B = 4;    // positions per key group and step
#endif
layout(constant_id = 7) const uint TPR = 64; // softmax: threads per row = WG / R (>= 1)
const uint R = QT * HG;
const uint HD2 = HD / 2;       // f16 pairs (uint words) per head row
const uint HQ = (HD + 3) / 4;  // quads per head row (the last one zero-padded when HD % 4 == 2)

layout(std430, binding = 0) readonly buffer Q { float q[]; };  // (n, n_head, HD) f32
layout(std430, binding = 1) readonly buffer K { uint kc[]; };  // (n_ctx, n_head_kv, HD) f16
layout(std430, binding = 2) readonly buffer V { uint vc[]; };  // (n_ctx, n_head_kv, HD) f16
layout(std430, binding = 3) readonly buffer P { uint pos0; };
layout(std430, binding = 4) writeonly buffer O { float o[]; }; // final or partials (see above)
layout(std430, binding = 5) readonly buffer SK { float sinks[]; }; // (n_head,) when p.sinks
layout(std430, binding = 6) readonly buffer BT { uint btab[]; }; // block table (p.page > 0)
layout(push_constant) uniform PC { pc_attn p; };
#include "kv_page.glsl"

#define NEG_INF (uintBitsToFloat(0xff800000u))
#define WG (gl_WorkGroupSize.x)

#if defined(ATTN_SPLIT)
#include "attn_decode.glsl"
#else // ATTN_CM: the prefill by cooperative matrices

// Queries and outputs are kept as vec4 quads: on lavapipe every load costs a per-lane gather,
// so fewer, wider ones matter more than anything else.
const uint HDP = (HD + 15u) / 16u * 16u;    // head_dim padded for the matrices (zeros past HD)
shared float16_t sh_qh[TM * HDP];           // scaled queries, f16, rows past R zero
shared float16_t sh_kv[gl_WorkGroupSize.x * HDP]; // the tile's K rows, then its V rows, f16
shared float16_t sh_p[TM * gl_WorkGroupSize.x];   // the tile's probabilities, f16
shared float sh_pv[TM * HDP];               // P V of the tile
shared float s_sh[TM * gl_WorkGroupSize.x]; // scores, then probabilities, of one tile
shared vec4 o_sh[R * HQ];   // running output (unnormalized)
shared float red_sh[gl_WorkGroupSize.x];
shared float m_sh[R], l_sh[R], a_sh[R];    // running max, running sum, rescale of this tile

uint q_base, h_base, kvh, L_max; // first query, first head, kv head (of the bound cache), positions any row sees

// Cache positions row r sees: row_first(r) .. limit-1 (none for a row past the last query).
uint row_limit(uint r) {
    uint qi = q_base + r / HG;
    return qi < p.n ? min(pos0 + qi + 1, p.n_ctx) : 0;
}
// The first position of a sliding window (p.window > 0) ending at the row's query; else 0.
uint row_first(uint r) {
    uint lim = row_limit(r);
    return p.window > 0u && lim > p.window ? lim - p.window : 0u;
}

// The head row of this kv head at position t (kv_page.glsl: a ring's or a paged cache's row).
uint head_row(uint t) { return kv_row(t) * p.kv_hn + kvh; }

// Quad dq of head row hr (4 values; the upper two 0 past the row's end).
vec4 k_quad(uint hr, uint dq) {
#ifdef K_Q8
    uint e = hr * HD + 4 * dq;
    return q8_unpack(kc[e / 4], uintBitsToFloat(kc[p.n_rows * p.kv_hn * HD / 4 + e / 32]));
#else
    uint w = hr * HD2;
    vec2 a = unpackHalf2x16(kc[w + 2 * dq]);
    vec2 b = (HD % 4 == 0 || 2 * dq + 1 < HD2) ? unpackHalf2x16(kc[w + 2 * dq + 1]) : vec2(0.0);
    return vec4(a, b);
#endif
}
vec4 v_quad(uint hr, uint dq) {
#ifdef V_Q8
    uint e = hr * HD + 4 * dq;
    return q8_unpack(vc[e / 4], uintBitsToFloat(vc[p.n_rows * p.kv_hn * HD / 4 + e / 32]));
#else
    uint w = hr * HD2;
    vec2 a = unpackHalf2x16(vc[w + 2 * dq]);
    vec2 b = (HD % 4 == 0 || 2 * dq + 1 < HD2) ? unpackHalf2x16(vc[w + 2 * dq + 1]) : vec2(0.0);
    return vec4(a, b);
#endif
}

void load_queries() {
    for (uint e = gl_LocalInvocationID.x; e < TM * HDP; e += WG) {
        uint r = e / HDP, d = e % HDP, qi = q_base + r / HG, h = h_base + r % HG;
        float v = r < R && qi < p.n && d < HD ? q[(qi * p.n_head + h) * HD + d] * p.scale : 0.0;
        sh_qh[e] = float16_t(v);
    }
    for (uint e = gl_LocalInvocationID.x; e < R * HQ; e += WG) o_sh[e] = vec4(0.0);
    if (gl_LocalInvocationID.x < R) {
        m_sh[gl_LocalInvocationID.x] = NEG_INF;
        l_sh[gl_LocalInvocationID.x] = 0.0;
    }
}

#if defined(ATTN_CM_EMU)
// Emulated matrices: an operand is (array, offset, stride, column-major); the accumulator is
// private to the lanes of the subgroup, element e (row e / TN, column e % TN) in lane
// e % gl_SubgroupSize at emu_acc[e / gl_SubgroupSize] (subgroups of at least 4 lanes). It lives
// from CM_ZERO to CM_STORE, with no barrier in between.
float emu_acc[TM * TN / 4u];
#define ARR_sh_qh 0u
#define ARR_sh_kv 1u
#define ARR_sh_p 2u
#define ARR_s_sh 3u
#define ARR_sh_pv 4u
#define CMA uvec4
#define CMB uvec4
#define CMC uint
#define CM_ZERO(c) c = emu_zero()
#define CM_LOAD(m, arr, off, stride, colmajor) m = uvec4(ARR_##arr, off, stride, (colmajor) ? 1u : 0u)
#define CM_MMA(c, a, b) emu_mma(a, b)
#define CM_STORE(c, arr, off, stride, colmajor) emu_store(ARR_##arr, off, stride, colmajor)
uint emu_zero() {
    for (uint e = gl_SubgroupInvocationID; e < TM * TN; e += gl_SubgroupSize) emu_acc[e / gl_SubgroupSize] = 0.0;
    return 0u;
}
float emu_get(uvec4 m, uint row, uint col) {
    uint i = m.y + (m.w != 0u ? col * m.z + row : row * m.z + col);
    return m.x == ARR_sh_qh ? float(sh_qh[i]) : m.x == ARR_sh_kv ? float(sh_kv[i]) : float(sh_p[i]);
}
void emu_mma(uvec4 a, uvec4 b) {
    for (uint e = gl_SubgroupInvocationID; e < TM * TN; e += gl_SubgroupSize) {
        uint r = e / TN, c = e % TN;
        float sum = 0.0;
        for (uint q = 0u; q < TK; q++) sum += emu_get(a, r, q) * emu_get(b, q, c);
        emu_acc[e / gl_SubgroupSize] += sum;
    }
}
void emu_store(uint arr, uint off, uint stride, bool colmajor) {
    for (uint e = gl_SubgroupInvocationID; e < TM * TN; e += gl_SubgroupSize) {
        uint r = e / TN, c = e % TN, i = off + (colmajor ? c * stride + r : r * stride + c);
        if (arr == ARR_s_sh) s_sh[i] = emu_acc[e / gl_SubgroupSize];
        else sh_pv[i] = emu_acc[e / gl_SubgroupSize];
    }
}
#else
#define CMA fcoopmatNV<16, 3, TM, TK>   // scope 3: subgroup
#define CMB fcoopmatNV<16, 3, TK, TN>
#define CMC fcoopmatNV<32, 3, TM, TN>
#define CM_ZERO(c) c = CMC(0.0)
#define CM_LOAD(m, arr, off, stride, colmajor) coopMatLoadNV(m, arr, off, stride, colmajor)
#define CM_MMA(c, a, b) c = coopMatMulAddNV(a, b, c)
#define CM_STORE(c, arr, off, stride, colmajor) coopMatStoreNV(c, arr, off, stride, colmajor)
#endif

// Stage WG cache rows from kv0 as f16 into sh_kv (position c at c * HDP; zeros past end and past
// head_dim): K (v = false) or V.
void stage_rows(uint kv0, uint end, bool v) {
    for (uint e = gl_LocalInvocationID.x; e < WG * (HDP / 4u); e += WG) {
        uint c = e / (HDP / 4u), dq = e % (HDP / 4u), t = kv0 + c;
        vec4 x = vec4(0.0);
        if (t < end && dq < HQ) x = v ? v_quad(head_row(t), dq) : k_quad(head_row(t), dq);
        [[unroll]] for (uint i = 0u; i < 4u; i++) sh_kv[c * HDP + 4u * dq + i] = float16_t(x[i]);
    }
}

// s_sh[r][c] = q_r . k_(kv0+c) by matrices (rows past R: zero queries), then soft-capped and
// masked as the scalar kernel's scores().
void scores(uint kv0, uint end) {
    stage_rows(kv0, end, false);
    barrier();
    for (uint ct = gl_SubgroupID; ct < WG / TN; ct += gl_NumSubgroups) {
        CMC acc;
        CM_ZERO(acc);
        for (uint d0 = 0u; d0 < HDP; d0 += TK) {
            CMA a;
            CMB b;
            CM_LOAD(a, sh_qh, d0, HDP, false);              // Q (r, d) at r * HDP + d
            CM_LOAD(b, sh_kv, ct * TN * HDP + d0, HDP, true); // K^T (d, c) at c * HDP + d
            CM_MMA(acc, a, b);
        }
        CM_STORE(acc, s_sh, ct * TN, WG, false);            // S (r, c) at r * WG + c
    }
    barrier();
    for (uint e = gl_LocalInvocationID.x; e < R * WG; e += WG) {
        uint r = e / WG, c = e % WG, t = kv0 + c;
        float v = s_sh[e];
        if (p.softcap > 0.0) v = p.softcap * tanh_safe(v / p.softcap);
        s_sh[e] = (t < end && t < row_limit(r) && t >= row_first(r)) ? v : NEG_INF;
    }
}

// o_sh[r] = o_sh[r] * a_sh[r] + (P V)[r] with P (the tile's probabilities) and V in f16.
void accumulate(uint kv0, uint end) {
    for (uint e = gl_LocalInvocationID.x; e < TM * WG; e += WG)
        sh_p[e] = float16_t(e / WG < R ? s_sh[e] : 0.0);
    stage_rows(kv0, end, true);
    barrier();
    for (uint dt = gl_SubgroupID; dt < HDP / TN; dt += gl_NumSubgroups) {
        CMC acc;
        CM_ZERO(acc);
        for (uint c0 = 0u; c0 < WG; c0 += TK) {
            CMA a;
            CMB b;
            CM_LOAD(a, sh_p, c0, WG, false);                  // P (r, c) at r * WG + c
            CM_LOAD(b, sh_kv, c0 * HDP + dt * TN, HDP, false); // V (c, d) at c * HDP + d
            CM_MMA(acc, a, b);
        }
        CM_STORE(acc, sh_pv, dt * TN, HDP, false);          // (r, d) at r * HDP + d
    }
    barrier();
    for (uint e = gl_LocalInvocationID.x; e < R * HQ; e += WG) {
        uint r = e / HQ, d = 4u * (e % HQ);
        vec4 pv = vec4(sh_pv[r * HDP + d], sh_pv[r * HDP + d + 1u], sh_pv[r * HDP + d + 2u], sh_pv[r * HDP + d + 3u]);
        o_sh[e] = o_sh[e] * a_sh[r] + pv;
    }
}

// Online softmax step: new running max per row, probabilities in s_sh, rescale in a_sh.
void softmax_tile() {
    uint tid = gl_LocalInvocationID.x, r = tid / TPR, j = tid % TPR;
    bool act = r < R;
    float mx = NEG_INF;
    if (act)
        for (uint c = j; c < WG; c += TPR) mx = max(mx, s_sh[r * WG + c]);
    red_sh[tid] = mx;
    barrier();
    if (act && j == 0) {
        for (uint k = 1; k < TPR; k++) mx = max(mx, red_sh[tid + k]);
        float mo = m_sh[r], mn = max(mo, mx);
        a_sh[r] = mn == NEG_INF ? 1.0 : exp(mo - mn);
        m_sh[r] = mn;
    }
    barrier();
    float sum = 0.0;
    if (act) {
        float mn = m_sh[r];
        for (uint c = j; c < WG; c += TPR) {
            float s = s_sh[r * WG + c];
            float e = s == NEG_INF ? 0.0 : exp(s - mn);
            s_sh[r * WG + c] = e;
            sum += e;
        }
    }
    red_sh[tid] = sum;
    barrier();
    if (act && j == 0) {
        for (uint k = 1; k < TPR; k++) sum += red_sh[tid + k];
        l_sh[r] = l_sh[r] * a_sh[r] + sum;
    }
}


void store(uint split) {
    for (uint e = gl_LocalInvocationID.x; e < R * HD; e += WG) {
        uint r = e / HD, d = e % HD, qi = q_base + r / HG, h = h_base + r % HG;
        if (qi >= p.n) continue;
        float v = o_sh[r * HQ + d / 4][d % 4];
        float l = l_sh[r];
        if (p.sinks != 0u) { // one more score, with no value: rescale to the larger max
            float m = m_sh[r], sk = sinks[h], mn = max(m, sk), a = m == NEG_INF ? 0.0 : exp(m - mn);
            v *= a;
            l = l * a + exp(sk - mn);
        }
        o[(qi * p.n_head + h) * HD + d] = l > 0.0 ? v / l : 0.0;
    }
}

void main() {
    uint split = gl_WorkGroupID.x;
    q_base = gl_WorkGroupID.y * QT;
    h_base = gl_WorkGroupID.z * HG + p.kv_h0 * (p.n_head / p.n_head_kv); // the bound cache's heads
    kvh = h_base / (p.n_head / p.n_head_kv) - p.kv_h0;                  // in the bound cache
    L_max = min(pos0 + min(q_base + QT, p.n), p.n_ctx);
    uint start = split * p.split_len;
    uint end = min(start + p.split_len, L_max);
    if (start >= end) return; // uniform: a split past the current length
    load_queries();
    barrier();
    for (uint kv0 = start; kv0 < end; kv0 += WG) {
        scores(kv0, end);
        barrier();
        softmax_tile();
        barrier();
        accumulate(kv0, end);
        barrier();
    }
    store(split);
}

#endif // ATTN_CM
