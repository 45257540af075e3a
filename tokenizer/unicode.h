/* unicode.h - UTF-8 helpers and the few Unicode tables the WordPiece normalizer needs.
 *
 * The tables (tokenizer/unicode_data.c) are generated from Python's unicodedata by
 * tokenizer/gen_unicode_data.py. The BPE pre-tokenizers do not use them: their regular
 * expressions run in PCRE2 with Unicode properties (PCRE2_UCP). */
#ifndef VKLLM_TOK_UNICODE_H
#define VKLLM_TOK_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* General-category flags of a code point (bit values match gen_unicode_data.py). */
enum {
    VKLLM__U_NUMBER = 1,
    VKLLM__U_LETTER = 2,
    VKLLM__U_SEPARATOR = 4,
    VKLLM__U_MARK = 8,
    VKLLM__U_PUNCT = 16,
    VKLLM__U_SYMBOL = 32,
    VKLLM__U_CONTROL = 64,    /* Cc, Cf, Cs, Co (not Cn) */
    VKLLM__U_WHITESPACE = 128 /* Unicode White_Space */
};

struct vkllm__uflag_range {
    uint32_t first;
    uint8_t flags;
};
struct vkllm__umap {
    uint32_t from, to;
};
struct vkllm__urange_map {
    uint32_t first, last, to;
};

extern const struct vkllm__uflag_range vkllm__uflag_ranges[];
extern const size_t vkllm__uflag_ranges_n;
extern const struct vkllm__umap vkllm__ulower[];
extern const size_t vkllm__ulower_n;
extern const struct vkllm__urange_map vkllm__unfd_first[];
extern const size_t vkllm__unfd_first_n;

/* Flags of code point cp (0 for unassigned code points and cp >= 0x110000). */
unsigned vkllm__ucp_flags(uint32_t cp);
/* Simple lowercase mapping (cp itself when none). */
uint32_t vkllm__ucp_lower(uint32_t cp);
/* First code point of cp's canonical decomposition (cp itself when none): strips accents. */
uint32_t vkllm__ucp_nfd_first(uint32_t cp);

/* Decode one code point from s[0..n) (n >= 1). Strict UTF-8: overlong forms, surrogates and
 * values above U+10FFFF are invalid. Returns the sequence length (1..4) and stores the code
 * point, or returns 0 for an invalid or truncated sequence (one byte should then be skipped). */
size_t vkllm__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
/* Encode cp (<= 0x10FFFF) into out (4 bytes); returns the length. */
size_t vkllm__utf8_encode(uint32_t cp, char *out);
/* Length of the sequence that lead byte c announces (1 for continuation/invalid bytes), as
 * llama.cpp's unicode_len_utf8. */
size_t vkllm__utf8_len(uint8_t c);

#endif
