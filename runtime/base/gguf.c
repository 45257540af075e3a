/* gguf.c - GGUF v2/v3 reader over mmap.
 *
 * Every length, count, offset and dimension is checked against what is left of the file before
 * it is used, with overflow-checked arithmetic, and counts are bounded by what the remaining
 * bytes could hold before anything is allocated. A malformed file gives BAD_FORMAT with
 * "<path>: offset N: <what is wrong>", never a read outside the buffer. The writer is in
 * gguf_write.c. */
#include "gguf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mapguard.h"
#include "os.h"
#include "types.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader assumes a little-endian host"
#endif

#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_HEADER_BYTES 24u    /* magic, version, n_tensors, n_kv */
#define GGUF_MIN_KV_BYTES 13u    /* empty key (8) + type (4) + one-byte value */
#define GGUF_MIN_TINFO_BYTES 24u /* empty name (8) + n_dims (4) + type (4) + offset (8) */
#define GGUF_MAX_DIMS 4u

/* Bytes of a scalar of each value type; 0 for STRING and ARRAY (variable size). */
static const uint8_t vtype_size[VKLLM__GGUF_VTYPE_COUNT_] = {
    [VKLLM__GGUF_U8] = 1,  [VKLLM__GGUF_I8] = 1,  [VKLLM__GGUF_U16] = 2, [VKLLM__GGUF_I16] = 2,
    [VKLLM__GGUF_U32] = 4, [VKLLM__GGUF_I32] = 4, [VKLLM__GGUF_F32] = 4, [VKLLM__GGUF_BOOL] = 1,
    [VKLLM__GGUF_U64] = 8, [VKLLM__GGUF_I64] = 8, [VKLLM__GGUF_F64] = 8,
};

const char *vkllm__gguf_vtype_name(uint32_t t) {
    static const char *const names[VKLLM__GGUF_VTYPE_COUNT_] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return t < VKLLM__GGUF_VTYPE_COUNT_ ? names[t] : "unknown";
}

