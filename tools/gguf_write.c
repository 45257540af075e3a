/* gguf_write.c - GGUF v3 writer: metadata in insertion order (general.alignment always written),
 * tensor infos, then each tensor's data produced by its fill callback at write time, one tensor
 * buffer at a time. The file is written to a temporary file next to the target and renamed into
 * place, so a failed write never leaves a half-written model under the target name. A path that
 * is a character device or a FIFO is written to as it is (there is nothing to replace: -o
 * /dev/null, a pipe); a directory, block device or socket is refused, never renamed over. */
#include "gguf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "types.h"

#define GGUF_VERSION 3u
#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_NAME 63u /* ggml's GGML_MAX_NAME (64) less the NUL */

struct wkv {
    char *key;
    uint32_t type;
    uint8_t *val; /* the encoded value (what follows the u32 type) */
    uint64_t nval;
};

struct wtensor {
    char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint64_t nbytes;
    vkllm__gguf_fill_fn fill;
    void *user;
};

struct vkllm__gguf_writer {
    struct wkv *kv;
    uint64_t n_kv, cap_kv;
    struct wtensor *t;
    uint64_t n_t, cap_t;
    uint64_t alignment;
    int has_alignment; /* general.alignment was set explicitly */
};

static uint32_t scalar_size(uint32_t type) {
    switch (type) {
    case VKLLM__GGUF_U8:
    case VKLLM__GGUF_I8:
    case VKLLM__GGUF_BOOL: return 1;
    case VKLLM__GGUF_U16:
    case VKLLM__GGUF_I16: return 2;
    case VKLLM__GGUF_U32:
    case VKLLM__GGUF_I32:
    case VKLLM__GGUF_F32: return 4;
    case VKLLM__GGUF_U64:
    case VKLLM__GGUF_I64:
    case VKLLM__GGUF_F64: return 8;
    default: return 0;
    }
}

vkllm_status vkllm__gguf_writer_init(struct vkllm__gguf_writer **out) {
    if (!out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: out is NULL");
    *out = vkllm__calloc(1, sizeof **out);
    if (!*out) return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory");
    (*out)->alignment = GGUF_DEFAULT_ALIGNMENT;
    return VKLLM_STATUS_OK;
}

void vkllm__gguf_writer_free(struct vkllm__gguf_writer *w) {
    if (!w) return;
    for (uint64_t i = 0; i < w->n_kv; i++) {
        vkllm__free(w->kv[i].key);
        vkllm__free(w->kv[i].val);
    }
    for (uint64_t i = 0; i < w->n_t; i++) vkllm__free(w->t[i].name);
    vkllm__free(w->kv);
    vkllm__free(w->t);
    vkllm__free(w);
}

/* Grow *arr (elements of size sz) so that it holds at least n + 1. */
static int grow(void **arr, uint64_t *cap, uint64_t n, size_t sz) {
    if (n < *cap) return 1;
    uint64_t nc = *cap ? *cap * 2 : 16;
    if (nc > SIZE_MAX / sz) return 0;
    void *p = vkllm__realloc(*arr, (size_t)nc * sz);
    if (!p) return 0;
    *arr = p;
    *cap = nc;
    return 1;
}

// --- metadata ------------------------------------------------------------------------------

/* Store key = (type, encoded value bytes), taking ownership of val (freed on failure). */
static vkllm_status set_owned(struct vkllm__gguf_writer *w, const char *key, uint32_t type, uint8_t *val,
                              uint64_t nval) {
    if (!w || !key || !*key) {
        vkllm__free(val);
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: NULL writer or empty key");
    }
    if (strcmp(key, "general.alignment") == 0) {
        uint32_t a = 0;
        if (type == VKLLM__GGUF_U32) memcpy(&a, val, 4);
        if (type != VKLLM__GGUF_U32 || a == 0 || (a & (a - 1)) != 0) {
            vkllm__free(val);
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "gguf writer: general.alignment must be a u32 power of two");
        }
        w->alignment = a;
        w->has_alignment = 1;
    }
    for (uint64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            vkllm__free(w->kv[i].val);
            w->kv[i].type = type;
            w->kv[i].val = val;
            w->kv[i].nval = nval;
            return VKLLM_STATUS_OK;
        }
    }
    char *k = vkllm__strdup(key);
    if (!k || !grow((void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv)) {
        vkllm__free(k);
        vkllm__free(val);
        return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for key '%s'", key);
    }
    w->kv[w->n_kv++] = (struct wkv){k, type, val, nval};
    return VKLLM_STATUS_OK;
}

