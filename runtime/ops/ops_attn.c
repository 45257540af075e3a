/* ops_attn.c - RoPE, KV-cache store, attention (prefill and split decode) and argmax on the
 * device (see ops_gpu.h). Every op reads the position pos0 from a device buffer, so a recorded
 * decode step replays at any position. The KV cache holds f16 values packed in pairs into uint
 * words (packHalf2x16 / unpackHalf2x16 in the shaders): it needs no 16-bit storage feature, but
 * head_dim and the cache width must be even.
 *
 * Attention has two kernels: attn.comp (flash-attention style, shared memory; GPUs) and
 * attn_tb.comp + attn_tb_reduce.comp (one invocation per row, texel buffers; CPU devices, see
 * tb_plan), each with its own decode split; vkllm__attention_scratch_bytes covers either. A
 * prefill on a device with cooperative matrices takes attn.comp's ATTN_CM variant (cm_choice):
 * both products of a tile by 16 x 16 x 16 f16 matrices, the softmax scalar. */
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "ops_gpu.h"
#include "shader_abi.h"

#define ATTN_WG 64          /* attention workgroup size = kv tile (positions per step) */
#define ATTN_MAX_ROWS 16    /* (query, head) rows per attention workgroup */
#define ATTN_SPLIT_MIN 64   /* decode: the shortest split (shaders/include/attn_split.glsl) */
#define ATTN_DEC_ROWS 8     /* the walk: rows per workgroup on CPU devices (a lane holds each row whole) */
#define ATTN_DEC_ROWS_GPU 4 /* ... on GPUs: 8 rows took 204-208 VGPRs on RADV (1 wave per SIMD on GCN) */
#define ATTN_DEC_BLOCK 4    /* decode: positions per key group and step */
/* the walk with key groups of one lane: at most this many query values a lane (rows x head_dim;
 * as many output values), so that its unrolled code stays small enough for a CPU driver to
 * compile quickly (lavapipe: 8 rows of head_dim 256 took ~30 s a pipeline) */
#define ATTN_ONE_LANE_VALUES 512
#define ARGMAX_WG 256
#define REDUCE_WG 64

/* The largest power of two <= want that the device allows as workgroup size x. */
static uint32_t fit_wg(const struct vkllm__gpu *gpu, uint32_t want) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    uint32_t wg = want;
    while (wg > 1 && (wg > d->max_workgroup_invocations || wg > d->max_workgroup_size[0])) wg /= 2;
    return wg;
}

/* ---------------------------------------------------------------------------------- rope */

void vkllm__rope_turns(const float *inv_freq, uint32_t n_rot, uint32_t *out) {
    const double h = 0.15915494309189535, l = -9.839338337591243e-18; /* 1 / (2 pi) = h + l */
    for (uint32_t i = 0; i < n_rot / 2; i++) {
        double g = inv_freq[i];
        double p = g * h, t = fma(g, h, -p) + g * l; /* g / (2 pi) = p + t to ~1e-32 */
        double a = ldexp(p - floor(p), 32);          /* the fraction of a turn, in 2^-32 turns: exact */
        double hi = floor(a), lo = floor(ldexp(a - hi + ldexp(t, 32), 32));
        if (lo < 0) lo += 4294967296.0, hi -= 1; /* t's carry into the high word, either way */
        if (lo >= 4294967296.0) lo -= 4294967296.0, hi += 1;
        hi = hi < 0 ? hi + 4294967296.0 : hi >= 4294967296.0 ? hi - 4294967296.0 : hi;
        out[2 * i] = (uint32_t)lo, out[2 * i + 1] = (uint32_t)hi;
    }
}

/* OK when turns covers n_rot/2 pairs (one word at least: the binding is never empty). */
static vkllm_status need_turns(const char *op, struct vkllm__view turns, uint32_t n_rot) {
    return vkllm__op_need(op, "turns", turns, VKLLM_MAX((uint64_t)n_rot / 2 * 8, 4));
}

