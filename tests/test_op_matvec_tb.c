/* test_op_matvec_tb.c - the CPU devices' decode matvec (runtime/ops/ops_matvec_tb.c): weights
 * repacked at load time, read through uniform texel buffers, and x through another.
 *
 * The op-case registry's full list (runtime/check/cases.c) for every type (F32, BF16, F16, Q8_0,
 * Q5_0, Q6_K, Q5_1, Q5_K, Q4_0, Q4_1, Q4_K: the seven storage formats) on shapes that are
 * multiples of nothing (rows not a multiple of the 8-row group, k not a multiple of the unit where
 * the type allows it); up to 8 columns where every batch must be bit-identical to its columns
 * alone; the weights bound in chunks (maxTexelBufferElements lowered); x split over several texel
 * bindings; both paths of vkllm__op_matvec (texel on and off). Here also: matrices held only in
 * the repacked layout (how models load on CPU devices), a group larger than the texel limit, and
 * refusals of what the path does not take. Validation with synchronization validation is on.
 *
 * Bound: the reference dequantizes the very same values, only the fp32 summation order differs:
 * NMSE < 1e-10 and every row within 1e-5 of sum_j |w_ij x_j|. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_test.h"
#include "ref_ops.h"
#include "types.h"

#define NMSE_BOUND 1e-10

static int n_run, n_fail;

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

static void report(int ok, const struct mat *w, const char *what, uint32_t ncols, double e) {
    n_run++;
    if (!ok) {
        n_fail++;
        fprintf(stderr, "FAIL %s %ux%u ncols %u (%s): nmse %.3g\n", vkllm__type_name(w->type), w->m, w->k, ncols, what,
                e);
    }
}

int main(int argc, char **argv) {
    op_test_args(argc, argv);
    /* the path on whatever device runs the test (it is the default on CPU devices only) */
    struct vkllm__gpu *gpu = gpu_test_open_tuned("matvec_texel=1");
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    if (!bl->texel_formats) {
        fprintf(stderr, "device without R32G32B32A32_UINT / R32_SFLOAT uniform texel buffers\n");
        gpu_test_close(gpu);
        return VKLLM_TEST_SKIP;
    }

    struct op_test_stats st = {0};
    op_test_run(gpu, VKLLM__OP_MATVEC_TB, 1, &st);
    if (st.timed) ASSERT(st.chunked >= op_test_chunked_want(3 * 11));
    n_run += st.run, n_fail += st.failed;

    /* a group of 8 rows larger than the texel limit: the path does not apply */
    {
        struct mat w;
        mat_init(gpu, &w, VKLLM__TYPE_Q8_0, 33, 224, 3);
        gpu_test_tune_n(gpu, "max_texels", 7 * 2 * 8 - 1);
        ASSERT(!vkllm__matvec_tb_applies(gpu, &w.t));
        gpu_test_tune(gpu, "max_texels", NULL);
        ASSERT(vkllm__matvec_tb_applies(gpu, &w.t));
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
        struct op_test_scratch sc = op_test_scratch_begin(gpu, 4096);
        struct vkllm__cmd *c = sc.c;
        struct vkllm__view v = {sc.b, 0, 2048}, v4 = {sc.b, 4, 2040}, small = {sc.b, 0, 16};
        ASSERT_STATUS(vkllm__op_matvec_tb(c, v, &w.t, v, 0), VKLLM_STATUS_INVALID_ARGUMENT);
        ASSERT_STATUS(vkllm__op_matvec_tb(c, v, &w.t, v, 9), VKLLM_STATUS_INVALID_ARGUMENT);
        ASSERT_STATUS(vkllm__op_matvec_tb(c, v, &w.t, v4, 1), VKLLM_STATUS_INVALID_ARGUMENT);    /* x misaligned */
        ASSERT_STATUS(vkllm__op_matvec_tb(c, small, &w.t, v, 1), VKLLM_STATUS_INVALID_ARGUMENT); /* y too small */
        op_test_scratch_end(&sc);
        mat_free(&w);

        /* types and shapes the path does not take: no copy, no path */
        ASSERT_EQ(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_Q4_K, 224, 8), 0); /* not whole super-blocks */
        ASSERT_EQ(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_F32, 7, 8), 0);    /* k % 4 */
        ASSERT(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_Q8_0, 4096, 4096) > 4096ull * 4096 * 34 / 32);
        gpu_test_tune(gpu, "matvec_texel", "0");
        ASSERT_EQ(vkllm__matvec_tb_bytes(gpu, VKLLM__TYPE_Q8_0, 4096, 4096), 0);
        gpu_test_tune(gpu, "matvec_texel", "1");
        struct vkllm__dtensor t;
        ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q4_K, 256, 3, NULL, &t));
        ASSERT_OK(vkllm__dtensor_add_tb(gpu, &t, NULL));
        ASSERT(t.tb == NULL && !vkllm__matvec_tb_applies(gpu, &t));
        sc = op_test_scratch_begin(gpu, 4096);
        ASSERT_STATUS(vkllm__op_matvec_tb(sc.c, sc.v, &t, sc.v, 1), VKLLM_STATUS_UNSUPPORTED);
        op_test_scratch_end(&sc);
        vkllm__dtensor_free(&t);
    }

    gpu_test_close(gpu);
    printf("%d cases, %d failed\n", n_run, n_fail);
    return n_fail ? 1 : 0;
}