/* Copy n bytes into a new buffer and store them. */
static vkllm_status set_copy(struct vkllm__gguf_writer *w, const char *key, uint32_t type, const void *bytes,
                             uint64_t n) {
    if (n > SIZE_MAX) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: value too large");
    uint8_t *val = vkllm__malloc((size_t)n);
    if (!val) return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for key '%s'", key ? key : "");
    if (n) memcpy(val, bytes, (size_t)n);
    return set_owned(w, key, type, val, n);
}

vkllm_status vkllm__gguf_writer_set_val(struct vkllm__gguf_writer *w, const char *key, uint32_t type, const void *v) {
    uint32_t sz = scalar_size(type);
    if (!sz || !v)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: key '%s': %s is not a scalar type",
                          key ? key : "", vkllm__gguf_vtype_name(type));
    if (type == VKLLM__GGUF_BOOL) {
        uint8_t b = *(const uint8_t *)v != 0;
        return set_copy(w, key, type, &b, 1);
    }
    return set_copy(w, key, type, v, sz);
}

vkllm_status vkllm__gguf_writer_set_u32(struct vkllm__gguf_writer *w, const char *key, uint32_t v) {
    return vkllm__gguf_writer_set_val(w, key, VKLLM__GGUF_U32, &v);
}
vkllm_status vkllm__gguf_writer_set_i32(struct vkllm__gguf_writer *w, const char *key, int32_t v) {
    return vkllm__gguf_writer_set_val(w, key, VKLLM__GGUF_I32, &v);
}
vkllm_status vkllm__gguf_writer_set_u64(struct vkllm__gguf_writer *w, const char *key, uint64_t v) {
    return vkllm__gguf_writer_set_val(w, key, VKLLM__GGUF_U64, &v);
}
vkllm_status vkllm__gguf_writer_set_f32(struct vkllm__gguf_writer *w, const char *key, float v) {
    return vkllm__gguf_writer_set_val(w, key, VKLLM__GGUF_F32, &v);
}
vkllm_status vkllm__gguf_writer_set_bool(struct vkllm__gguf_writer *w, const char *key, int v) {
    uint8_t b = v != 0;
    return vkllm__gguf_writer_set_val(w, key, VKLLM__GGUF_BOOL, &b);
}

vkllm_status vkllm__gguf_writer_set_str(struct vkllm__gguf_writer *w, const char *key, const char *v) {
    if (!v) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: key '%s': NULL string", key ? key : "");
    uint64_t len = strlen(v);
    uint8_t *val = vkllm__malloc((size_t)len + 8);
    if (!val) return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for key '%s'", key ? key : "");
    memcpy(val, &len, 8);
    memcpy(val + 8, v, (size_t)len);
    return set_owned(w, key, VKLLM__GGUF_STRING, val, len + 8);
}

