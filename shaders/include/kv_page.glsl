// kv_page.glsl - where a cache position lives. Included after the push-constant block `p` (with
// n_rows and page) and a readonly buffer `btab` (uint) are declared.
//
// A paged cache (p.page > 0, runtime/forward/kv_cache.c): the layer's buffer is a pool of blocks
// of 2^page positions, and a sequence's block table names the block of each of its 2^page
// positions: position t is row btab[t >> page] * 2^page + t % 2^page of the pool's n_rows rows.
// Otherwise (page 0) the cache is the sequence's own: position t is row t % n_rows (n_rows is the
// context, or a sliding-window layer's ring).
#ifndef VKLLM_KV_PAGE_GLSL
#define VKLLM_KV_PAGE_GLSL

uint kv_row(uint t) {
    if (p.page != 0u) return (btab[t >> p.page] << p.page) | (t & ((1u << p.page) - 1u));
    return t % p.n_rows;
}

#endif
