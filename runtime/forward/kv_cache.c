/* kv_cache.c - K and V on the device, f16 or q8_0 (int8 quants, then an f32 scale per 32 values:
 * 1.125 bytes a value).
 *
 * The layers that attend to the whole context keep their rows in a pool of blocks of
 * VKLLM__KV_BLOCK positions (one buffer per layer for K and one for V, every block at the same
 * rows in each); a sequence holds a block table and takes a block when its tokens reach it. A
 * block is reference-counted: sequences that share a prompt prefix share its blocks, and a block
 * that is written while another sequence holds it is copied first. Full blocks are keyed by their
 * tokens and all tokens before them: a released block stays in the pool, found again by its key,
 * until the pool needs it (least recently released first). A keyed block is never rewritten in
 * place: a sequence that writes into one it holds (its own prompt reused up to the middle of a
 * block) writes a copy, so the tokens after it stay findable for the next prompt that has them.
 *
 * A sliding-window layer keeps its own ring per sequence (window + n_ubatch rows, position p in
 * row p % rows), outside the pool. Sized before anything is allocated, so a cache that does not
 * fit is refused with the numbers.
 *
 * A layer's K (V) rows larger than one binding (maxStorageBufferRange: 128 MiB on lavapipe, 256 MiB
 * on Mali and Adreno) are split by kv heads into parts, each its own buffer of (rows, part_heads,
 * head_dim): attention runs each kv head on its own, so a part is a whole cache of fewer heads
 * (vkllm__op_attention's chunk_heads), the same arithmetic, the same results. */
#include <stdio.h>
#include <string.h>

#include "kv_cache.h"

struct vkllm__kv_pool {
    struct vkllm__gpu *gpu;
    uint32_t n_layer, width, n_blocks, users;
    uint32_t n_part, part_heads; /* each layer's K (V) in n_part buffers of part_heads kv heads */
    uint8_t k_q8, v_q8;
    uint8_t *paged;                /* per layer: 1 its rows are in the pool */
    struct vkllm__buffer **k, **v; /* [l * n_part + i]: paged layer l's part i, n_blocks * VKLLM__KV_BLOCK rows */
    uint32_t *ref;                 /* per block: block tables holding it */
    uint32_t *free_list, n_free;   /* unheld blocks with nothing cached (a stack) */
    uint64_t *key;                 /* per block: prefix key of a cached full block (0: none) */
    int32_t *tokens;               /* per block: its VKLLM__KV_BLOCK tokens, while keyed */
    uint64_t *released;            /* per block: tick of its last release (least recent evicted first) */
    uint32_t *bucket, n_bucket;    /* key -> first block + 1 of its chain (0: empty) */
    uint32_t *chain;               /* per block: next block + 1 in its bucket */
    uint32_t n_cached;             /* unheld keyed blocks (reusable until evicted) */
    uint64_t tick, block_bytes, bytes;
    uint64_t queried, hits, evicted;     /* prefix lookups: tokens asked for, tokens found; blocks evicted */
    uint32_t gens_running, gens_waiting; /* generations on the pool, and those preempted (generate.c) */
    uint64_t preempted;                  /* preemptions so far */
    vkllm_kv_event_fn ev_fn;             /* what happens to the cache, told (vkllm__kv_pool_set_events) */
    void *ev_user;
};

/* Tell the events' listener, if any. */
static void tell(const struct vkllm__kv_pool *p, enum vkllm_kv_event_type type, uint64_t key, uint64_t parent,
                 const int32_t *tokens) {
    if (!p->ev_fn) return;
    struct vkllm_kv_event ev = {.type = type, .key = key, .parent = parent, .tokens = tokens};
    if (tokens) ev.n_tokens = VKLLM__KV_BLOCK;
    p->ev_fn(&ev, p->ev_user);
}

void vkllm__kv_pool_set_events(struct vkllm__kv_pool *p, vkllm_kv_event_fn fn, void *user_data) {
    p->ev_fn = fn;
    p->ev_user = fn ? user_data : NULL;
}

uint32_t vkllm__kv_layer_rows(const struct vkllm__hparams *hp, uint32_t l, uint32_t n_ctx, uint32_t n_ubatch) {
    uint32_t w = vkllm__layer_window(hp, l);
    /* window + n - 1 rows let a batch of n attend; one more lets a batch of n_ubatch be evaluated
     * again from the same position (truncating back to where it started, as benchmarks do) */
    uint64_t ring = (uint64_t)w + VKLLM_MAX(n_ubatch, 1u);
    return w && ring < n_ctx ? (uint32_t)ring : n_ctx;
}

