/* test_ops_basic.c - elementwise add/mul, RMSNorm (also with the residual add fused in front,
 * separate and in place, the sum checked bit for bit), softmax, the SiLU-, GELU- and gpt-oss-gated
 * multiplies and softcap on the device against the scalar reference: the op-case registry's full
 * lists (runtime/check/cases.c: lengths that are multiples of nothing, several workgroup sizes,
 * -inf entries, large magnitudes, extremes past where tanh saturates (+-inf for softcap),
 * vocabulary-sized rows, 2D grids). Bounds: runtime/check/check.h. */
#include "op_test.h"

int main(void) {
    struct vkllm__gpu *gpu = gpu_test_open();
    struct op_test_stats s = {0};
    static const enum vkllm__op ops[] = {VKLLM__OP_ADD,      VKLLM__OP_MUL,         VKLLM__OP_SILU_MUL,
                                         VKLLM__OP_GELU_MUL, VKLLM__OP_SWIGLU_OAI,  VKLLM__OP_SOFTCAP,
                                         VKLLM__OP_RMSNORM,  VKLLM__OP_ADD_RMSNORM, VKLLM__OP_SOFTMAX};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(ops); i++) op_test_run(gpu, ops[i], 1, &s);
    gpu_test_close(gpu);
    printf("%d cases, %d failed\n", s.run, s.failed);
    return s.failed ? 1 : 0;
}
