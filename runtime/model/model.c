/* model.c - Llama-family hyper-parameters and weight tensors from a GGUF file (see model.h).
 * Key names and defaults follow llama.cpp (llama-arch.cpp, llama-model.cpp load_hparams). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "types.h"

// --- architectures --------------------------------------------------------------------------

static const char *const arch_names[VKLLM__ARCH_COUNT_] = {
#define VKLLM__ARCH_NAME_(e, name) name,
    VKLLM__ARCHS(VKLLM__ARCH_NAME_)
#undef VKLLM__ARCH_NAME_
};

const char *vkllm__arch_name(enum vkllm__arch a) { return (unsigned)a < VKLLM__ARCH_COUNT_ ? arch_names[a] : "?"; }

vkllm_status vkllm__arch_from_name(const char *name, enum vkllm__arch *out) {
    for (unsigned i = 0; i < VKLLM__ARCH_COUNT_; i++) {
        if (strcmp(name, arch_names[i]) == 0) {
            *out = (enum vkllm__arch)i;
            return VKLLM_STATUS_OK;
        }
    }
    return VKLLM_STATUS_UNSUPPORTED;
}

// --- the layer table ------------------------------------------------------------------------

const struct vkllm__tensor_spec vkllm__layer_tensors[VKLLM__LT_COUNT_] = {
#define VKLLM__SPEC_(field, suffix, kind, rows, cols, init, required, optional, ffn) \
    {#field,                                                                         \
     suffix,                                                                         \
     VKLLM__TENSOR_##kind,                                                           \
     VKLLM__DIM_##rows,                                                              \
     VKLLM__DIM_##cols,                                                              \
     VKLLM__INIT_##init,                                                             \
     required,                                                                       \
     optional,                                                                       \
     VKLLM__FFN_##ffn,                                                               \
     offsetof(struct vkllm__layer_weights, field)},
    VKLLM__LAYER_TENSORS(VKLLM__SPEC_)
#undef VKLLM__SPEC_
};

uint64_t vkllm__dim_size(const struct vkllm__hparams *hp, enum vkllm__dim d) {
    switch (d) {
    case VKLLM__DIM_EMBD: return hp->n_embd;
    case VKLLM__DIM_EMBD_Q: return hp->n_embd_q;
    case VKLLM__DIM_EMBD_KV: return hp->n_embd_kv;
    case VKLLM__DIM_FF: return hp->n_ff;
    case VKLLM__DIM_HEAD_DIM: return hp->head_dim;
    case VKLLM__DIM_EMBD_QKV: return (uint64_t)hp->n_embd_q + 2 * (uint64_t)hp->n_embd_kv;
    case VKLLM__DIM_FF2: return 2 * (uint64_t)hp->n_ff;
    case VKLLM__DIM_N_EXPERT: return hp->n_expert;
    case VKLLM__DIM_FF_EXP: return hp->n_ff_exp;
    case VKLLM__DIM_N_HEAD: return hp->n_head;
    default: return 0;
    }
}

// --- metadata helpers -----------------------------------------------------------------------

/* "<arch>.<suffix>" into buf. */
static const char *arch_key(char *buf, size_t n, enum vkllm__arch a, const char *suffix) {
    snprintf(buf, n, "%s.%s", vkllm__arch_name(a), suffix);
    return buf;
}

/* A required (def == NULL) or optional u32 key of the architecture; 0 is rejected when
 * nonzero is set. */
static vkllm_status get_u32(const struct vkllm__gguf *g, enum vkllm__arch a, const char *suffix, const uint32_t *def,
                            int nonzero, uint32_t *out) {
    char key[128];
    uint64_t v;
    arch_key(key, sizeof key, a, suffix);
    vkllm_status st = vkllm__gguf_get_u64(g, key, &v);
    if (st == VKLLM_STATUS_NOT_FOUND) {
        if (!def) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: missing metadata key %s", g->path, key);
        *out = *def;
        return VKLLM_STATUS_OK;
    }
    if (st != VKLLM_STATUS_OK) return st;
    if (v > UINT32_MAX || (nonzero && v == 0))
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: metadata key %s has invalid value %llu", g->path, key,
                          (unsigned long long)v);
    *out = (uint32_t)v;
    return VKLLM_STATUS_OK;
}

/* An optional float key (def when absent); must be finite and positive unless allow_zero. */
static vkllm_status get_f32(const struct vkllm__gguf *g, enum vkllm__arch a, const char *suffix, const float *def,
                            float *out) {
    char key[128];
    double v;
    arch_key(key, sizeof key, a, suffix);
    vkllm_status st = vkllm__gguf_get_f64(g, key, &v);
    if (st == VKLLM_STATUS_NOT_FOUND) {
        if (!def) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: missing metadata key %s", g->path, key);
        *out = *def;
        return VKLLM_STATUS_OK;
    }
    if (st != VKLLM_STATUS_OK) return st;
    if (!isfinite(v) || v < 0 || v > 3.0e38)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: metadata key %s has invalid value %g", g->path, key, v);
    *out = (float)v;
    return VKLLM_STATUS_OK;
}

