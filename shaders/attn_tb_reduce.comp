#version 450
#extension GL_GOOGLE_include_directive : require
// texel buffers as textureBuffer + texelFetch (no combined sampler: OpTypeSampledImage with Dim=Buffer
// is invalid from SPIR-V 1.6 on, which Mesa 25 warns about)
#extension GL_EXT_samplerless_texture_functions : require
#extension GL_EXT_control_flow_attributes : enable
// attn_tb_reduce.comp - combine the split partials of attn_tb.comp (ATTN_SPLIT), read through a
// uniform texel buffer: part (n_split, n, n_head, HD + 4) f32, a row's partial being HD
// unnormalized values, then (m, l, 0, 0) with m its running max in log2 units (-inf: the split
// saw no position) and l its sum. One invocation per (row, quad of 4 values):
// o = sum_s w_s O_s / sum_s w_s l_s, w_s = exp2(m_s - max m). With p.sinks the denominator also
// counts exp2(sinks[h] log2(e) - max m), the max taking that score too.
#include "common.glsl"
#include "pc_attn.glsl"

layout(constant_id = 1) const uint HD = 64; // head_dim, a multiple of 8
const uint HQ = HD / 4u;                    // quads per row; the partial has HQ + 1 texels

layout(binding = 0) uniform utextureBuffer part;
layout(std430, binding = 1) writeonly buffer O { float o[]; }; // (n, n_head, HD)
layout(std430, binding = 2) readonly buffer SK { float sinks[]; }; // (n_head,) when p.sinks
layout(push_constant) uniform PC { pc_attn_reduce p; };        // uses n, n_head, n_split, sinks

#define NEG_INF (uintBitsToFloat(0xff800000u))

vec4 fetch(uint i) { return uintBitsToFloat(texelFetch(part, int(i))); }

void main() {
    uint id = global_index_2d(), rows = p.n * p.n_head;
    uint row = id / HQ, dq = id % HQ;
    if (row >= rows) return;
    uint stride = rows * (HQ + 1u), b = row * (HQ + 1u); // texels between splits; this row's
    float mx = NEG_INF;
    for (uint s = 0u; s < p.n_split; s++) mx = max(mx, fetch(s * stride + b + HQ).x);
    float sk = p.sinks != 0u ? sinks[row % p.n_head] * 1.4426950408889634 : NEG_INF;
    mx = max(mx, sk);
    vec4 acc = vec4(0.0);
    float l = sk == NEG_INF ? 0.0 : exp2(sk - mx);
    for (uint s = 0u; s < p.n_split; s++) {
        vec2 ml = fetch(s * stride + b + HQ).xy;
        if (ml.x == NEG_INF) continue;
        float w = exp2(ml.x - mx);
        l += w * ml.y;
        acc += w * fetch(s * stride + b + dq);
    }
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    uint ob = row * HD + 4u * dq;
    o[ob] = acc.x * inv;
    o[ob + 1u] = acc.y * inv;
    o[ob + 2u] = acc.z * inv;
    o[ob + 3u] = acc.w * inv;
}