vkllm_status vkllm__op_rope(struct vkllm__cmd *c, struct vkllm__view x, struct vkllm__view pos,
                            struct vkllm__view turns, uint32_t n, uint32_t n_head, uint32_t head_dim, uint32_t n_rot,
                            int neox, float mscale) {
    if (n == 0 || n_head == 0 || head_dim == 0 || n_rot % 2 || n_rot > head_dim)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "rope: n=%u n_head=%u head_dim=%u n_rot=%u", n, n_head,
                          head_dim, n_rot);
    uint64_t elems = (uint64_t)n * n_head * head_dim;
    if (elems > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "rope: %llu elements (limit 2^32)", (unsigned long long)elems);
    vkllm_status st;
    if ((st = vkllm__op_need("rope", "x", x, elems * 4)) || (st = vkllm__op_need("rope", "pos", pos, 4)) ||
        (st = need_turns("rope", turns, n_rot)))
        return st;
    if (n_rot == 0) return VKLLM_STATUS_OK; /* nothing rotates */
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_rope pc = {n, n_head, head_dim, n_rot, neox ? 1u : 0u, mscale};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_ROPE_F32,
        .n_spec = 1,
        .spec = {fit_wg(gpu, 128)},
        .n_bind = 3,
        .bind = {vkllm__bind(x), vkllm__bind(pos), vkllm__bind(turns)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "rope",
        /* per rotated pair: its two values and frequency (turns), the angle's sin and cos from
         * the turns (12 flops), the magnitude (2) and the rotation (6) */
        .cost = {.bytes_read = (uint64_t)n * n_head * n_rot * 4 + (uint64_t)n_rot / 2 * 8 + 4,
                 .bytes_written = (uint64_t)n * n_head * n_rot * 4,
                 .flops = (uint64_t)n * n_head * (n_rot / 2) * 20},
    };
    vkllm__gpu_grid_1d(gpu, (uint64_t)n * n_head * (n_rot / 2), d.spec[0], d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

/* ---------------------------------------------------------------------- rope + kv store */

/* A paged cache's table and pool (or a ring / the context's own rows when not paged) make sense:
 * rows within 32-bit word indices, whole blocks in the pool, a table covering n_ctx positions. */
static vkllm_status pages_check(const char *op, const struct vkllm__kv_pages *pg, uint32_t n_ctx, uint32_t n_rows,
                                uint32_t width) {
    uint32_t shift = pg ? pg->shift : 0;
    if ((uint64_t)n_rows * width / 2 > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: %u x %u cache too large for 32-bit indices", op, n_rows,
                          width);
    if (!shift)
        return n_rows > n_ctx
                   ? vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: %u rows for %u positions", op, n_rows, n_ctx)
                   : VKLLM_STATUS_OK;
    if (shift > 16 || n_rows % (1u << shift))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: a pool of %u rows in blocks of 2^%u", op, n_rows, shift);
    uint64_t blocks = ((uint64_t)n_ctx + (1u << shift) - 1) >> shift;
    return vkllm__op_need(op, "block table", pg->table, blocks * 4);
}

vkllm_status vkllm__op_rope_kv(struct vkllm__cmd *c, struct vkllm__view q, struct vkllm__view k, struct vkllm__view v,
                               struct vkllm__view pos, struct vkllm__view turns, struct vkllm__view kcache,
                               struct vkllm__view vcache, const struct vkllm__rope_kv_shape *s) {
    uint32_t n = s->n, width = s->n_head_kv * s->head_dim;
    if (n == 0 || s->n_head == 0 || s->n_head_kv == 0 || s->head_dim == 0 || s->head_dim % 2 || s->n_rot % 2 ||
        s->n_rot > s->head_dim || s->n_ctx == 0)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "rope_kv: n=%u heads=%u/%u head_dim=%u (even) n_rot=%u n_ctx=%u", n, s->n_head, s->n_head_kv,
                          s->head_dim, s->n_rot, s->n_ctx);
    uint64_t per_tok = (uint64_t)s->n_head * (s->n_rot / 2) + width, qe = (uint64_t)n * s->n_head * s->head_dim;
    if ((uint64_t)n * per_tok > UINT32_MAX || qe > UINT32_MAX || (uint64_t)s->n_ctx * width / 2 > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "rope_kv: too large for 32-bit indices");
    vkllm_status st;
    uint32_t n_rows = s->n_rows ? s->n_rows : s->n_ctx, page = s->pages.shift;
    if ((st = pages_check("rope_kv", &s->pages, s->n_ctx, n_rows, width))) return st;
    if ((s->k_q8 || s->v_q8) && width % 32)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "rope_kv: a q8_0 cache needs a width that is a multiple of 32 (%u)", width);
    uint64_t rows = (uint64_t)n * width * 4;
    uint64_t kcb = n_rows * vkllm__kv_row_bytes(width, s->k_q8), vcb = n_rows * vkllm__kv_row_bytes(width, s->v_q8);
    if ((st = vkllm__op_need("rope_kv", "q", q, qe * 4)) || (st = vkllm__op_need("rope_kv", "k", k, rows)) ||
        (st = vkllm__op_need("rope_kv", "v", v, rows)) || (st = vkllm__op_need("rope_kv", "pos", pos, 4)) ||
        (st = need_turns("rope_kv", turns, s->n_rot)) || (st = vkllm__op_need("rope_kv", "k cache", kcache, kcb)) ||
        (st = vkllm__op_need("rope_kv", "v cache", vcache, vcb)))
        return st;
    per_tok = (uint64_t)s->n_head * (s->n_rot / 2) + width / (s->k_q8 ? 32 : 2) + width / (s->v_q8 ? 32 : 2);
    static const enum vkllm__shader_id shaders[4] = {VKLLM__SHADER_ROPE_KV_F16, VKLLM__SHADER_ROPE_KV_KQ8,
                                                     VKLLM__SHADER_ROPE_KV_VQ8, VKLLM__SHADER_ROPE_KV_Q8};
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_rope_kv pc = {n,     s->n_head, s->head_dim, s->n_rot, s->neox ? 1u : 0u,
                                   width, s->n_ctx,  s->mscale,   n_rows,   page};
    uint64_t qpairs = (uint64_t)n * s->n_head * (s->n_rot / 2), kpairs = (uint64_t)n * s->n_head_kv * (s->n_rot / 2);
    struct vkllm__dispatch d = {
        .shader = shaders[(s->k_q8 ? 1 : 0) + (s->v_q8 ? 2 : 0)],
        .n_spec = 1,
        .spec = {fit_wg(gpu, 128)},
        .n_bind = 8,
        .bind = {vkllm__bind(q), vkllm__bind(k), vkllm__bind(v), vkllm__bind(pos), vkllm__bind(turns),
                 vkllm__bind(kcache), vkllm__bind(vcache), vkllm__bind(page ? s->pages.table : pos)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "rope_kv",
        /* q: its rotated pairs read and written (as rope); k and v rows read, their f16 rows
         * written; per rotated pair the angle's sin and cos (12), magnitude (2) and rotation (6),
         * k's computed once per value (its partner's angle again) */
        .cost = {.bytes_read = qpairs * 8 + 2 * rows + (uint64_t)s->n_rot / 2 * 8 + 4,
                 .bytes_written =
                     qpairs * 8 + n * (vkllm__kv_row_bytes(width, s->k_q8) + vkllm__kv_row_bytes(width, s->v_q8)),
                 .flops = qpairs * 20 + kpairs * 2 * 20},
    };
    vkllm__gpu_grid_1d(gpu, (uint64_t)n * per_tok, d.spec[0], d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

/* ------------------------------------------------------------------------------ kv store */

vkllm_status vkllm__op_kv_store(struct vkllm__cmd *c, struct vkllm__view cache, struct vkllm__view src,
                                struct vkllm__view pos, uint32_t n, uint32_t width, uint32_t n_ctx, uint32_t n_rows) {
    return vkllm__op_kv_store_q(c, cache, src, pos, n, width, n_ctx, n_rows, 0, NULL);
}

vkllm_status vkllm__op_kv_store_q(struct vkllm__cmd *c, struct vkllm__view cache, struct vkllm__view src,
                                  struct vkllm__view pos, uint32_t n, uint32_t width, uint32_t n_ctx, uint32_t n_rows,
                                  int q8, const struct vkllm__kv_pages *pages) {
    return vkllm__op_kv_store_cols(c, cache, src, pos, n, width, width, 0, n_ctx, n_rows, q8, pages);
}

vkllm_status vkllm__op_kv_store_cols(struct vkllm__cmd *c, struct vkllm__view cache, struct vkllm__view src,
                                     struct vkllm__view pos, uint32_t n, uint32_t width, uint32_t src_stride,
                                     uint32_t src0, uint32_t n_ctx, uint32_t n_rows, int q8,
                                     const struct vkllm__kv_pages *pages) {
    if (!n_rows) n_rows = n_ctx;
    uint32_t page = pages ? pages->shift : 0;
    if (q8 && width % 32)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "kv_store: a q8_0 cache needs a width that is a multiple of 32 (%u)", width);
    if (n == 0 || width == 0 || width % 2 || n_ctx == 0 || src0 % 2 || (uint64_t)src0 + width > src_stride)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "kv_store: n=%u width=%u (must be even) columns %u.. of rows of %u n_ctx=%u", n, width, src0,
                          src_stride, n_ctx);
    if ((uint64_t)n * src_stride > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "kv_store: %u x %u rows too large for 32-bit indices", n,
                          src_stride);
    vkllm_status st;
    if ((st = pages_check("kv_store", pages, n_ctx, n_rows, width))) return st;
    if ((st = vkllm__op_need("kv_store", "cache", cache, n_rows * vkllm__kv_row_bytes(width, q8))) ||
        (st = vkllm__op_need("kv_store", "src", src, ((uint64_t)(n - 1) * src_stride + src0 + width) * 4)) ||
        (st = vkllm__op_need("kv_store", "pos", pos, 4)))
        return st;
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct vkllm__pc_kv_store pc = {n, width, n_ctx, n_rows, page, src_stride, src0};
    struct vkllm__dispatch d = {
        .shader = q8 ? VKLLM__SHADER_KV_STORE_Q8 : VKLLM__SHADER_KV_STORE_F16,
        .n_spec = 1,
        .spec = {fit_wg(gpu, 128)},
        .n_bind = 4,
        .bind = {vkllm__bind(src), vkllm__bind(pos), vkllm__bind(cache), vkllm__bind(page ? pages->table : pos)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "kv_store",
        .cost = {.bytes_read = (uint64_t)n * width * 4 + 4, .bytes_written = n * vkllm__kv_row_bytes(width, q8)},
    };
    vkllm__gpu_grid_1d(gpu, (uint64_t)n * (width / (q8 ? 32 : 2)), d.spec[0], d.groups);
    return vkllm__cmd_dispatch(c, &d);
}

/* ----------------------------------------------------------------------------- attention */

/* How one attention call is cut: rows = qt queries x hg heads per workgroup (the heads share a
 * kv head), the O-update and softmax thread layouts (spec constants of attn.comp), and the
 * decode split over the cache. */
struct attn_plan {
    int tb;  /* 1: attn_tb.comp (wg = hg * qt lanes, blk positions per block), 0: attn.comp */
    int dec; /* attn.comp's walk (attn_decode.glsl: attn_split_*; npt key groups, rs their lanes, rpt B) */
    uint32_t wg, qt, hg, npt, rs, rpt, tpr, blk;
    uint32_t split_len, n_split; /* n_split 1: no split, no reduce */
    int sg;                      /* the walk's partial scores added by subgroup operations (attn_split_sg_*) */
    uint32_t sgreq;              /* ... in full subgroups of this size (0: the device's one size) */
};

/* Rows of the cache: a sliding-window layer's ring, or n_ctx. */
static uint32_t attn_rows(const struct vkllm__attn_shape *s) { return s->n_rows ? s->n_rows : s->n_ctx; }

static uint32_t attn_shared_bytes(uint32_t rows, uint32_t hd, uint32_t wg) {
    uint32_t quads = (hd + 3) / 4;
    return 4 * (2 * rows * quads * 4 + rows * wg + wg + 3 * rows);
}

/* The decode kernel's (shaders/include/attn_decode.glsl) with ng key groups of ds lanes: the
 * lanes' partial scores and the key groups' scores (ds > 1), each key group's max, sum and output. */
static uint32_t dec_shared_bytes(uint32_t rows, uint32_t hd, uint32_t ds, uint32_t ng, uint32_t blk) {
    uint32_t chunks = (hd + 7) / 8, rb = rows * blk;
    return 4 * ((ds > 1 ? (ng * ds + ng) * rb : 2) + 2 * ng * rows + ng * rows * chunks * 8);
}

/* The walk's lanes per key group on GPUs: a power of two >= the head row's 8-value chunks (each
 * lane then holds one chunk of each query and output), at most wg; or the tuning's attn_lanes
 * (> 0), rounded down to a power of two. */
static uint32_t dec_lanes(uint32_t hd, uint32_t wg, long forced) {
    uint32_t ds = 1;
    if (forced > 0)
        while (ds * 2 <= (uint64_t)forced && ds * 2 <= wg) ds *= 2;
    else
        while (ds < (hd + 7) / 8 && ds < wg) ds *= 2;
    return ds;
}

/* Key groups of one lane (attn_lanes 1, or -1 on a CPU device). A CPU driver runs a subgroup as
 * one SIMD vector and each subgroup operation as a loop over its lanes, so lanes that split a head
 * row spend most of a step adding their partial scores and repeating each other's softmax: on
 * lavapipe at depth 8192 (tests/bench_attn 5 lanes, medians) the walk took 18.0 ms with 8 lanes a
 * row and 4.5 ms with one. Such a workgroup is one subgroup (its SIMD vector; a wider one leaves
 * fewer rows in the shared memory that combines the key groups, and was slower). */
static int walk_one_lane(const struct vkllm__gpu *gpu) {
    long t = vkllm__gpu_tuning(gpu)->attn_lanes;
    return t == 1 || (t < 0 && vkllm__gpu_info(gpu)->type == VKLLM_DEVICE_CPU);
}

/* The decode's subgroups for adding the lanes' partial scores by shuffles: where the device
 * shuffles and its subgroups (*size, of which wg is a multiple) are full, by a required size
 * (*req; the device's default where it is in range) or by being its only one. 0: shared memory. */
static int dec_subgroup(const struct vkllm_device_info *d, uint32_t wg, uint32_t *size, uint32_t *req) {
    uint32_t n = d->subgroup_size;
    *size = *req = 0;
    if (!(d->subgroup_ops & VKLLM_SUBGROUP_SHUFFLE) || !n || n > wg || wg % n || (n & (n - 1))) return 0;
    if (d->subgroup_size_control) {
        if (n < d->subgroup_size_min || n > d->subgroup_size_max) return 0;
        *req = n;
    } else if (d->subgroup_size_min && d->subgroup_size_min != d->subgroup_size_max) return 0;
    *size = n;
    return 1;
}

/* Compute units (SMs, CUs, Xe cores, shader cores) of the device, for the decode split. Vulkan
 * reports none (only vendor extensions do: VK_AMD_shader_core_properties,
 * VK_NV_shader_sm_builtins, VK_ARM_shader_core_properties), so this is a per-vendor estimate of a
 * current card of each kind; CPU devices: the threads that run workgroups. Too many splits cost a
 * little more reduce work, too few leave units idle. */
static uint32_t device_units(const struct vkllm__gpu *gpu) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    int discrete = d->type == VKLLM_DEVICE_DISCRETE_GPU;
    if (d->type == VKLLM_DEVICE_CPU) return VKLLM_MAX(vkllm__gpu_cpu_threads(gpu), 1u);
    switch (d->vendor_id) {
    case 0x10de: return discrete ? 128 : 16; /* NVIDIA: RTX 3090 82 SMs, 4090 128, H100/H200 132; Orin 16 */
    case 0x1002: return discrete ? 80 : 12;  /* AMD: RX 6800 60 CUs, 7900 XTX 96; APUs 8-16 */
    case 0x8086: return discrete ? 32 : 8;   /* Intel: Arc A770 32 Xe cores, B580 20; iGPUs 4-8 */
    case 0x106b: return 32;                  /* Apple: M2 Max 38 GPU cores, M1 8 */
    case 0x13b5: return 16;                  /* Arm Mali: G710 up to 16 cores */
    case 0x5143: return 6;                   /* Qualcomm Adreno */
    default: return discrete ? 64 : 16;
    }
}

