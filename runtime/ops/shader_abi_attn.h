/* shader_abi_attn.h - C twins of the attn shaders' push-constant blocks (see shader_abi.h).
 * GLSL side: shaders/include/pc_attn.glsl. Change both together. */
#ifndef VKLLM_SHADER_ABI_ATTN_H
#define VKLLM_SHADER_ABI_ATTN_H

#include <stdint.h>

/* GLSL twin: pc_rope (rope.comp) */
struct vkllm__pc_rope {
    uint32_t n; /* tokens; token i is at position pos0 + i */
    uint32_t n_head;
    uint32_t head_dim;
    uint32_t n_rot; /* rotated dims per head (even, <= head_dim) */
    uint32_t neox;  /* 0: pairs (2i, 2i+1); 1: pairs (i, i + n_rot/2) */
    float mscale;   /* the rotated dims' magnitude: cos and sin times this */
};
_Static_assert(sizeof(struct vkllm__pc_rope) == 24, "update pc_rope in pc_attn.glsl");

/* GLSL twin: pc_kv_store (kv_store.comp) */
struct vkllm__pc_kv_store {
    uint32_t n;          /* rows of src */
    uint32_t width;      /* floats per row (even) */
    uint32_t n_ctx;      /* positions; positions >= n_ctx are never written */
    uint32_t n_rows;     /* rows of the cache: position p is row p % n_rows (page 0) */
    uint32_t page;       /* > 0: a paged cache, blocks of 2^page positions (shaders/include/kv_page.glsl) */
    uint32_t src_stride; /* floats from one row of src to the next (>= src0 + width) */
    uint32_t src0;       /* src's first column stored */
};
_Static_assert(sizeof(struct vkllm__pc_kv_store) == 28, "update pc_kv_store in pc_attn.glsl");

/* GLSL twin: pc_rope_kv (rope_kv.comp) */
struct vkllm__pc_rope_kv {
    uint32_t n;        /* tokens; token i is at position pos0 + i */
    uint32_t n_head;   /* q heads */
    uint32_t head_dim; /* q's and k's */
    uint32_t n_rot;    /* rotated dims per head (even, <= head_dim) */
    uint32_t neox;     /* 0: pairs (2i, 2i+1); 1: pairs (i, i + n_rot/2) */
    uint32_t width;    /* floats per row of k, v and the caches (n_head_kv * head_dim) */
    uint32_t n_ctx;    /* rows of the caches; rows >= n_ctx are never written */
    float mscale;      /* as in vkllm__pc_rope */
    uint32_t n_rows;   /* rows of the caches: position p is row p % n_rows (a sliding-window ring) */
    uint32_t page;     /* > 0: paged caches, blocks of 2^page positions */
};
_Static_assert(sizeof(struct vkllm__pc_rope_kv) == 40, "update pc_rope_kv in pc_attn.glsl");

/* GLSL twin: pc_attn (attn.comp) */
struct vkllm__pc_attn {
    uint32_t n; /* queries */
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t n_ctx;     /* rows of the cache */
    float scale;        /* applied to q.k */
    uint32_t split_len; /* prefill: cache positions per workgroup (n_ctx); decode: unused */
    uint32_t n_split;   /* decode: splits of the span (shaders/include/attn_split.glsl; 1: final output) */
    uint32_t window;    /* sliding window (0: none): query at p sees p - window + 1 .. p */
    float softcap;      /* > 0: scores s -> softcap * tanh(s / softcap) */
    uint32_t sinks;     /* 1: head h's softmax also counts the score sinks[h] (no value): gpt-oss */
    uint32_t n_rows;    /* rows of the cache: position t is row t % n_rows (page 0) */
    uint32_t page;      /* > 0: a paged cache, blocks of 2^page positions */
    uint32_t kv_h0;     /* the bound caches hold kv heads kv_h0 .. kv_h0 + kv_hn - 1 (a cache split by */
    uint32_t kv_hn;     /* heads when one binding cannot hold it); the dispatch covers their query heads */
};
_Static_assert(sizeof(struct vkllm__pc_attn) == 56, "update pc_attn in pc_attn.glsl");

/* GLSL twin: pc_attn_reduce (attn_reduce.comp) */
struct vkllm__pc_attn_reduce {
    uint32_t n; /* queries */
    uint32_t n_head;
    uint32_t head_dim;
    uint32_t n_ctx;
    uint32_t window; /* as in vkllm__pc_attn: the splits cut the window's span */
    uint32_t n_split;
    uint32_t sinks; /* as in vkllm__pc_attn */
};
_Static_assert(sizeof(struct vkllm__pc_attn_reduce) == 28, "update pc_attn_reduce in pc_attn.glsl");

/* GLSL twin: pc_argmax (argmax.comp) */
struct vkllm__pc_argmax {
    uint32_t n;
};
_Static_assert(sizeof(struct vkllm__pc_argmax) == 4, "update pc_argmax in pc_attn.glsl");

#endif