static uint64_t row_bytes(const struct vkllm__hparams *hp, int k_q8, int v_q8) {
    return vkllm__kv_row_bytes(hp->n_embd_kv, k_q8) + vkllm__kv_row_bytes(hp->n_embd_kv, v_q8);
}

uint64_t vkllm__kv_block_bytes(const struct vkllm__hparams *hp, int k_q8, int v_q8) {
    uint64_t layers = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++) layers += vkllm__layer_window(hp, l) == 0;
    return layers * VKLLM__KV_BLOCK * row_bytes(hp, k_q8, v_q8);
}

static uint64_t ring_bytes_of(const struct vkllm__hparams *hp, uint32_t n_ctx, uint32_t n_ubatch, int k_q8, int v_q8) {
    uint64_t rows = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++)
        if (vkllm__layer_window(hp, l)) rows += vkllm__kv_layer_rows(hp, l, n_ctx, n_ubatch);
    return rows * row_bytes(hp, k_q8, v_q8);
}

/* Bytes one part may hold: one binding, one allocation. */
static uint64_t part_limit(const struct vkllm__gpu *gpu) {
    return VKLLM_MIN(vkllm__gpu_max_binding(gpu), vkllm__gpu_max_alloc(gpu));
}

/* Can a layer's K and V be split into parts of hc kv heads: hc divides n_head_kv, at most
 * VKLLM__KV_MAX_PARTS parts, q8_0 rows of whole 32-value blocks. */
static int part_ok(const struct vkllm__hparams *hp, uint32_t hc, int k_q8, int v_q8) {
    return hp->n_head_kv % hc == 0 && hp->n_head_kv / hc <= VKLLM__KV_MAX_PARTS &&
           (!(k_q8 || v_q8) || hc * hp->head_dim % 32 == 0);
}

/* Bytes of one row of a part of hc kv heads, K or V whichever is larger. */
static uint64_t part_row(const struct vkllm__hparams *hp, uint32_t hc, int k_q8, int v_q8) {
    return VKLLM_MAX(vkllm__kv_row_bytes(hc * hp->head_dim, k_q8), vkllm__kv_row_bytes(hc * hp->head_dim, v_q8));
}

/* Kv heads per part for rows of the model's K and V in one binding (and allocation) each:
 * n_head_kv (one part) when they fit, else the largest hc that part_ok allows and fits; 0 when
 * none does. */
static uint32_t part_heads_for(const struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, uint64_t rows, int k_q8,
                               int v_q8) {
    long forced = VKLLM_MIN(vkllm__gpu_tuning(gpu)->kv_parts, (long)hp->n_head_kv); /* tests */
    for (uint32_t hc = hp->n_head_kv; hc >= 1; hc--)
        if (part_ok(hp, hc, k_q8, v_q8) && (forced <= 0 || hp->n_head_kv / hc >= (uint32_t)forced) &&
            rows * part_row(hp, hc, k_q8, v_q8) <= part_limit(gpu))
            return hc;
    return 0;
}

static vkllm_status too_large(const struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, const char *what,
                              uint64_t rows, int k_q8, int v_q8) {
    uint32_t hc = 1; /* the smallest part allowed */
    while (hc < hp->n_head_kv && !part_ok(hp, hc, k_q8, v_q8)) hc++;
    const uint64_t row_max = part_row(hp, hp->n_head_kv, k_q8, v_q8), part = part_row(hp, hc, k_q8, v_q8);
    return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                      "%s takes %s per layer; this device binds (or allocates) %s at once, and split by kv "
                      "heads (at most %u parts) it still does not fit: at most %llu positions",
                      what, vkllm__bytes(rows * row_max).s, vkllm__bytes(part_limit(gpu)).s, VKLLM__KV_MAX_PARTS,
                      (unsigned long long)(part_limit(gpu) / part / VKLLM__KV_BLOCK * VKLLM__KV_BLOCK));
}

/* Copy rows srow .. srow+n-1 of s (a part of srows rows of w values) to rows drow.. of d (drows
 * rows): f16 rows, or q8_0 quants and, after all the quants, the scales. */
vkllm_status vkllm__kv_copy_rows(struct vkllm__cmd *c, struct vkllm__buffer *d, uint64_t drows, uint64_t drow,
                                 struct vkllm__buffer *s, uint64_t srows, uint64_t srow, uint64_t n, uint32_t w,
                                 int q8) {
    if (!q8) return vkllm__cmd_copy(c, d, drow * w * 2, s, srow * w * 2, n * w * 2);
    vkllm_status st = vkllm__cmd_copy(c, d, drow * w, s, srow * w, n * w);
    return st ? st : vkllm__cmd_copy(c, d, drows * w + drow * w / 8, s, srows * w + srow * w / 8, n * w / 8);
}