int vkllm__str_eq(struct vkllm__str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

/* A file string made printable for a message: at most 64 bytes, control bytes as '?'. */
struct shown {
    char s[72];
};
static struct shown show(struct vkllm__str str) {
    struct shown o;
    uint64_t n = str.len < 64 ? str.len : 64;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)str.ptr[i];
        o.s[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (str.len > 64) {
        memcpy(o.s + n, "...", 4);
    } else {
        o.s[n] = 0;
    }
    return o;
}

// --- cursor --------------------------------------------------------------------------------

/* A bounds-checked cursor over base[0..size). With path NULL it is quiet (walking data that was
 * validated at open) and sets no error text. */
struct rd {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    const char *path;
};

static vkllm_status rd_err(const struct rd *r, vkllm_status st, uint64_t off, const char *fmt, ...) VKLLM_PRINTF(4, 5);
static vkllm_status rd_err(const struct rd *r, vkllm_status st, uint64_t off, const char *fmt, ...) {
    if (!r->path) return st;
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vkllm__err(st, "%s: offset %llu: %s", r->path, (unsigned long long)off, msg);
}
#define BAD VKLLM_STATUS_BAD_FORMAT

static uint64_t rd_left(const struct rd *r) { return r->size - r->pos; }

/* ctx names the enclosing item ("key 'x'") for messages; what names the field. */
static vkllm_status rd_need(const struct rd *r, uint64_t n, const char *ctx, const char *what) {
    if (n <= rd_left(r)) return VKLLM_STATUS_OK;
    return rd_err(r, BAD, r->pos, "%s%s%s needs %llu bytes but only %llu are left (file size %llu)", ctx,
                  *ctx ? ": " : "", what, (unsigned long long)n, (unsigned long long)rd_left(r),
                  (unsigned long long)r->size);
}

static vkllm_status rd_u32(struct rd *r, uint32_t *v, const char *ctx, const char *what) {
    vkllm_status st = rd_need(r, 4, ctx, what);
    if (st != VKLLM_STATUS_OK) return st;
    memcpy(v, r->base + r->pos, 4);
    r->pos += 4;
    return VKLLM_STATUS_OK;
}

static vkllm_status rd_u64(struct rd *r, uint64_t *v, const char *ctx, const char *what) {
    vkllm_status st = rd_need(r, 8, ctx, what);
    if (st != VKLLM_STATUS_OK) return st;
    memcpy(v, r->base + r->pos, 8);
    r->pos += 8;
    return VKLLM_STATUS_OK;
}

static vkllm_status rd_str(struct rd *r, struct vkllm__str *s, const char *ctx, const char *what) {
    uint64_t at = r->pos, len;
    vkllm_status st = rd_u64(r, &len, ctx, what);
    if (st != VKLLM_STATUS_OK) return st;
    if (len > rd_left(r))
        return rd_err(r, BAD, at, "%s%s%s length %llu exceeds the %llu bytes left (file size %llu)", ctx,
                      *ctx ? ": " : "", what, (unsigned long long)len, (unsigned long long)rd_left(r),
                      (unsigned long long)r->size);
    s->ptr = (const char *)r->base + r->pos;
    s->len = len;
    r->pos += len;
    return VKLLM_STATUS_OK;
}

// --- values --------------------------------------------------------------------------------

// clang-format off
static void decode_scalar(uint32_t type, const uint8_t *p, struct vkllm__gguf_kv *out) {
    switch (type) {
    case VKLLM__GGUF_U8: out->v.u = p[0]; break;
    case VKLLM__GGUF_I8: out->v.i = (int8_t)p[0]; break;
    case VKLLM__GGUF_BOOL: out->v.b = p[0] != 0; break;
    case VKLLM__GGUF_U16: { uint16_t x; memcpy(&x, p, 2); out->v.u = x; break; }
    case VKLLM__GGUF_I16: { int16_t x; memcpy(&x, p, 2); out->v.i = x; break; }
    case VKLLM__GGUF_U32: { uint32_t x; memcpy(&x, p, 4); out->v.u = x; break; }
    case VKLLM__GGUF_I32: { int32_t x; memcpy(&x, p, 4); out->v.i = x; break; }
    case VKLLM__GGUF_F32: { float x; memcpy(&x, p, 4); out->v.f = x; break; }
    case VKLLM__GGUF_U64: { uint64_t x; memcpy(&x, p, 8); out->v.u = x; break; }
    case VKLLM__GGUF_I64: { int64_t x; memcpy(&x, p, 8); out->v.i = x; break; }
    case VKLLM__GGUF_F64: { double x; memcpy(&x, p, 8); out->v.f = x; break; }
    default: break;
    }
}
// clang-format on

static vkllm_status rd_value(struct rd *r, uint32_t type, int depth, const char *ctx, struct vkllm__gguf_kv *out);

/* The body of an ARRAY value: element type, count, elements. depth counts the arrays that
 * enclose this one. */
static vkllm_status rd_array(struct rd *r, int depth, const char *ctx, struct vkllm__gguf_kv *out) {
    uint64_t at = r->pos;
    uint32_t et;
    uint64_t n;
    vkllm_status st = rd_u32(r, &et, ctx, "array element type");
    if (st != VKLLM_STATUS_OK) return st;
    if (et >= VKLLM__GGUF_VTYPE_COUNT_)
        return rd_err(r, BAD, at, "%s: unknown array element type %u", ctx, (unsigned)et);
    if (et == VKLLM__GGUF_ARRAY && depth + 2 > VKLLM__GGUF_MAX_DEPTH)
        return rd_err(r, BAD, at, "%s: arrays nested deeper than %d levels", ctx, VKLLM__GGUF_MAX_DEPTH);
    uint64_t at_n = r->pos;
    if ((st = rd_u64(r, &n, ctx, "array count")) != VKLLM_STATUS_OK) return st;
    uint64_t start = r->pos;
    /* Every element takes at least min bytes: bound the count before walking. */
    uint64_t min = vtype_size[et] ? vtype_size[et] : (et == VKLLM__GGUF_STRING ? 8 : 12);
    if (n > rd_left(r) / min)
        return rd_err(r, BAD, at_n,
                      "%s: array of %llu %s elements (at least %llu bytes each) exceeds the %llu "
                      "bytes left (file size %llu)",
                      ctx, (unsigned long long)n, vkllm__gguf_vtype_name(et), (unsigned long long)min,
                      (unsigned long long)rd_left(r), (unsigned long long)r->size);
    if (vtype_size[et]) {
        r->pos += n * min;
    } else {
        for (uint64_t i = 0; i < n; i++) {
            if (et == VKLLM__GGUF_STRING) {
                struct vkllm__str s;
                st = rd_str(r, &s, ctx, "array string");
            } else {
                st = rd_value(r, VKLLM__GGUF_ARRAY, depth + 1, ctx, NULL);
            }
            if (st != VKLLM_STATUS_OK) return st;
        }
    }
    if (out) {
        out->arr_type = et;
        out->arr_n = n;
        out->arr_data = r->base + start;
        out->arr_bytes = r->pos - start;
    }
    return VKLLM_STATUS_OK;
}

/* One value of a known type (what follows the u32 type of a kv); out may be NULL (skip). */
static vkllm_status rd_value(struct rd *r, uint32_t type, int depth, const char *ctx, struct vkllm__gguf_kv *out) {
    if (type >= VKLLM__GGUF_VTYPE_COUNT_)
        return rd_err(r, BAD, r->pos, "%s: unknown value type %u", ctx, (unsigned)type);
    if (out) out->type = type;
    if (type == VKLLM__GGUF_STRING) {
        struct vkllm__str s;
        vkllm_status st = rd_str(r, &s, ctx, "string");
        if (st == VKLLM_STATUS_OK && out) out->v.s = s;
        return st;
    }
    if (type == VKLLM__GGUF_ARRAY) return rd_array(r, depth, ctx, out);
    vkllm_status st = rd_need(r, vtype_size[type], ctx, vkllm__gguf_vtype_name(type));
    if (st != VKLLM_STATUS_OK) return st;
    if (out) decode_scalar(type, r->base + r->pos, out);
    r->pos += vtype_size[type];
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gguf_value_size(uint32_t type, const void *bytes, uint64_t nbytes, uint64_t *size) {
    struct rd r = {bytes, nbytes, 0, "value"};
    if (!bytes && nbytes) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "value: NULL bytes");
    vkllm_status st = rd_value(&r, type, 0, "value", NULL);
    if (st == VKLLM_STATUS_OK) *size = r.pos;
    return st;
}

// --- uniqueness and overlap ----------------------------------------------------------------

/* A named item (key or tensor) with the file offset of its entry and, for tensors, its data. */
struct span {
    struct vkllm__str name;
    uint64_t at;
    uint64_t start, end;
};

static int cmp_name(const void *a, const void *b) {
    const struct span *x = a, *y = b;
    uint64_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = n ? memcmp(x->name.ptr, y->name.ptr, n) : 0;
    if (c) return c;
    if (x->name.len != y->name.len) return x->name.len < y->name.len ? -1 : 1;
    return x->at < y->at ? -1 : (x->at > y->at);
}

static int cmp_start(const void *a, const void *b) {
    const struct span *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->at < y->at ? -1 : (x->at > y->at);
}

/* BAD_FORMAT naming the second of two equal names; spans are sorted in place. */
static vkllm_status check_unique(const struct rd *r, struct span *s, uint64_t n, const char *what) {
    if (n < 2) return VKLLM_STATUS_OK;
    qsort(s, (size_t)n, sizeof *s, cmp_name);
    for (uint64_t i = 1; i < n; i++) {
        if (s[i].name.len == s[i - 1].name.len &&
            (s[i].name.len == 0 || memcmp(s[i].name.ptr, s[i - 1].name.ptr, s[i].name.len) == 0))
            return rd_err(r, BAD, s[i].at, "duplicate %s '%s' (first at offset %llu)", what, show(s[i].name).s,
                          (unsigned long long)s[i - 1].at);
    }
    return VKLLM_STATUS_OK;
}

static vkllm_status check_overlap(const struct rd *r, struct span *s, uint64_t n) {
    if (n < 2) return VKLLM_STATUS_OK;
    qsort(s, (size_t)n, sizeof *s, cmp_start);
    for (uint64_t i = 1; i < n; i++) {
        if (s[i].start < s[i - 1].end)
            return rd_err(r, BAD, s[i].at, "tensor '%s': data [%llu, %llu) overlaps tensor '%s' data [%llu, %llu)",
                          show(s[i].name).s, (unsigned long long)s[i].start, (unsigned long long)s[i].end,
                          show(s[i - 1].name).s, (unsigned long long)s[i - 1].start, (unsigned long long)s[i - 1].end);
    }
    return VKLLM_STATUS_OK;
}

// --- sections ------------------------------------------------------------------------------

static vkllm_status parse_header(struct rd *r, struct vkllm__gguf *g) {
    if (r->size < 4)
        return rd_err(r, BAD, 0, "file of %llu bytes is too small to be a GGUF file", (unsigned long long)r->size);
    const uint8_t *m = r->base;
    if (memcmp(m, "GGUF", 4) != 0)
        return rd_err(r, BAD, 0, "not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")", m[0], m[1], m[2],
                      m[3]);
    r->pos = 4;
    uint32_t v;
    vkllm_status st = rd_u32(r, &v, "header", "version");
    if (st != VKLLM_STATUS_OK) return st;
    uint32_t swapped = __builtin_bswap32(v);
    if (v == 1)
        return rd_err(r, VKLLM_STATUS_UNSUPPORTED, 4,
                      "GGUF version 1 is not supported (only 2 and 3): convert the model again");
    if (v != 2 && v != 3) {
        if (swapped == 2 || swapped == 3)
            return rd_err(r, VKLLM_STATUS_UNSUPPORTED, 4, "big-endian GGUF (version %u byte-swapped) is not supported",
                          (unsigned)swapped);
        return rd_err(r, VKLLM_STATUS_UNSUPPORTED, 4, "GGUF version %u is not supported (only 2 and 3)", (unsigned)v);
    }
    g->version = v;
    if ((st = rd_u64(r, &g->n_tensors, "header", "n_tensors")) != VKLLM_STATUS_OK) return st;
    if ((st = rd_u64(r, &g->n_kv, "header", "n_kv")) != VKLLM_STATUS_OK) return st;
    /* Bound both counts by what the rest of the file could hold, before allocating. */
    uint64_t left = rd_left(r);
    if (g->n_kv > left / GGUF_MIN_KV_BYTES)
        return rd_err(r, BAD, 16,
                      "n_kv %llu: that many metadata pairs cannot fit in the %llu bytes "
                      "left (file size %llu)",
                      (unsigned long long)g->n_kv, (unsigned long long)left, (unsigned long long)r->size);
    if (g->n_tensors > left / GGUF_MIN_TINFO_BYTES ||
        g->n_kv * GGUF_MIN_KV_BYTES + g->n_tensors * GGUF_MIN_TINFO_BYTES > left)
        return rd_err(r, BAD, 8,
                      "n_tensors %llu (with n_kv %llu): that many entries cannot fit in the %llu "
                      "bytes left (file size %llu)",
                      (unsigned long long)g->n_tensors, (unsigned long long)g->n_kv, (unsigned long long)left,
                      (unsigned long long)r->size);
    return VKLLM_STATUS_OK;
}

