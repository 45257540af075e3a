# Prefill matrix-matrix product (ops_matmul.c): one variant per weight type, all from
# matmul.comp. Push constants: struct vkllm__pc_matmul (runtime/ops/shader_abi_matmul.h).
#   name                source         defines        bindings  push constants
list(APPEND VKLLM_SHADER_TABLE
  "matmul_f32           matmul.comp    WTYPE_F32=1    3         matmul"
  "matmul_f16           matmul.comp    WTYPE_F16=1    3         matmul"
  "matmul_bf16          matmul.comp    WTYPE_BF16=1   3         matmul"
  "matmul_q8_0          matmul.comp    WTYPE_Q8_0=1   3         matmul"
  "matmul_q4_0          matmul.comp    WTYPE_Q4_0=1   3         matmul"
  "matmul_iq4_nl        matmul.comp    WTYPE_IQ4_NL=1   3         matmul"
  "matmul_iq4_xs        matmul.comp    WTYPE_IQ4_XS=1   3         matmul"
  "matmul_q2_k          matmul.comp    WTYPE_Q2_K=1   3         matmul"
  "matmul_mxfp4         matmul.comp    WTYPE_MXFP4=1  3         matmul"
  "matmul_q3_k          matmul.comp    WTYPE_Q3_K=1   3         matmul"
  "matmul_q4_1          matmul.comp    WTYPE_Q4_1=1   3         matmul"
  "matmul_q5_0          matmul.comp    WTYPE_Q5_0=1   3         matmul"
  "matmul_q5_1          matmul.comp    WTYPE_Q5_1=1   3         matmul"
  "matmul_q4_k          matmul.comp    WTYPE_Q4_K=1   3         matmul"
  "matmul_q5_k          matmul.comp    WTYPE_Q5_K=1   3         matmul"
  "matmul_q6_k          matmul.comp    WTYPE_Q6_K=1   3         matmul"
)