static vkllm_status read_arch(const struct vkllm__gguf *g, enum vkllm__arch *out) {
    struct vkllm__str s;
    vkllm_status st = vkllm__gguf_get_str(g, "general.architecture", &s);
    if (st == VKLLM_STATUS_NOT_FOUND)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: missing metadata key general.architecture", g->path);
    if (st != VKLLM_STATUS_OK) return st;
    char name[64];
    size_t n = s.len < sizeof name - 1 ? (size_t)s.len : sizeof name - 1;
    memcpy(name, s.ptr, n);
    name[n] = 0;
    if (s.len >= sizeof name || vkllm__arch_from_name(name, out) != VKLLM_STATUS_OK) {
        char known[256] = "";
        for (unsigned i = 0, o = 0; i < VKLLM__ARCH_COUNT_ && o < sizeof known; i++)
            o += (unsigned)snprintf(known + o, sizeof known - o, "%s%s", i ? ", " : "", arch_names[i]);
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: architecture '%s' is not supported (%s are)", g->path, name,
                          known);
    }
    return VKLLM_STATUS_OK;
}

// --- hyper-parameters -----------------------------------------------------------------------

static vkllm_status read_shape(const struct vkllm__gguf *g, struct vkllm__hparams *hp) {
    enum vkllm__arch a = hp->arch;
    vkllm_status st;
    if ((st = get_u32(g, a, "block_count", NULL, 1, &hp->n_layer))) return st;
    if ((st = get_u32(g, a, "embedding_length", NULL, 1, &hp->n_embd))) return st;
    const uint32_t zero_ff = 0; /* gpt-oss: only the experts' width (n_ff takes it below) */
    if ((st = get_u32(g, a, "feed_forward_length", a == VKLLM__ARCH_GPTOSS ? &zero_ff : NULL, 0, &hp->n_ff))) return st;
    if (!hp->n_ff && a != VKLLM__ARCH_GPTOSS)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: metadata key %s.feed_forward_length is 0", g->path,
                          vkllm__arch_name(a));
    if ((st = get_u32(g, a, "context_length", NULL, 1, &hp->n_ctx_train))) return st;
    const uint32_t no_pooling = 0;
    if ((st = get_u32(g, a, "pooling_type", &no_pooling, 0, &hp->pooling))) return st;
    if ((st = get_u32(g, a, "attention.head_count", NULL, 1, &hp->n_head))) return st;
    if ((st = get_u32(g, a, "attention.head_count_kv", &hp->n_head, 1, &hp->n_head_kv))) return st;
    if ((st = get_f32(g, a, "attention.layer_norm_rms_epsilon", NULL, &hp->rms_eps))) return st;

    char key[128];
    if (hp->n_layer > 4096 || hp->n_head > 4096)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: implausible block_count %u / head_count %u", g->path,
                          hp->n_layer, hp->n_head);
    if (hp->n_head % hp->n_head_kv != 0)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: %s (%u) is not a multiple of attention.head_count_kv (%u)",
                          g->path, arch_key(key, sizeof key, a, "attention.head_count"), hp->n_head, hp->n_head_kv);
    uint32_t def_hd = hp->n_embd / hp->n_head, vlen;
    if (hp->n_embd % hp->n_head != 0 && !vkllm__gguf_find(g, arch_key(key, sizeof key, a, "attention.key_length")))
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT,
                          "%s: embedding_length %u is not a multiple of head_count %u (and no key_length)", g->path,
                          hp->n_embd, hp->n_head);
    if ((st = get_u32(g, a, "attention.key_length", &def_hd, 1, &hp->head_dim))) return st;
    if ((st = get_u32(g, a, "attention.value_length", &hp->head_dim, 1, &vlen))) return st;
    if (vlen != hp->head_dim)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: key_length %u != value_length %u", g->path, hp->head_dim,
                          vlen);
    if (hp->head_dim > 1024)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: implausible head dimension %u", g->path, hp->head_dim);
    hp->n_embd_q = hp->n_head * hp->head_dim;
    hp->n_embd_kv = hp->n_head_kv * hp->head_dim;
    /* mixture of experts (llama: Mixtral; qwen3moe): n_expert_used of n_expert FFNs of n_ff_exp per
     * token (llama.cpp's default width: llama n_ff, qwen3moe n_ff / n_expert_used) */
    const uint32_t zero_u = 0;
    if ((st = get_u32(g, a, "expert_count", &zero_u, 0, &hp->n_expert))) return st;
    if ((st = get_u32(g, a, "expert_used_count", &zero_u, 0, &hp->n_expert_used))) return st;
    int moe_arch = a == VKLLM__ARCH_QWEN3MOE || a == VKLLM__ARCH_GPTOSS; /* experts in every file */
    if (hp->n_expert && (a == VKLLM__ARCH_LLAMA || moe_arch)) {
        uint32_t def_ff = a == VKLLM__ARCH_QWEN3MOE && hp->n_expert_used ? hp->n_ff / hp->n_expert_used : hp->n_ff;
        if ((st = get_u32(g, a, "expert_feed_forward_length", a == VKLLM__ARCH_GPTOSS ? NULL : &def_ff, 1,
                          &hp->n_ff_exp)))
            return st;
        if (!hp->n_ff) hp->n_ff = hp->n_ff_exp;
        if (hp->n_expert > 1024 || !hp->n_expert_used || hp->n_expert_used > hp->n_expert || hp->n_expert_used > 64 ||
            !hp->n_ff_exp)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT,
                              "%s: %u of %u experts per token is not supported (1..64 of at "
                              "most 1024)",
                              g->path, hp->n_expert_used, hp->n_expert);
    } else if (hp->n_expert) {
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "%s: experts in a %s file are not supported (llama, qwen3moe "
                          "and gpt-oss)",
                          g->path, vkllm__arch_name(a));
    } else if (moe_arch) {
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: %s needs %s.expert_count", g->path, vkllm__arch_name(a),
                          vkllm__arch_name(a));
    }
    hp->swiglu_oai = a == VKLLM__ARCH_GPTOSS;
    /* granite's multipliers; the other architectures have none (1, and 0: 1/sqrt(head_dim)) */
    const float one = 1.0f, zero = 0.0f;
    int gr = a == VKLLM__ARCH_GRANITE;
    hp->embd_scale = hp->resid_scale = hp->logit_scale = 1.0f, hp->attn_scale = 0.0f;
    if (gr && ((st = get_f32(g, a, "embedding_scale", &one, &hp->embd_scale)) ||
               (st = get_f32(g, a, "residual_scale", &one, &hp->resid_scale)) ||
               (st = get_f32(g, a, "attention.scale", &zero, &hp->attn_scale)) ||
               (st = get_f32(g, a, "logit_scale", &one, &hp->logit_scale))))
        return st;
    if (hp->embd_scale == 0.0f) hp->embd_scale = 1.0f; /* as llama.cpp: 0 means none */
    if (hp->resid_scale == 0.0f) hp->resid_scale = 1.0f;
    if (!(hp->logit_scale != 0.0f) || !isfinite(hp->embd_scale * hp->resid_scale * hp->attn_scale * hp->logit_scale))
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: granite multipliers must be finite, logit_scale not 0",
                          g->path);
    if (a == VKLLM__ARCH_GEMMA2 || a == VKLLM__ARCH_GEMMA3) {
        /* As llama.cpp (after gemma_pytorch's config): embeddings times sqrt(n_embd); q scaled by
         * 1/sqrt(head_dim), except the 27B models (46 gemma2 / 62 gemma3 layers): 1/sqrt(n_embd/n_head) */
        hp->embd_scale = sqrtf((float)hp->n_embd);
        int big = hp->n_layer == (a == VKLLM__ARCH_GEMMA2 ? 46u : 62u);
        hp->attn_scale = 1.0f / sqrtf((float)(big ? hp->n_embd / hp->n_head : hp->head_dim));
        hp->gelu = 1;
    }
    return VKLLM_STATUS_OK;
}

