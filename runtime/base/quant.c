/* quant.c - scalar reference dequantization and quantization of the ggml types vkllm computes
 * with (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4). The decoders follow
 * the GGUF block definitions exactly (see quant_blocks.h); the encoders round to nearest and,
 * for the K-quants, search a few scales per sub-block, and always produce blocks that ggml's own
 * decoder reads the same way. The oracle for tests, never a fast path.
 *
 * Blocks are copied in and out with memcpy, so src and dst need no particular alignment. */
#include <math.h>
#include <string.h>

#include "quant_blocks.h"
#include "types.h"

/* --- helpers -------------------------------------------------------------------------------- */

/* round(v) clamped to [lo, hi], ties to even; NaN goes to lo. */
static int qround(float v, int lo, int hi) {
    if (!(v >= (float)lo)) return lo;
    if (v >= (float)hi) return hi;
    return (int)lrintf(v);
}

/* A block scale as f16, rounded away from zero (never toward it) so that the quants of the
 * largest values stay in range even where f16 is coarse (tiny or subnormal scales), and clamped
 * to the largest finite half so that huge inputs give huge values, not inf * 0 = NaN. */
static uint16_t f16_scale(float v) {
    uint16_t h = vkllm__f32_to_f16(v);
    uint16_t mag = h & 0x7fffu, sign = h & 0x8000u;
    if (isnan(v)) return h;
    if (mag >= 0x7c00u) return (uint16_t)(sign | 0x7bffu);
    if (fabsf(vkllm__f16_to_f32(h)) < fabsf(v) && mag < 0x7bffu) return (uint16_t)(sign | (mag + 1));
    return h;
}

/* The value with the largest magnitude (signed), the first one on ties. */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, v = 0.0f;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            v = x[i];
        }
    }
    return v;
}

static void min_max(const float *x, int n, float *mn, float *mx) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    *mn = lo;
    *mx = hi;
}

/* --- Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 ----------------------------------------------------------- */

static void dequant_q8_0(const struct vkllm__block_q8_0 *b, float *y) {
    float d = vkllm__f16_to_f32(b->d);
    for (int j = 0; j < VKLLM_QK8_0; j++) y[j] = (float)b->qs[j] * d;
}

static void quant_q8_0(const float *x, struct vkllm__block_q8_0 *b) {
    float amax = fabsf(signed_absmax(x, VKLLM_QK8_0));
    b->d = f16_scale(amax / 127.0f);
    float d = vkllm__f16_to_f32(b->d);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < VKLLM_QK8_0; j++) b->qs[j] = (int8_t)qround(x[j] * id, -127, 127);
}

static void dequant_q4_0(const struct vkllm__block_q4_0 *b, float *y) {
    float d = vkllm__f16_to_f32(b->d);
    for (int j = 0; j < VKLLM_QK4_0 / 2; j++) {
        y[j] = (float)((b->qs[j] & 15) - 8) * d;
        y[j + VKLLM_QK4_0 / 2] = (float)((b->qs[j] >> 4) - 8) * d;
    }
}

/* Q4_0 and Q5_0: the largest-magnitude value maps to -2^(bits-1) exactly, as in ggml. */
static void quant_q4_0(const float *x, struct vkllm__block_q4_0 *b) {
    b->d = f16_scale(signed_absmax(x, VKLLM_QK4_0) / -8.0f);
    float d = vkllm__f16_to_f32(b->d);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < VKLLM_QK4_0 / 2; j++) {
        int q0 = qround(x[j] * id + 8.0f, 0, 15);
        int q1 = qround(x[j + VKLLM_QK4_0 / 2] * id + 8.0f, 0, 15);
        b->qs[j] = (uint8_t)(q0 | q1 << 4);
    }
}

static void dequant_q4_1(const struct vkllm__block_q4_1 *b, float *y) {
    float d = vkllm__f16_to_f32(b->d), m = vkllm__f16_to_f32(b->m);
    for (int j = 0; j < VKLLM_QK4_1 / 2; j++) {
        y[j] = (float)(b->qs[j] & 15) * d + m;
        y[j + VKLLM_QK4_1 / 2] = (float)(b->qs[j] >> 4) * d + m;
    }
}

static void quant_q4_1(const float *x, struct vkllm__block_q4_1 *b) {
    float lo, hi;
    min_max(x, VKLLM_QK4_1, &lo, &hi);
    b->d = f16_scale((hi - lo) / 15.0f);
    b->m = vkllm__f32_to_f16(lo);
    float d = vkllm__f16_to_f32(b->d), m = vkllm__f16_to_f32(b->m);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < VKLLM_QK4_1 / 2; j++) {
        int q0 = qround((x[j] - m) * id, 0, 15);
        int q1 = qround((x[j + VKLLM_QK4_1 / 2] - m) * id, 0, 15);
        b->qs[j] = (uint8_t)(q0 | q1 << 4);
    }
}

/* --- IQ4_NL: 4-bit indices into a non-linear table (ggml's kvalues_iq4nl) ------------------- */

static const int8_t k_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static void dequant_iq4_nl(const struct vkllm__block_iq4_nl *b, float *y) {
    float d = vkllm__f16_to_f32(b->d);
    for (int j = 0; j < VKLLM_QK4_NL / 2; j++) {
        y[j] = d * (float)k_iq4nl[b->qs[j] & 15];
        y[j + VKLLM_QK4_NL / 2] = d * (float)k_iq4nl[b->qs[j] >> 4];
    }
}

