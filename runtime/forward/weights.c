/* weights.c - the model's tensors uploaded to the device in their GGUF encoding (or, on CPU
 * devices, the matrices repacked: see up_matrix). Layers are walked through the layer table
 * (model/tensors.h). */
#include <stddef.h>
#include <string.h>

#include "forward.h"
#include "types.h"

struct upload {
    struct vkllm__gpu *gpu;
    vkllm__progress_fn progress;
    void *user;
    uint64_t done, total;
    uint32_t n_expert_used;
    int exp_tb; /* experts repacked where they can be (exp_repacked) */
};

static void tick(struct upload *u, uint64_t bytes) {
    u->done += bytes;
    if (u->progress) u->progress(u->user, u->done, u->total);
}

/* A matrix (ne[1] rows of ne[0]) in its own encoding. Where the CPU devices' matvec applies
 * (ops_matvec_tb.c), a matrix only decode and prefill multiply with (use MV_ONLY) is uploaded in
 * its repacked layout instead, and one that is also an embedding table (use MV_EMBD, tied
 * embeddings) in both. */
enum { EMBD = 0, MV_ONLY = 1, MV_EMBD = 2 };
static vkllm_status up_matrix(struct upload *u, const struct vkllm__gguf_tensor *t, int use,
                              struct vkllm__dtensor *out) {
    uint64_t m = t->ne[1] * t->ne[2] * t->ne[3];
    vkllm_status st = VKLLM_STATUS_OK;
    if (use == MV_ONLY && vkllm__matvec_tb_bytes(u->gpu, t->type, t->ne[0], m)) {
        *out = (struct vkllm__dtensor){.type = t->type, .k = t->ne[0], .m = m};
        st = vkllm__row_size(t->type, t->ne[0], &out->row_bytes);
        enum vkllm__mem_use was = vkllm__gpu_set_mem_use(u->gpu, VKLLM__USE_REPACKED);
        if (!st) st = vkllm__dtensor_add_tb(u->gpu, out, t->data);
        vkllm__gpu_set_mem_use(u->gpu, was);
    } else { /* stacked experts split (where larger than one allocation) between experts */
        st = vkllm__dtensor_upload_grouped(u->gpu, t->type, t->ne[0], m, t->ne[2] > 1 ? t->ne[1] : 1, t->data, out);
        enum vkllm__mem_use was = vkllm__gpu_set_mem_use(u->gpu, VKLLM__USE_REPACKED);
        if (!st && use == MV_EMBD && (st = vkllm__dtensor_add_tb(u->gpu, out, t->data))) vkllm__dtensor_free(out);
        vkllm__gpu_set_mem_use(u->gpu, was);
    }
    if (st) {
        vkllm__err_prefix("tensor %.*s: ", (int)t->name.len, t->name.ptr);
        return st;
    }
    tick(u, (out->buf ? t->nbytes : 0) + (out->tb ? vkllm__buffer_size(out->tb) : 0));
    return VKLLM_STATUS_OK;
}

/* A vector (f32, checked by the model description). NULL tensor -> NULL buffer. */
static vkllm_status up_vector(struct upload *u, const struct vkllm__gguf_tensor *t, struct vkllm__buffer **out) {
    *out = NULL;
    if (!t) return VKLLM_STATUS_OK;
    vkllm_status st = vkllm__buffer_alloc(u->gpu, t->nbytes, VKLLM__MEM_DEVICE, out);
    if (!st) st = vkllm__buffer_upload(*out, 0, t->data, t->nbytes);
    if (st) {
        vkllm__err_prefix("tensor %.*s: ", (int)t->name.len, t->name.ptr);
        return st;
    }
    tick(u, t->nbytes);
    return VKLLM_STATUS_OK;
}

static uint64_t nbytes(const struct vkllm__gguf_tensor *t) { return t ? t->nbytes : 0; }

/* Device bytes of a matrix uploaded for `use` (see up_matrix): the texel copy, and the rows in the
 * file's or the 16-byte layout's size (Q6_K rows up to 14 bytes longer). */
static uint64_t mat_bytes(const struct vkllm__gpu *gpu, const struct vkllm__gguf_tensor *t, int use) {
    if (!t) return 0;
    uint64_t rows = t->ne[1] * t->ne[2] * t->ne[3],
             tb = use == EMBD ? 0 : vkllm__matvec_tb_bytes(gpu, t->type, t->ne[0], rows);
    uint64_t buf = VKLLM_MAX(t->nbytes, vkllm__dtensor_rp_row_bytes(gpu, t->type, t->ne[0]) * rows);
    return use == MV_ONLY && tb ? tb : buf + tb;
}
static uint64_t mv_bytes(const struct vkllm__gpu *gpu, const struct vkllm__gguf_tensor *t) {
    return mat_bytes(gpu, t, MV_ONLY);
}

