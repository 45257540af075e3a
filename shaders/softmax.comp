#version 450
#extension GL_GOOGLE_include_directive : require
// softmax.comp - one workgroup per row: out = exp(s*x - max) / sum(exp(s*x - max)).
// -inf entries get probability 0; a row that is all -inf comes out as all zeros.
#include "common.glsl"
#include "pc.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };   // (nrows, ncols)
layout(std430, binding = 1) writeonly buffer O { float o[]; };  // (nrows, ncols)
layout(push_constant) uniform PC { pc_rows p; };

#define NEG_INF (uintBitsToFloat(0xff800000u))

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.nrows) return; // uniform per workgroup
    uint base = row * p.ncols;
    float m = NEG_INF;
    for (uint i = gl_LocalInvocationID.x; i < p.ncols; i += gl_WorkGroupSize.x)
        m = max(m, x[base + i] * p.scale);
    m = wg_max(m);
    if (m == NEG_INF) {
        for (uint i = gl_LocalInvocationID.x; i < p.ncols; i += gl_WorkGroupSize.x) o[base + i] = 0.0;
        return;
    }
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.ncols; i += gl_WorkGroupSize.x)
        s += exp(x[base + i] * p.scale - m);
    s = wg_sum(s);
    float inv = 1.0 / s;
    for (uint i = gl_LocalInvocationID.x; i < p.ncols; i += gl_WorkGroupSize.x)
        o[base + i] = exp(x[base + i] * p.scale - m) * inv;
}
