/* context.h - what the public handles hold (shared by context.c and session.c). */
#ifndef VKLLM_CONTEXT_H
#define VKLLM_CONTEXT_H

#include "forward.h"
#include "gpu.h"
#include "internal.h"

struct vkllm__tokenizer;

struct vkllm_ctx {
    struct vkllm__gpu *gpu;
};

/* A public tokenizer handle: the tokenizer it wraps (owned when loaded by vkllm_tokenizer_load,
 * the model's otherwise). */
struct vkllm_tokenizer {
    struct vkllm__tokenizer *tok;
};

struct vkllm_model {
    vkllm_ctx_t ctx;
    uint32_t n_dev;                     /* devices of the layer split (1: ctx alone) */
    vkllm_ctx_t dev[VKLLM_MAX_DEVICES]; /* their contexts, dev[0] == ctx, each holding a stage of gm */
    struct vkllm__gguf *gguf;
    struct vkllm__model_desc *desc;
    struct vkllm__gpu_model *gm;
    struct vkllm__tokenizer *tok;     /* NULL when the vocabulary is not supported (tok_error says why) */
    struct vkllm_tokenizer tokenizer; /* the public handle of tok */
    char tok_error[512];
};

struct vkllm_kv_pool {
    vkllm_model_t model;
    struct vkllm__kv_pool *p;                     /* the first device's: its blocks are the sessions' */
    struct vkllm__kv_pool *pd[VKLLM_MAX_DEVICES]; /* each device's (pd[0] == p): the same blocks of its layers */
    int k_q8, v_q8;
    uint32_t n_ctx;
};

struct vkllm_session {
    vkllm_model_t model;
    struct vkllm__forward *fw;
    uint32_t n_past;
    uint32_t n_ubatch; /* tokens the forward pass evaluates at once (vkllm__forward_init's) */
    int32_t *hist;     /* (n_ctx,) the token at each filled position: what the KV cache holds */
    float *logits;     /* (logits_rows, n_vocab) of the last eval */
    uint32_t logits_rows, logits_cap;
    struct vkllm_gen *gen; /* the generation that owns the session (vkllm_gen_start .. _free), or NULL */
};

/* The session calls a generation makes on its own session (the public ones refuse a session a
 * generation owns: "one gen per session at a time"). */
vkllm_status vkllm__session_eval(vkllm_session_t s, const int32_t *tokens, uint32_t n, int all_logits);
vkllm_status vkllm__session_decode_greedy(vkllm_session_t s, int32_t token, int32_t *next);
vkllm_status vkllm__session_truncate(vkllm_session_t s, uint32_t n_past);
/* s is being freed while g owns it: g ends with INVALID_ARGUMENT and forgets s (generate.c). */
void vkllm__gen_orphan(struct vkllm_gen *g);

/* One decode step of tokens[i] on session s[i] for i < n, batched: every session gets the logits
 * of its token (vkllm_session_logits(s[i], 0)) and one more position. The sessions must be
 * different and of one model. Each row is computed exactly as a lone decode step computes it. */
vkllm_status vkllm__session_decode_batch(vkllm_session_t *s, const int32_t *tokens, uint32_t n);

/* Blocks of the KV pool for the session's next n positions (KV_FULL: the pool has too few). */
vkllm_status vkllm__session_reserve(vkllm_session_t s, uint32_t n);
/* Positions (whole blocks, at most n) of tokens[0..n) the session's KV pool has cached; with
 * adopt the session starts over holding them (n_past = that). 0 for models with sliding-window
 * layers (their rings are not in the pool). */
uint32_t vkllm__session_pool_prefix(vkllm_session_t s, const int32_t *tokens, uint32_t n, int adopt);

#endif