/* Scaling keys: rope.scaling.type (none, linear, llama3, yarn; longrope & co. are refused),
 * rope.scaling.factor or the older rope.scale_linear, rope.scaling.original_context_length. */
static vkllm_status read_rope_scaling(const struct vkllm__gguf *g, struct vkllm__hparams *hp) {
    struct vkllm__rope *r = &hp->rope;
    char key[128];
    const float one = 1.0f, zero = 0.0f, four = 4.0f;
    float factor, linear;
    vkllm_status st;
    struct vkllm__str type = {"", 0};
    st = vkllm__gguf_get_str(g, arch_key(key, sizeof key, hp->arch, "rope.scaling.type"), &type);
    if (st != VKLLM_STATUS_OK && st != VKLLM_STATUS_NOT_FOUND) return st;
    int has_type = st == VKLLM_STATUS_OK;
    if ((st = get_f32(g, hp->arch, "rope.scaling.factor", &zero, &factor))) return st;
    if ((st = get_f32(g, hp->arch, "rope.scale_linear", &one, &linear))) return st;
    if ((st = get_u32(g, hp->arch, "rope.scaling.original_context_length", &hp->n_ctx_train, 0, &r->orig_ctx)))
        return st;
    if ((st = get_f32(g, hp->arch, "rope.scaling.low_freq_factor", &one, &r->low_freq_factor))) return st;
    if ((st = get_f32(g, hp->arch, "rope.scaling.high_freq_factor", &four, &r->high_freq_factor))) return st;
    r->factor = factor != 0.0f ? factor : linear;
    if (r->factor == 0.0f) r->factor = 1.0f;
    r->freq_scale = 1.0f;
    r->scaling = VKLLM__ROPE_SCALING_NONE;
    if (!has_type) {
        /* No type: as llama.cpp, a factor other than 1 still means linear scaling. */
        if (r->factor != 1.0f) {
            r->scaling = VKLLM__ROPE_SCALING_LINEAR;
            r->freq_scale = 1.0f / r->factor;
        }
    } else if (vkllm__str_eq(type, "none")) {
        r->factor = 1.0f;
    } else if (vkllm__str_eq(type, "linear")) {
        r->scaling = VKLLM__ROPE_SCALING_LINEAR;
        r->freq_scale = 1.0f / r->factor;
    } else if (vkllm__str_eq(type, "llama3")) {
        r->scaling = VKLLM__ROPE_SCALING_LLAMA3;
    } else if (vkllm__str_eq(type, "yarn")) {
        /* As llama.cpp: beta_fast 32 and beta_slow 1 (it reads no key for them), ext_factor 1; a
         * yarn_log_multiplier (DeepSeek's mscale_all_dim) is refused */
        float log_mul;
        if ((st = get_f32(g, hp->arch, "rope.scaling.yarn_log_multiplier", &zero, &log_mul))) return st;
        if (log_mul != 0.0f)
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: rope.scaling.yarn_log_multiplier is not supported",
                              g->path);
        r->scaling = VKLLM__ROPE_SCALING_YARN;
        r->freq_scale = 1.0f / r->factor;
        if (!r->orig_ctx)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: yarn rope scaling needs an original context length",
                              g->path);
    } else {
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: rope scaling type '%.*s' is not supported", g->path,
                          (int)VKLLM_MIN(type.len, 32), type.ptr);
    }
    return VKLLM_STATUS_OK;
}