/* An array value: element type, count, then body bytes (already encoded). */
static vkllm_status set_array(struct vkllm__gguf_writer *w, const char *key, uint32_t et, uint64_t n, const void *body,
                              uint64_t nbody) {
    uint64_t total;
    if (!vkllm__add_u64(nbody, 12, &total) || total > SIZE_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: key '%s': array too large", key ? key : "");
    uint8_t *val = vkllm__malloc((size_t)total);
    if (!val) return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for key '%s'", key ? key : "");
    memcpy(val, &et, 4);
    memcpy(val + 4, &n, 8);
    if (nbody) memcpy(val + 12, body, (size_t)nbody);
    return set_owned(w, key, VKLLM__GGUF_ARRAY, val, total);
}

vkllm_status vkllm__gguf_writer_set_arr(struct vkllm__gguf_writer *w, const char *key, uint32_t elem_type,
                                        const void *data, uint64_t n) {
    uint32_t sz = scalar_size(elem_type);
    uint64_t nbody;
    if (!sz || (!data && n) || !vkllm__mul_u64(n, sz, &nbody))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: key '%s': bad numeric array (%s x %llu)",
                          key ? key : "", vkllm__gguf_vtype_name(elem_type), (unsigned long long)n);
    if (elem_type != VKLLM__GGUF_BOOL) return set_array(w, key, elem_type, n, data, nbody);
    /* Booleans are normalized to 0/1. */
    uint8_t *b = vkllm__malloc((size_t)(n ? n : 1));
    if (!b) return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for key '%s'", key ? key : "");
    for (uint64_t i = 0; i < n; i++) b[i] = ((const uint8_t *)data)[i] != 0;
    vkllm_status st = set_array(w, key, elem_type, n, b, n);
    vkllm__free(b);
    return st;
}

vkllm_status vkllm__gguf_writer_set_arr_str(struct vkllm__gguf_writer *w, const char *key, const char *const *strs,
                                            uint64_t n) {
    uint64_t nbody = 0;
    int ok = strs || n == 0;
    for (uint64_t i = 0; ok && i < n; i++) ok = strs[i] && vkllm__add_u64(nbody, 8 + (uint64_t)strlen(strs[i]), &nbody);
    if (!ok || nbody > SIZE_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: key '%s': bad string array", key ? key : "");
    uint8_t *body = vkllm__malloc((size_t)(nbody ? nbody : 1));
    if (!body) return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for key '%s'", key ? key : "");
    uint8_t *p = body;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = strlen(strs[i]);
        memcpy(p, &len, 8);
        memcpy(p + 8, strs[i], (size_t)len);
        p += 8 + len;
    }
    vkllm_status st = set_array(w, key, VKLLM__GGUF_STRING, n, body, nbody);
    vkllm__free(body);
    return st;
}

vkllm_status vkllm__gguf_writer_set_raw(struct vkllm__gguf_writer *w, const char *key, uint32_t type, const void *bytes,
                                        uint64_t nbytes) {
    uint64_t sz = 0;
    if (vkllm__gguf_value_size(type, bytes, nbytes, &sz) != VKLLM_STATUS_OK || sz != nbytes) {
        char why[256];
        snprintf(why, sizeof why, "%s", sz != nbytes && sz ? "trailing bytes" : vkllm_last_error());
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: key '%s': malformed %s value: %s",
                          key ? key : "", vkllm__gguf_vtype_name(type), why);
    }
    return set_copy(w, key, type, bytes, nbytes);
}

