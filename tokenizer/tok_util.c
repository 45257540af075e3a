/* tok_util.c - buffers, hash maps, the word cache and GPT-2's byte <-> unicode mapping. */
#include <stdlib.h>
#include <string.h>

#include "tok_impl.h"

/* --- buffers -------------------------------------------------------------------------------- */

vkllm_status vkllm__bytes_reserve(struct vkllm__bytes *b, size_t extra) {
    if (b->cap - b->n >= extra) return VKLLM_STATUS_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->n < extra) {
        if (cap > SIZE_MAX / 2) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: buffer too large");
        cap *= 2;
    }
    char *p = vkllm__realloc(b->p, cap);
    if (!p) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory (%zu bytes)", cap);
    b->p = p;
    b->cap = cap;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__bytes_put(struct vkllm__bytes *b, const void *src, size_t n) {
    vkllm_status st = vkllm__bytes_reserve(b, n + 1);
    if (st != VKLLM_STATUS_OK) return st;
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
    b->p[b->n] = 0; /* always NUL-terminated */
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__ids_put_n(struct vkllm__ids *v, const int32_t *ids, size_t n) {
    if (v->cap - v->n < n) {
        size_t cap = v->cap ? v->cap : 64;
        while (cap - v->n < n) {
            if (cap > SIZE_MAX / 8) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: too many ids");
            cap *= 2;
        }
        int32_t *p = vkllm__realloc(v->p, cap * sizeof *p);
        if (!p) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory (%zu ids)", cap);
        v->p = p;
        v->cap = cap;
    }
    memcpy(v->p + v->n, ids, n * sizeof *ids);
    v->n += n;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__ids_put(struct vkllm__ids *v, int32_t id) {
    if (v->n < v->cap) {
        v->p[v->n++] = id;
        return VKLLM_STATUS_OK;
    }
    return vkllm__ids_put_n(v, &id, 1);
}

/* --- string map ------------------------------------------------------------------------------ */

uint32_t vkllm__hash_bytes(const void *p, size_t n) {
    /* FNV-1a, 32-bit, with a final avalanche so that linear probing spreads well. */
    const uint8_t *s = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    return h;
}

vkllm_status vkllm__strmap_init(struct vkllm__strmap *m, size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    m->slots = vkllm__calloc(cap, sizeof *m->slots);
    if (!m->slots) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory (hash map)");
    m->cap = cap;
    m->n = 0;
    return VKLLM_STATUS_OK;
}

void vkllm__strmap_free(struct vkllm__strmap *m) {
    vkllm__free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static struct vkllm__strmap_slot *strmap_find(const struct vkllm__strmap *m, const char *key, size_t len, uint32_t h) {
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct vkllm__strmap_slot *s = &m->slots[i];
        if (!s->key) return s;
        if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s;
    }
}

static vkllm_status strmap_grow(struct vkllm__strmap *m) {
    struct vkllm__strmap old = *m;
    vkllm_status st = vkllm__strmap_init(m, old.cap);
    if (st != VKLLM_STATUS_OK) {
        *m = old;
        return st;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.slots[i].key) continue;
        *strmap_find(m, old.slots[i].key, old.slots[i].len, old.slots[i].hash) = old.slots[i];
        m->n++;
    }
    vkllm__free(old.slots);
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__strmap_set(struct vkllm__strmap *m, const char *key, size_t len, int32_t val, int32_t aux) {
    if (len > UINT32_MAX) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tokenizer: key too long");
    if ((m->n + 1) * 4 > m->cap * 3) {
        vkllm_status st = strmap_grow(m);
        if (st != VKLLM_STATUS_OK) return st;
    }
    uint32_t h = vkllm__hash_bytes(key, len);
    struct vkllm__strmap_slot *s = strmap_find(m, key, len, h);
    if (!s->key) {
        s->key = key;
        s->len = (uint32_t)len;
        s->hash = h;
        m->n++;
    }
    s->val = val;
    s->aux = aux;
    return VKLLM_STATUS_OK;
}

const struct vkllm__strmap_slot *vkllm__strmap_get(const struct vkllm__strmap *m, const char *key, size_t len) {
    if (!m->cap || len > UINT32_MAX) return NULL;
    const struct vkllm__strmap_slot *s = strmap_find(m, key, len, vkllm__hash_bytes(key, len));
    return s->key ? s : NULL;
}

/* --- pair map --------------------------------------------------------------------------------- */

static uint64_t pair_key(int32_t l, int32_t r) { return (((uint64_t)(uint32_t)l << 32) | (uint32_t)r) + 1; }

static size_t pair_hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}

vkllm_status vkllm__pairmap_init(struct vkllm__pairmap *m, size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    m->slots = vkllm__calloc(cap, sizeof *m->slots);
    if (!m->slots) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory (merge table)");
    m->cap = cap;
    m->n = 0;
    return VKLLM_STATUS_OK;
}

void vkllm__pairmap_free(struct vkllm__pairmap *m) {
    vkllm__free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

vkllm_status vkllm__pairmap_add(struct vkllm__pairmap *m, int32_t l, int32_t r, int32_t rank, int32_t id) {
    if ((m->n + 1) * 4 > m->cap * 3) {
        struct vkllm__pairmap old = *m;
        vkllm_status st = vkllm__pairmap_init(m, old.cap);
        if (st != VKLLM_STATUS_OK) {
            *m = old;
            return st;
        }
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i].key) {
                size_t mask = m->cap - 1, j = pair_hash(old.slots[i].key) & mask;
                while (m->slots[j].key) j = (j + 1) & mask;
                m->slots[j] = old.slots[i];
                m->n++;
            }
        vkllm__free(old.slots);
    }
    uint64_t k = pair_key(l, r);
    size_t mask = m->cap - 1;
    for (size_t i = pair_hash(k) & mask;; i = (i + 1) & mask) {
        if (m->slots[i].key == k) return VKLLM_STATUS_OK; /* first rank wins */
        if (!m->slots[i].key) {
            m->slots[i].key = k;
            m->slots[i].rank = rank;
            m->slots[i].id = id;
            m->n++;
            return VKLLM_STATUS_OK;
        }
    }
}

