/* test_op_matvec.c - decode matvec and embedding lookup (get_rows) for every weight type against
 * the reference: the op-case registry's full lists (runtime/check/cases.c: random weights
 * quantized with vkllm__quantize_row, shapes that are multiples of nothing, W at an offset, several
 * columns each bit-identical to the column alone, every work split (the CPU one, subgroupAdd,
 * shared memory, x shared or per lane), W bound in row chunks with the binding limit lowered, a
 * matrix made by vkllm__dtensor_upload). Bounds: runtime/check/check.h (matvec NMSE < 1e-10,
 * get_rows < 1e-12). Validation with synchronization validation is on and must stay silent.
 * Also: a type without a kernel is refused with a status. */
#include "op_test.h"

/* Types without a kernel are refused with a status, not a crash. */
static void unsupported_type(struct vkllm__gpu *gpu) {
    struct vkllm__dtensor t;
    ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_Q2_K, 256, 1, NULL, &t));
    struct op_test_scratch sc = op_test_scratch_begin(gpu, 1024);
    ASSERT_STATUS(vkllm__op_matvec(sc.c, sc.v, &t, sc.v, 1), VKLLM_STATUS_UNSUPPORTED);
    ASSERT_STATUS(vkllm__op_get_rows(sc.c, sc.v, &t, sc.v, 1), VKLLM_STATUS_UNSUPPORTED);
    op_test_scratch_end(&sc);
    vkllm__dtensor_free(&t);
}

int main(void) {
    struct vkllm__gpu *gpu = gpu_test_open();
    struct op_test_stats s = {0};
    op_test_run(gpu, VKLLM__OP_MATVEC, 1, &s);
    int chunked_mv = s.chunked;
    op_test_run(gpu, VKLLM__OP_GET_ROWS, 1, &s);
    unsupported_type(gpu);
    gpu_test_close(gpu);
    printf("%d cases (%d ran W in several chunks), %d failed\n", s.run, s.chunked, s.failed);
    /* every type had matrices bound in chunks (seen where the device has timestamps) */
    if (s.timed) ASSERT(chunked_mv >= 3 * 11 && s.chunked > chunked_mv);
    return s.failed ? 1 : 0;
}
