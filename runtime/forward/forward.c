/* forward.c - one forward pass of a Llama-family model on the device, in the spirit of
 * llama2.c's forward(): top to bottom, one op per step, shapes in the comments. A batch of n
 * tokens is recorded into a command list and submitted; the single-token decode step is recorded
 * once and replayed, the token and the position being data in small device-local buffers (copied
 * in from host-visible ones by the step itself where the host cannot write them). A step whose
 * dispatches the cost model expects to take longer than the tuning's submit_us on a slow device
 * of its kind is cut into several command buffers, each submitted as soon as it is recorded
 * (vkllm__cmd_set_budget): no submit runs long enough for a driver's watchdog. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "forward.h"

struct vkllm__forward {
    struct vkllm__gpu_model *m;
    struct vkllm__gpu *gpu;
    struct vkllm__kv_cache kv;
    uint32_t n_ctx, n_ubatch;
    /* run state: activations for up to n_ubatch tokens */
    struct vkllm__buffer *ids;                 /* (n_ubatch,) u32, device-local: get_rows reads it */
    struct vkllm__buffer *pos;                 /* (1,) u32 pos0 of the batch, device-local: rope, the cache
                                                  stores and attention read it in every layer */
    struct vkllm__buffer *ids_host, *pos_host; /* where the host cannot write ids and pos (discrete
                                       GPUs without ReBAR): host-visible, copied into them by the
                                       step's command list, first */
    struct vkllm__buffer *x;                   /* (n_ubatch, n_embd) residual stream */
    struct vkllm__buffer *xb;                  /* (n_ubatch, max(n_embd, n_embd_q)) normed input / projection out */
    struct vkllm__buffer *q;                   /* (n_ubatch, n_embd_q) */
    struct vkllm__buffer *k;                   /* (n_ubatch, n_embd_kv) */
    struct vkllm__buffer *v;                   /* (n_ubatch, n_embd_kv) */
    struct vkllm__buffer *att;                 /* (n_ubatch, n_embd_q) attention output */
    struct vkllm__buffer *hb;                  /* (n_ubatch, max(n_ff, n_expert_used n_ff_exp)) */
    struct vkllm__buffer *hb2;                 /* (n_ubatch, max(n_ff, n_expert_used n_ff_exp)) */
    struct vkllm__buffer *moe_logits, *moe_ids, *moe_w; /* MoE: (n_ubatch, n_expert) router logits, (n_ubatch,
                                                           n_expert_used) picks (u32) and weights */
    struct vkllm__buffer *moe_y;          /* MoE: (n_ubatch n_expert_used, n_embd) the picked experts' outputs */
    struct vkllm__buffer *moe_group;      /* MoE: several tokens' picks grouped by expert (vkllm__op_moe_group) */
    struct vkllm__buffer *logits;         /* (n_vocab,) or (n_ubatch, n_vocab) when all logits were asked */
    uint32_t logits_rows;                 /* rows logits can hold */
    struct vkllm__buffer *logits_host;    /* where logits is not mapped (discrete GPUs): host-visible,
                                             preferably host-cached, rows of logits copied there by the
                                             step's own command list (no second submit to read them) */
    struct vkllm__buffer *scratch;        /* attention split partials */
    struct vkllm__buffer *xq;             /* the activation the next products read, quantized to int8
                                             once (quantize_x8) for those that run matvec_x8; NULL
                                             where none does (or matvec_xq=0) */
    struct vkllm__buffer *argmax;         /* (1,) u32 argmax, host-visible */
    struct vkllm__cmd *batch_cmd;         /* re-recorded for each micro-batch */
    struct vkllm__cmd *decode_cmd;        /* one token -> logits, recorded once */
    struct vkllm__cmd *greedy_cmd;        /* one token -> argmax id, recorded once */
    struct vkllm__cmd *multi_cmd;         /* a decode step of several sequences (see decode_batch) */
    int decode_ready, greedy_ready;       /* the two above are recorded and bind current buffers */
    uint64_t id;                          /* unique for the process: names this state in multi_key */
    uint64_t multi_key[VKLLM__BATCH_KEY]; /* the sequences multi_cmd was recorded for ... */
    uint32_t multi_n;                     /* ... and how many (0: not recorded) */
    uint64_t state_bytes;
    uint32_t last_pos0;         /* the first position of the last command list submitted */
    uint32_t last_submits;      /* command buffers the last call submitted (vkllm__forward_last_submits) */
    uint32_t kv_hi;             /* past the last position written since a batch started at 0 */
    int fuse_qkv, fuse_gate_up; /* one token: q/k/v (gate/up) in one product (fusable below) */
    int fuse_rope_kv;           /* rope of q and k and the cache stores in one dispatch */
    /* a layer split: this stage runs layers [l0, l1) of m (its KV cache holds those, as its
     * layers 0 ..); next is the next stage (another device), head the first one, whose cache's
     * block table every stage uses (mirror: what this stage's btab holds of it) */
    uint32_t l0, l1;
    struct vkllm__hparams shp; /* hp as this stage's KV cache sees it (vkllm__stage_hparams) */
    struct vkllm__forward *next, *head;
    struct vkllm__buffer *xfer; /* host-visible (2, n_ubatch, n_embd): x and xb into or out of the stage */
    uint32_t *mirror, n_mirror;
    uint64_t busy_ns; /* in this stage's submits and the copies after them */
};

// --- views -----------------------------------------------------------------------------------

/* f32 elements [first, first + n) of a buffer */
static struct vkllm__view F(const struct vkllm__buffer *b, uint64_t first, uint64_t n) {
    struct vkllm__view v = {b, first * 4, n * 4};
    return v;
}

static struct vkllm__view
ALL(const struct vkllm__buffer *b) {
    return vkllm__view_of(b);
}

/* y (n, rows(w)) = x (n, k) @ w^T: the decode kernel for one token or for a batch of sequences'
 * tokens (decode), the tiled one for a prompt's tokens. xq: x quantized (xq_for), or none. */
static vkllm_status
mmq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w, struct vkllm__view x,
    struct vkllm__view xq, uint32_t n, int decode) {
    return n == 1 || decode ? vkllm__op_matvec_xq(c, y, w, x, xq, n) : vkllm__op_matmul(c, y, w, x, n);
}

/* Does the decode product of w (n columns) run matvec_x8, which would quantize x itself? */
static int x8(const struct vkllm__forward *f, const struct vkllm__dtensor *w, uint32_t n) {
    return f->xq && w->m && vkllm__matvec_x8_applies(f->gpu, w, n);
}

/* ... the experts' products of w (grouped: several tokens' picks, unless the grouped GEMM takes
 * them) */
static int x8_id(const struct vkllm__forward *f, const struct vkllm__dtensor *w, uint32_t n_expert, uint32_t picks,
                 int grouped) {
    return f->xq && w->m && vkllm__matvec_id_x8_applies(f->gpu, w, grouped) &&
           !(grouped && vkllm__matmul_id_applies(f->gpu, w, n_expert, picks, NULL));
}

/* x (n columns of k) quantized to int8 once, into f->xq, when take (some product of x runs
 * matvec_x8): *xq its view, which those products then read instead of quantizing x in every
 * workgroup (the same bits); otherwise no view. */
static vkllm_status xq_for(struct vkllm__forward *f, struct vkllm__cmd *c, struct vkllm__view x, uint32_t k, uint32_t n,
                           int take, struct vkllm__view *xq) {
    *xq = (struct vkllm__view){0};
    if (!take || !f->xq) return VKLLM_STATUS_OK;
    *xq = (struct vkllm__view){f->xq, 0, vkllm__xq8_bytes(k, n)};
    return vkllm__op_quantize_x8(c, *xq, x, k, n);
}

// --- one layer -------------------------------------------------------------------------------

/* What one layer's blocks share: n tokens of f's sequence at positions pos0.. (seqs NULL), or one
 * token of each of the n sequences seqs[i] at its own position (a batched decode step: the
 * activations are f's, the KV cache, position and attention scratch each sequence's own). */
struct layer {
    struct vkllm__forward *f;
    struct vkllm__cmd *c;
    uint32_t l, n;
    struct vkllm__forward *const *seqs;
    const struct vkllm__hparams *hp;
    const struct vkllm__gpu_layer *w;
    int dec;                  /* a batched decode step (seqs) */
    struct vkllm__view x, xb; /* (n, n_embd) the residual stream, the block's input/output */
};

#define TRY(call)                  \
    do {                           \
        vkllm_status st_ = (call); \
        if (st_) return st_;       \
    } while (0)

/* RoPE's frequencies for layer l of sequence sq: gemma's sliding-window layers have their own,
 * phi3's long factors apply past the original context. */
static const struct vkllm__buffer *rope_freqs(const struct layer *L, const struct vkllm__forward *sq) {
    const struct vkllm__gpu_model *m = L->f->m;
    if (vkllm__layer_window(L->hp, L->l) && m->rope_swa) return m->rope_swa;
    if (m->rope_long && sq->n_ctx > L->hp->rope.orig_ctx) return m->rope_long;
    return m->rope;
}

/* Rope of q and k, k and v into sequence sq's cache, and attention of its nt queries: att (nt, Q)
 * = softmax(q k^T / sqrt(HD)) v. */