static vkllm_status check_alignment(const struct rd *r, const struct vkllm__gguf_kv *kv, uint64_t at,
                                    uint64_t *alignment) {
    if (kv->type != VKLLM__GGUF_U32)
        return rd_err(r, BAD, at, "general.alignment has type %s; it must be u32", vkllm__gguf_vtype_name(kv->type));
    uint64_t a = kv->v.u;
    if (a == 0 || (a & (a - 1)) != 0)
        return rd_err(r, BAD, at, "general.alignment %llu is not a nonzero power of two", (unsigned long long)a);
    *alignment = a;
    return VKLLM_STATUS_OK;
}

static vkllm_status parse_kvs(struct rd *r, struct vkllm__gguf *g, struct span *spans) {
    vkllm_status st;
    char ctx[128];
    for (uint64_t i = 0; i < g->n_kv; i++) {
        struct vkllm__gguf_kv *kv = &g->kv[i];
        uint64_t at = r->pos;
        snprintf(ctx, sizeof ctx, "metadata pair %llu of %llu", (unsigned long long)i, (unsigned long long)g->n_kv);
        if ((st = rd_str(r, &kv->key, ctx, "key")) != VKLLM_STATUS_OK) return st;
        if (kv->key.len == 0) return rd_err(r, BAD, at, "%s has an empty key", ctx);
        snprintf(ctx, sizeof ctx, "key '%s'", show(kv->key).s);
        uint64_t at_type = r->pos;
        uint32_t type;
        if ((st = rd_u32(r, &type, ctx, "value type")) != VKLLM_STATUS_OK) return st;
        if (type >= VKLLM__GGUF_VTYPE_COUNT_)
            return rd_err(r, BAD, at_type, "%s: unknown value type %u", ctx, (unsigned)type);
        if ((st = rd_value(r, type, 0, ctx, kv)) != VKLLM_STATUS_OK) return st;
        if (vkllm__str_eq(kv->key, "general.alignment") &&
            (st = check_alignment(r, kv, at, &g->alignment)) != VKLLM_STATUS_OK)
            return st;
        spans[i] = (struct span){kv->key, at, 0, 0};
    }
    return check_unique(r, spans, g->n_kv, "key");
}

