#version 450
#extension GL_GOOGLE_include_directive : require
// silu_mul.comp - the SiLU-gated product of a Llama FFN: out = silu(gate) * up,
// silu(x) = x / (1 + exp(-x)). -DGELU=1: the GELU-gated one of Gemma, out = gelu(gate) * up with
// the tanh approximation gelu(x) = x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// -DSWIGLU_OAI=1: gpt-oss's clamped one, g = min(gate, 7), u = clamp(up, -7, 7),
// out = g / (1 + exp(-1.702 g)) * (u + 1) (llama.cpp's swiglu_oai with its alpha and limit).
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
#if defined(SWIGLU_OAI)
    float x = min(g, 7.0), u = clamp(up[i], -7.0, 7.0);
    o[i] = x / (1.0 + exp(-1.702 * x)) * (u + 1.0);
#elif defined(GELU)
    // (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)): relative accuracy that of exp for every u (the
    // form 2 - 2 / (exp(2u) + 1) cancelled for negative u: 8e-4 relative at g = -5), no
    // inf / inf (exp(-2u) = inf gives g / inf = 0, the limit)
    float u = 0.7978845608028654 * (g + 0.044715 * g * g * g);
    o[i] = g / (1.0 + exp(-2.0 * u)) * up[i];
#else
    o[i] = g / (1.0 + exp(-g)) * up[i];
#endif
}