static int iq4nl_nearest(float v) { /* the table index nearest to v (in table units) */
    int best = 0;
    for (int i = 1; i < 16; i++)
        if (fabsf(v - (float)k_iq4nl[i]) < fabsf(v - (float)k_iq4nl[best])) best = i;
    return best;
}

/* The largest-magnitude value maps to the table's end of its sign; then, as ggml, the
 * least-squares scale for those indices is tried with the indices picked again, and the better of
 * the two kept. */
static void quant_iq4_nl(const float *x, struct vkllm__block_iq4_nl *b) {
    float amax = signed_absmax(x, VKLLM_QK4_NL);
    float best_err = INFINITY;
    float scale[2] = {amax / (float)k_iq4nl[amax < 0 ? 0 : 15], 0.0f};
    for (int t = 0; t < 2; t++) {
        if (t == 1 && scale[1] == 0.0f) break;
        uint16_t dh = f16_scale(scale[t]);
        float d = vkllm__f16_to_f32(dh), id = d != 0.0f ? 1.0f / d : 0.0f, err = 0, sxq = 0, sqq = 0;
        uint8_t qs[VKLLM_QK4_NL / 2];
        for (int j = 0; j < VKLLM_QK4_NL / 2; j++) {
            int q0 = iq4nl_nearest(x[j] * id), q1 = iq4nl_nearest(x[j + VKLLM_QK4_NL / 2] * id);
            qs[j] = (uint8_t)(q0 | q1 << 4);
            float v0 = (float)k_iq4nl[q0], v1 = (float)k_iq4nl[q1];
            float e0 = x[j] - d * v0, e1 = x[j + VKLLM_QK4_NL / 2] - d * v1;
            err += e0 * e0 + e1 * e1;
            sxq += x[j] * v0 + x[j + VKLLM_QK4_NL / 2] * v1, sqq += v0 * v0 + v1 * v1;
        }
        if (err < best_err) {
            best_err = err;
            b->d = dh;
            memcpy(b->qs, qs, sizeof qs);
        }
        if (t == 0) scale[1] = sqq > 0 ? sxq / sqq : 0.0f;
    }
}

/* MXFP4's levels: the E2M1 values times 2 (ggml's kvalues_mxfp4). */
static const int8_t k_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static float mxfp4_scale(uint8_t e) { return ldexpf(1.0f, (int)e - 128); } /* 2^(e-127) / 2, as ggml */

static void dequant_mxfp4(const struct vkllm__block_mxfp4 *b, float *y) {
    float d = mxfp4_scale(b->e);
    for (int j = 0; j < 16; j++)
        y[j] = d * (float)k_mxfp4[b->qs[j] & 15], y[j + 16] = d * (float)k_mxfp4[b->qs[j] >> 4];
}

/* The smallest exponent whose scale puts the largest magnitude within the table's 12, then each
 * value to its nearest level (the lower index on ties). */
static void quant_mxfp4(const float *x, struct vkllm__block_mxfp4 *b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    int e = 0;
    while (e < 254 && amax > 12.0f * mxfp4_scale((uint8_t)e)) e++;
    b->e = (uint8_t)e;
    float id = 1.0f / mxfp4_scale(b->e);
    for (int j = 0; j < 16; j++) {
        int q[2];
        for (int h = 0; h < 2; h++) {
            float v = x[j + 16 * h] * id, best = INFINITY;
            q[h] = 0;
            for (int l = 0; l < 16; l++)
                if (fabsf(v - (float)k_mxfp4[l]) < best) best = fabsf(v - (float)k_mxfp4[l]), q[h] = l;
        }
        b->qs[j] = (uint8_t)(q[0] | q[1] << 4);
    }
}