uint32_t vkllm__kv_blocks_for(uint32_t n_pos) {
    return (uint32_t)(((uint64_t)n_pos + VKLLM__KV_BLOCK - 1) / VKLLM__KV_BLOCK);
}

/* --- the pool ------------------------------------------------------------------------------- */

static vkllm_status check_types(const struct vkllm__hparams *hp, int k_q8, int v_q8) {
    if ((k_q8 || v_q8) && (hp->n_embd_kv % 32 || hp->head_dim % 4))
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "a q8_0 KV cache needs rows of a multiple of 32 values and a head "
                          "size that is a multiple of 4 (this model: %u kv heads x %u): use f16",
                          hp->n_head_kv, hp->head_dim);
    return VKLLM_STATUS_OK;
}

static vkllm_status check_room(struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, uint64_t need, const char *what,
                               int k_q8, int v_q8) {
    uint64_t budget = vkllm__gpu_memory_budget(gpu), used = vkllm__gpu_memory_allocated(gpu);
    uint64_t avail = budget > used ? budget - used : 0;
    if (need <= avail) return VKLLM_STATUS_OK;
    return vkllm__err(VKLLM_STATUS_DEVICE_OOM,
                      "%s needs %s (%u layers x K and V of %u values, %s/%s, per position); %s of device "
                      "memory are free: use a smaller context (-c) or KV pool (--kv-cache-mb)%s",
                      what, vkllm__bytes(need).s, hp->n_layer, hp->n_embd_kv, k_q8 ? "q8_0" : "f16",
                      v_q8 ? "q8_0" : "f16", vkllm__bytes(avail).s,
                      k_q8 && v_q8 ? "" : " or a q8_0 cache (--cache-type-k/v q8_0)");
}

vkllm_status vkllm__kv_pool_init(struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, uint32_t n_blocks, int k_q8,
                                 int v_q8, struct vkllm__kv_pool **out) {
    vkllm_status st = check_types(hp, k_q8, v_q8);
    if (st) return st;
    if (n_blocks == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "a KV pool of 0 blocks");
    if ((uint64_t)n_blocks * VKLLM__KV_BLOCK > UINT32_MAX / 2)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "a KV pool of %u blocks: too many positions", n_blocks);
    const uint64_t rows = (uint64_t)n_blocks * VKLLM__KV_BLOCK;
    uint64_t bb = vkllm__kv_block_bytes(hp, k_q8, v_q8);
    char what[96];
    snprintf(what, sizeof what, "a KV cache pool of %llu positions", (unsigned long long)rows);
    if ((st = check_room(gpu, hp, bb * n_blocks, what, k_q8, v_q8))) return st;
    uint32_t hc = part_heads_for(gpu, hp, rows, k_q8, v_q8);
    if (!hc) return too_large(gpu, hp, what, rows, k_q8, v_q8);
    struct vkllm__kv_pool *p = vkllm__calloc(1, sizeof *p);
    if (!p) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    uint64_t outer = 0; /* a session's hint this pool is allocated within (below) */
    *p = (struct vkllm__kv_pool){.gpu = gpu,
                                 .n_layer = hp->n_layer,
                                 .width = hp->n_embd_kv,
                                 .n_blocks = n_blocks,
                                 .n_part = hp->n_head_kv / hc,
                                 .part_heads = hc,
                                 .users = 1,
                                 .k_q8 = (uint8_t) !!k_q8,
                                 .v_q8 = (uint8_t) !!v_q8,
                                 .block_bytes = bb};
    p->n_bucket = 1;
    while (p->n_bucket < n_blocks) p->n_bucket *= 2;
    p->paged = vkllm__calloc(hp->n_layer, 1);
    p->k = vkllm__calloc((size_t)hp->n_layer * p->n_part, sizeof *p->k);
    p->v = vkllm__calloc((size_t)hp->n_layer * p->n_part, sizeof *p->v);
    p->ref = vkllm__calloc(n_blocks, sizeof *p->ref);
    p->free_list = vkllm__calloc(n_blocks, sizeof *p->free_list);
    p->key = vkllm__calloc(n_blocks, sizeof *p->key);
    p->tokens = vkllm__calloc((size_t)n_blocks * VKLLM__KV_BLOCK, sizeof *p->tokens);
    p->released = vkllm__calloc(n_blocks, sizeof *p->released);
    p->bucket = vkllm__calloc(p->n_bucket, sizeof *p->bucket);
    p->chain = vkllm__calloc(n_blocks, sizeof *p->chain);
    if (!p->paged || !p->k || !p->v || !p->ref || !p->free_list || !p->key || !p->tokens || !p->released ||
        !p->bucket || !p->chain) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    for (uint32_t b = 0; b < n_blocks; b++) p->free_list[b] = n_blocks - 1 - b; /* block 0 on top */
    p->n_free = n_blocks;
    /* A pool of its own (a server's): its blocks sized to it, not to what the weights took (a
     * 4 MiB pool got a 179 MiB block). Inside a session's hint (forward_init), that hint. */
    outer = vkllm__gpu_expect(gpu, 0);
    vkllm__gpu_expect(gpu, outer ? outer : bb * n_blocks + (uint64_t)hp->n_layer * p->n_part * 2 * 512);
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        if (vkllm__layer_window(hp, l)) continue;
        p->paged[l] = 1;
        for (uint32_t i = l * p->n_part; i < (l + 1) * p->n_part; i++) {
            VKLLM_TRY(st,
                      vkllm__buffer_alloc(gpu, rows * vkllm__kv_row_bytes(hc * hp->head_dim, k_q8), VKLLM__MEM_DEVICE,
                                          &p->k[i]),
                      fail);
            VKLLM_TRY(st,
                      vkllm__buffer_alloc(gpu, rows * vkllm__kv_row_bytes(hc * hp->head_dim, v_q8), VKLLM__MEM_DEVICE,
                                          &p->v[i]),
                      fail);
            VKLLM_TRY(st, vkllm__buffer_fill_zero(p->k[i]), fail);
            VKLLM_TRY(st, vkllm__buffer_fill_zero(p->v[i]), fail);
        }
    }
    if (!outer) vkllm__gpu_expect(gpu, 0);
    p->bytes = bb * n_blocks;
    if (p->n_part > 1)
        vkllm__log(VKLLM_LOG_INFO,
                   "KV cache pool of %llu positions: each layer's K and V split by kv heads into %u "
                   "buffers of %u kv head%s (one binding or allocation holds %s)",
                   (unsigned long long)rows, p->n_part, hc, hc == 1 ? "" : "s", vkllm__bytes(part_limit(gpu)).s);
    *out = p;
    return VKLLM_STATUS_OK;
