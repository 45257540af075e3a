# The forward pass on the device against the reference (random models, and stories260K).
if(VKLLM_SANITIZE)
  set(VKLLM_FORWARD_ARGS random --quick)
else()
  set(VKLLM_FORWARD_ARGS random)
endif()
vkllm_add_test(NAME test_forward_random SOURCES test_forward.c ARGS ${VKLLM_FORWARD_ARGS} LABELS gpu TIMEOUT 900)
add_test(NAME test_forward_stories COMMAND test_forward_random stories)
vkllm_test_properties(test_forward_stories 600 gpu)
vkllm_add_script_test(NAME test_cli_logits LABELS gpu
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_logits.py $<TARGET_FILE:vkllm>)
# (the sanitizer build: --quick, the tiny model's checks; the wider model's profile is wall clock)
if(VKLLM_SANITIZE)
  set(VKLLM_CLI_BENCH_ARGS --quick)
else()
  set(VKLLM_CLI_BENCH_ARGS "")
endif()
vkllm_add_script_test(NAME test_cli_bench LABELS gpu
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_bench.py $<TARGET_FILE:vkllm> ${VKLLM_CLI_BENCH_ARGS})
# `vkllm compare`: agreement with the reference, speed by depth, KV memory, kernels; md/json/html.
vkllm_add_script_test(NAME test_cli_compare LABELS gpu TIMEOUT 300
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_compare.py $<TARGET_FILE:vkllm>)
# vkllm against llama.cpp (../shared/peer, which `make test-full` sets up where it is there) on random
# files: every type on llama, every architecture in f32 and q8_0 (test_peer.py --full: all of them
# in every type); SKIPPED without the peer. The full tier, optimized build.
if(NOT VKLLM_SANITIZE)
  vkllm_add_script_test(NAME test_peer LABELS gpu full TIMEOUT 600
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_peer.py $<TARGET_FILE:vkllm>)
endif()
