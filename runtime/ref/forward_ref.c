/* forward_ref.c - the scalar reference forward pass (see ref.h). Reads like run.c's forward():
 * one call per step, shape comments. Vectors (norms, biases) are copied to f32 once at init, and
 * so are the matrices, dequantized, where all of them fit in REF_F32_MAX bytes as f32 (run.c
 * keeps its weights in f32); a larger model's stay in their file encoding and are dequantized row
 * by row as they are used. Both give the same sums: the rows' values, in order, in double. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "ref_ops.h"
#include "ref.h"
#include "types.h"

/* A layer's vectors (norms, biases) as f32 copies, one field per vector row of the layer table
 * (model/tensors.h); NULL where the model has none. Matrices are read from the file. */
#define REF_FIELD_VEC(field) float *field;
#define REF_FIELD_MAT(field)
#define REF_FIELD_EXP(field)
struct ref_layer {
#define REF_FIELD(field, suffix, kind, ...) REF_FIELD_##kind(field)
    VKLLM__LAYER_TENSORS(REF_FIELD)
#undef REF_FIELD
};

/* Where each vector row of the table lives in struct ref_layer (0 for matrices). */
#define REF_OFF_VEC(field) offsetof(struct ref_layer, field)
#define REF_OFF_MAT(field) 0
#define REF_OFF_EXP(field) 0
static const size_t k_ref_offset[VKLLM__LT_COUNT_] = {
#define REF_OFF(field, suffix, kind, ...) REF_OFF_##kind(field),
    VKLLM__LAYER_TENSORS(REF_OFF)
#undef REF_OFF
};

static float **ref_vec(struct ref_layer *rl, size_t i) { return (float **)((char *)rl + k_ref_offset[i]); }
static int is_vec(size_t i) { return vkllm__layer_tensors[i].kind == VKLLM__TENSOR_VEC; }

struct vkllm__ref {
    const struct vkllm__model_desc *d;
    uint32_t n_ctx;
    uint32_t n_pos;           /* positions held in the cache */
    struct ref_layer *layers; /* (n_layer,) */
    float *output_norm;       /* (n_embd,) */
    float *inv_freq;          /* (n_rot/2,) */
    float *inv_freq_swa;      /* (n_rot/2,) gemma's sliding-window layers, or NULL */
    // run state
    float *x;                 /* (n_embd,) residual stream */
    float *xb;                /* (n_embd,) normed input of a block */
    float *q;                 /* (n_embd_q,) */
    float *att_out;           /* (n_embd_q,) */
    float *tmp;               /* (n_embd,) block output */
    float *hb, *hb2;          /* (max(n_ff, n_ff_exp),) */
    float *router;            /* (n_expert,) router logits (MoE) */
    float *moe;               /* (n_embd,) one expert's output (MoE) */
    float *att;               /* (n_ctx,) scores */
    float *logits;            /* (n_vocab,) */
    float *k_cache, *v_cache; /* (n_layer, n_ctx, n_embd_kv) */
    int kv_f16;               /* round cached K/V to f16, as the device cache stores them */
    int kv_q8k, kv_q8v;       /* ... K / V to q8_0 instead */
    /* the matrices as f32 (n_mat of them; none past REF_F32_MAX) */
    const struct vkllm__gguf_tensor **mat;
    float **mat_f32;
    uint32_t n_mat;
};

#define REF_F32_MAX (256ull << 20)

// --- init / free ----------------------------------------------------------------------------

/* A copy of an f32 vector tensor (NULL stays NULL); 0 on allocation failure. */
static int copy_vec(const struct vkllm__gguf_tensor *t, float **out) {
    *out = NULL;
    if (!t) return 1;
    *out = vkllm__malloc((size_t)t->nbytes); /* f32: a vector, or rows of them (expert biases) */
    if (!*out) return 0;
    memcpy(*out, t->data, (size_t)t->nbytes);
    return 1;
}

static int alloc_f32(float **p, uint64_t n) {
    *p = n <= SIZE_MAX / sizeof(float) ? vkllm__calloc((size_t)(n ? n : 1), sizeof(float)) : NULL;
    return *p != NULL;
}

