/* dtensor.c - weight matrices on the device in their GGUF encoding (see ops_gpu.h). */
#include "ops_gpu.h"
#include "types.h"

vkllm_status vkllm__dtensor_upload(struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m,
                                   const void *data, struct vkllm__dtensor *out) {
    uint64_t row_bytes, total;
    vkllm_status st = vkllm__row_size(type, k, &row_bytes);
    if (st) return st;
    if (m == 0 || !vkllm__mul_u64(row_bytes, m, &total))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matrix of %llu x %llu %s: bad size",
                          (unsigned long long)m, (unsigned long long)k, vkllm__type_name(type));
    struct vkllm__dtensor t = {.type = type, .k = k, .m = m, .row_bytes = row_bytes};
    /* Shaders read 32-bit words: pad odd-sized tensors (q6_K rows are 210 bytes per block) to a
     * whole word, zero-filled. */
    uint64_t padded = (total + 15) / 16 * 16;
    if ((st = vkllm__buffer_alloc(gpu, padded, VKLLM__MEM_DEVICE, &t.buf))) return st;
    if (padded > total) {
        static const uint8_t zero[16];
        if ((st = vkllm__buffer_upload(t.buf, total, zero, padded - total))) {
            vkllm__buffer_free(t.buf);
            return st;
        }
    }
    if (data && (st = vkllm__buffer_upload(t.buf, 0, data, total))) {
        vkllm__buffer_free(t.buf);
        return st;
    }
    *out = t;
    return VKLLM_STATUS_OK;
}

void vkllm__dtensor_free(struct vkllm__dtensor *t) {
    if (!t) return;
    if (!t->view) vkllm__buffer_free(t->buf);
    vkllm__buffer_free(t->tb);
    t->buf = NULL;
    t->tb = NULL;
}


vkllm_status vkllm__dtensor_chunk_rows(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *t,
                                       uint64_t *rows) {
    const struct vkllm_device_info *info = vkllm__gpu_info(gpu);
    uint64_t align = info->min_storage_buffer_offset_alignment ? info->min_storage_buffer_offset_alignment : 1;
    if (align < 4) align = 4; /* shaders read 32-bit words */
    uint64_t limit = vkllm__gpu_max_binding(gpu);
    /* chunk starts r * row_bytes are aligned when r is a multiple of step */
    uint64_t step = align / vkllm__gcd_u64(t->row_bytes, align);
    uint64_t r = limit / t->row_bytes / step * step;
    if (r == 0)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "a row of %llu bytes (x%llu rows for alignment) exceeds the device's binding limit of %llu bytes",
                          (unsigned long long)t->row_bytes, (unsigned long long)step, (unsigned long long)limit);
    *rows = r >= t->m ? t->m : r;
    return VKLLM_STATUS_OK;
}
