// attn_decode.glsl - attn.comp's split decode (ATTN_SPLIT): one query over the cache. Included by
// attn.comp after its bindings, push constants and kv_page.glsl; uses its HD, HG, R (= HG: QT is 1),
// NG, TPR, WG and NEG_INF.
//
// Grid: x = split, z = head group (HG query heads sharing one kv head: the R = HG rows of the
// workgroup). The span the query sees, [first, len) from pos0 and the window, is cut into
// p.n_split splits of attn_split_len positions (attn_split.glsl): the split length follows the
// depth, so a recorded step replays at any position, and splits past the span's end exit. With
// p.n_split == 1 the workgroup writes the final output (sinks applied); else its partial (HD
// unnormalized values, running max m, sum l) for attn_reduce.comp: part (n_split, 1, n_head, HD + 2).
//
// A workgroup walks its split in tiles of WG positions, three barriers a tile:
//   scores   invocation c takes position kv0 + c: its head row once (the block table read once per
//            position), K read in 8-value chunks (f16: one 16-byte load), the dot with each row's
//            query (shared memory, read by every invocation alike), soft-capped, masked
//   softmax  TPR invocations per row: partial maxima; then each of them takes the row's max, the
//            rescale, and the exps of its own positions (its running sum kept in a register)
//   P V      invocation (g, j) of NG key groups x HC chunks: chunk j (8 values, one 16-byte load
//            for f16) of the V rows of positions g, g + NG, ... of the tile, unrolled, for all R
//            rows, in registers; neighbouring invocations read neighbouring 16-byte words of a row
// The scores are double-buffered so the next tile's scores need no barrier after P V. At the
// split's end the key groups' sums and the running sums' parts are added in shared memory.
#ifndef VKLLM_ATTN_DECODE_GLSL
#define VKLLM_ATTN_DECODE_GLSL

#include "attn_split.glsl"

layout(std430, binding = 1) readonly buffer K4 { uvec4 kc4[]; }; // binding 1 again, 16-byte words
layout(std430, binding = 2) readonly buffer V4 { uvec4 vc4[]; };

const uint HC = (HD + 7u) / 8u;      // 8-value chunks per head row (the last part-filled when HD % 8)
const uint KPG = (WG + NG - 1u) / NG; // positions of a tile per key group
const bool F16_VEC = HD % 8u == 0u;  // f16 head rows of whole 16-byte words

shared vec4 q_sh[R * 2u * HC];       // scaled queries, quads 2j, 2j + 1 of chunk j (zeros past HD)
shared float s_sh[2u * R * WG];      // two tiles' scores, then probabilities: [buf][r][c]
shared uint hr_sh[2u * WG];          // two tiles' head rows: [buf][c]
shared float red_sh[WG];             // partial maxima, then the running sums' parts
shared float a_sh[R];                // this tile's rescale of each row
shared vec4 o_sh[R * 2u * HC];       // the key groups' sums, added up at the end
shared float m_sh[R], l_sh[R];

uint kvh; // kv head within the bound cache

// The head row of this kv head at position t.
uint head_row(uint t) { return kv_row(t) * p.kv_hn + kvh; }

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

void load_queries(uint h_base) {
    for (uint e = gl_LocalInvocationID.x; e < R * 2u * HC; e += WG) {
        uint r = e / (2u * HC), dq = e % (2u * HC), b = (h_base + r) * HD + 4u * dq;
        vec4 v = vec4(0.0);
        [[unroll]] for (uint i = 0u; i < 4u; i++)
            if (4u * dq + i < HD) v[i] = q[b + i];
        q_sh[e] = v * p.scale;
    }
}

// Scores of the tile at kv0 (positions before end) into buffer buf; -inf where masked.
void scores(uint kv0, uint end, uint first, uint buf) {
    uint c = gl_LocalInvocationID.x, t = kv0 + c;
    float acc[R];
    [[unroll]] for (uint r = 0u; r < R; r++) acc[r] = 0.0;
    if (t < end) {
        uint hr = head_row(t);
        hr_sh[buf * WG + c] = hr;
        for (uint j = 0u; j < HC; j++) {
            vec4 lo, hi;
            k_chunk(hr, j, lo, hi);
            [[unroll]] for (uint r = 0u; r < R; r++)
                acc[r] += dot(q_sh[(r * HC + j) * 2u], lo) + dot(q_sh[(r * HC + j) * 2u + 1u], hi);
        }
    }
    if (p.softcap > 0.0) {
        [[unroll]] for (uint r = 0u; r < R; r++) acc[r] = p.softcap * tanh_safe(acc[r] / p.softcap);
    }
    [[unroll]] for (uint r = 0u; r < R; r++) s_sh[(buf * R + r) * WG + c] = t < end && t >= first ? acc[r] : NEG_INF;
}