static vkllm_status alloc_state(struct vkllm__ref *r) {
    const struct vkllm__hparams *hp = &r->d->hp;
    uint64_t cache = (uint64_t)hp->n_layer * r->n_ctx * hp->n_embd_kv;
    if (!alloc_f32(&r->x, hp->n_embd) || !alloc_f32(&r->xb, hp->n_embd) || !alloc_f32(&r->tmp, hp->n_embd) ||
        !alloc_f32(&r->q, hp->n_embd_q) || !alloc_f32(&r->att_out, hp->n_embd_q) ||
        !alloc_f32(&r->hb, VKLLM_MAX(hp->n_ff, hp->n_ff_exp)) ||
        !alloc_f32(&r->hb2, VKLLM_MAX(hp->n_ff, hp->n_ff_exp)) || !alloc_f32(&r->att, r->n_ctx) ||
        !alloc_f32(&r->router, hp->n_expert) || !alloc_f32(&r->moe, hp->n_embd) ||
        !alloc_f32(&r->logits, hp->n_vocab) || !alloc_f32(&r->inv_freq, hp->rope.n_rot / 2) ||
        !alloc_f32(&r->k_cache, cache) || !alloc_f32(&r->v_cache, cache))
        return vkllm__err(VKLLM_STATUS_OOM, "reference forward state (KV cache %s)",
                          vkllm__bytes(2 * cache * sizeof(float)).s);
    r->layers = vkllm__calloc(hp->n_layer, sizeof *r->layers);
    if (!r->layers || !copy_vec(r->d->w.output_norm, &r->output_norm))
        return vkllm__err(VKLLM_STATUS_OOM, "reference forward state");
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        for (size_t i = 0; i < VKLLM__LT_COUNT_; i++)
            if (is_vec(i) && !copy_vec(vkllm__layer_tensor(&r->d->w.layers[l], (enum vkllm__layer_tensor)i),
                                       ref_vec(&r->layers[l], i)))
                return vkllm__err(VKLLM_STATUS_OOM, "reference forward state");
    }
    vkllm__rope_freqs(hp, r->n_ctx, r->inv_freq);
    if (hp->swa) {
        if (!alloc_f32(&r->inv_freq_swa, hp->rope.n_rot / 2))
            return vkllm__err(VKLLM_STATUS_OOM, "reference forward state");
        vkllm__rope_freqs_swa(hp, r->inv_freq_swa);
    }
    return VKLLM_STATUS_OK;
}

