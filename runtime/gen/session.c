/* session.c - the public model and session API over gguf.c, model.c, weights.c and forward.c. */
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "context.h"
#include "kv_cache.h"
#include "tokenizer.h"
#include "types.h"

struct vkllm_model_params vkllm_model_params_default(void) {
    struct vkllm_model_params p = {0};
    return p;
}

/* A layer split's load: device i of n reports within [i/n, (i+1)/n]. */
struct load_progress {
    const struct vkllm_model_params *p;
    uint32_t i, n;
};

static void progress_adapter(void *user, uint64_t done, uint64_t total) {
    const struct load_progress *lp = user;
    double f = total ? (double)done / (double)total : 1.0;
    lp->p->progress((float)((lp->i + f) / lp->n), lp->p->progress_user_data);
}

/* The layers of a split over n devices: device i takes [bounds[i], bounds[i+1]), by the
 * proportions tensor_split gives or, where all are 0, by each device's free device-local memory
 * (as llama.cpp shares them out: each boundary the rounded cumulative share). */
static vkllm_status split_layers(const struct vkllm_model_params *p, const vkllm_ctx_t *dev, uint32_t n,
                                 uint32_t n_layer, uint32_t *bounds) {
    double w[VKLLM_MAX_DEVICES], sum = 0;
    int given = 0;
    for (uint32_t i = 0; i < n; i++) {
        float t = p->tensor_split[i];
        if (!(t >= 0.0f) || !isfinite(t))
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tensor_split[%u] is %g: a share takes a number >= 0", i,
                              (double)t);
        given |= t > 0.0f;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t budget = vkllm__gpu_memory_budget(dev[i]->gpu), used = vkllm__gpu_memory_allocated(dev[i]->gpu);
        w[i] = given ? (double)p->tensor_split[i] : (double)(budget - VKLLM_MIN(used, budget));
        sum += w[i];
    }
    if (!(sum > 0))
        return vkllm__err(VKLLM_STATUS_DEVICE_OOM, "a layer split: no device has free device memory to share out");
    double cum = 0;
    bounds[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        cum += w[i];
        uint32_t b = i + 1 == n ? n_layer : (uint32_t)llround((double)n_layer * cum / sum);
        bounds[i + 1] = VKLLM_MIN(VKLLM_MAX(b, bounds[i]), n_layer);
    }
    return VKLLM_STATUS_OK;
}