/* Bytes of a tensor of type t and shape ne; 0 with a message when it overflows. */
static vkllm_status tensor_size(const struct rd *r, uint64_t at, const char *ctx, uint32_t type, const uint64_t ne[4],
                                uint64_t *nbytes) {
    const struct vkllm__type_traits *tt = vkllm__type_traits(type);
    if (!tt) return rd_err(r, BAD, at, "%s: unknown tensor type id %u", ctx, (unsigned)type);
    if (ne[0] % tt->block_size != 0)
        return rd_err(r, BAD, at, "%s: ne[0] = %llu is not a multiple of the block size %u of type %s", ctx,
                      (unsigned long long)ne[0], (unsigned)tt->block_size, tt->name);
    uint64_t bytes = 0, elems = 0;
    int ok = vkllm__mul_u64(ne[0] / tt->block_size, tt->type_size, &bytes) && vkllm__mul_u64(ne[0], ne[1], &elems) &&
             vkllm__mul_u64(elems, ne[2], &elems) && vkllm__mul_u64(elems, ne[3], &elems) &&
             elems <= (uint64_t)INT64_MAX;
    for (int d = 1; ok && d < 4; d++) ok = vkllm__mul_u64(bytes, ne[d], &bytes);
    if (!ok)
        return rd_err(r, BAD, at,
                      "%s: shape [%llu, %llu, %llu, %llu] of type %s is too large "
                      "(element or byte count overflows)",
                      ctx, (unsigned long long)ne[0], (unsigned long long)ne[1], (unsigned long long)ne[2],
                      (unsigned long long)ne[3], tt->name);
    *nbytes = bytes;
    return VKLLM_STATUS_OK;
}

