/* sampler.h - choosing the next token from logits: greedy, temperature, top-k, top-p (nucleus),
 * min-p, repetition / frequency / presence penalties over the last N tokens, logit bias, a seeded
 * RNG of our own (a fixed seed reproduces a run exactly on every platform). The chain and its
 * defaults follow llama.cpp's: logit bias -> penalties -> top-k -> top-p -> min-p -> temperature
 * -> draw; the order of the last four is configurable (params.order). Temperature <= 0 is
 * exactly greedy (argmax, first on ties). */
#ifndef VKLLM_SAMPLER_H
#define VKLLM_SAMPLER_H

#include <stdint.h>

#include "internal.h"

/* The parameters are the public struct vkllm_sampling_params (vkllm.h): the sampler reads them
 * as they are. Temperature <= 0: greedy; top_k <= 0, top_p >= 1, min_p <= 0, repeat_penalty 1,
 * frequency/presence 0: off; penalty_last_n -1: the whole history; has_seed 0: a seed from the
 * clock (vkllm__sampler_seed reports it); order: the truncation and temperature stages as names
 * separated by ';' or ',' ("top_k;top_p;min_p;temperature", llama.cpp's default order, when NULL
 * or ""; stages left out do not run; logit bias and penalties always come first, and
 * "penalties" may be listed first as llama.cpp's --samplers does); bias: n_bias pairs (token,
 * added value; -INFINITY bans the token). */

/* llama.cpp's defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1,
 * penalty_last_n 64. */
void vkllm__sampler_params_default(struct vkllm_sampling_params *p);

struct vkllm__sampler;

/* A sampler over a vocabulary of n_vocab tokens. INVALID_ARGUMENT for out-of-range parameters
 * (negative temperature is fine: greedy; top_p < 0, min_p > 1, bias token outside the
 * vocabulary, ...), naming the parameter. */
vkllm_status vkllm__sampler_init(const struct vkllm_sampling_params *p, uint32_t n_vocab, struct vkllm__sampler **out);
void vkllm__sampler_free(struct vkllm__sampler *s);

/* Choose a token from logits (n_vocab floats, not modified). Uses the tokens recorded with
 * vkllm__sampler_accept for the penalties. */
vkllm_status vkllm__sampler_sample(struct vkllm__sampler *s, const float *logits, int32_t *token);

/* Record a token of the history (prompt tokens and generated ones) for the penalties. */
void vkllm__sampler_accept(struct vkllm__sampler *s, int32_t token);
void vkllm__sampler_reset(struct vkllm__sampler *s); /* forget the history (not the RNG) */

/* The seed in use (the one given, or the one picked). */
uint64_t vkllm__sampler_seed(const struct vkllm__sampler *s);

/* 1 when the parameters make the sampler exactly greedy (no penalties, no bias, temperature <= 0
 * or top_k == 1): the caller may take the argmax on the device instead of reading logits. */
int vkllm__sampler_is_greedy(const struct vkllm__sampler *s);

/* The probabilities the sampler would draw from for these logits, after the whole chain (for
 * tests): probs (n_vocab) sums to 1, zeros for excluded tokens. */
vkllm_status vkllm__sampler_probs(struct vkllm__sampler *s, const float *logits, float *probs);

#endif /* VKLLM_SAMPLER_H */