const struct vkllm__pairmap_slot *vkllm__pairmap_get(const struct vkllm__pairmap *m, int32_t l, int32_t r) {
    if (!m->cap) return NULL;
    uint64_t k = pair_key(l, r);
    size_t mask = m->cap - 1;
    for (size_t i = pair_hash(k) & mask;; i = (i + 1) & mask) {
        if (m->slots[i].key == k) return &m->slots[i];
        if (!m->slots[i].key) return NULL;
    }
}

/* --- word cache --------------------------------------------------------------------------------- */

#define WCACHE_MAX_WORD 256
#define WCACHE_MAX_ENTRIES (1u << 18)

vkllm_status vkllm__wcache_init(struct vkllm__wcache *c) {
    memset(c, 0, sizeof *c);
    return vkllm__strmap_init(&c->map, 1024);
}

void vkllm__wcache_free(struct vkllm__wcache *c) {
    for (size_t i = 0; i < c->map.cap; i++) vkllm__free((void *)c->map.slots[i].key);
    vkllm__strmap_free(&c->map);
    vkllm__free(c->ids.p);
    memset(c, 0, sizeof *c);
}

int vkllm__wcache_lookup(struct vkllm__wcache *c, const char *w, size_t n, struct vkllm__ids *out) {
    if (n > WCACHE_MAX_WORD) return 0;
    const struct vkllm__strmap_slot *s = vkllm__strmap_get(&c->map, w, n);
    if (!s) return 0;
    vkllm_status st = vkllm__ids_put_n(out, c->ids.p + s->val, (size_t)s->aux);
    return st == VKLLM_STATUS_OK ? 1 : -(int)st;
}