static vkllm_status parse_tensor_info(struct rd *r, uint64_t i, uint64_t n, struct vkllm__gguf_tensor *t) {
    vkllm_status st;
    char ctx[128];
    snprintf(ctx, sizeof ctx, "tensor info %llu of %llu", (unsigned long long)i, (unsigned long long)n);
    if ((st = rd_str(r, &t->name, ctx, "name")) != VKLLM_STATUS_OK) return st;
    snprintf(ctx, sizeof ctx, "tensor '%s'", show(t->name).s);
    uint64_t at_f = r->pos;
    if ((st = rd_u32(r, &t->n_dims, ctx, "n_dims")) != VKLLM_STATUS_OK) return st;
    if (t->n_dims > GGUF_MAX_DIMS)
        return rd_err(r, BAD, at_f, "%s: n_dims %u exceeds %u", ctx, (unsigned)t->n_dims, GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d >= t->n_dims) continue;
        at_f = r->pos;
        if ((st = rd_u64(r, &t->ne[d], ctx, "dimension")) != VKLLM_STATUS_OK) return st;
        if (t->ne[d] == 0)
            return rd_err(r, BAD, at_f, "%s: dimension %u is 0 (empty tensors are not supported)", ctx, (unsigned)d);
        if (t->ne[d] > (uint64_t)INT64_MAX)
            return rd_err(r, BAD, at_f, "%s: dimension %u = %llu exceeds INT64_MAX", ctx, (unsigned)d,
                          (unsigned long long)t->ne[d]);
    }
    at_f = r->pos;
    if ((st = rd_u32(r, &t->type, ctx, "type")) != VKLLM_STATUS_OK) return st;
    if ((st = tensor_size(r, at_f, ctx, t->type, t->ne, &t->nbytes)) != VKLLM_STATUS_OK) return st;
    return rd_u64(r, &t->offset, ctx, "data offset");
}

/* Place every tensor's data: aligned, inside the file, no overlaps, unique names. */
static vkllm_status place_tensors(const struct rd *r, struct vkllm__gguf *g, struct span *spans) {
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        struct vkllm__gguf_tensor *t = &g->tensors[i];
        uint64_t at = spans[i].at, start, end;
        struct shown nm = show(t->name);
        const char *name = nm.s;
        if (t->offset % g->alignment != 0)
            return rd_err(r, BAD, at, "tensor '%s': data offset %llu is not a multiple of the alignment %llu", name,
                          (unsigned long long)t->offset, (unsigned long long)g->alignment);
        if (!vkllm__add_u64(g->data_offset, t->offset, &start) || !vkllm__add_u64(start, t->nbytes, &end))
            return rd_err(r, BAD, at, "tensor '%s': data offset %llu + size %llu overflows (data section at %llu)",
                          name, (unsigned long long)t->offset, (unsigned long long)t->nbytes,
                          (unsigned long long)g->data_offset);
        if (end > r->size)
            return rd_err(r, BAD, at, "tensor '%s': data [%llu, %llu) exceeds file size %llu", name,
                          (unsigned long long)start, (unsigned long long)end, (unsigned long long)r->size);
        t->data = r->base + start;
        spans[i].start = start;
        spans[i].end = end;
    }
    vkllm_status st = check_overlap(r, spans, g->n_tensors);
    if (st != VKLLM_STATUS_OK) return st;
    return check_unique(r, spans, g->n_tensors, "tensor name");
}

static vkllm_status parse(struct rd *r, struct vkllm__gguf *g) {
    vkllm_status st;
    struct span *spans = NULL;
    if ((st = parse_header(r, g)) != VKLLM_STATUS_OK) return st;
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    uint64_t nspan = VKLLM_MAX(g->n_kv, g->n_tensors);
    g->kv = vkllm__calloc((size_t)(g->n_kv ? g->n_kv : 1), sizeof *g->kv);
    spans = vkllm__calloc((size_t)(nspan ? nspan : 1), sizeof *spans);
    if (!g->kv || !spans) {
        st = vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory for %llu metadata pairs", g->path,
                        (unsigned long long)g->n_kv);
        goto done;
    }
    if ((st = parse_kvs(r, g, spans)) != VKLLM_STATUS_OK) goto done;
    if (g->n_tensors > rd_left(r) / GGUF_MIN_TINFO_BYTES) {
        st = rd_err(r, BAD, 8,
                    "n_tensors %llu: that many tensor infos cannot fit in the %llu bytes "
                    "left after the metadata",
                    (unsigned long long)g->n_tensors, (unsigned long long)rd_left(r));
        goto done;
    }
    g->tensors = vkllm__calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *g->tensors);
    if (!g->tensors) {
        st = vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory for %llu tensors", g->path,
                        (unsigned long long)g->n_tensors);
        goto done;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        spans[i] = (struct span){{NULL, 0}, r->pos, 0, 0};
        if ((st = parse_tensor_info(r, i, g->n_tensors, &g->tensors[i])) != VKLLM_STATUS_OK) goto done;
        spans[i].name = g->tensors[i].name;
    }
    /* The data section starts at the next multiple of the alignment; a file without tensors may
     * end before it (vocab-only files are not padded), so clamp to the file size then. */
    uint64_t a = g->alignment, pad_end;
    if (!vkllm__add_u64(r->pos, a - 1, &pad_end)) {
        st = rd_err(r, BAD, r->pos, "data section offset overflows with alignment %llu", (unsigned long long)a);
        goto done;
    }
    g->data_offset = pad_end & ~(a - 1);
    if (g->n_tensors == 0 && g->data_offset > r->size) g->data_offset = r->size;
    st = place_tensors(r, g, spans);
