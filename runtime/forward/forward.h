/* forward.h - the model on the device and one forward pass (prefill batch or decode step).
 * No Vulkan types: everything goes through gpu.h and the ops of ops_gpu.h. */
#ifndef VKLLM_FORWARD_H
#define VKLLM_FORWARD_H

#include "model.h"
#include "ops_gpu.h"

/* --- weights on the device (weights.c) ------------------------------------------------------ */

/* A layer's tensors on the device, one field per row of the layer table (model/tensors.h):
 * matrices as device tensors, vectors (f32) as buffers; absent ones zero / NULL. */
#define VKLLM__GPU_FIELD_MAT_(field) struct vkllm__dtensor field;
#define VKLLM__GPU_FIELD_VEC_(field) struct vkllm__buffer *field;
#define VKLLM__GPU_FIELD_EXP_(field) struct vkllm__dtensor field; /* (n_expert m, k), in its GGUF encoding */
struct vkllm__gpu_layer {
#define VKLLM__GPU_FIELD_(field, suffix, kind, ...) VKLLM__GPU_FIELD_##kind##_(field)
    VKLLM__LAYER_TENSORS(VKLLM__GPU_FIELD_)
#undef VKLLM__GPU_FIELD_
};

/* A layer's matrices stacked into one buffer (rows of q, k, v; of gate, up) so that a decode step
 * multiplies each group in one dispatch; m == 0 where they could not be (weights.c). The layer's
 * own dtensors are then views of these rows. */
struct vkllm__gpu_stacked {
    struct vkllm__dtensor qkv;     /* (n_embd_q + 2 n_embd_kv, n_embd) */
    struct vkllm__dtensor gate_up; /* (2 n_ff, n_embd) */
};

struct vkllm__gpu_model {
    struct vkllm__gpu *gpu;
    const struct vkllm__model_desc *desc; /* not owned */
    struct vkllm__dtensor token_embd;     /* (n_vocab, n_embd) */
    struct vkllm__dtensor output;         /* (n_vocab, n_embd); shares token_embd's buffer when tied */
    struct vkllm__buffer *output_norm;    /* (n_embd,) f32 */
    struct vkllm__buffer *rope;           /* (n_rot/2,) RoPE frequencies in 64-bit fixed-point
                                             turns (vkllm__rope_turns of vkllm__rope_freqs) */
    struct vkllm__buffer *rope_long;      /* phi3 LongRoPE: those of contexts past orig_ctx, or NULL */
    struct vkllm__buffer *rope_swa;       /* gemma: those of the sliding-window layers, or NULL */
    struct vkllm__buffer *scales;         /* embd_scale, resid_scale, 1/logit_scale (granite, gemma's
                                             embedding scale), final_softcap (gemma2): f32 at 0, 64,
                                             128, 192, 256 bytes apart; NULL: none */
    struct vkllm__gpu_layer *layers;      /* (n_layer,) */
    struct vkllm__gpu_stacked *stacked;   /* (n_layer,) */
    uint64_t weight_bytes;                /* bytes of weights on the device */
    uint64_t matvec_bytes_per_token;      /* weight bytes a decode step reads */
    /* A layer split over several devices (llama.cpp's --split-mode layer): this device holds
     * layers [l0, l1) (layers and stacked are indexed by the model's layer number, the others
     * zero), the token embeddings when embd (the first stage) and the output norm and matrix when
     * head (the last); next is the next stage's weights on another device, or NULL. One device:
     * l0 = 0, l1 = n_layer, embd = head = 1. */
    uint32_t l0, l1;
    int embd, head;
    struct vkllm__gpu_model *next;
};

/* hp as one stage of a layer split sees it: its layers l0 .. l1-1 as layers 0 .. l1-l0-1 (the KV
 * cache and pool of a stage hold those alone). */
static inline struct vkllm__hparams vkllm__stage_hparams(const struct vkllm__hparams *hp, uint32_t l0, uint32_t l1) {
    struct vkllm__hparams s = *hp;
    s.n_layer = l1 - l0;
    s.swa = hp->swa ? hp->swa + l0 : NULL;
    return s;
}

/* Called with (bytes uploaded, bytes total) while the weights go up. */
typedef void (*vkllm__progress_fn)(void *user, uint64_t done, uint64_t total);

vkllm_status vkllm__gpu_model_load(struct vkllm__gpu *gpu, const struct vkllm__model_desc *desc,
                                   vkllm__progress_fn progress, void *user, struct vkllm__gpu_model **out);
/* Layers [l0, l1) only (a stage of a layer split), with the embeddings when l0 == 0 and the output
 * norm and matrix when l1 == n_layer (a tied output: token_embd uploaded as the output matrix). */