/* Decode splits: about two workgroups per compute unit over all head groups (groups workgroups a
 * split), or the tuning's attn_splits; at most one per ATTN_SPLIT_MIN positions of the cache. */
static uint32_t dec_splits(const struct vkllm__gpu *gpu, uint32_t groups, uint32_t n_ctx) {
    long t = vkllm__gpu_tuning(gpu)->attn_splits;
    uint64_t n = t > 0 ? (uint64_t)t : (2ull * device_units(gpu) + groups - 1) / groups;
    uint64_t most = VKLLM_MIN(((uint64_t)n_ctx + ATTN_SPLIT_MIN - 1) / ATTN_SPLIT_MIN, 1024);
    return (uint32_t)VKLLM_MAX(1, VKLLM_MIN(n, most));
}

/* The plan of attn.comp's walk (attn_decode.glsl: attn_split_*, _sg): key groups of ds lanes
 * (GPUs: ds a power of two >= the head row's 8-value chunks, at most the subgroup where the
 * partial scores are added by subgroup operations; CPU devices: 1, in workgroups of one subgroup,
 * walk_one_lane), rows = hg query heads x qt queries (one query for the decode), at most
 * ATTN_DEC_ROWS (GPUs: ATTN_DEC_ROWS_GPU), as shared memory allows; the decode's splits. */
