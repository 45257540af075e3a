/* test_op_matvec_tb.c - the CPU devices' decode matvec (runtime/ops/ops_matvec_tb.c): weights
 * repacked at load time, read through uniform texel buffers, and x through another.
 *
 * Against the reference (runtime/ref) for every type (F32, BF16, F16, Q8_0, Q5_0, Q6_K, Q5_1, Q5_K,
 * Q4_0, Q4_1, Q4_K: the seven storage formats) on shapes that are multiples of
 * nothing (rows not a multiple of the 8-row group, k not a multiple of the unit where the type
 * allows it); ncols 1..8 where every column must be bit-identical to the same column computed
 * alone; the weights bound in chunks (maxTexelBufferElements lowered); x split over several
 * texel bindings (the limit lowered below 8 columns of 5632 floats); both paths of
 * vkllm__op_matvec (VKLLM_MATVEC_TEXEL=1 and =0); refusals of what the path does not take.
 * Validation with synchronization validation is on and must stay silent.
 *
 * Bound: the reference dequantizes the very same values, only the fp32 summation order differs:
 * NMSE < 1e-10 (as test_op_matvec) and every row within 1e-5 of sum_j |w_ij x_j|. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test.h"
#include "ops_gpu.h"
#include "ref_ops.h"
#include "types.h"

#define NMSE_BOUND 1e-10
#define GUARD 5
#define POISON -12345.0f

static int n_run, n_fail, n_chunked, n_split_x;

struct mat {
    uint32_t type, m, k;
    uint64_t row_bytes;
    uint8_t *host;
    struct vkllm__dtensor t;
};

static void mat_init(struct vkllm__gpu *gpu, struct mat *w, uint32_t type, uint32_t m, uint32_t k, uint64_t seed) {
    memset(w, 0, sizeof *w);
    w->type = type;
    w->m = m;
    w->k = k;
    ASSERT_OK(vkllm__row_size(type, k, &w->row_bytes));
    w->host = malloc(w->row_bytes * m);
    float *row = malloc(sizeof(float) * k);
    ASSERT(w->host && row);
    uint64_t s = seed * 2654435761u + 1;
    for (uint32_t r = 0; r < m; r++) {
        float scale = 0.05f + (float)(r % 5);
        for (uint32_t j = 0; j < k; j++) row[j] = scale * vkllm_test_randf(&s);
        vkllm__quantize_row(type, row, w->host + r * w->row_bytes, k);
    }
    free(row);
    ASSERT_OK(vkllm__dtensor_upload(gpu, type, k, m, w->host, &w->t));
    ASSERT(w->t.tb == NULL);
    ASSERT_OK(vkllm__dtensor_add_tb(gpu, &w->t, w->host));
    ASSERT(w->t.tb != NULL);
    ASSERT_EQ(vkllm__buffer_size(w->t.tb), vkllm__matvec_tb_bytes(gpu, type, k, m));
    ASSERT(vkllm__matvec_tb_applies(gpu, &w->t));
}

static void mat_free(struct mat *w) {
    vkllm__dtensor_free(&w->t);
    ASSERT(w->t.tb == NULL && w->t.buf == NULL);
    free(w->host);
}

/* y (ncols, m) for x (ncols, k) at byte x_off of xb; tb = 1: vkllm__op_matvec_tb, 0: vkllm__op_matvec
 * one column at a time (the hook in it picks the path from VKLLM_MATVEC_TEXEL). */
static void run(struct vkllm__gpu *gpu, const struct mat *w, struct vkllm__buffer *xb, uint64_t x_off, uint32_t ncols,
                int tb, float *got) {
    uint64_t ny = (uint64_t)ncols * w->m + GUARD;
    for (uint64_t i = 0; i < ny; i++) got[i] = POISON;
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    if (tb) {
        struct vkllm__buffer *yb = gpu_test_upload_f32(gpu, got, ny);
        struct vkllm__view x = {xb, x_off, 0}, y = {yb, 0, 0};
        ASSERT_OK(vkllm__cmd_begin(c));
        ASSERT_OK(vkllm__op_matvec_tb(c, y, &w->t, x, ncols));
        ASSERT_OK(vkllm__cmd_end(c));
        ASSERT_OK(vkllm__cmd_submit(c));
        ASSERT_OK(vkllm__buffer_download(yb, 0, got, 4 * ny));
        vkllm__buffer_free(yb);
    } else { /* a y buffer per column: the storage path binds y at aligned offsets only */
        for (uint32_t col = 0; col < ncols; col++) {
            float *yc = got + (uint64_t)col * w->m;
            struct vkllm__buffer *yb = gpu_test_upload_f32(gpu, yc, w->m + GUARD);
            struct vkllm__view xc = {xb, x_off + 4ull * col * w->k, 4ull * w->k};
            ASSERT_OK(vkllm__cmd_begin(c));
            ASSERT_OK(vkllm__op_matvec(c, vkllm__view_of(yb), &w->t, xc, 1));
            ASSERT_OK(vkllm__cmd_end(c));
            ASSERT_OK(vkllm__cmd_submit(c));
            ASSERT_OK(vkllm__buffer_download(yb, 0, yc, 4ull * (w->m + GUARD)));
            vkllm__buffer_free(yb);
        }
    }
    vkllm__cmd_free(c);
}