/* The model's weights on its device, or over the devices of a split (one stage each). */
static vkllm_status load_weights(struct vkllm_model *m, const struct vkllm_model_params *p) {
    vkllm_ctx_t dev[VKLLM_MAX_DEVICES];
    uint32_t n = p->n_devices ? p->n_devices : 1, bounds[VKLLM_MAX_DEVICES + 1];
    if (n > VKLLM_MAX_DEVICES)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "a layer split over %u devices: at most %d", n,
                          VKLLM_MAX_DEVICES);
    for (uint32_t i = 0; i < n; i++) {
        dev[i] = i == 0 || p->n_devices == 0 ? (p->n_devices && p->devices[0] ? p->devices[0] : m->ctx) : p->devices[i];
        if (!dev[i]) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "a layer split: devices[%u] is NULL", i);
    }
    if (dev[0] != m->ctx)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "a layer split: devices[0] must be the context loading it");
    const uint32_t L = m->desc->hp.n_layer;
    if (n == 1) bounds[0] = 0, bounds[1] = L;
    else {
        vkllm_status st = split_layers(p, dev, n, L, bounds);
        if (st) return st;
    }
    uint32_t used = 0;
    for (uint32_t i = 0; i < n; i++) used += bounds[i + 1] > bounds[i];
    struct vkllm__gpu_model **link = &m->gm;
    for (uint32_t i = 0, k = 0; i < n; i++) {
        if (bounds[i + 1] == bounds[i]) {
            vkllm__log(VKLLM_LOG_WARN,
                       "layer split: device %u takes no layer (its share of the %u rounds to none: "
                       "tensor_split sets the shares); left out",
                       i, L);
            continue;
        }
        struct load_progress lp = {p, k, used};
        vkllm_status st = vkllm__gpu_model_load_range(dev[i]->gpu, m->desc, bounds[i], bounds[i + 1],
                                                      p->progress ? progress_adapter : NULL, &lp, link);
        if (st) {
            if (n > 1) vkllm__err_prefix("device %u (layers %u .. %u): ", i, bounds[i], bounds[i + 1] - 1);
            return st;
        }
        if (n > 1)
            vkllm__log(VKLLM_LOG_INFO, "layer split: device %u (%s) takes layers %u .. %u (%s of weights)", i,
                       vkllm__gpu_info(dev[i]->gpu)->name, bounds[i], bounds[i + 1] - 1,
                       vkllm__bytes((*link)->weight_bytes).s);
        m->dev[k++] = dev[i];
        m->n_dev = k;
        link = &(*link)->next;
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm_model_load(vkllm_ctx_t ctx, const char *path, const struct vkllm_model_params *params,
                              vkllm_model_t *out) {
    if (!ctx || !path || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_model_load: NULL argument");
    *out = NULL;
    struct vkllm_model_params p = params ? *params : vkllm_model_params_default();
    struct vkllm_model *m = vkllm__calloc(1, sizeof *m);
    if (!m) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    m->ctx = ctx;
    vkllm_status st;
    VKLLM_TRY(st, vkllm__gguf_open(path, &m->gguf), fail);
    VKLLM_TRY(st, vkllm__model_desc_load(m->gguf, &m->desc), fail_named);
    /* A tokenizer vkllm cannot build does not stop the model from computing logits; generating
     * text reports why later. */
    if (vkllm__tokenizer_init_gguf(m->gguf, &m->tok) != VKLLM_STATUS_OK) {
        snprintf(m->tok_error, sizeof m->tok_error, "%s", vkllm_last_error());
        vkllm__log(VKLLM_LOG_WARN, "%s: no tokenizer: %s", path, m->tok_error);
    }
    m->tokenizer.tok = m->tok;
    VKLLM_TRY(st, vkllm__gguf_check(m->gguf), fail); /* cut short already: the upload would be in vain */
    VKLLM_TRY(st, load_weights(m, &p), fail_named);
    /* the weights as uploaded are the file's only if it did not change meanwhile (truncated, or
     * rewritten in place: what a shrinking file no longer has was read as zeros) */
    VKLLM_TRY(st, vkllm__gguf_check(m->gguf), fail);
    *out = m;
    return VKLLM_STATUS_OK;
fail_named:
    vkllm__err_prefix("%s: ", path);
fail:
    vkllm_model_free(m);
    return st;
}

void vkllm_model_free(vkllm_model_t m) {
    if (!m) return;
    vkllm__gpu_model_free(m->gm);
    vkllm__tokenizer_free(m->tok);
    vkllm__model_desc_free(m->desc);
    vkllm__gguf_close(m->gguf);
    vkllm__free(m);
}

void vkllm_model_get_info(vkllm_model_t m, struct vkllm_model_info *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!m) return;
    const struct vkllm__hparams *hp = &m->desc->hp;
    snprintf(out->arch, sizeof out->arch, "%s", vkllm__arch_name(hp->arch));
    struct vkllm__str name;
    if (vkllm__gguf_get_str(m->gguf, "general.name", &name) == VKLLM_STATUS_OK)
        snprintf(out->name, sizeof out->name, "%.*s", (int)VKLLM_MIN(name.len, 127), name.ptr);
    out->n_layer = hp->n_layer, out->n_embd = hp->n_embd, out->n_ff = hp->n_ff;
    out->n_head = hp->n_head, out->n_head_kv = hp->n_head_kv, out->head_dim = hp->head_dim;
    out->n_vocab = hp->n_vocab, out->n_ctx_train = hp->n_ctx_train;
    out->pooling = hp->pooling == 2 ? VKLLM_POOLING_CLS : hp->pooling == 3 ? VKLLM_POOLING_LAST : VKLLM_POOLING_MEAN;
    out->n_params = m->desc->n_params;
    out->file_bytes = m->gguf->size;
    for (const struct vkllm__gpu_model *g = m->gm; g; g = g->next) /* every device's part of a split */
        out->weight_bytes += g->weight_bytes, out->decode_bytes_per_token += g->matvec_bytes_per_token;
    uint32_t counts[VKLLM__TYPE_COUNT_] = {0};
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++)
        if (m->gguf->tensors[i].type < VKLLM__TYPE_COUNT_) counts[m->gguf->tensors[i].type]++;
    size_t len = 0;
    for (uint32_t t = 0; t < VKLLM__TYPE_COUNT_; t++)
        if (counts[t] && len < sizeof out->type_summary)
            len += (size_t)snprintf(out->type_summary + len, sizeof out->type_summary - len, "%s%s:%u", len ? " " : "",
                                    vkllm__type_name(t), counts[t]);
}

