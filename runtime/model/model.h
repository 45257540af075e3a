/* model.h - the Llama family as vkllm sees it: hyper-parameters from GGUF metadata, one field
 * per weight tensor, every shape and type validated once. The reference forward pass
 * (runtime/ref/) and the GPU loader both start from a vkllm__model_desc.
 *
 * Architectures: llama (Llama 1/2/3, TinyLlama, Mistral, SmolLM, stories), qwen2 (q/k/v biases),
 * qwen3 (per-head RMS norm of q and k), granite (llama with embedding, attention, residual and
 * logit multipliers), phi3 (Phi-3, Phi-4: fused q/k/v and gate/up matrices, split into row views at
 * load; NeoX RoPE with LongRoPE's short and long factors), gemma2 and gemma3 (scaled embeddings,
 * post-attention and post-FFN norms, a GELU-gated FFN, sliding-window layers with their own RoPE,
 * soft-capped scores and logits in gemma2, q/k norms in gemma3), qwen3moe and Mixtral (llama with
 * experts), gpt-oss (q/k/v/o biases, attention sinks, sliding windows on every other layer, YaRN,
 * experts with biases and a clamped SwiGLU). All: pre-norm RMSNorm blocks, GQA,
 * optional tied embeddings (no output.weight: the output projection is token_embd.weight).
 *
 * Shapes in comments are (rows, cols), cols contiguous, i.e. ggml's ne reversed: a tensor with
 * ne = [n_embd, n_vocab] is (n_vocab, n_embd).
 */
#ifndef VKLLM_MODEL_H
#define VKLLM_MODEL_H

#include <stdint.h>

#include "gguf.h"
#include "internal.h"
#include "tensors.h"

/* The general.architecture string of a (VKLLM__ARCHS in tensors.h); "?" for an invalid value. */
const char *vkllm__arch_name(enum vkllm__arch a);
/* VKLLM_STATUS_OK and *out, or VKLLM_STATUS_UNSUPPORTED for another name (no error text set). */
vkllm_status vkllm__arch_from_name(const char *name, enum vkllm__arch *out);

enum vkllm__rope_scaling {
    VKLLM__ROPE_SCALING_NONE = 0,
    VKLLM__ROPE_SCALING_LINEAR = 1, /* positions divided by factor (freq_scale = 1/factor) */
    VKLLM__ROPE_SCALING_LLAMA3 = 2, /* per-frequency factors (rope_freqs.weight or computed) */
    VKLLM__ROPE_SCALING_YARN = 3,   /* YaRN: low frequencies interpolated (freq_scale = 1/factor), high
                                     * ones kept, a ramp between (dims set by orig_ctx); cos and sin
                                     * times 1 + 0.1 ln(factor) (mscale) */
};

/* RoPE: for each pair i in [0, n_rot/2) the angle is pos * inv_freq[i] with
 *   inv_freq[i] = freq_scale * theta^(-2i/n_rot) / freq_factors[i]   (freq_factors: 1 if NULL;
 * YaRN mixes freq_scale with 1 per pair, see model.c yarn_mix).
 * Pairs: normal (llama) rotates (x[2i], x[2i+1]); NeoX (qwen2, qwen3) rotates (x[i], x[i+n_rot/2]).
 * Dimensions n_rot..head_dim-1 of each head pass through unrotated. */
struct vkllm__rope {
    float theta;    /* base, <arch>.rope.freq_base (default 10000) */
    uint32_t n_rot; /* rotated dims per head, <arch>.rope.dimension_count */
    int neox;       /* 1: NeoX halves pairing; 0: adjacent pairs */
    enum vkllm__rope_scaling scaling;
    float factor;           /* context extension factor (1 when none) */
    float freq_scale;       /* 1/factor for linear and YaRN scaling, else 1 */
    uint32_t orig_ctx;      /* rope.scaling.original_context_length (0 if absent) */
    float low_freq_factor;  /* llama3: 1 unless the metadata says */
    float high_freq_factor; /* llama3: 4 unless the metadata says */
    float *freq_factors;    /* (n_rot/2,) divisors, or NULL; owned by the desc */
    /* phi3's LongRoPE: freq_factors are its short factors, these its long ones, which a context
     * longer than orig_ctx takes (as llama.cpp); NULL for the other architectures */
    float *freq_factors_long;
    float attn_factor; /* rope.scaling.attn_factor (1 when absent) */
    float mscale;      /* the rotated dims' magnitude (cos and sin times this, as ggml's
                        * rope): attn_factor, times 1 + 0.1 ln(factor) for YaRN */
};

