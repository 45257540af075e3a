/* tensors.h - the one table of a transformer layer's tensors. Everything that walks a layer's
 * tensors is generated from it: the fields of the layer structs (the file's tensors in model.h,
 * the device's in forward.h, the reference's vectors), finding and checking them in a GGUF file
 * (model.c), uploading, counting and freeing them (forward/weights.c), the reference's copies
 * (ref/forward_ref.c), the random-model writer (tools/make_model.c) and `vkllm info`.
 *
 * Adding an architecture's tensor is one line here (plus the forward pass that uses it). A fused
 * matrix (phi3's attn_qkv, and its ffn_up holding gate over up) is a row of its own; model.c splits
 * it into row views of the separate ones, so that nothing after loading sees the difference.
 *
 * Columns of VKLLM__LAYER_TENSORS(X), one row per tensor, in the order make-model writes them:
 *   field     the struct field
 *   suffix    the GGUF name after "blk.N."
 *   kind      MAT: a matrix (rows, cols) in any type vkllm computes with, multiplied by the decode
 *             and prefill products; EXP: n_expert such matrices, (n_expert, rows, cols), of which
 *             each token multiplies the ones its router picks; VEC: f32 values added or multiplied
 *             as they are: a vector (cols,), or with rows one vector per row (gpt-oss's expert
 *             biases: (n_expert, cols))
 *   rows      a dimension (enum vkllm__dim without the prefix): NONE for a vector
 *   cols      a dimension: the row length
 *   init      how make-model fills it: NORM 1 +- 0.1, BIAS 0 +- 0.1, MAT N(0, 1/cols), SINK N(0, 1)
 *   required  the architectures whose files must have it: VKLLM__A(arch) | ..., or VKLLM__A_ALL
 *   optional  the architectures whose files may have it (0: none); elsewhere it is never read,
 *             even when present
 *   ffn       DENSE: only in files without experts; MOE: only in files with experts
 *             (<arch>.expert_count > 0: Mixtral as llama, qwen3moe); ANY: either
 * Shapes are (rows, cols) with cols contiguous: ggml's ne reversed.
 *
 * gpt-oss names its FFN's input norm post_attention_norm (gemma's name for a norm of the attention
 * output): its files have the attn_post_norm row, which model.c moves into ffn_norm at load. */
