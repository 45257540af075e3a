/* wpm.c - WordPiece (tokenizer.ggml.model "bert"), as llama.cpp's llm_tokenizer_wpm: the text is
 * lowercased and stripped of accents (first code point of the canonical decomposition), split
 * at whitespace, and each punctuation mark, ASCII symbol and CJK ideograph stands alone; control
 * characters, NUL and U+FFFD are dropped. Each word, prefixed with U+2581, is covered greedily
 * by the longest tokens; a word that cannot be covered becomes the unknown token. */
#include <string.h>

#include "tok_impl.h"
#include "unicode.h"

static int is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Greedy longest-match of U+2581 + word; appends ids (or unk). */
static vkllm_status encode_word(const struct vkllm__tokenizer *t, const char *word, size_t wn, struct vkllm__bytes *buf,
                                struct vkllm__ids *out) {
    buf->n = 0;
    vkllm_status st = vkllm__bytes_put(buf, "\xe2\x96\x81", 3);
    if (st == VKLLM_STATUS_OK) st = vkllm__bytes_put(buf, word, wn);
    if (st != VKLLM_STATUS_OK) return st;
    const char *w = buf->p;
    size_t n = buf->n, start = out->n;
    for (size_t i = 0; i < n; i++) {
        int32_t id = -1;
        size_t j = VKLLM_MIN(n, i + t->max_token_len + 1);
        for (; j > i; j--)
            if ((id = vkllm__tok_find(t, w + i, j - i)) >= 0) break;
        if (id < 0) { /* this word cannot be covered: drop what it produced */
            out->n = start;
            break;
        }
        if ((st = vkllm__ids_put(out, id)) != VKLLM_STATUS_OK) return st;
        i = j - 1;
    }
    if (out->n == start && t->unk >= 0) st = vkllm__ids_put(out, t->unk);
    return st;
}

vkllm_status vkllm__wpm_encode(const struct vkllm__tokenizer *t, const char *text, size_t len, struct vkllm__ids *out) {
    struct vkllm__bytes word = {0}, buf = {0};
    vkllm_status st = VKLLM_STATUS_OK;
    for (size_t i = 0; i < len && st == VKLLM_STATUS_OK;) {
        uint32_t cp;
        size_t k = vkllm__utf8_decode((const uint8_t *)text + i, len - i, &cp);
        if (!k) {
            k = 1;
            cp = 0xFFFD;
        }
        i += k;
        cp = vkllm__ucp_nfd_first(cp);
        unsigned f = vkllm__ucp_flags(cp);
        if (f & VKLLM__U_WHITESPACE) {
            if (word.n) st = encode_word(t, word.p, word.n, &buf, out);
            word.n = 0;
            continue;
        }
        if (cp == 0 || cp == 0xFFFD || (f & VKLLM__U_CONTROL)) continue;
        char u[4];
        size_t un = vkllm__utf8_encode(vkllm__ucp_lower(cp), u);
        if ((f & VKLLM__U_PUNCT) || (cp < 0x7F && (f & VKLLM__U_SYMBOL)) || is_chinese(cp)) {
            if (word.n) st = encode_word(t, word.p, word.n, &buf, out);
            if (st == VKLLM_STATUS_OK) st = encode_word(t, u, un, &buf, out);
            word.n = 0;
        } else {
            st = vkllm__bytes_put(&word, u, un);
        }
    }
    if (st == VKLLM_STATUS_OK && word.n) st = encode_word(t, word.p, word.n, &buf, out);
    vkllm__free(word.p);
    vkllm__free(buf.p);
    return st;
}
