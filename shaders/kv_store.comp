#version 450
#extension GL_GOOGLE_include_directive : require
// kv_store.comp - cache rows pos0 .. pos0+n-1 = src (n, width) rounded to f16. The cache holds
// f16 pairs packed in uint words (packHalf2x16): no 16-bit storage feature needed. One
// invocation per word; rows at or beyond n_ctx are skipped (a position past the context never
// writes outside the cache).
#include "common.glsl"
#include "pc_attn.glsl"

layout(std430, binding = 0) readonly buffer S { float src[]; };  // (n, width) f32
layout(std430, binding = 1) readonly buffer P { uint pos0; };
layout(std430, binding = 2) writeonly buffer C { uint cache[]; }; // (n_ctx, width/2) f16 pairs
layout(push_constant) uniform PC { pc_kv_store p; };

void main() {
    uint idx = global_index_2d();
    uint wpr = p.width / 2; // words per row
    if (idx >= p.n * wpr) return;
    uint row = idx / wpr, w = idx % wpr;
    uint dst = pos0 + row;
    if (dst >= p.n_ctx || dst < pos0) return; // past the cache (or wrapped around)
    uint s = row * p.width + 2 * w;
    cache[(dst % p.n_rows) * wpr + w] = packHalf2x16(vec2(src[s], src[s + 1]));
}