static vkllm_status attend(const struct layer *L, struct vkllm__forward *sq, uint32_t nt, struct vkllm__view q,
                           struct vkllm__view k, struct vkllm__view v, struct vkllm__view att) {
    const struct vkllm__hparams *hp = L->hp;
    const uint32_t HD = hp->head_dim, KV = hp->n_embd_kv, window = vkllm__layer_window(hp, L->l);
    const uint32_t l = L->l - sq->l0; /* the layer in sq's KV cache (a stage holds its layers alone) */
    struct vkllm__view pos = ALL(sq->pos), rot = ALL(rope_freqs(L, sq));
    struct vkllm__attn_shape as = {nt,
                                   hp->n_head,
                                   hp->n_head_kv,
                                   HD,
                                   sq->n_ctx,
                                   hp->attn_scale != 0.0f ? hp->attn_scale : 1.0f / sqrtf((float)HD),
                                   window,
                                   hp->attn_softcap,
                                   L->w->attn_sinks ? ALL(L->w->attn_sinks) : (struct vkllm__view){0}, // gpt-oss: sinks
                                   sq->kv.rows[l],
                                   sq->kv.k_q8,
                                   sq->kv.v_q8, // the pool's rows or a ring's; f16/q8_0
                                   {ALL(sq->kv.btab), window ? 0 : VKLLM__KV_SHIFT}, // the block table
                                   0,
                                   NULL,
                                   NULL};
    const struct vkllm__kv_pages pg = as.pages;
    const uint32_t NP = sq->kv.n_part, PW = KV / NP; // the cache's parts (kv heads)
    struct vkllm__view kp[VKLLM__KV_MAX_PARTS], vp[VKLLM__KV_MAX_PARTS];
    for (uint32_t j = 0; j < NP; j++) kp[j] = ALL(sq->kv.k[l * NP + j]), vp[j] = ALL(sq->kv.v[l * NP + j]);
    if (NP > 1) as.chunk_heads = sq->kv.part_heads, as.k_chunks = kp, as.v_chunks = vp;
    if (L->f->fuse_rope_kv && NP == 1) { // the four below in one dispatch
        struct vkllm__rope_kv_shape rs = {
            nt,        hp->n_head,      hp->n_head_kv,  HD,          hp->rope.n_rot, hp->rope.neox,
            sq->n_ctx, hp->rope.mscale, sq->kv.rows[l], sq->kv.k_q8, sq->kv.v_q8,    pg};
        TRY(vkllm__op_rope_kv(L->c, q, k, v, pos, rot, kp[0], vp[0], &rs));
    } else {
        TRY(vkllm__op_rope(L->c, q, pos, rot, nt, hp->n_head, HD, hp->rope.n_rot, hp->rope.neox, hp->rope.mscale));
        TRY(vkllm__op_rope(L->c, k, pos, rot, nt, hp->n_head_kv, HD, hp->rope.n_rot, hp->rope.neox, hp->rope.mscale));
        for (uint32_t j = 0; j < NP; j++) { // each part its kv heads' columns
            TRY(vkllm__op_kv_store_cols(L->c, kp[j], k, pos, nt, PW, KV, j * PW, sq->n_ctx, sq->kv.rows[l], sq->kv.k_q8,
                                        &pg)); // k_cache[pos0..) = k
            TRY(vkllm__op_kv_store_cols(L->c, vp[j], v, pos, nt, PW, KV, j * PW, sq->n_ctx, sq->kv.rows[l], sq->kv.v_q8,
                                        &pg)); // v_cache[pos0..) = v
        }
    }
    return vkllm__op_attention(L->c, att, q, kp[0], vp[0], pos, ALL(sq->scratch), &as);
}

/* The attention block: xb = attention(rmsnorm(x)) (the previous layer's FFN output, still in xb,
 * is added to x by the norm). */
static vkllm_status attention_block(const struct layer *L) {
    struct vkllm__forward *f = L->f;
    struct vkllm__cmd *c = L->c;
    const struct vkllm__hparams *hp = L->hp;
    const struct vkllm__gpu_layer *w = L->w;
    const struct vkllm__gpu_stacked *S = &f->m->stacked[L->l];
    const uint32_t n = L->n, E = hp->n_embd, Q = hp->n_embd_q, KV = hp->n_embd_kv, HD = hp->head_dim;
    struct vkllm__view q = F(f->q, 0, (uint64_t)n * Q), k = F(f->k, 0, (uint64_t)n * KV),
                       v = F(f->v, 0, (uint64_t)n * KV);
    struct vkllm__view att = F(f->att, 0, (uint64_t)n * Q), xb = L->xb;
    TRY(L->l == 0 ? vkllm__op_rmsnorm(c, xb, L->x, ALL(w->attn_norm), E, n, hp->rms_eps) // xb = rmsnorm(x) * attn_norm
                  : vkllm__op_add_rmsnorm(c, xb, L->x, xb, ALL(w->attn_norm), E, n,
                                          hp->rms_eps)); // x += xb; xb = rmsnorm(x) * ...
    const int dq = n == 1 || L->dec;                     // decode: the products are matvecs
    struct vkllm__view xq;                               // xb (then att) quantized once for those that run matvec_x8
    if (n == 1 && !L->dec && f->fuse_qkv && S->qkv.m) {  // one token: one product
        q = F(f->q, 0, Q), k = F(f->q, Q, KV), v = F(f->q, Q + KV, KV); // (q | k | v) in f->q
        TRY(xq_for(f, c, xb, E, 1, x8(f, &S->qkv, 1), &xq));
        TRY(vkllm__op_matvec_xq(c, F(f->q, 0, Q + 2 * KV), &S->qkv, xb, xq, 1)); // (q|k|v) = xb @ (wq|wk|wv)^T
    } else {
        TRY(xq_for(f, c, xb, E, n, dq && (x8(f, &w->wq, n) || x8(f, &w->wk, n) || x8(f, &w->wv, n)), &xq));
        TRY(mmq(c, q, &w->wq, xb, xq, n, L->dec)); // q (n, Q)  = xb @ wq^T
        TRY(mmq(c, k, &w->wk, xb, xq, n, L->dec)); // k (n, KV) = xb @ wk^T
        TRY(mmq(c, v, &w->wv, xb, xq, n, L->dec)); // v (n, KV) = xb @ wv^T
    }
    if (w->bq) TRY(vkllm__op_add(c, q, q, ALL(w->bq), n * Q, Q)); // qwen2 (llama: optional): + biases
    if (w->bk) TRY(vkllm__op_add(c, k, k, ALL(w->bk), n * KV, KV));
    if (w->bv) TRY(vkllm__op_add(c, v, v, ALL(w->bv), n * KV, KV));
    if (w->q_norm) { // qwen3: per-head RMS norm
        TRY(vkllm__op_rmsnorm(c, q, q, ALL(w->q_norm), HD, n * hp->n_head, hp->rms_eps));
        TRY(vkllm__op_rmsnorm(c, k, k, ALL(w->k_norm), HD, n * hp->n_head_kv, hp->rms_eps));
    }
    if (!L->dec) TRY(attend(L, f, n, q, k, v, att)); // the batch: one sequence's tokens
    for (uint32_t i = 0; L->dec && i < n; i++)       // or one token of each sequence
        TRY(attend(L, L->seqs[i], 1, F(f->q, (uint64_t)i * Q, Q), F(f->k, (uint64_t)i * KV, KV),
                   F(f->v, (uint64_t)i * KV, KV), F(f->att, (uint64_t)i * Q, Q)));
    TRY(xq_for(f, c, att, Q, n, dq && x8(f, &w->wo, n), &xq));
    TRY(mmq(c, xb, &w->wo, att, xq, n, L->dec));                    // xb (n, E) = att @ wo^T
    if (w->bo) TRY(vkllm__op_add(c, xb, xb, ALL(w->bo), n * E, E)); // llama (optional): + bias
    if (w->attn_post_norm) TRY(vkllm__op_rmsnorm(c, xb, xb, ALL(w->attn_post_norm), E, n, hp->rms_eps)); // gemma
    if (hp->resid_scale != 1.0f)
        TRY(vkllm__op_mul(c, xb, xb, F(f->m->scales, 64, 1), n * E, 1)); // granite: *= resid_scale
    return VKLLM_STATUS_OK;
}

/* The experts' products of all n K picks: y = experts[ids] (w) @ x, x's rows shared by x_div picks
 * (x_stride floats apart); grouped by expert (grp) when several tokens' picks are (prefill). */
static vkllm_status matvec_id(const struct layer *L, struct vkllm__view y, const struct vkllm__dtensor *w,
                              struct vkllm__view x, uint32_t x_div, uint32_t x_stride, struct vkllm__view ids,
                              struct vkllm__view grp, struct vkllm__view xq) {
    const uint32_t NE = L->hp->n_expert, picks = L->n * L->hp->n_expert_used;
    return grp.buf ? vkllm__op_matvec_id_grouped_xq(L->c, y, w, NE, x, x_div, x_stride, grp, xq, picks)
                   : vkllm__op_matvec_id_xq(L->c, y, w, NE, x, x_div, x_stride, ids, xq, picks);
}

/* A mixture of experts (Mixtral, qwen3moe, gpt-oss): xb (n, E) = the weighted sum of each token's
 * K experts' FFNs of xb. */