static vkllm_status walk_plan(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s, uint32_t n_head_all,
                              struct attn_plan *pl) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    uint32_t wg = fit_wg(gpu, ATTN_WG), ds = 1, sgs = 0, req = 0, n = d->subgroup_size;
    int one = walk_one_lane(gpu), sg = 0;
    if (one && d->type == VKLLM_DEVICE_CPU && n && n <= wg && !(n & (n - 1))) wg = n;
    if (!one) { /* (one lane: nothing added across lanes, no subgroup operation) */
        ds = dec_lanes(s->head_dim, wg, vkllm__gpu_tuning(gpu)->attn_lanes);
        sg = dec_subgroup(d, wg, &sgs, &req);
        if (sg) ds = VKLLM_MIN(ds, sgs);
    }
    uint32_t most = d->type == VKLLM_DEVICE_CPU ? ATTN_DEC_ROWS : ATTN_DEC_ROWS_GPU;
    if (one) most = VKLLM_MIN(most, VKLLM_MAX(1u, ATTN_ONE_LANE_VALUES / s->head_dim));
    uint32_t ng = wg / ds, rows = VKLLM_MIN(most, wg), group = s->n_head / s->n_head_kv;
    while (rows > 0 && dec_shared_bytes(rows, s->head_dim, sg ? 1 : ds, ng, ATTN_DEC_BLOCK) > d->max_shared_memory)
        rows--;
    if (rows == 0)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "attention: head_dim %u needs more shared memory than %u bytes",
                          s->head_dim, d->max_shared_memory);
    pl->dec = 1;
    pl->wg = wg;
    pl->sg = sg;
    pl->sgreq = req;
    pl->hg = 1;
    for (uint32_t g = 1; g <= VKLLM_MIN(group, rows); g++)
        if (group % g == 0) pl->hg = g;
    pl->qt = s->n == 1 ? 1 : VKLLM_MAX(1u, VKLLM_MIN(s->n, rows / pl->hg));
    pl->npt = ng;
    pl->rs = ds;
    pl->rpt = ATTN_DEC_BLOCK;
    pl->tpr = 0;
    pl->split_len = 0; /* the split length is data (attn_split.glsl) */
    pl->n_split = s->n == 1 ? dec_splits(gpu, n_head_all / pl->hg, s->n_ctx) : 1;
    if ((s->n + pl->qt - 1) / pl->qt > d->max_workgroup_count[1] || s->n_head / pl->hg > d->max_workgroup_count[2] ||
        pl->n_split > d->max_workgroup_count[0])
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "attention: grid too large for the device (n=%u)", s->n);
    return VKLLM_STATUS_OK;
}

/* attn.comp's plan for shape s (one part of a cache split by kv heads: n_head_all the query heads
 * of all parts, which q, o and the partials hold): the decode's walk, or for a prefill the
 * cooperative-matrix kernel's cut (op_attention takes the walk, walk_plan, where cm_choice says no). */
static vkllm_status attn_plan(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s, uint32_t n_head_all,
                              struct attn_plan *pl) {
    if (!s || s->n == 0 || s->n_head == 0 || s->n_head_kv == 0 || s->n_head % s->n_head_kv || s->head_dim == 0 ||
        s->head_dim % 2 || s->n_ctx == 0)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "attention: n=%u n_head=%u n_head_kv=%u head_dim=%u (must be even) n_ctx=%u", s ? s->n : 0,
                          s ? s->n_head : 0, s ? s->n_head_kv : 0, s ? s->head_dim : 0, s ? s->n_ctx : 0);
    vkllm_status st = pages_check("attention", &s->pages, s->n_ctx, attn_rows(s), s->n_head_kv * s->head_dim);
    if (st) return st;
    if ((uint64_t)attn_rows(s) * s->n_head_kv * s->head_dim > UINT32_MAX ||
        (uint64_t)s->n * n_head_all * (s->head_dim + 2) * (s->n_ctx / ATTN_SPLIT_MIN + 1) > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "attention: shape too large for 32-bit indices");
    if ((s->k_q8 || s->v_q8) && (s->head_dim % 4 || s->n_head_kv * s->head_dim % 32))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "attention: a q8_0 cache needs head_dim %% 4 == 0 and a width "
                          "that is a multiple of 32 (head_dim %u, %u kv heads)",
                          s->head_dim, s->n_head_kv);
    *pl = (struct attn_plan){0};
    if (s->n == 1) return walk_plan(gpu, s, n_head_all, pl);
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    pl->wg = fit_wg(gpu, ATTN_WG);
    uint32_t rows = VKLLM_MIN(ATTN_MAX_ROWS, pl->wg);
    while (rows > 0 && attn_shared_bytes(rows, s->head_dim, pl->wg) > d->max_shared_memory) rows--;
    if (rows == 0) return walk_plan(gpu, s, n_head_all, pl); /* no cooperative matrices either */
    uint32_t group = s->n_head / s->n_head_kv;
    pl->hg = 1;
    for (uint32_t g = 1; g <= VKLLM_MIN(group, rows); g++)
        if (group % g == 0) pl->hg = g;
    pl->qt = VKLLM_MIN(s->n, rows / pl->hg);
    pl->tpr = pl->wg / (pl->qt * pl->hg);
    pl->split_len = s->n_ctx; /* one workgroup over the cache */
    pl->n_split = 1;
    if ((s->n + pl->qt - 1) / pl->qt > d->max_workgroup_count[1] || s->n_head / pl->hg > d->max_workgroup_count[2])
        return walk_plan(gpu, s, n_head_all, pl);
    return VKLLM_STATUS_OK;
}