static int iq4xs_ls(const struct vkllm__block_iq4_xs *b, int ib) {
    return ((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 15) | ((b->scales_h >> 2 * ib) & 3) << 4;
}

static void dequant_iq4_xs(const struct vkllm__block_iq4_xs *b, float *y) {
    float d = vkllm__f16_to_f32(b->d);
    for (int ib = 0; ib < VKLLM_QK_K / 32; ib++) {
        float dl = d * (float)(iq4xs_ls(b, ib) - 32);
        const uint8_t *qs = b->qs + 16 * ib;
        for (int j = 0; j < 16; j++) {
            y[32 * ib + j] = dl * (float)k_iq4nl[qs[j] & 15];
            y[32 * ib + 16 + j] = dl * (float)k_iq4nl[qs[j] >> 4];
        }
    }
}

/* Each sub-block's own best scale as IQ4_NL finds it, then one super-block scale d with 6-bit
 * multiples (ls - 32 in -32..31) of it, and the indices picked again for the rounded scales. */
static void quant_iq4_xs(const float *x, struct vkllm__block_iq4_xs *b) {
    float sub[VKLLM_QK_K / 32], amax = 0.0f, vmax = 0.0f;
    for (int ib = 0; ib < VKLLM_QK_K / 32; ib++) {
        struct vkllm__block_iq4_nl t;
        quant_iq4_nl(x + 32 * ib, &t);
        sub[ib] = vkllm__f16_to_f32(t.d);
        if (fabsf(sub[ib]) > amax) amax = fabsf(sub[ib]), vmax = sub[ib];
    }
    b->d = f16_scale(vmax / -32.0f); /* the largest sub-scale maps to ls - 32 = -32 exactly */
    float d = vkllm__f16_to_f32(b->d), id = d != 0.0f ? 1.0f / d : 0.0f;
    b->scales_h = 0;
    memset(b->scales_l, 0, sizeof b->scales_l);
    for (int ib = 0; ib < VKLLM_QK_K / 32; ib++) {
        int ls = qround(sub[ib] * id, -32, 31) + 32;
        b->scales_l[ib / 2] |= (uint8_t)((ls & 15) << 4 * (ib % 2));
        b->scales_h |= (uint16_t)((ls >> 4) << 2 * ib);
        float dl = d * (float)(ls - 32), idl = dl != 0.0f ? 1.0f / dl : 0.0f;
        for (int j = 0; j < 16; j++) {
            int q0 = iq4nl_nearest(x[32 * ib + j] * idl), q1 = iq4nl_nearest(x[32 * ib + 16 + j] * idl);
            b->qs[16 * ib + j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

static uint32_t load_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_u32le(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The 5-bit quants of a Q5_0 / Q5_1 block: element j's 5th bit is bit j of qh. */
static void unpack_q5(const uint8_t *qs, const uint8_t *qh4, int *q) {
    uint32_t qh = load_u32le(qh4);
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 15) | (int)((qh >> j) & 1) << 4;
        q[j + 16] = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
    }
}

static void pack_q5(const int *q, uint8_t *qs, uint8_t *qh4) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
        qh |= (uint32_t)(q[j] >> 4 & 1) << j | (uint32_t)(q[j + 16] >> 4 & 1) << (j + 16);
    }
    store_u32le(qh4, qh);
}

static void dequant_q5_0(const struct vkllm__block_q5_0 *b, float *y) {
    int q[32];
    unpack_q5(b->qs, b->qh, q);
    float d = vkllm__f16_to_f32(b->d);
    for (int j = 0; j < 32; j++) y[j] = (float)(q[j] - 16) * d;
}

static void quant_q5_0(const float *x, struct vkllm__block_q5_0 *b) {
    int q[32];
    b->d = f16_scale(signed_absmax(x, VKLLM_QK5_0) / -16.0f);
    float d = vkllm__f16_to_f32(b->d);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) q[j] = qround(x[j] * id + 16.0f, 0, 31);
    pack_q5(q, b->qs, b->qh);
}

static void dequant_q5_1(const struct vkllm__block_q5_1 *b, float *y) {
    int q[32];
    unpack_q5(b->qs, b->qh, q);
    float d = vkllm__f16_to_f32(b->d), m = vkllm__f16_to_f32(b->m);
    for (int j = 0; j < 32; j++) y[j] = (float)q[j] * d + m;
}

static void quant_q5_1(const float *x, struct vkllm__block_q5_1 *b) {
    int q[32];
    float lo, hi;
    min_max(x, VKLLM_QK5_1, &lo, &hi);
    b->d = f16_scale((hi - lo) / 31.0f);
    b->m = vkllm__f32_to_f16(lo);
    float d = vkllm__f16_to_f32(b->d), m = vkllm__f16_to_f32(b->m);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) q[j] = qround((x[j] - m) * id, 0, 31);
    pack_q5(q, b->qs, b->qh);
}

/* --- K-quant scale search ------------------------------------------------------------------- */

/* Fit x ~ scale * q - mn with q in 0..nmax and mn >= 0 (K-quant mins only subtract) for one
 * sub-block of n <= 32 values: try several grid spacings, assign quants, refit scale and offset by
 * least squares, keep the smallest squared error. Returns the scale, writes mn. */
static float fit_scale_min(const float *x, int n, int nmax, float *mn) {
    float lo, hi;
    min_max(x, n, &lo, &hi);
    if (lo > 0.0f) lo = 0.0f;
    if (!(hi > lo)) { /* constant block (or all non-positive and equal) */
        *mn = -lo;
        return 0.0f;
    }
    float best_scale = (hi - lo) / (float)nmax, best_off = lo, best_err = INFINITY;
    for (int k = -1; k <= 16; k++) {
        float scale, off;
        if (k < 0) { /* the plain min/max grid */
            scale = best_scale;
            off = lo;
        } else {
            /* grid of nmax + (k - 8) / 4 steps over [lo, hi], then least squares on the quants */
            float iscale = ((float)nmax + 0.25f * (float)(k - 8)) / (hi - lo);
            double sl = 0, sll = 0, sx = 0, slx = 0;
            for (int i = 0; i < n; i++) {
                int l = qround((x[i] - lo) * iscale, 0, nmax);
                sl += l;
                sll += (double)l * l;
                sx += x[i];
                slx += (double)l * x[i];
            }
            double det = n * sll - sl * sl;
            if (!(det > 0)) continue;
            scale = (float)((n * slx - sl * sx) / det);
            off = (float)((sll * sx - sl * slx) / det);
            if (off > 0.0f) { /* the offset may only subtract: pin it at 0 and refit the scale */
                off = 0.0f;
                scale = (float)(slx / sll);
            }
            if (!(scale > 0.0f)) continue;
        }
        float is = 1.0f / scale, err = 0.0f;
        for (int i = 0; i < n; i++) {
            float e = scale * (float)qround((x[i] - off) * is, 0, nmax) + off - x[i];
            err += e * e;
        }
        if (err < best_err) {
            best_err = err;
            best_scale = scale;
            best_off = off;
        }
    }
    *mn = -best_off;
    return best_scale;
}

static float fit_scale_sym(const float *x, int n, int nmax);

/* The 16 sub-blocks' symmetric scales (q in -nmax..nmax-1) of a 256-element super-block into sub;
 * returns the one of largest magnitude, signed (Q6_K and Q3_K map it to their most negative
 * multiple of d). */
