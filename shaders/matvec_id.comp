#version 450
#extension GL_GOOGLE_include_directive : require
// matvec_id.comp - the experts' products of a mixture-of-experts FFN: column c of y is
//   y[c] (m,) = W[ids[c]] (m, k) @ x[c / x_div] (k,)
// where W is an (n_expert, m, k) GGUF tensor (one WTYPE_* define per variant, see dequant.glsl):
// each column reads only the expert its router picked. Columns are (token, pick) pairs, t k + j;
// gate and up read the token's x (x_div = k picks per token), down its own hidden row (x_div 1).
// One workgroup per (row, column): its invocations walk the row 4 elements at a time and reduce
// through shared memory. An id past n_expert gives a zero column.
#include "common.glsl"
#define DQ_BINDING 0
#include "dequant.glsl"
#include "pc.glsl"

layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };
layout(std430, binding = 2) readonly buffer I { uint ids[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { pc_matvec_id p; };

shared float red[gl_WorkGroupSize.x];

void main() {
    uint row = gl_WorkGroupID.x, col = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
    uint e = ids[col];
    float acc = 0.0;
    if (e < p.n_expert) {
        uint rb = (e * p.m + row) * p.row_bytes;
        uint xo = (col / p.x_div) * (p.x_stride / 4u);
        for (uint j = 4u * t; j < p.k; j += 4u * gl_WorkGroupSize.x) acc += dot(dq_get4(rb, j), xv[xo + j / 4u]);
    }
    red[t] = acc;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier();
    }
    if (t == 0u) y[col * p.m + row] = red[0];
}
