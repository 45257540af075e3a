/* test_op_matvec.c - decode matvec and embedding lookup (get_rows) for every weight type against
 * the reference (runtime/ref): random weights quantized with vkllm__quantize_row, shapes that are
 * multiples of nothing, several work splits (the CPU one, the GPU-style subgroupAdd one and the
 * shared-memory one, forced through the device's tuning), and W bound in row chunks (binding limit
 * lowered) including chunk offsets that need alignment. Validation with synchronization
 * validation is on and must stay silent.
 *
 * Bounds: the reference dequantizes the very same bytes, so only the fp32 summation order
 * differs: matvec NMSE < 1e-10; get_rows NMSE < 1e-12 (one rounding at most per element). */
#include <stdlib.h>
#include <string.h>

#include "gpu_test.h"
#include "ops_gpu.h"
#include "ref_ops.h"
#include "types.h"

#define MATVEC_NMSE 1e-10
#define GET_ROWS_NMSE 1e-12

static const uint32_t k_types[] = {
    VKLLM__TYPE_F32,  VKLLM__TYPE_F16,  VKLLM__TYPE_BF16, VKLLM__TYPE_Q8_0, VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q4_1,
    VKLLM__TYPE_Q5_0, VKLLM__TYPE_Q5_1, VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K,
};

static int n_run, n_fail, n_chunked;

/* A weight matrix on the host (GGUF bytes) and on the device. */
struct mat {
    uint32_t type;
    uint32_t m, k;
    uint64_t row_bytes;
    uint8_t *host;
    struct vkllm__dtensor t;
};

/* Random weights, quantized; uploaded at byte `offset` of a buffer padded to whole words. */
static void mat_init(struct vkllm__gpu *gpu, struct mat *w, uint32_t type, uint32_t m, uint32_t k,
                     uint64_t offset, uint64_t seed) {
    memset(w, 0, sizeof *w);
    w->type = type;
    w->m = m;
    w->k = k;
    ASSERT_OK(vkllm__row_size(type, k, &w->row_bytes));
    uint64_t bytes = w->row_bytes * m;
    w->host = malloc(bytes);
    float *row = malloc(sizeof(float) * k);
    ASSERT(w->host && row);
    uint64_t s = seed * 2654435761u + 1;
    for (uint32_t r = 0; r < m; r++) {
        float scale = 0.05f + (float)(r % 5); /* rows of different magnitudes */
        for (uint32_t j = 0; j < k; j++) row[j] = scale * vkllm_test_randf(&s);
        vkllm__quantize_row(type, row, w->host + r * w->row_bytes, k);
    }
    free(row);
    struct vkllm__dtensor t = {.type = type, .k = k, .m = m, .row_bytes = w->row_bytes, .offset = offset};
    ASSERT_OK(vkllm__buffer_alloc(gpu, (offset + bytes + 3) & ~(uint64_t)3, VKLLM__MEM_DEVICE, &t.buf));
    ASSERT_OK(vkllm__buffer_upload(t.buf, offset, w->host, bytes));
    w->t = t;
}

static void mat_free(struct mat *w) {
    vkllm__dtensor_free(&w->t);
    free(w->host);
}

/* --- matvec -------------------------------------------------------------------------------- */

#define GUARD 5 /* y elements past m that must stay untouched */

static void check_matvec(struct vkllm__gpu *gpu, const struct mat *w, const char *what) {
    uint64_t s = (uint64_t)w->m * 7919 + w->k;
    float *x = malloc(sizeof(float) * w->k), *want = malloc(sizeof(float) * w->m);
    float *got = malloc(sizeof(float) * (w->m + GUARD));
    ASSERT(x && want && got);
    for (uint32_t j = 0; j < w->k; j++) x[j] = vkllm_test_randf(&s);
    for (uint32_t i = 0; i < w->m + GUARD; i++) got[i] = -12345.0f;
    vkllm__ref_matvec_q(want, w->type, w->host, w->row_bytes, x, w->m, w->k);

    struct vkllm__buffer *xb = gpu_test_upload_f32(gpu, x, w->k), *yb = gpu_test_upload_f32(gpu, got, w->m + GUARD);
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_matvec(c, vkllm__view_of(yb), &w->t, vkllm__view_of(xb), 1));
    ASSERT_OK(vkllm__cmd_end(c));
    ASSERT_OK(vkllm__cmd_submit(c));
    vkllm__cmd_free(c);
    ASSERT_OK(vkllm__buffer_download(yb, 0, got, 4ull * (w->m + GUARD)));
    vkllm__buffer_free(xb);
    vkllm__buffer_free(yb);

    double e = vkllm_test_nmse(got, want, w->m);
    int guard_ok = 1;
    for (uint32_t i = w->m; i < w->m + GUARD; i++) guard_ok &= got[i] == -12345.0f;
    n_run++;
    if (!(e < MATVEC_NMSE) || !guard_ok) {
        n_fail++;
        fprintf(stderr, "FAIL matvec %s %ux%u (%s): nmse %.3g%s; y[0] got %g want %g\n",
                vkllm__type_name(w->type), w->m, w->k, what, e, guard_ok ? "" : ", wrote past m", got[0], want[0]);
    }
    free(x);
    free(want);
    free(got);
}