static float fit_sub_scales_sym(const float *x, int nmax, float *sub) {
    float vmax = 0.0f;
    for (int s = 0; s < 16; s++) {
        sub[s] = fit_scale_sym(x + 16 * s, 16, nmax);
        if (fabsf(sub[s]) > fabsf(vmax)) vmax = sub[s];
    }
    return vmax;
}

/* Symmetric fit x ~ scale * q, q in -nmax..nmax-1 (Q6_K), searching around the grid where the
 * largest-magnitude value maps to -nmax; returns the (signed) scale. */
static float fit_scale_sym(const float *x, int n, int nmax) {
    float vmax = signed_absmax(x, n);
    if (vmax == 0.0f) return 0.0f;
    float best_scale = vmax / -(float)nmax, best = -1.0f;
    for (int k = -9; k <= 9; k++) {
        float iscale = -((float)nmax + 0.1f * (float)k) / vmax;
        double slx = 0, sll = 0;
        for (int i = 0; i < n; i++) {
            int l = qround(iscale * x[i], -nmax, nmax - 1);
            slx += (double)l * x[i];
            sll += (double)l * l;
        }
        /* With scale = slx / sll the squared error is sum(x^2) - slx^2 / sll: maximize the last. */
        if (sll > 0 && slx * slx / sll > best) {
            best = (float)(slx * slx / sll);
            best_scale = (float)(slx / sll);
        }
    }
    return best_scale;
}

/* --- Q4_K, Q5_K ----------------------------------------------------------------------------- */

static void get_scale_min_k4(int s, const uint8_t *q, int *sc, int *mn) {
    if (s < 4) {
        *sc = q[s] & 63;
        *mn = q[s + 4] & 63;
    } else {
        *sc = (q[s + 4] & 15) | (q[s - 4] >> 6) << 4;
        *mn = (q[s + 4] >> 4) | (q[s] >> 6) << 4;
    }
}

static void put_scale_min_k4(const int *sc, const int *mn, uint8_t *q) {
    for (int s = 0; s < 4; s++) {
        q[s] = (uint8_t)((sc[s] & 63) | (sc[s + 4] >> 4) << 6);
        q[s + 4] = (uint8_t)((mn[s] & 63) | (mn[s + 4] >> 4) << 6);
        q[s + 8] = (uint8_t)((sc[s + 4] & 15) | (mn[s + 4] & 15) << 4);
    }
}

/* Decode a Q4_K/Q5_K super-block given its quants q[256] (0..15 or 0..31). */
static void dequant_k_affine(uint16_t dh, uint16_t dminh, const uint8_t *scales, const int *q, float *y) {
    float d = vkllm__f16_to_f32(dh), dmin = vkllm__f16_to_f32(dminh);
    for (int s = 0; s < 8; s++) {
        int sc, mn;
        get_scale_min_k4(s, scales, &sc, &mn);
        float d1 = d * (float)sc, m1 = dmin * (float)mn;
        for (int l = 0; l < 32; l++) y[32 * s + l] = d1 * (float)q[32 * s + l] - m1;
    }
}

/* Encode a Q4_K/Q5_K super-block: 6-bit sub-block scales and mins against f16 super scales,
 * then quants against the scales as stored. Writes d, dmin, scales and q[256]. */
static void quant_k_affine(const float *x, int nmax, uint16_t *dh, uint16_t *dminh, uint8_t *scales, int *q) {
    float sub_scale[8], sub_min[8], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 8; s++) {
        sub_scale[s] = fit_scale_min(x + 32 * s, 32, nmax, &sub_min[s]);
        if (sub_scale[s] > max_scale) max_scale = sub_scale[s];
        if (sub_min[s] > max_min) max_min = sub_min[s];
    }
    *dh = f16_scale(max_scale / 63.0f);
    *dminh = f16_scale(max_min / 63.0f);
    float d = vkllm__f16_to_f32(*dh), dmin = vkllm__f16_to_f32(*dminh);
    int sc[8], mn[8];
    for (int s = 0; s < 8; s++) {
        sc[s] = d > 0.0f ? qround(sub_scale[s] / d, 0, 63) : 0;
        mn[s] = dmin > 0.0f ? qround(sub_min[s] / dmin, 0, 63) : 0;
    }
    put_scale_min_k4(sc, mn, scales);
    for (int s = 0; s < 8; s++) {
        float d1 = d * (float)sc[s], m1 = dmin * (float)mn[s];
        for (int l = 0; l < 32; l++) q[32 * s + l] = d1 > 0.0f ? qround((x[32 * s + l] + m1) / d1, 0, nmax) : 0;
    }
}

/* Quants of Q4_K / Q5_K: group c of 64 elements uses qs[32c .. 32c+31]; low nibbles first. */
static void unpack_k_nibbles(const uint8_t *qs, int *q) {
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] = qs[32 * c + l] & 15;
            q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
        }
    }
}

static void pack_k_nibbles(const int *q, uint8_t *qs) {
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) qs[32 * c + l] = (uint8_t)((q[64 * c + l] & 15) | (q[64 * c + 32 + l] & 15) << 4);
}

static void dequant_q4_K(const struct vkllm__block_q4_K *b, float *y) {
    int q[VKLLM_QK_K];
    unpack_k_nibbles(b->qs, q);
    dequant_k_affine(b->d, b->dmin, b->scales, q, y);
}

static void quant_q4_K(const float *x, struct vkllm__block_q4_K *b) {
    int q[VKLLM_QK_K];
    quant_k_affine(x, 15, &b->d, &b->dmin, b->scales, q);
    pack_k_nibbles(q, b->qs);
}

