/* kv_cache.c - per-layer K and V on the device, f16 or q8_0 (int8 quants, then an f32 scale per
 * 32 values: 1.125 bytes a value), for n_ctx positions (a sliding-window layer: a ring of its last
 * window + n_ubatch). Sized before anything is allocated, so a context that does not fit is
 * refused with the numbers. */
#include "forward.h"

uint32_t vkllm__kv_layer_rows(const struct vkllm__hparams *hp, uint32_t l, uint32_t n_ctx, uint32_t n_ubatch) {
    uint32_t w = vkllm__layer_window(hp, l);
    /* window + n - 1 rows let a batch of n attend; one more lets a batch of n_ubatch be evaluated
     * again from the same position (truncating back to where it started, as benchmarks do) */
    uint64_t ring = (uint64_t)w + VKLLM_MAX(n_ubatch, 1u);
    return w && ring < n_ctx ? (uint32_t)ring : n_ctx;
}

uint64_t vkllm__kv_cache_bytes(const struct vkllm__hparams *hp, uint32_t n_ctx, uint32_t n_ubatch, int k_q8, int v_q8) {
    uint64_t rows = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++) rows += vkllm__kv_layer_rows(hp, l, n_ctx, n_ubatch);
    return rows * (vkllm__kv_row_bytes(hp->n_embd_kv, k_q8) + vkllm__kv_row_bytes(hp->n_embd_kv, v_q8));
}

vkllm_status vkllm__kv_cache_init(struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, uint32_t n_ctx,
                                  uint32_t n_ubatch, int k_q8, int v_q8, struct vkllm__kv_cache *out) {
    struct vkllm__kv_cache kv = {.n_layer = hp->n_layer, .n_ctx = n_ctx, .width = hp->n_embd_kv,
                                 .k_q8 = (uint8_t)!!k_q8, .v_q8 = (uint8_t)!!v_q8};
    if ((k_q8 || v_q8) && (hp->n_embd_kv % 32 || hp->head_dim % 4))
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "a q8_0 KV cache needs rows of a multiple of 32 values and a head "
                          "size that is a multiple of 4 (this model: %u kv heads x %u): use f16",
                          hp->n_head_kv, hp->head_dim);
    const uint64_t row_max = VKLLM_MAX(vkllm__kv_row_bytes(hp->n_embd_kv, k_q8), vkllm__kv_row_bytes(hp->n_embd_kv, v_q8));
    uint64_t per_layer = (uint64_t)n_ctx * row_max; /* the largest: a full layer's */
    uint64_t need = vkllm__kv_cache_bytes(hp, n_ctx, n_ubatch, k_q8, v_q8);
    uint64_t budget = vkllm__gpu_memory_budget(gpu), used = vkllm__gpu_memory_allocated(gpu);
    uint64_t avail = budget > used ? budget - used : 0;
    if (n_ctx == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "context of 0 positions");
    if (need > avail)
        return vkllm__err(VKLLM_STATUS_DEVICE_OOM,
                          "a KV cache of %u positions needs %.1f MiB (%u layers x K and V of %u values, %s/%s, per "
                          "position); %.1f MiB of device memory are free: use a smaller context (-c)%s",
                          n_ctx, need / 1048576.0, hp->n_layer, hp->n_embd_kv, k_q8 ? "q8_0" : "f16", v_q8 ? "q8_0" : "f16",
                          avail / 1048576.0, k_q8 && v_q8 ? "" : " or a q8_0 cache (--cache-type-k/v q8_0)");
    if (per_layer > vkllm__gpu_max_binding(gpu))
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "a KV cache of %u positions takes %.1f MiB per layer, more than this device binds at "
                          "once (%.1f MiB): use a context of at most %llu",
                          n_ctx, per_layer / 1048576.0, vkllm__gpu_max_binding(gpu) / 1048576.0,
                          (unsigned long long)(vkllm__gpu_max_binding(gpu) / row_max));
    vkllm_status st = VKLLM_STATUS_OK;
    kv.k = vkllm__calloc(hp->n_layer, sizeof *kv.k);
    kv.v = vkllm__calloc(hp->n_layer, sizeof *kv.v);
    kv.rows = vkllm__calloc(hp->n_layer, sizeof *kv.rows);
    if (!kv.k || !kv.v || !kv.rows) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        kv.rows[l] = vkllm__kv_layer_rows(hp, l, n_ctx, n_ubatch);
        uint64_t kb = kv.rows[l] * vkllm__kv_row_bytes(hp->n_embd_kv, k_q8);
        uint64_t vb = kv.rows[l] * vkllm__kv_row_bytes(hp->n_embd_kv, v_q8);
        VKLLM_TRY(st, vkllm__buffer_alloc(gpu, kb, VKLLM__MEM_DEVICE, &kv.k[l]), fail);
        VKLLM_TRY(st, vkllm__buffer_alloc(gpu, vb, VKLLM__MEM_DEVICE, &kv.v[l]), fail);
        VKLLM_TRY(st, vkllm__buffer_fill_zero(kv.k[l]), fail);
        VKLLM_TRY(st, vkllm__buffer_fill_zero(kv.v[l]), fail);
    }
    kv.bytes = need;
    *out = kv;
    return VKLLM_STATUS_OK;
fail:
    vkllm__kv_cache_free(&kv);
    return st;
}

void vkllm__kv_cache_free(struct vkllm__kv_cache *kv) {
    if (!kv) return;
    for (uint32_t l = 0; l < kv->n_layer; l++) {
        if (kv->k) vkllm__buffer_free(kv->k[l]);
        if (kv->v) vkllm__buffer_free(kv->v[l]);
    }
    vkllm__free(kv->k);
    vkllm__free(kv->v);
    vkllm__free(kv->rows);
    kv->k = kv->v = NULL;
    kv->rows = NULL;
}