struct vkllm_kv_pool_params vkllm_kv_pool_params_default(void) {
    struct vkllm_kv_pool_params p = {0};
    return p;
}

static uint32_t default_ctx(vkllm_model_t model, uint32_t n_ctx) {
    const struct vkllm__hparams *hp = &model->desc->hp;
    return n_ctx ? n_ctx : VKLLM_MIN(hp->n_ctx_train ? hp->n_ctx_train : 2048, 4096);
}

vkllm_status vkllm_kv_pool_init(vkllm_model_t model, const struct vkllm_kv_pool_params *params, vkllm_kv_pool_t *out) {
    if (!model || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_kv_pool_init: NULL argument");
    *out = NULL;
    struct vkllm_kv_pool_params p = params ? *params : vkllm_kv_pool_params_default();
    const struct vkllm__hparams *hp = &model->desc->hp;
    if ((p.type_k != VKLLM_KV_F16 && p.type_k != VKLLM_KV_Q8_0) ||
        (p.type_v != VKLLM_KV_F16 && p.type_v != VKLLM_KV_Q8_0))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "KV cache types: f16 (0) or q8_0 (1), not %d / %d", p.type_k,
                          p.type_v);
    int kq = p.type_k == VKLLM_KV_Q8_0, vq = p.type_v == VKLLM_KV_Q8_0;
    uint64_t bb = vkllm__kv_block_bytes(hp, kq, vq);
    /* a model whose every layer keeps a window's ring has nothing in the pool: bytes size nothing */
    uint64_t blocks = p.bytes && bb
                          ? p.bytes / bb
                          : (uint64_t)vkllm__kv_blocks_for(default_ctx(model, p.n_ctx)) * (p.n_seq ? p.n_seq : 1);
    if (blocks == 0)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "a KV pool of %llu bytes holds no block (one block of %u "
                          "positions takes %llu bytes)",
                          (unsigned long long)p.bytes, VKLLM_KV_BLOCK, (unsigned long long)bb);
    if (blocks > UINT32_MAX / 2 / VKLLM_KV_BLOCK)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "a KV pool of %llu blocks: too many",
                          (unsigned long long)blocks);
    struct vkllm_kv_pool *h = vkllm__calloc(1, sizeof *h);
    if (!h) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    h->model = model;
    uint32_t i = 0; /* a split: each device a pool of as many blocks, of its layers */
    for (const struct vkllm__gpu_model *g = model->gm; g; g = g->next, i++) {
        struct vkllm__hparams shp = vkllm__stage_hparams(hp, g->l0, g->l1);
        vkllm_status st = vkllm__kv_pool_init(g->gpu, &shp, (uint32_t)blocks, kq, vq, &h->pd[i]);
        if (st) {
            if (model->n_dev > 1) vkllm__err_prefix("device %u of the split: ", i);
            vkllm_kv_pool_free(h);
            return st;
        }
    }
    h->p = h->pd[0];
    h->k_q8 = kq, h->v_q8 = vq;
    *out = h;
    return VKLLM_STATUS_OK;
}

void vkllm_kv_pool_free(vkllm_kv_pool_t p) {
    if (!p) return;
    for (uint32_t i = 0; i < VKLLM_MAX_DEVICES; i++)
        if (p->pd[i]) vkllm__kv_pool_release(p->pd[i]);
    vkllm__free(p);
}

void vkllm_kv_pool_get_info(vkllm_kv_pool_t p, struct vkllm_kv_pool_info *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!p) return;
    struct vkllm__kv_pool_stats s;
    vkllm__kv_pool_get_stats(p->p, &s);
    uint32_t running, waiting;
    uint64_t preempted;
    vkllm__kv_pool_gens_get(p->p, &running, &waiting, &preempted);
    for (uint32_t i = 1; i < VKLLM_MAX_DEVICES && p->pd[i]; i++) { /* a split: every device's bytes */
        struct vkllm__kv_pool_stats d;
        vkllm__kv_pool_get_stats(p->pd[i], &d);
        s.bytes += d.bytes, s.block_bytes += d.block_bytes;
    }
    *out = (struct vkllm_kv_pool_info){.block_tokens = VKLLM__KV_BLOCK,
                                       .n_blocks = s.n_blocks,
                                       .n_held = s.n_held,
                                       .n_cached = s.n_cached,
                                       .n_free = s.n_free,
                                       .bytes = s.bytes,
                                       .block_bytes = s.block_bytes,
                                       .queried_tokens = s.queried_tokens,
                                       .hit_tokens = s.hit_tokens,
                                       .evicted_blocks = s.evicted_blocks,
                                       .preempted = preempted};
}

