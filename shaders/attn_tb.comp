#version 450
#extension GL_GOOGLE_include_directive : require
// texel buffers as textureBuffer + texelFetch (no combined sampler: OpTypeSampledImage with Dim=Buffer
// is invalid from SPIR-V 1.6 on, which Mesa 25 warns about)
#extension GL_EXT_samplerless_texture_functions : require
#extension GL_EXT_control_flow_attributes : enable
// attn_tb.comp - causal attention over the f16 KV cache for CPU devices (lavapipe); same results
// and the same outputs as attn.comp (runtime/ops/ops_attn.c picks one of the two).
//
// Shaped for lavapipe 22.3: one workgroup runs as a loop over 8-lane SIMD chunks on one thread,
// a storage- or uniform-buffer load at a loop-dependent index is a per-lane scalar loop, and a
// 16-byte texel fetch (R32G32B32A32_UINT) is the cheapest way to read memory. So every
// invocation owns one (query, head) row, or in split mode one (split, head) row of the one query,
// and walks the cache itself with an online softmax: no shared memory, no barriers. Its query
// (64 floats for head_dim 64) and its running output stay in registers; K and V rows are read as
// uvec4 texels of 8 halves (head_dim % 8 == 0). The G query heads of one kv head sit in
// neighbouring lanes, so a K/V row is fetched once from memory and then from cache.
//
// The cache is walked in blocks of B positions: B scores, one max and one rescale of the output
// per block (not per position); the block's positions past a row's limit score -inf and are
// fetched at the row's last valid position instead (the cache past the current length may hold
// anything, NaN included, and 0 * NaN is NaN).
//
// Workgroup = G heads (lane % G) x J (lane / G): J consecutive queries (y = query tile), or in
// split mode (ATTN_SPLIT) J consecutive splits of the one query (x = split group). z = kv head.
// Split mode cuts the current length L (from pos0) into n_split splits of equal length (a
// multiple of B), so every split works whatever L is (a fixed split length would leave most
// invocations idle at short lengths and the reduce many partials at long ones); each writes its
// partial (HD unnormalized values, then max m in log2 units, sum l, 0, 0): part (n_split, n,
// n_head, HD + 4), -inf and 0 for a split past L. attn_tb_reduce.comp combines them.
//
// Bindings: q (n, n_head, HD) f32 as texels of 4 floats; K, V (n_rows, n_head_kv, HD) f16 pairs as
// texels of 8 halves (KV_Q8: q8_0 quants as texels of 16 int8, then the scales); pos0; o (final or partials); sinks (n_head,) f32, read when p.sinks: head h's
// softmax also counts the score sinks[h], which has no value (the reduce adds it when split); the
// block table of a paged cache (kv_page.glsl: position t's row).
#include "common.glsl"
#include "pc_attn.glsl"
#include "tanh.glsl"

layout(constant_id = 1) const uint HD = 64; // head_dim, a multiple of 8 (KV_Q8: of 32)
layout(constant_id = 2) const uint G = 8;   // query heads per kv head
layout(constant_id = 3) const uint J = 1;   // queries (or splits) per workgroup; WG = G * J
layout(constant_id = 4) const uint B = 8;   // cache positions per block
const uint HQ = HD / 4u;                    // vec4s per head row
#ifdef KV_Q8
// q8_0 K and V (kv_q8.glsl): a head row's quants are HD / 16 texels of 16 int8 at texel
// hr * HD / 16; its HD / 32 scales (1, 2 or 4 f32) share one texel of the scales that follow all
// the quants: float n_rows * width / 4 + hr * HD / 32.
const uint HT = HD / 16u;                   // quant texels per head row
#else
const uint HT = HD / 8u;                    // texels per K/V head row (8 halves each)
#endif

layout(binding = 0) uniform utextureBuffer qt;
layout(binding = 1) uniform utextureBuffer kt;
layout(binding = 2) uniform utextureBuffer vt;
layout(std430, binding = 3) readonly buffer P { uint pos0; };
layout(std430, binding = 4) writeonly buffer O { float o[]; };
layout(std430, binding = 5) readonly buffer SK { float sinks[]; };
layout(std430, binding = 6) readonly buffer BT { uint btab[]; }; // block table (p.page > 0)
layout(push_constant) uniform PC { pc_attn p; };
#include "kv_page.glsl"

#define NEG_INF (uintBitsToFloat(0xff800000u))
const float LOG2E = 1.4426950408889634;

vec4 h4(uint a, uint b) { return vec4(unpackHalf2x16(a), unpackHalf2x16(b)); }
// The four int8 of a quant word as floats (byte 0 first).
vec4 i4(uint w) { return vec4(ivec4(int(w << 24), int(w << 16), int(w << 8), int(w)) >> 24); }

