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

struct vkllm_model {
    vkllm_ctx_t ctx;
    struct vkllm__gguf *gguf;
    struct vkllm__model_desc *desc;
    struct vkllm__gpu_model *gm;
    struct vkllm__tokenizer *tok; /* NULL when the vocabulary is not supported (tok_error says why) */
    char tok_error[512];
};

struct vkllm_session {
    vkllm_model_t model;
    struct vkllm__forward *fw;
    uint32_t n_past;
    float *logits;       /* (logits_rows, n_vocab) of the last eval */
    uint32_t logits_rows, logits_cap;
};

#endif
