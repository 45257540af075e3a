// attn_split.glsl - how split decode (attn.comp's ATTN_SPLIT, attn_reduce.comp) cuts the cache.
// The number of splits is fixed when the decode step is recorded (runtime/ops/ops_attn.c: from
// the device's size and the kv-head groups); their length is data, from the position: the span a
// decode query sees, [first, len) (first > 0 in a sliding window), is cut into n_split splits of
// attn_split_len positions (a multiple of 16, at least ATTN_SPLIT_MIN), so the splits past the
// span's end are empty and do nothing, and a short cache is not cut finer than one tile.
#ifndef VKLLM_ATTN_SPLIT_GLSL
#define VKLLM_ATTN_SPLIT_GLSL

#define ATTN_SPLIT_MIN 64u

uint attn_split_len(uint span, uint n_split) {
    uint s = (span + n_split - 1u) / n_split;
    return max((s + 15u) & ~15u, ATTN_SPLIT_MIN);
}

// The first position the query at position len - 1 sees (0 without a sliding window).
uint attn_first(uint len, uint window) { return window > 0u && len > window ? len - window : 0u; }

#endif
