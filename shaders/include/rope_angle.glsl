// rope_angle.glsl - the rotation of pair i at position pos, exact on any driver (rope.comp,
// rope_kv.comp; docs/numerics.md).
//
// Every RoPE here turns pair i by pos * g_i (g_i the pair's f32 frequency, YaRN, llama3 and
// LongRoPE factors folded in). The host gives each frequency in turns, g_i / (2 pi), as a 64-bit
// fixed-point fraction (vkllm__rope_turns in runtime/ops/ops_attn.c, exact to 2^-64). Then:
//   - pos * turns mod 1 is integer arithmetic: exact for every uint32 position (the whole turns
//     fall out of the 64-bit product; no angle in radians ever exists, so there is nothing to
//     reduce and no range where the reduction fails);
//   - the fraction is split into the nearest quarter turn n and a rest y in [-pi/4, pi/4), whose
//     sin and cos are minimax polynomials (Cephes' sinf/cosf coefficients): < 1 ulp;
//   - (cos, sin) of the angle is (cos y, sin y) turned by n quarter turns: exact.
// Only integer operations, conversions, additions and multiplications, all of which Vulkan
// requires correctly rounded: within 1.2e-7 of the exact rotation (max over 2M random positions
// and frequencies in a C model of this code, with and without fma contraction), whatever the
// driver's sin and cos (GLSL's are specified only to 2^-11 absolute in [-pi, pi], and not at all
// outside it).
#ifndef VKLLM_ROPE_ANGLE_GLSL
#define VKLLM_ROPE_ANGLE_GLSL

// (cos, sin) of pos * g, t = g / (2 pi) in 64-bit fixed point (t.x the low word, t.y the high).
vec2 rope_rotation(uint pos, uvec2 t) {
    uint hi, lo;
    umulExtended(pos, t.x, hi, lo);
    uint u = pos * t.y + hi;                // the angle's fraction of a turn, in 2^-32 turns
    uint n = (u + 0x20000000u) >> 30;       // the nearest quarter turn
    float y = float(int(u - (n << 30))) * 1.4629180792671596e-9; // the rest, radians (2 pi / 2^32)
    float z = y * y;
    float s = y + y * z * ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1);
    float c = 1.0 - 0.5 * z + z * z * ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2);
    n &= 3u;
    return n == 0u ? vec2(c, s) : n == 1u ? vec2(-s, c) : n == 2u ? vec2(-c, -s) : vec2(s, -c);
}

#endif
