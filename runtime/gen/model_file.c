/* model_file.c - the public model-file API (vkllm.h): what a GGUF file holds, without a device,
 * for `vkllm info`. The roles of tensors come from the layer table (model/tensors.h). */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "types.h"

struct vkllm_model_file {
    struct vkllm__gguf *g;
    struct vkllm__model_desc *d; /* NULL when vkllm cannot run the file (error says why) */
    char error[512];
};

vkllm_status vkllm_model_file_open(const char *path, vkllm_model_file_t *out) {
    if (!path || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_model_file_open: NULL argument");
    *out = NULL;
    struct vkllm_model_file *f = vkllm__calloc(1, sizeof *f);
    if (!f) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm_status st = vkllm__gguf_open(path, &f->g);
    if (st) {
        vkllm__free(f);
        return st;
    }
    if (vkllm__model_desc_load(f->g, &f->d) != VKLLM_STATUS_OK)
        snprintf(f->error, sizeof f->error, "%s", vkllm_last_error());
    *out = f;
    return VKLLM_STATUS_OK;
}

void vkllm_model_file_close(vkllm_model_file_t f) {
    if (!f) return;
    vkllm__model_desc_free(f->d);
    vkllm__gguf_close(f->g);
    vkllm__free(f);
}

static void get_string(const struct vkllm__gguf *g, const char *key, char *out, size_t cap) {
    struct vkllm__str s;
    out[0] = 0;
    if (vkllm__gguf_get_str(g, key, &s) == VKLLM_STATUS_OK)
        snprintf(out, cap, "%.*s", (int)VKLLM_MIN(s.len, cap - 1), s.ptr);
}

static int64_t get_int(const struct vkllm__gguf *g, const char *key) {
    uint64_t v;
    return vkllm__gguf_get_u64(g, key, &v) == VKLLM_STATUS_OK && v <= INT64_MAX ? (int64_t)v : -1;
}

static const char *scaling_name(enum vkllm__rope_scaling s) {
    return s == VKLLM__ROPE_SCALING_LINEAR   ? "linear"
           : s == VKLLM__ROPE_SCALING_LLAMA3 ? "llama3"
           : s == VKLLM__ROPE_SCALING_YARN   ? "yarn"
                                             : "none";
}

static void shape_info(const struct vkllm__hparams *hp, struct vkllm_file_info *o) {
    o->n_layer = hp->n_layer, o->n_embd = hp->n_embd, o->n_ff = hp->n_ff, o->n_head = hp->n_head;
    o->n_head_kv = hp->n_head_kv, o->head_dim = hp->head_dim, o->n_vocab = hp->n_vocab;
    o->rms_eps = hp->rms_eps, o->tied_embeddings = hp->tied_embd;
    o->rope_theta = hp->rope.theta, o->rope_dims = hp->rope.n_rot, o->rope_neox = hp->rope.neox;
    snprintf(o->rope_scaling, sizeof o->rope_scaling, "%s", scaling_name(hp->rope.scaling));
    o->rope_factor = hp->rope.factor;
    o->sliding_window = hp->swa ? hp->n_swa : 0;
    o->n_swa_layers = 0;
    for (uint32_t l = 0; hp->swa && l < hp->n_layer; l++) o->n_swa_layers += hp->swa[l] != 0;
    o->attn_softcap = hp->attn_softcap, o->final_softcap = hp->final_softcap;
    o->n_expert = hp->n_expert, o->n_expert_used = hp->n_expert_used, o->n_ff_exp = hp->n_ff_exp;
    if (hp->rope.freq_factors_long) { /* phi3: the context it extends to over the one it was trained at */
        snprintf(o->rope_scaling, sizeof o->rope_scaling, "longrope");
        o->rope_factor = hp->rope.orig_ctx ? (float)hp->n_ctx_train / (float)hp->rope.orig_ctx : 1.0f;
    }
}

/* Tensor counts and bytes per type, and the parameter count. */
static void tensor_info(const struct vkllm__gguf *g, struct vkllm_file_info *o) {
    uint64_t count[VKLLM__TYPE_COUNT_] = {0}, bytes[VKLLM__TYPE_COUNT_] = {0};
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct vkllm__gguf_tensor *t = &g->tensors[i];
        uint64_t n = 1;
        for (int k = 0; k < 4; k++) n *= t->ne[k];
        o->n_params += n;
        if (t->type < VKLLM__TYPE_COUNT_) count[t->type]++, bytes[t->type] += t->nbytes;
    }
    for (uint32_t t = 0; t < VKLLM__TYPE_COUNT_ && o->n_types < VKLLM_MAX_TYPES; t++) {
        if (!count[t]) continue;
        snprintf(o->types[o->n_types].name, sizeof o->types[0].name, "%s", vkllm__type_name(t));
        o->types[o->n_types].count = count[t], o->types[o->n_types].bytes = bytes[t];
        o->n_types++;
    }
}

