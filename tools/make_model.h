/* make_model.h - random-weight Llama-family GGUF files for tests and benchmarks
 * (tools/make_model.c, behind `vkllm make-model`). */
#ifndef VKLLM_MAKE_MODEL_H
#define VKLLM_MAKE_MODEL_H

#include "model.h"

/* --- make-model ----------------------------------------------------------------------------- */

/* A random-weight model of any Llama shape. Same params -> identical file bytes. */
struct vkllm__make_model_params {
    enum vkllm__arch arch;
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv;
    uint32_t head_dim;                /* 0: n_embd / n_head */
    uint32_t n_vocab;                 /* >= 259 (<unk>, <s>, </s>, 256 byte tokens) */
    uint32_t n_ctx;                   /* written as <arch>.context_length */
    uint32_t type;                    /* enum vkllm__type of the matrices (norms and biases stay f32); with a mix,
                                         the mix's base type (q3_K, q4_K or q5_K) */
    uint32_t mix;                     /* 0: every matrix in type; else a llama.cpp k-quant mix, by its llama_ftype
                                         (11..17: Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M): each
                                         matrix gets the type llama.cpp's quantizer gives it (make_model.c) */
    int tied;                         /* 1: no output.weight */
    int optional_tensors;             /* 1: also the tensors the architecture may have (llama's biases) */
    uint32_t n_expert, n_expert_used; /* mixture of experts (llama, qwen3moe, gpt-oss): experts of n_ff; 0: dense */
    uint32_t n_rot;                   /* rope.dimension_count (0: the head dimension) */
    uint64_t seed;
    float rope_theta; /* rope.freq_base */
    float rms_eps;
    char name[64];              /* general.name; "" -> generated */
    const volatile int *cancel; /* non-NULL: *cancel != 0 stops the write (CANCELLED, no file left) */
};

/* Defaults: a tiny llama (2 layers, 64 embd, 4 heads, 2 kv heads, 512 vocab), f32, seed 1. */
void vkllm__make_model_params_default(struct vkllm__make_model_params *p);

/* Fill *p from a named preset (tinyllama-1.1b, stories-260k-shape, ...): arch, shape, tied,
 * rope theta, rms eps and context; type, seed and name keep their values.
 * VKLLM_STATUS_NOT_FOUND for an unknown name. */
vkllm_status vkllm__make_model_preset(const char *name, struct vkllm__make_model_params *p);

/* Preset i (NULL past the end) and its one-line description, for --help. */
const char *vkllm__make_model_preset_name(uint32_t i, const char **description);

/* Write the model to path, tensor by tensor (the whole model never sits in memory). Matrices
 * whose row length is not a multiple of the type's block fall back to a smaller block type
 * (q4_K -> q4_0 -> ... -> f16; in a mix, llama.cpp's fallbacks: q4_K -> q5_0, q5_K -> q5_1,
 * q6_K -> q8_0, q3_K -> q4_0), logged at WARN level. */
vkllm_status vkllm__make_model(const struct vkllm__make_model_params *p, const char *path);

/* The mix named s (case-insensitive: "q4_K_m", "Q4_K_M"): its llama_ftype and base type; 0 when s
 * names none. Mix i's name (NULL past the end), for listings. */
uint32_t vkllm__make_model_mix(const char *s, uint32_t *base_type);
const char *vkllm__make_model_mix_name(uint32_t i);

#endif /* VKLLM_MAKE_MODEL_H */
