# The KV pool's events (vkllm_kv_pool_set_events, issue 39 item 4) through the library alone:
# stored in order and chained, removed on eviction, the router's view equal to the pool's cache,
# cleared at the pool's end (tests/test_kv_events.c; stories260K, about a second).
vkllm_add_test(NAME test_kv_events_api SOURCES test_kv_events.c LABELS gpu TIMEOUT 120)
