# `vkllm serve`'s KV pool (tests/test_prefix_cache.py, issue 39): three conversations interleaved on
# two slots find their earlier turns cached and keep their text; X, Y, X again; the pressure test
# (--parallel 8 --kv-cache-mb 1: requests preempted and recomputed, none cut, none different from
# the reply alone, the pool's metrics within the pool): 40 requests here, 200 in the full tier.
# Under the sanitizers only the full tier's run (a superset: the same checks, 200 requests): the
# 40-request run took 40-50 s of the sanitizer half of `make test`'s 10 minutes.
if(NOT VKLLM_SANITIZE)
  vkllm_add_script_test(NAME test_prefix_cache LABELS gpu TIMEOUT 400
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_prefix_cache.py $<TARGET_FILE:vkllm>)
  set_tests_properties(test_prefix_cache PROPERTIES COST 30)
endif()
vkllm_add_script_test(NAME test_prefix_cache_full LABELS gpu full TIMEOUT 900
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_prefix_cache.py $<TARGET_FILE:vkllm> full)
# The same through the library alone: vkllm_gen_step preempting and recomputing on a small pool.
vkllm_add_test(NAME test_preempt SOURCES test_preempt.c LABELS gpu TIMEOUT 300)