/* Where each row of the layer table lives in struct vkllm__gpu_layer. */
static const size_t k_gpu_offset[VKLLM__LT_COUNT_] = {
#define VKLLM__GPU_OFF_(field, ...) offsetof(struct vkllm__gpu_layer, field),
    VKLLM__LAYER_TENSORS(VKLLM__GPU_OFF_)
#undef VKLLM__GPU_OFF_
};

static struct vkllm__dtensor *gpu_mat(struct vkllm__gpu_layer *G, size_t i) {
    return (struct vkllm__dtensor *)((char *)G + k_gpu_offset[i]);
}
static struct vkllm__buffer **gpu_vec(struct vkllm__gpu_layer *G, size_t i) {
    return (struct vkllm__buffer **)((char *)G + k_gpu_offset[i]);
}
static int is_mat(size_t i) { return vkllm__layer_tensors[i].kind != VKLLM__TENSOR_VEC; }
static int is_exp(size_t i) { return vkllm__layer_tensors[i].kind == VKLLM__TENSOR_EXP; }

/* Experts take the repacked layout alone where the CPU devices' expert kernel can read it
 * (vkllm__matvec_tb_id_fits) and exp_tb allows, else the plain one matvec_id reads. */
static int exp_repacked(const struct vkllm__gpu *gpu, const struct vkllm__gguf_tensor *t, int exp_tb) {
    return exp_tb && t && vkllm__matvec_tb_id_fits(gpu, t->type, t->ne[0], t->ne[1] * t->ne[2], (uint32_t)t->ne[2]);
}

/* Device bytes of the weights of layers [l0, l1), with the embeddings (embd) and the output (head)
 * (the repacked copies included). */
static uint64_t total_bytes(const struct vkllm__gpu *gpu, const struct vkllm__model_desc *d, int exp_tb, uint32_t l0,
                            uint32_t l1, int embd, int head) {
    const struct vkllm__model_weights *w = &d->w;
    uint64_t s = 0;
    if (embd && head)
        s = nbytes(w->output_norm) + (d->hp.tied_embd ? mat_bytes(gpu, w->token_embd, MV_EMBD)
                                                      : nbytes(w->token_embd) + mv_bytes(gpu, w->output));
    else if (embd) s = nbytes(w->token_embd);
    else if (head) s = nbytes(w->output_norm) + mv_bytes(gpu, w->output);
    for (uint32_t l = l0; l < l1; l++)
        for (size_t i = 0; i < VKLLM__LT_COUNT_; i++) {
            const struct vkllm__gguf_tensor *t = vkllm__layer_tensor(&w->layers[l], (enum vkllm__layer_tensor)i);
            s += is_mat(i) && (!is_exp(i) || exp_repacked(gpu, t, exp_tb)) ? mv_bytes(gpu, t) : nbytes(t);
        }
    return s;
}

/* Matrices a decode step multiplies with the same input, stacked into one buffer so that
 * forward.c multiplies each group in one dispatch (struct vkllm__gpu_stacked). */
#define MAX_PARTS 3
static const struct stack_spec {
    enum vkllm__layer_tensor part[MAX_PARTS];
    uint32_t n;
    size_t field; /* in struct vkllm__gpu_stacked */
} k_stacks[] = {
    {{VKLLM__LT_wq, VKLLM__LT_wk, VKLLM__LT_wv}, 3, offsetof(struct vkllm__gpu_stacked, qkv)},
    {{VKLLM__LT_w_gate, VKLLM__LT_w_up}, 2, offsetof(struct vkllm__gpu_stacked, gate_up)},
};

static uint64_t rows_of(const struct vkllm__gguf_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

/* Whether the parts can be stacked: the tuning's fuse is on, all are present with one type and
 * row length, none is repacked (CPU devices' texel matvec keeps its own layout) or has longer rows in
 * the 16-byte layout, every part
 * starts at an offset a storage binding may take and all fit one allocation. */
static int stackable(const struct vkllm__gpu *gpu, const struct vkllm__gguf_tensor *const *t, uint32_t n) {
    if (!vkllm__gpu_tuning(gpu)->fuse) return 0;
    uint64_t align = vkllm__gpu_storage_align(gpu), off = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!t[i] || t[i]->type != t[0]->type || t[i]->ne[0] != t[0]->ne[0] || off % align) return 0;
        if (vkllm__matvec_tb_bytes(gpu, t[i]->type, t[i]->ne[0], rows_of(t[i]))) return 0;
        /* rows that the 16-byte layout lengthens are not the file's: each its own buffer */
        if (vkllm__dtensor_rp_row_bytes(gpu, t[i]->type, t[i]->ne[0]) > t[i]->nbytes / rows_of(t[i])) return 0;
        off += t[i]->nbytes;
    }
    return off + 16 <= vkllm__gpu_max_alloc(gpu);
}

