# The KV pool's events (vkllm_kv_pool_set_events, issue 39 item 4) through the library alone:
# stored in order and chained, removed on eviction, the router's view equal to the pool's cache,
# cleared at the pool's end (tests/test_kv_events.c; stories260K, about a second).
vkllm_add_test(NAME test_kv_events_api SOURCES test_kv_events.c LABELS gpu TIMEOUT 120)
# `vkllm serve --kv-events` read as the llm-d router reads it (tests/test_kv_events.py: python3-zmq,
# python3-msgpack; SKIPPED without them or in a build without libzmq): frames, topic, sequence
# numbers, BlockStored token ids that rebuild the prompts, BlockRemoved on a small pool,
# AllBlocksCleared at the end; bound and connected. Two servers on stories260K, a few seconds.
vkllm_add_script_test(NAME test_kv_events LABELS gpu TIMEOUT 120
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_kv_events.py $<TARGET_FILE:vkllm>)
