/* ref_ops.h - scalar C reference of every op the shaders compute (fp32, one obvious loop each).
 * The oracle for the shader tests and the building blocks of the reference forward pass.
 * Never a fast path. Shapes: row-major, (rows, cols) means cols contiguous. */
#ifndef VKLLM_REF_REF_OPS_H
#define VKLLM_REF_REF_OPS_H

#include <stdint.h>

/* o[i] = a[i] + b[i % nb]  (n elements; b repeated when nb < n) */
void vkllm__ref_add(float *o, const float *a, const float *b, uint32_t n, uint32_t nb);
/* o[i] = a[i] * b[i % nb] */
void vkllm__ref_mul(float *o, const float *a, const float *b, uint32_t n, uint32_t nb);

/* o (nrows, ncols) = x / sqrt(mean(x^2) + eps) * w (ncols,), row by row (double accumulation). */
void vkllm__ref_rmsnorm(float *o, const float *x, const float *w, uint32_t ncols, uint32_t nrows, float eps);

/* o (nrows, ncols) = softmax(scale * x) row by row. -inf entries get 0; an all -inf row gives
 * all zeros. */
void vkllm__ref_softmax(float *o, const float *x, uint32_t ncols, uint32_t nrows, float scale);

/* o[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)). */
void vkllm__ref_silu_mul(float *o, const float *gate, const float *up, uint32_t n);
/* o = gelu(gate) * up, the tanh approximation (in double). */
void vkllm__ref_gelu_mul(float *o, const float *gate, const float *up, uint32_t n);
/* gpt-oss's clamped SwiGLU: g = min(gate, 7), u = clamp(up, -7, 7), o = g sigmoid(1.702 g) (u + 1). */
void vkllm__ref_swiglu_oai(float *o, const float *gate, const float *up, uint32_t n);
/* Mixture-of-experts routing of one token: softmax over the n router logits, the k largest (ids,
 * the lower index first on ties) and their probabilities renormalized to sum to 1 (the sum
 * clamped at 2^-14 as llama.cpp does) into w. */
void vkllm__ref_moe_route(const float *logits, uint32_t n, uint32_t k, uint32_t *ids, float *w);
/* o = cap * tanh(x / cap). */
void vkllm__ref_softcap(float *o, const float *x, float cap, uint32_t n);

/* o (m,) = W (m, k) @ x (k,)  with W given as f32 rows. */
void vkllm__ref_matvec(float *o, const float *w, const float *x, uint32_t m, uint32_t k);

/* o (m,) = W @ x where W is stored in a ggml type (rows of k elements, row_bytes apart):
 * each row is dequantized with the reference decoder, then dotted. */
void vkllm__ref_matvec_q(float *o, uint32_t type, const void *w, uint64_t row_bytes, const float *x, uint32_t m,
                         uint32_t k);

/* x (k,) as the GPUs' int8-x matvec sees it (shaders/matvec_x8.comp): per block of 32, d =
 * max|x| / 127 and q = roundEven(x * (1 / d)), o = q * d (k % 32 == 0). With nudge, an element of
 * x whose x / d lies within 1e-3 of a rounding tie is first moved a quarter step away from it, so
 * that a device whose division is a few ulps off (Vulkan allows 2.5) rounds it the same way: the
 * tests quantize x so before handing it to the device. A block holding an inf or NaN comes out all
 * NaN. Returns how many elements were moved. */
uint32_t vkllm__ref_quantize_x8(float *o, float *x, uint32_t k, int nudge);

/* index of the largest value (the first one on ties); n >= 1 */
uint32_t vkllm__ref_argmax(const float *x, uint32_t n);

#endif
