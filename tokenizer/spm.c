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
    struct vkllm__mqueue q;
};

/* Merge key of symbols l and r (adjacent), or 0 when their concatenation is not a token. */
static int pair_key(const struct vkllm__tokenizer *t, const char *text, const struct spm_sym *sym, int32_t l, int32_t r,
                    uint32_t *key) {
    if (l < 0 || r < 0) return 0;
    size_t len = sym[l].n + sym[r].n;
    if (len > t->max_token_len) return 0;
    int32_t id = vkllm__tok_find(t, text + sym[l].start, len);
    if (id < 0) return 0;
    *key = vkllm__float_order_desc(t->tokens[id].score);
    return 1;
}

static vkllm_status try_bigram(const struct vkllm__tokenizer *t, const char *text, struct spm_scratch *s, int32_t l,
                               int32_t r, int seed) {
    uint32_t key;
    if (!pair_key(t, text, s->sym, l, r, &key)) return VKLLM_STATUS_OK;
    uint64_t e = vkllm__mq_entry(key, l);
    return seed ? vkllm__mq_seed(&s->q, e) : vkllm__mq_push(&s->q, e);
}

static vkllm_status emit(const struct vkllm__tokenizer *t, const char *s, size_t n, struct vkllm__ids *out) {
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
static vkllm_status merge_piece(const struct vkllm__tokenizer *t, const char *text, size_t len, struct spm_scratch *s,
                                struct vkllm__ids *out) {
    if (len > INT32_MAX / 2) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tokenizer: text too long");
    if (s->cap < len) {
        struct spm_sym *p = vkllm__realloc(s->sym, len * sizeof *p);
        if (!p) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
        s->sym = p;
        s->cap = len;
    }
    struct spm_sym *sym = s->sym;
    int32_t n = 0;
    for (size_t off = 0; off < len; n++) {
        size_t k = VKLLM_MIN(vkllm__utf8_len((uint8_t)text[off]), len - off);
        sym[n] = (struct spm_sym){(uint32_t)off, (uint32_t)k, n - 1, off + k == len ? -1 : n + 1};
        off += k;
    }
    vkllm__mq_reset(&s->q);
    vkllm_status st = VKLLM_STATUS_OK;
    for (int32_t i = 1; i < n && st == VKLLM_STATUS_OK; i++) st = try_bigram(t, text, s, i - 1, i, 1);
    vkllm__mq_seal(&s->q);
    uint64_t e;
    while (st == VKLLM_STATUS_OK && vkllm__mq_pop(&s->q, &e)) {
        int32_t l = (int32_t)(uint32_t)e, r;
        uint32_t key;
        if (!sym[l].n || (r = sym[l].next) < 0) continue;
        if (!pair_key(t, text, sym, l, r, &key) || key != (uint32_t)(e >> 32)) continue; /* stale */
        sym[l].n += sym[r].n;
        sym[r].n = 0;
        sym[l].next = sym[r].next;
        if (sym[r].next >= 0) sym[sym[r].next].prev = l;
        st = try_bigram(t, text, s, sym[l].prev, l, 0);
        if (st == VKLLM_STATUS_OK) st = try_bigram(t, text, s, l, sym[l].next, 0);
    }
    for (int32_t i = n ? 0 : -1; i >= 0 && st == VKLLM_STATUS_OK; i = sym[i].next)
        st = emit(t, text + sym[i].start, sym[i].n, out);
    return st;
}

static int is_lowbar(const char *p, size_t left) { return left >= 3 && memcmp(p, "\xe2\x96\x81", 3) == 0; }

vkllm_status vkllm__spm_encode(const struct vkllm__tokenizer *t, const char *text, size_t len, struct vkllm__ids *out,
                               struct vkllm__wcache *cache) {
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
    vkllm__mq_free(&s.q);
    return st;
}
