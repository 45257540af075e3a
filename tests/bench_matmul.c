/* bench_matmul.c - GFLOP/s of the prefill product (vkllm__op_matmul) per weight type for
 * n = 512, k = 2048, m = 2048 and m = 5632 (TinyLlama's attention and FFN shapes), after a
 * warm-up run (shader compilation). Not a test: it reports numbers.
 *   bench_matmul [reps] [type ...]     types by name (q8_0, f16, ...); default all
 * VKLLM_BENCH_SHAPE="n,k,m" runs that one shape instead (quick experiments).
 * Validation is off unless VKLLM_VALIDATE=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu.h"
#include "ops_gpu.h"
#include "types.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const uint32_t all_types[] = {VKLLM__TYPE_F32,  VKLLM__TYPE_F16,  VKLLM__TYPE_BF16, VKLLM__TYPE_Q8_0,
                                     VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q4_1, VKLLM__TYPE_Q5_0, VKLLM__TYPE_Q5_1,
                                     VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K};

static int bench(struct vkllm__gpu *gpu, uint32_t type, uint32_t n, uint32_t k, uint32_t m, int reps) {
    uint64_t rb;
    if (vkllm__row_size(type, k, &rb)) return 1;
    float *row = malloc((size_t)k * 4), *x = malloc((size_t)n * k * 4);
    uint8_t *wq = malloc((size_t)m * rb);
    if (!row || !x || !wq) return 1;
    uint32_t s = 12345;
    for (size_t i = 0; i < (size_t)n * k; i++) x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
    for (uint32_t r = 0; r < m; r++) {
        for (uint32_t i = 0; i < k; i++) row[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
        vkllm__quantize_row(type, row, wq + r * rb, k);
    }
    struct vkllm__dtensor w;
    struct vkllm__buffer *xb = NULL, *yb = NULL;
    struct vkllm__cmd *c = NULL;
    int rc = 1;
    if (vkllm__dtensor_upload(gpu, type, k, m, wq, &w)) goto done0;
    if (vkllm__buffer_alloc(gpu, (uint64_t)n * k * 4, VKLLM__MEM_DEVICE, &xb) ||
        vkllm__buffer_upload(xb, 0, x, (uint64_t)n * k * 4) ||
        vkllm__buffer_alloc(gpu, (uint64_t)n * m * 4, VKLLM__MEM_DEVICE, &yb) || vkllm__cmd_init(gpu, &c) ||
        vkllm__cmd_begin(c) || vkllm__op_matmul(c, vkllm__view_of(yb), &w, vkllm__view_of(xb), n) ||
        vkllm__cmd_end(c) || vkllm__cmd_submit(c))
        goto done;
    double t0 = now_s();
    for (int i = 0; i < reps; i++)
        if (vkllm__cmd_submit(c)) goto done;
    double dt = (now_s() - t0) / reps;
    printf("%-5s n=%u k=%u m=%-5u %8.1f ms  %6.2f GFLOP/s\n", vkllm__type_name(type), n, k, m, dt * 1e3,
           2.0 * n * k * m / dt * 1e-9);
    fflush(stdout);
    rc = 0;
done:
    vkllm__cmd_free(c);
    vkllm__buffer_free(xb);
    vkllm__buffer_free(yb);
    vkllm__dtensor_free(&w);
done0:
    free(row), free(x), free(wq);
    return rc;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    if (reps < 1) reps = 1;
    struct vkllm__gpu_params p = {.device = -1, .validate = -1};
    struct vkllm__gpu *gpu;
    if (vkllm__gpu_open(&p, &gpu)) {
        fprintf(stderr, "bench_matmul: cannot open a device: %s\n", vkllm_last_error());
        return 1;
    }
    printf("device: %s\n", vkllm__gpu_info(gpu)->name);
    uint32_t n = 512, k = 2048, ms[2] = {2048, 5632}, nm = 2;
    const char *shape = getenv("VKLLM_BENCH_SHAPE");
    if (shape && sscanf(shape, "%u,%u,%u", &n, &k, &ms[0]) == 3) nm = 1;
    int rc = 0;
    for (size_t t = 0; t < sizeof all_types / sizeof all_types[0]; t++) {
        int want = argc <= 2;
        for (int a = 2; a < argc; a++) want |= !strcmp(argv[a], vkllm__type_name(all_types[t]));
        if (!want) continue;
        for (uint32_t j = 0; j < nm; j++)
            if (bench(gpu, all_types[t], n, k, ms[j], reps)) {
                fprintf(stderr, "bench_matmul: %s failed: %s\n", vkllm__type_name(all_types[t]), vkllm_last_error());
                rc = 1;
            }
    }
    vkllm__gpu_close(gpu);
    return rc;
}