/* --- attn.comp by cooperative matrices (ATTN_CM) --- */

int vkllm__attn_coopmat_can(const struct vkllm_device_info *d, int emulated) {
    uint32_t sg = d ? vkllm__coopmat_subgroup(d) : 0;
    if (!sg || !d->fp16_arith || sg > ATTN_WG || ATTN_WG % sg) return 0;
    if (emulated) return sg >= 4;
    return d->cooperative_matrix && vkllm__coopmat_offers(d, 16, 16, 16);
}

/* Shared memory of attn.comp's ATTN_CM variant (see its declarations): queries, the tile's K/V
 * rows and probabilities in f16 (head_dim padded to 16, rows to 16), P V and the scores in f32,
 * the running output, the softmax's reduction and row state (the emulation's accumulators are
 * private). */
static uint64_t cm_shared_bytes(uint32_t rows, uint32_t hd, uint32_t wg) {
    uint64_t hdp = (hd + 15) / 16 * 16, quads = (hd + 3) / 4;
    uint64_t b = 16 * hdp * 2 + wg * hdp * 2 + 16ull * wg * 2 + 16 * hdp * 4 + 16ull * wg * 4 + rows * quads * 16 +
                 wg * 4 + 3ull * rows * 4;
    return b;
}

/* The ATTN_CM variant for a prefill (more than one query, not split, attn.comp's plan): 1, or 2
 * for its emulation (the tuning's attn_coopmat=2; f16 or q8_0 caches alike), 0 where the tuning
 * or the device says no. By default where the matmul's cooperative matrices are on by default. */
static int cm_choice(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s, const struct attn_plan *pl) {
    long t = vkllm__gpu_tuning(gpu)->attn_coopmat;
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    if (t == 0 || pl->tb || pl->dec || pl->n_split != 1 || s->n < 2 || pl->wg != ATTN_WG || pl->qt * pl->hg > 16)
        return 0;
    if (t < 0 && !vkllm__matmul_coopmat_default(d)) return 0;
    int emulated = t == 2;
    if (emulated && s->k_q8 != s->v_q8) return 0;
    if (!vkllm__attn_coopmat_can(d, emulated)) return 0;
    if (cm_shared_bytes(pl->qt * pl->hg, s->head_dim, pl->wg) > d->max_shared_memory) return 0;
    return emulated ? 2 : 1;
}

/* --- the CPU-shaped kernel (attn_tb.comp) --- */

#define TB_REDUCE_WG 8       /* lanes per workgroup of attn_tb_reduce.comp */
#define TB_SPLIT_MIN_CTX 256 /* decode on a cache this long or longer is split */

/* The texel kernel is on for CPU devices unless the tuning's attn_texel is 0, and on any device
 * with 1; its work split is the tuning's attn_tb_lanes (prefill: lanes per workgroup, one 8-wide
 * SIMD chunk of lavapipe by default), _dlanes (decode), _block (cache positions per block) and
 * _splits (decode: splits of the current length). */
static int tb_wanted(const struct vkllm__gpu *gpu) {
    long on = vkllm__gpu_tuning(gpu)->attn_texel;
    if (on == 0 || on == 1) return (int)on;
    return vkllm__gpu_info(gpu)->type == VKLLM_DEVICE_CPU;
}

/* Bytes of one cache the texel kernel binds: f16, or q8_0 quants and scales. */
static uint64_t tb_cache_bytes(const struct vkllm__attn_shape *s) {
    return attn_rows(s) * vkllm__kv_row_bytes(s->n_head_kv * s->head_dim, s->k_q8);
}

/* The texel kernel's plan for shape s (already checked by attn_plan; one part of a cache split by
 * kv heads: n_head_all the query heads of all parts, which q and the partials hold), or 0 where it
 * does not apply: head rows of whole texels (head_dim % 8), q and each cache within one texel
 * binding, a kv head's query heads within one workgroup. */
static int tb_plan(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s, uint32_t n_head_all,
                   struct attn_plan *pl) {
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    if (!tb_wanted(gpu) || !bl->texel_formats || s->head_dim % 8) return 0;
    /* q8_0: K and V both, whole blocks per head row, the scales' end a whole texel */
    if (s->k_q8 != s->v_q8 ||
        (s->k_q8 && (s->head_dim % 32 || (uint64_t)attn_rows(s) * s->n_head_kv * s->head_dim / 32 % 4)))
        return 0;
    if ((uint64_t)s->n * n_head_all * s->head_dim / 4 > bl->max_texels || tb_cache_bytes(s) / 16 > bl->max_texels)
        return 0;
    uint32_t g = s->n_head / s->n_head_kv, maxwg = VKLLM_MIN(d->max_workgroup_invocations, d->max_workgroup_size[0]);
    const struct vkllm__tuning *tu = vkllm__gpu_tuning(gpu);
    long lanes = s->n == 1 ? tu->attn_tb_dlanes : tu->attn_tb_lanes;
    long blk = tu->attn_tb_block, splits = tu->attn_tb_splits;
    if (lanes < 1 || lanes > 1024 || blk < 1 || blk > 64 || splits < 1 || splits > 1024 || g > maxwg) return 0;
    /* the split length is data (from pos0): split_len 0 */
    struct attn_plan t = {.tb = 1, .hg = g, .blk = (uint32_t)blk, .n_split = 1, .split_len = 0};
    if (s->n == 1 && s->n_ctx >= TB_SPLIT_MIN_CTX) t.n_split = (uint32_t)splits;
    if ((uint64_t)t.n_split * (s->n_ctx + blk) > UINT32_MAX ||
        (uint64_t)t.n_split * s->n * n_head_all * (s->head_dim + 4) / 4 > bl->max_texels)
        return 0;
    /* lanes over queries (prefill) or splits (decode), as many as fill `lanes` with g heads each */
    uint32_t other = t.n_split > 1 ? t.n_split : s->n;
    t.qt = VKLLM_MAX(1u, VKLLM_MIN((uint32_t)lanes / g, other));
    while (t.qt > 1 && g * t.qt > maxwg) t.qt--;
    t.wg = g * t.qt;
    uint32_t tiles = (other + t.qt - 1) / t.qt;
    if (tiles > d->max_workgroup_count[t.n_split > 1 ? 0 : 1] || s->n_head_kv > d->max_workgroup_count[2]) return 0;
    *pl = t;
    return 1;
}