vkllm_status vkllm__gguf_writer_set_kv(struct vkllm__gguf_writer *w, const char *key, const struct vkllm__gguf_kv *kv) {
    if (!kv) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: NULL kv");
    switch (kv->type) {
    case VKLLM__GGUF_STRING: {
        uint64_t n = kv->v.s.len;
        if (n > SIZE_MAX - 8) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: string too large");
        uint8_t *val = vkllm__malloc((size_t)n + 8);
        if (!val) return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for key '%s'", key ? key : "");
        memcpy(val, &n, 8);
        if (n) memcpy(val + 8, kv->v.s.ptr, (size_t)n);
        return set_owned(w, key, VKLLM__GGUF_STRING, val, n + 8);
    }
    case VKLLM__GGUF_ARRAY:
        /* The element bytes are already in GGUF encoding. */
        return set_array(w, key, kv->arr_type, kv->arr_n, kv->arr_data, kv->arr_bytes);
    case VKLLM__GGUF_U8: {
        uint8_t x = (uint8_t)kv->v.u;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    case VKLLM__GGUF_I8: {
        int8_t x = (int8_t)kv->v.i;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    case VKLLM__GGUF_U16: {
        uint16_t x = (uint16_t)kv->v.u;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    case VKLLM__GGUF_I16: {
        int16_t x = (int16_t)kv->v.i;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    case VKLLM__GGUF_U32: {
        uint32_t x = (uint32_t)kv->v.u;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    case VKLLM__GGUF_I32: {
        int32_t x = (int32_t)kv->v.i;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    case VKLLM__GGUF_U64: return vkllm__gguf_writer_set_val(w, key, kv->type, &kv->v.u);
    case VKLLM__GGUF_I64: return vkllm__gguf_writer_set_val(w, key, kv->type, &kv->v.i);
    case VKLLM__GGUF_F32: {
        float x = (float)kv->v.f;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    case VKLLM__GGUF_F64: return vkllm__gguf_writer_set_val(w, key, kv->type, &kv->v.f);
    case VKLLM__GGUF_BOOL: {
        uint8_t x = kv->v.b != 0;
        return vkllm__gguf_writer_set_val(w, key, kv->type, &x);
    }
    default:
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: key '%s': unknown value type %u", key ? key : "",
                          (unsigned)kv->type);
    }
}

// --- tensors -------------------------------------------------------------------------------

vkllm_status vkllm__gguf_writer_add_tensor(struct vkllm__gguf_writer *w, const char *name, uint32_t type,
                                           uint32_t n_dims, const uint64_t *ne, vkllm__gguf_fill_fn fill, void *user) {
    if (!w || !name || !fill || (!ne && n_dims))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: add_tensor: NULL argument");
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen > GGUF_MAX_NAME)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: tensor name '%s' must have 1 to %u bytes", name,
                          GGUF_MAX_NAME);
    if (n_dims < 1 || n_dims > 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: tensor '%s': n_dims %u not in 1..4", name,
                          (unsigned)n_dims);
    for (uint64_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: duplicate tensor '%s'", name);
    struct wtensor t = {NULL, type, n_dims, {1, 1, 1, 1}, 0, fill, user};
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: tensor '%s': ne[%u] = %llu", name,
                              (unsigned)d, (unsigned long long)ne[d]);
        t.ne[d] = ne[d];
    }
    vkllm_status st = vkllm__row_size(type, t.ne[0], &t.nbytes);
    if (st != VKLLM_STATUS_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", vkllm_last_error());
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: tensor '%s': %s", name, why);
    }
    for (int d = 1; d < 4; d++)
        if (!vkllm__mul_u64(t.nbytes, t.ne[d], &t.nbytes))
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: tensor '%s': size overflows", name);
    t.name = vkllm__strdup(name);
    if (!t.name || !grow((void **)&w->t, &w->cap_t, w->n_t, sizeof *w->t)) {
        vkllm__free(t.name);
        return vkllm__err(VKLLM_STATUS_OOM, "gguf writer: out of memory for tensor '%s'", name);
    }
    w->t[w->n_t++] = t;
    return VKLLM_STATUS_OK;
}

// --- output --------------------------------------------------------------------------------

/* Buffered output to a file descriptor; the first failure sticks in st. */
struct out {
    int fd;
    const char *path;
    vkllm_status st;
    uint64_t written;
    size_t n;
    uint8_t buf[1 << 16];
};

static void out_raw(struct out *o, const uint8_t *p, size_t n) {
    while (n > 0 && o->st == VKLLM_STATUS_OK) {
        ssize_t k = write(o->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            o->st = vkllm__err(VKLLM_STATUS_IO, "%s: write failed after %llu bytes: %s", o->path,
                               (unsigned long long)o->written, k < 0 ? strerror(errno) : "no progress");
            return;
        }
        p += k;
        n -= (size_t)k;
        o->written += (uint64_t)k;
    }
}

static void out_flush(struct out *o) {
    out_raw(o, o->buf, o->n);
    o->n = 0;
}

static void out_bytes(struct out *o, const void *p, uint64_t n) {
    const uint8_t *b = p;
    if (o->n + n > sizeof o->buf) out_flush(o);
    if (n >= sizeof o->buf) {
        out_raw(o, b, (size_t)n);
        return;
    }
    memcpy(o->buf + o->n, b, (size_t)n);
    o->n += (size_t)n;
}

static void out_u32(struct out *o, uint32_t v) { out_bytes(o, &v, 4); }
static void out_u64(struct out *o, uint64_t v) { out_bytes(o, &v, 8); }
static void out_str(struct out *o, const char *s) {
    uint64_t n = strlen(s);
    out_u64(o, n);
    out_bytes(o, s, n);
}

/* Zero bytes up to the next multiple of the alignment (pos is bytes written so far). */
static void out_pad(struct out *o, uint64_t pos, uint64_t a) {
    static const uint8_t zeros[256];
    uint64_t pad = (a - pos % a) % a;
    while (pad > 0) {
        uint64_t k = pad < sizeof zeros ? pad : sizeof zeros;
        out_bytes(o, zeros, k);
        pad -= k;
    }
}

static vkllm_status write_meta(struct vkllm__gguf_writer *w, struct out *o, uint64_t *pos) {
    uint64_t a = w->alignment;
    out_bytes(o, "GGUF", 4);
    out_u32(o, GGUF_VERSION);
    out_u64(o, w->n_t);
    out_u64(o, w->n_kv + (w->has_alignment ? 0 : 1));
    for (uint64_t i = 0; i < w->n_kv; i++) {
        out_str(o, w->kv[i].key);
        out_u32(o, w->kv[i].type);
        out_bytes(o, w->kv[i].val, w->kv[i].nval);
    }
    if (!w->has_alignment) {
        out_str(o, "general.alignment");
        out_u32(o, VKLLM__GGUF_U32);
        out_u32(o, (uint32_t)a);
    }
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        out_str(o, t->name);
        out_u32(o, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) out_u64(o, t->ne[d]);
        out_u32(o, t->type);
        out_u64(o, off);
        uint64_t padded = t->nbytes + (a - t->nbytes % a) % a;
        if (!vkllm__add_u64(off, padded, &off))
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: tensor data exceeds 2^64 bytes", o->path);
    }
    *pos = o->written + o->n;
    out_pad(o, *pos, a);
    *pos = o->written + o->n;
    return o->st;
}

static vkllm_status write_data(struct vkllm__gguf_writer *w, struct out *o) {
    for (uint64_t i = 0; i < w->n_t && o->st == VKLLM_STATUS_OK; i++) {
        const struct wtensor *t = &w->t[i];
        if (t->nbytes > SIZE_MAX)
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: tensor '%s' too large for memory", o->path, t->name);
        void *buf = vkllm__malloc((size_t)t->nbytes);
        if (!buf)
            return vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory for tensor '%s' (%llu bytes)", o->path, t->name,
                              (unsigned long long)t->nbytes);
        vkllm_status st = t->fill(t->user, buf, t->nbytes);
        if (st != VKLLM_STATUS_OK) {
            vkllm__free(buf);
            return st;
        }
        out_bytes(o, buf, t->nbytes);
        vkllm__free(buf);
        out_pad(o, o->written + o->n, w->alignment);
    }
    out_flush(o);
    return o->st;
}

/* Write to something that is not a file, and cannot be replaced by one: a character device
 * (/dev/null, a terminal) or a FIFO, opened as it is (no rename, no fsync). */
static vkllm_status write_stream(struct vkllm__gguf_writer *w, const char *path) {
    struct out *o = vkllm__calloc(1, sizeof *o);
    if (!o) return vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory", path);
    o->path = path;
    o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    vkllm_status st;
    uint64_t pos;
    if (o->fd < 0) st = vkllm__err(VKLLM_STATUS_IO, "%s: cannot open: %s", path, strerror(errno));
    else if ((st = write_meta(w, o, &pos)) == VKLLM_STATUS_OK) st = write_data(w, o);
    if (o->fd >= 0 && close(o->fd) != 0 && !st)
        st = vkllm__err(VKLLM_STATUS_IO, "%s: close failed: %s", path, strerror(errno));
    vkllm__free(o);
    return st;
}

/* Where the temporary file goes and what the rename replaces: path, or the file a symbolic link
 * at path names (the link stays a link). *target NULL: write to path as a stream (write_stream).
 * Anything else that is not a regular file is refused: a rename would put a regular file in its
 * place (a device node, a socket) or fail (a directory). */
static vkllm_status pick_target(const char *path, char **target) {
    struct stat sb, lsb;
    *target = NULL;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT) return vkllm__err(VKLLM_STATUS_IO, "%s: cannot stat: %s", path, strerror(errno));
        if (lstat(path, &lsb) == 0) /* a link to nothing: the rename would replace the link */
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "%s: a symbolic link to a file that does not exist; "
                              "refusing to replace the link",
                              path);
        *target = vkllm__strdup(path);
        return *target ? VKLLM_STATUS_OK : vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory", path);
    }
    if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)) return VKLLM_STATUS_OK;
    if (!S_ISREG(sb.st_mode))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "%s: is a %s, not a regular file; refusing to write a model "
                          "over it (a character device such as /dev/null, or a FIFO, is written to)",
                          path,
                          S_ISDIR(sb.st_mode)    ? "directory"
                          : S_ISBLK(sb.st_mode)  ? "block device"
                          : S_ISSOCK(sb.st_mode) ? "socket"
                                                 : "special file");
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real)
            return vkllm__err(VKLLM_STATUS_IO, "%s: cannot resolve the symbolic link: %s", path, strerror(errno));
        *target = vkllm__strdup(real);
        free(real);
    } else {
        *target = vkllm__strdup(path);
    }
    return *target ? VKLLM_STATUS_OK : vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory", path);
}

