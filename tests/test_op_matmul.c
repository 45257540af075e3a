/* test_op_matmul.c - the prefill product y (n, m) = x (n, k) @ W^T (ops_matmul.c) for every
 * weight type against a double-accumulated product with the reference decoder's weights.
 *
 * W: random rows quantized with vkllm__quantize_row; the reference dequantizes the same bytes
 * with vkllm__dequantize_row, so only the shader's decoding and its f32 summation are judged.
 * Bounds: NMSE <= 1e-9 over the whole output, and every element within
 * 3e-5 * sum_t |x_t w_t| + 1e-6 of the reference (f32 accumulation of up to 2048 terms stays
 * far below this; a wrong element, a wrong scale or an unwritten output does not).
 * Shapes: n in {1, 3, 17, 64, 100}, m in {1, 7, 65, 1000}, k the block size and bigger multiples
 * (not tile multiples), forced small binding limits (several W chunks and several x/y row blocks,
 * including Q5_0's 22-byte blocks) and forced tile sizes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_test.h"
#include "ops_gpu.h"
#include "types.h"


static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) / (double)(1u << 24)) * 2.0f - 1.0f;
}

static int n_run, n_fail;

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) FAILF("out of memory (%zu bytes)", n);
    return p;
}

static void upload_new(struct vkllm__gpu *gpu, const void *src, uint64_t bytes, struct vkllm__buffer **out) {
    ASSERT_OK(vkllm__buffer_alloc(gpu, bytes, VKLLM__MEM_DEVICE, out));
    ASSERT_OK(vkllm__buffer_upload(*out, 0, src, bytes));
}

/* Run one product on the device; returns 1 when it matches the reference. */
static int check(struct vkllm__gpu *gpu, uint32_t type, uint32_t n, uint32_t m, uint32_t k, const char *what) {
    uint64_t row_bytes;
    ASSERT_OK(vkllm__row_size(type, k, &row_bytes));
    float *wf = xmalloc((size_t)m * k * 4), *wd = xmalloc((size_t)m * k * 4);
    float *x = xmalloc((size_t)n * k * 4), *y = xmalloc((size_t)n * m * 4);
    uint8_t *wq = xmalloc((size_t)m * row_bytes);
    for (size_t i = 0; i < (size_t)m * k; i++) wf[i] = frand();
    for (size_t i = 0; i < (size_t)n * k; i++) x[i] = frand();
    for (uint32_t r = 0; r < m; r++) {
        vkllm__quantize_row(type, wf + (size_t)r * k, wq + r * row_bytes, k);
        vkllm__dequantize_row(type, wq + r * row_bytes, wd + (size_t)r * k, k);
    }
    for (size_t i = 0; i < (size_t)n * m; i++) y[i] = NAN; /* unwritten outputs show up */

    struct vkllm__buffer *xb, *yb;
    struct vkllm__cmd *c;
    /* The shader reads 32-bit words: W's buffer extends to a whole word past the last row
     * (vkllm__dtensor_upload allocates exactly m * row_bytes). */
    struct vkllm__dtensor wt = {.type = type, .k = k, .m = m, .row_bytes = row_bytes};
    ASSERT_OK(vkllm__buffer_alloc(gpu, ((uint64_t)m * row_bytes + 3) & ~(uint64_t)3, VKLLM__MEM_DEVICE, &wt.buf));
    ASSERT_OK(vkllm__buffer_upload(wt.buf, 0, wq, (uint64_t)m * row_bytes));
    upload_new(gpu, x, (uint64_t)n * k * 4, &xb);
    upload_new(gpu, y, (uint64_t)n * m * 4, &yb);
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_matmul(c, vkllm__view_of(yb), &wt, vkllm__view_of(xb), n));
    ASSERT_OK(vkllm__cmd_end(c));
    ASSERT_OK(vkllm__cmd_submit(c));
    ASSERT_OK(vkllm__buffer_download(yb, 0, y, (uint64_t)n * m * 4));
    vkllm__cmd_free(c);
    vkllm__buffer_free(xb);
    vkllm__buffer_free(yb);
    vkllm__dtensor_free(&wt);

    double err2 = 0, ref2 = 0, worst = 0;
    uint32_t wi = 0, wj = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < m; j++) {
            const float *xr = x + (size_t)i * k, *wr = wd + (size_t)j * k;
            double s = 0, sa = 0;
            for (uint32_t t = 0; t < k; t++) {
                s += (double)xr[t] * wr[t];
                sa += fabs((double)xr[t] * wr[t]);
            }
            double g = y[(size_t)i * m + j], e = fabs(g - s);
            err2 += isfinite(g) ? e * e : INFINITY;
            ref2 += s * s;
            double ratio = isfinite(g) ? e / (3e-5 * sa + 1e-6) : INFINITY;
            if (!(ratio <= worst)) worst = ratio, wi = i, wj = j;
        }
    }
    double nmse = ref2 > 0 ? err2 / ref2 : err2;
    int ok = nmse <= 1e-9 && worst <= 1.0;
    n_run++;
    if (!ok) {
        n_fail++;
        fprintf(stderr, "FAIL %-5s n=%u m=%u k=%u %s: nmse %.3g, worst element y[%u][%u] at %.3g of its bound\n",
                vkllm__type_name(type), n, m, k, what, nmse, wi, wj, worst);
    }
    free(wf), free(wd), free(x), free(y), free(wq);
    return ok;
}

