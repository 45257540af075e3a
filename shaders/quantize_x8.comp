#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
// quantize_x8.comp - x (ncols columns of k elements, k % 32 == 0) quantized to int8 once per step for
// matvec_x8.comp's X_Q8 variants, in the layout of quant_x8.glsl (groups of 4 blocks of 32). One
// invocation per block of 32, the same arithmetic as matvec_x8.comp's in-workgroup quantization
// (quant_x8_block), so the products are the same bits either way.
#include "common.glsl"
#include "quant_x8.glsl"

layout(std430, binding = 0) readonly buffer X { vec4 xv[]; };
layout(std430, binding = 1) writeonly buffer XQ { uvec4 xq[]; };  // the quants ...
layout(std430, binding = 1) writeonly buffer XD { vec2 xds[]; };  // ... and (d, d * sum), one buffer

// C twin: struct vkllm__pc_quantize_x8 (runtime/ops/shader_abi_matvec.h)
layout(push_constant) uniform PC {
    uint nb;        // blocks of 32 per column (k / 32)
    uint ncols;     // columns
    uint x0;        // x index of the first column's first element (a multiple of 4)
    uint x_stride;  // x elements from one column to the next (a multiple of 4)
    uint q_stride;  // groups of 4 blocks from one column to the next in xq (at least (nb + 3) / 4)
} p;

void main() {
    uint i = global_index_2d();
    if (i >= p.nb * p.ncols) return;
    uint col = i / p.nb, b = i - col * p.nb;
    uint xo = (p.x0 + col * p.x_stride) / 4u + 8u * b;
    vec4 v[8];
    [[unroll]] for (uint j = 0u; j < 8u; j++) v[j] = xv[xo + j];
    uvec4 q0, q1;
    vec2 ds;
    quant_x8_block(v, q0, q1, ds);
    uint xi = 4u * col * p.q_stride + b;
    xq[xq8_quant_word(xi, 0u)] = q0;
    xq[xq8_quant_word(xi, 1u)] = q1;
    xds[xq8_ds_index(xi)] = ds;
}
