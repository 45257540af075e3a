/* mapguard.h - read-only file mappings that a shrinking file cannot crash.
 *
 * A page of a file mapping that lies wholly past the file's end raises SIGBUS when read: a model
 * file truncated (or rewritten with O_TRUNC) while vkllm reads it would kill the process with no
 * message. A guarded mapping turns that into zeros: the first such read maps anonymous zero pages
 * over the rest of the mapping and marks it hit, so that the reader finishes and its owner then
 * reports "the file changed" (gguf.c: vkllm__gguf_check). SIGBUS anywhere else goes to the
 * handler that was installed before (the default: the process ends, as without the guard).
 *
 * One SIGBUS handler per process, installed at the first vkllm__mapguard_add and kept. Thread-
 * safe. Where no guard can be had (the table of VKLLM__MAPGUARD_MAX mappings is full, or a
 * platform without the handler), add returns -1 and the mapping is read unguarded. */
#ifndef VKLLM_MAPGUARD_H
#define VKLLM_MAPGUARD_H

#include <stdint.h>

#define VKLLM__MAPGUARD_MAX 64

/* Guard [base, base + size), a read-only file mapping (base page-aligned): an id >= 0, or -1
 * when it cannot be guarded. */
int vkllm__mapguard_add(const void *base, uint64_t size);

/* Stop guarding (before munmap). id -1 is a no-op. */
void vkllm__mapguard_remove(int id);

/* 1 when a read past the file's end was turned into zeros (the data read since is not the
 * file's), else 0. */
int vkllm__mapguard_hit(int id);

#endif /* VKLLM_MAPGUARD_H */