static void dequant_q5_K(const struct vkllm__block_q5_K *b, float *y) {
    int q[VKLLM_QK_K];
    unpack_k_nibbles(b->qs, q);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] |= (b->qh[l] >> (2 * c) & 1) << 4;
            q[64 * c + 32 + l] |= (b->qh[l] >> (2 * c + 1) & 1) << 4;
        }
    }
    dequant_k_affine(b->d, b->dmin, b->scales, q, y);
}

static void quant_q5_K(const float *x, struct vkllm__block_q5_K *b) {
    int q[VKLLM_QK_K];
    quant_k_affine(x, 31, &b->d, &b->dmin, b->scales, q);
    pack_k_nibbles(q, b->qs);
    memset(b->qh, 0, sizeof b->qh);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            b->qh[l] |= (uint8_t)((q[64 * c + l] >> 4 & 1) << (2 * c));
            b->qh[l] |= (uint8_t)((q[64 * c + 32 + l] >> 4 & 1) << (2 * c + 1));
        }
    }
}

/* --- Q6_K ----------------------------------------------------------------------------------- */

/* Element index -> (ql byte, ql shift, qh byte, qh shift) as in quant_blocks.h. */
static void q6_K_pos(int i, int *ql, int *ql_shift, int *qh, int *qh_shift) {
    int half = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
    *ql = 64 * half + l + 32 * (quarter & 1);
    *ql_shift = 4 * (quarter >> 1);
    *qh = 32 * half + l;
    *qh_shift = 2 * quarter;
}

static void q6_K_quants(const struct vkllm__block_q6_K *b, int *q) { /* -32..31 */
    for (int i = 0; i < VKLLM_QK_K; i++) {
        int ql, qls, qh, qhs;
        q6_K_pos(i, &ql, &qls, &qh, &qhs);
        q[i] = ((b->ql[ql] >> qls & 15) | (b->qh[qh] >> qhs & 3) << 4) - 32;
    }
}

static void dequant_q6_K(const struct vkllm__block_q6_K *b, float *y) {
    int q[VKLLM_QK_K];
    q6_K_quants(b, q);
    float d = vkllm__f16_to_f32(b->d);
    for (int i = 0; i < VKLLM_QK_K; i++) y[i] = d * (float)b->scales[i / 16] * (float)q[i];
}

static void quant_q6_K(const float *x, struct vkllm__block_q6_K *b) {
    float sub_scale[16], vmax = fit_sub_scales_sym(x, 32, sub_scale);
    /* The largest-magnitude sub-scale maps to -128. */
    b->d = f16_scale(vmax / -128.0f);
    float d = vkllm__f16_to_f32(b->d);
    memset(b->ql, 0, sizeof b->ql);
    memset(b->qh, 0, sizeof b->qh);
    for (int s = 0; s < 16; s++) b->scales[s] = (int8_t)(d != 0.0f ? qround(sub_scale[s] / d, -128, 127) : 0);
    for (int i = 0; i < VKLLM_QK_K; i++) {
        float d1 = d * (float)b->scales[i / 16];
        int q = d1 != 0.0f ? qround(x[i] / d1, -32, 31) + 32 : 32;
        int ql, qls, qh, qhs;
        q6_K_pos(i, &ql, &qls, &qh, &qhs);
        b->ql[ql] |= (uint8_t)((q & 15) << qls);
        b->qh[qh] |= (uint8_t)((q >> 4) << qhs);
    }
}

/* --- Q2_K, Q3_K ----------------------------------------------------------------------------- */

/* Element i's byte of qs and the shift of its 2 bits (quant_blocks.h). */
static int k2_pos(int i, int *shift) {
    *shift = 2 * (i % 128 / 32);
    return 32 * (i / 128) + i % 32;
}

static void dequant_q2_K(const struct vkllm__block_q2_K *b, float *y) {
    float d = vkllm__f16_to_f32(b->d), dmin = vkllm__f16_to_f32(b->dmin);
    for (int i = 0; i < VKLLM_QK_K; i++) {
        int sh, o = k2_pos(i, &sh), sc = b->scales[i / 16];
        y[i] = d * (float)(sc & 15) * (float)(b->qs[o] >> sh & 3) - dmin * (float)(sc >> 4);
    }
}

/* Each sub-block of 16 fitted as scale * q - min (q 0..3), then 4-bit multiples of two f16
 * super scales, then the quants again against the scales as stored. */
static void quant_q2_K(const float *x, struct vkllm__block_q2_K *b) {
    float sub_scale[16], sub_min[16], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 16; s++) {
        sub_scale[s] = fit_scale_min(x + 16 * s, 16, 3, &sub_min[s]);
        if (sub_scale[s] > max_scale) max_scale = sub_scale[s];
        if (sub_min[s] > max_min) max_min = sub_min[s];
    }
    b->d = f16_scale(max_scale / 15.0f);
    b->dmin = f16_scale(max_min / 15.0f);
    float d = vkllm__f16_to_f32(b->d), dmin = vkllm__f16_to_f32(b->dmin);
    memset(b->qs, 0, sizeof b->qs);
    for (int s = 0; s < 16; s++) {
        int sc = d > 0.0f ? qround(sub_scale[s] / d, 0, 15) : 0,
            mn = dmin > 0.0f ? qround(sub_min[s] / dmin, 0, 15) : 0;
        b->scales[s] = (uint8_t)(sc | mn << 4);
        float d1 = d * (float)sc, m1 = dmin * (float)mn;
        for (int l = 0; l < 16; l++) {
            int i = 16 * s + l, sh, o = k2_pos(i, &sh);
            int q = d1 > 0.0f ? qround((x[i] + m1) / d1, 0, 3) : 0;
            b->qs[o] |= (uint8_t)(q << sh);
        }
    }
}

