/* spv_coopmat.h - rewrite a SPIR-V module's SPV_NV_cooperative_matrix instructions into
 * SPV_KHR_cooperative_matrix ones (build step of the matmul_cm_<type> shaders, see
 * shaders/shaders.cmake and shaders/coopmat/spv_coopmat.c).
 *
 * Why: glslang 12 (Debian 12) compiles GL_NV_cooperative_matrix but not GL_KHR_cooperative_matrix,
 * and the KHR extension is the one AMD, Intel and NVIDIA drivers all offer. The two differ in
 * a handful of operands:
 *
 *   NV                                          KHR
 *   OpTypeCooperativeMatrixNV  T S R C          OpTypeCooperativeMatrixKHR  T S R C Use
 *   OpCooperativeMatrixLoadNV  P Stride ColMaj  OpCooperativeMatrixLoadKHR  P Layout Stride
 *   OpCooperativeMatrixStoreNV P O Stride ColMaj OpCooperativeMatrixStoreKHR P O Layout Stride
 *   OpCooperativeMatrixMulAddNV A B C           OpCooperativeMatrixMulAddKHR A B C
 *   OpCooperativeMatrixLengthNV T               OpCooperativeMatrixLengthKHR T
 *   capability CooperativeMatrixNV, extension SPV_NV_cooperative_matrix -> the KHR ones
 *
 * KHR types carry their use (0 matrix A, 1 matrix B, 2 accumulator), which NV types do not: the
 * rewrite takes each type's use from the operand slots it fills in the module's MulAdds, so the
 * shader must give A, B and the accumulator distinct types (e.g. dimensions from distinct
 * specialization constants: A is TM x TK, B TK x TN, C TM x TN). A type in two slots, or in none,
 * is an error, as is an integer matrix (KHR's MulAdd would need signedness operands) or a
 * column-major flag that is not a constant. Memory-access operands carry over unchanged. */
#ifndef VKLLM_SPV_COOPMAT_H
#define VKLLM_SPV_COOPMAT_H

#include <stddef.h>
#include <stdint.h>

/* SPIR-V numbers of both extensions (the SPIR-V headers on Debian 12 predate the KHR one). */
enum {
    SPV_CM_OP_TYPE_NV = 5358,
    SPV_CM_OP_LOAD_NV = 5359,
    SPV_CM_OP_STORE_NV = 5360,
    SPV_CM_OP_MULADD_NV = 5361,
    SPV_CM_OP_LENGTH_NV = 5362,
    SPV_CM_OP_TYPE_KHR = 4456,
    SPV_CM_OP_LOAD_KHR = 4457,
    SPV_CM_OP_STORE_KHR = 4458,
    SPV_CM_OP_MULADD_KHR = 4459,
    SPV_CM_OP_LENGTH_KHR = 4460,
    SPV_CM_CAP_NV = 5357,
    SPV_CM_CAP_KHR = 6022,
    SPV_CM_USE_A = 0,
    SPV_CM_USE_B = 1,
    SPV_CM_USE_ACC = 2,
    SPV_CM_ROW_MAJOR = 0,
    SPV_CM_COL_MAJOR = 1,
};

/* Rewrite in (n words) into *out (*n_out words, malloc'ed; the caller frees). A module without
 * NV cooperative matrices comes back unchanged. Returns 0, or -1 with a message in err. */
int spv_coopmat_nv_to_khr(const uint32_t *in, size_t n, uint32_t **out, size_t *n_out, char *err, size_t err_size);

#endif