/* Views the texel kernel binds as texel buffers must start at texel-aligned offsets. */
static int tb_views_ok(const struct vkllm__gpu *gpu, struct vkllm__view q, struct vkllm__view k, struct vkllm__view v,
                       struct vkllm__view scratch) {
    uint64_t a = VKLLM_MAX(vkllm__gpu_bind_limits(gpu)->texel_align, 16);
    return q.offset % a == 0 && k.offset % a == 0 && v.offset % a == 0 && (!scratch.buf || scratch.offset % a == 0);
}

/* Bytes of split partials: attn_tb's rows are HD + 4 floats (whole texels), attn.comp's HD + 2. */
static uint64_t partial_bytes(const struct vkllm__attn_shape *s, const struct attn_plan *pl) {
    if (pl->n_split == 1) return 0;
    return (uint64_t)pl->n_split * s->n * s->n_head * (s->head_dim + (pl->tb ? 4 : 2)) * 4;
}

/* The shape of one part of a cache split by kv heads (s->chunk_heads): its kv heads and their
 * query heads; s itself when not split. Invalid splits are left to the callers' checks. */
static struct vkllm__attn_shape part_shape(const struct vkllm__attn_shape *s) {
    struct vkllm__attn_shape cs = *s;
    if (s->chunk_heads && s->chunk_heads < s->n_head_kv && s->n_head % s->n_head_kv == 0) {
        cs.n_head = s->n_head / s->n_head_kv * s->chunk_heads;
        cs.n_head_kv = s->chunk_heads;
    }
    cs.chunk_heads = 0;
    return cs;
}

int vkllm__attention_uses_coopmat(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s) {
    struct vkllm__attn_shape cs = part_shape(s);
    struct attn_plan pl;
    if (attn_plan(gpu, &cs, s->n_head, &pl)) return 0;
    tb_plan(gpu, &cs, s->n_head, &pl); /* views at texel-aligned offsets assumed */
    return cm_choice(gpu, &cs, &pl);
}

/* Enough for either kernel: the texel one falls back to attn.comp for views it cannot bind. The
 * partials hold every head (a split cache's parts write their heads' rows). */
uint64_t vkllm__attention_scratch_bytes(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s) {
    struct vkllm__attn_shape cs = part_shape(s);
    struct attn_plan pl, tb;
    if (attn_plan(gpu, &cs, s->n_head, &pl)) return 0;
    uint64_t bytes = partial_bytes(s, &pl);
    if (tb_plan(gpu, &cs, s->n_head, &tb)) bytes = VKLLM_MAX(bytes, partial_bytes(s, &tb));
    return bytes;
}

/* What attention costs (see struct vkllm__cost), from the plan: query i (at position pos0 + i)
 * attends to L = pos0 + i + 1 cache positions: q.k (2 HD), softmax (3) and the v update (2 HD)
 * per position and head. A workgroup (query tile t, head group) loads its queries and the K and V
 * rows of positions [0, pos0 + last query of t + 1) of its kv head; a split workgroup only those
 * of its split, and writes its rows' partials (HD values, max, sum), which the reduce reads back
 * and combines (a rescale and HD multiply-adds per split, a division per value). */
static void attn_cost(const struct vkllm__attn_shape *s, const struct attn_plan *pl, struct vkllm__cost *a,
                      struct vkllm__cost *r) {
    const uint64_t n = s->n, HD = s->head_dim, G = s->n_head / pl->hg, rows = n * s->n_head;
    const uint64_t kv_row =
        G * (vkllm__kv_row_bytes((uint32_t)HD, s->k_q8) + vkllm__kv_row_bytes((uint32_t)HD, s->v_q8));
    /* K and V of one position for every head group */
    const uint64_t per_l = (4 * HD + 3) * s->n_head; /* flops per attended position of one query */
    *a = (struct vkllm__cost){0};
    *r = (struct vkllm__cost){0};
    a->bytes_read = 4;                  /* pos */
    a->flops = per_l * n * (n + 1) / 2; /* sum of i + 1 over the queries */
    a->flops_per_pos = per_l * n;
    if (pl->n_split == 1) {
        uint64_t tiles = (n + pl->qt - 1) / pl->qt, ends = 0;
        for (uint64_t t = 0; t < tiles; t++) ends += VKLLM_MIN(n, (t + 1) * pl->qt);
        a->bytes_read += rows * HD * 4 + kv_row * ends;
        a->read_per_pos = kv_row * tiles;
        a->bytes_written = rows * HD * 4;
        return;
    }
    if (pl->tb) { /* split (one query): all n_split splits load q and write partials; the reduce reads them all */
        uint64_t part = (uint64_t)pl->n_split * rows * (HD + 4) * 4;
        a->bytes_read += (uint64_t)pl->n_split * rows * HD * 4;
        a->read_per_pos = kv_row;
        a->bytes_written = part;
        r->bytes_read = part;
        r->bytes_written = rows * HD * 4;
        r->flops = rows * (pl->n_split * (2 * HD + 3) + HD);
        return;
    }
    /* split (one query): every working split loads q and writes partials; splits are at least
     * ATTN_SPLIT_MIN long, n_split at most (attn_split.glsl) */
    a->bytes_read += kv_row;
    a->read_per_pos = kv_row;
    a->split_len = ATTN_SPLIT_MIN;
    a->max_splits = pl->n_split;
    a->read_per_split = rows * HD * 4;
    a->written_per_split = rows * (HD + 2) * 4;
    r->bytes_read = 4;
    r->bytes_written = rows * HD * 4;
    r->flops = rows * HD;
    r->split_len = ATTN_SPLIT_MIN;
    r->max_splits = pl->n_split;
    r->read_per_split = rows * (HD + 2) * 4;
    r->flops_per_split = rows * (2 * HD + 3);
}