vkllm_status vkllm__gpu_model_load_range(struct vkllm__gpu *gpu, const struct vkllm__model_desc *desc, uint32_t l0,
                                         uint32_t l1, vkllm__progress_fn progress, void *user,
                                         struct vkllm__gpu_model **out);
/* Frees m and the stages after it (m->next). */
void vkllm__gpu_model_free(struct vkllm__gpu_model *m);

/* --- KV cache (kv_cache.c) ------------------------------------------------------------------- */

/* The layers that attend to the whole context keep K and V in a pool of blocks of
 * VKLLM__KV_BLOCK positions, shared by the sequences of one model (and K/V types); each sequence
 * holds a block table: position p is row table[p / BLOCK] * BLOCK + p % BLOCK of the pool's
 * buffers (shaders/include/kv_page.glsl). Blocks are reference-counted (shared prefixes, copied
 * when written while shared) and full ones keyed by their tokens and all before them, so a
 * released block is found again by a later prompt until the pool needs it (least recently
 * released first). A sliding-window layer (gemma2/3, gpt-oss) keeps a ring per sequence instead:
 * the last window + n_ubatch positions, position p in row p % rows. */

struct vkllm__kv_pool;
struct vkllm__kv_pool_stats {
    uint32_t n_blocks, n_free, n_cached, n_held; /* all; unheld empty; unheld keyed (reusable); held */
    uint64_t block_bytes, bytes;                 /* one block in every paged layer, K and V; the pool */
    uint64_t queried_tokens, hit_tokens;         /* prefix lookups, once per prompt (vkllm__kv_pool_count_lookup) */
    uint64_t evicted_blocks;                     /* cached blocks taken for new ones */
};
/* A pool of n_blocks blocks for model hp (refused before allocating when it does not fit). Its
 * creator holds one reference; each cache on it another. */
vkllm_status vkllm__kv_pool_init(struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, uint32_t n_blocks, int k_q8,
                                 int v_q8, struct vkllm__kv_pool **out);
void vkllm__kv_pool_retain(struct vkllm__kv_pool *p);
void vkllm__kv_pool_release(struct vkllm__kv_pool *p); /* freed with its last reference */
void vkllm__kv_pool_get_stats(const struct vkllm__kv_pool *p, struct vkllm__kv_pool_stats *out);

struct vkllm__kv_cache {
    uint32_t n_layer, n_ctx, width; /* width = n_head_kv * head_dim */
    uint8_t k_q8, v_q8;             /* K (V) is q8_0 (shaders/include/kv_q8.glsl), else f16 */
    uint8_t own_pool;               /* the pool was made for this cache alone */
    struct vkllm__kv_pool *pool;
    uint32_t n_part, part_heads;         /* each layer's K (V) in n_part buffers of part_heads kv heads */
    struct vkllm__buffer **k, **v;       /* [l * n_part + i]: layer l's part i, the pool's (paged) or the
                                          * ring's, (rows[l], part_heads * head_dim) */
    uint32_t *rows;                      /* per layer: the pool's rows, or a window's ring */
    uint64_t ring_bytes;                 /* the rings' K and V */
    uint32_t *table, n_held, max_blocks; /* block table: table[i] holds positions i*BLOCK .. +BLOCK-1 */
    uint64_t *keys;                      /* keys[i]: table[i]'s prefix key, for i < n_keyed */
    uint32_t n_keyed;
    struct vkllm__buffer *btab; /* the table on the device (host-visible u32) */
};

/* Rows layer l keeps for a context of n_ctx positions filled n_ubatch at a time (a ring). */
uint32_t vkllm__kv_layer_rows(const struct vkllm__hparams *hp, uint32_t l, uint32_t n_ctx, uint32_t n_ubatch);
uint64_t vkllm__kv_block_bytes(const struct vkllm__hparams *hp, int k_q8, int v_q8); /* one block, all paged layers */
uint32_t vkllm__kv_blocks_for(uint32_t n_pos);
#define VKLLM__KV_MAX_PARTS 64 /* a layer's K (V) split by kv heads into at most this many buffers */
/* Copy rows srow .. srow+n-1 of part s (srows rows of w values) to rows drow.. of part d (drows
 * rows): f16, or q8_0 quants and, after all of them, the scales. */
vkllm_status vkllm__kv_copy_rows(struct vkllm__cmd *c, struct vkllm__buffer *d, uint64_t drows, uint64_t drow,
                                 struct vkllm__buffer *s, uint64_t srows, uint64_t srow, uint64_t n, uint32_t w,
                                 int q8);