/* ncols columns in one op: each column bit-identical to a one-column op on it (the batched
 * decode's promise), and close to the reference. */
static int n_cols_run;

static void check_matvec_cols(struct vkllm__gpu *gpu, const struct mat *w, uint32_t ncols, const char *what) {
    uint64_t s = (uint64_t)w->m * 31 + w->k * 7 + ncols;
    uint64_t nx = (uint64_t)ncols * w->k, ny = (uint64_t)ncols * w->m;
    uint64_t mp = (w->m + 63) / 64 * 64; /* one-column results at aligned offsets */
    float *x = malloc(sizeof(float) * nx), *want = malloc(sizeof(float) * w->m);
    float *got = malloc(sizeof(float) * (ny + GUARD)), *one = malloc(sizeof(float) * ncols * mp);
    ASSERT(x && want && got && one);
    for (uint64_t j = 0; j < nx; j++) x[j] = vkllm_test_randf(&s);
    for (uint64_t i = 0; i < ny + GUARD; i++) got[i] = -12345.0f;
    for (uint64_t i = 0; i < ncols * mp; i++) one[i] = -12345.0f;
    struct vkllm__buffer *xb = gpu_test_upload_f32(gpu, x, nx), *yb = gpu_test_upload_f32(gpu, got, ny + GUARD);
    struct vkllm__buffer *yb1 = gpu_test_upload_f32(gpu, one, ncols * mp);
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_matvec(c, vkllm__view_of(yb), &w->t, vkllm__view_of(xb), ncols));
    for (uint32_t j = 0; j < ncols; j++) {
        struct vkllm__view xj = {xb, 4ull * j * w->k, 4ull * w->k}, yj = {yb1, 4ull * j * mp, 4ull * w->m};
        ASSERT_OK(vkllm__op_matvec(c, yj, &w->t, xj, 1));
    }
    ASSERT_OK(vkllm__cmd_end(c));
    ASSERT_OK(vkllm__cmd_submit(c));
    vkllm__cmd_free(c);
    ASSERT_OK(vkllm__buffer_download(yb, 0, got, 4ull * (ny + GUARD)));
    ASSERT_OK(vkllm__buffer_download(yb1, 0, one, 4ull * ncols * mp));
    vkllm__buffer_free(xb);
    vkllm__buffer_free(yb);
    vkllm__buffer_free(yb1);
    int ok = 1;
    for (uint32_t i = 0; i < GUARD; i++) ok &= got[ny + i] == -12345.0f;
    int same = 1;
    for (uint32_t j = 0; j < ncols; j++) same &= !memcmp(got + (uint64_t)j * w->m, one + j * mp, sizeof(float) * w->m);
    ok &= same;
    double e = 0;
    for (uint32_t j = 0; j < ncols; j++) {
        vkllm__ref_matvec_q(want, w->type, w->host, w->row_bytes, x + (uint64_t)j * w->k, w->m, w->k);
        double ej = vkllm_test_nmse(got + (uint64_t)j * w->m, want, w->m);
        if (!(ej < MATVEC_NMSE)) ok = 0;
        if (ej > e) e = ej;
    }
    n_run++;
    n_cols_run++;
    if (!ok) {
        n_fail++;
        fprintf(stderr, "FAIL matvec %s %ux%u, %u columns (%s): %s, worst nmse %.3g\n", vkllm__type_name(w->type), w->m,
                w->k, ncols, what, !same ? "not bit-identical to one column at a time"
                                                                      : "wrong or wrote past the end", e);
    }
    free(x);
    free(want);
    free(got);
    free(one);
}

/* --- get_rows ------------------------------------------------------------------------------ */

