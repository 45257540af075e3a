#version 450
#extension GL_GOOGLE_include_directive : require
// kv_store.comp - cache rows pos0 .. pos0+n-1 = src (n, width) rounded to f16. The cache holds
// f16 pairs packed in uint words (packHalf2x16): no 16-bit storage feature needed. One
// invocation per word; rows at or beyond n_ctx are skipped (a position past the context never
// writes outside the cache).
//
// With KV_Q8 the cache is q8_0 (kv_q8.glsl): one invocation per block of 32 values. Position p is
// row kv_row(p) (kv_page.glsl: a ring, or a paged cache through the block table btab).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "pc_attn.glsl"
#include "kv_q8.glsl"

layout(std430, binding = 0) readonly buffer S { float src[]; };  // (n, src_stride) f32
layout(std430, binding = 1) readonly buffer P { uint pos0; };
layout(std430, binding = 2) writeonly buffer C { uint cache[]; }; // (n_ctx, width/2) f16 pairs, or q8_0
layout(std430, binding = 3) readonly buffer BT { uint btab[]; }; // block table (p.page > 0)
layout(push_constant) uniform PC { pc_kv_store p; };
#include "kv_page.glsl"

#ifdef KV_Q8
void main() {
    uint idx = global_index_2d();
    uint bpr = p.width / 32u; // blocks per row
    if (idx >= p.n * bpr) return;
    uint row = idx / bpr, b = idx % bpr;
    uint dst = pos0 + row;
    if (dst >= p.n_ctx || dst < pos0) return;
    float x[32];
    [[unroll]] for (uint i = 0u; i < 32u; i++) x[i] = src[row * p.src_stride + p.src0 + 32u * b + i];
    q8_block q = q8_quantize(x);
    uint r = kv_row(dst), w0 = (r * p.width + 32u * b) / 4u;
    [[unroll]] for (uint j = 0u; j < 8u; j++) cache[w0 + j] = q.w[j];
    cache[p.n_rows * p.width / 4u + r * bpr + b] = floatBitsToUint(q.d);
}
#else
void main() {
    uint idx = global_index_2d();
    uint wpr = p.width / 2; // words per row
    if (idx >= p.n * wpr) return;
    uint row = idx / wpr, w = idx % wpr;
    uint dst = pos0 + row;
    if (dst >= p.n_ctx || dst < pos0) return; // past the cache (or wrapped around)
    uint s = row * p.src_stride + p.src0 + 2 * w;
    cache[kv_row(dst) * wpr + w] = packHalf2x16(vec2(src[s], src[s + 1]));
}
#endif
