#version 450
#extension GL_GOOGLE_include_directive : require
// elementwise.comp - out = a OP b, with b repeated along a when it is shorter (bias rows).
// Variants: -DOP_ADD=1, -DOP_MUL=1, -DOP_SOFTCAP=1 (out = b tanh(a / b): gemma2's logit capping;
// finite for every a, +-b at +-inf: tanh.glsl).
#include "common.glsl"
#include "pc.glsl"
#include "tanh.glsl"

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform PC { pc_elementwise p; };

void main() {
    uint i = global_index_2d();
    if (i >= p.n) return;
    float y = b[p.nb == p.n ? i : i % p.nb];
#if defined(OP_ADD)
    o[i] = a[i] + y;
#elif defined(OP_MUL)
    o[i] = a[i] * y;
#elif defined(OP_SOFTCAP)
    o[i] = y * tanh_safe(a[i] / y);
#else
#error "define OP_ADD, OP_MUL or OP_SOFTCAP"
#endif
}
