/* kv_cache.h - the KV pool's internals that forward.h does not declare: what a reservation would
 * take, the prefix-lookup counters, and the generations that share a pool (preemption). */
#ifndef VKLLM_KV_CACHE_H
#define VKLLM_KV_CACHE_H

#include "forward.h"

/* Blocks vkllm__kv_reserve(kv, pos0, end) would take from the pool (new ones, and copies of
 * blocks shared or cached that it writes). */
uint32_t vkllm__kv_need(const struct vkllm__kv_cache *kv, uint32_t pos0, uint32_t end);
/* Blocks a reservation may take now: free ones and cached ones nobody holds. */
uint32_t vkllm__kv_pool_room(const struct vkllm__kv_pool *p);
/* One prompt looked up: n tokens asked for, hit found (vkllm__kv_lookup counts nothing itself, so
 * a prompt tried again, or recomputed after a preemption, is counted once). */
void vkllm__kv_pool_count_lookup(struct vkllm__kv_pool *p, uint32_t n, uint32_t hit);

/* The generations on a pool: running ones (each may take a block per step) and preempted ones
 * (waiting to be recomputed). A new generation is refused while any waits. */
void vkllm__kv_pool_gens(struct vkllm__kv_pool *p, int d_running, int d_waiting);
void vkllm__kv_pool_gens_get(const struct vkllm__kv_pool *p, uint32_t *running, uint32_t *waiting, uint64_t *preempted);

/* Call fn for each block that becomes findable (its key, its parent's, its tokens), stops being
 * findable (evicted, or rewritten) and when the pool goes (cleared): vkllm_kv_pool_set_events. */
void vkllm__kv_pool_set_events(struct vkllm__kv_pool *p, vkllm_kv_event_fn fn, void *user_data);

#endif
