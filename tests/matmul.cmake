# Prefill matrix-matrix product (ops_matmul.c, shaders/matmul.comp) against the reference.
vkllm_add_test(NAME test_op_matmul SOURCES test_op_matmul.c LABELS ${VKLLM_ASAN_FULL_LABELS} TIMEOUT 900 ARGS ${VKLLM_OP_TEST_ARGS})
vkllm_add_full_test(NAME test_op_matmul_full TARGET test_op_matmul TIMEOUT 900)
# GFLOP/s per weight type (built, not a test): build-dir/bench_matmul [n k m...]
add_executable(bench_matmul bench_matmul.c)
target_include_directories(bench_matmul PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(bench_matmul PRIVATE _GNU_SOURCE)
target_link_libraries(bench_matmul PRIVATE vkllm_static vkllm::volk)
# The cooperative-matrix kernels without a device that runs them: the build's NV -> KHR SPIR-V
# rewrite of every matmul_cm_<type> (against the modules glslang compiled, from the build's
# shader folder), its refusals, and the tiling plan on made-up devices. No GPU needed.
vkllm_add_test(NAME test_coopmat SOURCES test_coopmat.c ${CMAKE_SOURCE_DIR}/shaders/coopmat/spv_coopmat.c
               ARGS ${VKLLM_SHADER_SPV_DIR})
target_include_directories(test_coopmat PRIVATE ${CMAKE_SOURCE_DIR}/shaders/coopmat)
