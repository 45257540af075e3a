/* test_ops_basic.c - elementwise add/mul, RMSNorm (also with the residual add fused in front,
 * separate and in place, the sum checked bit for bit), softmax and SiLU-gated multiply on the device
 * against the scalar reference, on shapes that are not multiples of the workgroup size, with
 * several workgroup sizes, -inf entries and large magnitudes. Bounds: selftest.c bound_of(). */
#include "gpu_test.h"
#include "selftest.h"

static int n_run, n_fail;

static void check(struct vkllm__gpu *gpu, enum vkllm__check_op op, uint32_t ncols, uint32_t nrows, uint32_t nb,
                  uint32_t flags, uint32_t wg) {
    struct vkllm__check_case c = {op, ncols, nrows, nb, flags, wg};
    struct vkllm__check_result r;
    ASSERT_OK(vkllm__check_run(gpu, &c, (uint64_t)ncols * 131 + nrows * 7 + wg, &r));
    n_run++;
    if (!r.pass) {
        n_fail++;
        fprintf(stderr, "FAIL %s %ux%u nb=%u flags=%u wg=%u: max_abs %.3g max_rel %.3g (bound %.1g)\n",
                vkllm__check_op_name(op), nrows, ncols, nb, flags, wg, r.max_abs, r.max_rel, r.bound);
    }
}

int main(void) {
    struct vkllm__gpu *gpu = gpu_test_open();
    static const uint32_t wgs[] = {0, 32, 64, 128, 1024};
    static const uint32_t lens[] = {1, 2, 7, 31, 33, 255, 257, 1000, 4099};
    for (size_t w = 0; w < VKLLM_ARRAY_LEN(wgs); w++) {
        for (size_t l = 0; l < VKLLM_ARRAY_LEN(lens); l++) {
            uint32_t n = lens[l];
            check(gpu, VKLLM__CHECK_ADD, n, 3, 0, 0, wgs[w]);
            check(gpu, VKLLM__CHECK_ADD, n, 3, n, 0, wgs[w]); /* b repeated per row */
            check(gpu, VKLLM__CHECK_MUL, n, 2, n, 0, wgs[w]);
            check(gpu, VKLLM__CHECK_SILU_MUL, n, 2, 0, 0, wgs[w]);
            check(gpu, VKLLM__CHECK_RMSNORM, n, 5, 0, 0, wgs[w]);
            check(gpu, VKLLM__CHECK_RMSNORM, n, 2, 0, VKLLM__CHECK_LARGE, wgs[w]);
            check(gpu, VKLLM__CHECK_ADD_RMSNORM, n, 3, 0, 0, wgs[w]);
            check(gpu, VKLLM__CHECK_ADD_RMSNORM, n, 2, 0, VKLLM__CHECK_INPLACE | VKLLM__CHECK_LARGE, wgs[w]);
            check(gpu, VKLLM__CHECK_SOFTMAX, n, 3, 0, 0, wgs[w]);
            check(gpu, VKLLM__CHECK_SOFTMAX, n, 3, 0, VKLLM__CHECK_NEG_INF, wgs[w]);
            check(gpu, VKLLM__CHECK_SOFTMAX, n, 2, 0, VKLLM__CHECK_LARGE, wgs[w]);
        }
    }
    /* Long rows: softmax over a vocabulary-sized row and beyond, up to 200k entries. */
    static const uint32_t long_rows[] = {32000, 65537, 151936, 200000};
    for (size_t l = 0; l < VKLLM_ARRAY_LEN(long_rows); l++) {
        check(gpu, VKLLM__CHECK_SOFTMAX, long_rows[l], 1, 0, 0, 0);
        check(gpu, VKLLM__CHECK_SOFTMAX, long_rows[l], 2, 0, VKLLM__CHECK_NEG_INF | VKLLM__CHECK_LARGE, 256);
        check(gpu, VKLLM__CHECK_RMSNORM, long_rows[l], 1, 0, 0, 0);
    }
    /* Many rows: the row grid spills into the y dimension past 65535 workgroups. */
    check(gpu, VKLLM__CHECK_RMSNORM, 3, 70001, 0, 0, 32);
    check(gpu, VKLLM__CHECK_SOFTMAX, 2, 70001, 0, 0, 32);
    check(gpu, VKLLM__CHECK_ADD, 70001, 40, 70001, 0, 32); /* 2.8M elements, 87.5k groups: 2D grid */
    /* The standard selftest set. */
    for (uint32_t i = 0; i < vkllm__selftest_n_cases; i++) {
        const struct vkllm__check_case *c = &vkllm__selftest_cases[i];
        check(gpu, c->op, c->ncols, c->nrows, c->nb, c->flags, c->wg);
    }
    gpu_test_close(gpu);
    printf("%d cases, %d failed\n", n_run, n_fail);
    return n_fail ? 1 : 0;
}