struct vkllm_session_params vkllm_session_params_default(void) {
    struct vkllm_session_params p = {.n_ctx = 0, .n_ubatch = 0};
    return p;
}

vkllm_status vkllm_session_init(vkllm_model_t model, const struct vkllm_session_params *params, vkllm_session_t *out) {
    if (!model || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_init: NULL argument");
    *out = NULL;
    struct vkllm_session_params p = params ? *params : vkllm_session_params_default();
    struct vkllm_session *s = vkllm__calloc(1, sizeof *s);
    if (!s) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    s->model = model;
    if ((p.type_k != VKLLM_KV_F16 && p.type_k != VKLLM_KV_Q8_0) ||
        (p.type_v != VKLLM_KV_F16 && p.type_v != VKLLM_KV_Q8_0)) {
        vkllm__free(s);
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "KV cache types: f16 (0) or q8_0 (1), not %d / %d", p.type_k,
                          p.type_v);
    }
    if (p.pool && (p.pool->model != model || p.pool->k_q8 != (p.type_k == VKLLM_KV_Q8_0) ||
                   p.pool->v_q8 != (p.type_v == VKLLM_KV_Q8_0))) {
        vkllm__free(s);
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "the session's KV pool is of another model or other K/V types");
    }
    vkllm_status st = vkllm__forward_init_stages(model->gm, p.n_ctx, p.n_ubatch, p.type_k == VKLLM_KV_Q8_0,
                                                 p.type_v == VKLLM_KV_Q8_0, p.pool ? p.pool->pd : NULL, &s->fw);
    if (!st && !(s->hist = vkllm__malloc(sizeof *s->hist * vkllm__forward_n_ctx(s->fw))))
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    /* as vkllm__forward_init sizes its micro-batches (0: 256, at most the context) */
    s->n_ubatch = VKLLM_MIN(p.n_ubatch ? p.n_ubatch : 256, st ? 1 : vkllm__forward_n_ctx(s->fw));
    if (st) {
        vkllm__forward_free(s->fw);
        vkllm__free(s);
        return st;
    }
    *out = s;
    return VKLLM_STATUS_OK;
}

void vkllm_session_free(vkllm_session_t s) {
    if (!s) return;
    if (s->gen) vkllm__gen_orphan(s->gen); /* its later calls fail instead of reading freed memory */
    vkllm__forward_free(s->fw);
    vkllm__free(s->hist);
    vkllm__free(s->logits);
    vkllm__free(s);
}

/* A session a generation owns takes no other work until vkllm_gen_free: it would silently change
 * what the generation reads back (its cache, its logits). */
static vkllm_status owned(vkllm_session_t s, const char *fn) {
    return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                      "%s: a generation owns this session (%u positions filled): "
                      "vkllm_gen_free it first",
                      fn, s->n_past);
}

vkllm_status vkllm_session_eval(vkllm_session_t s, const int32_t *tokens, uint32_t n, int all_logits) {
    if (s && s->gen) return owned(s, "vkllm_session_eval");
    return vkllm__session_eval(s, tokens, n, all_logits);
}

