/* ops_attn.c - reference RoPE and single-query attention (see ref.h). */
#include <math.h>

#include "ref_ops.h"
#include "ref.h"

/* cos and sin of the exact angle pos * f for any uint32 pos and float f. pos (32 bits) times f
 * (24) needs 56 bits, more than a double holds past pos 2^29: there f is split into a high half
 * of 12 significant bits and the rest (12 more), both products are exact, and their rotations
 * are composed (angle addition). glibc's cos and sin reduce their argument exactly (to within an
 * ulp of the result) at any magnitude. */
static void rope_cos_sin(uint32_t pos, float f, double *c, double *s) {
    if (pos < 1u << 29) { /* the product fits a double's 53 bits as it is */
        double a = (double)pos * f;
        *c = cos(a), *s = sin(a);
        return;
    }
    int e;
    double m = frexp((double)f, &e);                /* f = m 2^e, 1/2 <= |m| < 1 */
    double hi = ldexp(trunc(ldexp(m, 12)), e - 12); /* f's leading 12 significant bits */
    double a = (double)pos * hi, b = (double)pos * ((double)f - hi);
    double ca = cos(a), sa = sin(a), cb = cos(b), sb = sin(b);
    *c = ca * cb - sa * sb;
    *s = sa * cb + ca * sb;
}

void vkllm__ref_rope(float *x, uint32_t n_head, uint32_t head_dim, uint32_t n_rot, int neox, float mscale, uint32_t pos,
                     const float *inv_freq) {
    uint32_t half = n_rot / 2;
    for (uint32_t h = 0; h < n_head; h++) {
        float *xh = x + (uint64_t)h * head_dim;
        for (uint32_t i = 0; i < half; i++) {
            double c, s;
            rope_cos_sin(pos, inv_freq[i], &c, &s);
            c *= mscale, s *= mscale;
            uint32_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
            double x0 = xh[i0], x1 = xh[i1];
            xh[i0] = (float)(x0 * c - x1 * s);
            xh[i1] = (float)(x0 * s + x1 * c);
        }
    }
}

void vkllm__ref_attention(float *out, const float *q, const float *k, const float *v, float *att, uint32_t n_head,
                          uint32_t n_head_kv, uint32_t head_dim, uint32_t n_kv, float scale, uint32_t window,
                          float softcap, const float *sinks) {
    uint32_t first = window && n_kv > window ? n_kv - window : 0;
    uint32_t group = n_head / n_head_kv;
    uint64_t kv_stride = (uint64_t)n_head_kv * head_dim;
    for (uint32_t h = 0; h < n_head; h++) {
        const float *qh = q + (uint64_t)h * head_dim;
        uint64_t off = (uint64_t)(h / group) * head_dim;
        for (uint32_t t = 0; t < n_kv; t++) {
            const float *kt = k + t * kv_stride + off;
            double s = 0;
            for (uint32_t i = 0; i < head_dim; i++) s += (double)qh[i] * kt[i];
            s *= scale;
            if (softcap > 0) s = softcap * tanh(s / softcap);
            att[t] = t < first ? -INFINITY : (float)s;
        }
        if (sinks) { /* the softmax with one more score, sinks[h], whose value is 0 */
            double m = sinks[h], sum = 0;
            for (uint32_t t = 0; t < n_kv; t++) m = fmax(m, att[t]);
            for (uint32_t t = 0; t < n_kv; t++) sum += att[t] == -INFINITY ? 0.0 : exp((double)att[t] - m);
            sum += exp((double)sinks[h] - m);
            for (uint32_t t = 0; t < n_kv; t++)
                att[t] = att[t] == -INFINITY ? 0.0f : (float)(exp((double)att[t] - m) / sum);
        } else {
            vkllm__ref_softmax(att, att, n_kv, 1, 1.0f);
        }
        float *oh = out + (uint64_t)h * head_dim;
        for (uint32_t i = 0; i < head_dim; i++) {
            double s = 0;
            for (uint32_t t = 0; t < n_kv; t++) s += (double)att[t] * v[t * kv_stride + off + i];
            oh[i] = (float)s;
        }
    }
}
