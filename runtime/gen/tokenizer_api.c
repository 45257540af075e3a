/* tokenizer_api.c - the public tokenizer (vkllm.h): vkllm_tokenizer_t over tokenizer/, loaded
 * from a file or a model's, and the model-level calls that use it. A tokenizer is immutable, so
 * none of these take a context's lock. */
#include <string.h>

#include "context.h"
#include "tokenizer.h"

vkllm_status vkllm_tokenizer_load(const char *path, vkllm_tokenizer_t *out) {
    if (!path || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_tokenizer_load: NULL argument");
    *out = NULL;
    struct vkllm__gguf *g = NULL;
    struct vkllm_tokenizer *t = vkllm__calloc(1, sizeof *t);
    if (!t) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm_status st = vkllm__gguf_open(path, &g);
    if (!st) st = vkllm__tokenizer_init_gguf(g, &t->tok);
    vkllm__gguf_close(g);
    if (st) {
        vkllm__free(t);
        return st;
    }
    *out = t;
    return VKLLM_STATUS_OK;
}

void vkllm_tokenizer_free(vkllm_tokenizer_t t) {
    if (!t) return;
    vkllm__tokenizer_free(t->tok);
    vkllm__free(t);
}

vkllm_status vkllm_model_tokenizer(vkllm_model_t model, vkllm_tokenizer_t *out) {
    if (!model || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_model_tokenizer: NULL argument");
    *out = NULL;
    if (!model->tok)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "this model's tokenizer is not supported: %s", model->tok_error);
    *out = &model->tokenizer;
    return VKLLM_STATUS_OK;
}

uint32_t vkllm_tokenizer_n_vocab(vkllm_tokenizer_t t) {
    struct vkllm__tokenizer_info ti;
    if (!t) return 0;
    vkllm__tokenizer_get_info(t->tok, &ti);
    return ti.n_vocab;
}

vkllm_status vkllm_tokenizer_encode(vkllm_tokenizer_t t, const char *text, size_t len, int add_bos, int parse_special,
                                    int32_t *out, size_t cap, size_t *n_out) {
    if (!t || (!text && len) || (!out && cap) || !n_out)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_tokenize: NULL argument");
    if (text && !len) len = strlen(text);
    struct vkllm__tokenizer_info ti;
    vkllm__tokenizer_get_info(t->tok, &ti);
    int32_t *ids = NULL;
    size_t n = 0;
    vkllm_status st = len ? vkllm__tokenize(t->tok, text, len, add_bos < 0, parse_special, &ids, &n) : VKLLM_STATUS_OK;
    if (st) return st;
    int bos = (add_bos > 0 || (add_bos < 0 && !len && ti.add_bos)) && ti.bos >= 0;
    *n_out = n + (size_t)bos;
    for (size_t i = 0; i < n + (size_t)bos && i < cap; i++) out[i] = bos ? (i ? ids[i - 1] : ti.bos) : ids[i];
    vkllm__free(ids);
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm_tokenizer_decode(vkllm_tokenizer_t t, const int32_t *ids, size_t n, int render_special, char **out,
                                    size_t *len) {
    if (!t || (!ids && n) || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_detokenize: NULL argument");
    *out = NULL;
    size_t l = 0;
    vkllm_status st = vkllm__detokenize(t->tok, ids, n, render_special ? VKLLM__DETOK_SPECIAL : 0, out, &l);
    if (!st && len) *len = l;
    return st;
}

vkllm_status vkllm_tokenizer_piece(vkllm_tokenizer_t t, int32_t id, int render_special, const char **piece,
                                   size_t *len) {
    if (!t || !piece || !len) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_tokenizer_piece: NULL argument");
    return vkllm__token_piece(t->tok, id, render_special, piece, len);
}

vkllm_status vkllm_tokenizer_chat_format(vkllm_tokenizer_t t, const char *template_name,
                                         const struct vkllm_chat_message *msgs, size_t n, int add_generation_prompt,
                                         char **out) {
    if (!t || !out || (n && !msgs))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_chat_format: NULL argument");
    enum vkllm__chat_tmpl id;
    vkllm_status st = vkllm__chat_template_for(t->tok, template_name, &id);
    if (st == VKLLM_STATUS_NOT_FOUND)
        return vkllm__err(st, "the model has no chat template; name one (known: %s)", vkllm__chat_template_names());
    if (st) return st;
    struct vkllm__chat_msg *m = vkllm__calloc(n ? n : 1, sizeof *m);
    if (!m) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    for (size_t i = 0; i < n; i++) m[i] = (struct vkllm__chat_msg){msgs[i].role, msgs[i].content};
    size_t len;
    st = vkllm__chat_apply(id, m, n, add_generation_prompt, out, &len);
    vkllm__free(m);
    return st;
}

const char *vkllm_chat_template_names(void) { return vkllm__chat_template_names(); }

vkllm_status vkllm_chat_template_resolve(vkllm_model_t model, const char *template_name, const char **name) {
    if (!name) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_chat_template_resolve: NULL argument");
    vkllm_tokenizer_t t;
    enum vkllm__chat_tmpl id;
    vkllm_status st = vkllm_model_tokenizer(model, &t);
    if (!st) st = vkllm__chat_template_for(t->tok, template_name, &id);
    if (st == VKLLM_STATUS_NOT_FOUND) return vkllm__err(st, "the model has no chat template");
    if (!st) *name = vkllm__chat_template_name(id);
    return st;
}

// --- the same on a model: its tokenizer ----------------------------------------------------

vkllm_status vkllm_tokenize(vkllm_model_t model, const char *text, size_t len, int add_bos, int parse_special,
                            int32_t *out, size_t cap, size_t *n_out) {
    vkllm_tokenizer_t t;
    vkllm_status st = vkllm_model_tokenizer(model, &t);
    return st ? st : vkllm_tokenizer_encode(t, text, len, add_bos, parse_special, out, cap, n_out);
}

vkllm_status vkllm_detokenize(vkllm_model_t model, const int32_t *ids, size_t n, int render_special, char **out) {
    vkllm_tokenizer_t t;
    if (out) *out = NULL;
    vkllm_status st = vkllm_model_tokenizer(model, &t);
    return st ? st : vkllm_tokenizer_decode(t, ids, n, render_special, out, NULL);
}

vkllm_status vkllm_chat_format(vkllm_model_t model, const char *template_name, const struct vkllm_chat_message *msgs,
                               size_t n, int add_generation_prompt, char **out) {
    vkllm_tokenizer_t t;
    vkllm_status st = vkllm_model_tokenizer(model, &t);
    return st ? st : vkllm_tokenizer_chat_format(t, template_name, msgs, n, add_generation_prompt, out);
}
