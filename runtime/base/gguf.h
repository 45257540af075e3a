/* gguf.h - GGUF v2/v3 reader (over mmap, every length and offset bounds-checked) and writer.
 *
 * The reader never reads outside the file: a malformed file gives VKLLM_STATUS_BAD_FORMAT and a
 * message that says what is wrong and where (byte offset, key or tensor name).
 * Strings (vkllm__str) point into the file mapping and are NOT NUL-terminated.
 */
#ifndef VKLLM_GGUF_H
#define VKLLM_GGUF_H

#include <stdint.h>

#include "internal.h"

/* GGUF metadata value types (numbering from the GGUF specification). */
enum vkllm__gguf_vtype {
    VKLLM__GGUF_U8 = 0,
    VKLLM__GGUF_I8 = 1,
    VKLLM__GGUF_U16 = 2,
    VKLLM__GGUF_I16 = 3,
    VKLLM__GGUF_U32 = 4,
    VKLLM__GGUF_I32 = 5,
    VKLLM__GGUF_F32 = 6,
    VKLLM__GGUF_BOOL = 7,
    VKLLM__GGUF_STRING = 8,
    VKLLM__GGUF_ARRAY = 9,
    VKLLM__GGUF_U64 = 10,
    VKLLM__GGUF_I64 = 11,
    VKLLM__GGUF_F64 = 12,
    VKLLM__GGUF_VTYPE_COUNT_
};

/* A byte string inside the mapping (not NUL-terminated). */
struct vkllm__str {
    const char *ptr;
    uint64_t len;
};

/* One metadata key/value. Scalars are widened into v; arrays are described by arr_*. */
struct vkllm__gguf_kv {
    struct vkllm__str key;
    uint32_t type; /* enum vkllm__gguf_vtype */
    union {
        uint64_t u;          /* U8, U16, U32, U64 */
        int64_t i;           /* I8, I16, I32, I64 */
        double f;            /* F32, F64 */
        int b;               /* BOOL */
        struct vkllm__str s; /* STRING */
    } v;
    uint32_t arr_type;       /* ARRAY: element type (may itself be ARRAY) */
    uint64_t arr_n;          /* ARRAY: element count */
    const uint8_t *arr_data; /* ARRAY: first element's bytes in the mapping */
    uint64_t arr_bytes;      /* ARRAY: bytes the elements occupy */
};

/* One tensor of the tensor table. ne[0] is the innermost (contiguous) dimension, as in ggml;
 * dimensions past n_dims are 1. */
struct vkllm__gguf_tensor {
    struct vkllm__str name;
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;    /* ggml type id (enum vkllm__type, runtime/base/types.h) */
    uint64_t offset;  /* bytes from the start of the data section */
    uint64_t nbytes;  /* bytes of data */
    const void *data; /* into the mapping */
};

struct vkllm__gguf {
    const uint8_t *base; /* whole file */
    uint64_t size;       /* bytes */
    uint32_t version;    /* 2 or 3 */
    uint64_t n_kv;
    struct vkllm__gguf_kv *kv;
    uint64_t n_tensors;
    struct vkllm__gguf_tensor *tensors;
    uint64_t alignment;   /* general.alignment or 32 */
    uint64_t data_offset; /* start of the data section in the file */
    char path[512];       /* for messages */
    /* private */
    void *map_;
    uint64_t map_size_;
    int fd_;                     /* the file, open while the handle is (-1: none), for vkllm__gguf_check */
    int guard_;                  /* mapguard.h id of the mapping, or -1 */
    int64_t mtime_s_, mtime_ns_; /* the file's modification time at open */
};

/* Open and validate a GGUF file (mmap'd read-only; the descriptor stays open for
 * vkllm__gguf_check, and the metadata's pages are copied, so that keys and strings stay readable
 * whatever happens to the file later; tensor data is read from the file's pages). Tensor
 * types are checked to be known ggml types with consistent sizes; whether vkllm can compute with
 * them is the model loader's call. Rules beyond the specification's letter:
 *  - every dimension is >= 1 and <= INT64_MAX (empty tensors are rejected; n_dims is 0..4);
 *  - tensor offsets are multiples of the alignment, tensors lie inside the file and do not
 *    overlap (any order and gaps are fine); keys and tensor names are unique;
 *  - nested arrays are allowed up to VKLLM__GGUF_MAX_DEPTH levels;
 *  - a file with no tensors may end right after the metadata (no padding).
 * Returns VKLLM_STATUS_BAD_FORMAT for a malformed file, VKLLM_STATUS_UNSUPPORTED for GGUF
 * versions other than 2 and 3 (v1, or a big-endian file), VKLLM_STATUS_NOT_FOUND / IO when the
 * file cannot be opened, VKLLM_STATUS_OOM; the message names the path and the byte offset. */
vkllm_status vkllm__gguf_open(const char *path, struct vkllm__gguf **out);

