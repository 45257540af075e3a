/* gguf_walk.h - touch everything a successfully opened GGUF exposes, through the public reader
 * API: every key through every typed getter, every array element (nested arrays recursively,
 * strings through both the iterator and arr_strings), every tensor through find_tensor and the
 * first and last byte of its data. Shared by the fuzzer and test_gguf_hostile.c, so that ASan
 * sees any read outside the buffer. Returns a checksum so that nothing is optimized away. */
#ifndef VKLLM_GGUF_WALK_H
#define VKLLM_GGUF_WALK_H

#include <string.h>

#include "gguf.h"

/* Counts inconsistencies found by the walk (a reader bug, not a file problem). */
static int gguf_walk_bugs;

static uint64_t gguf_walk_array(const struct vkllm__gguf_kv *kv, int depth) {
    uint64_t sum = kv->arr_n + kv->arr_type;
    struct vkllm__gguf_arr_iter it;
    struct vkllm__gguf_kv e;
    uint64_t n = 0;
    vkllm__gguf_arr_iter_init(&it, kv);
    while (vkllm__gguf_arr_iter_next(&it, &e)) {
        if (e.type == VKLLM__GGUF_ARRAY) {
            sum += gguf_walk_array(&e, depth + 1);
        } else if (e.type == VKLLM__GGUF_STRING) {
            sum += e.v.s.len + (e.v.s.len ? (uint8_t)e.v.s.ptr[e.v.s.len - 1] : 0);
        } else {
            sum += (uint64_t)vkllm__gguf_arr_i64(kv, n) + (uint64_t)(vkllm__gguf_arr_f64(kv, n) != 0);
        }
        n++;
    }
    if (n != kv->arr_n) gguf_walk_bugs++; /* validated arrays walk fully */
    if (kv->arr_type == VKLLM__GGUF_STRING) {
        struct vkllm__str *s;
        if (vkllm__gguf_arr_strings(kv, &s) == VKLLM_STATUS_OK) {
            for (uint64_t i = 0; i < kv->arr_n; i++) sum += s[i].len ? (uint8_t)s[i].ptr[0] : 1;
            vkllm__free(s);
        }
    }
    /* Out-of-range indexes are answered with 0, not read. */
    sum += (uint64_t)vkllm__gguf_arr_i64(kv, kv->arr_n) + (uint64_t)vkllm__gguf_arr_f64(kv, UINT64_MAX);
    return sum;
}

static uint64_t gguf_walk(const struct vkllm__gguf *g) {
    uint64_t sum = g->n_kv + g->n_tensors + g->alignment + g->data_offset;
    char name[256];
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const struct vkllm__gguf_kv *kv = &g->kv[i];
        if (kv->key.len < sizeof name && !memchr(kv->key.ptr, 0, (size_t)kv->key.len)) {
            memcpy(name, kv->key.ptr, (size_t)kv->key.len);
            name[kv->key.len] = 0;
            uint64_t u;
            int64_t s;
            double f;
            int b;
            struct vkllm__str str;
            const struct vkllm__gguf_kv *a;
            if (vkllm__gguf_find(g, name) != kv) gguf_walk_bugs++; /* keys are unique */
            if (vkllm__gguf_get_u64(g, name, &u) == VKLLM_STATUS_OK) sum += u;
            if (vkllm__gguf_get_i64(g, name, &s) == VKLLM_STATUS_OK) sum += (uint64_t)s;
            if (vkllm__gguf_get_f64(g, name, &f) == VKLLM_STATUS_OK) sum += f != 0;
            if (vkllm__gguf_get_bool(g, name, &b) == VKLLM_STATUS_OK) sum += (uint64_t)b;
            if (vkllm__gguf_get_str(g, name, &str) == VKLLM_STATUS_OK)
                sum += str.len ? (uint8_t)str.ptr[str.len - 1] : 0;
            if (vkllm__gguf_get_arr(g, name, VKLLM__GGUF_VTYPE_COUNT_, &a) == VKLLM_STATUS_OK) sum += a->arr_n;
        }
        if (kv->type == VKLLM__GGUF_ARRAY) sum += gguf_walk_array(kv, 1);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct vkllm__gguf_tensor *t = &g->tensors[i];
        const uint8_t *d = t->data;
        if (d < g->base || t->nbytes > g->size || (uint64_t)(d - g->base) > g->size - t->nbytes ||
            t->offset % g->alignment != 0)
            gguf_walk_bugs++;
        sum += t->nbytes + t->type + t->ne[0] + t->ne[3];
        if (t->nbytes) sum += d[0] + d[t->nbytes - 1];
        if (t->name.len < sizeof name && !memchr(t->name.ptr, 0, (size_t)t->name.len)) {
            memcpy(name, t->name.ptr, (size_t)t->name.len);
            name[t->name.len] = 0;
            if (vkllm__gguf_find_tensor(g, name) != t) gguf_walk_bugs++; /* names are unique */
        }
    }
    return sum;
}

#endif /* VKLLM_GGUF_WALK_H */
