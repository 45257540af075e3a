#version 450
#extension GL_GOOGLE_include_directive : require
// rope.comp - rotary position embedding, in place on x (n, n_head, head_dim). One invocation per
// rotated pair. Token i is at position pos0 + i, pos0 read from a buffer so that a recorded
// decode step replays at any position. Dims >= n_rot pass through (never touched); the rotated
// ones are scaled by p.mscale (ggml's rope magnitude: attn_factor, YaRN's). The rotation:
// rope_angle.glsl (exact integer turns, polynomial sin and cos; no driver transcendental).
#include "common.glsl"
#include "pc_attn.glsl"
#include "rope_angle.glsl"

layout(std430, binding = 0) buffer X { float x[]; };                 // (n, n_head, head_dim)
layout(std430, binding = 1) readonly buffer P { uint pos0; };        // uint32 start position
layout(std430, binding = 2) readonly buffer F { uvec2 turns[]; };    // (n_rot/2,) 64-bit g_i / (2 pi)
layout(push_constant) uniform PC { pc_rope p; };

void main() {
    uint idx = global_index_2d();
    uint half_rot = p.n_rot / 2;
    if (idx >= p.n * p.n_head * half_rot) return;
    uint i = idx % half_rot;
    uint row = idx / half_rot;            // token * n_head + head
    uint tok = row / p.n_head;
    uint base = row * p.head_dim;
    uint i0 = p.neox != 0 ? i : 2 * i;
    uint i1 = p.neox != 0 ? i + half_rot : 2 * i + 1;
    vec2 cs = rope_rotation(pos0 + tok, turns[i]) * p.mscale;
    float c = cs.x, s = cs.y;
    float x0 = x[base + i0], x1 = x[base + i1];
    x[base + i0] = x0 * c - x1 * s;
    x[base + i1] = x0 * s + x1 * c;
}