/* f16 arithmetic in the walk (attn_split_h16_*, attn_split_sg_h16_*: attn_decode.glsl's ATTN_F16,
 * q.k per quad and the step's P V in f16, promoted to f32; the softmax and the output f32): only
 * with the tuning's attn_f16 = 1 (VKLLM_ATTN_F16=1), where the device offers shaderFloat16. Off by default: ACO already
 * feeds f16 K/V to f32 FMAs (v_fma_mix), so RADV's estimate gains only 4-10% on RDNA2/3, the f16
 * q.k sums double the end-to-end logit error on stories260K (1.6e-2 -> 3.4e-2 against the f64
 * reference, past logits' 2e-2 bar), and lavapipe runs it 10-24% slower. scripts/gpu-check.sh
 * times both on a lent GPU (docs/gpu.md). */
static int walk_f16(const struct vkllm__gpu *gpu) {
    return vkllm__gpu_info(gpu)->fp16_arith && vkllm__gpu_tuning(gpu)->attn_f16 == 1;
}

/* attn.comp's variant for the caches' types: by cooperative matrices (cm 1, emulated 2), else
 * the walk (attn_decode.glsl), its partial scores added by subgroup operations (sg) or not, in
 * f16 arithmetic (h16) or f32. */
static enum vkllm__shader_id attn_shader(const struct vkllm__attn_shape *s, int cm, int sg, int h16) {
    int i = (s->k_q8 ? 1 : 0) + (s->v_q8 ? 2 : 0);
    if (cm == 2) return s->k_q8 ? VKLLM__SHADER_ATTN_CM_EMU_Q8 : VKLLM__SHADER_ATTN_CM_EMU_F16;
    static const enum vkllm__shader_id ids[5][4] = {
        {VKLLM__SHADER_ATTN_SPLIT_F16, VKLLM__SHADER_ATTN_SPLIT_KQ8, VKLLM__SHADER_ATTN_SPLIT_VQ8,
         VKLLM__SHADER_ATTN_SPLIT_Q8},
        {VKLLM__SHADER_ATTN_SPLIT_SG_F16, VKLLM__SHADER_ATTN_SPLIT_SG_KQ8, VKLLM__SHADER_ATTN_SPLIT_SG_VQ8,
         VKLLM__SHADER_ATTN_SPLIT_SG_Q8},
        {VKLLM__SHADER_ATTN_SPLIT_H16_F16, VKLLM__SHADER_ATTN_SPLIT_H16_KQ8, VKLLM__SHADER_ATTN_SPLIT_H16_VQ8,
         VKLLM__SHADER_ATTN_SPLIT_H16_Q8},
        {VKLLM__SHADER_ATTN_SPLIT_SG_H16_F16, VKLLM__SHADER_ATTN_SPLIT_SG_H16_KQ8, VKLLM__SHADER_ATTN_SPLIT_SG_H16_VQ8,
         VKLLM__SHADER_ATTN_SPLIT_SG_H16_Q8},
        {VKLLM__SHADER_ATTN_CM_F16, VKLLM__SHADER_ATTN_CM_KQ8, VKLLM__SHADER_ATTN_CM_VQ8, VKLLM__SHADER_ATTN_CM_Q8}};
    return ids[cm ? 4 : (h16 ? 2 : 0) + (sg ? 1 : 0)][i];
}

