#version 450
#extension GL_GOOGLE_include_directive : require
// rope_kv.comp - rope.comp on q and k and kv_store.comp on k and v, in one dispatch: q (n, n_head,
// head_dim) rotated in place; k rotated and v as it is, rounded to f16, into the caches' rows
// pos0 .. pos0+n-1 (rows at or beyond n_ctx are skipped). k itself is left as it was: attention
// reads keys from the cache. Per token the invocations are, in order: one per rotated pair of q
// (n_head * n_rot/2), one per f16 pair (cache word) of k's row (width/2), one per word of v's row
// (width/2). A k word takes its two values from k and their partners (different pairs under
// NeoX), each rotated with exactly the arithmetic of rope.comp, so the cache holds what rope.comp
// followed by kv_store.comp would have stored. The rotation: rope_angle.glsl.
//
// With K_Q8 (V_Q8) the k (v) cache is q8_0 (kv_q8.glsl): one invocation per block of 32 values
// of the row instead of per f16 pair.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "pc_attn.glsl"
#include "rope_angle.glsl"
#include "kv_q8.glsl"

layout(std430, binding = 0) buffer Q { float q[]; };                  // (n, n_head, head_dim)
layout(std430, binding = 1) readonly buffer K { float k[]; };         // (n, width)
layout(std430, binding = 2) readonly buffer V { float v[]; };         // (n, width)
layout(std430, binding = 3) readonly buffer P { uint pos0; };
layout(std430, binding = 4) readonly buffer F { uvec2 turns[]; };     // (n_rot/2,) 64-bit g_i / (2 pi)
layout(std430, binding = 5) writeonly buffer KC { uint kcache[]; };   // (n_ctx, width/2) f16 pairs
layout(std430, binding = 6) writeonly buffer VC { uint vcache[]; };   // (n_ctx, width/2) f16 pairs
layout(std430, binding = 7) readonly buffer BT { uint btab[]; };   // block table (p.page > 0)
layout(push_constant) uniform PC { pc_rope_kv p; };
#include "kv_page.glsl"

// Element d (< head_dim) of k's head starting at base, rotated for position pos as rope.comp
// rotates it.
float k_rotated(uint base, uint d, uint pos) {
    uint half_rot = p.n_rot / 2;
    if (d >= p.n_rot) return k[base + d];
    uint i, i0, i1;
    if (p.neox != 0) {
        i = d < half_rot ? d : d - half_rot;
        i0 = i, i1 = i + half_rot;
    } else {
        i = d / 2;
        i0 = 2 * i, i1 = 2 * i + 1;
    }
    vec2 cs = rope_rotation(pos, turns[i]) * p.mscale;
    float c = cs.x, s = cs.y;
    float x0 = k[base + i0], x1 = k[base + i1];
    return d == i0 ? x0 * c - x1 * s : x0 * s + x1 * c;
}

#ifdef K_Q8
const uint KU = 32u; // values per k unit: a q8_0 block
#else
const uint KU = 2u;  // an f16 pair
#endif
#ifdef V_Q8
const uint VU = 32u;
#else
const uint VU = 2u;
#endif

void main() {
    uint idx = global_index_2d();
    uint half_rot = p.n_rot / 2;
    uint nq = p.n_head * half_rot, wpr = p.width / 2, ku = p.width / KU, vu = p.width / VU;
    uint per_tok = nq + ku + vu;
    if (idx >= p.n * per_tok) return;
    uint tok = idx / per_tok, j = idx % per_tok;
    uint pos = pos0 + tok;
    if (j < nq) { // q: one rotated pair, in place
        uint i = j % half_rot;
        uint base = (tok * p.n_head + j / half_rot) * p.head_dim;
        uint i0 = p.neox != 0 ? i : 2 * i;
        uint i1 = p.neox != 0 ? i + half_rot : 2 * i + 1;
        vec2 cs = rope_rotation(pos, turns[i]) * p.mscale;
        float c = cs.x, s = cs.y;
        float x0 = q[base + i0], x1 = q[base + i1];
        q[base + i0] = x0 * c - x1 * s;
        q[base + i1] = x0 * s + x1 * c;
        return;
    }
    if (pos >= p.n_ctx || pos < pos0) return; // past the cache (or wrapped around)
    j -= nq;
    uint r = kv_row(pos); // a ring's or a paged cache's row (kv_page.glsl)
    if (j < ku) {
#ifdef K_Q8 // k: one q8_0 block of 32 rotated values
        float x[32];
        [[unroll]] for (uint i = 0u; i < 32u; i++) {
            uint e = 32u * j + i;
            x[i] = k_rotated(tok * p.width + (e / p.head_dim) * p.head_dim, e % p.head_dim, pos);
        }
        q8_block b = q8_quantize(x);
        uint w0 = (r * p.width + 32u * j) / 4u;
        [[unroll]] for (uint i = 0u; i < 8u; i++) kcache[w0 + i] = b.w[i];
        kcache[p.n_rows * p.width / 4u + r * ku + j] = floatBitsToUint(b.d);
#else // k: one cache word of two rotated values
        uint e = 2 * j;
        uint base = tok * p.width + (e / p.head_dim) * p.head_dim;
        uint d = e % p.head_dim;
        kcache[r * wpr + j] = packHalf2x16(vec2(k_rotated(base, d, pos), k_rotated(base, d + 1, pos)));
#endif
    } else {
        j -= ku;
#ifdef V_Q8 // v: one q8_0 block as it is
        float x[32];
        [[unroll]] for (uint i = 0u; i < 32u; i++) x[i] = v[tok * p.width + 32u * j + i];
        q8_block b = q8_quantize(x);
        uint w0 = (r * p.width + 32u * j) / 4u;
        [[unroll]] for (uint i = 0u; i < 8u; i++) vcache[w0 + i] = b.w[i];
        vcache[p.n_rows * p.width / 4u + r * vu + j] = floatBitsToUint(b.d);
#else // v: one cache word as it is
        uint s = tok * p.width + 2 * j;
        vcache[r * wpr + j] = packHalf2x16(vec2(v[s], v[s + 1]));
#endif
    }
}