/* gemma2 / gemma3 / gpt-oss: sliding windows, their layers and RoPE, soft-capping (llama.cpp's
 * defaults: gemma2 windows of 4096 on every other layer, caps 50 and 30; gemma3 windows on 5 of
 * every 6 layers where the file gives a window, their RoPE base 10000 unscaled, no caps unless
 * given; gpt-oss a window the file must give on every other layer, the global RoPE, no caps). The
 * per-layer flags go to *swa_out (owned by the caller). */
static vkllm_status read_swa(const struct vkllm__gguf *g, struct vkllm__hparams *hp, uint8_t **swa_out) {
    enum vkllm__arch a = hp->arch;
    int g2 = a == VKLLM__ARCH_GEMMA2, oss = a == VKLLM__ARCH_GPTOSS;
    const uint32_t def_swa = g2 ? 4096 : 0, def_pattern = g2 || oss ? 2 : 6;
    const float zero = 0.0f, cap_attn = g2 ? 50.0f : 0.0f, cap_final = g2 ? 30.0f : 0.0f;
    const float theta_swa = g2 || oss ? hp->rope.theta : 10000.0f;
    vkllm_status st;
    if ((st = get_u32(g, a, "attention.sliding_window", oss ? NULL : &def_swa, 0, &hp->n_swa))) return st;
    if ((st = get_f32(g, a, "rope.freq_base_swa", &theta_swa, &hp->theta_swa))) return st;
    if ((st = get_f32(g, a, "attn_logit_softcapping", g2 ? &cap_attn : &zero, &hp->attn_softcap))) return st;
    if ((st = get_f32(g, a, "final_logit_softcapping", &cap_final, &hp->final_softcap))) return st;
    if (!g2) hp->attn_softcap = 0.0f; /* gemma3 has none (llama.cpp reads it for gemma2 only) */
    if (oss) hp->final_softcap = 0.0f;
    hp->freq_scale_swa = g2 || oss ? hp->rope.freq_scale : 1.0f;
    if (!(hp->theta_swa > 0.0f))
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: rope.freq_base_swa must be positive", g->path);
    if (!hp->n_swa) return VKLLM_STATUS_OK;
    uint8_t *swa = vkllm__calloc(hp->n_layer, 1);
    if (!swa) return vkllm__err(VKLLM_STATUS_OOM, "sliding-window layers");
    *swa_out = swa;
    char key[128];
    arch_key(key, sizeof key, a, "attention.sliding_window_pattern");
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, key);
    if (kv && kv->type == VKLLM__GGUF_ARRAY) { /* one flag per layer */
        if (kv->arr_n != hp->n_layer || kv->arr_type == VKLLM__GGUF_STRING || kv->arr_type == VKLLM__GGUF_ARRAY)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: %s must be %u flags", g->path, key, hp->n_layer);
        for (uint32_t l = 0; l < hp->n_layer; l++) swa[l] = vkllm__gguf_arr_i64(kv, l) != 0;
    } else { /* every layer but the last of each n_pattern (0: all) */
        uint32_t n_pattern;
        if ((st = get_u32(g, a, "attention.sliding_window_pattern", &def_pattern, 0, &n_pattern))) return st;
        for (uint32_t l = 0; l < hp->n_layer; l++) swa[l] = n_pattern == 0 || l % n_pattern < n_pattern - 1;
    }
    hp->swa = swa;
    return VKLLM_STATUS_OK;
}

