# Decode matvec and embedding lookup, every weight type (runtime/ops/ops_matvec.c).
vkllm_add_test(NAME test_op_matvec SOURCES test_op_matvec.c LABELS ${VKLLM_ASAN_FULL_LABELS} TIMEOUT 900 ARGS ${VKLLM_OP_TEST_ARGS})
vkllm_add_full_test(NAME test_op_matvec_full TARGET test_op_matvec TIMEOUT 900)
# Benchmark (built, not a test): GB/s of weights read per type and shape.
add_executable(bench_matvec bench_matvec.c)
target_include_directories(bench_matvec PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(bench_matvec PRIVATE _GNU_SOURCE)
target_link_libraries(bench_matvec PRIVATE vkllm_static vkllm::cjson vkllm::stb vkllm::volk)
# GPUs' int8-x matvec end to end: random Q8_0/Q4_0/Q4_K models under a GPU profile vs the reference;
# one type (--quick) in `make test`, all three in the full tier.
vkllm_add_script_test(NAME test_matvec_x8 LABELS ${VKLLM_ASAN_FULL_LABELS}
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_matvec_x8.py $<TARGET_FILE:vkllm> --quick)
if(NOT VKLLM_SANITIZE)
  vkllm_add_script_test(NAME test_matvec_x8_full LABELS gpu full
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_matvec_x8.py $<TARGET_FILE:vkllm>)
endif()
# GPUs' 16-byte weight layout end to end (VKLLM_REPACK on and off under a GPU profile: the same
# logits in prefill and decode, the layout taken by default on GPUs only, its bytes counted).
if(NOT VKLLM_SANITIZE)
  vkllm_add_script_test(NAME test_repack LABELS gpu full
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_repack.py $<TARGET_FILE:vkllm>)
endif()