static const uint32_t types[] = {VKLLM__TYPE_F32,  VKLLM__TYPE_F16,  VKLLM__TYPE_BF16, VKLLM__TYPE_Q8_0,
                                 VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q4_1, VKLLM__TYPE_Q5_0, VKLLM__TYPE_Q5_1,
                                 VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K};
static const uint32_t ns[] = {1, 3, 17, 64, 100};
static const uint32_t ms[] = {1, 7, 65, 1000};

static uint32_t block_of(uint32_t type) { return vkllm__type_traits(type)->block_size; }

/* Every n x m with small k (the block size, and an odd number of blocks / elements), then the
 * long k of real models on fewer shapes. */
static void all_shapes(struct vkllm__gpu *gpu, uint32_t type) {
    uint32_t bs = block_of(type);
    uint32_t ks[2] = {bs, bs == 1 ? 37 : bs == 32 ? 5 * 32 : 3 * 256};
    for (int kk = 0; kk < 2; kk++)
        for (size_t a = 0; a < VKLLM_ARRAY_LEN(ns); a++)
            for (size_t b = 0; b < VKLLM_ARRAY_LEN(ms); b++) check(gpu, type, ns[a], ms[b], ks[kk], "");
    uint32_t kbig = bs == 1 ? 2052 : 2048;
    check(gpu, type, 1, 1000, kbig, "");
    check(gpu, type, 17, 7, kbig, "");
    check(gpu, type, 100, 300, kbig, "");
}

/* Binding limits small enough for several W chunks and several x/y row blocks. */
static void chunked1(struct vkllm__gpu *gpu, uint64_t limit, uint32_t type, uint32_t n, uint32_t m, uint32_t k) {
    gpu_test_tune_n(gpu, "max_binding", (long)limit);
    check(gpu, type, n, m, k, "chunked");
    gpu_test_tune(gpu, "max_binding", NULL);
}

static void chunked(struct vkllm__gpu *gpu) {
    chunked1(gpu, 12288, VKLLM__TYPE_Q5_0, 17, 1000, 64); /* 44-byte rows: chunk starts need alignment */
    chunked1(gpu, 2048, VKLLM__TYPE_Q5_0, 100, 65, 96);   /* 66-byte rows, last chunk ends inside a word */
    chunked1(gpu, 12288, VKLLM__TYPE_Q8_0, 17, 1000, 160);
    chunked1(gpu, 12288, VKLLM__TYPE_Q4_K, 9, 1000, 256);
    chunked1(gpu, 4096, VKLLM__TYPE_Q6_K, 5, 300, 512);
    chunked1(gpu, 65536, VKLLM__TYPE_F16, 17, 1000, 37);   /* 74-byte rows; x rows of 148 bytes */
    chunked1(gpu, 65536, VKLLM__TYPE_BF16, 33, 999, 5);   /* 20-byte x rows: blocks of 16 rows */
}

