/* dtensor.c - weight matrices on the device in their GGUF encoding (see ops_gpu.h). */
#include <string.h>

#include "ops_gpu.h"
#include "shader_abi_matvec.h"
#include "tuning.h"
#include "types.h"

/* One buffer of rows [r0, r0 + n) of a matrix (data may be NULL: contents left as they are),
 * padded with zeros to whole 16 bytes. */
static vkllm_status upload_rows(struct vkllm__gpu *gpu, uint64_t row_bytes, uint64_t n, const uint8_t *data,
                                struct vkllm__buffer **out) {
    uint64_t total = n * row_bytes, padded = (total + 15) / 16 * 16;
    vkllm_status st = vkllm__buffer_alloc(gpu, padded, VKLLM__MEM_DEVICE, out);
    static const uint8_t zero[16];
    if (!st && padded > total) st = vkllm__buffer_upload(*out, total, zero, padded - total);
    if (!st && data) st = vkllm__buffer_upload(*out, 0, data, total);
    if (st) vkllm__buffer_free(*out), *out = NULL;
    return st;
}

/* Rows per chunk for the binding limit alone (0: not even one row fits), and the step that
 * keeps chunk starts aligned. */
static uint64_t binding_rows(const struct vkllm__gpu *gpu, uint64_t row_bytes, uint64_t *step) {
    *step = vkllm__align_step(row_bytes, vkllm__gpu_storage_align(gpu)); /* starts r * row_bytes aligned: step | r */
    return vkllm__gpu_max_binding(gpu) / row_bytes / *step * *step;
}

vkllm_status vkllm__dtensor_upload_grouped(struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m,
                                           uint64_t row_group, const void *data, struct vkllm__dtensor *out) {
    uint64_t row_bytes, total;
    vkllm_status st = vkllm__row_size(type, k, &row_bytes);
    if (st) return st;
    if (m == 0 || row_group == 0 || !vkllm__mul_u64(row_bytes, m, &total) || total > UINT64_MAX / 2)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matrix of %llu x %llu %s: bad size", (unsigned long long)m,
                          (unsigned long long)k, vkllm__type_name(type));
    /* The 16-byte layout where the device takes it: rows of its bytes (the file's, or longer for
     * Q6_K rows that are not whole groups of 8 blocks), written through repack.comp (put_rows). */
    uint64_t rp_rb = vkllm__dtensor_rp_row_bytes(gpu, type, k);
    if (rp_rb && !vkllm__mul_u64(rp_rb, m, &total))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matrix too large");
    if (rp_rb) row_bytes = rp_rb;
    const void *rows_data = rp_rb ? NULL : data;
    struct vkllm__dtensor t = {.type = type, .k = k, .m = m, .row_bytes = row_bytes, .rp = rp_rb != 0};
    /* Shaders read 32-bit words: each buffer is padded to whole 16 bytes (q6_K rows are 210
     * bytes per block), zero-filled. */
    uint64_t max = vkllm__gpu_max_alloc(gpu);
    if ((total + 15) / 16 * 16 <= max) {
        if ((st = upload_rows(gpu, row_bytes, m, rows_data, &t.buf))) return st;
        if (rp_rb && data && (st = vkllm__dtensor_put_rows(gpu, &t, 0, m, data))) return vkllm__dtensor_free(&t), st;
        *out = t;
        return VKLLM_STATUS_OK;
    }
    /* Larger than one allocation: parts of whole row groups, each starting chunks aligned, and
     * (plain matrices) a whole number of the binding's chunks. */
    uint64_t step, chunk = binding_rows(gpu, row_bytes, &step);
    uint64_t unit = vkllm__lcm_u64(step, row_group);
    uint64_t rows = max > 16 ? (max - 16) / row_bytes / unit * unit : 0;
    if (rows > chunk && chunk && row_group == 1) rows = rows / chunk * chunk;
    uint64_t n_parts = rows ? (m + rows - 1) / rows : 0;
    if (n_parts == 0 || n_parts > VKLLM__DTENSOR_PARTS)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "a %s matrix of %llu x %llu (%s) cannot be split into at most %d buffers of the "
                          "device's maxMemoryAllocationSize (%s) in whole groups of %llu rows",
                          vkllm__type_name(type), (unsigned long long)m, (unsigned long long)k, vkllm__bytes(total).s,
                          VKLLM__DTENSOR_PARTS, vkllm__bytes(max).s, (unsigned long long)unit);
    t.part_rows = rows;
    for (uint64_t r0 = 0; r0 < m; r0 += rows) {
        const uint8_t *src = rows_data ? (const uint8_t *)rows_data + r0 * row_bytes : NULL;
        if ((st = upload_rows(gpu, row_bytes, VKLLM_MIN(rows, m - r0), src, &t.part[t.n_parts]))) {
            vkllm__dtensor_free(&t);
            return st;
        }
        t.buf = t.part[0];
        t.n_parts++;
    }
    if (rp_rb && data && (st = vkllm__dtensor_put_rows(gpu, &t, 0, m, data))) return vkllm__dtensor_free(&t), st;
    *out = t;
    return VKLLM_STATUS_OK;
}

