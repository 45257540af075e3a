// tanh.glsl - tanh that is finite and right for every input, on any driver (softcap in
// elementwise.comp, attn.comp and attn_tb.comp; silu_mul.comp's GELU uses the sigmoid form).
//
// GLSL's tanh is specified only as "inherited from sinh / cosh": a driver may compute it as
// (e^x - e^-x) / (e^x + e^-x), which is inf / inf = NaN once |x| > 88 (SwiftShader does), and
// 1 - 2 / (e^2x + 1) loses all relative precision near 0. Here:
//   |x| < 0.55      x + x^3 P(x^2), P of degree 4 (a Chebyshev fit): < 0.82 ulp, with or
//                   without contraction into fma
//   0.55 <= |x| < 9.1  (1 - t) / (1 + t), t = e^-2|x| in (1.2e-8, 0.34]: no overflow, and < 4 ulp
//                   even with exp as loose as Vulkan allows (3 + 2|x| ulp)
//   |x| >= 9.1      +-1 (tanh rounds to 1 in fp32 from 9.01 on), +-inf included
// A NaN fails every comparison and takes the polynomial: NaN in, NaN out. docs/numerics.md.
#ifndef VKLLM_TANH_GLSL
#define VKLLM_TANH_GLSL

float tanh_safe(float x) {
    float a = abs(x);
    if (a >= 9.1) return x < 0.0 ? -1.0 : 1.0;
    if (a >= 0.55) {
        float t = exp(-2.0 * a);
        float r = (1.0 - t) / (1.0 + t);
        return x < 0.0 ? -r : r;
    }
    float y = x * x;
    float p = -6.610227749e-03;
    p = p * y + 2.130938880e-02;
    p = p * y - 5.390942842e-02;
    p = p * y + 1.333311349e-01;
    p = p * y - 3.333333135e-01;
    return x + x * y * p;
}

#endif
