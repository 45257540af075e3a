#version 450
#extension GL_GOOGLE_include_directive : require
// rope.comp - rotary position embedding, in place on x (n, n_head, head_dim). One invocation per
// rotated pair. Token i is at position pos0 + i, pos0 read from a buffer so that a recorded
// decode step replays at any position. Dims >= n_rot pass through (never touched).
//
// The angle pos * inv_freq reaches thousands of radians; rounding it to a float would cost
// ~ulp(5000) = 5e-4 rad. Instead the product is split into four exact partial products (12-bit
// halves of pos and of inv_freq), each reduced modulo 2*pi with a three-part 2*pi (Cody-Waite),
// so the reduced angle is good to ~1e-6 rad for pos * inv_freq < 4e5 (k < 2^16 turns).
#include "common.glsl"
#include "pc_attn.glsl"

layout(std430, binding = 0) buffer X { float x[]; };                 // (n, n_head, head_dim)
layout(std430, binding = 1) readonly buffer P { uint pos0; };        // uint32 start position
layout(std430, binding = 2) readonly buffer F { float inv_freq[]; }; // (n_rot/2,)
layout(push_constant) uniform PC { pc_rope p; };

const float TWO_PI_1 = 6.28125;                // 8 significant bits: k * TWO_PI_1 exact
const float TWO_PI_2 = 0.00193023681640625;    // next 8 bits
const float TWO_PI_3 = 5.0703633860e-06;       // the rest, rounded
const float INV_TWO_PI = 0.15915494309189535;

// t - 2*pi*round(t / (2*pi)), for |t| < 4e5.
float reduce_2pi(float t) {
    precise float k = round(t * INV_TWO_PI);
    precise float r = t - k * TWO_PI_1;
    r = r - k * TWO_PI_2;
    r = r - k * TWO_PI_3;
    return r;
}

// pos * f modulo 2*pi, pos < 2^24.
float angle_of(uint pos, float f) {
    float p1 = float(pos & 0xfff000u), p2 = float(pos & 0xfffu);
    float f1 = uintBitsToFloat(floatBitsToUint(f) & 0xfffff000u);
    precise float f2 = f - f1;
    precise float a = reduce_2pi(p1 * f1) + reduce_2pi(p1 * f2);
    precise float b = reduce_2pi(p2 * f1) + reduce_2pi(p2 * f2);
    return reduce_2pi(a + b);
}

void main() {
    uint idx = global_index_2d();
    uint half_rot = p.n_rot / 2;
    if (idx >= p.n * p.n_head * half_rot) return;
    uint i = idx % half_rot;
    uint row = idx / half_rot;            // token * n_head + head
    uint tok = row / p.n_head;
    uint base = row * p.head_dim;
    uint i0 = p.neox != 0 ? i : 2 * i;
    uint i1 = p.neox != 0 ? i + half_rot : 2 * i + 1;
    float a = angle_of(pos0 + tok, inv_freq[i]);
    float c = cos(a), s = sin(a);
    float x0 = x[base + i0], x1 = x[base + i1];
    x[base + i0] = x0 * c - x1 * s;
    x[base + i1] = x0 * s + x1 * c;
}
