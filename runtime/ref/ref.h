/* ref.h - the scalar C reference forward pass of the Llama family (fp32 math, one token at a
 * time, its own fp32 KV cache), in the spirit of llama2.c's run.c. The oracle for every GPU
 * kernel and the `--device ref` debugging path; never a product path.
 * Also the reference RoPE and single-query attention (runtime/ref/ops_attn.c). */
#ifndef VKLLM_REF_REF_H
#define VKLLM_REF_REF_H

#include <stdint.h>

#include "internal.h"
#include "model.h"

struct vkllm__ref;

/* A forward state for desc (which must outlive it) with room for n_ctx positions (0: the
 * model's training context). VKLLM_STATUS_OOM when the cache does not fit in host memory. */
vkllm_status vkllm__ref_init(const struct vkllm__model_desc *desc, uint32_t n_ctx, struct vkllm__ref **out);
void vkllm__ref_free(struct vkllm__ref *r);

/* Run token at position pos (positions 0..pos-1 must have been run before, in order; running
 * pos again overwrites it and forgets the later ones) and point *logits at the (n_vocab,)
 * logits, valid until the next call. VKLLM_STATUS_INVALID_ARGUMENT for a token outside the
 * vocabulary or a position that skips ahead, VKLLM_STATUS_CONTEXT_FULL when pos >= n_ctx. */
vkllm_status vkllm__ref_forward(struct vkllm__ref *r, uint32_t token, uint32_t pos, const float **logits);

/* The final hidden state of the last token run (after the output norm): (n_embd,), valid until
 * the next call. */
const float *vkllm__ref_hidden(const struct vkllm__ref *r);

/* Round cached keys and values to f16, as the device's F16 KV cache does, so that comparisons
 * with the device isolate the kernels' arithmetic (default off: pure fp32). */
void vkllm__ref_set_kv_f16(struct vkllm__ref *r, int on);
/* Round cached keys (values) as a q8_0 device cache stores them instead: blocks of 32 of a row,
 * int8 times max |x| / 127, rounded half away from zero (shaders/include/kv_q8.glsl). */
void vkllm__ref_set_kv_q8(struct vkllm__ref *r, int k, int v);

/* Context length the state was made for. */
uint32_t vkllm__ref_n_ctx(const struct vkllm__ref *r);

/* --- ops (ops_attn.c) ------------------------------------------------------------------------ */

/* Rotate x (n_head, head_dim) in place for position pos: pair i < n_rot/2 turns by
 * pos * inv_freq[i]; pairs are (2i, 2i+1), or (i, i + n_rot/2) when neox. The angle is the exact
 * product of the integer pos and the f32 inv_freq[i], its cos and sin exact to double rounding at
 * every uint32 position (docs/numerics.md). */
void vkllm__ref_rope(float *x, uint32_t n_head, uint32_t head_dim, uint32_t n_rot, int neox, float mscale, uint32_t pos,
                     const float *inv_freq);

/* One query position over a cache of n_kv positions, causal by construction, GQA:
 *   out (n_head, head_dim) = softmax(q k^T * scale) v   per head, query head h reading kv head
 *   h / (n_head / n_head_kv). k and v are (n_kv, n_head_kv * head_dim); att is (n_kv,) scratch.
 * window > 0: only the last window positions are seen (sliding-window attention); softcap > 0:
 * each scaled score s is softcap * tanh(s / softcap) (gemma2). sinks (n_head,) or NULL: head h's
 * softmax also counts a score sinks[h] that has no value (gpt-oss's attention sinks: weights may
 * sum to less than 1). */
void vkllm__ref_attention(float *out, const float *q, const float *k, const float *v, float *att, uint32_t n_head,
                          uint32_t n_head_kv, uint32_t head_dim, uint32_t n_kv, float scale, uint32_t window,
                          float softcap, const float *sinks);

#endif /* VKLLM_REF_REF_H */