/* Rows of matrix t, of every expert (dimensions past n_dims are 1). */
static uint64_t n_rows(const struct vkllm__gguf_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

/* 1 once matrix t (NULL: none) has its f32 copy; 0 where memory runs out. */
static int add_f32(struct vkllm__ref *r, const struct vkllm__gguf_tensor *t) {
    if (!t) return 1;
    for (uint32_t i = 0; i < r->n_mat; i++)
        if (r->mat[i] == t) return 1; /* tied: the output projection is token_embd */
    uint32_t cols = (uint32_t)t->ne[0];
    uint64_t rows = n_rows(t), row_bytes = 0;
    float *f = NULL;
    if (vkllm__row_size(t->type, cols, &row_bytes) || !alloc_f32(&f, rows * cols)) return 0;
    for (uint64_t i = 0; i < rows; i++)
        vkllm__dequantize_row(t->type, (const uint8_t *)t->data + i * row_bytes, f + i * cols, cols);
    r->mat[r->n_mat] = t, r->mat_f32[r->n_mat++] = f;
    return 1;
}

/* The f32 copy of matrix t, or NULL. */
static const float *ref_f32(const struct vkllm__ref *r, const struct vkllm__gguf_tensor *t) {
    for (uint32_t i = 0; i < r->n_mat; i++)
        if (r->mat[i] == t) return r->mat_f32[i];
    return NULL;
}

static void free_f32(struct vkllm__ref *r) {
    for (uint32_t i = 0; i < r->n_mat; i++) vkllm__free(r->mat_f32[i]);
    vkllm__free(r->mat_f32);
    vkllm__free((void *)r->mat);
    r->mat = NULL, r->mat_f32 = NULL, r->n_mat = 0;
}

/* Every matrix dequantized to f32 where all of them fit in REF_F32_MAX; where they do not, or
 * memory runs out, none (they are then read from the file's encoding). */
static void dequantize_all(struct vkllm__ref *r) {
    const struct vkllm__model_weights *w = &r->d->w;
    uint64_t bytes = 0, n = 2;
    for (uint32_t l = 0; l < r->d->hp.n_layer; l++)
        for (size_t i = 0; i < VKLLM__LT_COUNT_; i++) {
            const struct vkllm__gguf_tensor *t = vkllm__layer_tensor(&w->layers[l], (enum vkllm__layer_tensor)i);
            if (!t || is_vec(i)) continue;
            bytes += t->ne[0] * n_rows(t) * sizeof(float);
            n++;
        }
    if (w->output) bytes += w->output->ne[0] * n_rows(w->output) * sizeof(float);
    if (bytes > REF_F32_MAX) return;
    r->mat = vkllm__calloc(n, sizeof *r->mat);
    r->mat_f32 = vkllm__calloc(n, sizeof *r->mat_f32);
    int ok = r->mat && r->mat_f32 && add_f32(r, w->output);
    for (uint32_t l = 0; ok && l < r->d->hp.n_layer; l++)
        for (size_t i = 0; ok && i < VKLLM__LT_COUNT_; i++)
            if (!is_vec(i)) ok = add_f32(r, vkllm__layer_tensor(&w->layers[l], (enum vkllm__layer_tensor)i));
    if (!ok) free_f32(r);
}

vkllm_status vkllm__ref_init(const struct vkllm__model_desc *desc, uint32_t n_ctx, struct vkllm__ref **out) {
    *out = NULL;
    if (!desc) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "ref_init: no model");
    struct vkllm__ref *r = vkllm__calloc(1, sizeof *r);
    if (!r) return vkllm__err(VKLLM_STATUS_OOM, "reference forward state");
    r->d = desc;
    r->n_ctx = n_ctx ? n_ctx : desc->hp.n_ctx_train;
    vkllm_status st = alloc_state(r);
    if (st != VKLLM_STATUS_OK) {
        vkllm__ref_free(r);
        return st;
    }
    dequantize_all(r);
    *out = r;
    return VKLLM_STATUS_OK;
}

void vkllm__ref_free(struct vkllm__ref *r) {
    if (!r) return;
    if (r->layers) {
        for (uint32_t l = 0; l < r->d->hp.n_layer; l++)
            for (size_t i = 0; i < VKLLM__LT_COUNT_; i++)
                if (is_vec(i)) vkllm__free(*ref_vec(&r->layers[l], i));
        vkllm__free(r->layers);
    }
    float *bufs[] = {r->output_norm, r->inv_freq, r->inv_freq_swa, r->router, r->moe, r->x,
                     r->xb,          r->q,        r->att_out,      r->tmp,    r->hb,  r->hb2,
                     r->att,         r->logits,   r->k_cache,      r->v_cache};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(bufs); i++) vkllm__free(bufs[i]);
    free_f32(r);
    vkllm__free(r);
}

void vkllm__ref_set_kv_f16(struct vkllm__ref *r, int on) { r->kv_f16 = on; }
void vkllm__ref_set_kv_q8(struct vkllm__ref *r, int k, int v) { r->kv_q8k = k, r->kv_q8v = v; }

/* x (n, a multiple of 32) as a q8_0 cache row holds it. */
static void q8_round(float *x, uint32_t n) {
    for (uint32_t b = 0; b + 32 <= n; b += 32) {
        float amax = 0;
        for (uint32_t i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b + i]));
        float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        for (uint32_t i = 0; i < 32; i++) x[b + i] = (float)lroundf(x[b + i] * id) * d;
    }
}

uint32_t vkllm__ref_n_ctx(const struct vkllm__ref *r) { return r->n_ctx; }

// --- forward --------------------------------------------------------------------------------

