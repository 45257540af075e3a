/* ref_api.c - the public reference forward pass (vkllm.h): a file, its description and the
 * scalar reference of runtime/ref, for `vkllm logits --device ref` and comparisons. */
#include "context.h"
#include "ref.h"

struct vkllm_ref {
    struct vkllm__gguf *g;
    struct vkllm__model_desc *d;
    struct vkllm__ref *r;
};

void vkllm_ref_free(vkllm_ref_t r) {
    if (!r) return;
    vkllm__ref_free(r->r);
    vkllm__model_desc_free(r->d);
    vkllm__gguf_close(r->g);
    vkllm__free(r);
}

vkllm_status vkllm_ref_init(const char *path, uint32_t n_ctx, int kv_f16, vkllm_ref_t *out) {
    if (!path || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_ref_init: NULL argument");
    *out = NULL;
    struct vkllm_ref *r = vkllm__calloc(1, sizeof *r);
    if (!r) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm_status st = vkllm__gguf_open(path, &r->g);
    if (!st && (st = vkllm__model_desc_load(r->g, &r->d))) vkllm__err_prefix("%s: ", path);
    if (!st) st = vkllm__ref_init(r->d, n_ctx, &r->r);
    if (st) {
        vkllm_ref_free(r);
        return st;
    }
    vkllm__ref_set_kv_f16(r->r, kv_f16);
    *out = r;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm_ref_eval(vkllm_ref_t r, int32_t token, uint32_t pos, const float **logits) {
    if (!r || !logits || token < 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_ref_eval: bad argument");
    return vkllm__ref_forward(r->r, (uint32_t)token, pos, logits);
}

uint32_t vkllm_ref_n_vocab(vkllm_ref_t r) { return r ? r->d->hp.n_vocab : 0; }
