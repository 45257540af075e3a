// pc_attn.glsl - push-constant blocks of the attention family (rope.comp, kv_store.comp,
// attn.comp, attn_reduce.comp, argmax.comp). Each has a C twin in runtime/ops/shader_abi_attn.h with
// a _Static_assert on its size: change both together.
#ifndef VKLLM_PC_ATTN_GLSL
#define VKLLM_PC_ATTN_GLSL

// C twin: struct vkllm__pc_rope
struct pc_rope {
    uint n;        // tokens; token i is at position pos0 + i
    uint n_head;
    uint head_dim;
    uint n_rot;    // rotated dims per head (even, <= head_dim); the rest pass through
    uint neox;     // 0: pairs (2i, 2i+1); 1: pairs (i, i + n_rot/2)
    float mscale;  // the rotated dims' magnitude: cos and sin times this (attn_factor, YaRN)
};

// C twin: struct vkllm__pc_kv_store
struct pc_kv_store {
    uint n;        // rows of src
    uint width;    // floats per row (even)
    uint n_ctx;    // positions; positions >= n_ctx are never written
    uint n_rows;   // rows of the cache: position p is row p % n_rows (page 0)
    uint page;     // > 0: a paged cache, blocks of 2^page positions (kv_page.glsl)
    uint src_stride; // floats from one row of src to the next (>= src0 + width)
    uint src0;     // src's first column stored
};

// C twin: struct vkllm__pc_rope_kv
struct pc_rope_kv {
    uint n;        // tokens; token i is at position pos0 + i
    uint n_head;   // q heads
    uint head_dim; // q's and k's
    uint n_rot;    // rotated dims per head (even, <= head_dim)
    uint neox;     // 0: pairs (2i, 2i+1); 1: pairs (i, i + n_rot/2)
    uint width;    // floats per row of k, v and the caches (n_head_kv * head_dim)
    uint n_ctx;    // positions; positions >= n_ctx are never written
    float mscale;  // as in pc_rope
    uint n_rows;   // rows of the caches: position p is row p % n_rows (a sliding-window layer's ring)
    uint page;     // > 0: paged caches, blocks of 2^page positions (kv_page.glsl)
};

// C twin: struct vkllm__pc_attn
struct pc_attn {
    uint n;          // queries
    uint n_head;
    uint n_head_kv;
    uint n_ctx;      // rows of the cache
    float scale;     // applied to q.k
    uint split_len;  // prefill: cache positions per workgroup (n_ctx); decode: unused (attn_split.glsl)
    uint n_split;    // decode: splits (1: the output is final)
    uint window;     // sliding window (0: none): the query at p sees p - window + 1 .. p
    float softcap;   // > 0: scores s (scaled) -> softcap * tanh(s / softcap)
    uint sinks;      // 1: each head's softmax also counts the score sinks[h], which has no value
    uint n_rows;     // rows of the cache: position t is row t % n_rows (n_ctx, or a window's ring)
    uint page;       // > 0: a paged cache, blocks of 2^page positions (kv_page.glsl)
    uint kv_h0;      // the bound caches hold kv heads kv_h0 .. kv_h0 + kv_hn - 1 (a cache split by heads
    uint kv_hn;      // when one binding cannot hold it); the dispatch covers their query heads
};

// C twin: struct vkllm__pc_attn_reduce
struct pc_attn_reduce {
    uint n;          // queries
    uint n_head;
    uint head_dim;
    uint n_ctx;
    uint window;     // as in pc_attn: the splits cut the window's span (attn_split.glsl)
    uint n_split;
    uint sinks;      // as in pc_attn
};

// C twin: struct vkllm__pc_argmax
struct pc_argmax {
    uint n;
};

#endif