static void report(int ok, const struct mat *w, const char *what, uint32_t ncols, double e) {
    n_run++;
    if (!ok) {
        n_fail++;
        fprintf(stderr, "FAIL %s %ux%u ncols %u (%s): nmse %.3g\n", vkllm__type_name(w->type), w->m, w->k, ncols,
                what, e);
    }
}

/* Column y (m,) against the reference: NMSE over the rows (m >= 7), and each row within
 * 1e-5 of sum_j |w_ij x_j| (a single row's NMSE is dominated by cancellation). */
static double col_error(const struct mat *w, const float *x, const float *got, const float *want, int *ok) {
    float *row = malloc(sizeof(float) * w->k);
    ASSERT(row);
    *ok = 1;
    for (uint32_t i = 0; i < w->m; i++) {
        vkllm__dequantize_row(w->type, w->host + i * w->row_bytes, row, w->k);
        double a = 0;
        for (uint32_t j = 0; j < w->k; j++) a += fabs((double)row[j] * x[j]);
        if (!(fabs((double)got[i] - want[i]) <= 1e-5 * a)) *ok = 0;
    }
    free(row);
    double e = vkllm_test_nmse(got, want, w->m);
    if (w->m >= 7 && !(e < NMSE_BOUND)) *ok = 0;
    return e;
}

/* Every column of a batch against the reference, bit-identical to it computed alone; y past the
 * end untouched. */
static void check(struct vkllm__gpu *gpu, const struct mat *w, uint32_t max_cols, const char *what) {
    uint64_t s = (uint64_t)w->m * 7919 + w->k;
    float *x = malloc(sizeof(float) * max_cols * w->k), *want = malloc(sizeof(float) * max_cols * w->m);
    float *got = malloc(sizeof(float) * ((uint64_t)max_cols * w->m + GUARD));
    float *alone = malloc(sizeof(float) * ((uint64_t)max_cols * w->m + GUARD));
    ASSERT(x && want && got && alone);
    for (uint64_t j = 0; j < (uint64_t)max_cols * w->k; j++) x[j] = vkllm_test_randf(&s);
    for (uint32_t col = 0; col < max_cols; col++)
        vkllm__ref_matvec_q(want + (uint64_t)col * w->m, w->type, w->host, w->row_bytes, x + (uint64_t)col * w->k,
                            w->m, w->k);
    struct vkllm__buffer *xb = gpu_test_upload_f32(gpu, x, (uint64_t)max_cols * w->k);

    /* each column alone, at its offset in x */
    for (uint32_t col = 0; col < max_cols; col++) {
        run(gpu, w, xb, 4ull * col * w->k, 1, 1, got);
        memcpy(alone + (uint64_t)col * w->m, got, 4ull * w->m);
        int ok;
        double e = col_error(w, x + (uint64_t)col * w->k, got, want + (uint64_t)col * w->m, &ok);
        for (uint32_t i = w->m; i < w->m + GUARD; i++) ok &= got[i] == POISON;
        report(ok, w, what, 1, e);
    }
    /* batches of 2..max_cols columns: each column the same bits as alone */
    for (uint32_t nc = 2; nc <= max_cols; nc++) {
        uint32_t first = max_cols - nc; /* the batch starts at column `first` */
        run(gpu, w, xb, 4ull * first * w->k, nc, 1, got);
        int same = memcmp(got, alone + (uint64_t)first * w->m, 4ull * nc * w->m) == 0;
        for (uint64_t i = (uint64_t)nc * w->m; i < (uint64_t)nc * w->m + GUARD; i++) same &= got[i] == POISON;
        report(same, w, "batch not bit-identical to columns alone", nc, 0);
        if (nc * w->k * 4ull > vkllm__gpu_bind_limits(gpu)->max_texels * 16) n_split_x++;
    }
    /* vkllm__op_matvec, both paths */
    for (int texel = 1; texel >= 0; texel--) {
        gpu_test_tune(gpu, "matvec_texel", texel ? "1" : "0");
        ASSERT(vkllm__matvec_tb_applies(gpu, &w->t) == texel);
        run(gpu, w, xb, 0, 2, 0, got);
        int ok0, ok1;
        double e = col_error(w, x, got, want, &ok0);
        e = fmax(e, col_error(w, x + w->k, got + w->m, want + w->m, &ok1));
        report(ok0 && ok1, w, texel ? "op_matvec, texel path" : "op_matvec, storage path", 2, e);
        if (texel) report(memcmp(got, alone, 8ull * w->m) == 0, w, "op_matvec hook differs from matvec_tb", 2, 0);
    }
    gpu_test_tune(gpu, "matvec_texel", "1");
    vkllm__buffer_free(xb);
    free(x);
    free(want);
    free(got);
    free(alone);
}