/* The parts uploaded one after another into whole's buffer (in the 16-byte layout where the device
 * takes it: stackable parts keep the file's row bytes); each part a view of its rows. */
static vkllm_status up_stack(struct upload *u, const struct vkllm__gguf_tensor *const *t, uint32_t n,
                             struct vkllm__dtensor *whole, struct vkllm__dtensor *const *parts) {
    uint64_t m = 0, off = 0, r0 = 0;
    for (uint32_t i = 0; i < n; i++) m += rows_of(t[i]);
    vkllm_status st = vkllm__dtensor_upload(u->gpu, t[0]->type, t[0]->ne[0], m, NULL, whole);
    for (uint32_t i = 0; !st && i < n; i++) {
        if ((st = vkllm__dtensor_put_rows(u->gpu, whole, r0, rows_of(t[i]), t[i]->data))) {
            vkllm__err_prefix("tensor %.*s: ", (int)t[i]->name.len, t[i]->name.ptr);
            break;
        }
        *parts[i] = *whole;
        parts[i]->m = rows_of(t[i]);
        parts[i]->offset = off;
        parts[i]->view = 1;
        off += t[i]->nbytes, r0 += rows_of(t[i]);
        tick(u, t[i]->nbytes);
    }
    return st;
}

/* Layer l's tensors up: matrices for the products (stacked where k_stacks allows), vectors as
 * they are. */
static vkllm_status up_layer(struct upload *u, const struct vkllm__layer_weights *L, struct vkllm__gpu_layer *G,
                             struct vkllm__gpu_stacked *S, uint64_t *matvec_bytes) {
    int done[VKLLM__LT_COUNT_] = {0};
    for (size_t s = 0; s < VKLLM_ARRAY_LEN(k_stacks); s++) {
        const struct stack_spec *sp = &k_stacks[s];
        const struct vkllm__gguf_tensor *t[MAX_PARTS] = {0};
        struct vkllm__dtensor *parts[MAX_PARTS] = {0};
        for (uint32_t i = 0; i < sp->n; i++)
            t[i] = vkllm__layer_tensor(L, sp->part[i]), parts[i] = gpu_mat(G, sp->part[i]);
        if (!stackable(u->gpu, t, sp->n)) continue;
        vkllm_status st = up_stack(u, t, sp->n, (struct vkllm__dtensor *)((char *)S + sp->field), parts);
        if (st) return st;
        for (uint32_t i = 0; i < sp->n; i++) done[sp->part[i]] = 1, *matvec_bytes += t[i]->nbytes;
    }
    for (size_t i = 0; i < VKLLM__LT_COUNT_; i++) {
        const struct vkllm__gguf_tensor *t = vkllm__layer_tensor(L, (enum vkllm__layer_tensor)i);
        vkllm_status st = VKLLM_STATUS_OK;
        if (done[i]) continue;
        if (!is_mat(i)) st = up_vector(u, t, gpu_vec(G, i));
        else if (t && is_exp(i)) { /* experts: a token reads n_expert_used of them */
            int tb = exp_repacked(u->gpu, t, u->exp_tb);
            st = up_matrix(u, t, tb ? MV_ONLY : EMBD, gpu_mat(G, i));
            *matvec_bytes += (tb ? mv_bytes(u->gpu, t) : t->nbytes) / t->ne[2] * u->n_expert_used;
        } else if (t) st = up_matrix(u, t, MV_ONLY, gpu_mat(G, i)), *matvec_bytes += mv_bytes(u->gpu, t); /* as read */
        if (st) return st;
    }
    return VKLLM_STATUS_OK;
}

/* RoPE's frequencies freqs (n_rot/2,) on the device as the shaders take them (vkllm__rope_turns;
 * one pair of slack: n_rot may be 0). */
