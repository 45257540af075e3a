#version 450
#extension GL_GOOGLE_include_directive : require
// silu_mul.comp - the SiLU-gated product of a Llama FFN: out = silu(gate) * up,
// silu(x) = x / (1 + exp(-x)).
#include "common.glsl"
#include "pc.glsl"

layout(std430, binding = 0) readonly buffer G { float gate[]; };
layout(std430, binding = 1) readonly buffer U { float up[]; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform PC { pc_elementwise p; };

void main() {
    uint i = global_index_2d();
    if (i >= p.n) return;
    float g = gate[i];
    o[i] = g / (1.0 + exp(-g)) * up[i];
}