vkllm_status vkllm__gguf_writer_write(struct vkllm__gguf_writer *w, const char *path) {
    if (!w || !path || !*path) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf writer: NULL path");
    char *target = NULL;
    vkllm_status st = pick_target(path, &target);
    if (st) return st;
    if (!target) return write_stream(w, path);
    size_t plen = strlen(target);
    char *tmp = vkllm__malloc(plen + 16);
    struct out *o = vkllm__calloc(1, sizeof *o);
    if (!tmp || !o) {
        vkllm__free(tmp);
        vkllm__free(o);
        vkllm__free(target);
        return vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory", path);
    }
    snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", target);
    o->fd = mkstemp(tmp);
    o->path = path;
    if (o->fd < 0) {
        st = vkllm__err(VKLLM_STATUS_IO, "%s: cannot create temporary file %s: %s", path, tmp, strerror(errno));
        goto done;
    }
    (void)fchmod(o->fd, 0644); /* mkstemp creates 0600; a model file is normally world-readable */
    uint64_t pos;
    if ((st = write_meta(w, o, &pos)) != VKLLM_STATUS_OK) goto fail;
    if ((st = write_data(w, o)) != VKLLM_STATUS_OK) goto fail;
    if (fsync(o->fd) != 0) {
        st = vkllm__err(VKLLM_STATUS_IO, "%s: fsync failed: %s", path, strerror(errno));
        goto fail;
    }
    int fd = o->fd;
    o->fd = -1;
    if (close(fd) != 0) {
        st = vkllm__err(VKLLM_STATUS_IO, "%s: close failed: %s", path, strerror(errno));
        goto fail;
    }
    if (rename(tmp, target) != 0) {
        st = vkllm__err(VKLLM_STATUS_IO, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        goto fail;
    }
    goto done;
fail:
    if (o->fd >= 0) close(o->fd);
    unlink(tmp);
done:
    vkllm__free(tmp);
    vkllm__free(o);
    vkllm__free(target);
    return st;
}