static int q3k_scale(const uint8_t *sc, int s) { /* 0..63: the stored 6 bits */
    int lo = s < 8 ? sc[s] & 15 : sc[s - 8] >> 4;
    return lo | (sc[8 + s % 4] >> 2 * (s / 4) & 3) << 4;
}

static int q3k_quant(const struct vkllm__block_q3_K *b, int i) { /* -4..3 */
    int sh, o = k2_pos(i, &sh);
    return (b->qs[o] >> sh & 3) + 4 * (b->hmask[i % 32] >> (i / 32) & 1) - 4;
}

static void dequant_q3_K(const struct vkllm__block_q3_K *b, float *y) {
    float d = vkllm__f16_to_f32(b->d);
    for (int i = 0; i < VKLLM_QK_K; i++) y[i] = d * (float)(q3k_scale(b->scales, i / 16) - 32) * (float)q3k_quant(b, i);
}

/* As Q6_K: a symmetric scale per sub-block of 16 (q -4..3), the largest mapped to -32 of the 6-bit
 * multiples of d. */
static void quant_q3_K(const float *x, struct vkllm__block_q3_K *b) {
    float sub_scale[16], vmax = fit_sub_scales_sym(x, 4, sub_scale);
    b->d = f16_scale(vmax / -32.0f);
    float d = vkllm__f16_to_f32(b->d);
    memset(b, 0, offsetof(struct vkllm__block_q3_K, d));
    for (int s = 0; s < 16; s++) {
        int sc = d != 0.0f ? qround(sub_scale[s] / d, -32, 31) : 0, u = sc + 32;
        b->scales[s < 8 ? s : s - 8] |= (uint8_t)((u & 15) << (s < 8 ? 0 : 4));
        b->scales[8 + s % 4] |= (uint8_t)((u >> 4) << 2 * (s / 4));
        float d1 = d * (float)sc;
        for (int l = 0; l < 16; l++) {
            int i = 16 * s + l, sh, o = k2_pos(i, &sh);
            int q = (d1 != 0.0f ? qround(x[i] / d1, -4, 3) : 0) + 4;
            b->qs[o] |= (uint8_t)((q & 3) << sh);
            b->hmask[i % 32] |= (uint8_t)((q >> 2) << (i / 32));
        }
    }
}

/* --- pieces, for repacking ------------------------------------------------------------------ */

int vkllm__block_parts(uint32_t type, const void *block, int *q, float *d, float *m) {
    switch (type) {
    case VKLLM__TYPE_Q8_0: {
        const struct vkllm__block_q8_0 *b = block;
        for (int j = 0; j < 32; j++) q[j] = b->qs[j];
        d[0] = vkllm__f16_to_f32(b->d), m[0] = 0.0f;
        return 32;
    }
    case VKLLM__TYPE_Q4_0: {
        const struct vkllm__block_q4_0 *b = block;
        for (int j = 0; j < 16; j++) q[j] = (b->qs[j] & 15) - 8, q[j + 16] = (b->qs[j] >> 4) - 8;
        d[0] = vkllm__f16_to_f32(b->d), m[0] = 0.0f;
        return 32;
    }
    case VKLLM__TYPE_IQ4_XS: { /* as IQ4_NL, a scale per sub-block of 32 */
        const struct vkllm__block_iq4_xs *b = block;
        float dd = vkllm__f16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++) {
            for (int j = 0; j < 16; j++)
                q[32 * ib + j] = k_iq4nl[b->qs[16 * ib + j] & 15],
                            q[32 * ib + 16 + j] = k_iq4nl[b->qs[16 * ib + j] >> 4];
            d[ib] = dd * (float)(iq4xs_ls(b, ib) - 32), m[ib] = 0.0f;
        }
        return 256;
    }
    case VKLLM__TYPE_MXFP4: { /* levels as int8, one power-of-two scale */
        const struct vkllm__block_mxfp4 *b = block;
        for (int j = 0; j < 16; j++) q[j] = k_mxfp4[b->qs[j] & 15], q[j + 16] = k_mxfp4[b->qs[j] >> 4];
        d[0] = mxfp4_scale(b->e), m[0] = 0.0f;
        return 32;
    }
    case VKLLM__TYPE_IQ4_NL: { /* the table's levels fit int8: repacked as Q8_0 */
        const struct vkllm__block_iq4_nl *b = block;
        for (int j = 0; j < 16; j++) q[j] = k_iq4nl[b->qs[j] & 15], q[j + 16] = k_iq4nl[b->qs[j] >> 4];
        d[0] = vkllm__f16_to_f32(b->d), m[0] = 0.0f;
        return 32;
    }
    case VKLLM__TYPE_Q4_1: {
        const struct vkllm__block_q4_1 *b = block;
        for (int j = 0; j < 16; j++) q[j] = b->qs[j] & 15, q[j + 16] = b->qs[j] >> 4;
        d[0] = vkllm__f16_to_f32(b->d), m[0] = vkllm__f16_to_f32(b->m);
        return 32;
    }
    case VKLLM__TYPE_Q5_0: {
        const struct vkllm__block_q5_0 *b = block;
        unpack_q5(b->qs, b->qh, q);
        for (int j = 0; j < 32; j++) q[j] -= 16;
        d[0] = vkllm__f16_to_f32(b->d), m[0] = 0.0f;
        return 32;
    }
    case VKLLM__TYPE_Q5_1: {
        const struct vkllm__block_q5_1 *b = block;
        unpack_q5(b->qs, b->qh, q);
        d[0] = vkllm__f16_to_f32(b->d), m[0] = vkllm__f16_to_f32(b->m);
        return 32;
    }
    case VKLLM__TYPE_Q4_K:
    case VKLLM__TYPE_Q5_K: {
        const struct vkllm__block_q4_K *b4 = block;
        const struct vkllm__block_q5_K *b5 = block;
        const uint8_t *scales = type == VKLLM__TYPE_Q4_K ? b4->scales : b5->scales;
        unpack_k_nibbles(type == VKLLM__TYPE_Q4_K ? b4->qs : b5->qs, q);
        for (int c = 0; type == VKLLM__TYPE_Q5_K && c < 4; c++) {
            for (int l = 0; l < 32; l++) {
                q[64 * c + l] |= (b5->qh[l] >> (2 * c) & 1) << 4;
                q[64 * c + 32 + l] |= (b5->qh[l] >> (2 * c + 1) & 1) << 4;
            }
        }
        float dd = vkllm__f16_to_f32(b4->d), dmin = vkllm__f16_to_f32(b4->dmin); /* same place in both */
        for (int s = 0; s < 8; s++) {
            int sc, mn;
            get_scale_min_k4(s, scales, &sc, &mn);
            d[s] = dd * (float)sc, m[s] = -(dmin * (float)mn); /* as dequant_k_affine */
        }
        return 256;
    }
    case VKLLM__TYPE_Q2_K: { /* sub-blocks of 16 with an offset */
        const struct vkllm__block_q2_K *b = block;
        float dd = vkllm__f16_to_f32(b->d), dmin = vkllm__f16_to_f32(b->dmin);
        for (int i = 0; i < VKLLM_QK_K; i++) {
            int sh, o = k2_pos(i, &sh);
            q[i] = b->qs[o] >> sh & 3;
        }
        for (int s = 0; s < 16; s++)
            d[s] = dd * (float)(b->scales[s] & 15), m[s] = -(dmin * (float)(b->scales[s] >> 4));
        return 256;
    }
    case VKLLM__TYPE_Q3_K: { /* as Q6_K: sub-blocks of 16 */
        const struct vkllm__block_q3_K *b = block;
        float dd = vkllm__f16_to_f32(b->d);
        for (int i = 0; i < VKLLM_QK_K; i++) q[i] = q3k_quant(b, i);
        for (int s = 0; s < 16; s++) d[s] = dd * (float)(q3k_scale(b->scales, s) - 32), m[s] = 0.0f;
        return 256;
    }
    case VKLLM__TYPE_Q6_K: {
        const struct vkllm__block_q6_K *b = block;
        q6_K_quants(b, q);
        float dd = vkllm__f16_to_f32(b->d);
        for (int s = 0; s < 16; s++) d[s] = dd * (float)b->scales[s], m[s] = 0.0f;
        return 256;
    }
    default: return 0;
    }
}