/* Other specializations than the device's choice. */
static void forced_tiles(struct vkllm__gpu *gpu) {
    static const uint32_t tiles[][3] = {{32, 16, 8}, {16, 64, 4}, {128, 32, 16}, {64, 64, 32}};
    for (size_t t = 0; t < VKLLM_ARRAY_LEN(tiles); t++) {
        gpu_test_tune_n(gpu, "matmul_bm", tiles[t][0]);
        gpu_test_tune_n(gpu, "matmul_bn", tiles[t][1]);
        gpu_test_tune_n(gpu, "matmul_bk", tiles[t][2]);
        check(gpu, VKLLM__TYPE_F32, 70, 130, 37, "forced tiles");
        check(gpu, VKLLM__TYPE_Q4_1, 33, 65, 96, "forced tiles");
        check(gpu, VKLLM__TYPE_Q5_K, 17, 100, 512, "forced tiles");
    }
    gpu_test_tune(gpu, "matmul_bm", NULL), gpu_test_tune(gpu, "matmul_bn", NULL), gpu_test_tune(gpu, "matmul_bk", NULL);
}

static void bad_arguments(struct vkllm__gpu *gpu) {
    struct vkllm__dtensor wt;
    struct vkllm__buffer *b;
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q8_K, 256, 4, NULL, &wt));
    ASSERT_OK(vkllm__buffer_alloc(gpu, 4096 * 4, VKLLM__MEM_DEVICE, &b));
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_STATUS(vkllm__op_matmul(c, vkllm__view_of(b), &wt, vkllm__view_of(b), 2), VKLLM_STATUS_UNSUPPORTED);
    wt.type = VKLLM__TYPE_Q8_0; /* same bytes per 256: 8 blocks of 34 > 292, still fits the buffer */
    wt.row_bytes = 8 * 34;
    ASSERT_STATUS(vkllm__op_matmul(c, vkllm__view_of(b), &wt, vkllm__view_of(b), 0), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__op_matmul(c, vkllm__view_of(b), &wt, vkllm__view_of(b), 100), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm__dtensor_free(&wt);
    /* one Q8_0 row of 34 bytes in a buffer of exactly 34 bytes: the last word is not all there
     * (vkllm__dtensor_upload pads to whole words, so build the tensor by hand) */
    wt = (struct vkllm__dtensor){.type = VKLLM__TYPE_Q8_0, .k = 32, .m = 1, .row_bytes = 34};
    ASSERT_OK(vkllm__buffer_alloc(gpu, 34, VKLLM__MEM_DEVICE, &wt.buf));
    ASSERT_STATUS(vkllm__op_matmul(c, vkllm__view_of(b), &wt, vkllm__view_of(b), 1), VKLLM_STATUS_UNSUPPORTED);
    vkllm__dtensor_free(&wt);
    /* vkllm__dtensor_upload pads it, and then it works */
    ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q8_0, 32, 1, NULL, &wt));
    ASSERT_OK(vkllm__op_matmul(c, vkllm__view_of(b), &wt, vkllm__view_of(b), 1));
    ASSERT_OK(vkllm__cmd_end(c));
    vkllm__cmd_free(c);
    vkllm__buffer_free(b);
    vkllm__dtensor_free(&wt);
}

int main(void) {
    struct vkllm__gpu *gpu = gpu_test_open();
    for (size_t t = 0; t < VKLLM_ARRAY_LEN(types); t++) {
        clock_t t0 = clock();
        all_shapes(gpu, types[t]);
        printf("%-5s %.1f s (cpu)\n", vkllm__type_name(types[t]), (double)(clock() - t0) / CLOCKS_PER_SEC);
    }
    chunked(gpu);
    forced_tiles(gpu);
    bad_arguments(gpu);
    gpu_test_close(gpu);
    printf("%d cases, %d failed\n", n_run, n_fail);
    return n_fail ? 1 : 0;
}