/* A cache on pool (NULL: a pool of its own, for n_ctx positions); refused before allocating
 * anything (VKLLM_STATUS_DEVICE_OOM with the bytes needed and available) when it does not fit. */
vkllm_status vkllm__kv_cache_init(struct vkllm__gpu *gpu, const struct vkllm__hparams *hp, uint32_t n_ctx,
                                  uint32_t n_ubatch, int k_q8, int v_q8, struct vkllm__kv_pool *pool,
                                  struct vkllm__kv_cache *out);
void vkllm__kv_cache_free(struct vkllm__kv_cache *kv);
/* Blocks for positions 0 .. end-1, those holding pos0 .. end-1 this cache's alone: a block another
 * cache holds is copied; a keyed one of its own is copied too while the pool has a block to spare
 * (its tokens stay findable), else its key is dropped (a removed event). KV_FULL (nothing taken)
 * when the pool has too few. */
vkllm_status vkllm__kv_reserve(struct vkllm__kv_cache *kv, uint32_t pos0, uint32_t end);
/* Keep the blocks of positions 0 .. n_pos-1 only. */
void vkllm__kv_truncate(struct vkllm__kv_cache *kv, uint32_t n_pos);
/* Key the full blocks of tokens[0 .. n_pos) (the tokens the cache holds) for later lookups. */
void vkllm__kv_register(struct vkllm__kv_cache *kv, const int32_t *tokens, uint32_t n_pos);
/* Positions (whole blocks) of tokens[0..n) the pool has cached (0 for a model with sliding-window
 * layers: their rings are not in the pool); with adopt, the cache drops its blocks and takes those
 * instead (then holds that many positions). Where the block table's upload fails (a lost device),
 * it adopts none and returns 0: the prompt runs whole, and the next step reports the device. */
uint32_t vkllm__kv_lookup(struct vkllm__kv_cache *kv, const int32_t *tokens, uint32_t n, int adopt);
/* dst takes src's blocks of positions 0 .. n_pos-1 (shared; one pool). On a failed upload of its
 * block table dst holds nothing. */
vkllm_status vkllm__kv_share(struct vkllm__kv_cache *dst, const struct vkllm__kv_cache *src, uint32_t n_pos);
/* Device bytes the cache stands for: its rings and its pool (its own) or the blocks it holds. */
uint64_t vkllm__kv_held_bytes(const struct vkllm__kv_cache *kv);

/* --- forward pass (forward.c) ---------------------------------------------------------------- */

struct vkllm__forward;

/* A run state for model m: KV cache of n_ctx positions (K and V f16, or q8_0 with k_q8 / v_q8)
 * and activations for micro-batches of up to n_ubatch tokens. */
vkllm_status vkllm__forward_init(struct vkllm__gpu_model *m, uint32_t n_ctx, uint32_t n_ubatch, int k_q8, int v_q8,
                                 struct vkllm__kv_pool *pool, struct vkllm__forward **out);
void vkllm__forward_free(struct vkllm__forward *f);
/* A run state over a layer split: one stage per device of m's chain (m, m->next, ...), each with
 * its layers' KV cache on its device, on pools[i] (NULL, or pools NULL: a pool of its own). The
 * first stage's cache is the one sequences reserve, truncate and look up blocks in; the later
 * stages hold the same blocks of their own pools (the same block numbers, copied where the first
 * one copies) and take its block table before each step. The residual stream crosses from one
 * stage to the next through host-visible memory (see vkllm__forward_eval). */
vkllm_status vkllm__forward_init_stages(struct vkllm__gpu_model *m, uint32_t n_ctx, uint32_t n_ubatch, int k_q8,
                                        int v_q8, struct vkllm__kv_pool *const *pools, struct vkllm__forward **out);
/* Stages of the run state (1 on one device), and stage i's time in its submits (nanoseconds since
 * init: the command buffers and the host copies of the residual stream into the next device). */
uint32_t vkllm__forward_n_stages(const struct vkllm__forward *f);
uint64_t vkllm__forward_block_bytes(const struct vkllm__forward *f); /* a KV block, in every stage's pool */
uint64_t vkllm__forward_stage_ns(const struct vkllm__forward *f, uint32_t i);
/* The first stage's cache reserving blocks for positions pos0 .. end-1 (vkllm__kv_reserve), the
 * blocks it copies copied on every later stage too; and looking up a prefix (vkllm__kv_lookup; 0
 * where a later stage holds a window's ring). */
vkllm_status vkllm__forward_kv_reserve(struct vkllm__forward *f, uint32_t pos0, uint32_t end);
uint32_t vkllm__forward_kv_lookup(struct vkllm__forward *f, const int32_t *tokens, uint32_t n, int adopt);