static vkllm_status moe_block(const struct layer *L) {
    struct vkllm__forward *f = L->f;
    struct vkllm__cmd *c = L->c;
    const struct vkllm__hparams *hp = L->hp;
    const struct vkllm__gpu_layer *w = L->w;
    const uint32_t n = L->n, E = hp->n_embd, NE = hp->n_expert, K = hp->n_expert_used, FE = hp->n_ff_exp;
    struct vkllm__view xb = L->xb, lg = F(f->moe_logits, 0, (uint64_t)n * NE), ids = F(f->moe_ids, 0, (uint64_t)n * K);
    struct vkllm__view wt = F(f->moe_w, 0, (uint64_t)n * K), ye = F(f->moe_y, 0, (uint64_t)n * K * E);
    struct vkllm__view he = F(f->hb, 0, (uint64_t)n * K * FE), he2 = F(f->hb2, 0, (uint64_t)n * K * FE);
    // xb quantized once for the router and the picks' gate and up, where they run matvec_x8
    long mg = vkllm__gpu_tuning(f->gpu)->moe_group; // -1: not where CPU devices read the GGUF layout
    int group = mg == 1 || (mg < 0 && (w->w_gate_exps.tb || vkllm__gpu_info(f->gpu)->type != VKLLM_DEVICE_CPU));
    const int grouped = n > 1 && group;
    struct vkllm__view xq;
    TRY(xq_for(f, c, xb, E, n,
               ((n == 1 || L->dec) && x8(f, &w->w_router, n)) || x8_id(f, &w->w_gate_exps, NE, n * K, grouped) ||
                   x8_id(f, &w->w_up_exps, NE, n * K, grouped),
               &xq));
    TRY(mmq(c, lg, &w->w_router, xb, xq, n, L->dec));                             // lg (n, NE) = xb @ w_router^T
    if (w->b_router) TRY(vkllm__op_add(c, lg, lg, ALL(w->b_router), n * NE, NE)); // gpt-oss: + bias
    TRY(vkllm__op_moe_route(c, ids, wt, lg, n, NE, K));                           // each token's K experts, weights
    // several tokens: their picks grouped by expert, each expert's weights read once per 8 of them
    struct vkllm__view grp =
        grouped ? F(f->moe_group, 0, vkllm__moe_group_bytes(n * K, NE) / 4) : (struct vkllm__view){0};
    if (grp.buf) TRY(vkllm__op_moe_group(c, grp, ids, n * K, NE));
    TRY(matvec_id(L, he, &w->w_gate_exps, xb, K, E, ids, grp, xq)); // he (n K, FE): each pick's gate
    TRY(matvec_id(L, he2, &w->w_up_exps, xb, K, E, ids, grp, xq));  // he2: its up
    if (w->b_gate_exps) TRY(vkllm__op_moe_add_id(c, he, ALL(w->b_gate_exps), ids, n * K, FE, NE)); // gpt-oss:
    if (w->b_up_exps) TRY(vkllm__op_moe_add_id(c, he2, ALL(w->b_up_exps), ids, n * K, FE, NE));    // + its biases
    TRY(hp->swiglu_oai ? vkllm__op_swiglu_oai(c, he, he, he2, n * K * FE) // gpt-oss: clamped SwiGLU
                       : vkllm__op_silu_mul(c, he, he, he2, n * K * FE)); // he = silu(he) * he2
    TRY(xq_for(f, c, he, FE, n * K, x8_id(f, &w->w_down_exps, NE, n * K, grouped), &xq));
    TRY(matvec_id(L, ye, &w->w_down_exps, he, 1, FE, ids, grp, xq)); // ye (n K, E): its down
    if (w->b_down_exps) TRY(vkllm__op_moe_add_id(c, ye, ALL(w->b_down_exps), ids, n * K, E, NE)); // gpt-oss
    return vkllm__op_moe_sum(c, xb, ye, wt, n, K, E); // xb (n, E) = weighted sum
}

/* A dense FFN: xb (n, E) = w_down @ (act(w_gate @ xb) * (w_up @ xb)), act SiLU or gemma's GELU. */
static vkllm_status ffn_dense(const struct layer *L) {
    struct vkllm__forward *f = L->f;
    struct vkllm__cmd *c = L->c;
    const struct vkllm__hparams *hp = L->hp;
    const struct vkllm__gpu_layer *w = L->w;
    const struct vkllm__gpu_stacked *S = &f->m->stacked[L->l];
    const uint32_t n = L->n, FF = hp->n_ff;
    struct vkllm__view xb = L->xb, hb = F(f->hb, 0, (uint64_t)n * FF), hb2 = F(f->hb2, 0, (uint64_t)n * FF);
    const int fgu = n == 1 && !L->dec && f->fuse_gate_up && S->gate_up.m; // one token: gate/up stacked
    const int dq = n == 1 || L->dec;                                      // decode: the products are matvecs
    struct vkllm__view xq; // xb (then hb) quantized once for the products that run matvec_x8
    TRY(xq_for(f, c, xb, hp->n_embd, n,
               fgu ? x8(f, &S->gate_up, 1) : dq && (x8(f, &w->w_gate, n) || x8(f, &w->w_up, n)), &xq));
    if (fgu && !hp->gelu && vkllm__matvec_glu_applies(f->gpu, &S->gate_up)) {
        TRY(vkllm__op_matvec_glu_xq(c, hb, &S->gate_up, xb, xq)); // hb = silu(xb @ w_gate^T) * (xb @ w_up^T)
    } else {
        if (fgu) {                                                                    // one token: one product
            hb2 = F(f->hb, FF, FF);                                                   // (gate | up) in f->hb
            TRY(vkllm__op_matvec_xq(c, F(f->hb, 0, 2 * FF), &S->gate_up, xb, xq, 1)); // (hb|hb2) = xb @ (w_gate|w_up)^T
        } else {
            TRY(mmq(c, hb, &w->w_gate, xb, xq, n, L->dec)); // hb (n, FF)  = xb @ w_gate^T
            TRY(mmq(c, hb2, &w->w_up, xb, xq, n, L->dec));  // hb2 (n, FF) = xb @ w_up^T
        }
        TRY(hp->gelu ? vkllm__op_gelu_mul(c, hb, hb, hb2, n * FF)   // gemma: hb = gelu(hb) * hb2
                     : vkllm__op_silu_mul(c, hb, hb, hb2, n * FF)); // hb = silu(hb) * hb2
    }
    TRY(xq_for(f, c, hb, FF, n, dq && x8(f, &w->w_down, n), &xq));
    return mmq(c, xb, &w->w_down, hb, xq, n, L->dec); // xb (n, E) = hb @ w_down^T
}

/* The feed-forward block: xb = ffn(rmsnorm(x + xb)), x += xb (the attention block's output). */
static vkllm_status ffn_block(const struct layer *L) {
    const struct vkllm__hparams *hp = L->hp;
    const uint32_t n = L->n, E = hp->n_embd;
    struct vkllm__view xb = L->xb;
    TRY(vkllm__op_add_rmsnorm(L->c, xb, L->x, xb, ALL(L->w->ffn_norm), E, n,
                              hp->rms_eps));         // x += xb; xb = rmsnorm(x) * ffn_norm
    TRY(hp->n_expert ? moe_block(L) : ffn_dense(L)); // xb (n, E), added to x next
    if (L->w->ffn_post_norm) TRY(vkllm__op_rmsnorm(L->c, xb, xb, ALL(L->w->ffn_post_norm), E, n, hp->rms_eps)); // gemma
    if (hp->resid_scale != 1.0f) TRY(vkllm__op_mul(L->c, xb, xb, F(L->f->m->scales, 64, 1), n * E, 1)); // granite
    return VKLLM_STATUS_OK;
}

/* Layer l for n tokens (struct layer says which). */
static vkllm_status record_layer(struct vkllm__forward *f, struct vkllm__cmd *c, uint32_t l, uint32_t n,
                                 struct vkllm__forward *const *seqs) {
    const struct vkllm__hparams *hp = &f->m->desc->hp;
    const struct layer L = {f,
                            c,
                            l,
                            n,
                            seqs,
                            hp,
                            &f->m->layers[l],
                            seqs != NULL,
                            F(f->x, 0, (uint64_t)n * hp->n_embd),
                            F(f->xb, 0, (uint64_t)n * hp->n_embd)};
    TRY(attention_block(&L));
    return ffn_block(&L);
}

/* The whole pass for n tokens already in f->ids at f->pos. Logits of every token (all_logits)
 * or of the last one; with greedy, also its argmax into f->argmax; with hidden, no logits: the
 * final hidden state of every token (after the output norm) is left in f->xb. */
