#version 450
#extension GL_GOOGLE_include_directive : require
// attn.comp - causal attention over an f16 KV cache, flash-attention style: the cache is walked in
// tiles of WG positions with an online softmax, so no score matrix larger than (rows, WG) ever
// exists. One workgroup serves R = QT * HG "rows": QT consecutive queries times HG query heads
// that share one kv head (GQA), so each K/V row is read once for all of them. Query i (at
// position pos0 + i) sees cache positions 0 .. pos0 + i.
//
// Grid: x = split (a range of split_len cache positions), y = query tile, z = head group.
// Without ATTN_SPLIT the output is final, o (n, n_head, HD). With ATTN_SPLIT each workgroup
// writes the unnormalized partial (HD values, running max m, sum l) of its split for every row:
// part (n_split, n, n_head, HD + 2); attn_reduce.comp combines them. A split that starts past
// the current length does nothing (the reduce never reads it), so the number of splits is fixed
// at recording time and the current length is data (pos0).
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
#include "common.glsl"
#include "pc_attn.glsl"
#include "kv_q8.glsl"

layout(constant_id = 1) const uint HD = 64;  // head_dim (even)
layout(constant_id = 2) const uint QT = 1;   // queries per workgroup
layout(constant_id = 3) const uint HG = 1;   // heads per workgroup (divides n_head / n_head_kv)
layout(constant_id = 4) const uint NPT = 16; // O update: threads per row = min(HQ, WG)
layout(constant_id = 5) const uint RS = 2;   // O update: row slices = WG / NPT
layout(constant_id = 6) const uint RPT = 1;  // O update: rows per thread = ceil(R / RS)
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

// Queries and outputs are kept as vec4 quads: on lavapipe every load costs a per-lane gather,
// so fewer, wider ones matter more than anything else.
shared vec4 q_sh[R * HQ];   // scaled queries
shared vec4 o_sh[R * HQ];   // running output (unnormalized)
shared float s_sh[R * gl_WorkGroupSize.x]; // scores, then probabilities, of one tile
shared float red_sh[gl_WorkGroupSize.x];
shared float m_sh[R], l_sh[R], a_sh[R];    // running max, running sum, rescale of this tile

uint q_base, h_base, kvh, L_max; // first query, first head, kv head, positions any row sees

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
uint head_row(uint t) { return kv_row(t) * p.n_head_kv + kvh; }

// Quad dq of head row hr (4 values; the upper two 0 past the row's end).
vec4 k_quad(uint hr, uint dq) {
#ifdef K_Q8
    uint e = hr * HD + 4 * dq;
    return q8_unpack(kc[e / 4], uintBitsToFloat(kc[p.n_rows * p.n_head_kv * HD / 4 + e / 32]));
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
    return q8_unpack(vc[e / 4], uintBitsToFloat(vc[p.n_rows * p.n_head_kv * HD / 4 + e / 32]));
#else
    uint w = hr * HD2;
    vec2 a = unpackHalf2x16(vc[w + 2 * dq]);
    vec2 b = (HD % 4 == 0 || 2 * dq + 1 < HD2) ? unpackHalf2x16(vc[w + 2 * dq + 1]) : vec2(0.0);
    return vec4(a, b);
#endif
}

void load_queries() {
    for (uint e = gl_LocalInvocationID.x; e < R * HQ; e += WG) {
        uint r = e / HQ, dq = e % HQ, qi = q_base + r / HG, h = h_base + r % HG;
        vec4 v = vec4(0.0);
        if (qi < p.n) {
            uint b = (qi * p.n_head + h) * HD + 4 * dq;
            v.x = q[b];
            v.y = q[b + 1];
            if (4 * dq + 2 < HD) {
                v.z = q[b + 2];
                v.w = q[b + 3];
            }
        }
        q_sh[e] = v * p.scale;
        o_sh[e] = vec4(0.0);
    }
    if (gl_LocalInvocationID.x < R) {
        m_sh[gl_LocalInvocationID.x] = NEG_INF;
        l_sh[gl_LocalInvocationID.x] = 0.0;
    }
}

