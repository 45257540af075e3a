// attn_decode.glsl - attn.comp's walk of the cache (ATTN_SPLIT): the decode (one query, split
// over the cache) and the prefill without cooperative matrices (QT queries a workgroup, one split).
// Included by attn.comp after its bindings, push constants and kv_page.glsl; uses its HD, HG, QT,
// R (= QT x HG rows), NG, DS, B and NEG_INF.
//
// Grid: x = split, y = query tile, z = head group (HG query heads sharing one kv head, times QT
// queries: the R rows of the workgroup, each masked to the positions its query sees). The span
// the workgroup sees (the decode query's: [first, len) from pos0 and the window) is cut into
// p.n_split splits of attn_split_len positions (attn_split.glsl): the split length follows the
// depth, so a recorded step replays at any position, and splits past the span's end exit. With
// p.n_split == 1 the workgroup writes the final output (sinks applied); else its partial (HD
// unnormalized values, running max m, sum l) for attn_reduce.comp: part (n_split, 1, n_head, HD + 2).
//
// As ggml's flash-attention decode: the WG = NG x DS invocations are NG key groups of DS lanes,
// and the DS lanes of a group split the head dimension (lane ds holds 8-value chunks ds, ds + DS,
// ... of the R queries and of their running outputs, in registers). A step of the walk gives key
// group g the B positions kv0 + g B ..: each lane reads its chunks of their K rows (one 16-byte
// load a chunk of f16; neighbouring lanes neighbouring words of a row), its partial dot with each
// query; the DS partials of each (row, position) are added in shared memory (two barriers a step,
// none with DS = 1); then each key group keeps its own online softmax (max, sum, output: a split
// within the split) and the lanes add their V chunks times the B probabilities, unrolled. At the
// split's end the key groups' outputs are combined in shared memory (rescaled to the largest max).
// On CPU devices DS = 1 (runtime/ops/ops_attn.c's walk_one_lane): a lane holds whole rows, nothing
// is added across lanes, and a workgroup is one subgroup (one SIMD vector of the CPU).
#ifndef VKLLM_ATTN_DECODE_GLSL
#define VKLLM_ATTN_DECODE_GLSL

#include "attn_split.glsl"
#include "attn_chunk.glsl"

const uint CPL = (HC + DS - 1u) / DS; // chunks per lane
#if defined(ATTN_F16) // the queries in f16 (see the header)
#define QVEC f16vec4
#define QFLOAT float16_t
#else
#define QVEC vec4
#define QFLOAT float
#endif
const uint RB = R * B;                // (row, position) scores of a key group's step
#if !defined(ATTN_SG)
shared float ps_sh[DS > 1u ? WG * RB : 1u]; // DS > 1: the lanes' partial scores [lane][r][b]
shared float s_sh[DS > 1u ? NG * RB : 1u];  // DS > 1: the key groups' scores [g][r][b]
#endif
shared float om_sh[NG * R], ol_sh[NG * R]; // each key group's max and sum
shared vec4 oo_sh[NG * R * 2u * HC];       // each key group's output, quads 2j, 2j + 1 of chunk j