vkllm_status vkllm__session_eval(vkllm_session_t s, const int32_t *tokens, uint32_t n, int all_logits) {
    if (!s || (!tokens && n)) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_eval: NULL argument");
    if ((uint64_t)s->n_past + n > vkllm__forward_n_ctx(s->fw)) /* before sizing the logits for n rows */
        return vkllm__err(VKLLM_STATUS_CONTEXT_FULL,
                          "the context is full: %u positions used, %u more asked for, "
                          "room for %u",
                          s->n_past, n, vkllm__forward_n_ctx(s->fw));
    const uint64_t V = s->model->desc->hp.n_vocab;
    uint32_t rows = all_logits ? n : 1;
    if (rows > s->logits_cap) {
        float *nl = vkllm__realloc(s->logits, (size_t)rows * V * sizeof(float));
        if (!nl)
            return vkllm__err(VKLLM_STATUS_OOM, "out of host memory for %u x %llu logits", rows, (unsigned long long)V);
        s->logits = nl;
        s->logits_cap = rows;
    }
    s->logits_rows = 0;
    vkllm_status st = vkllm__forward_eval(s->fw, (const uint32_t *)tokens, n, s->n_past, all_logits, s->logits);
    if (st) return st;
    if (n) memcpy(s->hist + s->n_past, tokens, sizeof *tokens * n);
    s->n_past += n;
    vkllm__kv_register(vkllm__forward_kv(s->fw), s->hist, s->n_past); /* full blocks, for later prompts */
    s->logits_rows = rows;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm_session_embed(vkllm_session_t s, const int32_t *tokens, uint32_t n, enum vkllm_pooling pooling,
                                 int normalize, float *out) {
    if (!s || !tokens || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_embed: NULL argument");
    if (s->gen) return owned(s, "vkllm_session_embed");
    if (pooling != VKLLM_POOLING_MEAN && pooling != VKLLM_POOLING_LAST && pooling != VKLLM_POOLING_CLS)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_embed: unknown pooling %d", (int)pooling);
    /* refusals before the session is touched (the cache is overwritten only for a run) */
    if (n == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_embed: no tokens");
    if (n > vkllm__forward_n_ctx(s->fw))
        return vkllm__err(VKLLM_STATUS_CONTEXT_FULL, "vkllm_session_embed: %u tokens; the context has %u positions", n,
                          vkllm__forward_n_ctx(s->fw));
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= s->model->desc->hp.n_vocab)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "vkllm_session_embed: token %u: id %d is outside the "
                              "vocabulary (%u tokens)",
                              i, (int)tokens[i], s->model->desc->hp.n_vocab);
    const uint32_t E = s->model->desc->hp.n_embd;
    float *h = n ? vkllm__malloc(sizeof *h * (size_t)n * E) : NULL;
    if (n && !h) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory for %u x %u hidden states", n, E);
    s->n_past = 0; /* from position 0: the cache is overwritten */
    vkllm__kv_truncate(vkllm__forward_kv(s->fw), 0);
    s->logits_rows = 0;
    vkllm_status st = vkllm__forward_hidden(s->fw, (const uint32_t *)tokens, n, 0, h);
    if (!st) {
        memcpy(s->hist, tokens, sizeof *tokens * n);
        s->n_past = n;
        vkllm__kv_register(vkllm__forward_kv(s->fw), s->hist, s->n_past);
        for (uint32_t j = 0; j < E; j++) {
            double acc = 0;
            if (pooling == VKLLM_POOLING_LAST) acc = h[(size_t)(n - 1) * E + j];
            else if (pooling == VKLLM_POOLING_CLS) acc = h[j];
            else {
                for (uint32_t i = 0; i < n; i++) acc += h[(size_t)i * E + j];
                acc /= n;
            }
            out[j] = (float)acc;
        }
        if (normalize) {
            double ss = 0;
            for (uint32_t j = 0; j < E; j++) ss += (double)out[j] * out[j];
            float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.0f;
            for (uint32_t j = 0; j < E; j++) out[j] *= inv;
        }
    }
    vkllm__free(h);
    return st;
}

const float *vkllm_session_logits(vkllm_session_t s, uint32_t i) {
    if (!s || i >= s->logits_rows) return NULL;
    return s->logits + (uint64_t)i * s->model->desc->hp.n_vocab;
}

vkllm_status vkllm_session_decode_greedy(vkllm_session_t s, int32_t token, int32_t *next) {
    if (s && s->gen) return owned(s, "vkllm_session_decode_greedy");
    return vkllm__session_decode_greedy(s, token, next);
}

vkllm_status vkllm__session_decode_greedy(vkllm_session_t s, int32_t token, int32_t *next) {
    if (!s || !next) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_decode_greedy: NULL argument");
    uint32_t id;
    vkllm_status st = vkllm__forward_decode_greedy(s->fw, (uint32_t)token, s->n_past, &id);
    if (st) return st;
    s->hist[s->n_past++] = token;
    vkllm__kv_register(vkllm__forward_kv(s->fw), s->hist, s->n_past);
    s->logits_rows = 0;
    *next = (int32_t)id;
    return VKLLM_STATUS_OK;
}

uint32_t vkllm_session_n_past(vkllm_session_t s) { return s ? s->n_past : 0; }

uint32_t vkllm_session_cached_prefix(vkllm_session_t s, const int32_t *tokens, uint32_t n) {
    if (!s || !tokens) return 0;
    uint32_t i = 0;
    while (i < n && i < s->n_past && s->hist[i] == tokens[i]) i++;
    /* a sliding-window layer's ring may no longer hold the window before i */
    return i && !vkllm__forward_kv_holds(s->fw, i) ? 0 : i;
}
uint32_t vkllm_session_n_ctx(vkllm_session_t s) { return s ? vkllm__forward_n_ctx(s->fw) : 0; }

vkllm_status vkllm_session_truncate(vkllm_session_t s, uint32_t n_past) {
    if (s && s->gen) return owned(s, "vkllm_session_truncate");
    return vkllm__session_truncate(s, n_past);
}

vkllm_status vkllm__session_truncate(vkllm_session_t s, uint32_t n_past) {
    if (!s) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_truncate: NULL session");
    if (n_past > s->n_past)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "truncate to %u positions: only %u are filled", n_past,
                          s->n_past);
    if (!vkllm__forward_kv_holds(s->fw, n_past))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "truncate to %u positions: the sliding-window layers' caches "
                          "no longer hold the window before it (later positions took its rows); evaluate again from "
                          "an earlier position or 0",
                          n_past);
    s->n_past = n_past; /* later positions are overwritten before they are read (causal mask) */
    vkllm__kv_truncate(vkllm__forward_kv(s->fw), n_past); /* blocks past it go back to the pool */
    s->logits_rows = 0;
    return VKLLM_STATUS_OK;
}