fail:
    if (!outer) vkllm__gpu_expect(gpu, 0);
    vkllm__kv_pool_release(p);
    return st;
}

void vkllm__kv_pool_retain(struct vkllm__kv_pool *p) { p->users++; }

void vkllm__kv_pool_release(struct vkllm__kv_pool *p) {
    if (!p || --p->users) return;
    tell(p, VKLLM_KV_EVENT_CLEARED, 0, 0, NULL); /* its cache goes with it */
    for (uint32_t i = 0; i < p->n_layer * p->n_part; i++) {
        if (p->k) vkllm__buffer_free(p->k[i]);
        if (p->v) vkllm__buffer_free(p->v[i]);
    }
    void *arrays[] = {p->paged, p->k, p->v, p->ref, p->free_list, p->key, p->tokens, p->released, p->bucket, p->chain};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(arrays); i++) vkllm__free(arrays[i]);
    vkllm__free(p);
}

void vkllm__kv_pool_get_stats(const struct vkllm__kv_pool *p, struct vkllm__kv_pool_stats *out) {
    *out = (struct vkllm__kv_pool_stats){.n_blocks = p->n_blocks,
                                         .n_free = p->n_free,
                                         .n_cached = p->n_cached,
                                         .n_held = p->n_blocks - p->n_free - p->n_cached,
                                         .block_bytes = p->block_bytes,
                                         .bytes = p->bytes,
                                         .queried_tokens = p->queried,
                                         .hit_tokens = p->hits,
                                         .evicted_blocks = p->evicted};
}

static int pool_matches(const struct vkllm__kv_pool *p, const struct vkllm__hparams *hp, int k_q8, int v_q8) {
    return p->n_layer == hp->n_layer && p->width == hp->n_embd_kv && p->k_q8 == !!k_q8 && p->v_q8 == !!v_q8;
}

static uint32_t bucket_of(const struct vkllm__kv_pool *p, uint64_t key) {
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (p->n_bucket - 1);
}

/* The key of a block of tokens after the blocks keyed parent (0 for the first): FNV-1a over the
 * parent key and the tokens; never 0. */