static void check_get_rows(struct vkllm__gpu *gpu, const struct mat *w, const char *what) {
    uint32_t ids[] = {w->m - 1, 0, w->m - 1, 3 % w->m, w->m / 2, w->m - 1, 1 % w->m};
    uint32_t n = VKLLM_ARRAY_LEN(ids);
    float *want = malloc(sizeof(float) * n * w->k), *got = malloc(sizeof(float) * n * w->k);
    ASSERT(want && got);
    for (uint32_t i = 0; i < n; i++)
        vkllm__dequantize_row(w->type, w->host + ids[i] * w->row_bytes, want + (uint64_t)i * w->k, w->k);
    struct vkllm__buffer *ib, *ob;
    ASSERT_OK(vkllm__buffer_alloc(gpu, sizeof ids, VKLLM__MEM_DEVICE, &ib));
    ASSERT_OK(vkllm__buffer_upload(ib, 0, ids, sizeof ids));
    ASSERT_OK(vkllm__buffer_alloc(gpu, 4ull * n * w->k, VKLLM__MEM_DEVICE, &ob));
    ASSERT_OK(vkllm__buffer_fill_zero(ob));
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__op_get_rows(c, vkllm__view_of(ob), &w->t, vkllm__view_of(ib), n));
    ASSERT_OK(vkllm__cmd_end(c));
    ASSERT_OK(vkllm__cmd_submit(c));
    vkllm__cmd_free(c);
    ASSERT_OK(vkllm__buffer_download(ob, 0, got, 4ull * n * w->k));
    vkllm__buffer_free(ib);
    vkllm__buffer_free(ob);
    double e = vkllm_test_nmse(got, want, (size_t)n * w->k);
    n_run++;
    if (!(e < GET_ROWS_NMSE)) {
        n_fail++;
        fprintf(stderr, "FAIL get_rows %s %ux%u (%s): nmse %.3g\n", vkllm__type_name(w->type), w->m, w->k, what, e);
    }
    free(want);
    free(got);
}

/* --- cases --------------------------------------------------------------------------------- */

/* Row lengths per type: the smallest legal one, a few blocks, and model-sized ones. */
static uint32_t row_lengths(uint32_t type, uint32_t *ks) {
    uint32_t b = vkllm__type_traits(type)->block_size;
    if (b == 1) {
        static const uint32_t plain[] = {1, 7, 16, 33, 2048, 5632};
        memcpy(ks, plain, sizeof plain);
        return VKLLM_ARRAY_LEN(plain);
    }
    uint32_t n = 0;
    ks[n++] = b;
    ks[n++] = 3 * b;
    if (b < 256) ks[n++] = 7 * b;
    ks[n++] = 2048;
    ks[n++] = 5632;
    return n;
}

struct split {
    const char *wg, *nt, *nr, *sg, *xs; /* tuning values (NULL: the device default) */
    const char *name;
};

static const struct split k_splits[] = {
    {NULL, NULL, NULL, NULL, NULL, "default"},
    {"64", "8", "2", "1", NULL, "nt=8 subgroupAdd"},
    {"64", "8", "3", "0", NULL, "nt=8 shared"},
    {"32", "4", "1", "1", NULL, "nt=4 shared"},
    {"128", "1", "4", "1", "0", "nt=1 nr=4 x per lane"},
    {"64", "1", "3", "1", "1", "nt=1 nr=3 x shared"},
    {"16", "1", "1", "0", NULL, "nt=1 no subgroup ops"},
    {"32", "32", "2", "1", NULL, "nt=32 shared"},
};

static struct vkllm__gpu *g_gpu;

static void use_split(const struct split *s) {
    gpu_test_tune(g_gpu, "matvec_wg", s->wg);
    gpu_test_tune(g_gpu, "matvec_nt", s->nt);
    gpu_test_tune(g_gpu, "matvec_nr", s->nr);
    gpu_test_tune(g_gpu, "matvec_sg", s->sg);
    gpu_test_tune(g_gpu, "matvec_xs", s->xs);
}