void vkllm_model_file_info(vkllm_model_file_t f, struct vkllm_file_info *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    if (!f) return;
    const struct vkllm__gguf *g = f->g;
    char key[160];
    o->file_bytes = g->size, o->gguf_version = g->version, o->n_kv = g->n_kv, o->n_tensors = g->n_tensors;
    get_string(g, "general.architecture", o->arch, sizeof o->arch);
    get_string(g, "general.name", o->name, sizeof o->name);
    o->supported = f->d != NULL;
    snprintf(o->error, sizeof o->error, "%s", f->error);
    if (f->d) shape_info(&f->d->hp, o);
    snprintf(key, sizeof key, "%s.context_length", o->arch);
    o->context_length = get_int(g, key);
    tensor_info(g, o);
    get_string(g, "tokenizer.ggml.model", o->tokenizer_model, sizeof o->tokenizer_model);
    const struct vkllm__gguf_kv *toks = vkllm__gguf_find(g, "tokenizer.ggml.tokens");
    o->n_tokens = toks && toks->type == VKLLM__GGUF_ARRAY ? (int64_t)toks->arr_n : -1;
    o->bos = get_int(g, "tokenizer.ggml.bos_token_id");
    o->eos = get_int(g, "tokenizer.ggml.eos_token_id");
    o->has_chat_template = vkllm__gguf_find(g, "tokenizer.chat_template") != NULL;
}

/* What vkllm reads tensor t as: a global, or a row of the layer table; "" when nothing. */
static void role_of(const struct vkllm__model_desc *d, const struct vkllm__gguf_tensor *t, char *out, size_t n) {
    out[0] = 0;
    if (!d) return;
    const struct vkllm__model_weights *w = &d->w;
    const struct {
        const struct vkllm__gguf_tensor *t;
        const char *role;
    } globals[] = {{w->token_embd, "token_embd"},
                   {d->hp.tied_embd ? NULL : w->output, "output"},
                   {w->output_norm, "output_norm"},
                   {w->rope_freqs, "rope_freqs"}};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(globals); i++)
        if (globals[i].t == t) {
            snprintf(out, n, "%s", globals[i].role);
            return;
        }
    for (uint32_t l = 0; l < d->hp.n_layer; l++)
        for (int i = 0; i < VKLLM__LT_COUNT_; i++)
            if (vkllm__layer_tensor(&w->layers[l], (enum vkllm__layer_tensor)i) == t) {
                snprintf(out, n, "%s", vkllm__layer_tensors[i].field);
                return;
            }
}

vkllm_status vkllm_model_file_tensor(vkllm_model_file_t f, uint64_t i, struct vkllm_tensor_info *out) {
    if (!f || !out || i >= f->g->n_tensors)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_model_file_tensor: no tensor %llu",
                          (unsigned long long)i);
    const struct vkllm__gguf_tensor *t = &f->g->tensors[i];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%.*s", (int)VKLLM_MIN(t->name.len, sizeof out->name - 1), t->name.ptr);
    snprintf(out->type, sizeof out->type, "%s", vkllm__type_name(t->type));
    out->n_dims = t->n_dims;
    memcpy(out->ne, t->ne, sizeof out->ne);
    out->bytes = t->nbytes;
    role_of(f->d, t, out->role, sizeof out->role);
    return VKLLM_STATUS_OK;
}