/* --- dispatch ------------------------------------------------------------------------------- */

/* One entry per block type: decode / encode one block (struct of type_size bytes). */
#define VKLLM_BLOCK_CODECS(XX)                   \
    XX(VKLLM__TYPE_Q8_0, q8_0, VKLLM_QK8_0)      \
    XX(VKLLM__TYPE_Q4_0, q4_0, VKLLM_QK4_0)      \
    XX(VKLLM__TYPE_IQ4_NL, iq4_nl, VKLLM_QK4_NL) \
    XX(VKLLM__TYPE_IQ4_XS, iq4_xs, VKLLM_QK_K)   \
    XX(VKLLM__TYPE_MXFP4, mxfp4, VKLLM_QK_MXFP4) \
    XX(VKLLM__TYPE_Q4_1, q4_1, VKLLM_QK4_1)      \
    XX(VKLLM__TYPE_Q5_0, q5_0, VKLLM_QK5_0)      \
    XX(VKLLM__TYPE_Q5_1, q5_1, VKLLM_QK5_1)      \
    XX(VKLLM__TYPE_Q2_K, q2_K, VKLLM_QK_K)       \
    XX(VKLLM__TYPE_Q3_K, q3_K, VKLLM_QK_K)       \
    XX(VKLLM__TYPE_Q4_K, q4_K, VKLLM_QK_K)       \
    XX(VKLLM__TYPE_Q5_K, q5_K, VKLLM_QK_K)       \
    XX(VKLLM__TYPE_Q6_K, q6_K, VKLLM_QK_K)

void vkllm__dequantize_row(uint32_t type, const void *src, float *dst, uint64_t n) {
    const uint8_t *p = src;
    switch (type) {
    case VKLLM__TYPE_F32: memcpy(dst, src, n * sizeof(float)); return;
    case VKLLM__TYPE_F16:
    case VKLLM__TYPE_BF16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = type == VKLLM__TYPE_F16 ? vkllm__f16_to_f32(h) : vkllm__bf16_to_f32(h);
        }
        return;
#define VKLLM_DEQ_CASE(id, name, qk)                \
    case id:                                        \
        for (uint64_t i = 0; i < n / (qk); i++) {   \
            struct vkllm__block_##name b;           \
            memcpy(&b, p + i * sizeof b, sizeof b); \
            dequant_##name(&b, dst + i * (qk));     \
        }                                           \
        return;
        VKLLM_BLOCK_CODECS(VKLLM_DEQ_CASE)
#undef VKLLM_DEQ_CASE
    default:
        /* Not a compute type: the caller broke the contract. NaN makes that visible. */
        for (uint64_t i = 0; i < n; i++) dst[i] = NAN;
        return;
    }
}

