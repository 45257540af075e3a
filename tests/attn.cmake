# RoPE, KV-cache store, attention (prefill and split decode, replayed) and argmax
# (runtime/ops/ops_attn.c) against runtime/ref.
vkllm_add_test(NAME test_op_attn SOURCES test_op_attn.c LABELS gpu TIMEOUT 900 ARGS ${VKLLM_OP_TEST_ARGS})
vkllm_add_full_test(NAME test_op_attn_full TARGET test_op_attn TIMEOUT 900)
# Attention time, attn.comp vs attn_tb.comp interleaved: decode at several lengths, prefill
# (built, not a test): build-dir/tests/bench_attn [rounds]
add_executable(bench_attn bench_attn.c)
target_include_directories(bench_attn PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(bench_attn PRIVATE _GNU_SOURCE)
target_link_libraries(bench_attn PRIVATE vkllm_static vkllm::volk)