done:
    vkllm__free(spans);
    return st;
}

// --- open / close --------------------------------------------------------------------------

static vkllm_status open_common(const void *data, uint64_t size, const char *name, struct vkllm__gguf **out) {
    struct vkllm__gguf *g = vkllm__calloc(1, sizeof *g);
    if (!g) return vkllm__err(VKLLM_STATUS_OOM, "%s: out of memory", name);
    snprintf(g->path, sizeof g->path, "%s", name);
    g->fd_ = -1;
    g->guard_ = -1;
    g->base = data;
    g->size = size;
    struct rd r = {data, size, 0, g->path};
    vkllm_status st = parse(&r, g);
    if (st != VKLLM_STATUS_OK) {
        vkllm__gguf_close(g);
        return st;
    }
    *out = g;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gguf_open_memory(const void *data, uint64_t size, const char *name, struct vkllm__gguf **out) {
    if (!out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf_open_memory: out is NULL");
    *out = NULL;
    if (!name) name = "<memory>";
    if (!data && size) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: NULL data", name);
    if (!data) data = "";
    return open_common(data, size, name, out);
}

/* Copy the pages of [0, n) of a private file mapping (writing to a page gives the mapping its own
 * copy), so that they no longer depend on the file. A shrinking file meanwhile gives zeros
 * (mapguard.h), which vkllm__gguf_check reports. */
static void privatize(uint8_t *m, uint64_t n) {
    size_t page = vkllm__os_page_size();
    if (page == 0 || n == 0) return;
    size_t len = (size_t)((n + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page);
    if (vkllm__os_protect(m, len, 1) != 0) return; /* then they stay the file's */
    for (size_t at = 0; at < len; at += page) {
        volatile uint8_t *p = m + at;
        *p = *p;
    }
    vkllm__os_protect(m, len, 0);
}

vkllm_status vkllm__gguf_open(const char *path, struct vkllm__gguf **out) {
    if (!out || !path) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf_open: NULL argument");
    *out = NULL;
    /* a FIFO at path does not hang the open (os.h); it is refused below, as not a file */
    int fd = vkllm__os_open_read(path);
    if (fd < 0) {
        int e = errno;
        return vkllm__err(e == ENOENT ? VKLLM_STATUS_NOT_FOUND : VKLLM_STATUS_IO, "%s: cannot open: %s", path,
                          strerror(e));
    }
    struct vkllm__os_file_info sb;
    if (vkllm__os_fstat(fd, &sb) != 0) {
        int e = errno;
        vkllm__os_close(fd);
        return vkllm__err(VKLLM_STATUS_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!sb.regular) {
        vkllm__os_close(fd);
        return vkllm__err(VKLLM_STATUS_IO, "%s: not a regular file", path);
    }
    uint64_t size = (uint64_t)sb.size;
    if (size == 0) {
        vkllm__os_close(fd);
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: empty file (0 bytes), not a GGUF file", path);
    }
    if (size > (uint64_t)SIZE_MAX) {
        vkllm__os_close(fd);
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: file of %llu bytes is too large to map", path,
                          (unsigned long long)size);
    }
    void *m = vkllm__os_map(fd, size);
    if (!m) {
        int e = errno;
        vkllm__os_close(fd);
        return vkllm__err(VKLLM_STATUS_IO, "%s: cannot map %llu bytes: %s", path, (unsigned long long)size,
                          strerror(e));
    }
    int guard = vkllm__mapguard_add(m, size); /* a file cut short under the parse reads zeros */
    vkllm_status st = open_common(m, size, path, out);
    if (st == VKLLM_STATUS_OK) {
        struct vkllm__gguf *g = *out;
        g->map_ = m;
        g->map_size_ = size;
        g->fd_ = fd;
        g->guard_ = guard;
        g->mtime_s_ = (int64_t)sb.mtime_s;
        g->mtime_ns_ = (int64_t)sb.mtime_ns;
        privatize(m, g->data_offset);
        if ((st = vkllm__gguf_check(g)) == VKLLM_STATUS_OK) return st;
        vkllm__gguf_close(g);
        *out = NULL;
        return st;
    }
    /* a parse that failed on a file that changed under it says so, not what the zeros looked like */
    if (vkllm__mapguard_hit(guard))
        st = vkllm__err(VKLLM_STATUS_IO, "%s: model file changed while loading: it shrank while it was read", path);
    vkllm__mapguard_remove(guard);
    vkllm__os_unmap(m, size);
    vkllm__os_close(fd);
    return st;
}

vkllm_status vkllm__gguf_check(const struct vkllm__gguf *g) {
    if (!g || g->fd_ < 0) return VKLLM_STATUS_OK;
    struct vkllm__os_file_info sb;
    if (vkllm__mapguard_hit(g->guard_))
        return vkllm__err(VKLLM_STATUS_IO,
                          "%s: model file changed while loading: it shrank while it was read "
                          "(%llu bytes when opened)",
                          g->path, (unsigned long long)g->map_size_);
    if (vkllm__os_fstat(g->fd_, &sb) != 0)
        return vkllm__err(VKLLM_STATUS_IO, "%s: cannot stat: %s", g->path, strerror(errno));
    if ((uint64_t)sb.size != g->map_size_)
        return vkllm__err(VKLLM_STATUS_IO, "%s: model file changed while loading: it is now %llu bytes, was %llu",
                          g->path, (unsigned long long)sb.size, (unsigned long long)g->map_size_);
    if ((int64_t)sb.mtime_s != g->mtime_s_ || (int64_t)sb.mtime_ns != g->mtime_ns_)
        return vkllm__err(VKLLM_STATUS_IO,
                          "%s: model file changed while loading: it was written to (its "
                          "modification time changed)",
                          g->path);
    return VKLLM_STATUS_OK;
}

void vkllm__gguf_close(struct vkllm__gguf *g) {
    if (!g) return;
    vkllm__mapguard_remove(g->guard_);
    if (g->map_) vkllm__os_unmap(g->map_, g->map_size_);
    if (g->fd_ >= 0) vkllm__os_close(g->fd_);
    vkllm__free(g->kv);
    vkllm__free(g->tensors);
    vkllm__free(g);
}

// --- lookup --------------------------------------------------------------------------------

const struct vkllm__gguf_kv *vkllm__gguf_find(const struct vkllm__gguf *g, const char *key) {
    if (!g || !key) return NULL;
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (vkllm__str_eq(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const struct vkllm__gguf_tensor *vkllm__gguf_find_tensor(const struct vkllm__gguf *g, const char *name) {
    if (!g || !name) return NULL;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (vkllm__str_eq(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

static vkllm_status wrong_type(const struct vkllm__gguf *g, const char *key, uint32_t type, const char *want) {
    return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: key '%s' has type %s, expected %s", g->path, key,
                      vkllm__gguf_vtype_name(type), want);
}

static int is_unsigned(uint32_t t) {
    return t == VKLLM__GGUF_U8 || t == VKLLM__GGUF_U16 || t == VKLLM__GGUF_U32 || t == VKLLM__GGUF_U64;
}
static int is_signed(uint32_t t) {
    return t == VKLLM__GGUF_I8 || t == VKLLM__GGUF_I16 || t == VKLLM__GGUF_I32 || t == VKLLM__GGUF_I64;
}

vkllm_status vkllm__gguf_get_u64(const struct vkllm__gguf *g, const char *key, uint64_t *out) {
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, key);
    if (!kv) return VKLLM_STATUS_NOT_FOUND;
    if (is_unsigned(kv->type)) {
        *out = kv->v.u;
    } else if (is_signed(kv->type)) {
        if (kv->v.i < 0)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: key '%s' = %lld is negative", g->path, key,
                              (long long)kv->v.i);
        *out = (uint64_t)kv->v.i;
    } else {
        return wrong_type(g, key, kv->type, "an integer");
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gguf_get_i64(const struct vkllm__gguf *g, const char *key, int64_t *out) {
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, key);
    if (!kv) return VKLLM_STATUS_NOT_FOUND;
    if (is_signed(kv->type)) {
        *out = kv->v.i;
    } else if (is_unsigned(kv->type)) {
        if (kv->v.u > (uint64_t)INT64_MAX)
            return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: key '%s' = %llu exceeds INT64_MAX", g->path, key,
                              (unsigned long long)kv->v.u);
        *out = (int64_t)kv->v.u;
    } else {
        return wrong_type(g, key, kv->type, "an integer");
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gguf_get_f64(const struct vkllm__gguf *g, const char *key, double *out) {
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, key);
    if (!kv) return VKLLM_STATUS_NOT_FOUND;
    if (kv->type == VKLLM__GGUF_F32 || kv->type == VKLLM__GGUF_F64) *out = kv->v.f;
    else if (is_unsigned(kv->type)) *out = (double)kv->v.u;
    else if (is_signed(kv->type)) *out = (double)kv->v.i;
    else return wrong_type(g, key, kv->type, "a number");
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gguf_get_bool(const struct vkllm__gguf *g, const char *key, int *out) {
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, key);
    if (!kv) return VKLLM_STATUS_NOT_FOUND;
    if (kv->type != VKLLM__GGUF_BOOL) return wrong_type(g, key, kv->type, "bool");
    *out = kv->v.b;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gguf_get_str(const struct vkllm__gguf *g, const char *key, struct vkllm__str *out) {
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, key);
    if (!kv) return VKLLM_STATUS_NOT_FOUND;
    if (kv->type != VKLLM__GGUF_STRING) return wrong_type(g, key, kv->type, "string");
    *out = kv->v.s;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gguf_get_arr(const struct vkllm__gguf *g, const char *key, uint32_t elem_type,
                                 const struct vkllm__gguf_kv **out) {
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, key);
    if (!kv) return VKLLM_STATUS_NOT_FOUND;
    if (kv->type != VKLLM__GGUF_ARRAY) return wrong_type(g, key, kv->type, "array");
    if (elem_type < VKLLM__GGUF_VTYPE_COUNT_ && kv->arr_type != elem_type)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: key '%s' is an array of %s, expected %s", g->path, key,
                          vkllm__gguf_vtype_name(kv->arr_type), vkllm__gguf_vtype_name(elem_type));
    *out = kv;
    return VKLLM_STATUS_OK;
}

// --- array elements ------------------------------------------------------------------------

/* Element i of a fixed-size array decoded into e; 0 when not applicable. */
static int arr_scalar(const struct vkllm__gguf_kv *kv, uint64_t i, struct vkllm__gguf_kv *e) {
    if (!kv || kv->type != VKLLM__GGUF_ARRAY || kv->arr_type >= VKLLM__GGUF_VTYPE_COUNT_) return 0;
    uint64_t sz = vtype_size[kv->arr_type];
    if (sz == 0 || i >= kv->arr_n || i >= kv->arr_bytes / sz) return 0;
    decode_scalar(kv->arr_type, kv->arr_data + i * sz, e);
    e->type = kv->arr_type;
    return 1;
}

int64_t vkllm__gguf_arr_i64(const struct vkllm__gguf_kv *kv, uint64_t i) {
    struct vkllm__gguf_kv e;
    if (!arr_scalar(kv, i, &e)) return 0;
    switch (e.type) {
    case VKLLM__GGUF_F32:
    case VKLLM__GGUF_F64:
        if (!(e.v.f >= -9.2e18 && e.v.f <= 9.2e18)) return 0; /* NaN or out of range */
        return (int64_t)e.v.f;
    case VKLLM__GGUF_BOOL: return e.v.b;
    default: return is_unsigned(e.type) ? (int64_t)e.v.u : e.v.i;
    }
}

double vkllm__gguf_arr_f64(const struct vkllm__gguf_kv *kv, uint64_t i) {
    struct vkllm__gguf_kv e;
    if (!arr_scalar(kv, i, &e)) return 0;
    switch (e.type) {
    case VKLLM__GGUF_F32:
    case VKLLM__GGUF_F64: return e.v.f;
    case VKLLM__GGUF_BOOL: return e.v.b;
    default: return is_unsigned(e.type) ? (double)e.v.u : (double)e.v.i;
    }
}

void vkllm__gguf_arr_iter_init(struct vkllm__gguf_arr_iter *it, const struct vkllm__gguf_kv *arr) {
    it->arr = arr;
    it->i = 0;
    it->pos = 0;
}

int vkllm__gguf_arr_iter_next(struct vkllm__gguf_arr_iter *it, struct vkllm__gguf_kv *out) {
    const struct vkllm__gguf_kv *a = it->arr;
    if (!a || a->type != VKLLM__GGUF_ARRAY || it->i >= a->arr_n || it->pos > a->arr_bytes) return 0;
    struct rd r = {a->arr_data, a->arr_bytes, it->pos, NULL};
    memset(out, 0, sizeof *out);
    out->key.ptr = "";
    /* The array was validated at open; depth 0 here is never deeper than it was then. */
    if (rd_value(&r, a->arr_type, 0, "", out) != VKLLM_STATUS_OK) return 0;
    it->pos = r.pos;
    it->i++;
    return 1;
}

vkllm_status vkllm__gguf_arr_strings(const struct vkllm__gguf_kv *kv, struct vkllm__str **out) {
    *out = NULL;
    if (!kv || kv->type != VKLLM__GGUF_ARRAY || kv->arr_type != VKLLM__GGUF_STRING)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "gguf_arr_strings: not an array of strings");
    /* arr_n <= arr_bytes / 8 was checked at open, so this cannot overflow. */
    struct vkllm__str *s = vkllm__malloc((size_t)(kv->arr_n ? kv->arr_n : 1) * sizeof *s);
    if (!s) return vkllm__err(VKLLM_STATUS_OOM, "out of memory for %llu strings", (unsigned long long)kv->arr_n);
    struct rd r = {kv->arr_data, kv->arr_bytes, 0, NULL};
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        if (rd_str(&r, &s[i], "", "") != VKLLM_STATUS_OK) {
            vkllm__free(s);
            return vkllm__err(VKLLM_STATUS_INTERNAL, "gguf_arr_strings: element %llu is malformed",
                              (unsigned long long)i);
        }
    }
    *out = s;
    return VKLLM_STATUS_OK;
}