void main() {
    uint split = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    uint h_base = gl_WorkGroupID.z * HG + p.kv_h0 * (p.n_head / p.n_head_kv); // the bound cache's heads
    kvh = h_base / (p.n_head / p.n_head_kv) - p.kv_h0;
    uint len = min(pos0 + 1u, p.n_ctx), first = attn_first(len, p.window);
    uint slen = attn_split_len(len - first, p.n_split);
    uint start = first + split * slen, end = min(start + slen, len);
    if (start >= end) return; // uniform: a split past the span's end
    load_queries(h_base);
    // softmax: row sr, its TPR invocations; P V: key group g, chunk j
    uint sr = tid / TPR, sj = tid % TPR, g = tid / HC, j = tid % HC;
    bool sact = sr < R, vact = g < NG;
    float m = NEG_INF, lp = 0.0;
    vec4 acc[2u * R];
    [[unroll]] for (uint i = 0u; i < 2u * R; i++) acc[i] = vec4(0.0);
    barrier();
    uint buf = 0u;
    for (uint kv0 = start; kv0 < end; kv0 += WG, buf ^= 1u) {
        scores(kv0, end, first, buf);
        barrier();
        uint sb = (buf * R + sr) * WG;
        float mx = NEG_INF;
        if (sact)
            for (uint c = sj; c < WG; c += TPR) mx = max(mx, s_sh[sb + c]);
        red_sh[tid] = mx;
        barrier();
        if (sact) {
            for (uint k = 0u; k < TPR; k++) mx = max(mx, red_sh[sr * TPR + k]);
            float mn = max(m, mx), a = mn == NEG_INF ? 1.0 : exp(m - mn), sum = 0.0;
            m = mn;
            for (uint c = sj; c < WG; c += TPR) {
                float s = s_sh[sb + c], e = s == NEG_INF ? 0.0 : exp(s - mn);
                s_sh[sb + c] = e;
                sum += e;
            }
            lp = lp * a + sum;
            if (sj == 0u) a_sh[sr] = a;
        }
        barrier();
        if (vact) {
            [[unroll]] for (uint r = 0u; r < R; r++) {
                float a = a_sh[r];
                acc[2u * r] *= a;
                acc[2u * r + 1u] *= a;
            }
            uint cend = min(WG, end - kv0);
            [[unroll]] for (uint i = 0u; i < KPG; i++) {
                uint c = g + NG * i, cc = min(c, cend - 1u); // past the tile's end: a valid row, weight 0
                vec4 lo, hi;
                v_chunk(hr_sh[buf * WG + cc], j, lo, hi);
                [[unroll]] for (uint r = 0u; r < R; r++) {
                    float w = c < cend ? s_sh[(buf * R + r) * WG + c] : 0.0;
                    acc[2u * r] = fma(vec4(w), lo, acc[2u * r]);
                    acc[2u * r + 1u] = fma(vec4(w), hi, acc[2u * r + 1u]);
                }
            }
        }
    }
    // the split's end: the running sums' parts and the key groups' sums added up
    if (sact) red_sh[tid] = lp;
    if (sact && sj == 0u) m_sh[sr] = m;
    barrier(); // (also: every invocation is past its last P V)
    if (tid < R) {
        float l = 0.0;
        for (uint k = 0u; k < TPR; k++) l += red_sh[tid * TPR + k];
        l_sh[tid] = l;
    }
    for (uint gg = 0u; gg < NG; gg++) {
        if (vact && g == gg) {
            [[unroll]] for (uint r = 0u; r < R; r++) {
                uint o = (r * HC + j) * 2u;
                o_sh[o] = gg == 0u ? acc[2u * r] : o_sh[o] + acc[2u * r];
                o_sh[o + 1u] = gg == 0u ? acc[2u * r + 1u] : o_sh[o + 1u] + acc[2u * r + 1u];
            }
        }
        barrier();
    }
    for (uint e = tid; e < R * HD; e += WG) {
        uint r = e / HD, d = e % HD, h = h_base + r;
        float v = o_sh[(r * HC + d / 8u) * 2u + (d % 8u) / 4u][d % 4u], mr = m_sh[r], l = l_sh[r];
        if (p.n_split == 1u) { // the final output
            if (p.sinks != 0u) { // one more score, with no value: rescale to the larger max
                float sk = sinks[h], mn = max(mr, sk), a = mr == NEG_INF ? 0.0 : exp(mr - mn);
                v *= a;
                l = l * a + exp(sk - mn);
            }
            o[h * HD + d] = l > 0.0 ? v / l : 0.0;
            continue;
        }
        uint b = (split * p.n_head + h) * (HD + 2u);
        o[b + d] = v;
        if (d == 0u) {
            o[b + HD] = mr;
            o[b + HD + 1u] = l;
        }
    }
}

#endif
