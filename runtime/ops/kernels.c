/* kernels.c - which shader each op family runs for each weight type (see ops_gpu.h): the one
 * table from type to shader. The shaders themselves are listed in shaders/table_*.cmake. */
#include "ops_gpu.h"
#include "types.h"

/* T(type, shader name part, texel kernel, GGUF-block texel kernel, int8-x kernel): the texel
 * kernel reads the storage format the type is repacked into on CPU devices (ops_matvec_tb.c),
 * which several types share; the GGUF-block one reads experts as they are where the type's blocks
 * are whole texels; the int8-x one (matvec_x8.comp, GPUs) exists for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K
 * and Q6_K (NONE elsewhere: the table-valued and 2/3-bit types). */
#define VKLLM__SHADER_MATVEC_TB_ID_NONE VKLLM__SHADER_COUNT_
#define VKLLM__SHADER_MATVEC_X8_NONE VKLLM__SHADER_COUNT_
#define VKLLM__SHADER_MATVEC_X8DP_NONE VKLLM__SHADER_COUNT_
#define VKLLM__SHADER_MATVEC_ID_X8_NONE VKLLM__SHADER_COUNT_
#define VKLLM__SHADER_MATVEC_ID_X8DP_NONE VKLLM__SHADER_COUNT_
#define T(t, n, tb, gg, x8)                                                                                     \
    {                                                                                                           \
        VKLLM__TYPE_##t, VKLLM__SHADER_MATVEC_##n, VKLLM__SHADER_MATVEC_##n##_SHM, VKLLM__SHADER_GET_ROWS_##n,  \
            VKLLM__SHADER_MATMUL_##n, VKLLM__SHADER_MATMUL_H16_##n, VKLLM__SHADER_MATMUL_CM_##n,                \
            VKLLM__SHADER_MATVEC_TB_##tb, VKLLM__SHADER_MATVEC_ID_##n, VKLLM__SHADER_MATVEC_ID_##n##_SHM,       \
            VKLLM__SHADER_MATVEC_TB_ID_##tb, VKLLM__SHADER_MATVEC_TB_ID_##gg, VKLLM__SHADER_MATVEC_X8_##x8,     \
            VKLLM__SHADER_MATVEC_X8DP_##x8, VKLLM__SHADER_MATVEC_ID_X8_##x8, VKLLM__SHADER_MATVEC_ID_X8DP_##x8, \
            VKLLM__SHADER_MATMUL_ID_##n, VKLLM__SHADER_MATMUL_ID_H16_##n, VKLLM__SHADER_MATMUL_ID_CM_##n        \
    }
static const struct vkllm__type_kernels k_kernels[] = {
    T(F32, F32, F32, NONE, NONE),        T(F16, F16, F16, NONE, NONE),    T(BF16, BF16, F32, NONE, NONE),
    T(Q8_0, Q8_0, Q8_0, NONE, Q8_0),     T(Q4_0, Q4_0, Q4_0, NONE, Q4_0), T(Q4_1, Q4_1, Q4_K, NONE, Q4_1),
    T(Q5_0, Q5_0, Q8_0, NONE, Q5_0),     T(Q5_1, Q5_1, Q5_K, NONE, Q5_1), T(Q4_K, Q4_K, Q4_K, GG_Q4_K, Q4_K),
    T(Q5_K, Q5_K, Q5_K, GG_Q5_K, Q5_K),  T(Q6_K, Q6_K, Q6_K, NONE, Q6_K), T(IQ4_NL, IQ4_NL, Q8_0, NONE, NONE),
    T(IQ4_XS, IQ4_XS, Q8_0, NONE, NONE), T(Q2_K, Q2_K, Q2_K, NONE, NONE), T(Q3_K, Q3_K, Q6_K, NONE, NONE),
    T(MXFP4, MXFP4, Q8_0, NONE, NONE),
};
#undef T
#undef VKLLM__SHADER_MATVEC_TB_ID_NONE
#undef VKLLM__SHADER_MATVEC_X8_NONE
#undef VKLLM__SHADER_MATVEC_X8DP_NONE
#undef VKLLM__SHADER_MATVEC_ID_X8_NONE
#undef VKLLM__SHADER_MATVEC_ID_X8DP_NONE

const struct vkllm__type_kernels *vkllm__type_kernels(uint32_t type, const char *op) {
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(k_kernels); i++)
        if (k_kernels[i].type == type) return &k_kernels[i];
    vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: weight type %s is not supported", op, vkllm__type_name(type));
    return NULL;
}