/* Run tokens[0..n) at positions pos0.. (pos0 + n <= n_ctx: else VKLLM_STATUS_CONTEXT_FULL).
 * Batches of more than one token go through the prefill path in micro-batches; one token goes
 * through the recorded decode step. Logits: of every token when all_logits (n * n_vocab floats
 * into logits), else of the last one (n_vocab floats); logits may be NULL. */
vkllm_status vkllm__forward_eval(struct vkllm__forward *f, const uint32_t *tokens, uint32_t n, uint32_t pos0,
                                 int all_logits, float *logits);

/* Run tokens[0..n) at positions pos0.. as eval does (micro-batches of prefill, n == 1 too), but
 * instead of logits read back every token's final hidden state, after the output norm: n x
 * n_embd floats into hidden (embeddings). */
vkllm_status vkllm__forward_hidden(struct vkllm__forward *f, const uint32_t *tokens, uint32_t n, uint32_t pos0,
                                   float *hidden);

/* One decode step that returns the argmax token id only (the logits stay on the device). */
vkllm_status vkllm__forward_decode_greedy(struct vkllm__forward *f, uint32_t token, uint32_t pos, uint32_t *next);

/* Batched decode: one token for each of n different run states of one model, tokens[i] at
 * position pos[i] of seqs[i], its logits (n_vocab,) into logits[i] (logits or logits[i] may be
 * NULL: not read back). Row i is bit-identical to what vkllm__forward_eval gives for that token
 * alone. */
#define VKLLM__BATCH_KEY 64 /* batches up to this size replay their recording */
vkllm_status vkllm__forward_decode_batch(struct vkllm__forward *const *seqs, const uint32_t *tokens,
                                         const uint32_t *pos, uint32_t n, float *const *logits);

uint32_t vkllm__forward_n_ctx(const struct vkllm__forward *f);
/* The run state's KV cache (its block table: truncate, register, look up). */
struct vkllm__kv_cache *vkllm__forward_kv(struct vkllm__forward *f);
uint64_t vkllm__forward_kv_bytes(const struct vkllm__forward *f);
uint64_t vkllm__forward_kv_ring_bytes(const struct vkllm__forward *f); /* the sliding-window rings alone */
/* Bytes of K and V the first n_past positions occupy (a window's ring at most its rows), and what
 * one more position adds once the rings are full (the full layers'). */
uint64_t vkllm__forward_kv_bytes_used(const struct vkllm__forward *f, uint32_t n_past);
uint64_t vkllm__forward_kv_bytes_per_token(const struct vkllm__forward *f);
/* Whether the cache still holds what positions 0 .. n_past-1 left there: the full layers always;
 * a window's ring only if no position written since has taken the rows of the last window before
 * n_past (n_past 0: nothing to hold). 0: those tokens must be evaluated again. */
int vkllm__forward_kv_holds(const struct vkllm__forward *f, uint32_t n_past);
/* Copy what positions 0 .. n-1 left in src's KV cache into dst's, on the device (dst then holds
 * that prefix as if it had evaluated it): two run states of one model and context, src holding
 * them (vkllm__forward_kv_holds). */
vkllm_status vkllm__forward_copy_kv(struct vkllm__forward *dst, const struct vkllm__forward *src, uint32_t n);
/* Device bytes of the run state (activations and scratch), not counting the KV cache. */
uint64_t vkllm__forward_state_bytes(const struct vkllm__forward *f);

/* Profiling (vkllm bench --profile): on makes every later recording time each dispatch
 * (vkllm__cmd_set_profile) and drops the recorded decode steps so that the next one is recorded
 * again with timestamps (off drops them too). */
vkllm_status vkllm__forward_set_profile(struct vkllm__forward *f, int on);
/* The command list that ran last: of a prefill micro-batch (the last one of the eval), the
 * decode step or the greedy decode step; NULL before the first. Read its profile after the
 * eval returns. */
const struct vkllm__cmd *vkllm__forward_last_cmd(const struct vkllm__forward *f);
/* The first position of the tokens that command list ran (its costs depend on it). */
uint32_t vkllm__forward_last_pos0(const struct vkllm__forward *f);
/* Command buffers (each its own submit) the last eval, hidden, greedy or batched decode call ran:
 * one per micro-batch or step, more where the tuning's submit_us cut them (vkllm__cmd_set_budget:
 * no submit expected to run longer than that on a slow device of its kind). */
uint32_t vkllm__forward_last_submits(const struct vkllm__forward *f);

#endif /* VKLLM_FORWARD_H */