static vkllm_status record_forward_h(struct vkllm__forward *f, struct vkllm__cmd *c, uint32_t n, int all_logits,
                                     int greedy, struct vkllm__forward *const *seqs, int hidden) {
    const struct vkllm__hparams *hp = &f->m->desc->hp;
    const uint32_t E = hp->n_embd, V = hp->n_vocab;
    /* cut to the time budget: a micro-batch's costs at its position, a recorded decode step's at
     * the last position of the context (it is replayed at any position) */
    long us = vkllm__gpu_tuning(f->gpu)->submit_us;
    if (us < 0) us = vkllm__gpu_info(f->gpu)->type == VKLLM_DEVICE_CPU ? 0 : 50000; /* CPU devices: no watchdog */
    vkllm__cmd_set_budget(c, us > 0 ? (double)us * 1e3 : 0, c == f->batch_cmd ? f->last_pos0 : f->n_ctx - 1);
    vkllm_status st = vkllm__cmd_begin(c);
    if (st) return st;
    const uint64_t XB = (uint64_t)f->n_ubatch * E * 4, nE = (uint64_t)n * E * 4; /* xb's place in xfer; n rows */
    if (f->ids_host && f->m->embd)
        st = vkllm__cmd_copy(c, f->ids, 0, f->ids_host, 0, (uint64_t)n * 4); // ids, pos: to the device
    for (uint32_t i = 0; !st && i < (seqs ? n : 1); i++) {
        struct vkllm__forward *sq = seqs ? seqs[i] : f;
        if (sq->pos_host) st = vkllm__cmd_copy(c, sq->pos, 0, sq->pos_host, 0, 4);
    }
    if (!st && f->m->embd)
        st = vkllm__op_get_rows(c, F(f->x, 0, (uint64_t)n * E), &f->m->token_embd, // x (n, E) = token_embd[ids]
                                ALL(f->ids), n);
    if (!st && f->m->embd && hp->embd_scale != 1.0f) // granite, gemma: x *= embd_scale
        st =
            vkllm__op_mul(c, F(f->x, 0, (uint64_t)n * E), F(f->x, 0, (uint64_t)n * E), F(f->m->scales, 0, 1), n * E, 1);
    if (!st && !f->m->embd) { // a later stage: x and the last FFN output (xb) as the stage before left them
        st = vkllm__cmd_copy(c, f->x, 0, f->xfer, 0, nE);
        if (!st) st = vkllm__cmd_copy(c, f->xb, 0, f->xfer, XB, nE);
    }
    for (uint32_t l = f->l0; !st && l < f->l1; l++) st = record_layer(f, c, l, n, seqs);
    if (st) return st;
    if (!f->m->head) { // an earlier stage: x and xb out to host-visible memory, for the next device
        if ((st = vkllm__cmd_copy(c, f->xfer, 0, f->x, 0, nE)) || (st = vkllm__cmd_copy(c, f->xfer, XB, f->xb, 0, nE)))
            return st;
        return vkllm__cmd_end(c);
    }
    uint32_t rows = all_logits || hidden ? n : 1; // logits of which tokens
    struct vkllm__view xl = F(f->x, (uint64_t)(n - rows) * E, (uint64_t)rows * E);
    struct vkllm__view dl = F(f->xb, (uint64_t)(n - rows) * E, (uint64_t)rows * E); // the last FFN output
    struct vkllm__view xb = F(f->xb, 0, (uint64_t)rows * E);
    struct vkllm__view lg = F(f->logits, 0, (uint64_t)rows * V);
    // x += the last FFN output (of these rows); xb = rmsnorm(x) * output_norm
    if ((st = vkllm__op_add_rmsnorm(c, xb, xl, dl, ALL(f->m->output_norm), E, rows, hp->rms_eps))) return st;
    if (hidden) return vkllm__cmd_end(c); // embeddings: xb is the result
    struct vkllm__view xq;                // xb quantized once where the output product runs matvec_x8
    const int dq = rows == 1 || seqs != NULL;
    if ((st = xq_for(f, c, xb, E, rows, dq && x8(f, &f->m->output, rows), &xq)) ||
        (st = mmq(c, lg, &f->m->output, xb, xq, rows, seqs != NULL))) // logits (rows, V) = xb @ output^T
        return st;
    if (hp->logit_scale != 1.0f && (st = vkllm__op_mul(c, lg, lg, F(f->m->scales, 128, 1), rows * V, 1))) // granite
        return st;
    if (hp->final_softcap > 0.0f && (st = vkllm__op_softcap(c, lg, lg, F(f->m->scales, 192, 1), rows * V))) // gemma2
        return st;
    if (f->logits_host && !greedy && // to host memory, in the same step
        (st = vkllm__cmd_copy(c, f->logits_host, 0, f->logits, 0, (uint64_t)rows * V * 4)))
        return st;
    if (greedy && (st = vkllm__op_argmax(c, ALL(f->argmax), F(f->logits, 0, V), V))) return st;
    return vkllm__cmd_end(c);
}

static vkllm_status record_forward(struct vkllm__forward *f, struct vkllm__cmd *c, uint32_t n, int all_logits,
                                   int greedy, struct vkllm__forward *const *seqs) {
    return record_forward_h(f, c, n, all_logits, greedy, seqs, 0);
}

// --- state -----------------------------------------------------------------------------------

/* A small input the host writes each step: where the device-local buffer cannot be written by
 * the host, a host-visible twin that the step copies from. */
static vkllm_status alloc_input(struct vkllm__forward *f, uint64_t bytes, struct vkllm__buffer **dev,
                                struct vkllm__buffer **host) {
    vkllm_status st = vkllm__buffer_alloc(f->gpu, bytes, VKLLM__MEM_DEVICE, dev);
    if (!st && !vkllm__buffer_host_writes(*dev)) st = vkllm__buffer_alloc(f->gpu, bytes, VKLLM__MEM_HOST, host);
    return st;
}

/* Bytes of the activations and the KV cache forward_init allocates (about: its blocks are sized
 * to it, see vkllm__gpu_expect). */
static uint64_t state_estimate(const struct vkllm__hparams *hp, uint64_t U, uint32_t n_ctx, int k_q8, int v_q8,
                               int own_kv, uint64_t scratch) {
    uint64_t ff = VKLLM_MAX((uint64_t)hp->n_ff, (uint64_t)hp->n_expert_used * hp->n_ff_exp);
    uint64_t f32 =
        U * (hp->n_embd + VKLLM_MAX(hp->n_embd, hp->n_embd_q) + 2ull * hp->n_embd_q + 2ull * hp->n_embd_kv + 2 * ff);
    if (hp->n_expert)
        f32 += U * (hp->n_expert + 2ull * hp->n_expert_used + (uint64_t)hp->n_expert_used * hp->n_embd) +
               vkllm__moe_group_bytes((uint32_t)(U * hp->n_expert_used), hp->n_expert) / 4;
    uint64_t kv = own_kv ? (uint64_t)vkllm__kv_blocks_for(n_ctx) * vkllm__kv_block_bytes(hp, k_q8, v_q8) : 0;
    return 4 * (f32 + hp->n_vocab + 3 * U) + kv + scratch + (uint64_t)(2 * hp->n_layer + 32) * 512;
}

/* Bytes of f->xq for stage m: n_ubatch columns of the widest activation a product reads (the
 * experts' down: each pick's), where some product of the stage's matrices runs matvec_x8 and the
 * tuning's matvec_xq is on; else 0. */
static uint64_t xq_bytes(const struct vkllm__gpu_model *m, const struct vkllm__hparams *hp, uint64_t U) {
    struct vkllm__gpu *gpu = m->gpu;
    if (!vkllm__matvec_xq_on(gpu)) return 0;
    int any = m->head && m->output.m && vkllm__matvec_x8_applies(gpu, &m->output, 1);
    for (uint32_t l = m->l0; !any && l < m->l1; l++) {
        const struct vkllm__gpu_layer *w = &m->layers[l];
        const struct vkllm__gpu_stacked *S = &m->stacked[l];
        any = (S->qkv.m && vkllm__matvec_x8_applies(gpu, &S->qkv, 1)) ||
              (S->gate_up.m && vkllm__matvec_x8_applies(gpu, &S->gate_up, 1));
#define XQ_MAT_(fl) any = any || (w->fl.m && vkllm__matvec_x8_applies(gpu, &w->fl, 1));
#define XQ_EXP_(fl) \
    any = any ||    \
          (w->fl.m && (vkllm__matvec_id_x8_applies(gpu, &w->fl, 0) || vkllm__matvec_id_x8_applies(gpu, &w->fl, 1)));
#define XQ_VEC_(fl)
#define XQ_(fl, suffix, kind, ...) XQ_##kind##_(fl)
        VKLLM__LAYER_TENSORS(XQ_)
#undef XQ_
#undef XQ_VEC_
#undef XQ_EXP_
#undef XQ_MAT_
    }
    if (!any) return 0;
    uint64_t b = VKLLM_MAX(vkllm__xq8_bytes(hp->n_embd, U), vkllm__xq8_bytes(hp->n_embd_q, U));
    b = VKLLM_MAX(b, vkllm__xq8_bytes(hp->n_ff, U));
    return VKLLM_MAX(b, vkllm__xq8_bytes(hp->n_ff_exp, U * hp->n_expert_used));
}

/* Bytes of attention scratch for one token or a micro-batch (ops_attn.c sizes it). */
static uint64_t scratch_bytes(const struct vkllm__forward *f, int k_q8, int v_q8, uint32_t part_heads) {
    const struct vkllm__hparams *hp = &f->m->desc->hp;
    struct vkllm__attn_shape s1 = {1,   hp->n_head, hp->n_head_kv, hp->head_dim, f->n_ctx, 1.0f,       0,    0.0f,
                                   {0}, 0,          k_q8,          v_q8,         {{0}, 0}, part_heads, NULL, NULL};
    struct vkllm__attn_shape sU = s1;
    sU.n = f->n_ubatch;
    return VKLLM_MAX(vkllm__attention_scratch_bytes(f->gpu, &s1), vkllm__attention_scratch_bytes(f->gpu, &sU));
}

static vkllm_status alloc_f32(struct vkllm__forward *f, uint64_t n, struct vkllm__buffer **b) {
    vkllm_status st = vkllm__buffer_alloc(f->gpu, n * 4, VKLLM__MEM_DEVICE, b);
    if (!st) f->state_bytes += n * 4;
    return st;
}

