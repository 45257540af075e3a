// rope_angle.glsl - the rotary angle pos * inv_freq reduced modulo 2*pi (rope.comp, rope_kv.comp).
//
// The angle pos * inv_freq reaches thousands of radians; rounding it to a float would cost
// ~ulp(5000) = 5e-4 rad. Instead the product is split into four exact partial products (12-bit
// halves of pos and of inv_freq), each reduced modulo 2*pi with a three-part 2*pi (Cody-Waite),
// so the reduced angle is good to ~1e-6 rad for pos * inv_freq < 4e5 (k < 2^16 turns).
#ifndef VKLLM_ROPE_ANGLE_GLSL
#define VKLLM_ROPE_ANGLE_GLSL
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
#endif
