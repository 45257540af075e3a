/* bench_attn.c - decode attention time (one query, the split kernel + reduce) at several current
 * lengths of one recording: 32 heads, 4 kv heads, head_dim 64, n_ctx 8192. Also one prefill.
 * Built, not a test: build-dir/bench_attn [iterations]. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ops_gpu.h"
#include "types.h"

#define CHECK(x)                                                                                      \
    do {                                                                                              \
        vkllm_status s_ = (x);                                                                        \
        if (s_) {                                                                                     \
            fprintf(stderr, "bench_attn: %s: %s (%s)\n", #x, vkllm_status_name(s_), vkllm_last_error()); \
            return 1;                                                                                 \
        }                                                                                             \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int time_it(struct vkllm__cmd *c, int iters, double *ms) {
    CHECK(vkllm__cmd_submit(c)); /* warm up (shader JIT) */
    double t0 = now_ms();
    for (int i = 0; i < iters; i++) CHECK(vkllm__cmd_submit(c));
    *ms = (now_ms() - t0) / iters;
    return 0;
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    if (iters < 1) iters = 1;
    const uint32_t n_head = 32, n_kv = 4, dim = 64, n_ctx = 8192, n_pf = 128;
    struct vkllm__gpu_params gp = {.device = -1, .validate = 0};
    struct vkllm__gpu *gpu;
    CHECK(vkllm__gpu_open(&gp, &gpu));
    uint64_t kv_halves = (uint64_t)n_ctx * n_kv * dim;
    uint16_t *kv = malloc(kv_halves * 2);
    float *q = malloc((uint64_t)n_pf * n_head * dim * 4);
    if (!kv || !q) return 1;
    for (uint64_t i = 0; i < kv_halves; i++) kv[i] = vkllm__f32_to_f16((float)((i * 2654435761u) % 1000) / 1000 - 0.5f);
    for (uint64_t i = 0; i < (uint64_t)n_pf * n_head * dim; i++) q[i] = (float)(i % 17) / 17 - 0.5f;
    struct vkllm__attn_shape sh = {1, n_head, n_kv, dim, n_ctx, 0.125f};
    uint64_t sb = vkllm__attention_scratch_bytes(gpu, &sh);
    struct vkllm__buffer *bk, *bv, *bq, *bo, *bp, *bs;
    CHECK(vkllm__buffer_alloc(gpu, kv_halves * 2, VKLLM__MEM_DEVICE, &bk));
    CHECK(vkllm__buffer_alloc(gpu, kv_halves * 2, VKLLM__MEM_DEVICE, &bv));
    CHECK(vkllm__buffer_alloc(gpu, (uint64_t)n_pf * n_head * dim * 4, VKLLM__MEM_DEVICE, &bq));
    CHECK(vkllm__buffer_alloc(gpu, (uint64_t)n_pf * n_head * dim * 4, VKLLM__MEM_DEVICE, &bo));
    CHECK(vkllm__buffer_alloc(gpu, 4, VKLLM__MEM_DEVICE, &bp));
    CHECK(vkllm__buffer_alloc(gpu, sb ? sb : 4, VKLLM__MEM_DEVICE, &bs));
    CHECK(vkllm__buffer_upload(bk, 0, kv, kv_halves * 2));
    CHECK(vkllm__buffer_upload(bv, 0, kv, kv_halves * 2));
    CHECK(vkllm__buffer_upload(bq, 0, q, (uint64_t)n_pf * n_head * dim * 4));
    struct vkllm__cmd *c;
    CHECK(vkllm__cmd_init(gpu, &c));
    CHECK(vkllm__cmd_begin(c));
    CHECK(vkllm__op_attention(c, vkllm__view_of(bo), vkllm__view_of(bq), vkllm__view_of(bk), vkllm__view_of(bv),
                              vkllm__view_of(bp), vkllm__view_of(bs), &sh));
    CHECK(vkllm__cmd_end(c));
    printf("device: %s\ndecode attention, %u heads, %u kv heads, dim %u, n_ctx %u (one recording, %d runs each)\n",
           vkllm__gpu_info(gpu)->name, n_head, n_kv, dim, n_ctx, iters);
    static const uint32_t lens[] = {512, 2048, 8192};
    for (int i = 0; i < 3; i++) {
        uint32_t pos0 = lens[i] - 1;
        CHECK(vkllm__buffer_upload(bp, 0, &pos0, 4));
        double ms;
        if (time_it(c, iters, &ms)) return 1;
        double gb = (double)lens[i] * n_kv * dim * 2 * 2 / 1e9; /* K and V bytes read */
        printf("  context %5u: %8.3f ms per step (submit included)  %6.2f GB/s of K/V\n", lens[i], ms, gb / (ms / 1e3));
    }
    struct vkllm__attn_shape pf = {n_pf, n_head, n_kv, dim, n_ctx, 0.125f};
    CHECK(vkllm__cmd_begin(c));
    CHECK(vkllm__op_attention(c, vkllm__view_of(bo), vkllm__view_of(bq), vkllm__view_of(bk), vkllm__view_of(bv),
                              vkllm__view_of(bp), vkllm__view_of(bs), &pf));
    CHECK(vkllm__cmd_end(c));
    uint32_t zero = 0;
    CHECK(vkllm__buffer_upload(bp, 0, &zero, 4));
    double ms;
    if (time_it(c, iters < 5 ? iters : 5, &ms)) return 1;
    double flop = 4.0 * n_head * dim * ((double)n_pf * (n_pf + 1) / 2);
    printf("prefill attention, %u tokens from position 0: %8.3f ms (%.2f GFLOP/s causal)\n", n_pf, ms,
           flop / (ms / 1e3) / 1e9);
    vkllm__cmd_free(c);
    vkllm__buffer_free(bk), vkllm__buffer_free(bv), vkllm__buffer_free(bq), vkllm__buffer_free(bo);
    vkllm__buffer_free(bp), vkllm__buffer_free(bs);
    vkllm__gpu_close(gpu);
    free(kv), free(q);
    return 0;
}
