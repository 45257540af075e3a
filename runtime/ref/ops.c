/* ops.c - scalar reference ops (see ops.h). Plain loops, double accumulators where a sum is long. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "ref_ops.h"
#include "types.h"

void vkllm__ref_add(float *o, const float *a, const float *b, uint32_t n, uint32_t nb) {
    for (uint32_t i = 0; i < n; i++) o[i] = a[i] + b[i % nb];
}

void vkllm__ref_mul(float *o, const float *a, const float *b, uint32_t n, uint32_t nb) {
    for (uint32_t i = 0; i < n; i++) o[i] = a[i] * b[i % nb];
}

void vkllm__ref_rmsnorm(float *o, const float *x, const float *w, uint32_t ncols, uint32_t nrows, float eps) {
    for (uint32_t r = 0; r < nrows; r++) {
        const float *xr = x + (uint64_t)r * ncols;
        float *or_ = o + (uint64_t)r * ncols;
        double ss = 0;
        for (uint32_t i = 0; i < ncols; i++) ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / ncols + eps));
        for (uint32_t i = 0; i < ncols; i++) or_[i] = xr[i] * inv * w[i];
    }
}

void vkllm__ref_softmax(float *o, const float *x, uint32_t ncols, uint32_t nrows, float scale) {
    for (uint32_t r = 0; r < nrows; r++) {
        const float *xr = x + (uint64_t)r * ncols;
        float *or_ = o + (uint64_t)r * ncols;
        float m = -INFINITY;
        for (uint32_t i = 0; i < ncols; i++) m = fmaxf(m, xr[i] * scale);
        if (m == -INFINITY) {
            for (uint32_t i = 0; i < ncols; i++) or_[i] = 0.0f;
            continue;
        }
        double s = 0;
        for (uint32_t i = 0; i < ncols; i++) s += exp((double)xr[i] * scale - m);
        for (uint32_t i = 0; i < ncols; i++) or_[i] = (float)(exp((double)xr[i] * scale - m) / s);
    }
}

void vkllm__ref_gelu_mul(float *o, const float *gate, const float *up, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        double g = gate[i];
        o[i] = (float)(0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * up[i]);
    }
}

void vkllm__ref_swiglu_oai(float *o, const float *gate, const float *up, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        double g = fmin(gate[i], 7.0), u = fmin(fmax(up[i], -7.0), 7.0);
        o[i] = (float)(g / (1.0 + exp(-1.702 * g)) * (u + 1.0));
    }
}

void vkllm__ref_moe_route(const float *logits, uint32_t n, uint32_t k, uint32_t *ids, float *w) {
    double m = -INFINITY, s = 0, sel = 0;
    for (uint32_t i = 0; i < n; i++) m = fmax(m, logits[i]);
    for (uint32_t i = 0; i < n; i++) s += exp((double)logits[i] - m);
    for (uint32_t j = 0; j < k; j++) { /* selection: k is small */
        uint32_t best = UINT32_MAX;
        for (uint32_t i = 0; i < n; i++) {
            int taken = 0;
            for (uint32_t t = 0; t < j; t++) taken |= ids[t] == i;
            if (!taken && (best == UINT32_MAX || logits[i] > logits[best])) best = i;
        }
        ids[j] = best;
        w[j] = (float)(exp((double)logits[best] - m) / s);
        sel += w[j];
    }
    if (sel < 6.103515625e-5) sel = 6.103515625e-5;
    for (uint32_t j = 0; j < k; j++) w[j] = (float)(w[j] / sel);
}

void vkllm__ref_softcap(float *o, const float *x, float cap, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) o[i] = (float)(cap * tanh((double)x[i] / cap));
}

void vkllm__ref_silu_mul(float *o, const float *gate, const float *up, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        double g = gate[i];
        o[i] = (float)(g / (1.0 + exp(-g)) * up[i]);
    }
}

void vkllm__ref_matvec(float *o, const float *w, const float *x, uint32_t m, uint32_t k) {
    for (uint32_t r = 0; r < m; r++) {
        const float *wr = w + (uint64_t)r * k;
        double s = 0;
        for (uint32_t i = 0; i < k; i++) s += (double)wr[i] * x[i];
        o[r] = (float)s;
    }
}

void vkllm__ref_matvec_q(float *o, uint32_t type, const void *w, uint64_t row_bytes, const float *x, uint32_t m,
                         uint32_t k) {
    float row_stack[4096];
    float *row = k <= 4096 ? row_stack : malloc(sizeof(float) * k);
    if (!row) { /* reference path only: degrade to NaN rather than crash */
        for (uint32_t r = 0; r < m; r++) o[r] = NAN;
        return;
    }
    for (uint32_t r = 0; r < m; r++) {
        vkllm__dequantize_row(type, (const uint8_t *)w + (uint64_t)r * row_bytes, row, k);
        double s = 0;
        for (uint32_t i = 0; i < k; i++) s += (double)row[i] * x[i];
        o[r] = (float)s;
    }
    if (row != row_stack) free(row);
}

uint32_t vkllm__ref_quantize_x8(float *o, float *x, uint32_t k, int nudge) {
    uint32_t moved = 0;
    for (uint32_t b = 0; b + 32 <= k; b += 32) {
        float amax = 0;
        int finite = 1;
        for (uint32_t i = b; i < b + 32; i++) amax = fmaxf(amax, fabsf(x[i])), finite &= isfinite(x[i]) != 0;
        if (!finite) { /* an inf or NaN: the block's scale is NaN (matvec_x8.comp) */
            for (uint32_t i = b; i < b + 32; i++) o[i] = NAN;
            continue;
        }
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        for (uint32_t i = b; i < b + 32 && nudge; i++) {
            float v = x[i] * id, f = v - floorf(v);
            if (fabsf(f - 0.5f) < 1e-3f && fabsf(x[i]) < amax) { /* the largest stays: it sets d */
                x[i] = (floorf(v) + (v < 0 ? 0.25f : 0.75f)) * d;
                moved++;
            }
        }
        for (uint32_t i = b; i < b + 32; i++) {
            float q = nearbyintf(x[i] * id); /* the default rounding: to nearest, ties to even */
            o[i] = fminf(fmaxf(q, -127.0f), 127.0f) * d;
        }
    }
    return moved;
}

uint32_t vkllm__ref_argmax(const float *x, uint32_t n) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