int main(void) {
    struct vkllm__gpu *gpu = g_gpu = gpu_test_open();
    static const uint32_t ms[] = {1, 7, 33, 1000, 4099};

    for (size_t ti = 0; ti < VKLLM_ARRAY_LEN(k_types); ti++) {
        uint32_t type = k_types[ti], ks[8], nk = row_lengths(type, ks);
        int fail0 = n_fail;
        for (uint32_t ki = 0; ki < nk; ki++) {
            for (size_t mi = 0; mi < VKLLM_ARRAY_LEN(ms); mi++) {
                uint32_t m = ms[mi], k = ks[ki];
                if ((uint64_t)m * k > 6000000) continue;
                struct mat w;
                mat_init(gpu, &w, type, m, k, (mi & 1) ? 256 : 0, ti * 1000 + ki * 10 + mi);
                use_split(&k_splits[0]);
                check_matvec(gpu, &w, "default split");
                /* several columns: every pipeline variant costs a JIT compile on lavapipe, so few */
                int cols = k % 4 == 0 && k <= 2048 && m == 33;
                if (cols) {
                    static const uint32_t ncs[] = {3, 11};
                    for (size_t ci = 0; ci < VKLLM_ARRAY_LEN(ncs); ci++) check_matvec_cols(gpu, &w, ncs[ci], "default split");
                }
                if (m == 33 || (m == 1000 && k <= 2048)) {
                    for (size_t si = 1; si < VKLLM_ARRAY_LEN(k_splits); si++) {
                        use_split(&k_splits[si]);
                        check_matvec(gpu, &w, k_splits[si].name);
                        if (cols && (si == 1 || si == 2 || si == 5)) check_matvec_cols(gpu, &w, 3, k_splits[si].name);
                    }
                    use_split(&k_splits[0]);
                }
                if (k <= 2048 && m >= 7) check_get_rows(gpu, &w, "whole");
                /* Chunked binding: several dispatches, each binding only its rows. */
                if (m >= 33 && k <= 2048) {
                    uint64_t limits[] = {65536, 4096, w.row_bytes * m / 3};
                    for (size_t li = 0; li < VKLLM_ARRAY_LEN(limits); li++) {
                        uint64_t rows;
                        if (limits[li] < 28ull * k || limits[li] < 4ull * m + 256) continue; /* x, y, o bind whole */
                        gpu_test_tune_n(gpu, "max_binding", (long)limits[li]);
                        if (vkllm__dtensor_chunk_rows(gpu, &w.t, &rows) || rows >= m) {
                            gpu_test_tune(gpu, "max_binding", NULL);
                            continue; /* not even a chunk fits, or no chunking at this limit */
                        }
                        n_chunked++;
                        char what[64];
                        snprintf(what, sizeof what, "chunks of %llu rows", (unsigned long long)rows);
                        check_matvec(gpu, &w, what);
                        if (k % 4 == 0) check_matvec_cols(gpu, &w, 3, what);
                        use_split(&k_splits[1]);
                        check_matvec(gpu, &w, "chunked, nt=8");
                        use_split(&k_splits[0]);
                        check_get_rows(gpu, &w, what);
                        gpu_test_tune(gpu, "max_binding", NULL);
                    }
                }
                mat_free(&w);
            }
        }
        printf("%-5s %s\n", vkllm__type_name(type), n_fail == fail0 ? "ok" : "FAILED");
        fflush(stdout);
    }

    /* A dtensor made by vkllm__dtensor_upload (the way models load), a word-sized total. */
    {
        struct mat w;
        mat_init(gpu, &w, VKLLM__TYPE_Q8_0, 64, 2048, 0, 99);
        vkllm__dtensor_free(&w.t);
        ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q8_0, 2048, 64, w.host, &w.t));
        check_matvec(gpu, &w, "dtensor_upload");
        check_get_rows(gpu, &w, "dtensor_upload");
        mat_free(&w);
    }

    /* Types without a kernel are refused with a status, not a crash. */
    {
        struct vkllm__dtensor t;
        struct vkllm__buffer *b;
        ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q2_K, 256, 1, NULL, &t));
        ASSERT_OK(vkllm__buffer_alloc(gpu, 1024, VKLLM__MEM_DEVICE, &b));
        struct vkllm__cmd *c;
        ASSERT_OK(vkllm__cmd_init(gpu, &c));
        ASSERT_OK(vkllm__cmd_begin(c));
        ASSERT_STATUS(vkllm__op_matvec(c, vkllm__view_of(b), &t, vkllm__view_of(b), 1), VKLLM_STATUS_UNSUPPORTED);
        ASSERT_STATUS(vkllm__op_get_rows(c, vkllm__view_of(b), &t, vkllm__view_of(b), 1), VKLLM_STATUS_UNSUPPORTED);
        ASSERT_OK(vkllm__cmd_end(c));
        vkllm__cmd_free(c);
        vkllm__buffer_free(b);
        vkllm__dtensor_free(&t);
    }

    gpu_test_close(gpu);
    printf("%d cases (%d shapes chunked, %d with several columns), %d failed\n", n_run, n_chunked, n_cols_run, n_fail);
    ASSERT(n_chunked >= 3 * (int)VKLLM_ARRAY_LEN(k_types));
    return n_fail ? 1 : 0;
}