static vkllm_status read_rope(const struct vkllm__gguf *g, struct vkllm__hparams *hp) {
    struct vkllm__rope *r = &hp->rope;
    const float def_theta = 10000.0f;
    vkllm_status st;
    if ((st = get_f32(g, hp->arch, "rope.freq_base", &def_theta, &r->theta))) return st;
    if ((st = get_u32(g, hp->arch, "rope.dimension_count", &hp->head_dim, 1, &r->n_rot))) return st;
    if (r->theta <= 0.0f) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: rope.freq_base must be positive", g->path);
    if (r->n_rot > hp->head_dim || r->n_rot % 2 != 0)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT,
                          "%s: rope.dimension_count %u must be even and at most the head dimension %u", g->path,
                          r->n_rot, hp->head_dim);
    /* As llama.cpp: llama rotates adjacent pairs, the Qwen, Phi and Gemma models the two halves of each head. */
    r->neox = hp->arch == VKLLM__ARCH_QWEN2 || hp->arch == VKLLM__ARCH_QWEN3 || hp->arch == VKLLM__ARCH_PHI3 ||
              hp->arch == VKLLM__ARCH_QWEN3MOE || hp->arch == VKLLM__ARCH_GPTOSS || hp->arch == VKLLM__ARCH_GEMMA2 ||
              hp->arch == VKLLM__ARCH_GEMMA3;
    const float one = 1.0f;
    if ((st = get_f32(g, hp->arch, "rope.scaling.attn_factor", &one, &r->attn_factor))) return st;
    if ((st = read_rope_scaling(g, hp))) return st;
    /* The magnitude ggml's rope gives cos and sin: attn_factor, times YaRN's 1 + 0.1 ln(factor)
     * (llama.cpp's yarn_attn_factor cancels its own get_mscale, so this is what remains) */
    r->mscale = r->attn_factor;
    if (r->scaling == VKLLM__ROPE_SCALING_YARN && r->factor > 1.0f) r->mscale *= 1.0f + 0.1f * logf(r->factor);
    if (!(r->mscale > 0.0f) || !isfinite(r->mscale))
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: rope.scaling.attn_factor %g gives a RoPE magnitude of %g",
                          g->path, (double)r->attn_factor, (double)r->mscale);
    return VKLLM_STATUS_OK;
}

/* Llama 3.1's per-frequency factors (the formula of Meta's reference and llama.cpp's converter):
 * long wavelengths are slowed by `factor`, short ones kept, a smooth blend in between. */
