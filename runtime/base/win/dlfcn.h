/* dlfcn.h for Windows (MinGW-w64): dlopen/dlsym/dlclose/dlerror over LoadLibraryW (the name in
 * UTF-8) and GetProcAddress. See README. */
#ifndef VKLLM_WIN_DLFCN_H
#define VKLLM_WIN_DLFCN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#undef far /* <windows.h>'s, which no code here means */
#undef near

#define RTLD_LAZY 1
#define RTLD_NOW 2
#define RTLD_LOCAL 0
#define RTLD_GLOBAL 0

static __thread char vkllm_win_dlerror_[96];

static inline void *dlopen(const char *name, int flags) {
    (void)flags;
    int n = MultiByteToWideChar(CP_UTF8, 0, name, -1, NULL, 0);
    wchar_t *w = n > 0 ? (wchar_t *)malloc((size_t)n * sizeof *w) : NULL;
    HMODULE h = NULL;
    if (w && MultiByteToWideChar(CP_UTF8, 0, name, -1, w, n) > 0) h = LoadLibraryW(w);
    free(w);
    if (!h) snprintf(vkllm_win_dlerror_, sizeof vkllm_win_dlerror_, "LoadLibrary failed (error %lu)", GetLastError());
    return (void *)h;
}

static inline void *dlsym(void *h, const char *sym) {
    FARPROC p = GetProcAddress((HMODULE)h, sym);
    if (!p) snprintf(vkllm_win_dlerror_, sizeof vkllm_win_dlerror_, "no symbol %.40s", sym);
    void *r;
    memcpy(&r, &p, sizeof r);
    return r;
}

static inline int dlclose(void *h) { return FreeLibrary((HMODULE)h) ? 0 : -1; }

static inline char *dlerror(void) { return vkllm_win_dlerror_[0] ? vkllm_win_dlerror_ : NULL; }

#endif
