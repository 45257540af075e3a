# RoPE, KV-cache store, attention (prefill and split decode, replayed) and argmax
# (runtime/ops/ops_attn.c) against runtime/ref.
vkllm_add_test(NAME test_op_attn SOURCES test_op_attn.c LABELS ${VKLLM_ASAN_FULL_LABELS} TIMEOUT 900 ARGS ${VKLLM_OP_TEST_ARGS})
vkllm_add_full_test(NAME test_op_attn_full TARGET test_op_attn TIMEOUT 900)
# Attention time, attn.comp vs attn_tb.comp interleaved: decode at several lengths, prefill
# (built, not a test): build-dir/tests/bench_attn [rounds]
add_executable(bench_attn bench_attn.c)
target_include_directories(bench_attn PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(bench_attn PRIVATE _GNU_SOURCE)
target_link_libraries(bench_attn PRIVATE vkllm_static vkllm::volk)
if(NOT VKLLM_SANITIZE)
  # The walk in f16 arithmetic (VKLLM_ATTN_F16=1, off by default), the storage path forced, the
  # selftest's attention defaults under validation (19 s; the full tier).
  vkllm_add_script_test(NAME test_attn_f16 LABELS gpu full
    COMMAND ${CMAKE_COMMAND} -E env VKLLM_ATTN_TEXEL=0 VKLLM_ATTN_F16=1 VKLLM_VALIDATE=1
            $<TARGET_FILE:vkllm> selftest --op attention --defaults)
endif()