vkllm_status vkllm__wcache_store(struct vkllm__wcache *c, const char *w, size_t n, const struct vkllm__ids *out,
                                 size_t from) {
    if (n > WCACHE_MAX_WORD || c->map.n >= WCACHE_MAX_ENTRIES || c->ids.n > INT32_MAX / 2) return VKLLM_STATUS_OK;
    char *key = vkllm__malloc(n ? n : 1);
    if (!key) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory (word cache)");
    memcpy(key, w, n);
    size_t off = c->ids.n;
    vkllm_status st = vkllm__ids_put_n(&c->ids, out->p + from, out->n - from);
    if (st == VKLLM_STATUS_OK) st = vkllm__strmap_set(&c->map, key, n, (int32_t)off, (int32_t)(out->n - from));
    if (st != VKLLM_STATUS_OK) vkllm__free(key);
    return st;
}

/* --- GPT-2 bytes <-> unicode ---------------------------------------------------------------------
 * Printable Latin-1 bytes map to themselves; the other 68 bytes map, in order, to U+0100.. */

static int gpt2_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t vkllm__gpt2_byte_to_cp(uint8_t b) {
    if (gpt2_printable(b)) return b;
    uint32_t k = 0;
    for (unsigned i = 0; i < b; i++) k += !gpt2_printable(i);
    return 0x100 + k;
}

int vkllm__gpt2_cp_to_byte(uint32_t cp) {
    if (cp < 0x100) return gpt2_printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68) return -1;
    uint32_t k = 0;
    for (unsigned i = 0; i < 256; i++)
        if (!gpt2_printable(i) && k++ == cp - 0x100) return (int)i;
    return -1;
}

/* --- merge queue ----------------------------------------------------------------------------------- */

void vkllm__mq_reset(struct vkllm__mqueue *q) { q->n = q->run_n = q->run_pos = 0; }

void vkllm__mq_free(struct vkllm__mqueue *q) {
    vkllm__free(q->heap);
    vkllm__free(q->run);
    memset(q, 0, sizeof *q);
}

static vkllm_status grow_u64(uint64_t **p, size_t *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    uint64_t *np = vkllm__realloc(*p, nc * sizeof *np);
    if (!np) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory (merge queue)");
    *p = np;
    *cap = nc;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__mq_seed(struct vkllm__mqueue *q, uint64_t e) {
    if (q->run_n == q->run_cap) {
        vkllm_status st = grow_u64(&q->run, &q->run_cap);
        if (st != VKLLM_STATUS_OK) return st;
    }
    q->run[q->run_n++] = e;
    return VKLLM_STATUS_OK;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void vkllm__mq_seal(struct vkllm__mqueue *q) {
    for (size_t i = 1; i < q->run_n; i++)
        if (q->run[i] < q->run[i - 1]) {
            qsort(q->run, q->run_n, sizeof *q->run, cmp_u64);
            break;
        }
}

/* 4-ary min-heap: a node's four children share a cache line. */
vkllm_status vkllm__mq_push(struct vkllm__mqueue *q, uint64_t e) {
    if (q->n == q->cap) {
        vkllm_status st = grow_u64(&q->heap, &q->cap);
        if (st != VKLLM_STATUS_OK) return st;
    }
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (q->heap[parent] <= e) break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
    return VKLLM_STATUS_OK;
}

int vkllm__mq_pop(struct vkllm__mqueue *q, uint64_t *e) {
    int have_run = q->run_pos < q->run_n;
    if (!q->n) {
        if (!have_run) return 0;
        *e = q->run[q->run_pos++];
        return 1;
    }
    if (have_run && q->run[q->run_pos] < q->heap[0]) {
        *e = q->run[q->run_pos++];
        return 1;
    }
    *e = q->heap[0];
    uint64_t last = q->heap[--q->n];
    size_t i = 0, n = q->n;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n) break;
        size_t best = c, end = VKLLM_MIN(c + 4, n);
        for (size_t k = c + 1; k < end; k++)
            if (q->heap[k] < q->heap[best]) best = k;
        if (q->heap[best] >= last) break;
        q->heap[i] = q->heap[best];
        i = best;
    }
    if (n) q->heap[i] = last;
    return 1;
}

uint32_t vkllm__float_order_desc(float f) {
    if (f == 0.0f) f = 0.0f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t o = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* ascending with f */
    return ~o;
}