/* o (rows,) = W (rows, cols) @ x (cols,): W's f32 copy, or W in its file encoding. */
static void matvec(const struct vkllm__ref *r, float *o, const struct vkllm__gguf_tensor *w, const float *x) {
    uint32_t cols = (uint32_t)w->ne[0], rows = (uint32_t)w->ne[1];
    uint64_t row_bytes = 0;
    const float *f = ref_f32(r, w);
    if (f) {
        vkllm__ref_matvec(o, f, x, rows, cols);
        return;
    }
    vkllm__row_size(w->type, cols, &row_bytes); /* checked by vkllm__model_desc_load */
    vkllm__ref_matvec_q(o, w->type, w->data, row_bytes, x, rows, cols);
}

/* The attention half of block l at position pos: x += wo @ attention(rope(q), rope(k), v). */
static void attention_block(struct vkllm__ref *r, uint32_t l, uint32_t pos) {
    const struct vkllm__hparams *hp = &r->d->hp;
    const struct vkllm__layer_weights *w = &r->d->w.layers[l];
    const struct ref_layer *rl = &r->layers[l];
    uint64_t lo = (uint64_t)l * r->n_ctx * hp->n_embd_kv;
    float *k = r->k_cache + lo + (uint64_t)pos * hp->n_embd_kv; /* (n_embd_kv,) this position's row */
    float *v = r->v_cache + lo + (uint64_t)pos * hp->n_embd_kv;

    vkllm__ref_rmsnorm(r->xb, r->x, rl->attn_norm, hp->n_embd, 1, hp->rms_eps); // xb (n_embd,)
    matvec(r, r->q, w->wq, r->xb);                                              // q (n_embd_q,) = wq @ xb
    matvec(r, k, w->wk, r->xb);                                                 // k (n_embd_kv,) = wk @ xb
    matvec(r, v, w->wv, r->xb);                                                 // v (n_embd_kv,) = wv @ xb
    if (rl->bq) vkllm__ref_add(r->q, r->q, rl->bq, hp->n_embd_q, hp->n_embd_q); // qwen2 (llama: optional): biases
    if (rl->bk) vkllm__ref_add(k, k, rl->bk, hp->n_embd_kv, hp->n_embd_kv);
    if (rl->bv) vkllm__ref_add(v, v, rl->bv, hp->n_embd_kv, hp->n_embd_kv);
    if (rl->q_norm) { // qwen3: RMS norm per head
        vkllm__ref_rmsnorm(r->q, r->q, rl->q_norm, hp->head_dim, hp->n_head, hp->rms_eps);
        vkllm__ref_rmsnorm(k, k, rl->k_norm, hp->head_dim, hp->n_head_kv, hp->rms_eps);
    }
    const float *freq =
        vkllm__layer_window(hp, l) && r->inv_freq_swa ? r->inv_freq_swa : r->inv_freq; // gemma: local RoPE
    vkllm__ref_rope(r->q, hp->n_head, hp->head_dim, hp->rope.n_rot, hp->rope.neox, hp->rope.mscale, pos, freq);
    vkllm__ref_rope(k, hp->n_head_kv, hp->head_dim, hp->rope.n_rot, hp->rope.neox, hp->rope.mscale, pos, freq);
    if (r->kv_f16) // the device cache is f16
        for (uint32_t i = 0; i < hp->n_embd_kv; i++) {
            if (!r->kv_q8k) k[i] = vkllm__f16_to_f32(vkllm__f32_to_f16(k[i]));
            if (!r->kv_q8v) v[i] = vkllm__f16_to_f32(vkllm__f32_to_f16(v[i]));
        }
    if (r->kv_q8k) q8_round(k, hp->n_embd_kv); // ... or q8_0
    if (r->kv_q8v) q8_round(v, hp->n_embd_kv);
    // att_out (n_head, head_dim) over cache rows 0..pos (n_ctx, n_embd_kv) of this layer
    vkllm__ref_attention(r->att_out, r->q, r->k_cache + lo, r->v_cache + lo, r->att, hp->n_head, hp->n_head_kv,
                         hp->head_dim, pos + 1,
                         hp->attn_scale != 0.0f ? hp->attn_scale : 1.0f / sqrtf((float)hp->head_dim),
                         vkllm__layer_window(hp, l), hp->attn_softcap, rl->attn_sinks); // gpt-oss: sinks
    matvec(r, r->tmp, w->wo, r->att_out);                                               // tmp (n_embd,) = wo @ att_out
    if (rl->bo) vkllm__ref_add(r->tmp, r->tmp, rl->bo, hp->n_embd, hp->n_embd);         // llama (optional): + bias
    if (rl->attn_post_norm) vkllm__ref_rmsnorm(r->tmp, r->tmp, rl->attn_post_norm, hp->n_embd, 1, hp->rms_eps); // gemma
    for (uint32_t i = 0; hp->resid_scale != 1.0f && i < hp->n_embd; i++) r->tmp[i] *= hp->resid_scale; // granite
    vkllm__ref_add(r->x, r->x, r->tmp, hp->n_embd, hp->n_embd);                                        // residual
}

