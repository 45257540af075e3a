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
    struct vkllm__mqueue q;
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

static const struct vkllm__pairmap_slot *pair_of(const struct vkllm__tokenizer *t, const struct bpe_sym *sym, int32_t l,
                                                 int32_t r) {
    if (l < 0 || r < 0 || sym[l].id < 0 || sym[r].id < 0) return NULL;
    return vkllm__pairmap_get(&t->merges, sym[l].id, sym[r].id);
}

static vkllm_status add_pair(const struct vkllm__tokenizer *t, struct bpe_scratch *s, int32_t l, int32_t r, int seed) {
    const struct vkllm__pairmap_slot *m = pair_of(t, s->sym, l, r);
    if (!m) return VKLLM_STATUS_OK;
    uint64_t e = vkllm__mq_entry((uint32_t)m->rank, l);
    return seed ? vkllm__mq_seed(&s->q, e) : vkllm__mq_push(&s->q, e);
}

/* A final symbol that is not a token: llama.cpp looks up each byte of its mapped text. */
static vkllm_status emit_unknown(const struct vkllm__tokenizer *t, const char *w, size_t n, struct bpe_scratch *s,
                                 struct vkllm__ids *out) {
    vkllm_status st = encode_bytes(w, n, &s->enc);
    for (size_t i = 0; i < s->enc.n && st == VKLLM_STATUS_OK; i++) {
        int32_t id = vkllm__tok_find(t, s->enc.p + i, 1);
        if (id >= 0) st = vkllm__ids_put(out, id);
    }
    return st;
}

static vkllm_status merge_word(const struct vkllm__tokenizer *t, const char *w, size_t n, struct bpe_scratch *s,
                               struct vkllm__ids *out) {
    vkllm_status st;
    if (t->ignore_merges) { /* a word that is a token stays whole */
        if ((st = encode_bytes(w, n, &s->enc)) != VKLLM_STATUS_OK) return st;
        int32_t id = vkllm__tok_find(t, s->enc.p, s->enc.n);
        if (id >= 0) return vkllm__ids_put(out, id);
    }
    if (n > INT32_MAX / 2) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tokenizer: word too long");
    if (s->cap < n) {
        struct bpe_sym *p = vkllm__realloc(s->sym, n * sizeof *p);
        if (!p) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
        s->sym = p;
        s->cap = n;
    }
    for (size_t i = 0; i < n; i++)
        s->sym[i] = (struct bpe_sym){(uint32_t)i, 1, t->byte_id[(uint8_t)w[i]], (int32_t)i - 1,
                                     i + 1 == n ? -1 : (int32_t)i + 1};
    struct bpe_sym *sym = s->sym;
    vkllm__mq_reset(&s->q);
    st = VKLLM_STATUS_OK;
    for (size_t i = 1; i < n && st == VKLLM_STATUS_OK; i++) st = add_pair(t, s, (int32_t)i - 1, (int32_t)i, 1);
    vkllm__mq_seal(&s->q);
    uint64_t e;
    while (st == VKLLM_STATUS_OK && vkllm__mq_pop(&s->q, &e)) {
        int32_t l = (int32_t)(uint32_t)e, r;
        if (!sym[l].n || (r = sym[l].next) < 0) continue;
        const struct vkllm__pairmap_slot *m = pair_of(t, sym, l, r);
        if (!m || (uint32_t)m->rank != (uint32_t)(e >> 32)) continue; /* stale */
        sym[l].id = m->id;
        sym[l].n += sym[r].n;
        sym[r].n = 0;
        sym[l].next = sym[r].next;
        if (sym[r].next >= 0) sym[sym[r].next].prev = l;
        st = add_pair(t, s, sym[l].prev, l, 0);
        if (st == VKLLM_STATUS_OK) st = add_pair(t, s, l, sym[l].next, 0);
    }
    for (int32_t i = n ? 0 : -1; i >= 0 && st == VKLLM_STATUS_OK; i = s->sym[i].next) {
        if (s->sym[i].id >= 0) st = vkllm__ids_put(out, s->sym[i].id);
        else st = emit_unknown(t, w + s->sym[i].start, s->sym[i].n, s, out);
    }
    return st;
}

vkllm_status vkllm__bpe_encode(const struct vkllm__tokenizer *t, const char *text, size_t len, struct vkllm__ids *out,
                               struct vkllm__wcache *cache) {
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
    vkllm__mq_free(&s.q);
    vkllm__free(s.enc.p);
    return st;
}