static vkllm_status up_rope(struct vkllm__gpu *gpu, const float *freqs, uint32_t n_rot, struct vkllm__buffer **out) {
    uint32_t n = n_rot / 2;
    uint32_t *turns = vkllm__malloc(sizeof(uint32_t) * 2 * (n + 1));
    if (!turns) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm__rope_turns(freqs, n_rot, turns);
    vkllm_status st = vkllm__buffer_alloc(gpu, sizeof(uint32_t) * 2 * (n + 1), VKLLM__MEM_DEVICE, out);
    if (!st) st = vkllm__buffer_upload(*out, 0, turns, sizeof(uint32_t) * 2 * n);
    vkllm__free(turns);
    return st;
}

static vkllm_status model_load(struct vkllm__gpu *gpu, const struct vkllm__model_desc *desc, uint32_t l0, uint32_t l1,
                               vkllm__progress_fn progress, void *user, struct vkllm__gpu_model **out);

vkllm_status vkllm__gpu_model_load(struct vkllm__gpu *gpu, const struct vkllm__model_desc *desc,
                                   vkllm__progress_fn progress, void *user, struct vkllm__gpu_model **out) {
    return vkllm__gpu_model_load_range(gpu, desc, 0, desc->hp.n_layer, progress, user, out);
}

/* The weights' buffers are accounted as such, their blocks sized to what they take (no last block
 * mostly empty), and their uploads overlap one another through the staging buffer, which is given
 * back when they are done. */
vkllm_status vkllm__gpu_model_load_range(struct vkllm__gpu *gpu, const struct vkllm__model_desc *desc, uint32_t l0,
                                         uint32_t l1, vkllm__progress_fn progress, void *user,
                                         struct vkllm__gpu_model **out) {
    if (l0 >= l1 || l1 > desc->hp.n_layer)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "layers %u .. %u of a model of %u", l0, l1, desc->hp.n_layer);
    enum vkllm__mem_use was = vkllm__gpu_set_mem_use(gpu, VKLLM__USE_WEIGHTS);
    vkllm__gpu_upload_begin(gpu);
    vkllm_status st = model_load(gpu, desc, l0, l1, progress, user, out);
    vkllm_status se = vkllm__gpu_upload_end(gpu);
    vkllm__gpu_expect(gpu, 0);
    vkllm__gpu_set_mem_use(gpu, was);
    if (!st && se) {
        vkllm__gpu_model_free(*out);
        *out = NULL;
        st = se;
    }
    return st;
}

