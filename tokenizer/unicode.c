/* unicode.c - UTF-8 coding and lookups in the generated Unicode tables (unicode_data.c). */
#include "unicode.h"

unsigned vkllm__ucp_flags(uint32_t cp) {
    if (cp >= 0x110000) return 0;
    size_t lo = 0, hi = vkllm__uflag_ranges_n; /* last range with first <= cp */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (vkllm__uflag_ranges[mid].first <= cp) lo = mid;
        else hi = mid;
    }
    return vkllm__uflag_ranges[lo].flags;
}

uint32_t vkllm__ucp_lower(uint32_t cp) {
    size_t lo = 0, hi = vkllm__ulower_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vkllm__ulower[mid].from < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < vkllm__ulower_n && vkllm__ulower[lo].from == cp ? vkllm__ulower[lo].to : cp;
}

uint32_t vkllm__ucp_nfd_first(uint32_t cp) {
    size_t lo = 0, hi = vkllm__unfd_first_n; /* first range with last >= cp */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vkllm__unfd_first[mid].last < cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo < vkllm__unfd_first_n && vkllm__unfd_first[lo].first <= cp) return vkllm__unfd_first[lo].to;
    return cp;
}

size_t vkllm__utf8_len(uint8_t c) {
    static const uint8_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lens[c >> 4];
}

size_t vkllm__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        v = c & 0x1F;
        min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        v = c & 0x0F;
        min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        v = c & 0x07;
        min = 0x10000;
    } else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

size_t vkllm__utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