static vkllm_status attn_check_views(const struct vkllm__attn_shape *s, uint32_t part_heads, struct vkllm__view o,
                                     struct vkllm__view q, const struct vkllm__view *k, const struct vkllm__view *v,
                                     uint32_t parts, struct vkllm__view pos) {
    uint64_t qo = (uint64_t)s->n * s->n_head * s->head_dim * 4;
    uint32_t width = part_heads * s->head_dim;
    uint64_t kb = attn_rows(s) * vkllm__kv_row_bytes(width, s->k_q8),
             vb = attn_rows(s) * vkllm__kv_row_bytes(width, s->v_q8);
    vkllm_status st;
    if ((st = vkllm__op_need("attention", "o", o, qo)) || (st = vkllm__op_need("attention", "q", q, qo)) ||
        (st = vkllm__op_need("attention", "pos", pos, 4)))
        return st;
    for (uint32_t i = 0; i < parts; i++)
        if ((st = vkllm__op_need("attention", "k_cache", k[i], kb)) ||
            (st = vkllm__op_need("attention", "v_cache", v[i], vb)))
            return st;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__op_attention(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view q,
                                 struct vkllm__view k_cache, struct vkllm__view v_cache, struct vkllm__view pos,
                                 struct vkllm__view scratch, const struct vkllm__attn_shape *s) {
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    struct attn_plan pl;
    vkllm_status st;
    /* a cache split by kv heads: each part its own cache of part.n_head_kv heads, one dispatch each */
    const struct vkllm__attn_shape part = part_shape(s);
    const uint32_t parts = part.n_head_kv ? s->n_head_kv / part.n_head_kv : 1;
    const struct vkllm__view *ks = &k_cache, *vs = &v_cache;
    if (s->chunk_heads && s->chunk_heads < s->n_head_kv) {
        if (s->n_head_kv % s->chunk_heads || !s->k_chunks || !s->v_chunks)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "attention: a cache of %u kv heads split into parts of %u "
                              "(dividing it), with their views",
                              s->n_head_kv, s->chunk_heads);
        ks = s->k_chunks, vs = s->v_chunks;
    }
    if ((st = attn_plan(gpu, &part, s->n_head, &pl))) return st;
    if ((st = attn_check_views(s, part.n_head_kv, o, q, ks, vs, parts, pos))) return st;
    int sinks = s->sinks.buf != NULL;
    if (sinks && (st = vkllm__op_need("attention", "sinks", s->sinks, (uint64_t)s->n_head * 4))) return st;
    struct vkllm__binding sk = vkllm__bind(sinks ? s->sinks : pos); /* never read without sinks */
    int tb_ok = 1;                                                  /* else (or not applying) attn.comp */
    for (uint32_t i = 0; i < parts; i++) tb_ok = tb_ok && tb_views_ok(gpu, q, ks[i], vs[i], scratch);
    if (tb_ok) tb_plan(gpu, &part, s->n_head, &pl);
    int split = pl.n_split > 1;
    uint64_t pb = partial_bytes(s, &pl);
    if (split && (st = vkllm__op_need("attention", "scratch", scratch, pb))) return st;
    int cm = pl.tb ? 0 : cm_choice(gpu, &part, &pl);
    if (!pl.tb && !pl.dec && !cm && (st = walk_plan(gpu, &part, s->n_head, &pl))) return st;
    struct vkllm__cost cost, rcost, unused;
    attn_cost(&part, &pl, &cost, &unused); /* one part's dispatch */
    attn_cost(s, &pl, &unused, &rcost);    /* the reduce over all heads */
    struct vkllm__pc_attn pc = {s->n,       s->n_head,     s->n_head_kv, s->n_ctx,        s->scale,     pl.split_len,
                                pl.n_split, s->window,     s->softcap,   (uint32_t)sinks, attn_rows(s), s->pages.shift,
                                0,          part.n_head_kv};
    struct vkllm__binding bt = vkllm__bind(s->pages.shift ? s->pages.table : pos); /* never read unpaged */
    if (pl.tb) {
        uint64_t qb = (uint64_t)s->n * s->n_head * s->head_dim * 4, kb = tb_cache_bytes(&part);
        uint32_t tiles = ((split ? pl.n_split : s->n) + pl.qt - 1) / pl.qt;
        for (uint32_t i = 0; i < parts; i++) {
            pc.kv_h0 = i * part.n_head_kv;
            struct vkllm__dispatch d = {
                .shader = s->k_q8 ? (split ? VKLLM__SHADER_ATTN_TB_SPLIT_Q8 : VKLLM__SHADER_ATTN_TB_Q8)
                                  : (split ? VKLLM__SHADER_ATTN_TB_SPLIT_F16 : VKLLM__SHADER_ATTN_TB_F16),
                .n_spec = 5,
                .spec = {pl.wg, s->head_dim, pl.hg, pl.qt, pl.blk},
                .n_bind = 7,
                .bind = {{q.buf, q.offset, qb},
                         {ks[i].buf, ks[i].offset, kb},
                         {vs[i].buf, vs[i].offset, kb},
                         vkllm__bind(pos),
                         vkllm__bind(split ? scratch : o),
                         sk,
                         bt},
                .push = &pc,
                .push_size = sizeof pc,
                .label = split ? "attn_tb_split" : "attn_tb",
                .groups = {split ? tiles : 1, split ? 1 : tiles, part.n_head_kv},
                .cost = cost,
            };
            if ((st = vkllm__cmd_dispatch(c, &d))) return st;
        }
        if (!split) return VKLLM_STATUS_OK;
        struct vkllm__pc_attn_reduce rp = {s->n, s->n_head, s->head_dim, s->n_ctx, 0, pl.n_split, (uint32_t)sinks};
        struct vkllm__dispatch r = {
            .shader = VKLLM__SHADER_ATTN_TB_REDUCE_F32,
            .n_spec = 2,
            .spec = {TB_REDUCE_WG, s->head_dim},
            .n_bind = 3,
            .bind = {{scratch.buf, scratch.offset, pb}, vkllm__bind(o), sk},
            .push = &rp,
            .push_size = sizeof rp,
            .label = "attn_tb_reduce",
            .cost = rcost,
        };
        vkllm__gpu_grid_1d(gpu, (uint64_t)s->n * s->n_head * (s->head_dim / 4), TB_REDUCE_WG, r.groups);
        return vkllm__cmd_dispatch(c, &r);
    }
    for (uint32_t i = 0; i < parts; i++) {
        pc.kv_h0 = i * part.n_head_kv;
        struct vkllm__dispatch d = {
            .shader = attn_shader(s, cm, pl.sg, !cm && walk_f16(gpu)),
            .subgroup = pl.sg ? pl.sgreq : 0,
            .n_spec = 8,
            .spec = {pl.wg, s->head_dim, pl.qt, pl.hg, pl.npt, pl.rs, pl.rpt, pl.tpr},
            .n_bind = 7,
            .bind = {vkllm__bind(q), vkllm__bind(ks[i]), vkllm__bind(vs[i]), vkllm__bind(pos),
                     vkllm__bind(split ? scratch : o), sk, bt},
            .push = &pc,
            .push_size = sizeof pc,
            .label = split ? "attn_split" : "attn",
            .groups = {pl.n_split, (s->n + pl.qt - 1) / pl.qt, part.n_head / pl.hg},
            .cost = cost,
        };
        if (cm) { /* specialization constants 4 5 6: the matrices' 16 x 16 x 16; full subgroups */
            d.spec[4] = d.spec[5] = d.spec[6] = 16;
            d.subgroup = vkllm__gpu_info(gpu)->subgroup_size;
            d.label = cm == 2 ? "attn_cm_emu" : "attn_cm";
        }
        if ((st = vkllm__cmd_dispatch(c, &d))) return st;
    }
    if (!split) return VKLLM_STATUS_OK;
    struct vkllm__pc_attn_reduce rp = {s->n, s->n_head, s->head_dim, s->n_ctx, s->window, pl.n_split, (uint32_t)sinks};
    struct vkllm__dispatch r = {
        .shader = VKLLM__SHADER_ATTN_REDUCE_F32,
        .n_spec = 1,
        .spec = {fit_wg(gpu, REDUCE_WG)},
        .n_bind = 4,
        .bind = {vkllm__bind(scratch), vkllm__bind(pos), vkllm__bind(o), sk},
        .push = &rp,
        .push_size = sizeof rp,
        .label = "attn_reduce",
        .cost = rcost,
    };
    vkllm__gpu_grid_1d(gpu, (uint64_t)s->n * s->n_head, 1, r.groups);
    return vkllm__cmd_dispatch(c, &r);
}

/* -------------------------------------------------------------------------------- argmax */

vkllm_status vkllm__op_argmax(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, uint32_t n) {
    if (n == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "argmax: n=0");
    vkllm_status st;
    if ((st = vkllm__op_need("argmax", "x", x, (uint64_t)n * 4)) || (st = vkllm__op_need("argmax", "o", o, 4)))
        return st;
    struct vkllm__pc_argmax pc = {n};
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_ARGMAX_F32,
        .n_spec = 1,
        .spec = {fit_wg(vkllm__cmd_gpu(c), ARGMAX_WG)},
        .n_bind = 2,
        .bind = {vkllm__bind(x), vkllm__bind(o)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "argmax",
        .groups = {1, 1, 1},
        .cost = {.bytes_read = (uint64_t)n * 4, .bytes_written = 4, .flops = n},
    };
    return vkllm__cmd_dispatch(c, &d);
}