void main() {
    uint split = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x, ds = lid % DS, g = lid / DS;
    uint q_base = gl_WorkGroupID.y * QT, group = p.n_head / p.n_head_kv;
    uint h_base = gl_WorkGroupID.z * HG + p.kv_h0 * group; // the bound cache's heads
    uint kvh = h_base / group - p.kv_h0;
    uint qlast = min(q_base + QT, p.n) - 1u; // the workgroup's last query
    // the positions any row sees: from the first row's first to the last row's last
    uint len = min(pos0 + qlast + 1u, p.n_ctx), first = attn_first(min(pos0 + q_base + 1u, p.n_ctx), p.window);
    uint slen = attn_split_len(len - first, p.n_split);
    uint start = first + split * slen, end = min(start + slen, len);
    if (start >= end) return; // uniform: a split past the span's end
    uint rlim[R], rfirst[R]; // each row's positions: rfirst .. rlim-1 (none past the last query)
    QVEC qv[R * 2u * CPL];
    vec4 acc[R * 2u * CPL];
    [[unroll]] for (uint r = 0u; r < R; r++) {
        uint qi = q_base + r / HG, qb = (min(qi, p.n - 1u) * p.n_head + h_base + r % HG) * HD;
        rlim[r] = qi < p.n ? min(pos0 + qi + 1u, p.n_ctx) : 0u;
        rfirst[r] = attn_first(rlim[r], p.window);
        [[unroll]] for (uint c = 0u; c < CPL; c++) {
            uint d0 = 8u * (ds + c * DS);
            [[unroll]] for (uint i = 0u; i < 8u; i++) {
                QFLOAT v = QFLOAT(d0 + i < HD ? q[qb + d0 + i] * p.scale : 0.0);
                if (i < 4u) qv[(r * CPL + c) * 2u][i] = v;
                else qv[(r * CPL + c) * 2u + 1u][i - 4u] = v;
            }
            acc[(r * CPL + c) * 2u] = vec4(0.0);
            acc[(r * CPL + c) * 2u + 1u] = vec4(0.0);
        }
    }
    float m[R], l[R];
    [[unroll]] for (uint r = 0u; r < R; r++) m[r] = NEG_INF, l[r] = 0.0;

    for (uint kv0 = start; kv0 < end; kv0 += NG * B) { // uniform: every key group steps alike
        uint k0 = kv0 + g * B, hr[B];
        float s[RB];
        [[unroll]] for (uint b = 0u; b < B; b++) {
            uint t = min(k0 + b, end - 1u); // (< n_ctx: its own row where the cache is neither a ring nor paged)
            hr[b] = (p.page == 0u && p.n_rows >= p.n_ctx ? t : kv_row(t)) * p.kv_hn + kvh;
        }
        [[unroll]] for (uint r = 0u; r < R; r++) { // (loops of at most R or B steps: unrolled by any driver)
            [[unroll]] for (uint b = 0u; b < B; b++) s[r * B + b] = 0.0;
        }
        [[unroll]] for (uint c = 0u; c < CPL; c++) {
            uint j = ds + c * DS;
            if (HC % DS == 0u || j < HC) {
                [[unroll]] for (uint b = 0u; b < B; b++) {
#if defined(ATTN_F16) // the chunk's dot as two f16 sums of 4 products (packed pairs), promoted to f32
                    f16vec4 lo, hi;
                    k_chunk_h(hr[b], j, lo, hi);
                    [[unroll]] for (uint r = 0u; r < R; r++) {
                        f16vec4 a = qv[(r * CPL + c) * 2u], e = qv[(r * CPL + c) * 2u + 1u];
                        f16vec2 t2 = a.xy * lo.xy;
                        t2 = fma(a.zw, lo.zw, t2);
                        t2 = fma(e.xy, hi.xy, t2);
                        t2 = fma(e.zw, hi.zw, t2);
                        s[r * B + b] += float(t2.x) + float(t2.y);
                    }
#else
                    vec4 lo, hi;
                    k_chunk(hr[b], j, lo, hi);
                    [[unroll]] for (uint r = 0u; r < R; r++)
                        s[r * B + b] += dot(qv[(r * CPL + c) * 2u], lo) + dot(qv[(r * CPL + c) * 2u + 1u], hi);
#endif
                }
            }
        }
#if defined(ATTN_SG)
        if (DS > 1u) { // the DS partials added up across the lanes (full subgroups of a multiple of DS)
            if (DS == gl_SubgroupSize) { // the whole subgroup: one reduction a score
                [[unroll]] for (uint r = 0u; r < R; r++) {
                    [[unroll]] for (uint b = 0u; b < B; b++) s[r * B + b] = subgroupAdd(s[r * B + b]);
                }
            } else {
                [[unroll]] for (uint r = 0u; r < R; r++) {
                    [[unroll]] for (uint b = 0u; b < B; b++) {
                        for (uint o = DS / 2u; o > 0u; o /= 2u) s[r * B + b] += subgroupShuffleXor(s[r * B + b], o);
                    }
                }
            }
        }
#else
        if (DS > 1u) { // the DS partials added up: lane ds adds those of scores ds, ds + DS, ...
            [[unroll]] for (uint r = 0u; r < R; r++) {
                [[unroll]] for (uint b = 0u; b < B; b++) ps_sh[lid * RB + r * B + b] = s[r * B + b];
            }
            barrier();
            for (uint e = ds; e < RB; e += DS) {
                float t = 0.0;
                for (uint k = 0u; k < DS; k++) t += ps_sh[(g * DS + k) * RB + e];
                s_sh[g * RB + e] = t;
            }
            barrier();
            [[unroll]] for (uint r = 0u; r < R; r++) {
                [[unroll]] for (uint b = 0u; b < B; b++) s[r * B + b] = s_sh[g * RB + r * B + b];
            }
        }
#endif
        [[unroll]] for (uint r = 0u; r < R; r++) {
            float mx = m[r];
            [[unroll]] for (uint b = 0u; b < B; b++) {
                float v = s[r * B + b];
                if (p.softcap > 0.0) v = p.softcap * tanh_safe(v / p.softcap);
                uint t = k0 + b;
                v = t < end && t < rlim[r] && t >= rfirst[r] ? v : NEG_INF;
                s[r * B + b] = v;
                mx = max(mx, v);
            }
            float mref = mx == NEG_INF ? 0.0 : mx; // no position yet: nothing to weigh
            float alpha = m[r] == NEG_INF ? 0.0 : exp(m[r] - mref), sum = 0.0;
            m[r] = mx;
            [[unroll]] for (uint b = 0u; b < B; b++) {
                float e = s[r * B + b] == NEG_INF ? 0.0 : exp(s[r * B + b] - mref);
                s[r * B + b] = e;
                sum += e;
            }
            l[r] = l[r] * alpha + sum;
            [[unroll]] for (uint c = 0u; c < 2u * CPL; c++) acc[r * 2u * CPL + c] *= alpha;
        }
        [[unroll]] for (uint c = 0u; c < CPL; c++) {
            uint j = ds + c * DS;
            if (HC % DS == 0u || j < HC) {
#if defined(ATTN_F16) // the step's B products per row in f16 (probabilities <= 1), added to the f32 output
                f16vec4 t[R * 2u];
                [[unroll]] for (uint r = 0u; r < R; r++) t[2u * r] = t[2u * r + 1u] = f16vec4(0.0);
                [[unroll]] for (uint b = 0u; b < B; b++) {
                    f16vec4 lo, hi;
                    v_chunk_h(hr[b], j, lo, hi);
                    [[unroll]] for (uint r = 0u; r < R; r++) {
                        f16vec4 w = f16vec4(float16_t(s[r * B + b]));
                        t[2u * r] = fma(w, lo, t[2u * r]);
                        t[2u * r + 1u] = fma(w, hi, t[2u * r + 1u]);
                    }
                }
                [[unroll]] for (uint r = 0u; r < R; r++) {
                    acc[(r * CPL + c) * 2u] += vec4(t[2u * r]);
                    acc[(r * CPL + c) * 2u + 1u] += vec4(t[2u * r + 1u]);
                }
#else
                [[unroll]] for (uint b = 0u; b < B; b++) {
                    vec4 lo, hi;
                    v_chunk(hr[b], j, lo, hi);
                    [[unroll]] for (uint r = 0u; r < R; r++) {
                        float w = s[r * B + b];
                        acc[(r * CPL + c) * 2u] = fma(vec4(w), lo, acc[(r * CPL + c) * 2u]);
                        acc[(r * CPL + c) * 2u + 1u] = fma(vec4(w), hi, acc[(r * CPL + c) * 2u + 1u]);
                    }
                }
#endif
            }
        }
    }
    // the split's end: the key groups' maxima, sums and outputs combined
    if (ds == 0u) {
        [[unroll]] for (uint r = 0u; r < R; r++) om_sh[g * R + r] = m[r], ol_sh[g * R + r] = l[r];
    }
    [[unroll]] for (uint r = 0u; r < R; r++) {
        [[unroll]] for (uint c = 0u; c < CPL; c++) {
            uint j = ds + c * DS;
            if (HC % DS == 0u || j < HC) {
                oo_sh[((g * R + r) * HC + j) * 2u] = acc[(r * CPL + c) * 2u];
                oo_sh[((g * R + r) * HC + j) * 2u + 1u] = acc[(r * CPL + c) * 2u + 1u];
            }
        }
    }
    barrier();
    for (uint e = lid; e < R * HD; e += WG) {
        uint r = e / HD, d = e % HD, qi = q_base + r / HG, h = h_base + r % HG;
        if (qi >= p.n) continue;
        float mr = NEG_INF;
        for (uint k = 0u; k < NG; k++) mr = max(mr, om_sh[k * R + r]);
        float v = 0.0, lr = 0.0;
        for (uint k = 0u; k < NG; k++) {
            float mk = om_sh[k * R + r];
            if (mk == NEG_INF) continue; // a key group with no position (weighs nothing)
            float a = exp(mk - mr);
            v += a * oo_sh[((k * R + r) * HC + d / 8u) * 2u + (d % 8u) / 4u][d % 4u];
            lr += a * ol_sh[k * R + r];
        }
        if (p.n_split == 1u) { // the final output
            if (p.sinks != 0u) { // one more score, with no value: rescale to the larger max
                float sk = sinks[h], mn = max(mr, sk), a = mr == NEG_INF ? 0.0 : exp(mr - mn);
                v *= a;
                lr = lr * a + exp(sk - mn);
            }
            o[(qi * p.n_head + h) * HD + d] = lr > 0.0 ? v / lr : 0.0;
            continue;
        }
        uint b = ((split * p.n + qi) * p.n_head + h) * (HD + 2u);
        o[b + d] = v;
        if (d == 0u) {
            o[b + HD] = mr;
            o[b + HD + 1u] = lr;
        }
    }
}

#endif
