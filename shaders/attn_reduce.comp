#version 450
#extension GL_GOOGLE_include_directive : require
// attn_reduce.comp - combine the split partials of attn.comp (ATTN_SPLIT): one workgroup per
// (query, head) row, o = sum_s w_s O_s / sum_s w_s l_s with w_s = exp(m_s - max m). Only the
// splits that hold positions of the span the query sees (from pos0 and the window, cut as
// attn_split.glsl says) are read. With p.sinks the
// denominator also counts exp(sinks[h] - max m), the max taking sinks[h] too.
#include "common.glsl"
#include "pc_attn.glsl"
#include "attn_split.glsl"

layout(std430, binding = 0) readonly buffer S { float part[]; }; // (n_split, n, n_head, HD + 2)
layout(std430, binding = 1) readonly buffer P { uint pos0; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };   // (n, n_head, HD)
layout(std430, binding = 3) readonly buffer SK { float sinks[]; }; // (n_head,) when p.sinks
layout(push_constant) uniform PC { pc_attn_reduce p; };

#define NEG_INF (uintBitsToFloat(0xff800000u))

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; // qi * n_head + h
    if (row >= p.n * p.n_head) return;
    uint qi = row / p.n_head;
    uint len = min(pos0 + qi + 1, p.n_ctx), span = len - attn_first(len, p.window);
    uint sl = attn_split_len(span, p.n_split), na = min((span + sl - 1) / sl, p.n_split);
    uint stride = p.n * p.n_head * (p.head_dim + 2); // between splits
    uint b = row * (p.head_dim + 2);
    float mx = NEG_INF;
    for (uint s = 0; s < na; s++) mx = max(mx, part[s * stride + b + p.head_dim]);
    float sk = p.sinks != 0u ? sinks[row % p.n_head] : NEG_INF;
    mx = max(mx, sk);
    float l = sk == NEG_INF ? 0.0 : exp(sk - mx);
    for (uint s = 0; s < na; s++) {
        float m = part[s * stride + b + p.head_dim];
        l += m == NEG_INF ? 0.0 : exp(m - mx) * part[s * stride + b + p.head_dim + 1];
    }
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint d = gl_LocalInvocationID.x; d < p.head_dim; d += gl_WorkGroupSize.x) {
        float acc = 0.0;
        for (uint s = 0; s < na; s++) {
            float m = part[s * stride + b + p.head_dim];
            if (m != NEG_INF) acc += exp(m - mx) * part[s * stride + b + d];
        }
        o[row * p.head_dim + d] = acc * inv;
    }
}