static vkllm_status model_load(struct vkllm__gpu *gpu, const struct vkllm__model_desc *desc, uint32_t l0, uint32_t l1,
                               vkllm__progress_fn progress, void *user, struct vkllm__gpu_model **out) {
    const struct vkllm__hparams *hp = &desc->hp;
    const struct vkllm__model_weights *w = &desc->w;
    const int embd = l0 == 0, head = l1 == hp->n_layer;
    struct upload u = {gpu, progress, user, 0, total_bytes(gpu, desc, 1, l0, l1, embd, head), hp->n_expert_used, 1};
    uint64_t budget = vkllm__gpu_memory_budget(gpu), used = vkllm__gpu_memory_allocated(gpu);
    uint64_t plain = total_bytes(gpu, desc, 0, l0, l1, embd, head);
    if (plain < u.total && (u.total > budget || used + u.total > budget) && plain <= budget && used + plain <= budget) {
        /* the repacked experts (int8 or nibbles plus f32 scales: larger than most GGUF encodings)
         * would not fit: the plain ones, slower on CPU devices */
        vkllm__log(VKLLM_LOG_INFO,
                   "experts in their GGUF layout: repacked they would need %s of device memory, "
                   "%s more",
                   vkllm__bytes(u.total).s, vkllm__bytes(u.total - plain).s);
        u.total = plain, u.exp_tb = 0;
    }
    if (u.total > budget || used + u.total > budget)
        return vkllm__err(VKLLM_STATUS_DEVICE_OOM, "the weights need %s of device memory; %s of %s are free",
                          vkllm__bytes(u.total).s, vkllm__bytes(budget - VKLLM_MIN(used, budget)).s,
                          vkllm__bytes(budget).s);
    struct vkllm__gpu_model *m = vkllm__calloc(1, sizeof *m);
    if (!m) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    /* every tensor rounded up to the buffer alignment, and a few small vectors (rope, scales) */
    vkllm__gpu_expect(gpu, u.total + ((uint64_t)hp->n_layer * VKLLM__LT_COUNT_ + 16) * 512 + (64u << 10));
    m->gpu = gpu;
    m->desc = desc;
    m->l0 = l0, m->l1 = l1, m->embd = embd, m->head = head;
    vkllm_status st = VKLLM_STATUS_OK;
    m->layers = vkllm__calloc(hp->n_layer, sizeof *m->layers);
    m->stacked = vkllm__calloc(hp->n_layer, sizeof *m->stacked);
    float *freqs = vkllm__malloc(sizeof(float) * (hp->rope.n_rot / 2 + 1));
    if (!m->layers || !m->stacked || !freqs) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    if (embd) VKLLM_TRY(st, up_matrix(&u, w->token_embd, hp->tied_embd && head ? MV_EMBD : EMBD, &m->token_embd), fail);
    if (head && embd && hp->tied_embd) m->output = m->token_embd;
    else if (head)
        VKLLM_TRY(st, up_matrix(&u, w->output, MV_ONLY, &m->output), fail); /* w->output: token_embd when tied */
    if (head) VKLLM_TRY(st, up_vector(&u, w->output_norm, &m->output_norm), fail);
    for (uint32_t l = l0; l < l1; l++)
        VKLLM_TRY(st, up_layer(&u, &w->layers[l], &m->layers[l], &m->stacked[l], &m->matvec_bytes_per_token), fail);
    if (head) m->matvec_bytes_per_token += mv_bytes(gpu, w->output); /* in the layout decode reads (CPU: repacked) */
    vkllm__rope_freqs(hp, hp->rope.orig_ctx, freqs);
    VKLLM_TRY(st, up_rope(gpu, freqs, hp->rope.n_rot, &m->rope), fail);
    if (hp->rope.freq_factors_long) { /* phi3: a context past orig_ctx takes the long factors */
        vkllm__rope_freqs(hp, UINT32_MAX, freqs);
        VKLLM_TRY(st, up_rope(gpu, freqs, hp->rope.n_rot, &m->rope_long), fail);
    }
    if (hp->swa) { /* gemma: the sliding-window layers' own RoPE */
        vkllm__rope_freqs_swa(hp, freqs);
        VKLLM_TRY(st, up_rope(gpu, freqs, hp->rope.n_rot, &m->rope_swa), fail);
    }
    if (hp->embd_scale != 1.0f || hp->resid_scale != 1.0f || hp->logit_scale != 1.0f || hp->final_softcap > 0.0f) {
        /* 256 bytes apart: each is bound on its own, and a binding's offset must be a multiple of
         * minStorageBufferOffsetAlignment (at most 256 by the spec) */
        float sc[4 * 64] = {0};
        sc[0] = hp->embd_scale, sc[64] = hp->resid_scale, sc[128] = 1.0f / hp->logit_scale, sc[192] = hp->final_softcap;
        VKLLM_TRY(st, vkllm__buffer_alloc(gpu, sizeof sc, VKLLM__MEM_DEVICE, &m->scales), fail);
        VKLLM_TRY(st, vkllm__buffer_upload(m->scales, 0, sc, sizeof sc), fail);
    }
    m->weight_bytes = u.total;
    vkllm__free(freqs);
    *out = m;
    return VKLLM_STATUS_OK;
fail:
    vkllm__free(freqs);
    vkllm__gpu_model_free(m);
    return st;
}

void vkllm__gpu_model_free(struct vkllm__gpu_model *m) {
    if (!m) return;
    vkllm__gpu_model_free(m->next);
    if (m->layers) {
        for (uint32_t l = 0; l < m->desc->hp.n_layer; l++)
            for (size_t i = 0; i < VKLLM__LT_COUNT_; i++) {
                if (is_mat(i)) vkllm__dtensor_free(gpu_mat(&m->layers[l], i));
                else vkllm__buffer_free(*gpu_vec(&m->layers[l], i));
            }
        vkllm__free(m->layers);
    }
    if (m->stacked) {
        for (uint32_t l = 0; l < m->desc->hp.n_layer; l++) {
            vkllm__dtensor_free(&m->stacked[l].qkv);
            vkllm__dtensor_free(&m->stacked[l].gate_up);
        }
        vkllm__free(m->stacked);
    }
    if (m->output.buf != m->token_embd.buf || m->output.tb != m->token_embd.tb) /* not token_embd itself (tied) */
        vkllm__dtensor_free(&m->output);
    vkllm__dtensor_free(&m->token_embd);
    vkllm__buffer_free(m->output_norm);
    vkllm__buffer_free(m->rope);
    vkllm__buffer_free(m->rope_long);
    vkllm__buffer_free(m->rope_swa);
    vkllm__buffer_free(m->scales);
    vkllm__free(m);
}
