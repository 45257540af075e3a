# Decode matvec of CPU devices through texel buffers (runtime/ops/ops_matvec_tb.c).
vkllm_add_test(NAME test_op_matvec_tb SOURCES test_op_matvec_tb.c LABELS ${VKLLM_ASAN_FULL_LABELS} TIMEOUT 900 ARGS ${VKLLM_OP_TEST_ARGS})
vkllm_add_full_test(NAME test_op_matvec_tb_full TARGET test_op_matvec_tb TIMEOUT 900)