/* One stage of a run state (the whole model on one device): m's layers, their KV cache on pool. */
static vkllm_status stage_init(struct vkllm__gpu_model *m, uint32_t n_ctx, uint32_t n_ubatch, int k_q8, int v_q8,
                               struct vkllm__kv_pool *pool, int split, struct vkllm__forward **out) {
    const struct vkllm__hparams *hp = &m->desc->hp;
    struct vkllm__forward *f = vkllm__calloc(1, sizeof *f);
    if (!f) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    f->m = m;
    f->gpu = m->gpu;
    f->n_ctx = n_ctx;
    f->n_ubatch = n_ubatch;
    f->l0 = m->l0, f->l1 = m->l1;
    f->shp = vkllm__stage_hparams(hp, m->l0, m->l1);
    f->head = f;
    const uint64_t U = n_ubatch;
    vkllm_status st;
    /* the blocks sized to what follows (not to what the model's weights took) */
    const uint64_t xqb = xq_bytes(m, hp, U);
    const uint64_t estimate =
        state_estimate(&f->shp, U, n_ctx, k_q8, v_q8, pool == NULL, scratch_bytes(f, k_q8, v_q8, 0)) + xqb;
    vkllm__gpu_expect(f->gpu, estimate);
    enum vkllm__mem_use was = vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_KV);
    int in_act = 0; /* allocating the activations and logits (the KV cache's check says what it needs) */
    VKLLM_TRY(st, vkllm__kv_cache_init(f->gpu, &f->shp, n_ctx, n_ubatch, k_q8, v_q8, pool, &f->kv), fail);
    if (split && !(f->mirror = vkllm__calloc(VKLLM_MAX(f->kv.max_blocks, 1), sizeof *f->mirror))) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_INPUTS);
    if (m->embd) VKLLM_TRY(st, alloc_input(f, U * 4, &f->ids, &f->ids_host), fail);
    VKLLM_TRY(st, alloc_input(f, 16, &f->pos, &f->pos_host), fail);
    if (split) /* the residual stream between devices: host-visible memory on both (no external memory) */
        VKLLM_TRY(st, vkllm__buffer_alloc(f->gpu, 2 * U * hp->n_embd * 4, VKLLM__MEM_HOST, &f->xfer), fail);
    vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_READBACK);
    VKLLM_TRY(st, vkllm__buffer_alloc(f->gpu, 16, VKLLM__MEM_HOST, &f->argmax), fail);
    vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_ACTIVATIONS);
    in_act = 1;
    VKLLM_TRY(st, alloc_f32(f, U * hp->n_embd, &f->x), fail);
    VKLLM_TRY(st, alloc_f32(f, U * VKLLM_MAX(hp->n_embd, hp->n_embd_q), &f->xb), fail);
    VKLLM_TRY(st, alloc_f32(f, U * hp->n_embd_q, &f->q), fail);
    VKLLM_TRY(st, alloc_f32(f, U * hp->n_embd_kv, &f->k), fail);
    VKLLM_TRY(st, alloc_f32(f, U * hp->n_embd_kv, &f->v), fail);
    VKLLM_TRY(st, alloc_f32(f, U * hp->n_embd_q, &f->att), fail);
    uint64_t ff = VKLLM_MAX((uint64_t)hp->n_ff, (uint64_t)hp->n_expert_used * hp->n_ff_exp);
    VKLLM_TRY(st, alloc_f32(f, U * ff, &f->hb), fail);
    VKLLM_TRY(st, alloc_f32(f, U * ff, &f->hb2), fail);
    if (hp->n_expert) {
        VKLLM_TRY(st, alloc_f32(f, U * hp->n_expert, &f->moe_logits), fail);
        VKLLM_TRY(st, alloc_f32(f, U * hp->n_expert_used, &f->moe_ids), fail);
        VKLLM_TRY(st, alloc_f32(f, U * hp->n_expert_used, &f->moe_w), fail);
        VKLLM_TRY(st, alloc_f32(f, U * hp->n_expert_used * hp->n_embd, &f->moe_y), fail);
        VKLLM_TRY(
            st,
            alloc_f32(f, vkllm__moe_group_bytes((uint32_t)(U * hp->n_expert_used), hp->n_expert) / 4, &f->moe_group),
            fail);
    }
    uint64_t scratch = scratch_bytes(f, f->kv.k_q8, f->kv.v_q8, f->kv.n_part > 1 ? f->kv.part_heads : 0);
    VKLLM_TRY(st, alloc_f32(f, VKLLM_MAX(scratch / 4, 4), &f->scratch), fail);
    if (xqb) VKLLM_TRY(st, alloc_f32(f, xqb / 4, &f->xq), fail); /* 160 bytes a group: whole floats */
    vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_LOGITS);
    if (m->head) { /* the last stage's: one row, more only when all are asked for */
        VKLLM_TRY(st, alloc_f32(f, hp->n_vocab, &f->logits), fail);
        f->logits_rows = 1;
        vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_READBACK);
        if (!vkllm__buffer_map(f->logits))
            VKLLM_TRY(st, vkllm__buffer_alloc(f->gpu, 4ull * hp->n_vocab, VKLLM__MEM_HOST, &f->logits_host), fail);
    }
    in_act = 0;
    vkllm__gpu_set_mem_use(f->gpu, was);
    vkllm__gpu_expect(f->gpu, 0);
    /* One token's stacked products write (q | k | v) into f->q and (gate | up) into f->hb: they
     * fit when the micro-batch holds 2 tokens, and the parts are views at aligned offsets. */
    uint64_t align = vkllm__gpu_storage_align(f->gpu);
    f->fuse_qkv = U >= 2 && (4ull * hp->n_embd_q) % align == 0 && (4ull * (hp->n_embd_q + hp->n_embd_kv)) % align == 0;
    f->fuse_gate_up = U >= 2 && (4ull * hp->n_ff) % align == 0;
    f->fuse_rope_kv = vkllm__gpu_tuning(f->gpu)->fuse != 0;
    VKLLM_TRY(st, vkllm__cmd_init(f->gpu, &f->batch_cmd), fail);
    VKLLM_TRY(st, vkllm__cmd_init(f->gpu, &f->decode_cmd), fail);
    VKLLM_TRY(st, vkllm__cmd_init(f->gpu, &f->greedy_cmd), fail);
    VKLLM_TRY(st, vkllm__cmd_init(f->gpu, &f->multi_cmd), fail);
    static atomic_uint_fast64_t next_id = 1;
    f->id = atomic_fetch_add(&next_id, 1);
    *out = f;
    return VKLLM_STATUS_OK;
fail:
    if (st == VKLLM_STATUS_DEVICE_OOM && in_act) { /* what they were for, and what needs less */
        char why[384];
        snprintf(why, sizeof why, "%s", vkllm_last_error());
        st = vkllm__err(VKLLM_STATUS_DEVICE_OOM,
                        "the activations for micro-batches of %u tokens (about %s with %sthe logits): %s; "
                        "a smaller --ubatch or context (-c) needs less",
                        n_ubatch, vkllm__bytes(estimate).s, pool ? "" : "the KV cache and ", why);
    }
    vkllm__gpu_set_mem_use(f->gpu, was);
    vkllm__gpu_expect(f->gpu, 0);
    vkllm__forward_free(f);
    return st;
}

vkllm_status vkllm__forward_init_stages(struct vkllm__gpu_model *m, uint32_t n_ctx, uint32_t n_ubatch, int k_q8,
                                        int v_q8, struct vkllm__kv_pool *const *pools, struct vkllm__forward **out) {
    const struct vkllm__hparams *hp = &m->desc->hp;
    if (n_ctx == 0) n_ctx = VKLLM_MIN(hp->n_ctx_train ? hp->n_ctx_train : 2048, 4096);
    if (n_ubatch == 0) n_ubatch = 256;
    n_ubatch = VKLLM_MIN(n_ubatch, n_ctx);
    struct vkllm__forward *head = NULL, *last = NULL;
    uint32_t i = 0;
    for (struct vkllm__gpu_model *g = m; g; g = g->next, i++) {
        struct vkllm__forward *f = NULL;
        vkllm_status st = stage_init(g, n_ctx, n_ubatch, k_q8, v_q8, pools ? pools[i] : NULL, m->next != NULL, &f);
        if (st) {
            if (i) vkllm__err_prefix("device %u of the split (layers %u .. %u): ", i, g->l0, g->l1 - 1);
            vkllm__forward_free(head);
            return st;
        }
        if (!head) head = f;
        else last->next = f, f->head = head;
        last = f;
    }
    *out = head;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__forward_init(struct vkllm__gpu_model *m, uint32_t n_ctx, uint32_t n_ubatch, int k_q8, int v_q8,
                                 struct vkllm__kv_pool *pool, struct vkllm__forward **out) {
    if (pool && m->next) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "a layer split takes a KV pool per device");
    return vkllm__forward_init_stages(m, n_ctx, n_ubatch, k_q8, v_q8, pool ? &pool : NULL, out);
}

void vkllm__forward_free(struct vkllm__forward *f) {
    if (!f) return;
    vkllm__forward_free(f->next);
    vkllm__free(f->mirror);
    vkllm__buffer_free(f->xfer);
    vkllm__cmd_free(f->batch_cmd);
    vkllm__cmd_free(f->decode_cmd);
    vkllm__cmd_free(f->greedy_cmd);
    vkllm__cmd_free(f->multi_cmd);
    struct vkllm__buffer *bufs[] = {f->ids,   f->pos,    f->ids_host,    f->pos_host, f->argmax,     f->x,
                                    f->xb,    f->q,      f->k,           f->v,        f->att,        f->hb,
                                    f->hb2,   f->logits, f->logits_host, f->scratch,  f->moe_logits, f->moe_ids,
                                    f->moe_w, f->moe_y,  f->moe_group,   f->xq};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(bufs); i++) vkllm__buffer_free(bufs[i]);
    vkllm__kv_cache_free(&f->kv);
    vkllm__free(f);
}

