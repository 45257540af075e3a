/* string.h for Windows (MinGW-w64): the C runtime's, plus memmem (a GNU and BSD extension that
 * POSIX 2024 adopted). See README. */
#include_next <string.h>

#ifndef VKLLM_WIN_STRING_H
#define VKLLM_WIN_STRING_H

static inline void *memmem(const void *hay, size_t n, const void *needle, size_t m) {
    const unsigned char *h = (const unsigned char *)hay, *nd = (const unsigned char *)needle;
    if (m == 0) return (void *)h;
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (h[i] == nd[0] && memcmp(h + i, nd, m) == 0) return (void *)(h + i);
    return NULL;
}

#endif