void main() {
    uint lane = gl_LocalInvocationID.x, hi = lane % G, j = lane / G;
    uint kvh = gl_WorkGroupID.z, h = (p.kv_h0 + kvh) * G + hi; // kvh: of the bound cache
    uint P0 = pos0;
#ifdef ATTN_SPLIT
    uint qi = 0u;
    uint split = gl_WorkGroupID.x * J + j;
    uint L = min(P0 + 1u, p.n_ctx);                                  // positions the query sees
    uint sl = ((L + p.n_split - 1u) / p.n_split + B - 1u) / B * B;   // positions per split
    uint start = min(split * sl, L);
    uint lim = min(start + sl, L);              // this row's positions: start .. lim-1 (maybe none)
    bool live = split < p.n_split;
#else
    uint q0 = gl_WorkGroupID.y * J, qi = q0 + j;
    uint qlast = min(q0 + J, p.n) - 1u;          // the workgroup's last query
    uint start = 0u;
    uint lim = min(P0 + min(qi, qlast) + 1u, p.n_ctx);
    bool live = qi < p.n;
#endif
    // positions this lane walks from its start: a lane with no row walks none (a SIMD chunk of
    // such lanes, e.g. splits past the length, leaves the loop at once)
    uint walk = live ? lim - start : 0u;
    // a position of the cache this row may fetch in place of one past its limit (a valid one for a
    // live row; any one inside the cache for a lane whose split or query does not exist)
    uint lastv = min(max(lim, start + 1u) - 1u, p.n_ctx - 1u);
    // a sliding window (p.window > 0) ending at the row's query: positions before first score -inf
#ifdef ATTN_SPLIT
    uint qlim = L;
#else
    uint qlim = min(P0 + qi + 1u, p.n_ctx);
#endif
    uint first = p.window > 0u && qlim > p.window ? qlim - p.window : 0u;
    uint kstride = p.kv_hn * HT;                 // texels between cache positions
    uint kbase = kvh * HT;
#ifdef KV_Q8
    uint sbase = p.n_rows * p.kv_hn * HD / 4u; // the scales' first float
#endif

    // the query, scaled, in log2 units (exp2 below)
    vec4 q[HQ];
    uint qb = (min(qi, p.n - 1u) * p.n_head + h) * HQ;
    float qs = p.scale * LOG2E;
    [[unroll]] for (uint i = 0u; i < HQ; i++) q[i] = uintBitsToFloat(texelFetch(qt, int(qb + i))) * qs;

    vec4 acc[HQ];
    [[unroll]] for (uint i = 0u; i < HQ; i++) acc[i] = vec4(0.0);
    float m = NEG_INF, l = 0.0;

    for (uint t0 = 0u; t0 < walk; t0 += B) {
        uint kv0 = start + t0;
        float s[B];
        uint row[B];
        // a paged cache whose blocks hold whole kernel blocks (kv0 is a multiple of B): one table
        // read for the B positions (a storage read at a varying index is a per-lane loop here)
        bool one_page = p.page != 0u && ((1u << p.page) % B) == 0u;
        uint pmask = (1u << p.page) - 1u, pbase = one_page ? kv_row(kv0) - (kv0 & pmask) : 0u;
        [[unroll]] for (uint b = 0u; b < B; b++) {
            s[b] = 0.0;
            uint t = min(kv0 + b, lastv); // kv0 <= t < kv0 + B
            row[b] = (one_page ? pbase + (t & pmask) : kv_row(t)) * kstride + kbase;
        }
#ifdef KV_Q8
        // each position's scales: hr = row / HT head rows in, HD / 32 of them from float sbase + hr * HD / 32
        vec4 ks[B], vs[B];
        [[unroll]] for (uint b = 0u; b < B; b++) {
            uint f = sbase + row[b] / HT * (HD / 32u);
            ks[b] = uintBitsToFloat(texelFetch(kt, int(f / 4u)));
            vs[b] = uintBitsToFloat(texelFetch(vt, int(f / 4u)));
            uint o = f % 4u; // HD 32: one scale, 64: two; the texel's others belong to other rows
            if (o != 0u) ks[b] = o == 1u ? ks[b].yzwx : o == 2u ? ks[b].zwxy : ks[b].wxyz;
            if (o != 0u) vs[b] = o == 1u ? vs[b].yzwx : o == 2u ? vs[b].zwxy : vs[b].wxyz;
        }
        [[unroll]] for (uint t = 0u; t < HT; t++) { // 16 values: half a block
            vec4 q0 = q[4u * t], q1 = q[4u * t + 1u], q2 = q[4u * t + 2u], q3 = q[4u * t + 3u];
            [[unroll]] for (uint b = 0u; b < B; b++) {
                uvec4 k = texelFetch(kt, int(row[b] + t));
                s[b] += (dot(i4(k.x), q0) + dot(i4(k.y), q1) + dot(i4(k.z), q2) + dot(i4(k.w), q3)) * ks[b][t / 2u];
            }
        }
#else
        [[unroll]] for (uint t = 0u; t < HT; t++) {
            vec4 qa = q[2u * t], qc = q[2u * t + 1u];
            [[unroll]] for (uint b = 0u; b < B; b++) {
                uvec4 k = texelFetch(kt, int(row[b] + t));
                s[b] += dot(h4(k.x, k.y), qa) + dot(h4(k.z, k.w), qc);
            }
        }
#endif
        if (p.softcap > 0.0) { // s is in log2 units: cap the natural-log score
            [[unroll]] for (uint b = 0u; b < B; b++) s[b] = p.softcap * LOG2E * tanh_safe(s[b] / (p.softcap * LOG2E));
        }
        float mx = m;
        [[unroll]] for (uint b = 0u; b < B; b++) {
            s[b] = kv0 + b < lim && kv0 + b >= first ? s[b] : NEG_INF;
            mx = max(mx, s[b]);
        }
        float mref = mx == NEG_INF ? 0.0 : mx; // no position yet: nothing to weigh
        float alpha = m == NEG_INF ? 0.0 : exp2(m - mref);
        m = mx;
        float sum = 0.0;
        [[unroll]] for (uint b = 0u; b < B; b++) {
            s[b] = s[b] == NEG_INF ? 0.0 : exp2(s[b] - mref);
            sum += s[b];
        }
        l = l * alpha + sum;
#ifdef KV_Q8
        [[unroll]] for (uint t = 0u; t < HT; t++) {
            vec4 o0 = acc[4u * t] * alpha, o1 = acc[4u * t + 1u] * alpha;
            vec4 o2 = acc[4u * t + 2u] * alpha, o3 = acc[4u * t + 3u] * alpha;
            [[unroll]] for (uint b = 0u; b < B; b++) {
                uvec4 v = texelFetch(vt, int(row[b] + t));
                float w = s[b] * vs[b][t / 2u];
                o0 += w * i4(v.x);
                o1 += w * i4(v.y);
                o2 += w * i4(v.z);
                o3 += w * i4(v.w);
            }
            acc[4u * t] = o0, acc[4u * t + 1u] = o1, acc[4u * t + 2u] = o2, acc[4u * t + 3u] = o3;
        }
#else
        [[unroll]] for (uint t = 0u; t < HT; t++) {
            vec4 oa = acc[2u * t] * alpha, oc = acc[2u * t + 1u] * alpha;
            [[unroll]] for (uint b = 0u; b < B; b++) {
                uvec4 v = texelFetch(vt, int(row[b] + t));
                oa += s[b] * h4(v.x, v.y);
                oc += s[b] * h4(v.z, v.w);
            }
            acc[2u * t] = oa;
            acc[2u * t + 1u] = oc;
        }
#endif
    }
    if (!live) return;

#ifdef ATTN_SPLIT
    uint ob = ((split * p.n + qi) * p.n_head + h) * (HD + 4u);
    [[unroll]] for (uint i = 0u; i < HQ; i++) {
        o[ob + 4u * i] = acc[i].x;
        o[ob + 4u * i + 1u] = acc[i].y;
        o[ob + 4u * i + 2u] = acc[i].z;
        o[ob + 4u * i + 3u] = acc[i].w;
    }
    o[ob + HD] = m;
    o[ob + HD + 1u] = l;
    o[ob + HD + 2u] = 0.0;
    o[ob + HD + 3u] = 0.0;
#else
    uint ob = (qi * p.n_head + h) * HD;
    if (p.sinks != 0u) { // one more score (log2 units), with no value: rescale to the larger max
        float sk = sinks[h] * LOG2E, mn = max(m, sk), a = m == NEG_INF ? 0.0 : exp2(m - mn);
        [[unroll]] for (uint i = 0u; i < HQ; i++) acc[i] *= a;
        l = l * a + exp2(sk - mn);
    }
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    [[unroll]] for (uint i = 0u; i < HQ; i++) {
        o[ob + 4u * i] = acc[i].x * inv;
        o[ob + 4u * i + 1u] = acc[i].y * inv;
        o[ob + 4u * i + 2u] = acc[i].z * inv;
        o[ob + 4u * i + 3u] = acc[i].w * inv;
    }
#endif
}