#ifndef VKLLM_TENSORS_H
#define VKLLM_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#define VKLLM__LAYER_TENSORS(X)                                                                    \
    X(attn_norm, "attn_norm.weight", VEC, NONE, EMBD, NORM, VKLLM__A_ALL, 0, ANY)                  \
    X(wqkv, "attn_qkv.weight", MAT, EMBD_QKV, EMBD, MAT, VKLLM__A(PHI3), 0, ANY)                   \
    X(wq, "attn_q.weight", MAT, EMBD_Q, EMBD, MAT, VKLLM__A_SPLIT, 0, ANY)                         \
    X(wk, "attn_k.weight", MAT, EMBD_KV, EMBD, MAT, VKLLM__A_SPLIT, 0, ANY)                        \
    X(wv, "attn_v.weight", MAT, EMBD_KV, EMBD, MAT, VKLLM__A_SPLIT, 0, ANY)                        \
    X(bq, "attn_q.bias", VEC, NONE, EMBD_Q, BIAS, VKLLM__A_QKVB, VKLLM__A_LLAMAS, ANY)             \
    X(bk, "attn_k.bias", VEC, NONE, EMBD_KV, BIAS, VKLLM__A_QKVB, VKLLM__A_LLAMAS, ANY)            \
    X(bv, "attn_v.bias", VEC, NONE, EMBD_KV, BIAS, VKLLM__A_QKVB, VKLLM__A_LLAMAS, ANY)            \
    X(q_norm, "attn_q_norm.weight", VEC, NONE, HEAD_DIM, NORM, VKLLM__A_QKNORM, 0, ANY)            \
    X(k_norm, "attn_k_norm.weight", VEC, NONE, HEAD_DIM, NORM, VKLLM__A_QKNORM, 0, ANY)            \
    X(wo, "attn_output.weight", MAT, EMBD, EMBD_Q, MAT, VKLLM__A_ALL, 0, ANY)                      \
    X(bo, "attn_output.bias", VEC, NONE, EMBD, BIAS, VKLLM__A(GPTOSS), VKLLM__A_LLAMAS, ANY)       \
    X(attn_sinks, "attn_sinks.weight", VEC, NONE, N_HEAD, SINK, VKLLM__A(GPTOSS), 0, ANY)          \
    X(attn_post_norm, "post_attention_norm.weight", VEC, NONE, EMBD, NORM, VKLLM__A_POSTN, 0, ANY) \
    X(ffn_norm, "ffn_norm.weight", VEC, NONE, EMBD, NORM, VKLLM__A_FFNN, 0, ANY)                   \
    X(w_gate_up, "ffn_up.weight", MAT, FF2, EMBD, MAT, VKLLM__A(PHI3), 0, DENSE)                   \
    X(w_gate, "ffn_gate.weight", MAT, FF, EMBD, MAT, VKLLM__A_SPLIT, 0, DENSE)                     \
    X(w_up, "ffn_up.weight", MAT, FF, EMBD, MAT, VKLLM__A_SPLIT, 0, DENSE)                         \
    X(w_down, "ffn_down.weight", MAT, EMBD, FF, MAT, VKLLM__A_ALL, 0, DENSE)                       \
    X(w_router, "ffn_gate_inp.weight", MAT, N_EXPERT, EMBD, MAT, VKLLM__A_MOES, 0, MOE)            \
    X(b_router, "ffn_gate_inp.bias", VEC, NONE, N_EXPERT, BIAS, VKLLM__A(GPTOSS), 0, MOE)          \
    X(w_gate_exps, "ffn_gate_exps.weight", EXP, FF_EXP, EMBD, MAT, VKLLM__A_MOES, 0, MOE)          \
    X(b_gate_exps, "ffn_gate_exps.bias", VEC, N_EXPERT, FF_EXP, BIAS, VKLLM__A(GPTOSS), 0, MOE)    \
    X(w_up_exps, "ffn_up_exps.weight", EXP, FF_EXP, EMBD, MAT, VKLLM__A_MOES, 0, MOE)              \
    X(b_up_exps, "ffn_up_exps.bias", VEC, N_EXPERT, FF_EXP, BIAS, VKLLM__A(GPTOSS), 0, MOE)        \
    X(w_down_exps, "ffn_down_exps.weight", EXP, EMBD, FF_EXP, MAT, VKLLM__A_MOES, 0, MOE)          \
    X(b_down_exps, "ffn_down_exps.bias", VEC, N_EXPERT, EMBD, BIAS, VKLLM__A(GPTOSS), 0, MOE)      \
    X(ffn_post_norm, "post_ffw_norm.weight", VEC, NONE, EMBD, NORM, VKLLM__A_GEMMAS, 0, ANY)

/* The architectures vkllm runs: X(enum name, general.architecture string); one bit each in the
 * table's masks, in this order. */
#define VKLLM__ARCHS(X)                                                                                       \
    X(LLAMA, "llama")                                                                                         \
    X(QWEN2, "qwen2")                                                                                         \
    X(QWEN3, "qwen3")                                                                                         \
    X(GRANITE, "granite")   /* llama with embedding, attention, residual and logit multipliers */             \
    X(PHI3, "phi3")         /* Phi-3, Phi-4: fused q/k/v and gate/up matrices, NeoX RoPE, LongRoPE factors */ \
    X(GEMMA2, "gemma2")     /* post-norms, GELU FFN, scaled embeddings, sliding windows, soft-capping */      \
    X(GEMMA3, "gemma3")     /* gemma2's block with q/k norms, no soft-capping, local RoPE base */             \
    X(QWEN3MOE, "qwen3moe") /* qwen3's attention, a mixture-of-experts FFN in every layer */                  \
    X(GPTOSS, "gpt-oss")    /* biases everywhere, attention sinks, sliding windows on every other layer, YaRN, \
                               experts with biases and a clamped SwiGLU */
enum vkllm__arch {
#define VKLLM__ARCH_ENUM_(e, name) VKLLM__ARCH_##e,
    VKLLM__ARCHS(VKLLM__ARCH_ENUM_)
#undef VKLLM__ARCH_ENUM_
        VKLLM__ARCH_COUNT_
};

