#version 450
#extension GL_GOOGLE_include_directive : require
// argmax.comp - one workgroup: o = index of the largest of x (n,), the first on ties. NaN never
// wins; when nothing beats x[0] (all -inf or NaN) the answer is 0, as in the reference.
#include "common.glsl"
#include "pc_attn.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer O { uint o; };
layout(push_constant) uniform PC { pc_argmax p; };

shared float sv[1024];
shared uint si[1024];

// (v, i) beats (bv, bi): larger, or equal and earlier. An empty slot has index 0xffffffff.
bool better(float v, uint i, float bv, uint bi) {
    if (i == 0xffffffffu) return false;
    if (bi == 0xffffffffu) return true;
    return v > bv || (v == bv && i < bi) || (isnan(bv) && !isnan(v));
}

void main() {
    uint t = gl_LocalInvocationID.x;
    float bv = 0.0;
    uint bi = 0xffffffffu;
    for (uint i = t; i < p.n; i += gl_WorkGroupSize.x) { // each thread sees increasing indices
        float v = x[i];
        if (better(v, i, bv, bi)) { bv = v; bi = i; }
    }
    sv[t] = bv;
    si[t] = bi;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s && better(sv[t + s], si[t + s], sv[t], si[t])) {
            sv[t] = sv[t + s];
            si[t] = si[t + s];
        }
        barrier();
    }
    if (t == 0) {
        uint r = si[0];
        // a NaN x[0] that nothing beat, or all NaN: the reference keeps index 0
        o = (r == 0xffffffffu || isnan(sv[0])) ? 0u : r;
    }
}
