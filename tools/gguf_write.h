/* gguf_write.h - writing GGUF files (tools/gguf_write.c): the random-model generator behind
 * `vkllm make-model` and the tests use it; the runtime itself only reads GGUF (base/gguf.h). */
#ifndef VKLLM_GGUF_WRITE_H
#define VKLLM_GGUF_WRITE_H

#include "gguf.h"

/* --- writer ------------------------------------------------------------------------------ */

/* Writes GGUF v3 with general.alignment (default 32). Metadata is copied in; tensor data is
 * produced at write time by a callback, so a multi-GiB model never sits in memory whole. */
struct vkllm__gguf_writer;

/* Fill dst (nbytes, the tensor's exact encoded size) with the tensor's data. */
typedef vkllm_status (*vkllm__gguf_fill_fn)(void *user, void *dst, uint64_t nbytes);

vkllm_status vkllm__gguf_writer_init(struct vkllm__gguf_writer **out);
void vkllm__gguf_writer_free(struct vkllm__gguf_writer *w);

vkllm_status vkllm__gguf_writer_set_u32(struct vkllm__gguf_writer *w, const char *key, uint32_t v);
vkllm_status vkllm__gguf_writer_set_i32(struct vkllm__gguf_writer *w, const char *key, int32_t v);
vkllm_status vkllm__gguf_writer_set_u64(struct vkllm__gguf_writer *w, const char *key, uint64_t v);
vkllm_status vkllm__gguf_writer_set_f32(struct vkllm__gguf_writer *w, const char *key, float v);
vkllm_status vkllm__gguf_writer_set_bool(struct vkllm__gguf_writer *w, const char *key, int v);
vkllm_status vkllm__gguf_writer_set_str(struct vkllm__gguf_writer *w, const char *key, const char *v);
/* Numeric array: elem_type is a scalar vtype; data holds n packed elements of that type. */
vkllm_status vkllm__gguf_writer_set_arr(struct vkllm__gguf_writer *w, const char *key, uint32_t elem_type,
                                        const void *data, uint64_t n);
vkllm_status vkllm__gguf_writer_set_arr_str(struct vkllm__gguf_writer *w, const char *key, const char *const *strs,
                                            uint64_t n);
/* Any scalar type (U8..F64 but not STRING/ARRAY): v points to a value of that C type (uint8_t,
 * int8_t, uint16_t, ..., float for F32, double for F64, uint8_t 0/1 for BOOL). */
vkllm_status vkllm__gguf_writer_set_val(struct vkllm__gguf_writer *w, const char *key, uint32_t type, const void *v);
/* A value already in GGUF encoding (what follows the u32 type in a kv), e.g. an array of arrays:
 * checked to be exactly one well-formed value of that type (INVALID_ARGUMENT otherwise). */
vkllm_status vkllm__gguf_writer_set_raw(struct vkllm__gguf_writer *w, const char *key, uint32_t type, const void *bytes,
                                        uint64_t nbytes);
/* Copy a value read by the reader (any type, nested arrays included) under key. */
vkllm_status vkllm__gguf_writer_set_kv(struct vkllm__gguf_writer *w, const char *key, const struct vkllm__gguf_kv *kv);
/* Setting a key again replaces its value in place (its position stays). general.alignment, when
 * set, must be a U32 power of two; it is written (32) even when not set. Keys are non-empty. */

/* Add a tensor; ne[0] innermost; its data comes from fill(user, ...) during write. Names are
 * unique and at most 63 bytes (ggml's limit, so that other readers load the file); n_dims 1..4,
 * ne[i] >= 1, ne[0] a multiple of the type's block size. Tensors are laid out in the order added,
 * each padded to the alignment. */
vkllm_status vkllm__gguf_writer_add_tensor(struct vkllm__gguf_writer *w, const char *name, uint32_t type,
                                           uint32_t n_dims, const uint64_t *ne, vkllm__gguf_fill_fn fill, void *user);

/* Write everything to path (replaced atomically through a temporary file in the same folder;
 * on any failure the temporary file is removed and path is untouched; a symbolic link is kept and
 * the file it names replaced). A character device or FIFO at path is written to directly; a
 * directory, block device, socket or dangling link is refused with INVALID_ARGUMENT (never
 * renamed over). I/O errors (disk full)
 * give VKLLM_STATUS_IO with the path and the reason; a failing fill callback's status is
 * returned as is. The writer can be written again or freed afterwards. */
vkllm_status vkllm__gguf_writer_write(struct vkllm__gguf_writer *w, const char *path);

#endif /* VKLLM_GGUF_WRITE_H */
