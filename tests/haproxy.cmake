# deploy/haproxy.cfg as shipped, in front of two `vkllm serve` replicas on stories260K: session
# affinity (cached_tokens grows on one replica), a busy replica's 503 retried on the other, a
# replica killed between requests losing none (tests/test_haproxy.py). Debian 12's HAProxy is
# fetched by scripts/fetch-debs.sh into the build folder (haproxy-deb/, once); SKIPPED where it
# cannot be fetched or run (FAIL under VKLLM_REQUIRE_TEST_MODELS=1). 6-12 s on 2 cores after the
# fetch (3-10 s), 34 s under ASan: the full tier (make test-full).
vkllm_add_script_test(NAME test_haproxy LABELS gpu full TIMEOUT 300
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_haproxy.py $<TARGET_FILE:vkllm>)