/* Room for logits of `rows` tokens (all-logits prefill asks for more than the default one). */
static vkllm_status ensure_logits(struct vkllm__forward *f, uint32_t rows) {
    if (rows <= f->logits_rows) return VKLLM_STATUS_OK;
    uint64_t V = f->m->desc->hp.n_vocab;
    struct vkllm__buffer *nb, *nh = NULL;
    enum vkllm__mem_use was = vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_LOGITS);
    vkllm_status st = vkllm__buffer_alloc(f->gpu, (uint64_t)rows * V * 4, VKLLM__MEM_DEVICE, &nb);
    vkllm__gpu_set_mem_use(f->gpu, VKLLM__USE_READBACK);
    if (!st && f->logits_host && (st = vkllm__buffer_alloc(f->gpu, (uint64_t)rows * V * 4, VKLLM__MEM_HOST, &nh)))
        vkllm__buffer_free(nb);
    vkllm__gpu_set_mem_use(f->gpu, was);
    if (st) return st;
    if (nh) vkllm__buffer_free(f->logits_host), f->logits_host = nh;
    f->state_bytes += ((uint64_t)rows - f->logits_rows) * V * 4;
    vkllm__buffer_free(f->logits);
    f->logits = nb;
    f->logits_rows = rows;
    f->decode_ready = f->greedy_ready = 0; /* the recorded steps bound the old buffer */
    f->multi_n = 0;
    return VKLLM_STATUS_OK;
}

/* Every id of tokens[0..n) in the vocabulary: checked before anything is reserved or evaluated. */
static vkllm_status check_ids(const struct vkllm__forward *f, const uint32_t *tokens, uint32_t n) {
    uint32_t V = f->m->desc->hp.n_vocab;
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] >= V)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "token %u: id %u is outside the vocabulary (%u tokens); "
                              "nothing evaluated",
                              i, tokens[i], V);
    return VKLLM_STATUS_OK;
}

/* The step's token ids and first position, where the host writes them (the step copies them to
 * the device-local buffers first where those are not the ones written). */
static vkllm_status put_ids(struct vkllm__forward *f, const uint32_t *tokens, uint32_t n) {
    return vkllm__buffer_upload(f->ids_host ? f->ids_host : f->ids, 0, tokens, (uint64_t)n * 4);
}
static vkllm_status put_pos(struct vkllm__forward *f, uint32_t pos0) {
    return vkllm__buffer_upload(f->pos_host ? f->pos_host : f->pos, 0, &pos0, 4);
}

static vkllm_status set_batch(struct vkllm__forward *f, const uint32_t *tokens, uint32_t n, uint32_t pos0) {
    uint32_t V = f->m->desc->hp.n_vocab;
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] >= V)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "token id %u is outside the vocabulary (%u tokens)",
                              tokens[i], V);
    if ((uint64_t)pos0 + n > f->n_ctx)
        return vkllm__err(VKLLM_STATUS_CONTEXT_FULL,
                          "the context is full: %u positions used, %u more asked for, room for %u", pos0, n, f->n_ctx);
    vkllm_status st = put_ids(f, tokens, n);
    for (struct vkllm__forward *g = f; !st && g; g = g->next) { /* every stage's position */
        st = put_pos(g, pos0);
        /* from position 0 every live row is rewritten: older writes no longer matter */
        if (!st) g->last_pos0 = pos0, g->kv_hi = pos0 == 0 ? n : VKLLM_MAX(g->kv_hi, pos0 + n);
    }
    return st;
}

/* The first `bytes` of the logits the last step computed: from the host copy the step made, or
 * from the device buffer (mapped, or through staging where there is no host copy). */
static vkllm_status read_logits(struct vkllm__forward *f, uint64_t offset, float *dst, uint64_t bytes) {
    const uint8_t *src = f->logits_host ? vkllm__buffer_map(f->logits_host) : NULL;
    if (!src) return vkllm__buffer_download(f->logits, offset, dst, bytes);
    memcpy(dst, src + offset, bytes);
    return VKLLM_STATUS_OK;
}

// --- stages (a layer split over several devices) -----------------------------------------------

static struct vkllm__forward *last_stage(struct vkllm__forward *f) {
    while (f->next) f = f->next;
    return f;
}

/* The residual stream of n tokens (x and the last FFN output xb) from stage a's host-visible
 * buffer into stage b's: a memcpy where both are mapped (always, but for compile_only contexts). */
static vkllm_status cross(struct vkllm__forward *a, struct vkllm__forward *b, uint32_t n) {
    const uint64_t E = a->m->desc->hp.n_embd, XB = (uint64_t)a->n_ubatch * E * 4, nE = (uint64_t)n * E * 4;
    uint8_t *s = vkllm__buffer_map(a->xfer), *d = vkllm__buffer_map(b->xfer);
    if (s && d) {
        memcpy(d, s, nE);
        memcpy(d + XB, s + XB, nE);
        return VKLLM_STATUS_OK;
    }
    uint8_t *t = vkllm__malloc(nE ? nE : 1);
    if (!t) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm_status st = VKLLM_STATUS_OK;
    for (uint64_t off = 0; off <= XB && !st; off += XB) {
        st = vkllm__buffer_download(a->xfer, off, t, nE);
        if (!st) st = vkllm__buffer_upload(b->xfer, off, t, nE);
    }
    vkllm__free(t);
    return st;
}

/* A later stage takes its first stage's block table, where it changed (the blocks are the same
 * numbers in every stage's pool). */
static vkllm_status sync_table(struct vkllm__forward *g) {
    const struct vkllm__kv_cache *kv = &g->head->kv;
    if (g == g->head || (g->n_mirror == kv->n_held && !memcmp(g->mirror, kv->table, (size_t)kv->n_held * 4)))
        return VKLLM_STATUS_OK;
    g->n_mirror = 0;
    vkllm_status st = kv->n_held ? vkllm__buffer_upload(g->kv.btab, 0, kv->table, (uint64_t)kv->n_held * 4) : 0;
    if (st) return st;
    memcpy(g->mirror, kv->table, (size_t)kv->n_held * 4);
    g->n_mirror = kv->n_held;
    return VKLLM_STATUS_OK;
}