void vkllm_session_memory(vkllm_session_t s, struct vkllm_session_memory *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!s) return;
    out->kv_bytes_allocated = vkllm__forward_kv_bytes(s->fw);
    out->kv_bytes_rings = vkllm__forward_kv_ring_bytes(s->fw);
    out->kv_bytes_per_token = vkllm__forward_kv_bytes_per_token(s->fw);
    out->kv_bytes_used = vkllm__forward_kv_bytes_used(s->fw, s->n_past);
    out->state_bytes = vkllm__forward_state_bytes(s->fw);
    for (uint32_t i = 0; i < s->model->n_dev; i++)
        out->device_bytes += vkllm__gpu_memory_allocated(s->model->dev[i]->gpu);
    struct vkllm__kv_pool_stats ps;
    vkllm__kv_pool_get_stats(vkllm__forward_kv(s->fw)->pool, &ps);
    out->kv_bytes_cached = (uint64_t)ps.n_cached * vkllm__forward_block_bytes(s->fw); /* in every device's pool */
}

double vkllm_session_device_ms(vkllm_session_t s, uint32_t i) {
    return s ? (double)vkllm__forward_stage_ns(s->fw, i) / 1e6 : 0.0;
}

uint32_t vkllm_model_n_devices(vkllm_model_t model) { return model ? model->n_dev : 0; }

