#version 450
#extension GL_GOOGLE_include_directive : require
// rmsnorm.comp - one workgroup per row: out = x / sqrt(mean(x^2) + eps) * w.
// With ADD (the residual add fused in front): x += d first, written back, then the norm of the
// sum; d and out may be the same range (each invocation reads its d elements before the
// workgroup's barrier and writes the same elements of out after it).
#include "common.glsl"
#include "pc.glsl"
#include "reduce.glsl"

#ifdef ADD
layout(std430, binding = 0) buffer X { float x[]; };            // (nrows, ncols), += d
layout(std430, binding = 1) readonly buffer D { float d[]; };   // (nrows, ncols)
layout(std430, binding = 2) readonly buffer W { float w[]; };   // (ncols,)
layout(std430, binding = 3) writeonly buffer O { float o[]; };  // (nrows, ncols)
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };   // (nrows, ncols)
layout(std430, binding = 1) readonly buffer W { float w[]; };   // (ncols,)
layout(std430, binding = 2) writeonly buffer O { float o[]; };  // (nrows, ncols)
#endif
layout(push_constant) uniform PC { pc_rows p; };

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.nrows) return; // uniform per workgroup
    uint base = row * p.ncols;
    float ss = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.ncols; i += gl_WorkGroupSize.x) {
        float v = x[base + i];
#ifdef ADD
        v += d[base + i];
        x[base + i] = v;
#endif
        ss += v * v;
    }
    ss = wg_sum(ss);
    float inv = inversesqrt(ss / float(p.ncols) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.ncols; i += gl_WorkGroupSize.x)
        o[base + i] = x[base + i] * inv * w[i];
}