/* The dimensions of tensor shapes (fields of struct vkllm__hparams, model.h). */
enum vkllm__dim {
    VKLLM__DIM_NONE = 0,
    VKLLM__DIM_EMBD,     /* n_embd */
    VKLLM__DIM_EMBD_Q,   /* n_embd_q = n_head * head_dim */
    VKLLM__DIM_EMBD_KV,  /* n_embd_kv = n_head_kv * head_dim */
    VKLLM__DIM_FF,       /* n_ff */
    VKLLM__DIM_HEAD_DIM, /* head_dim */
    VKLLM__DIM_EMBD_QKV, /* n_embd_q + 2 n_embd_kv: q, k and v stacked (phi3's attn_qkv) */
    VKLLM__DIM_FF2,      /* 2 n_ff: gate and up stacked (phi3's ffn_up) */
    VKLLM__DIM_N_EXPERT, /* n_expert (the router's rows) */
    VKLLM__DIM_FF_EXP,   /* n_ff_exp: an expert's FFN width */
    VKLLM__DIM_N_HEAD,   /* n_head (gpt-oss's attention sinks: one per query head) */
};

enum vkllm__tensor_kind { VKLLM__TENSOR_VEC = 0, VKLLM__TENSOR_MAT = 1, VKLLM__TENSOR_EXP = 2 };
enum vkllm__tensor_ffn { VKLLM__FFN_ANY = 0, VKLLM__FFN_DENSE = 1, VKLLM__FFN_MOE = 2 };
enum vkllm__tensor_init { VKLLM__INIT_NORM = 0, VKLLM__INIT_BIAS = 1, VKLLM__INIT_MAT = 2, VKLLM__INIT_SINK = 3 };

/* Arch masks as the table writes them. */
#define VKLLM__A(a) (1u << VKLLM__ARCH_##a)
#define VKLLM__A_ALL ((1u << VKLLM__ARCH_COUNT_) - 1u)
#define VKLLM__A_LLAMAS (VKLLM__A(LLAMA) | VKLLM__A(GRANITE)) /* llama.cpp loads them alike */
#define VKLLM__A_SPLIT (VKLLM__A_ALL & ~VKLLM__A(PHI3))       /* q/k/v and gate/up as separate matrices */
#define VKLLM__A_GEMMAS (VKLLM__A(GEMMA2) | VKLLM__A(GEMMA3))
#define VKLLM__A_QKNORM (VKLLM__A(QWEN3) | VKLLM__A(GEMMA3) | VKLLM__A(QWEN3MOE))
#define VKLLM__A_MOES (VKLLM__A(LLAMA) | VKLLM__A(QWEN3MOE) | VKLLM__A(GPTOSS)) /* may have experts (llama: Mixtral) */
#define VKLLM__A_QKVB (VKLLM__A(QWEN2) | VKLLM__A(GPTOSS))                      /* q/k/v biases */
#define VKLLM__A_POSTN (VKLLM__A_GEMMAS | VKLLM__A(GPTOSS)) /* post_attention_norm (gpt-oss: the FFN's norm) */
#define VKLLM__A_FFNN (VKLLM__A_ALL & ~VKLLM__A(GPTOSS))    /* ffn_norm */

/* One row of the table as data (vkllm__layer_tensors[i]). */
struct vkllm__tensor_spec {
    const char *field;  /* "wq" */
    const char *suffix; /* "attn_q.weight" */
    enum vkllm__tensor_kind kind;
    enum vkllm__dim rows, cols; /* rows VKLLM__DIM_NONE for a vector */
    enum vkllm__tensor_init init;
    uint32_t required, optional; /* masks of 1u << enum vkllm__arch */
    enum vkllm__tensor_ffn ffn;
    size_t offset; /* of the field in struct vkllm__layer_weights */
};

/* Every layer tensor: the field names as an enum (VKLLM__LT_WQ ...) ... */
enum vkllm__layer_tensor {
#define VKLLM__LT_ENUM_(field, ...) VKLLM__LT_##field,
    VKLLM__LAYER_TENSORS(VKLLM__LT_ENUM_)
#undef VKLLM__LT_ENUM_
        VKLLM__LT_COUNT_
};

/* ... and as rows (model.c). */
extern const struct vkllm__tensor_spec vkllm__layer_tensors[VKLLM__LT_COUNT_];

/* 1 if a file of architecture a (with experts: moe) must have tensor t, 0 if it may lack it (then
 * it is only read where the architecture allows it), -1 if such a file never reads it. */
static inline int vkllm__tensor_wanted(const struct vkllm__tensor_spec *t, unsigned a, int moe) {
    if (t->ffn == (moe ? VKLLM__FFN_DENSE : VKLLM__FFN_MOE)) return -1;
    return (t->required >> a) & 1u ? 1 : (t->optional >> a) & 1u ? 0 : -1;
}

#endif /* VKLLM_TENSORS_H */