vkllm_status vkllm_model_device(vkllm_model_t model, uint32_t i, vkllm_ctx_t *ctx, uint32_t *layer_begin,
                                uint32_t *layer_end) {
    if (!model) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_model_device: NULL model");
    const struct vkllm__gpu_model *g = model->gm;
    for (uint32_t k = 0; g && k < i; k++) g = g->next;
    if (!g) return vkllm__err(VKLLM_STATUS_NOT_FOUND, "device %u: the model is on %u", i, model->n_dev);
    if (ctx) *ctx = model->dev[i];
    if (layer_begin) *layer_begin = g->l0;
    if (layer_end) *layer_end = g->l1;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__session_decode_batch(vkllm_session_t *s, const int32_t *tokens, uint32_t n) {
    if (!s || !tokens) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "decode batch: NULL argument");
    if (n == 0) return VKLLM_STATUS_OK;
    if (n == 1) return vkllm__session_eval(s[0], tokens, 1, 0); /* the recorded one-token step */
    const uint64_t V = s[0]->model->desc->hp.n_vocab;
    struct vkllm__forward **fw = vkllm__malloc(sizeof *fw * n);
    uint32_t *pos = vkllm__malloc(sizeof *pos * n);
    float **logits = vkllm__malloc(sizeof *logits * n); /* each session's own row: read back once */
    vkllm_status st = VKLLM_STATUS_OK;
    if (!fw || !pos || !logits) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory for a decode batch of %u", n);
        goto done;
    }
    for (uint32_t i = 0; i < n && !st; i++) {
        if (!s[i] || s[i]->model != s[0]->model)
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "decode batch: session %u is NULL or of another model", i);
        else if (!s[i]->logits_cap && !(s[i]->logits = vkllm__malloc(sizeof(float) * V)))
            st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        else
            s[i]->logits_cap = VKLLM_MAX(s[i]->logits_cap, 1), fw[i] = s[i]->fw, pos[i] = s[i]->n_past,
            logits[i] = s[i]->logits;
    }
    if (!st) st = vkllm__forward_decode_batch(fw, (const uint32_t *)tokens, pos, n, logits);
    for (uint32_t i = 0; i < n && !st; i++) {
        s[i]->logits_rows = 1;
        s[i]->hist[s[i]->n_past++] = tokens[i];
        vkllm__kv_register(vkllm__forward_kv(s[i]->fw), s[i]->hist, s[i]->n_past);
    }
done:
    vkllm__free(fw);
    vkllm__free(pos);
    vkllm__free(logits);
    return st;
}

uint32_t vkllm_model_n_vocab(vkllm_model_t model) { return model ? model->desc->hp.n_vocab : 0; }

// --- profiling -----------------------------------------------------------------------------

vkllm_status vkllm_session_set_profile(vkllm_session_t s, int on) {
    if (!s) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_set_profile: NULL session");
    return vkllm__forward_set_profile(s->fw, on);
}

uint32_t vkllm_session_profile_count(vkllm_session_t s) {
    const struct vkllm__cmd *c = s ? vkllm__forward_last_cmd(s->fw) : NULL;
    return c ? vkllm__cmd_profile_count(c) : 0;
}

vkllm_status vkllm_session_profile_get(vkllm_session_t s, uint32_t i, struct vkllm_dispatch_profile *out) {
    const struct vkllm__cmd *c = s ? vkllm__forward_last_cmd(s->fw) : NULL;
    if (!c || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_session_profile_get: nothing ran");
    struct vkllm__dispatch_time t;
    vkllm_status st = vkllm__cmd_profile_get(c, i, &t);
    if (st) return st;
    struct vkllm__cost at;
    vkllm__cost_at(&t.cost, vkllm__forward_last_pos0(s->fw), &at);
    *out = (struct vkllm_dispatch_profile){t.label,
                                           vkllm__shader_blobs[t.shader].name,
                                           t.ns,
                                           at.bytes_read,
                                           at.bytes_written,
                                           at.weight_bytes,
                                           at.flops,
                                           t.barrier,
                                           {0}};
    size_t len = (size_t)snprintf(out->variant, sizeof out->variant, "%s wg=%u", out->kernel, t.n_spec ? t.spec[0] : 1);
    for (uint32_t j = 1; j < t.n_spec && len < sizeof out->variant; j++)
        len +=
            (size_t)snprintf(out->variant + len, sizeof out->variant - len, "%s%u", j == 1 ? " spec=" : ",", t.spec[j]);
    if (t.subgroup && len < sizeof out->variant)
        snprintf(out->variant + len, sizeof out->variant - len, " sg=%u", t.subgroup);
    return VKLLM_STATUS_OK;
}

uint32_t vkllm__session_pool_prefix(vkllm_session_t s, const int32_t *tokens, uint32_t n, int adopt) {
    uint32_t have = vkllm__forward_kv_lookup(s->fw, tokens, n, adopt);
    if (adopt) {
        memcpy(s->hist, tokens, sizeof *tokens * have);
        s->n_past = have;
        s->logits_rows = 0;
    }
    return have;
}

vkllm_status vkllm__session_reserve(vkllm_session_t s, uint32_t n) {
    if ((uint64_t)s->n_past + n > vkllm_session_n_ctx(s)) return VKLLM_STATUS_OK; /* CONTEXT_FULL comes later */
    return vkllm__forward_kv_reserve(s->fw, s->n_past, s->n_past + n);
}