/* Expert e's matrix of an (n_expert, rows, cols) tensor, times x. */
static void matvec_expert(const struct vkllm__ref *r, float *o, const struct vkllm__gguf_tensor *w, uint32_t e,
                          const float *x) {
    uint32_t cols = (uint32_t)w->ne[0], rows = (uint32_t)w->ne[1];
    uint64_t row_bytes = 0;
    const float *f = ref_f32(r, w);
    if (f) {
        vkllm__ref_matvec(o, f + (uint64_t)e * rows * cols, x, rows, cols);
        return;
    }
    vkllm__row_size(w->type, cols, &row_bytes);
    vkllm__ref_matvec_q(o, w->type, (const uint8_t *)w->data + (uint64_t)e * rows * row_bytes, row_bytes, x, rows,
                        cols);
}

/* o (n,) += row e of an (n_expert, n) bias (NULL: none) */
static void add_expert_bias(float *o, const float *b, uint32_t e, uint32_t n) {
    if (b) vkllm__ref_add(o, o, b + (uint64_t)e * n, n, n);
}

/* MoE: tmp (n_embd,) = sum over the router's picks j of weight_j * down_j(silu(gate_j xb) * up_j xb)
 * (gpt-oss: each product plus its expert's bias, the router's too, and the clamped SwiGLU). */
static void moe_ffn(struct vkllm__ref *r, const struct vkllm__layer_weights *w, const struct ref_layer *rl) {
    const struct vkllm__hparams *hp = &r->d->hp;
    const uint32_t FE = hp->n_ff_exp, E = hp->n_embd;
    uint32_t ids[64];
    float wts[64];
    matvec(r, r->router, w->w_router, r->xb); // router (n_expert,) = w_router @ xb
    if (rl->b_router) vkllm__ref_add(r->router, r->router, rl->b_router, hp->n_expert, hp->n_expert);
    vkllm__ref_moe_route(r->router, hp->n_expert, hp->n_expert_used, ids, wts);
    memset(r->tmp, 0, sizeof(float) * E);
    for (uint32_t j = 0; j < hp->n_expert_used; j++) {
        matvec_expert(r, r->hb, w->w_gate_exps, ids[j], r->xb); // hb (FE,) = gate_e @ xb (+ bias)
        add_expert_bias(r->hb, rl->b_gate_exps, ids[j], FE);
        matvec_expert(r, r->hb2, w->w_up_exps, ids[j], r->xb); // hb2 (FE,) = up_e @ xb (+ bias)
        add_expert_bias(r->hb2, rl->b_up_exps, ids[j], FE);
        if (hp->swiglu_oai) vkllm__ref_swiglu_oai(r->hb, r->hb, r->hb2, FE); // gpt-oss
        else vkllm__ref_silu_mul(r->hb, r->hb, r->hb2, FE);
        matvec_expert(r, r->moe, w->w_down_exps, ids[j], r->hb); // moe (E,) = down_e @ hb (+ bias)
        add_expert_bias(r->moe, rl->b_down_exps, ids[j], E);
        for (uint32_t i = 0; i < E; i++) r->tmp[i] += wts[j] * r->moe[i];
    }
}