// s_sh[r][c] = q_r . k_(kv0+c) (soft-capped when p.softcap > 0), or -inf where row r may not see
// that position (past its query, or before its sliding window).
void scores(uint kv0, uint end) {
    uint c = gl_LocalInvocationID.x, t = kv0 + c;
    float acc[R];
    [[unroll]] for (uint r = 0; r < R; r++) acc[r] = 0.0;
    if (t < end) {
        uint hr = head_row(t);
        for (uint dq = 0; dq < HQ; dq++) {
            vec4 kk = k_quad(hr, dq);
            [[unroll]] for (uint r = 0; r < R; r++) acc[r] += dot(q_sh[r * HQ + dq], kk);
        }
    }
    if (p.softcap > 0.0) {
        [[unroll]] for (uint r = 0; r < R; r++) acc[r] = p.softcap * tanh(acc[r] / p.softcap);
    }
    [[unroll]] for (uint r = 0; r < R; r++)
        s_sh[r * WG + c] = (t < end && t < row_limit(r) && t >= row_first(r)) ? acc[r] : NEG_INF;
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

// o_sh[r] = o_sh[r] * a_sh[r] + sum_c s_sh[r][c] v_(kv0+c). Thread (slice, lane) owns the quads
// lane, lane + NPT, ... of rows slice, slice + RS, ...
void accumulate(uint kv0, uint end) {
    uint tid = gl_LocalInvocationID.x, slice = tid / NPT, lane = tid % NPT;
    if (slice >= RS) return;
    uint cend = min(WG, end - kv0);
    for (uint dq = lane; dq < HQ; dq += NPT) {
        vec4 acc[RPT];
        [[unroll]] for (uint j = 0; j < RPT; j++) {
            uint r = slice + j * RS;
            acc[j] = r < R ? o_sh[r * HQ + dq] * a_sh[r] : vec4(0.0);
        }
        uint tr = kv0 % p.n_rows; // the ring's row of kv0 + c, stepped without a division
        for (uint c = 0; c < cend; c++, tr = tr + 1 == p.n_rows ? 0 : tr + 1) {
            vec4 vv = v_quad(p.page != 0u ? head_row(kv0 + c) : tr * p.n_head_kv + kvh, dq);
            [[unroll]] for (uint j = 0; j < RPT; j++) {
                uint r = slice + j * RS;
                if (r < R) acc[j] += s_sh[r * WG + c] * vv;
            }
        }
        [[unroll]] for (uint j = 0; j < RPT; j++) {
            uint r = slice + j * RS;
            if (r < R) o_sh[r * HQ + dq] = acc[j];
        }
    }
}

void store(uint split) {
    for (uint e = gl_LocalInvocationID.x; e < R * HD; e += WG) {
        uint r = e / HD, d = e % HD, qi = q_base + r / HG, h = h_base + r % HG;
        if (qi >= p.n) continue;
        float v = o_sh[r * HQ + d / 4][d % 4];
#ifdef ATTN_SPLIT
        uint b = ((split * p.n + qi) * p.n_head + h) * (HD + 2);
        o[b + d] = v;
        if (d == 0) {
            o[b + HD] = m_sh[r];
            o[b + HD + 1] = l_sh[r];
        }
#else
        float l = l_sh[r];
        if (p.sinks != 0u) { // one more score, with no value: rescale to the larger max
            float m = m_sh[r], sk = sinks[h], mn = max(m, sk), a = m == NEG_INF ? 0.0 : exp(m - mn);
            v *= a;
            l = l * a + exp(sk - mn);
        }
        o[(qi * p.n_head + h) * HD + d] = l > 0.0 ? v / l : 0.0;
#endif
    }
}

void main() {
    uint split = gl_WorkGroupID.x;
    q_base = gl_WorkGroupID.y * QT;
    h_base = gl_WorkGroupID.z * HG;
    kvh = h_base / (p.n_head / p.n_head_kv);
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
