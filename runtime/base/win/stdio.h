/* stdio.h for Windows (MinGW-w64): MinGW's, with rename replacing an existing file as POSIX's
 * does (the C runtime's refuses). See README. */
#include_next <stdio.h>

#ifndef VKLLM_WIN_STDIO_H
#define VKLLM_WIN_STDIO_H

#include <stdlib.h>

/* kernel32's, declared as <windows.h> does: that header is not included here, as every file
 * includes this one and <windows.h> defines words such as `far` and `near` */
__declspec(dllimport) int __stdcall MoveFileExA(const char *from, const char *to, unsigned long flags);

static inline int vkllm_win_rename_(const char *from, const char *to) {
    return MoveFileExA(from, to, 0x1 | 0x2 /* MOVEFILE_REPLACE_EXISTING | MOVEFILE_COPY_ALLOWED */) ? 0 : -1;
}
#define rename vkllm_win_rename_

/* getline (POSIX 2008) */
static inline long long vkllm_win_getline_(char **line, size_t *cap, FILE *f) {
    size_t n = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (n + 2 > *cap || !*line) {
            size_t nc = *cap < 64 ? 128 : *cap * 2;
            char *nl = (char *)realloc(*line, nc);
            if (!nl) return -1;
            *line = nl, *cap = nc;
        }
        (*line)[n++] = (char)c;
        if (c == '\n') break;
    }
    if (n == 0) return -1;
    (*line)[n] = 0;
    return (long long)n;
}
#define getline vkllm_win_getline_

/* open_memstream (POSIX 2008) over a temporary file, copied into *buf and *len by fclose (the
 * only way vkllm reads one). */
struct vkllm_win_memstream_ {
    FILE *f;
    char **buf;
    size_t *len;
};
static struct vkllm_win_memstream_ vkllm_win_memstreams_[8];
static inline FILE *vkllm_win_open_memstream_(char **buf, size_t *len) {
    for (int i = 0; i < 8; i++) {
        if (vkllm_win_memstreams_[i].f) continue;
        FILE *f = tmpfile();
        if (!f) return NULL;
        vkllm_win_memstreams_[i] = (struct vkllm_win_memstream_){f, buf, len};
        *buf = NULL, *len = 0;
        return f;
    }
    return NULL;
}
static inline int vkllm_win_fclose_(FILE *f) {
    for (int i = 0; f && i < 8; i++) {
        struct vkllm_win_memstream_ *m = &vkllm_win_memstreams_[i];
        if (m->f != f) continue;
        m->f = NULL;
        long n = fflush(f) == 0 ? ftell(f) : -1;
        char *b = n >= 0 ? (char *)malloc((size_t)n + 1) : NULL;
        if (b) {
            rewind(f);
            n = (long)fread(b, 1, (size_t)n, f);
            b[n] = 0;
            *m->buf = b, *m->len = (size_t)n;
        }
        fclose(f);
        return b ? 0 : EOF;
    }
    return fclose(f);
}
#define open_memstream vkllm_win_open_memstream_
#define fclose vkllm_win_fclose_

#endif
