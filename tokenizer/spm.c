/* spm.c - SentencePiece-style BPE (tokenizer.ggml.model "llama"), as llama.cpp's
 * llm_tokenizer_spm: start from UTF-8 characters, repeatedly merge the adjacent pair whose
 * concatenation is the vocabulary token with the highest score (leftmost on ties), then map
 * what is left to tokens, falling back to <0xNN> byte tokens.
 *
 * The text arrives escaped (spaces already U+2581). When no token of the vocabulary glues a
 * character to a following U+2581 (tok->spm_split_ok), no merge can cross such a point, so the
 * text is cut there and the pieces are merged (and cached) one by one: same result, and word
 * by word instead of one priority queue over the whole text. */
#include <string.h>

#include "tok_impl.h"
#include "unicode.h"

struct spm_sym {
    uint32_t start, n;
    int32_t prev, next;
};

struct spm_scratch {
    struct spm_sym *sym;
    size_t cap;
    struct vkllm__heap heap;
};

static vkllm_status try_bigram(const struct vkllm__tokenizer *t, const char *text,
                               struct spm_scratch *s, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return VKLLM_STATUS_OK;
    size_t start = s->sym[l].start, len = s->sym[l].n + s->sym[r].n;
    if (len > t->max_token_len) return VKLLM_STATUS_OK;
    int32_t id = vkllm__tok_find(t, text + start, len);
    if (id < 0) return VKLLM_STATUS_OK;
    struct vkllm__merge_cand c = {vkllm__float_order_desc(t->tokens[id].score), l, r, (uint32_t)len};
    return vkllm__heap_push(&s->heap, c);
}

static vkllm_status emit(const struct vkllm__tokenizer *t, const char *s, size_t n,
                         struct vkllm__ids *out) {
    int32_t id = vkllm__tok_find(t, s, n);
    if (id >= 0) return vkllm__ids_put(out, id);
    vkllm_status st = VKLLM_STATUS_OK;
    for (size_t i = 0; i < n && st == VKLLM_STATUS_OK; i++) {
        int32_t b = t->byte_id[(uint8_t)s[i]];
        if (b < 0) b = t->unk;
        if (b >= 0) st = vkllm__ids_put(out, b);
    }
    return st;
}

/* Merge one piece text[0..len) and append its ids. */
static vkllm_status merge_piece(const struct vkllm__tokenizer *t, const char *text, size_t len,
                                struct spm_scratch *s, struct vkllm__ids *out) {
    if (len > UINT32_MAX / 2) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tokenizer: text too long");
    if (s->cap < len) {
        struct spm_sym *p = vkllm__realloc(s->sym, len * sizeof *p);
        if (!p) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
        s->sym = p;
        s->cap = len;
    }
    int32_t n = 0;
    for (size_t off = 0; off < len; n++) {
        size_t k = VKLLM_MIN(vkllm__utf8_len((uint8_t)text[off]), len - off);
        s->sym[n] = (struct spm_sym){(uint32_t)off, (uint32_t)k, n - 1, off + k == len ? -1 : n + 1};
        off += k;
    }
    s->heap.n = 0;
    vkllm_status st = VKLLM_STATUS_OK;
    for (int32_t i = 1; i < n && st == VKLLM_STATUS_OK; i++) st = try_bigram(t, text, s, i - 1, i);
    while (s->heap.n && st == VKLLM_STATUS_OK) {
        struct vkllm__merge_cand c = vkllm__heap_pop(&s->heap);
        struct spm_sym *l = &s->sym[c.left], *r = &s->sym[c.right];
        if (!l->n || !r->n || l->n + r->n != c.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s->sym[r->next].prev = c.left;
        st = try_bigram(t, text, s, l->prev, c.left);
        if (st == VKLLM_STATUS_OK) st = try_bigram(t, text, s, c.left, l->next);
    }
    for (int32_t i = n ? 0 : -1; i >= 0 && st == VKLLM_STATUS_OK; i = s->sym[i].next)
        st = emit(t, text + s->sym[i].start, s->sym[i].n, out);
    return st;
}

static int is_lowbar(const char *p, size_t left) {
    return left >= 3 && memcmp(p, "\xe2\x96\x81", 3) == 0;
}

vkllm_status vkllm__spm_encode(const struct vkllm__tokenizer *t, const char *text, size_t len,
                               struct vkllm__ids *out, struct vkllm__wcache *cache) {
    struct spm_scratch s = {0};
    vkllm_status st = VKLLM_STATUS_OK;
    size_t a = 0;
    while (a < len && st == VKLLM_STATUS_OK) {
        size_t b = len;
        if (t->spm_split_ok) { /* cut before the next U+2581 that follows another character */
            size_t i = a;
            while (i < len && is_lowbar(text + i, len - i)) i += 3;
            while (i < len && !is_lowbar(text + i, len - i)) /* step as the symbols will */
                i += VKLLM_MIN(vkllm__utf8_len((uint8_t)text[i]), len - i);
            b = i;
        }
        int hit = vkllm__wcache_lookup(cache, text + a, b - a, out);
        if (hit < 0) st = (vkllm_status)-hit;
        else if (!hit) {
            size_t from = out->n;
            st = merge_piece(t, text + a, b - a, &s, out);
            if (st == VKLLM_STATUS_OK) st = vkllm__wcache_store(cache, text + a, b - a, out, from);
        }
        a = b;
    }
    vkllm__free(s.sym);
    vkllm__free(s.heap.p);
    return st;
}
