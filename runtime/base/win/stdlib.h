/* stdlib.h for Windows (MinGW-w64): MinGW's, plus realpath over _fullpath. See README. */
#include_next <stdlib.h>

#ifndef VKLLM_WIN_STDLIB_H
#define VKLLM_WIN_STDLIB_H

static inline char *realpath(const char *path, char *resolved) { return _fullpath(resolved, path, resolved ? 260 : 0); }

#endif
