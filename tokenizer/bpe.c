/* bpe.c - byte-level BPE (tokenizer.ggml.model "gpt2"), as llama.cpp's llm_tokenizer_bpe: the
 * pre-tokenizer splits the text into words; each word starts as one symbol per byte (GPT-2's
 * byte-to-unicode image of it) and the adjacent pair with the lowest merge rank is merged
 * (leftmost on ties) until no ranked pair is left.
 *
 * Symbols carry token ids and the merge table is keyed by id pairs, so no strings are built
 * in the loop. Words are cached per call: running text repeats its words. */
#include <string.h>

#include "tok_impl.h"
#include "unicode.h"

struct bpe_sym {
    uint32_t start, n;
    int32_t id, prev, next;
};

struct bpe_scratch {
    struct bpe_sym *sym;
    size_t cap;
    struct vkllm__heap heap;
    struct vkllm__bytes enc;
};

/* GPT-2 mapped form of bytes w[0..n) into b (replacing its content). */
static vkllm_status encode_bytes(const char *w, size_t n, struct vkllm__bytes *b) {
    b->n = 0;
    vkllm_status st = vkllm__bytes_reserve(b, 2 * n + 1);
    if (st != VKLLM_STATUS_OK) return st;
    for (size_t i = 0; i < n; i++) b->n += vkllm__utf8_encode(vkllm__gpt2_byte_to_cp((uint8_t)w[i]), b->p + b->n);
    b->p[b->n] = 0;
    return VKLLM_STATUS_OK;
}

static vkllm_status add_pair(const struct vkllm__tokenizer *t, struct bpe_scratch *s, int32_t l,
                             int32_t r) {
    if (l < 0 || r < 0 || s->sym[l].id < 0 || s->sym[r].id < 0) return VKLLM_STATUS_OK;
    const struct vkllm__pairmap_slot *m = vkllm__pairmap_get(&t->merges, s->sym[l].id, s->sym[r].id);
    if (!m) return VKLLM_STATUS_OK;
    struct vkllm__merge_cand c = {(uint32_t)m->rank, l, r, s->sym[l].n + s->sym[r].n};
    return vkllm__heap_push(&s->heap, c);
}

/* A final symbol that is not a token: llama.cpp looks up each byte of its mapped text. */
static vkllm_status emit_unknown(const struct vkllm__tokenizer *t, const char *w, size_t n,
                                 struct bpe_scratch *s, struct vkllm__ids *out) {
    vkllm_status st = encode_bytes(w, n, &s->enc);
    for (size_t i = 0; i < s->enc.n && st == VKLLM_STATUS_OK; i++) {
        int32_t id = vkllm__tok_find(t, s->enc.p + i, 1);
        if (id >= 0) st = vkllm__ids_put(out, id);
    }
    return st;
}

static vkllm_status merge_word(const struct vkllm__tokenizer *t, const char *w, size_t n,
                               struct bpe_scratch *s, struct vkllm__ids *out) {
    vkllm_status st;
    if (t->ignore_merges) { /* a word that is a token stays whole */
        if ((st = encode_bytes(w, n, &s->enc)) != VKLLM_STATUS_OK) return st;
        int32_t id = vkllm__tok_find(t, s->enc.p, s->enc.n);
        if (id >= 0) return vkllm__ids_put(out, id);
    }
    if (n > UINT32_MAX / 2) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tokenizer: word too long");
    if (s->cap < n) {
        struct bpe_sym *p = vkllm__realloc(s->sym, n * sizeof *p);
        if (!p) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
        s->sym = p;
        s->cap = n;
    }
    for (size_t i = 0; i < n; i++)
        s->sym[i] = (struct bpe_sym){(uint32_t)i, 1, t->byte_id[(uint8_t)w[i]], (int32_t)i - 1,
                                     i + 1 == n ? -1 : (int32_t)i + 1};
    s->heap.n = 0;
    st = VKLLM_STATUS_OK;
    for (size_t i = 1; i < n && st == VKLLM_STATUS_OK; i++) st = add_pair(t, s, (int32_t)i - 1, (int32_t)i);
    while (s->heap.n && st == VKLLM_STATUS_OK) {
        struct vkllm__merge_cand c = vkllm__heap_pop(&s->heap);
        struct bpe_sym *l = &s->sym[c.left], *r = &s->sym[c.right];
        if (!l->n || !r->n || l->n + r->n != c.size) continue; /* stale */
        const struct vkllm__pairmap_slot *m = vkllm__pairmap_get(&t->merges, l->id, r->id);
        l->id = m ? m->id : -1;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s->sym[r->next].prev = c.left;
        st = add_pair(t, s, l->prev, c.left);
        if (st == VKLLM_STATUS_OK) st = add_pair(t, s, c.left, l->next);
    }
    for (int32_t i = n ? 0 : -1; i >= 0 && st == VKLLM_STATUS_OK; i = s->sym[i].next) {
        if (s->sym[i].id >= 0) st = vkllm__ids_put(out, s->sym[i].id);
        else st = emit_unknown(t, w + s->sym[i].start, s->sym[i].n, s, out);
    }
    return st;
}

vkllm_status vkllm__bpe_encode(const struct vkllm__tokenizer *t, const char *text, size_t len,
                               struct vkllm__ids *out, struct vkllm__wcache *cache) {
    size_t *offs = NULL, n_words = 0;
    vkllm_status st = vkllm__pretok_split(t->pretok, text, len, &offs, &n_words);
    if (st != VKLLM_STATUS_OK) return st;
    struct bpe_scratch s = {0};
    for (size_t i = 0; i < n_words && st == VKLLM_STATUS_OK; i++) {
        const char *w = text + offs[2 * i];
        size_t n = offs[2 * i + 1] - offs[2 * i];
        int hit = vkllm__wcache_lookup(cache, w, n, out);
        if (hit < 0) {
            st = (vkllm_status)-hit;
        } else if (!hit) {
            size_t from = out->n;
            st = merge_word(t, w, n, &s, out);
            if (st == VKLLM_STATUS_OK) st = vkllm__wcache_store(cache, w, n, out, from);
        }
    }
    vkllm__free(offs);
    vkllm__free(s.sym);
    vkllm__free(s.heap.p);
    vkllm__free(s.enc.p);
    return st;
}