static void llama3_factors(const struct vkllm__rope *r, float *out) {
    double lo_wl = (double)r->orig_ctx / r->low_freq_factor;
    double hi_wl = (double)r->orig_ctx / r->high_freq_factor;
    for (uint32_t i = 0; i < r->n_rot / 2; i++) {
        double freq = pow((double)r->theta, -2.0 * i / r->n_rot);
        double wavelen = 2.0 * 3.14159265358979323846 / freq;
        double f;
        if (wavelen < hi_wl) f = 1.0;
        else if (wavelen > lo_wl) f = r->factor;
        else {
            double smooth =
                ((double)r->orig_ctx / wavelen - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
            f = 1.0 / ((1.0 - smooth) / r->factor + smooth);
        }
        out[i] = (float)f;
    }
}

/* YaRN (ggml's rope_yarn with ext_factor 1): pair i turns at base_i (freq_scale (1 - mix) + mix),
 * mix ramping from 1 (extrapolated, below the dims that turn beta_fast = 32 times over the
 * original context) to 0 (interpolated, past those that turn beta_slow = 1 time); the corrections
 * in float as ggml_rope_yarn_corr_dims computes them. */
static float yarn_mix(const struct vkllm__rope *r, float theta, uint32_t i) {
    const float pi = 3.14159265358979323846f, n = (float)r->n_rot, ctx = (float)r->orig_ctx;
    float lo = floorf(n * logf(ctx / (32.0f * 2.0f * pi)) / (2.0f * logf(theta)));
    float hi = ceilf(n * logf(ctx / (1.0f * 2.0f * pi)) / (2.0f * logf(theta)));
    lo = VKLLM_MAX(0.0f, lo), hi = VKLLM_MIN(n - 1.0f, hi);
    float y = ((float)i - lo) / VKLLM_MAX(0.001f, hi - lo);
    return 1.0f - VKLLM_MIN(1.0f, VKLLM_MAX(0.0f, y));
}

/* The table of a RoPE with base theta, scale freq_scale and divisors ff (NULL: none). */
static void rope_table(const struct vkllm__rope *r, float theta, float freq_scale, const float *ff, float *out) {
    for (uint32_t i = 0; i < r->n_rot / 2; i++) {
        double f = pow((double)theta, -2.0 * i / r->n_rot);
        if (r->scaling == VKLLM__ROPE_SCALING_YARN) {
            double mix = yarn_mix(r, theta, i);
            f *= freq_scale * (1.0 - mix) + mix;
        } else {
            f *= freq_scale;
        }
        if (ff) f /= ff[i];
        out[i] = (float)f;
    }
}

void vkllm__rope_freqs_swa(const struct vkllm__hparams *hp, float *out_inv_freq) {
    rope_table(&hp->rope, hp->theta_swa, hp->freq_scale_swa, NULL, out_inv_freq);
}

void vkllm__rope_freqs(const struct vkllm__hparams *hp, uint32_t n_ctx, float *out_inv_freq) {
    const struct vkllm__rope *r = &hp->rope;
    const float *ff = r->freq_factors_long && n_ctx > r->orig_ctx ? r->freq_factors_long : r->freq_factors;
    rope_table(r, r->theta, r->freq_scale, ff, out_inv_freq);
}

// --- tensors --------------------------------------------------------------------------------

/* Find a tensor and check it is (rows, cols) [or (cols,) when rows == 0]; matrices must be of a
 * type vkllm computes with and whose block divides cols, vectors (vec: a vector or rows of them)
 * F32. NULL *out when optional and absent. */
static vkllm_status find_tensor3(const struct vkllm__gguf *g, const char *name, uint64_t cols, uint64_t rows,
                                 uint64_t experts, int optional, int vec, const struct vkllm__gguf_tensor **out) {
    const struct vkllm__gguf_tensor *t = vkllm__gguf_find_tensor(g, name);
    *out = t;
    if (!t) {
        if (optional) return VKLLM_STATUS_OK;
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: missing tensor %s", g->path, name);
    }
    uint64_t want[4] = {cols, rows ? rows : 1, experts ? experts : 1, 1};
    if (t->ne[0] != want[0] || t->ne[1] != want[1] || t->ne[2] != want[2] || t->ne[3] != 1) {
        char shape[80]; /* the expected shape with as many dimensions as it has */
        int dims = experts ? 3 : rows ? 2 : 1, o = 0;
        for (int d = 0; d < dims; d++)
            o += snprintf(shape + o, sizeof shape - (size_t)o, "%s%llu", d ? ", " : "", (unsigned long long)want[d]);
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: tensor %s has shape [%llu, %llu, %llu, %llu], expected [%s]",
                          g->path, name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                          (unsigned long long)t->ne[2], (unsigned long long)t->ne[3], shape);
    }
    if (vec) {
        if (t->type != VKLLM__TYPE_F32)
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: tensor %s: type %s is not supported for a vector (f32 is)",
                              g->path, name, vkllm__type_name(t->type));
        return VKLLM_STATUS_OK;
    }
    vkllm_status st = vkllm__type_check(t->type, name);
    if (st != VKLLM_STATUS_OK) {
        vkllm__err_prefix("%s: ", g->path);
        return st;
    }
    uint64_t row_bytes;
    if (vkllm__row_size(t->type, cols, &row_bytes) != VKLLM_STATUS_OK)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: tensor %s: rows of %llu are not a multiple of %s's block",
                          g->path, name, (unsigned long long)cols, vkllm__type_name(t->type));
    return VKLLM_STATUS_OK;
}

static vkllm_status find_tensor(const struct vkllm__gguf *g, const char *name, uint64_t cols, uint64_t rows,
                                int optional, const struct vkllm__gguf_tensor **out) {
    return find_tensor3(g, name, cols, rows, 0, optional, !rows, out);
}

/* Every tensor of the layer table that architecture hp->arch reads: required ones must be there,
 * optional ones may be; the others stay NULL even when the file has them. */
static vkllm_status find_layer(const struct vkllm__gguf *g, const struct vkllm__hparams *hp, uint32_t l,
                               struct vkllm__layer_weights *lw) {
    for (size_t i = 0; i < VKLLM__LT_COUNT_; i++) {
        const struct vkllm__tensor_spec *t = &vkllm__layer_tensors[i];
        const struct vkllm__gguf_tensor **slot = (const struct vkllm__gguf_tensor **)((char *)lw + t->offset);
        int wanted = vkllm__tensor_wanted(t, hp->arch, hp->n_expert > 0);
        *slot = NULL;
        if (wanted < 0) continue;
        char name[96];
        snprintf(name, sizeof name, "blk.%u.%s", l, t->suffix);
        uint64_t rows = vkllm__dim_size(hp, t->rows);
        vkllm_status st =
            find_tensor3(g, name, vkllm__dim_size(hp, t->cols), rows, t->kind == VKLLM__TENSOR_EXP ? hp->n_expert : 0,
                         !wanted, t->kind == VKLLM__TENSOR_VEC, slot);
        if (st != VKLLM_STATUS_OK) return st;
    }
    return VKLLM_STATUS_OK;
}