/* The same over a caller-owned buffer that must outlive the handle (fuzzing, tests). name is
 * used in messages. */
vkllm_status vkllm__gguf_open_memory(const void *data, uint64_t size, const char *name, struct vkllm__gguf **out);

void vkllm__gguf_close(struct vkllm__gguf *g);

/* Whether the file is still what was opened: VKLLM_STATUS_IO, "model file changed while loading"
 * and how, when it shrank under a read (mapguard.h: what was read past its end was zeros) or its
 * size or modification time are no longer those at open (it was truncated, or rewritten in
 * place). A file replaced by a rename is not a change: the handle reads the one it opened. OK for
 * a handle over memory. Loaders call it once they have read what they need. */
vkllm_status vkllm__gguf_check(const struct vkllm__gguf *g);

/* Lookup; NULL when absent. */
const struct vkllm__gguf_kv *vkllm__gguf_find(const struct vkllm__gguf *g, const char *key);
const struct vkllm__gguf_tensor *vkllm__gguf_find_tensor(const struct vkllm__gguf *g, const char *name);

/* Typed getters: VKLLM_STATUS_NOT_FOUND when the key is absent (no error text set), and
 * VKLLM_STATUS_BAD_FORMAT (message names the key) when its type does not fit.
 * get_u64 accepts any integer type holding a non-negative value; get_i64 any integer type;
 * get_f64 F32/F64 and integers; get_bool BOOL only; get_str STRING only. */
vkllm_status vkllm__gguf_get_u64(const struct vkllm__gguf *g, const char *key, uint64_t *out);
vkllm_status vkllm__gguf_get_i64(const struct vkllm__gguf *g, const char *key, int64_t *out);
vkllm_status vkllm__gguf_get_f64(const struct vkllm__gguf *g, const char *key, double *out);
vkllm_status vkllm__gguf_get_bool(const struct vkllm__gguf *g, const char *key, int *out);
vkllm_status vkllm__gguf_get_str(const struct vkllm__gguf *g, const char *key, struct vkllm__str *out);

/* An array whose element type is elem_type (or any when elem_type is VKLLM__GGUF_VTYPE_COUNT_). */
vkllm_status vkllm__gguf_get_arr(const struct vkllm__gguf *g, const char *key, uint32_t elem_type,
                                 const struct vkllm__gguf_kv **out);

/* Element i of a numeric (or BOOL) array (bounds and type checked by the caller: i < arr_n).
 * arr_i64 truncates floats and wraps u64 above INT64_MAX; both return 0 for a STRING or ARRAY
 * element type or an index out of range. */
int64_t vkllm__gguf_arr_i64(const struct vkllm__gguf_kv *kv, uint64_t i);
double vkllm__gguf_arr_f64(const struct vkllm__gguf_kv *kv, uint64_t i);

/* Deepest nesting of arrays (an array of arrays is depth 2). */
#define VKLLM__GGUF_MAX_DEPTH 8

/* Walk the elements of any ARRAY value in order, arrays of arrays and strings too:
 *   struct vkllm__gguf_arr_iter it; struct vkllm__gguf_kv e;
 *   vkllm__gguf_arr_iter_init(&it, kv);
 *   while (vkllm__gguf_arr_iter_next(&it, &e)) ... e.type, e.v / e.arr_* as for a kv; e.key empty
 * Each step costs the size of the element, so a whole walk is linear in the array's bytes. */
struct vkllm__gguf_arr_iter {
    const struct vkllm__gguf_kv *arr;
    uint64_t i;   /* elements returned so far */
    uint64_t pos; /* byte offset of the next element within arr_data */
};
void vkllm__gguf_arr_iter_init(struct vkllm__gguf_arr_iter *it, const struct vkllm__gguf_kv *arr);
/* 1 with the next element in *out, 0 at the end (or for a kv that is not an array). */
int vkllm__gguf_arr_iter_next(struct vkllm__gguf_arr_iter *it, struct vkllm__gguf_kv *out);

/* All elements of a STRING array, as an array of arr_n vkllm__str (into the mapping) that the
 * caller frees with vkllm__free(). */
vkllm_status vkllm__gguf_arr_strings(const struct vkllm__gguf_kv *kv, struct vkllm__str **out);

/* Bytes of the one value of type `type` at the start of bytes[0..nbytes) (what follows the u32
 * type of a kv), walking strings and nested arrays with bounds checks: VKLLM_STATUS_BAD_FORMAT
 * (message says what is wrong) when it is not a well-formed value. */
vkllm_status vkllm__gguf_value_size(uint32_t type, const void *bytes, uint64_t nbytes, uint64_t *size);

/* Compare a vkllm__str with a C string. */
int vkllm__str_eq(struct vkllm__str s, const char *c);

/* Name of a value type ("u32", "string", ...). */
const char *vkllm__gguf_vtype_name(uint32_t t);

#endif /* VKLLM_GGUF_H */