uint64_t vkllm__dtensor_rp_row_bytes(const struct vkllm__gpu *gpu, uint32_t type, uint64_t k) {
    long on = vkllm__gpu_tuning(gpu)->repack;
    if (on < 0) on = vkllm__gpu_info(gpu)->type != VKLLM_DEVICE_CPU;
    return on ? vkllm__rp_row_bytes(type, k) : 0;
}

/* Rows [r0, r0 + nr) of t (in the 16-byte layout) from src, the same rows in the file's layout, one
 * repack.comp dispatch (an invocation per word), waited for. */
static vkllm_status rp_rows(struct vkllm__gpu *gpu, const struct vkllm__dtensor *t, uint64_t r0, uint64_t nr,
                            struct vkllm__binding src, uint64_t src_row_bytes) {
    struct vkllm__rp_field f[3];
    struct vkllm__pc_repack pc = {.blocks = (uint32_t)(t->k / vkllm__type_traits(t->type)->block_size),
                                  .src_row_bytes = (uint32_t)src_row_bytes,
                                  .dst_row_bytes = (uint32_t)t->row_bytes};
    pc.n_fields = vkllm__rp_fields(t->type, f, &pc.block_bytes);
    for (uint32_t i = 0; i < pc.n_fields; i++) pc.off[i] = f[i].off, pc.len[i] = f[i].len, pc.full[i] = f[i].full;
    if (nr * t->row_bytes > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "repack: %llu rows in one dispatch", (unsigned long long)nr);
    pc.n_words = (uint32_t)(nr * t->row_bytes / 4);
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_REPACK,
        .n_spec = 1,
        .spec = {64},
        .n_bind = 2,
        .bind = {src},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "repack",
    };
    vkllm_status st = vkllm__dtensor_rows(t, r0, nr, "repack", &d.bind[1]);
    if (st) return st;
    vkllm__gpu_grid_1d(gpu, pc.n_words, 64, d.groups);
    return vkllm__gpu_run1(gpu, &d);
}

vkllm_status vkllm__dtensor_put_rows(struct vkllm__gpu *gpu, struct vkllm__dtensor *t, uint64_t r0, uint64_t nr,
                                     const void *data) {
    uint64_t file_rb = 0;
    vkllm_status st = vkllm__row_size(t->type, t->k, &file_rb);
    if (st) return st;
    if (r0 > t->m || nr > t->m - r0 || !t->buf)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "rows %llu..%llu of a matrix of %llu", (unsigned long long)r0,
                          (unsigned long long)(r0 + nr), (unsigned long long)t->m);
    if (!t->rp) { /* the file's rows as they are, part by part */
        for (uint64_t r = r0; !st && r < r0 + nr;) {
            uint64_t p = t->n_parts > 1 ? r / t->part_rows : 0, first = p * t->part_rows;
            uint64_t n = t->n_parts > 1 ? VKLLM_MIN(r0 + nr, first + t->part_rows) - r : nr;
            st = vkllm__buffer_upload(t->n_parts > 1 ? t->part[p] : t->buf,
                                      (t->n_parts > 1 ? 0 : t->offset) + (r - first) * t->row_bytes,
                                      (const uint8_t *)data + (r - r0) * file_rb, n * t->row_bytes);
            r += n;
        }
        return st;
    }
    /* through one temporary device buffer of at most 64 MiB (the tuning's repack_buffer), in
     * chunks that lie in one part and start aligned (at least step rows, whatever the cap) */
    uint64_t chunk = 1;
    if ((st = vkllm__dtensor_chunk_rows(gpu, t, &chunk))) return st;
    long cap_bytes = vkllm__gpu_tuning(gpu)->repack_buffer;
    uint64_t cap = (cap_bytes > 0 ? (uint64_t)cap_bytes : 64ull << 20) / file_rb;
    uint64_t step = vkllm__align_step(t->row_bytes, vkllm__gpu_storage_align(gpu));
    chunk = VKLLM_MIN(chunk, VKLLM_MAX(cap / step * step, step));
    struct vkllm__buffer *tmp = NULL;
    st = vkllm__buffer_alloc(gpu, (VKLLM_MIN(chunk, nr) * file_rb + 15) / 16 * 16, VKLLM__MEM_DEVICE, &tmp);
    for (uint64_t r = r0; !st && r < r0 + nr;) {
        uint64_t n = VKLLM_MIN(chunk, r0 + nr - r);
        if (t->n_parts > 1) n = VKLLM_MIN(n, (r / t->part_rows + 1) * t->part_rows - r);
        uint64_t bytes = n * file_rb;
        st = vkllm__buffer_upload(tmp, 0, (const uint8_t *)data + (r - r0) * file_rb, bytes);
        if (!st) st = rp_rows(gpu, t, r, n, (struct vkllm__binding){tmp, 0, (bytes + 3) & ~3ull}, file_rb);
        r += n;
    }
    vkllm__buffer_free(tmp);
    if (st)
        vkllm__err_prefix("%s matrix of %llu x %llu into the 16-byte layout: ", vkllm__type_name(t->type),
                          (unsigned long long)t->m, (unsigned long long)t->k);
    else
        vkllm__log(VKLLM_LOG_DEBUG,
                   "rows %llu..%llu of a %s matrix of %llu x %llu in the 16-byte layout (%llu-byte rows)",
                   (unsigned long long)r0, (unsigned long long)(r0 + nr), vkllm__type_name(t->type),
                   (unsigned long long)t->m, (unsigned long long)t->k, (unsigned long long)t->row_bytes);
    return st;
}