/* The FFN half of block l: x += w_down @ (act(w_gate @ xb) * (w_up @ xb)), act SiLU (gemma: GELU),
 * or a mixture of experts' weighted sum. */
static void ffn_block(struct vkllm__ref *r, uint32_t l) {
    const struct vkllm__hparams *hp = &r->d->hp;
    const struct vkllm__layer_weights *w = &r->d->w.layers[l];
    vkllm__ref_rmsnorm(r->xb, r->x, r->layers[l].ffn_norm, hp->n_embd, 1, hp->rms_eps); // xb (n_embd,)
    if (hp->n_expert) {
        moe_ffn(r, w, &r->layers[l]); // Mixtral, qwen3moe, gpt-oss
    } else {
        matvec(r, r->hb, w->w_gate, r->xb);                                // hb (n_ff,) = w_gate @ xb
        matvec(r, r->hb2, w->w_up, r->xb);                                 // hb2 (n_ff,) = w_up @ xb
        if (hp->gelu) vkllm__ref_gelu_mul(r->hb, r->hb, r->hb2, hp->n_ff); // gemma: hb = gelu(hb) * hb2
        else vkllm__ref_silu_mul(r->hb, r->hb, r->hb2, hp->n_ff);          // hb = silu(hb) * hb2
        matvec(r, r->tmp, w->w_down, r->hb);                               // tmp (n_embd,) = w_down @ hb
    }
    if (r->layers[l].ffn_post_norm) // gemma
        vkllm__ref_rmsnorm(r->tmp, r->tmp, r->layers[l].ffn_post_norm, hp->n_embd, 1, hp->rms_eps);
    for (uint32_t i = 0; hp->resid_scale != 1.0f && i < hp->n_embd; i++) r->tmp[i] *= hp->resid_scale; // granite
    vkllm__ref_add(r->x, r->x, r->tmp, hp->n_embd, hp->n_embd);                                        // residual
}

vkllm_status vkllm__ref_forward(struct vkllm__ref *r, uint32_t token, uint32_t pos, const float **logits) {
    const struct vkllm__hparams *hp = &r->d->hp;
    const struct vkllm__model_weights *w = &r->d->w;
    if (token >= hp->n_vocab)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "token %u is outside the vocabulary (%u)", token, hp->n_vocab);
    if (pos >= r->n_ctx)
        return vkllm__err(VKLLM_STATUS_CONTEXT_FULL, "position %u: the context holds %u", pos, r->n_ctx);
    if (pos > r->n_pos)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "position %u skips ahead of the cache (%u held)", pos,
                          r->n_pos);

    uint64_t row_bytes = 0; // x (n_embd,) = token_embd[token]
    vkllm__row_size(w->token_embd->type, hp->n_embd, &row_bytes);
    vkllm__dequantize_row(w->token_embd->type, (const uint8_t *)w->token_embd->data + token * row_bytes, r->x,
                          hp->n_embd);
    for (uint32_t i = 0; hp->embd_scale != 1.0f && i < hp->n_embd; i++) r->x[i] *= hp->embd_scale; // granite, gemma
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        attention_block(r, l, pos);
        ffn_block(r, l);
    }
    vkllm__ref_rmsnorm(r->x, r->x, r->output_norm, hp->n_embd, 1, hp->rms_eps); // the hidden state
    matvec(r, r->logits, w->output, r->x);                                      // logits (n_vocab,) = output @ x
    for (uint32_t i = 0; hp->logit_scale != 1.0f && i < hp->n_vocab; i++) r->logits[i] /= hp->logit_scale;  // granite
    if (hp->final_softcap > 0.0f) vkllm__ref_softcap(r->logits, r->logits, hp->final_softcap, hp->n_vocab); // gemma2
    r->n_pos = pos + 1;
    *logits = r->logits;
    return VKLLM_STATUS_OK;
}

const float *vkllm__ref_hidden(const struct vkllm__ref *r) { return r->x; }