void vkllm__quantize_row(uint32_t type, const float *src, void *dst, uint64_t n) {
    uint8_t *p = dst;
    switch (type) {
    case VKLLM__TYPE_F32: memcpy(dst, src, n * sizeof(float)); return;
    case VKLLM__TYPE_F16:
    case VKLLM__TYPE_BF16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h = type == VKLLM__TYPE_F16 ? vkllm__f32_to_f16(src[i]) : vkllm__f32_to_bf16(src[i]);
            memcpy(p + 2 * i, &h, 2);
        }
        return;
#define VKLLM_QUANT_CASE(id, name, qk)              \
    case id:                                        \
        for (uint64_t i = 0; i < n / (qk); i++) {   \
            struct vkllm__block_##name b;           \
            memset(&b, 0, sizeof b);                \
            quant_##name(src + i * (qk), &b);       \
            memcpy(p + i * sizeof b, &b, sizeof b); \
        }                                           \
        return;
        VKLLM_BLOCK_CODECS(VKLLM_QUANT_CASE)
#undef VKLLM_QUANT_CASE
    default: return; /* not a compute type: nothing is written */
    }
}

/* --- the 16-byte layout (docs/gpu.md, "repacked weights") ------------------------------------
 * A row is cut into groups of 8 blocks (the last may hold fewer, Q6_K only: rows of 32-element
 * blocks that are not whole groups have no layout); in each group each field of its blocks goes
 * together, field after field: Q8_0 [8 x 32 quants][8 x d], Q4_0 [8 x 16][8 x d], Q5_0 [8 x 16
 * qs][8 x 4 qh][8 x d], Q6_K [8 x d][8 x 208 (ql, qh, scales)]. A field marked `full` takes its 8
 * places in a short group too (Q6_K's scales: 16 bytes, zeros after the last), so every group
 * starts a multiple of 16 bytes into its row: whole groups are 272, 144, 176 and 1680 bytes, a short
 * Q6_K group of n blocks 16 + 208 n. A row of whole groups keeps its size; a Q6_K row with a short
 * group grows by 16 - 2 n bytes. shaders/include/dequant.glsl reads
 * it (DQ_RP) and shaders/repack.comp makes it on the device from the same table. */
static const struct {
    uint32_t type, block_bytes, n;
    struct vkllm__rp_field f[3];
} k_rp[] = {
    {VKLLM__TYPE_Q8_0, 34, 2, {{2, 32, 0}, {0, 2, 0}}},
    {VKLLM__TYPE_Q4_0, 18, 2, {{2, 16, 0}, {0, 2, 0}}},
    {VKLLM__TYPE_Q5_0, 22, 3, {{6, 16, 0}, {2, 4, 0}, {0, 2, 0}}},
    {VKLLM__TYPE_Q6_K, 210, 2, {{208, 2, 1}, {0, 208, 0}}},
};

uint32_t vkllm__rp_fields(uint32_t type, struct vkllm__rp_field f[3], uint32_t *block_bytes) {
    for (size_t i = 0; i < sizeof k_rp / sizeof k_rp[0]; i++) {
        if (k_rp[i].type != type) continue;
        if (f) memcpy(f, k_rp[i].f, sizeof k_rp[i].f);
        if (block_bytes) *block_bytes = k_rp[i].block_bytes;
        return k_rp[i].n;
    }
    return 0;
}

/* Bytes of a group of n blocks (n <= 8) in the layout. */
static uint64_t group_bytes(const struct vkllm__rp_field *f, uint32_t nf, uint32_t n) {
    uint64_t b = 0;
    for (uint32_t i = 0; i < nf; i++) b += (uint64_t)(f[i].full ? 8 : n) * f[i].len;
    return b;
}

uint64_t vkllm__rp_row_bytes(uint32_t type, uint64_t k) {
    struct vkllm__rp_field f[3];
    uint32_t bb = 0, nf = vkllm__rp_fields(type, f, &bb);
    if (!nf || k == 0) return 0;
    uint64_t block = vkllm__type_traits(type)->block_size, nb = k / block;
    if (k % block || (block == 32 && nb % 8)) return 0;
    return nb / 8 * 8 * bb + (nb % 8 ? group_bytes(f, nf, (uint32_t)(nb % 8)) : 0);
}

void vkllm__rp_pack(uint32_t type, uint64_t k, uint64_t rows, const void *src, void *dst) {
    struct vkllm__rp_field f[3];
    uint32_t bb = 0, nf = vkllm__rp_fields(type, f, &bb);
    uint64_t rb_out = vkllm__rp_row_bytes(type, k);
    if (!rb_out) return;
    uint64_t nb = k / vkllm__type_traits(type)->block_size, rb_in = nb * bb;
    for (uint64_t r = 0; r < rows; r++) {
        const uint8_t *s = (const uint8_t *)src + r * rb_in;
        uint8_t *d = (uint8_t *)dst + r * rb_out;
        memset(d, 0, rb_out);
        for (uint64_t g = 0; g * 8 < nb; g++) {
            uint32_t n = (uint32_t)(nb - 8 * g < 8 ? nb - 8 * g : 8);
            const uint8_t *gs = s + g * 8 * bb;
            uint8_t *gd = d + g * 8 * bb;
            for (uint32_t i = 0, o = 0; i < nf; o += (f[i].full ? 8 : n) * f[i].len, i++)
                for (uint32_t b = 0; b < n; b++) memcpy(gd + o + b * f[i].len, gs + b * bb + f[i].off, f[i].len);
        }
    }
}