struct vkllm__hparams {
    enum vkllm__arch arch;
    uint32_t n_layer;     /* transformer blocks */
    uint32_t n_embd;      /* residual stream width */
    uint32_t n_ff;        /* FFN hidden width */
    uint32_t n_head;      /* query heads */
    uint32_t n_head_kv;   /* key/value heads (GQA: n_head is a multiple of it) */
    uint32_t head_dim;    /* per head (<arch>.attention.key_length, default n_embd/n_head) */
    uint32_t n_embd_q;    /* n_head * head_dim */
    uint32_t n_embd_kv;   /* n_head_kv * head_dim */
    uint32_t n_vocab;     /* rows of token_embd */
    uint32_t n_ctx_train; /* <arch>.context_length */
    uint32_t
        pooling; /* <arch>.pooling_type as llama.cpp numbers it (0 none, 1 mean, 2 cls, 3 last, 4 rank); 0 when absent */
    float rms_eps; /* <arch>.attention.layer_norm_rms_epsilon */
    int tied_embd; /* 1: no output.weight, logits use token_embd.weight */
    /* granite's multipliers (1 elsewhere): the token embeddings are scaled by embd_scale, each
     * block's output by resid_scale before it joins the residual stream, q.k by attn_scale
     * instead of 1/sqrt(head_dim) (0: that), the logits divided by logit_scale */
    float embd_scale, resid_scale, attn_scale, logit_scale;
    struct vkllm__rope rope;
    /* gemma2 / gemma3 (0 and NULL elsewhere): the FFN gate's activation is GELU (tanh) instead of
     * SiLU; the layers l with swa[l] != 0 attend to the last n_swa positions only, with their own
     * RoPE (base theta_swa, scale freq_scale_swa, no factors); scores and the final logits are
     * soft-capped (s -> cap tanh(s / cap)) where the caps are > 0 */
    int gelu;
    /* mixture of experts (0 for a dense FFN): each token's FFN is the router-weighted sum of
     * n_expert_used of n_expert expert FFNs of width n_ff_exp (softmax over all experts, the top
     * n_expert_used, their weights renormalized to sum to 1: Mixtral's and Qwen3-MoE's routing, and
     * the same numbers as gpt-oss's softmax over the top n_expert_used logits) */
    uint32_t n_expert, n_expert_used, n_ff_exp;
    /* gpt-oss's expert activation instead of silu(gate) * up: with g = min(gate, 7) and
     * u = clamp(up, -7, 7), g sigmoid(1.702 g) (u + 1) */
    int swiglu_oai;
    uint32_t n_swa;
    const uint8_t *swa; /* (n_layer,), owned by the desc; NULL: no sliding layers */
    float theta_swa, freq_scale_swa;
    float attn_softcap, final_softcap;
};

/* The sliding window of layer l (0: it sees the whole context). */
static inline uint32_t vkllm__layer_window(const struct vkllm__hparams *hp, uint32_t l) {
    return hp->swa && hp->swa[l] ? hp->n_swa : 0;
}

/* One tensor of the file per row of the layer table (tensors.h): matrices in any type vkllm
 * computes with (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, ...), vectors
 * F32; NULL for a tensor the architecture does not have (or may lack, and the file lacks). */
struct vkllm__layer_weights {
#define VKLLM__LW_FIELD_(field, ...) const struct vkllm__gguf_tensor *field;
    VKLLM__LAYER_TENSORS(VKLLM__LW_FIELD_)
#undef VKLLM__LW_FIELD_
};

/* The size of dimension d of hp (0 for VKLLM__DIM_NONE). */
uint64_t vkllm__dim_size(const struct vkllm__hparams *hp, enum vkllm__dim d);

/* Tensor t of layer lw (NULL when absent). */
static inline const struct vkllm__gguf_tensor *vkllm__layer_tensor(const struct vkllm__layer_weights *lw,
                                                                   enum vkllm__layer_tensor t) {
    return *(const struct vkllm__gguf_tensor *const *)((const char *)lw + vkllm__layer_tensors[t].offset);
}

struct vkllm__model_weights {
    const struct vkllm__gguf_tensor *token_embd;             /* (n_vocab, n_embd) */
    const struct vkllm__gguf_tensor *output_norm;            /* (n_embd,) f32 */
    const struct vkllm__gguf_tensor *output;                 /* (n_vocab, n_embd); == token_embd when tied */
    const struct vkllm__gguf_tensor *rope_freqs;             /* (n_rot/2,) f32 llama3 factors, or NULL */
    const struct vkllm__gguf_tensor *rope_short, *rope_long; /* phi3: (n_rot/2,) f32 LongRoPE factors, or NULL */
    struct vkllm__layer_weights *layers;                     /* (n_layer,) */
};

struct vkllm__model_desc {
    const struct vkllm__gguf *gguf; /* not owned; must outlive the desc */
    struct vkllm__hparams hp;
    struct vkllm__model_weights w;
    uint64_t n_params;                /* elements over all tensors of the file */
    struct vkllm__gguf_tensor *views; /* row views of the fused matrices the layers point into, or NULL */
    uint8_t *swa_layers;              /* hp.swa's storage, or NULL */
};

/* Read the hyper-parameters of g and find and check every tensor: presence, shape, type.
 * Errors: VKLLM_STATUS_BAD_FORMAT naming the key or tensor that is missing or inconsistent,
 * VKLLM_STATUS_UNSUPPORTED for another architecture, a tensor type vkllm does not compute with
 * (naming tensor and type) or an unsupported RoPE scaling, VKLLM_STATUS_OOM. */
vkllm_status vkllm__model_desc_load(const struct vkllm__gguf *g, struct vkllm__model_desc **out);
void vkllm__model_desc_free(struct vkllm__model_desc *d);

/* The (n_rot/2,) inverse frequencies of hp->rope for a context of n_ctx positions, scaling and
 * freq factors applied (see struct vkllm__rope: the long factors where n_ctx > orig_ctx). The same
 * table serves the reference and the GPU. */
void vkllm__rope_freqs(const struct vkllm__hparams *hp, uint32_t n_ctx, float *out_inv_freq);
/* Those of the sliding-window layers (gemma): base theta_swa, scale freq_scale_swa, no factors. */
void vkllm__rope_freqs_swa(const struct vkllm__hparams *hp, float *out_inv_freq);

#endif /* VKLLM_MODEL_H */
