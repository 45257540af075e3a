#version 450
#extension GL_GOOGLE_include_directive : require
// moe.comp - the mixture-of-experts pieces around the experts' products (one variant per define):
//   MOE_ROUTE: one workgroup per token: softmax over its n_expert router logits, the k largest
//     (the lower index first on ties) into ids (n, k), their probabilities renormalized to sum to 1
//     (the sum clamped at 2^-14, as llama.cpp) into w (n, k). Mixtral's and Qwen3-MoE's routing.
//   MOE_SUM: out (n, E) = sum over j < k of w[t, j] * y[t k + j, :] (the experts' outputs).
//   MOE_ADD_ID: y (n, width) += row ids[r] of bias (n_expert, width) for each row r (gpt-oss's expert
//     biases; an id past n_expert adds nothing).
//   MOE_GROUP: the n columns' ids grouped by expert for matvec.comp's grouped MATVEC_ID (prefill):
//     g[0] = tiles, tile t at g[4 + 4t] = (expert, first, count): up to k columns of one expert
//     (ids past n_expert form one more group, of zero columns), then from g[4 + 4 width] (width: the
//     tiles there is room for, at least n / k + n_expert + 1 rounded up) the columns in expert
//     order, each expert's in increasing order; after them (from g[4 + 4 width + n]) where each
//     expert's columns start in that list, n_expert + 2 words (the group of ids past n_expert last,
//     then n), for matmul.comp's MATMUL_ID. One workgroup; one invocation walks the columns (a
//     prefill micro-batch has a few thousand).
// C reference: vkllm__ref_moe_route (runtime/ref/ops.c). The experts' products themselves are
// matvec.comp's MATVEC_ID variants, or matmul.comp's MATMUL_ID ones (prefill).
#include "common.glsl"
#include "pc.glsl"

layout(push_constant) uniform PC { pc_moe p; };

#if defined(MOE_ROUTE)
layout(std430, binding = 0) readonly buffer L { float logits[]; };  // (n, n_expert)
layout(std430, binding = 1) writeonly buffer I { uint ids[]; };     // (n, k)
layout(std430, binding = 2) writeonly buffer W { float w[]; };      // (n, k)

#define NEG_INF (uintBitsToFloat(0xff800000u))
shared float lv[1024];   // the token's logits; a picked one becomes -inf
shared float rv[1024];   // reduction values
shared uint ri[1024];    // reduction indices
shared float pw[64];     // the picks' probabilities

void main() {
    uint t = gl_LocalInvocationID.x, tok = gl_WorkGroupID.x, WG = gl_WorkGroupSize.x;
    uint base = tok * p.n_expert;
    for (uint i = t; i < p.n_expert; i += WG) lv[i] = logits[base + i];
    barrier();
    // max and sum of exp (the softmax's denominator)
    float mx = NEG_INF;
    for (uint i = t; i < p.n_expert; i += WG) mx = max(mx, lv[i]);
    rv[t] = mx;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) rv[t] = max(rv[t], rv[t + s]);
        barrier();
    }
    float m = rv[0];
    barrier();
    float sum = 0.0;
    for (uint i = t; i < p.n_expert; i += WG) sum += exp(lv[i] - m);
    rv[t] = sum;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) rv[t] += rv[t + s];
        barrier();
    }
    float denom = rv[0];
    barrier();
    // k rounds of argmax (each thread walks increasing indices; ties go to the lower index)
    for (uint j = 0; j < p.k; j++) {
        float bv = NEG_INF;
        uint bi = 0xffffffffu;
        for (uint i = t; i < p.n_expert; i += WG) {
            float v = lv[i];
            if (bi == 0xffffffffu || v > bv) { bv = v; bi = i; }
        }
        rv[t] = bv;
        ri[t] = bi;
        barrier();
        for (uint s = WG / 2; s > 0; s >>= 1) {
            if (t < s) {
                float v = rv[t + s];
                uint i = ri[t + s];
                if (i != 0xffffffffu && (ri[t] == 0xffffffffu || v > rv[t] || (v == rv[t] && i < ri[t]))) {
                    rv[t] = v;
                    ri[t] = i;
                }
            }
            barrier();
        }
        if (t == 0) {
            uint b = ri[0];
            ids[tok * p.k + j] = b;
            pw[j] = exp(lv[b] - m) / denom;
            lv[b] = NEG_INF;
        }
        barrier();
    }
    if (t == 0) {
        float sel = 0.0;
        for (uint j = 0; j < p.k; j++) sel += pw[j];
        sel = max(sel, 6.103515625e-5);
        for (uint j = 0; j < p.k; j++) w[tok * p.k + j] = pw[j] / sel;
    }
}
#elif defined(MOE_SUM)
layout(std430, binding = 0) readonly buffer Y { float y[]; };   // (n k, E)
layout(std430, binding = 1) readonly buffer W { float w[]; };   // (n, k)
layout(std430, binding = 2) writeonly buffer O { float o[]; };  // (n, E)

void main() {
    uint i = global_index_2d();
    if (i >= p.n * p.width) return;
    uint tok = i / p.width, e = i % p.width;
    float s = 0.0;
    for (uint j = 0; j < p.k; j++) s += w[tok * p.k + j] * y[(tok * p.k + j) * p.width + e];
    o[i] = s;
}
#elif defined(MOE_ADD_ID)
layout(std430, binding = 0) readonly buffer B { float bias[]; }; // (n_expert, width)
layout(std430, binding = 1) readonly buffer I { uint ids[]; };   // (n,)
layout(std430, binding = 2) buffer Y { float y[]; };             // (n, width)

void main() {
    uint i = global_index_2d();
    if (i >= p.n * p.width) return;
    uint e = ids[i / p.width];
    if (e < p.n_expert) y[i] += bias[e * p.width + i % p.width];
}
#elif defined(MOE_GROUP)
layout(std430, binding = 0) readonly buffer I { uint ids[]; };  // (n,)
layout(std430, binding = 1) writeonly buffer G { uint g[]; };   // see above

shared uint cnt[1025];  // per expert (and one for ids past the last): count, then the next slot

void main() {
    uint t = gl_LocalInvocationID.x, ne = p.n_expert;
    for (uint e = t; e <= ne; e += gl_WorkGroupSize.x) cnt[e] = 0u;
    barrier();
    if (t != 0u) return;
    for (uint c = 0u; c < p.n; c++) cnt[min(ids[c], ne)]++;
    uint tiles = 0u, first = 0u;
    for (uint e = 0u; e <= ne; e++) {
        uint n_e = cnt[e];
        for (uint s = 0u; s < n_e; s += p.k, tiles++) {
            g[4u + 4u * tiles] = e;
            g[4u + 4u * tiles + 1u] = first + s;
            g[4u + 4u * tiles + 2u] = min(p.k, n_e - s);
            g[4u + 4u * tiles + 3u] = 0u;
        }
        cnt[e] = first;
        first += n_e;
    }
    g[0] = tiles;
    uint ob = 4u + 4u * p.width;
    for (uint e = 0u; e <= ne; e++) g[ob + p.n + e] = cnt[e];
    g[ob + p.n + ne + 1u] = p.n;
    for (uint c = 0u; c < p.n; c++) g[ob + cnt[min(ids[c], ne)]++] = c;
}
#else
#error "define MOE_ROUTE, MOE_SUM, MOE_ADD_ID or MOE_GROUP"
#endif