static uint64_t block_key(uint64_t parent, const int32_t *tokens) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 8; i++) h = (h ^ ((parent >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    for (uint32_t t = 0; t < VKLLM__KV_BLOCK; t++)
        for (int i = 0; i < 4; i++) h = (h ^ (((uint32_t)tokens[t] >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    return h ? h : 1;
}

/* The cached block with this key and these tokens, or UINT32_MAX. */
static uint32_t find_block(const struct vkllm__kv_pool *p, uint64_t key, const int32_t *tokens) {
    for (uint32_t b1 = p->bucket[bucket_of(p, key)]; b1; b1 = p->chain[b1 - 1]) {
        uint32_t b = b1 - 1;
        if (p->key[b] == key &&
            !memcmp(p->tokens + (size_t)b * VKLLM__KV_BLOCK, tokens, VKLLM__KV_BLOCK * sizeof *tokens))
            return b;
    }
    return UINT32_MAX;
}

/* Block b no longer findable (evicted, or about to be rewritten). */
static void unkey(struct vkllm__kv_pool *p, uint32_t b) {
    if (!p->key[b]) return;
    tell(p, VKLLM_KV_EVENT_REMOVED, p->key[b], 0, NULL);
    uint32_t *link = &p->bucket[bucket_of(p, p->key[b])];
    while (*link && *link - 1 != b) link = &p->chain[*link - 1];
    if (*link) *link = p->chain[b];
    p->chain[b] = 0;
    p->key[b] = 0;
    if (!p->ref[b]) p->n_cached--, p->free_list[p->n_free++] = b;
}

/* A block for a new holder: a free one, else the least recently released cached one (its key
 * dropped). UINT32_MAX when every block is held. */
static uint32_t take_block(struct vkllm__kv_pool *p) {
    if (!p->n_free && p->n_cached) {
        uint32_t best = UINT32_MAX;
        for (uint32_t b = 0; b < p->n_blocks; b++)
            if (!p->ref[b] && p->key[b] && (best == UINT32_MAX || p->released[b] < p->released[best])) best = b;
        if (best != UINT32_MAX) unkey(p, best), p->evicted++; /* now on the free list */
    }
    if (!p->n_free) return UINT32_MAX;
    uint32_t b = p->free_list[--p->n_free];
    p->ref[b] = 1;
    return b;
}

static void hold_block(struct vkllm__kv_pool *p, uint32_t b) {
    if (!p->ref[b]++ && p->key[b]) p->n_cached--;
}

static void drop_block(struct vkllm__kv_pool *p, uint32_t b) {
    if (--p->ref[b]) return;
    p->released[b] = ++p->tick;
    if (p->key[b]) p->n_cached++;
    else p->free_list[p->n_free++] = b;
}

/* --- a sequence's cache ---------------------------------------------------------------------- */

vkllm_status vkllm__kv_cache_init(struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, uint32_t n_ctx,
                                  uint32_t n_ubatch, int k_q8, int v_q8, struct vkllm__kv_pool *pool,
                                  struct vkllm__kv_cache *out) {
    struct vkllm__kv_cache kv = {.n_layer = hp->n_layer,
                                 .n_ctx = n_ctx,
                                 .width = hp->n_embd_kv,
                                 .k_q8 = (uint8_t) !!k_q8,
                                 .v_q8 = (uint8_t) !!v_q8};
    vkllm_status st = check_types(hp, k_q8, v_q8);
    if (st) return st;
    if (n_ctx == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "context of 0 positions");
    if (pool && !pool_matches(pool, hp, k_q8, v_q8))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "the KV pool was made for another model or other K/V types");
    uint64_t ring_bytes = ring_bytes_of(hp, n_ctx, n_ubatch, k_q8, v_q8);
    char what[96];
    snprintf(what, sizeof what, "a KV cache of %u positions", n_ctx);
    if ((st = check_room(gpu, hp,
                         ring_bytes + (pool ? 0 : vkllm__kv_blocks_for(n_ctx) * vkllm__kv_block_bytes(hp, k_q8, v_q8)),
                         what, k_q8, v_q8)))
        return st;
    /* the parts: the pool's (its rows; a pool of our own holds at least n_ctx), which every ring must fit */
    uint32_t hc = pool ? pool->part_heads
                       : part_heads_for(gpu, hp, (uint64_t)vkllm__kv_blocks_for(n_ctx) * VKLLM__KV_BLOCK, k_q8, v_q8);
    if (!hc) return too_large(gpu, hp, what, (uint64_t)vkllm__kv_blocks_for(n_ctx) * VKLLM__KV_BLOCK, k_q8, v_q8);
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        uint64_t r = vkllm__layer_window(hp, l) ? vkllm__kv_layer_rows(hp, l, n_ctx, n_ubatch) : 0;
        if (r * part_row(hp, hc, k_q8, v_q8) > part_limit(gpu))
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                              "layer %u's sliding-window ring of %llu positions does not fit "
                              "one binding in the KV pool's parts of %u kv heads: a smaller context, or a larger pool",
                              l, (unsigned long long)r, hc);
    }
    kv.n_part = hp->n_head_kv / hc, kv.part_heads = hc;
    kv.max_blocks = vkllm__kv_blocks_for(n_ctx);
    kv.k = vkllm__calloc((size_t)hp->n_layer * kv.n_part, sizeof *kv.k);
    kv.v = vkllm__calloc((size_t)hp->n_layer * kv.n_part, sizeof *kv.v);
    kv.rows = vkllm__calloc(hp->n_layer, sizeof *kv.rows);
    kv.table = vkllm__calloc(kv.max_blocks, sizeof *kv.table);
    kv.keys = vkllm__calloc(kv.max_blocks, sizeof *kv.keys);
    if (!kv.k || !kv.v || !kv.rows || !kv.table || !kv.keys) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    kv.own_pool = !pool; /* a pool made for this cache alone */
    if (pool) vkllm__kv_pool_retain(pool);
    else VKLLM_TRY(st, vkllm__kv_pool_init(gpu, hp, kv.max_blocks, k_q8, v_q8, &pool), fail);
    kv.pool = pool;
    /* device-local: attention reads it for every position; it changes once per 16 positions */
    VKLLM_TRY(st, vkllm__buffer_alloc(gpu, (uint64_t)kv.max_blocks * 4, VKLLM__MEM_DEVICE, &kv.btab), fail);
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        if (pool->paged[l]) {
            for (uint32_t i = l * kv.n_part; i < (l + 1) * kv.n_part; i++) kv.k[i] = pool->k[i], kv.v[i] = pool->v[i];
            kv.rows[l] = pool->n_blocks * VKLLM__KV_BLOCK;
            continue;
        }
        kv.rows[l] = vkllm__kv_layer_rows(hp, l, n_ctx, n_ubatch);
        uint64_t kb = kv.rows[l] * vkllm__kv_row_bytes(hc * hp->head_dim, k_q8);
        uint64_t vb = kv.rows[l] * vkllm__kv_row_bytes(hc * hp->head_dim, v_q8);
        for (uint32_t i = l * kv.n_part; i < (l + 1) * kv.n_part; i++) {
            VKLLM_TRY(st, vkllm__buffer_alloc(gpu, kb, VKLLM__MEM_DEVICE, &kv.k[i]), fail);
            VKLLM_TRY(st, vkllm__buffer_alloc(gpu, vb, VKLLM__MEM_DEVICE, &kv.v[i]), fail);
            VKLLM_TRY(st, vkllm__buffer_fill_zero(kv.k[i]), fail);
            VKLLM_TRY(st, vkllm__buffer_fill_zero(kv.v[i]), fail);
        }
    }
    kv.ring_bytes = ring_bytes;
    *out = kv;
    return VKLLM_STATUS_OK;
fail:
    vkllm__kv_cache_free(&kv);
    return st;
}

void vkllm__kv_cache_free(struct vkllm__kv_cache *kv) {
    if (!kv) return;
    if (kv->pool) {
        vkllm__kv_truncate(kv, 0);
        for (uint32_t i = 0; i < kv->n_layer * kv->n_part; i++)
            if (kv->pool->paged[i / kv->n_part] && kv->k && kv->v) kv->k[i] = kv->v[i] = NULL; /* the pool's */
    }
    for (uint32_t i = 0; i < kv->n_layer * kv->n_part; i++) {
        if (kv->k) vkllm__buffer_free(kv->k[i]);
        if (kv->v) vkllm__buffer_free(kv->v[i]);
    }
    vkllm__kv_pool_release(kv->pool);
    vkllm__buffer_free(kv->btab);
    vkllm__free(kv->k);
    vkllm__free(kv->v);
    vkllm__free(kv->rows);
    vkllm__free(kv->table);
    vkllm__free(kv->keys);
    memset(kv, 0, sizeof *kv);
}

static vkllm_status upload_table(struct vkllm__kv_cache *kv) {
    return kv->n_held ? vkllm__buffer_upload(kv->btab, 0, kv->table, (uint64_t)kv->n_held * 4) : VKLLM_STATUS_OK;
}

void vkllm__kv_truncate(struct vkllm__kv_cache *kv, uint32_t n_pos) {
    uint32_t keep = vkllm__kv_blocks_for(n_pos);
    while (kv->n_held > keep) drop_block(kv->pool, kv->table[--kv->n_held]);
    kv->n_keyed = VKLLM_MIN(kv->n_keyed, n_pos / VKLLM__KV_BLOCK);
}

/* Copy block src's rows to block dst in every paged layer (K and V, every part). */
static vkllm_status copy_block(struct vkllm__cmd *c, const struct vkllm__kv_pool *p, uint32_t dst, uint32_t src) {
    const uint64_t B = VKLLM__KV_BLOCK, rows = (uint64_t)p->n_blocks * B;
    const uint32_t w = p->width / p->n_part;
    vkllm_status st = VKLLM_STATUS_OK;
    for (uint32_t l = 0; l < p->n_layer && !st; l++) {
        if (!p->paged[l]) continue;
        for (uint32_t i = l * p->n_part; i < (l + 1) * p->n_part && !st; i++)
            for (int kv = 0; kv < 2 && !st; kv++) {
                struct vkllm__buffer *b = kv ? p->v[i] : p->k[i];
                st = vkllm__kv_copy_rows(c, b, rows, dst * B, b, rows, src * B, B, w, kv ? p->v_q8 : p->k_q8);
            }
    }
    return st;
}

/* Blocks written by positions pos0 .. end-1 that another sequence holds (copied first), and new
 * blocks past the ones held. */
static void reserve_counts(const struct vkllm__kv_cache *kv, uint32_t pos0, uint32_t end, uint32_t *grow,
                           uint32_t *cow) {
    const uint32_t need = vkllm__kv_blocks_for(end), first = pos0 / VKLLM__KV_BLOCK;
    *grow = need > kv->n_held ? need - kv->n_held : 0;
    *cow = 0;
    for (uint32_t i = first; i < VKLLM_MIN(need, kv->n_held); i++) *cow += kv->pool->ref[kv->table[i]] > 1;
}

uint32_t vkllm__kv_need(const struct vkllm__kv_cache *kv, uint32_t pos0, uint32_t end) {
    uint32_t grow, cow;
    reserve_counts(kv, pos0, end, &grow, &cow);
    return grow + cow;
}

uint32_t vkllm__kv_pool_room(const struct vkllm__kv_pool *p) { return p->n_free + p->n_cached; }

vkllm_status vkllm__kv_reserve(struct vkllm__kv_cache *kv, uint32_t pos0, uint32_t end) {
    struct vkllm__kv_pool *p = kv->pool;
    const uint32_t need = vkllm__kv_blocks_for(end), first = pos0 / VKLLM__KV_BLOCK, held0 = kv->n_held;
    if (need > kv->max_blocks)
        return vkllm__err(VKLLM_STATUS_CONTEXT_FULL, "the context is full (%u positions)", kv->n_ctx);
    uint32_t grow, cow;
    reserve_counts(kv, pos0, end, &grow, &cow);
    const uint32_t avail = p->n_free + p->n_cached;
    if (grow + cow > avail) {
        if (!grow)
            return vkllm__err(VKLLM_STATUS_KV_FULL, "the KV cache pool is full: a shared block cannot be copied");
        return vkllm__err(
            VKLLM_STATUS_KV_FULL,
            "the KV cache pool is full: %u more blocks of %u positions needed, %u free (%u blocks, %u held "
            "by sequences)",
            grow + cow, VKLLM__KV_BLOCK, avail, p->n_blocks, p->n_blocks - p->n_free - p->n_cached);
    }
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm__cmd *c = NULL;
    int changed = need > held0;
    for (uint32_t i = first; i < VKLLM_MIN(need, held0); i++) {
        uint32_t b = kv->table[i];
        /* a block another sequence holds is copied; so is a keyed one of ours alone, while a block
         * is left beyond those the reservation needs (the copy gives b back to the cached ones, so
         * it costs none): the tokens cached in it stay findable. Else its key goes. */
        const int shared = p->ref[b] > 1;
        if (shared || (p->key[b] && p->n_free + p->n_cached > grow + cow)) { /* copy on write */
            changed = 1;
            cow -= (uint32_t)shared;
            uint32_t nb = take_block(p);
            if (!c) {
                if ((st = vkllm__cmd_init(p->gpu, &c)) || (st = vkllm__cmd_begin(c))) {
                    drop_block(p, nb);
                    break;
                }
            }
            if ((st = copy_block(c, p, nb, b))) {
                drop_block(p, nb);
                break;
            }
            drop_block(p, b);
            kv->table[i] = nb;
        } else if (p->key[b]) { /* ours alone, keyed, no block for a copy: its rows change, so its key goes */
            unkey(p, b);
        }
        kv->n_keyed = VKLLM_MIN(kv->n_keyed, i);
    }
    if (c) {
        if (!st) st = vkllm__cmd_end(c);
        if (!st) st = vkllm__cmd_submit(c);
        vkllm__cmd_free(c);
    }
    while (!st && kv->n_held < need) kv->table[kv->n_held++] = take_block(p);
    if (!st && changed) st = upload_table(kv); /* only when it changed: a staging copy on discrete GPUs */
    return st;
}

void vkllm__kv_register(struct vkllm__kv_cache *kv, const int32_t *tokens, uint32_t n_pos) {
    struct vkllm__kv_pool *p = kv->pool;
    uint32_t full = VKLLM_MIN(n_pos / VKLLM__KV_BLOCK, kv->n_held);
    for (uint32_t i = kv->n_keyed; i < full; i++) {
        const int32_t *t = tokens + (size_t)i * VKLLM__KV_BLOCK;
        uint64_t key = block_key(i ? kv->keys[i - 1] : 0, t);
        kv->keys[i] = key;
        uint32_t b = kv->table[i];
        if (p->key[b] || find_block(p, key, t) != UINT32_MAX) continue; /* keyed already, or cached elsewhere */
        p->key[b] = key;
        memcpy(p->tokens + (size_t)b * VKLLM__KV_BLOCK, t, VKLLM__KV_BLOCK * sizeof *t);
        uint32_t *head = &p->bucket[bucket_of(p, key)];
        p->chain[b] = *head;
        *head = b + 1;
        tell(p, VKLLM_KV_EVENT_STORED, key, i ? kv->keys[i - 1] : 0, p->tokens + (size_t)b * VKLLM__KV_BLOCK);
    }
    kv->n_keyed = VKLLM_MAX(kv->n_keyed, full);
}

uint32_t vkllm__kv_lookup(struct vkllm__kv_cache *kv, const int32_t *tokens, uint32_t n, int adopt) {
    struct vkllm__kv_pool *p = kv->pool;
    uint32_t hit = 0;
    uint64_t key = 0;
    for (uint32_t l = 0; l < p->n_layer; l++)
        if (!p->paged[l]) return 0; /* a window's ring is the sequence's own: not in the blocks */
    for (; (hit + 1) * VKLLM__KV_BLOCK <= n && hit < kv->max_blocks; hit++) {
        const int32_t *t = tokens + (size_t)hit * VKLLM__KV_BLOCK;
        key = block_key(key, t);
        if (find_block(p, key, t) == UINT32_MAX) break;
    }
    if (!adopt) return hit * VKLLM__KV_BLOCK; /* counted by vkllm__kv_pool_count_lookup, once per prompt */
    vkllm__kv_truncate(kv, 0);
    key = 0;
    for (uint32_t i = 0; i < hit; i++) {
        const int32_t *t = tokens + (size_t)i * VKLLM__KV_BLOCK;
        key = block_key(key, t);
        uint32_t b = find_block(p, key, t);
        hold_block(p, b);
        kv->table[i] = b;
        kv->keys[i] = key;
    }
    kv->n_held = kv->n_keyed = hit;
    if (upload_table(kv)) {
        vkllm__log(VKLLM_LOG_DEBUG, "kv lookup: the block table's upload failed (%s); nothing adopted",
                   vkllm_last_error());
        vkllm__kv_truncate(kv, 0);
        return 0;
    }
    return hit * VKLLM__KV_BLOCK;
}

vkllm_status vkllm__kv_share(struct vkllm__kv_cache *dst, const struct vkllm__kv_cache *src, uint32_t n_pos) {
    struct vkllm__kv_pool *p = dst->pool;
    uint32_t nb = VKLLM_MIN(vkllm__kv_blocks_for(n_pos), src->n_held);
    vkllm__kv_truncate(dst, 0);
    for (uint32_t i = 0; i < nb; i++) {
        hold_block(p, src->table[i]);
        dst->table[i] = src->table[i];
        dst->keys[i] = src->keys[i];
    }
    dst->n_held = nb;
    dst->n_keyed = VKLLM_MIN(src->n_keyed, n_pos / VKLLM__KV_BLOCK);
    vkllm_status st = upload_table(dst);
    if (st) vkllm__kv_truncate(dst, 0);
    return st;
}

uint64_t vkllm__kv_held_bytes(const struct vkllm__kv_cache *kv) {
    return kv->ring_bytes + (kv->own_pool ? kv->pool->bytes : (uint64_t)kv->n_held * kv->pool->block_bytes);
}

void vkllm__kv_pool_count_lookup(struct vkllm__kv_pool *p, uint32_t n, uint32_t hit) {
    p->queried += n;
    p->hits += hit;
}

void vkllm__kv_pool_gens(struct vkllm__kv_pool *p, int d_running, int d_waiting) {
    p->gens_running = (uint32_t)((int64_t)p->gens_running + d_running);
    p->gens_waiting = (uint32_t)((int64_t)p->gens_waiting + d_waiting);
    if (d_waiting > 0) p->preempted += (uint64_t)d_waiting;
}

void vkllm__kv_pool_gens_get(const struct vkllm__kv_pool *p, uint32_t *running, uint32_t *waiting,
                             uint64_t *preempted) {
    *running = p->gens_running, *waiting = p->gens_waiting, *preempted = p->preempted;
}
