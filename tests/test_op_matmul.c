/* test_op_matmul.c - the prefill product y (n, m) = x (n, k) @ W^T (ops_matmul.c) for every
 * weight type: the op-case registry's full list (runtime/check/cases.c), against a
 * double-accumulated product with the reference decoder's weights.
 *
 * W: random rows quantized with vkllm__quantize_row; the reference dequantizes the same bytes, so
 * only the shader's decoding and its f32 summation are judged. Bounds: NMSE <= 1e-9 over the whole
 * output, and every element within 3e-5 * sum_t |x_t w_t| + 1e-6 of the reference.
 * Shapes: n in {1, 3, 17, 64, 100}, m in {1, 7, 65, 1000}, k the block size and bigger multiples
 * (not tile multiples), the tiled kernel forced (CPU devices default to the matvec path, which runs
 * on some cases too), small binding limits (several W chunks and several x/y row blocks, including
 * Q5_0's 22-byte blocks), forced tile sizes. Also: refusals of bad arguments. */
#include "op_test.h"
#include "types.h"

static void bad_arguments(struct vkllm__gpu *gpu) {
    struct vkllm__dtensor wt;
    ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q8_K, 256, 4, NULL, &wt));
    struct op_test_scratch sc = op_test_scratch_begin(gpu, 4096 * 4);
    struct vkllm__cmd *c = sc.c;
    struct vkllm__buffer *b = sc.b;
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
    op_test_scratch_end(&sc);
    vkllm__dtensor_free(&wt);
}

int main(int argc, char **argv) {
    op_test_args(argc, argv);
    struct vkllm__gpu *gpu = gpu_test_open();
    struct op_test_stats s = {0};
    op_test_run(gpu, VKLLM__OP_MATMUL, 1, &s);
    bad_arguments(gpu);
    gpu_test_close(gpu);
    printf("%d cases (%d ran W or x/y in several chunks), %d failed\n", s.run, s.chunked, s.failed);
    if (s.timed) ASSERT(s.chunked >= op_test_chunked_want(7));
    return s.failed ? 1 : 0;
}