vkllm_status vkllm__spec_rp(struct vkllm__dispatch *d, const struct vkllm__dtensor *w) {
    if (!w->rp) return VKLLM_STATUS_OK;
    if (d->n_spec > 7) /* no reader has a constant 7 of its own: a new one would read the layout wrongly */
        return vkllm__err(VKLLM_STATUS_INTERNAL, "%s: specialization constant 7 is taken", d->label ? d->label : "op");
    for (uint32_t i = d->n_spec; i < 7; i++) d->spec[i] = 0;
    d->spec[7] = 1;
    d->n_spec = 8;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__dtensor_upload(struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m, const void *data,
                                   struct vkllm__dtensor *out) {
    return vkllm__dtensor_upload_grouped(gpu, type, k, m, 1, data, out);
}

void vkllm__dtensor_free(struct vkllm__dtensor *t) {
    if (!t) return;
    if (!t->view) vkllm__buffer_free(t->buf);
    for (uint32_t i = 1; !t->view && i < t->n_parts; i++) vkllm__buffer_free(t->part[i]);
    vkllm__buffer_free(t->tb);
    memset(t->part, 0, sizeof t->part);
    t->n_parts = 0;
    t->buf = NULL;
    t->tb = NULL;
}

vkllm_status vkllm__dtensor_rows(const struct vkllm__dtensor *t, uint64_t r0, uint64_t nr, const char *op,
                                 struct vkllm__binding *b) {
    int split = t->n_parts > 1;
    uint64_t p = split ? r0 / t->part_rows : 0, first = p * t->part_rows;
    if (split && (p >= t->n_parts || r0 + nr > first + t->part_rows))
        return vkllm__err(VKLLM_STATUS_INTERNAL,
                          "%s: rows %llu..%llu of a matrix split every %llu rows lie in two "
                          "buffers",
                          op, (unsigned long long)r0, (unsigned long long)(r0 + nr), (unsigned long long)t->part_rows);
    const struct vkllm__buffer *buf = split ? t->part[p] : t->buf;
    uint64_t off = (split ? 0 : t->offset) + (r0 - first) * t->row_bytes;
    uint64_t range = (nr * t->row_bytes + 3) & ~(uint64_t)3;
    uint64_t size = vkllm__buffer_size(buf);
    if (off > size || range > size - off)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "%s: %s matrix of %llu x %llu: its buffer must extend to a multiple of 4 bytes "
                          "past the last row (the shaders read 32-bit words)",
                          op, vkllm__type_name(t->type), (unsigned long long)t->m, (unsigned long long)t->k);
    *b = (struct vkllm__binding){buf, off, range};
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__dtensor_chunk_rows(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *t, uint64_t *rows) {
    uint64_t step, r = binding_rows(gpu, t->row_bytes, &step);
    if (r == 0)
        return vkllm__err(
            VKLLM_STATUS_UNSUPPORTED,
            "a row of %llu bytes (x%llu rows for alignment) exceeds the device's binding limit of %llu bytes",
            (unsigned long long)t->row_bytes, (unsigned long long)step,
            (unsigned long long)vkllm__gpu_max_binding(gpu));
    if (t->n_parts > 1) { /* chunks that divide a part (part_rows is a multiple of step) */
        r = VKLLM_MIN(r, t->part_rows);
        while (t->part_rows % r) r -= step;
    }
    *rows = r >= t->m ? t->m : r;
    return VKLLM_STATUS_OK;
}