/* token_embd fixes n_vocab; the tokenizer's token list, when present, must agree. */
static vkllm_status find_globals(const struct vkllm__gguf *g, struct vkllm__hparams *hp,
                                 struct vkllm__model_weights *w) {
    const struct vkllm__gguf_tensor *te = vkllm__gguf_find_tensor(g, "token_embd.weight");
    if (!te) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: missing tensor token_embd.weight", g->path);
    if (te->ne[1] == 0 || te->ne[1] > INT32_MAX)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: tensor token_embd.weight has %llu rows", g->path,
                          (unsigned long long)te->ne[1]);
    hp->n_vocab = (uint32_t)te->ne[1];
    const struct vkllm__gguf_kv *toks = vkllm__gguf_find(g, "tokenizer.ggml.tokens");
    if (toks && toks->type == VKLLM__GGUF_ARRAY && toks->arr_n != hp->n_vocab)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT,
                          "%s: tokenizer.ggml.tokens has %llu tokens but token_embd.weight has %u rows", g->path,
                          (unsigned long long)toks->arr_n, hp->n_vocab);
    vkllm_status st;
    if ((st = find_tensor(g, "token_embd.weight", hp->n_embd, hp->n_vocab, 0, &w->token_embd))) return st;
    if ((st = find_tensor(g, "output_norm.weight", hp->n_embd, 0, 0, &w->output_norm))) return st;
    /* gemma2's logits always use the embedding (llama.cpp ignores an output.weight there) */
    w->output = NULL;
    if (hp->arch != VKLLM__ARCH_GEMMA2 &&
        (st = find_tensor(g, "output.weight", hp->n_embd, hp->n_vocab, 1, &w->output)))
        return st;
    hp->tied_embd = w->output == NULL;
    if (!w->output) w->output = w->token_embd;
    if (hp->arch == VKLLM__ARCH_PHI3) {
        if ((st = find_tensor(g, "rope_factors_short.weight", hp->rope.n_rot / 2, 0, 1, &w->rope_short))) return st;
        if ((st = find_tensor(g, "rope_factors_long.weight", hp->rope.n_rot / 2, 0, 1, &w->rope_long))) return st;
    }
    return find_tensor(g, "rope_freqs.weight", hp->rope.n_rot / 2, 0, 1, &w->rope_freqs);
}

/* A copy of an f32 factor vector of n, each finite and positive. */
static vkllm_status copy_factors(const struct vkllm__gguf *g, const struct vkllm__gguf_tensor *t, uint32_t n,
                                 float **out) {
    *out = vkllm__calloc(n ? n : 1, sizeof(float));
    if (!*out) return vkllm__err(VKLLM_STATUS_OOM, "rope frequency factors");
    memcpy(*out, t->data, (size_t)n * sizeof(float));
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite((*out)[i]) || (*out)[i] <= 0.0f)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: %.*s: factor %u is %g", g->path, (int)t->name.len,
                              t->name.ptr, i, (double)(*out)[i]);
    return VKLLM_STATUS_OK;
}

/* Per-frequency factors: from rope_freqs.weight when the file has it, else computed for a
 * llama3 scaling type. Factors must be finite and positive. */
static vkllm_status load_freq_factors(const struct vkllm__gguf *g, struct vkllm__model_desc *d) {
    struct vkllm__rope *r = &d->hp.rope;
    uint32_t n = r->n_rot / 2;
    if (!d->w.rope_freqs && (d->w.rope_short || d->w.rope_long)) { /* phi3's LongRoPE */
        if (!d->w.rope_short || !d->w.rope_long)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT,
                              "%s: rope_factors_short.weight and rope_factors_long.weight "
                              "come together",
                              g->path);
        vkllm_status st = copy_factors(g, d->w.rope_short, n, &r->freq_factors);
        return st ? st : copy_factors(g, d->w.rope_long, n, &r->freq_factors_long);
    }
    if (!d->w.rope_freqs && r->scaling != VKLLM__ROPE_SCALING_LLAMA3) return VKLLM_STATUS_OK;
    r->freq_factors = vkllm__calloc(n ? n : 1, sizeof(float));
    if (!r->freq_factors) return vkllm__err(VKLLM_STATUS_OOM, "rope frequency factors");
    if (d->w.rope_freqs) {
        memcpy(r->freq_factors, d->w.rope_freqs->data, (size_t)n * sizeof(float));
        r->scaling = VKLLM__ROPE_SCALING_LLAMA3;
    } else {
        if (r->high_freq_factor <= r->low_freq_factor || r->orig_ctx == 0)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT,
                              "%s: llama3 rope scaling needs high_freq_factor > "
                              "low_freq_factor and an original context length",
                              g->path);
        llama3_factors(r, r->freq_factors);
    }
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(r->freq_factors[i]) || r->freq_factors[i] <= 0.0f)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: rope frequency factor %u is %g", g->path, i,
                              (double)r->freq_factors[i]);
    return VKLLM_STATUS_OK;
}