/* Copy block src to block dst in every paged layer of stage g's cache (K and V, every part). */
static vkllm_status stage_copy_block(struct vkllm__cmd *c, const struct vkllm__forward *g, uint32_t dst, uint32_t src) {
    const uint64_t B = VKLLM__KV_BLOCK;
    const uint32_t NP = g->kv.n_part, PW = g->kv.width / NP;
    for (uint32_t l = 0; l < g->kv.n_layer; l++) {
        if (vkllm__layer_window(&g->shp, l)) continue;
        const uint64_t rows = g->kv.rows[l];
        for (uint32_t j = l * NP; j < (l + 1) * NP; j++)
            for (int kv = 0; kv < 2; kv++) {
                struct vkllm__buffer *b = kv ? g->kv.v[j] : g->kv.k[j];
                TRY(vkllm__kv_copy_rows(c, b, rows, dst * B, b, rows, src * B, B, PW, kv ? g->kv.v_q8 : g->kv.k_q8));
            }
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__forward_kv_reserve(struct vkllm__forward *f, uint32_t pos0, uint32_t end) {
    if (!f->next) return vkllm__kv_reserve(&f->kv, pos0, end);
    const uint32_t n0 = f->kv.n_held;
    uint32_t *before = vkllm__malloc(sizeof *before * (n0 ? n0 : 1));
    if (!before) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    memcpy(before, f->kv.table, (size_t)n0 * sizeof *before);
    vkllm_status st = vkllm__kv_reserve(&f->kv, pos0, end);
    /* the blocks it copied (shared, or keyed: copy on write) are copied on the later stages too */
    for (struct vkllm__forward *g = f->next; !st && g; g = g->next) {
        struct vkllm__cmd *c = NULL;
        for (uint32_t i = 0; !st && i < VKLLM_MIN(n0, f->kv.n_held); i++) {
            if (before[i] == f->kv.table[i]) continue;
            if (!c && !(st = vkllm__cmd_init(g->gpu, &c))) st = vkllm__cmd_begin(c);
            if (!st) st = stage_copy_block(c, g, f->kv.table[i], before[i]);
        }
        if (c && !st) st = vkllm__cmd_end(c);
        if (c && !st) st = vkllm__cmd_submit(c);
        vkllm__cmd_free(c);
    }
    vkllm__free(before);
    return st;
}

uint32_t vkllm__forward_kv_lookup(struct vkllm__forward *f, const int32_t *tokens, uint32_t n, int adopt) {
    for (struct vkllm__forward *g = f->next; g; g = g->next)
        for (uint32_t l = 0; l < g->kv.n_layer; l++)
            if (vkllm__layer_window(&g->shp, l)) return 0; /* a window's ring is the sequence's own */
    return vkllm__kv_lookup(&f->kv, tokens, n, adopt);
}

enum { RUN_BATCH, RUN_DECODE, RUN_GREEDY, RUN_MULTI };

/* One step of n tokens through every stage in turn: each stage's command list recorded (the
 * decode steps once, then replayed) and submitted, then the residual stream copied to the next
 * stage's device. Batched decode (RUN_MULTI): seqs are the first stages of the sequences (this
 * array is walked to each stage's, in place). */
static vkllm_status run_stages(struct vkllm__forward *f, int kind, uint32_t n, int all_logits, int hidden,
                               struct vkllm__forward **seqs) {
    vkllm_status st = VKLLM_STATUS_OK;
    for (struct vkllm__forward *g = f, *prev = NULL; g; prev = g, g = g->next) {
        uint64_t t0 = vkllm__now_ns();
        if (prev && (st = cross(prev, g, n))) return st;
        for (uint32_t i = 0; seqs && prev && i < n; i++) seqs[i] = seqs[i]->next;
        for (uint32_t i = 0; i < (seqs ? n : 1); i++)
            if ((st = sync_table(seqs ? seqs[i] : g))) return st;
        struct vkllm__cmd *c = g->batch_cmd;
        if (kind == RUN_BATCH) {
            TRY(record_forward_h(g, c, n, all_logits, 0, NULL, hidden));
        } else if (kind == RUN_DECODE || kind == RUN_GREEDY) {
            int greedy = kind == RUN_GREEDY, *ready = greedy ? &g->greedy_ready : &g->decode_ready;
            c = greedy ? g->greedy_cmd : g->decode_cmd;
            if (!*ready) {
                TRY(record_forward(g, c, 1, 0, greedy, NULL));
                *ready = 1;
            }
        } else {
            c = g->multi_cmd;
            int same = n == g->multi_n && n <= VKLLM__BATCH_KEY;
            for (uint32_t i = 0; same && i < n; i++) same = g->multi_key[i] == seqs[i]->id;
            if (!same) {
                g->multi_n = 0;
                TRY(record_forward(g, c, n, 1, 0, seqs));
                if (n <= VKLLM__BATCH_KEY) {
                    for (uint32_t i = 0; i < n; i++) g->multi_key[i] = seqs[i]->id;
                    g->multi_n = n;
                }
            }
        }
        TRY(vkllm__cmd_submit(c));
        f->last_submits += vkllm__cmd_segments(c);
        g->busy_ns += vkllm__now_ns() - t0;
    }
    return st;
}

// --- entry points ----------------------------------------------------------------------------

vkllm_status vkllm__forward_eval(struct vkllm__forward *f, const uint32_t *tokens, uint32_t n, uint32_t pos0,
                                 int all_logits, float *logits) {
    const uint64_t V = f->m->desc->hp.n_vocab;
    struct vkllm__forward *z = last_stage(f); /* where the logits are */
    vkllm_status st;
    if (n == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "no tokens to evaluate");
    if ((uint64_t)pos0 + n > f->n_ctx)
        return vkllm__err(VKLLM_STATUS_CONTEXT_FULL,
                          "the context is full: %u positions used, %u more asked for, room for %u", pos0, n, f->n_ctx);
    if ((st = check_ids(f, tokens, n))) return st; /* all of them: a bad one later must not leave half done */
    if (all_logits && (st = ensure_logits(z, VKLLM_MIN(n, f->n_ubatch)))) return st;
    if ((st = vkllm__forward_kv_reserve(f, pos0, pos0 + n))) return st; /* all or nothing, before evaluating */
    f->last_submits = 0;
    for (uint32_t done = 0; done < n;) {
        uint32_t nb = VKLLM_MIN(n - done, f->n_ubatch);
        if ((st = set_batch(f, tokens + done, nb, pos0 + done))) return st;
        /* one token: the decode step, recorded once and replayed */
        if ((st = run_stages(f, nb == 1 && !all_logits ? RUN_DECODE : RUN_BATCH, nb, all_logits, 0, NULL))) return st;
        int last = done + nb == n;
        if (logits && (all_logits || last)) {
            uint64_t rows = all_logits ? nb : 1;
            float *dst = logits + (all_logits ? (uint64_t)done * V : 0);
            if ((st = read_logits(z, 0, dst, rows * V * 4))) return st;
        }
        done += nb;
    }
    if (n > 1 && f->last_submits > (n + f->n_ubatch - 1) / f->n_ubatch * vkllm__forward_n_stages(f)) /* cut */
        vkllm__log(VKLLM_LOG_DEBUG, "forward: %u tokens from position %u in %u submits (the submit_us budget)", n, pos0,
                   f->last_submits);
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__forward_hidden(struct vkllm__forward *f, const uint32_t *tokens, uint32_t n, uint32_t pos0,
                                   float *hidden) {
    const uint64_t E = f->m->desc->hp.n_embd;
    vkllm_status st;
    if (n == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "no tokens to evaluate");
    if ((uint64_t)pos0 + n > f->n_ctx)
        return vkllm__err(VKLLM_STATUS_CONTEXT_FULL, "%u tokens from position %u: the context has %u positions", n,
                          pos0, f->n_ctx);
    if ((st = check_ids(f, tokens, n)) || (st = vkllm__forward_kv_reserve(f, pos0, pos0 + n))) return st;
    f->last_submits = 0;
    for (uint32_t done = 0; done < n;) {
        uint32_t nb = VKLLM_MIN(n - done, f->n_ubatch);
        if ((st = set_batch(f, tokens + done, nb, pos0 + done))) return st;
        if ((st = run_stages(f, RUN_BATCH, nb, 0, 1, NULL))) return st;
        if ((st = vkllm__buffer_download(last_stage(f)->xb, 0, hidden + (uint64_t)done * E, (uint64_t)nb * E * 4)))
            return st;
        done += nb;
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__forward_decode_greedy(struct vkllm__forward *f, uint32_t token, uint32_t pos, uint32_t *next) {
    vkllm_status st = pos < f->n_ctx ? vkllm__forward_kv_reserve(f, pos, pos + 1) : VKLLM_STATUS_OK;
    if (!st) st = set_batch(f, &token, 1, pos);
    if (st) return st;
    f->last_submits = 0;
    if ((st = run_stages(f, RUN_GREEDY, 1, 0, 0, NULL))) return st;
    return vkllm__buffer_download(last_stage(f)->argmax, 0, next, 4);
}

/* One decode step of seqs[i] (token tokens[i] at position pos[i]) for i < n, batched: the matrix
 * products take all n tokens at once (each weight read once), attention runs per sequence on its
 * own cache. The activations and the command list are seqs[0]'s; the step is re-recorded only
 * when the set of sequences changes (positions and tokens are data). */
vkllm_status vkllm__forward_decode_batch(struct vkllm__forward *const *seqs, const uint32_t *tokens,
                                         const uint32_t *pos, uint32_t n, float *const *logits) {
    if (n == 0) return VKLLM_STATUS_OK;
    struct vkllm__forward *f = seqs[0], *z = last_stage(f);
    const uint64_t V = f->m->desc->hp.n_vocab;
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm__forward **walk = vkllm__malloc(sizeof *walk * VKLLM_MIN(n, f->n_ubatch));
    if (!walk) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    f->last_submits = 0;
    for (uint32_t done = 0, nb; done < n; done += nb) { /* as many as f's activations hold */
        nb = VKLLM_MIN(n - done, f->n_ubatch);
        struct vkllm__forward *const *sq = seqs + done;
        for (uint32_t i = 0; i < nb; i++) {
            if (sq[i]->m != f->m) {
                st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "decode batch: sequences of different models");
                goto done;
            }
            for (uint32_t j = 0; j < i; j++)
                if (sq[j] == sq[i]) {
                    st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "decode batch: a sequence appears twice");
                    goto done;
                }
            if (tokens[done + i] >= V) {
                st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "token id %u is outside the vocabulary (%llu tokens)",
                                tokens[done + i], (unsigned long long)V);
                goto done;
            }
            if (pos[done + i] >= sq[i]->n_ctx) {
                st = vkllm__err(VKLLM_STATUS_CONTEXT_FULL, "the context is full: position %u of %u", pos[done + i],
                                sq[i]->n_ctx);
                goto done;
            }
        }
        for (uint32_t i = 0; i < nb; i++) /* each its block (a full pool: nothing evaluated) */
            if ((st = vkllm__forward_kv_reserve(sq[i], pos[done + i], pos[done + i] + 1))) goto done;
        if ((st = ensure_logits(z, nb))) goto done;
        if ((st = put_ids(f, tokens + done, nb))) goto done;
        for (uint32_t i = 0; i < nb; i++)
            for (struct vkllm__forward *g = sq[i]; g; g = g->next) {
                if ((st = put_pos(g, pos[done + i]))) goto done;
                g->kv_hi = pos[done + i] == 0 ? 1 : VKLLM_MAX(g->kv_hi, pos[done + i] + 1);
            }
        for (uint32_t i = 0; i < nb; i++) walk[i] = sq[i];
        if ((st = run_stages(f, RUN_MULTI, nb, 1, 0, walk))) goto done;
        for (uint32_t i = 0; logits && i < nb; i++) /* each row straight where its sequence keeps it */
            if (logits[done + i] && (st = read_logits(z, (uint64_t)i * V * 4, logits[done + i], V * 4))) goto done;
    }
done:
    vkllm__free(walk);
    return st;
}

uint32_t vkllm__forward_n_ctx(const struct vkllm__forward *f) { return f->n_ctx; }
uint64_t vkllm__forward_kv_bytes(const struct vkllm__forward *f) {
    uint64_t b = vkllm__kv_held_bytes(&f->kv);
    for (const struct vkllm__forward *g = f->next; g; g = g->next) { /* a later stage holds the first one's blocks */
        struct vkllm__kv_pool_stats ps;
        vkllm__kv_pool_get_stats(g->kv.pool, &ps);
        b += g->kv.ring_bytes + (g->kv.own_pool ? ps.bytes : (uint64_t)f->kv.n_held * ps.block_bytes);
    }
    return b;
}
uint64_t vkllm__forward_kv_ring_bytes(const struct vkllm__forward *f) {
    uint64_t b = 0;
    for (; f; f = f->next) b += f->kv.ring_bytes;
    return b;
}
struct vkllm__kv_cache *vkllm__forward_kv(struct vkllm__forward *f) {
    return &f->kv;
}

uint64_t vkllm__forward_kv_bytes_used(const struct vkllm__forward *f, uint32_t n_past) {
    uint64_t b = 0;
    for (; f; f = f->next) {
        uint64_t rows = 0;
        for (uint32_t l = 0; l < f->kv.n_layer; l++)
            rows += vkllm__layer_window(&f->shp, l) ? VKLLM_MIN(n_past, f->kv.rows[l]) : n_past;
        b += rows * (vkllm__kv_row_bytes(f->kv.width, f->kv.k_q8) + vkllm__kv_row_bytes(f->kv.width, f->kv.v_q8));
    }
    return b;
}

uint64_t vkllm__forward_kv_bytes_per_token(const struct vkllm__forward *f) {
    uint64_t b = 0;
    for (; f; f = f->next) {
        uint64_t layers = 0;
        for (uint32_t l = 0; l < f->kv.n_layer; l++)
            layers += !vkllm__layer_window(&f->shp, l) || f->kv.rows[l] == f->n_ctx;
        b += layers * (vkllm__kv_row_bytes(f->kv.width, f->kv.k_q8) + vkllm__kv_row_bytes(f->kv.width, f->kv.v_q8));
    }
    return b;
}

int vkllm__forward_kv_holds(const struct vkllm__forward *f, uint32_t n_past) {
    if (n_past == 0) return 1;                                 /* nothing to hold */
    if (vkllm__kv_blocks_for(n_past) > f->kv.n_held) return 0; /* blocks given back (truncated) */
    for (; f; f = f->next)
        for (uint32_t l = 0; l < f->kv.n_layer; l++) {
            uint32_t w = vkllm__layer_window(&f->shp, l), rows = f->kv.rows[l];
            if (!w || rows == f->n_ctx) continue;
            /* the last window before n_past, in rows no later position (all < kv_hi) has taken */
            uint64_t first = n_past > w ? n_past - w : 0;
            if (first + rows < f->kv_hi) return 0;
        }
    return 1;
}
uint64_t vkllm__forward_state_bytes(const struct vkllm__forward *f) {
    uint64_t b = 0;
    for (; f; f = f->next) b += f->state_bytes;
    return b;
}

uint32_t vkllm__forward_n_stages(const struct vkllm__forward *f) {
    uint32_t n = 0;
    for (; f; f = f->next) n++;
    return n;
}

uint64_t vkllm__forward_block_bytes(const struct vkllm__forward *f) {
    uint64_t b = 0;
    for (; f; f = f->next) {
        struct vkllm__kv_pool_stats ps;
        vkllm__kv_pool_get_stats(f->kv.pool, &ps);
        b += ps.block_bytes;
    }
    return b;
}

uint64_t vkllm__forward_stage_ns(const struct vkllm__forward *f, uint32_t i) {
    for (; f && i; f = f->next) i--;
    return f ? f->busy_ns : 0;
}

/* Stage dst's layers take what positions 0 .. n-1 left in stage src's (the same layers of another
 * run state): the window rings whole, the paged layers block by block where the two stages' pools
 * differ (dtab, stab: the first stages' block tables). */
static vkllm_status copy_stage_kv(struct vkllm__cmd *c, const struct vkllm__forward *dst,
                                  const struct vkllm__forward *src, const uint32_t *dtab, const uint32_t *stab,
                                  uint32_t n) {
    const uint32_t NP = src->kv.n_part, PW = src->kv.width / NP; /* parts of a cache split by kv heads */
    for (uint32_t l = 0; l < src->kv.n_layer; l++) {
        /* a window's ring: the whole ring, as the source has it (its later rows are overwritten
         * before they are read); a paged layer of another pool: block by block. q8_0: the rows'
         * quants, and their scales after all the quants */
        const uint64_t rows = src->kv.rows[l];
        if (!vkllm__layer_window(&src->shp, l)) {
            if (dst->kv.pool == src->kv.pool) continue;
            const uint64_t B = VKLLM__KV_BLOCK, drows = dst->kv.rows[l];
            for (uint32_t i = 0; i < vkllm__kv_blocks_for(n); i++)
                for (uint32_t j = l * NP; j < (l + 1) * NP; j++)
                    for (int kv = 0; kv < 2; kv++)
                        TRY(vkllm__kv_copy_rows(c, kv ? dst->kv.v[j] : dst->kv.k[j], drows, dtab[i] * B,
                                                kv ? src->kv.v[j] : src->kv.k[j], rows, stab[i] * B, B, PW,
                                                kv ? src->kv.v_q8 : src->kv.k_q8));
            continue;
        }
        const uint64_t m = rows == src->n_ctx ? n : rows;
        for (uint32_t j = l * NP; j < (l + 1) * NP; j++)
            for (int kv = 0; kv < 2; kv++)
                TRY(vkllm__kv_copy_rows(c, kv ? dst->kv.v[j] : dst->kv.k[j], rows, 0, kv ? src->kv.v[j] : src->kv.k[j],
                                        rows, 0, m, PW, kv ? src->kv.v_q8 : src->kv.k_q8));
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__forward_copy_kv(struct vkllm__forward *dst, const struct vkllm__forward *src, uint32_t n) {
    if (dst == src || n == 0) return VKLLM_STATUS_OK;
    if (dst->m != src->m || dst->n_ctx != src->n_ctx || n > src->n_ctx || dst->kv.k_q8 != src->kv.k_q8 ||
        dst->kv.v_q8 != src->kv.v_q8)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "copying a KV prefix needs two sessions of one model and context");
    for (const struct vkllm__forward *d = dst, *s = src; d && s; d = d->next, s = s->next) {
        if (d->kv.n_part != s->kv.n_part)
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                              "copying a KV prefix between caches split by kv heads into %u and %u "
                              "buffers (pools of different sizes): not supported",
                              s->kv.n_part, d->kv.n_part);
        for (uint32_t l = 0; l < s->kv.n_layer; l++)
            if (vkllm__layer_window(&s->shp, l) && d->kv.rows[l] != s->kv.rows[l])
                return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                                  "copying a KV prefix: layer %u keeps %u rows here, %u there", s->l0 + l,
                                  d->kv.rows[l], s->kv.rows[l]);
    }
    if (!vkllm__forward_kv_holds(src, n))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "copying a KV prefix of %u positions: the source's window rings "
                          "no longer hold it",
                          n);
    struct vkllm__cmd *c = NULL;
    vkllm_status st = VKLLM_STATUS_OK;
    if (dst->kv.pool == src->kv.pool) { /* the paged layers: the blocks, shared (copied when written) */
        VKLLM_TRY(st, vkllm__kv_share(&dst->kv, &src->kv, n), done);
    } else {
        vkllm__kv_truncate(&dst->kv, 0);
        VKLLM_TRY(st, vkllm__forward_kv_reserve(dst, 0, n), done);
    }
    struct vkllm__forward *d = dst;
    for (const struct vkllm__forward *s = src; s && d; s = s->next, d = d->next) {
        VKLLM_TRY(st, vkllm__cmd_init(d->gpu, &c), done);
        VKLLM_TRY(st, vkllm__cmd_begin(c), done);
        VKLLM_TRY(st, copy_stage_kv(c, d, s, dst->kv.table, src->kv.table, n), done);
        VKLLM_TRY(st, vkllm__cmd_end(c), done);
        VKLLM_TRY(st, vkllm__cmd_submit(c), done);
        vkllm__cmd_free(c);
        c = NULL;
        d->kv_hi = s->kv_hi > n ? s->kv_hi : n; /* the rings' rows are the source's */
    }
done:
    vkllm__cmd_free(c);
    return st;
}

// --- profiling -------------------------------------------------------------------------------

vkllm_status vkllm__forward_set_profile(struct vkllm__forward *f, int on) {
    for (; f; f = f->next) {
        vkllm__cmd_set_profile(f->batch_cmd, on);
        vkllm__cmd_set_profile(f->decode_cmd, on);
        vkllm__cmd_set_profile(f->greedy_cmd, on);
        f->decode_ready = f->greedy_ready = 0; /* recorded again, with or without timestamps */
    }
    return VKLLM_STATUS_OK;
}

uint32_t vkllm__forward_last_pos0(const struct vkllm__forward *f) { return f->last_pos0; }
uint32_t vkllm__forward_last_submits(const struct vkllm__forward *f) { return f->last_submits; }

const struct vkllm__cmd *vkllm__forward_last_cmd(const struct vkllm__forward *f) {
    const struct vkllm__cmd *cmds[] = {f->batch_cmd, f->decode_cmd, f->greedy_cmd}, *last = NULL;
    uint64_t best = 0;
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(cmds); i++)
        if (vkllm__cmd_submit_serial(cmds[i]) > best) best = vkllm__cmd_submit_serial(cmds[i]), last = cmds[i];
    return last;
}