int main(void) {
    /* the path on whatever device runs the test (it is the default on CPU devices only) */
    struct vkllm__gpu *gpu = gpu_test_open_tuned("matvec_texel=1");
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    if (!bl->texel_formats) {
        fprintf(stderr, "device without R32G32B32A32_UINT / R32_SFLOAT uniform texel buffers\n");
        gpu_test_close(gpu);
        return VKLLM_TEST_SKIP;
    }
    const uint64_t max_texels = bl->max_texels;

    static const struct {
        uint32_t type;
        uint32_t ks[4];
    } k_cases[] = {
        {VKLLM__TYPE_F32, {4, 12, 172, 2048}},   /* units of 4 */
        {VKLLM__TYPE_F16, {4, 12, 176, 2052}},   /* units of 8: k % 8 == 4 leaves half a unit */
        {VKLLM__TYPE_Q8_0, {32, 96, 224, 2048}}, /* blocks of 32 */
        {VKLLM__TYPE_Q4_0, {32, 96, 224, 2048}},
        {VKLLM__TYPE_Q4_K, {256, 512, 768, 2048}}, /* super-blocks of 256 */
        {VKLLM__TYPE_Q6_K, {256, 512, 768, 2048}},
        {VKLLM__TYPE_Q5_K, {256, 512, 768, 2048}},
        {VKLLM__TYPE_BF16, {4, 12, 172, 2048}},
        {VKLLM__TYPE_Q4_1, {32, 96, 224, 2048}},
        {VKLLM__TYPE_Q5_0, {32, 96, 224, 2048}},
        {VKLLM__TYPE_Q5_1, {32, 96, 224, 2048}},
    };
    static const uint32_t ms[] = {1, 7, 9, 33, 1003};

    for (size_t ti = 0; ti < VKLLM_ARRAY_LEN(k_cases); ti++) {
        uint32_t type = k_cases[ti].type;
        int fail0 = n_fail;
        for (uint32_t ki = 0; ki < 4; ki++) {
            for (size_t mi = 0; mi < VKLLM_ARRAY_LEN(ms); mi++) {
                uint32_t m = ms[mi], k = k_cases[ti].ks[ki];
                struct mat w;
                mat_init(gpu, &w, type, m, k, ti * 100 + ki * 10 + mi);
                check(gpu, &w, m == 9 || m == 33 ? 8 : m > 100 ? 2 : 3, "whole");
                /* chunks of whole 8-row groups: the limit lowered to 1, 2 and 3 groups (+ a few) */
                if (m == 33) {
                    /* texels of one group: 8 rows of units of 4 (F32), 8 (F16) or 32 elements
                     * (Q8_0: 2 texels per unit, Q4_0: 1) */
                    uint32_t unit = type == VKLLM__TYPE_F32 || type == VKLLM__TYPE_BF16 ? 4
                                    : type == VKLLM__TYPE_F16 ? 8 : 32;
                    int two = type == VKLLM__TYPE_Q8_0 || type == VKLLM__TYPE_Q6_K || type == VKLLM__TYPE_Q5_0 ||
                              type == VKLLM__TYPE_Q5_1 || type == VKLLM__TYPE_Q5_K; /* int8 formats: 2 texels */
                    uint64_t per_group = (k + unit - 1) / unit * (two ? 2 : 1) * 8;
                    uint64_t limits[] = {per_group, 2 * per_group + 3, 3 * per_group};
                    for (size_t li = 0; li < VKLLM_ARRAY_LEN(limits); li++) {
                        gpu_test_tune_n(gpu, "max_texels", (long)(limits[li]));
                        ASSERT_EQ(bl->max_texels, limits[li]);
                        n_chunked++;
                        check(gpu, &w, 2, "chunked");
                    }
                    gpu_test_tune(gpu, "max_texels", NULL);
                    ASSERT_EQ(bl->max_texels, max_texels);
                    /* a group larger than the limit: refused with a status */
                    gpu_test_tune_n(gpu, "max_texels", (long)(per_group - 1));
                    ASSERT(!vkllm__matvec_tb_applies(gpu, &w.t));
                    gpu_test_tune(gpu, "max_texels", NULL);
                }
                mat_free(&w);
            }
        }
        printf("%-5s %s\n", vkllm__type_name(type), n_fail == fail0 ? "ok" : "FAILED");
        fflush(stdout);
    }

    /* x split over texel bindings: 8 columns of 5632 floats with the limit lowered to 3 columns
     * (4224 texels; a group of 8 rows has 2816, so the weights are chunked too) */
    {
        struct mat w;
        mat_init(gpu, &w, VKLLM__TYPE_Q8_0, 61, 5632, 7);
        int split0 = n_split_x;
        gpu_test_tune_n(gpu, "max_texels", (long)(3 * 5632 / 4));
        check(gpu, &w, 8, "x over several texel bindings");
        gpu_test_tune(gpu, "max_texels", NULL);
        ASSERT(n_split_x > split0);
        mat_free(&w);
    }

    /* Only the repacked layout (how models load on CPU devices): vkllm__op_matvec and
     * vkllm__op_matmul run on it, even with the path turned off; matmul's rows are bit-identical
     * to vkllm__op_matvec_tb's columns. */
    {
        struct mat w;
        const uint32_t n = 11;
        mat_init(gpu, &w, VKLLM__TYPE_Q8_0, 45, 96, 11);
        vkllm__buffer_free(w.t.buf);
        w.t.buf = NULL;
        float *x = malloc(sizeof(float) * n * w.k), *want = malloc(sizeof(float) * n * w.m);
        float *got = malloc(sizeof(float) * n * w.m), *mv = malloc(sizeof(float) * n * w.m);
        ASSERT(x && want && got && mv);
        uint64_t s = 5;
        for (uint64_t j = 0; j < (uint64_t)n * w.k; j++) x[j] = vkllm_test_randf(&s);
        for (uint32_t i = 0; i < n; i++)
            vkllm__ref_matvec_q(want + i * w.m, w.type, w.host, w.row_bytes, x + i * w.k, w.m, w.k);
        struct vkllm__buffer *xb = gpu_test_upload_f32(gpu, x, (uint64_t)n * w.k), *yb, *zb;
        ASSERT_OK(vkllm__buffer_alloc(gpu, 4ull * n * w.m, VKLLM__MEM_DEVICE, &yb));
        ASSERT_OK(vkllm__buffer_alloc(gpu, 4ull * n * w.m, VKLLM__MEM_DEVICE, &zb));
        for (int texel = 1; texel >= 0; texel--) {
            gpu_test_tune(gpu, "matvec_texel", texel ? "1" : "0");
            ASSERT(vkllm__matvec_tb_applies(gpu, &w.t));
            struct vkllm__cmd *c;
            ASSERT_OK(vkllm__cmd_init(gpu, &c));
            ASSERT_OK(vkllm__cmd_begin(c));
            ASSERT_OK(vkllm__op_matmul(c, vkllm__view_of(yb), &w.t, vkllm__view_of(xb), n));
            for (uint32_t i = 0; i < n; i++) {
                struct vkllm__view xi = {xb, 4ull * i * w.k, 4ull * w.k}, zi = {zb, 4ull * i * w.m, 4ull * w.m};
                if (i % 2) ASSERT_OK(vkllm__op_matvec_tb(c, zi, &w.t, xi, 1));
                else if (zi.offset % 16 == 0) ASSERT_OK(vkllm__op_matvec(c, zi, &w.t, xi, 1));
                else ASSERT_OK(vkllm__op_matvec_tb(c, zi, &w.t, xi, 1));
            }
            ASSERT_OK(vkllm__cmd_end(c));
            ASSERT_OK(vkllm__cmd_submit(c));
            vkllm__cmd_free(c);
            ASSERT_OK(vkllm__buffer_download(yb, 0, got, 4ull * n * w.m));
            ASSERT_OK(vkllm__buffer_download(zb, 0, mv, 4ull * n * w.m));
            int ok = 1;
            double e = 0;
            for (uint32_t i = 0; i < n; i++) {
                int oki;
                e = fmax(e, col_error(&w, x + i * w.k, got + i * w.m, want + i * w.m, &oki));
                ok &= oki;
            }
            report(ok, &w, "matmul on the repacked layout only", n, e);
            report(memcmp(got, mv, 4ull * n * w.m) == 0, &w, "matmul rows differ from matvec", n, 0);
        }
        gpu_test_tune(gpu, "matvec_texel", "1");
        vkllm__buffer_free(xb);
        vkllm__buffer_free(yb);
        vkllm__buffer_free(zb);
        free(x);
        free(want);
        free(got);
        free(mv);
        mat_free(&w);
    }

    /* refusals */
    {
        struct mat w;
        mat_init(gpu, &w, VKLLM__TYPE_F32, 16, 8, 3);
        struct vkllm__buffer *b;
        ASSERT_OK(vkllm__buffer_alloc(gpu, 4096, VKLLM__MEM_DEVICE, &b));
        ASSERT_OK(vkllm__buffer_fill_zero(b));
        struct vkllm__view v = {b, 0, 2048}, v4 = {b, 4, 2040};
        struct vkllm__cmd *c;
        ASSERT_OK(vkllm__cmd_init(gpu, &c));
        ASSERT_OK(vkllm__cmd_begin(c));
        ASSERT_STATUS(vkllm__op_matvec_tb(c, v, &w.t, v, 0), VKLLM_STATUS_INVALID_ARGUMENT);
        ASSERT_STATUS(vkllm__op_matvec_tb(c, v, &w.t, v, 9), VKLLM_STATUS_INVALID_ARGUMENT);
        ASSERT_STATUS(vkllm__op_matvec_tb(c, v, &w.t, v4, 1), VKLLM_STATUS_INVALID_ARGUMENT); /* x misaligned */
        struct vkllm__view small = {b, 0, 16};
        ASSERT_STATUS(vkllm__op_matvec_tb(c, small, &w.t, v, 1), VKLLM_STATUS_INVALID_ARGUMENT); /* y too small */
        ASSERT_OK(vkllm__cmd_end(c));
        ASSERT_OK(vkllm__cmd_submit(c));
        vkllm__cmd_free(c);
        vkllm__buffer_free(b);
        mat_free(&w);

        /* types and shapes the path does not take: no copy, no path */
        ASSERT_EQ(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_Q4_K, 224, 8), 0); /* not whole super-blocks */
        ASSERT_EQ(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_F32, 7, 8), 0); /* k % 4 */
        ASSERT(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_Q8_0, 4096, 4096) > 4096ull * 4096 * 34 / 32);
        gpu_test_tune(gpu, "matvec_texel", "0");
        ASSERT_EQ(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_Q8_0, 4096, 4096), 0);
        gpu_test_tune(gpu, "matvec_texel", "1");
        struct vkllm__dtensor t;
        ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q4_K, 256, 3, NULL, &t));
        ASSERT_OK(vkllm__dtensor_add_tb(gpu, &t, NULL));
        ASSERT(t.tb == NULL && !vkllm__matvec_tb_applies(gpu, &t));
        ASSERT_OK(vkllm__cmd_init(gpu, &c));
        ASSERT_OK(vkllm__cmd_begin(c));
        ASSERT_OK(vkllm__buffer_alloc(gpu, 4096, VKLLM__MEM_DEVICE, &b));
        ASSERT_STATUS(vkllm__op_matvec_tb(c, vkllm__view_of(b), &t, vkllm__view_of(b), 1), VKLLM_STATUS_UNSUPPORTED);
        ASSERT_OK(vkllm__cmd_end(c));
        vkllm__cmd_free(c);
        vkllm__buffer_free(b);
        vkllm__dtensor_free(&t);
    }

    gpu_test_close(gpu);
    printf("%d cases (%d chunked limits, %d batches with x over several bindings), %d failed\n", n_run, n_chunked,
           n_split_x, n_fail);
    ASSERT(n_chunked >= 3 * 4 * 4 && n_split_x > 0);
    return n_fail ? 1 : 0;
}