/* Rows [r0, r0 + rows) of matrix t as a tensor of its own (a view into the same data). */
static void row_view(const struct vkllm__gguf_tensor *t, uint64_t r0, uint64_t rows, struct vkllm__gguf_tensor *v) {
    uint64_t row_bytes = t->nbytes / t->ne[1];
    *v = *t;
    v->ne[1] = rows;
    v->offset = t->offset + r0 * row_bytes;
    v->nbytes = rows * row_bytes;
    v->data = (const uint8_t *)t->data + r0 * row_bytes;
}

/* The fused matrices (phi3: attn_qkv = q over k over v, ffn_up = gate over up, as llama.cpp splits
 * them) become row views in the separate fields, and the fused fields NULL: the device upload, the
 * stacking of q/k/v and gate/up, the reference and the counts see the same tensors as for llama. */
static vkllm_status split_fused(struct vkllm__model_desc *d) {
    const struct vkllm__hparams *hp = &d->hp;
    int any = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++) any |= d->w.layers[l].wqkv || d->w.layers[l].w_gate_up;
    if (!any) return VKLLM_STATUS_OK;
    d->views = vkllm__calloc((size_t)hp->n_layer * 5, sizeof *d->views);
    if (!d->views) return vkllm__err(VKLLM_STATUS_OOM, "tensor views");
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        struct vkllm__layer_weights *lw = &d->w.layers[l];
        struct vkllm__gguf_tensor *v = d->views + (size_t)l * 5;
        if (lw->wqkv) {
            row_view(lw->wqkv, 0, hp->n_embd_q, &v[0]);
            row_view(lw->wqkv, hp->n_embd_q, hp->n_embd_kv, &v[1]);
            row_view(lw->wqkv, (uint64_t)hp->n_embd_q + hp->n_embd_kv, hp->n_embd_kv, &v[2]);
            lw->wq = &v[0], lw->wk = &v[1], lw->wv = &v[2], lw->wqkv = NULL;
        }
        if (lw->w_gate_up) {
            row_view(lw->w_gate_up, 0, hp->n_ff, &v[3]);
            row_view(lw->w_gate_up, hp->n_ff, hp->n_ff, &v[4]);
            lw->w_gate = &v[3], lw->w_up = &v[4], lw->w_gate_up = NULL;
        }
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__model_desc_load(const struct vkllm__gguf *g, struct vkllm__model_desc **out) {
    *out = NULL;
    struct vkllm__model_desc *d = vkllm__calloc(1, sizeof *d);
    if (!d) return vkllm__err(VKLLM_STATUS_OOM, "model description");
    d->gguf = g;
    vkllm_status st;
    VKLLM_TRY(st, read_arch(g, &d->hp.arch), fail);
    VKLLM_TRY(st, read_shape(g, &d->hp), fail);
    VKLLM_TRY(st, read_rope(g, &d->hp), fail);
    if (d->hp.arch == VKLLM__ARCH_GEMMA2 || d->hp.arch == VKLLM__ARCH_GEMMA3 || d->hp.arch == VKLLM__ARCH_GPTOSS)
        VKLLM_TRY(st, read_swa(g, &d->hp, &d->swa_layers), fail);
    VKLLM_TRY(st, find_globals(g, &d->hp, &d->w), fail);
    VKLLM_TRY(st, load_freq_factors(g, d), fail);
    d->w.layers = vkllm__calloc(d->hp.n_layer, sizeof *d->w.layers);
    if (!d->w.layers) {
        st = vkllm__err(VKLLM_STATUS_OOM, "layer table");
        goto fail;
    }
    for (uint32_t l = 0; l < d->hp.n_layer; l++) {
        struct vkllm__layer_weights *lw = &d->w.layers[l];
        VKLLM_TRY(st, find_layer(g, &d->hp, l, lw), fail);
        if (d->hp.arch == VKLLM__ARCH_GPTOSS)
            lw->ffn_norm = lw->attn_post_norm, lw->attn_post_norm = NULL; /* tensors.h */
    }
    VKLLM_TRY(st, split_fused(d), fail);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        uint64_t n = 1;
        for (int k = 0; k < 4; k++) n *= g->tensors[i].ne[k];
        d->n_params += n;
    }
    *out = d;
    return VKLLM_STATUS_OK;
fail:
    vkllm__model_desc_free(d);
    return st;
}

void vkllm__model_desc_free(struct vkllm__model_desc *d) {
    if (!d) return;
    vkllm__free(d->hp.rope.freq_factors);
    vkllm__free(d->hp.rope.freq_factors_long);
    vkllm__free(d->views);
    vkllm__free(d->swa_layers);
    vkllm__free(d->w.layers);
    vkllm__free(d);
}
