/* kv_events.c - the KV pool's events (vkllm.h: vkllm_kv_pool_set_events), told by kv_cache.c. */
#include "context.h"
#include "kv_cache.h"

void vkllm_kv_pool_set_events(vkllm_kv_pool_t p, vkllm_kv_event_fn fn, void *user_data) {
    if (p) vkllm__kv_pool_set_events(p->p, fn, user_data);
}
