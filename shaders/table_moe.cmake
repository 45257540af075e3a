# Mixture of experts (runtime/ops/ops_moe.c): the router's top-k, the experts' products reading only
# the picked experts (one variant per weight type), and their weighted sum (see shaders/shaders.cmake
# for the columns). Push-constant blocks: pc_moe, pc_matvec_id (runtime/ops/shader_abi.h).
list(APPEND VKLLM_SHADER_TABLE
  "moe_route_f32    moe.comp       MOE_ROUTE=1      3  moe"
  "moe_sum_f32      moe.comp       MOE_SUM=1        3  moe"
  "matvec_id_f32    matvec_id.comp WTYPE_F32=1      4  matvec_id"
  "matvec_id_f16    matvec_id.comp WTYPE_F16=1      4  matvec_id"
  "matvec_id_bf16   matvec_id.comp WTYPE_BF16=1     4  matvec_id"
  "matvec_id_q8_0   matvec_id.comp WTYPE_Q8_0=1     4  matvec_id"
  "matvec_id_q4_0   matvec_id.comp WTYPE_Q4_0=1     4  matvec_id"
  "matvec_id_iq4_nl matvec_id.comp WTYPE_IQ4_NL=1   4  matvec_id"
  "matvec_id_iq4_xs matvec_id.comp WTYPE_IQ4_XS=1   4  matvec_id"
  "matvec_id_q2_k   matvec_id.comp WTYPE_Q2_K=1     4  matvec_id"
  "matvec_id_mxfp4  matvec_id.comp WTYPE_MXFP4=1    4  matvec_id"
  "matvec_id_q3_k   matvec_id.comp WTYPE_Q3_K=1     4  matvec_id"
  "matvec_id_q4_1   matvec_id.comp WTYPE_Q4_1=1     4  matvec_id"
  "matvec_id_q5_0   matvec_id.comp WTYPE_Q5_0=1     4  matvec_id"
  "matvec_id_q5_1   matvec_id.comp WTYPE_Q5_1=1     4  matvec_id"
  "matvec_id_q4_k   matvec_id.comp WTYPE_Q4_K=1     4  matvec_id"
  "matvec_id_q5_k   matvec_id.comp WTYPE_Q5_K=1     4  matvec_id"
  "matvec_id_q6_k   matvec_id.comp WTYPE_Q6_K=1     4  matvec_id"
)
