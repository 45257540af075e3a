# Prefill matrix-matrix product (ops_matmul.c, shaders/matmul.comp) against the reference.
vkllm_add_test(NAME test_op_matmul SOURCES test_op_matmul.c LABELS gpu TIMEOUT 900 ARGS ${VKLLM_OP_TEST_ARGS})
# GFLOP/s per weight type (built, not a test): build-dir/bench_matmul [n k m...]
add_executable(bench_matmul bench_matmul.c)
target_include_directories(bench_matmul PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(bench_matmul PRIVATE _GNU_SOURCE)
target_link_libraries(bench_matmul PRIVATE vkllm_static vkllm::volk)
