/* check.h - the op-case registry: every device op checked against the scalar reference
 * (runtime/ref) on seeded random inputs, in the spirit of ggml's test-backend-ops and ncnn's
 * test_layer. One table of ops (name, runner, bound); one case struct for all of them; case
 * lists made by one generator per op. `vkllm selftest` runs the short lists (every op and every
 * variant, on a user's own GPU and driver); the op tests run the long ones (awkward shapes, every
 * type, chunked bindings, every work split) and the same runners.
 *
 * A variant is a set of tuning knobs (base/tuning.h) applied for the case on top of the
 * device's: "matvec_nt=8,matvec_sg=0" runs the shared-memory reduction, "max_binding=4096" binds
 * W in chunks. The runner restores the device's tuning afterwards. */
#ifndef VKLLM_CHECK_H
#define VKLLM_CHECK_H

#include "gpu.h"

/* X(op, name, measure, bound, runner): the runner is vkllm__chk_<runner> (check_impl.h); the
 * measure the bound applies to:
 *   max_rel  max |gpu - ref| / |ref| over entries with |ref| > 1e-6
 *   max_abs  max |gpu - ref|
 *   nmse     sum (gpu - ref)^2 / sum ref^2 (matrix products: the reference dequantizes the very
 *            same bytes, so only the f32 summation order differs)
 *   wrong    entries that differ at all (exact ops)
 * Where exp() is used the bounds are looser: GPUs' exp is not correctly rounded. RoPE uses no
 * driver transcendental (shaders/include/rope_angle.glsl): about an fp32 ulp at any position.
 * The runner also fails a case on anything else that is wrong (a NaN, a write past the output, a
 * batched column that differs from the column alone, the wrong kernel), with a detail line. */
#define VKLLM__OPS(X)                                           \
    X(ADD, "add", "max_rel", 1e-6, elementwise)                 \
    X(MUL, "mul", "max_rel", 1e-6, elementwise)                 \
    X(SILU_MUL, "silu_mul", "max_rel", 1e-4, elementwise)       \
    X(GELU_MUL, "gelu_mul", "max_rel", 1e-4, elementwise)       \
    X(SWIGLU_OAI, "swiglu_oai", "max_rel", 1e-4, elementwise)   \
    X(SOFTCAP, "softcap", "max_abs", 1e-5, elementwise)         \
    X(RMSNORM, "rmsnorm", "max_rel", 1e-4, elementwise)         \
    X(ADD_RMSNORM, "add_rmsnorm", "max_rel", 1e-4, elementwise) \
    X(SOFTMAX, "softmax", "max_abs", 1e-5, elementwise)         \
    X(MATVEC, "matvec", "nmse", 1e-10, matvec)                  \
    X(MATVEC_TB, "matvec_tb", "nmse", 1e-10, matvec_tb)         \
    X(MATVEC_GLU, "matvec_glu", "nmse", 1e-9, matvec_glu)       \
    X(MATMUL, "matmul", "nmse", 1e-9, matmul)                   \
    X(GET_ROWS, "get_rows", "nmse", 1e-12, get_rows)            \
    X(ROPE, "rope", "max_abs", 2e-6, rope)                      \
    X(KV_STORE, "kv_store", "wrong", 0, kv_store)               \
    X(ROPE_KV, "rope_kv", "max_abs", 2e-6, rope_kv)             \
    X(ATTENTION, "attention", "max_abs", 1e-4, attention)       \
    X(ARGMAX, "argmax", "wrong", 0, argmax)                     \
    X(MATVEC_ID, "matvec_id", "nmse", 1e-10, matvec_id)         \
    X(MOE_ROUTE, "moe_route", "max_abs", 1e-5, moe_route)       \
    X(MOE_SUM, "moe_sum", "max_abs", 1e-5, moe_sum)             \
    X(MOE_ADD_ID, "moe_add_id", "max_rel", 1e-6, moe_add_id)

enum vkllm__op {
#define VKLLM__OP_ENUM_(op, ...) VKLLM__OP_##op,
    VKLLM__OPS(VKLLM__OP_ENUM_)
#undef VKLLM__OP_ENUM_
        VKLLM__OP_COUNT_
};

/* Input and layout flags. */
#define VKLLM__CASE_NEG_INF 0x01u    /* softmax: scattered -inf entries and one row all -inf */
#define VKLLM__CASE_LARGE 0x02u      /* magnitudes up to 1e4; softmax also a few at +-1e30 */
#define VKLLM__CASE_INPLACE 0x04u    /* add_rmsnorm: the output written over d (as the forward pass) */
#define VKLLM__CASE_NEOX 0x08u       /* rope: NeoX pairs */
#define VKLLM__CASE_OFFSET 0x10u     /* W at byte 256 of its buffer */
#define VKLLM__CASE_BOTH_PATHS 0x20u /* matvec_tb: also vkllm__op_matvec with the texel path on and off */
#define VKLLM__CASE_UPLOADED 0x40u   /* W made by vkllm__dtensor_upload, as models load */
#define VKLLM__CASE_SINKS 0x80u      /* attention: a sink score per head (gpt-oss), some larger than any score */
#define VKLLM__CASE_GROUPED 0x100u   /* matvec_id: columns grouped by expert (prefill), bit-identical to ungrouped */
#define VKLLM__CASE_MAGNITUDE 0x200u /* rope, rope_kv: the rotated dims scaled by 1.25 (attn_factor, YaRN) */
#define VKLLM__CASE_RING 0x400u      /* attention with a window: the cache a ring of window + n - 1 rows */
#define VKLLM__CASE_KQ8 0x800u       /* kv_store, rope_kv, attention: the (k) cache is q8_0 */
#define VKLLM__CASE_VQ8 0x1000u      /* rope_kv, attention: the v cache is q8_0 */
#define VKLLM__CASE_PAGED 0x2000u    /* kv_store, rope_kv, attention: a pool of blocks and a block table (shuffled) */
#define VKLLM__CASE_SPLIT \
    0x4000u /* matrix ops, matvec_id: W uploaded as models load it, split into several
                                     buffers (the case's max_alloc must make it so) */
#define VKLLM__CASE_X8 \
    0x8000u /* matvec, matvec_glu, matmul: the int8-x kernel (matvec_x8) must take W;
                                     skipped where it cannot (no subgroup arithmetic or size) */
#define VKLLM__CASE_NONFINITE \
    0x10000u /* matvec: an inf in column 0 of x (a NaN in column 1): every row of those
                                         columns must come out inf or NaN, the other columns as usual;
                                         softcap, gelu_mul: extreme inputs among the others (softcap: +-inf,
                                         +-3e38; gelu: +-1e13, +-1e20, where x^3 overflows): finite, right */
#define VKLLM__CASE_COOPMAT \
    0x20000u /* matmul, attention: the cooperative-matrix kernel must run; skipped on
                                        devices without one (vkllm__matmul_coopmat_can, vkllm__attn_coopmat_can),
                                        where nothing else may skip */
#define VKLLM__CASE_PARTS \
    0x40000u /* attention: the caches split by kv heads into two buffers (a cache larger
                                      than one binding: struct vkllm__attn_shape's chunk_heads) */

#define VKLLM__CASE_RP \
    0x80000u /* matrix ops, matvec_id: W uploaded as models load it and rearranged into the 16-byte
                                   layout (vkllm__dtensor_rp_row_bytes; the case's tuning turns it on):
                                   fails where it was not */
#define VKLLM__CASE_MAX_POS 16

/* One case. Which fields an op reads:
 *   add, mul, silu_mul, gelu_mul, swiglu_oai, rmsnorm, add_rmsnorm, softmax: rows x cols (nb: add/mul's b
 *   length, 0 = all); softcap: rows x cols, nb 1 (the cap)
 *   matvec, matvec_tb, matmul, get_rows: W (rows, cols) of `type`, n columns of x (tokens, ids)
 *   matvec_glu: W (rows, cols), gate's rows over up's (rows even), one column
 *   rope: n tokens of heads x head_dim, n_rot, scale (the frequencies' factor)
 *   kv_store: n rows of heads_kv * head_dim into a cache of n_ctx rows
 *   rope_kv: n tokens of q (heads x head_dim) and k, v (heads_kv x head_dim), n_rot, a cache of n_ctx rows
 *   attention: n queries, heads / heads_kv of head_dim, a cache of n_ctx rows, window, softcap
 *   argmax: cols
 *   matvec_id: heads experts of W (rows, cols) of `type`, n tokens of nb picks each
 *   moe_route: n tokens of cols router logits, nb picks; moe_sum: n tokens of nb picks of cols;
 *   moe_add_id: n rows of cols, a bias of heads experts
 * rope, kv_store, rope_kv and attention run one recording replayed at every position of pos[0..n_pos). */
struct vkllm__op_case {
    enum vkllm__op op;
    char tuning[96]; /* the variant: "name=value,..." over the device's tuning; "": none */
    uint32_t type;   /* enum vkllm__type of W */
    uint32_t rows, cols, n, nb;
    uint32_t heads, heads_kv, head_dim, n_rot, n_ctx;
    float scale;     /* rope: frequency factor (0: 1) */
    uint32_t window; /* attention: sliding window (0: none) */
    float softcap;   /* attention: score soft-capping (0: none) */
    uint32_t flags;  /* VKLLM__CASE_* */
    uint32_t n_pos;
    uint32_t pos[VKLLM__CASE_MAX_POS];
};

struct vkllm__op_result {
    double err; /* the op's measure (see VKLLM__OPS) */
    double bound;
    double max_abs;        /* max |gpu - ref| (matrix products: over the whole output) */
    int ok;                /* err within bound and nothing else wrong */
    int skipped;           /* the device cannot run this case (detail says why); not ok either */
    char detail[192];      /* what else was wrong, or "" */
    char kernel[32];       /* the label of the first dispatch that ran */
    uint32_t dispatches;   /* recorded for the case (the last recording) */
    double gpu_ns;         /* the case's last recording, when the device has timestamps */
    uint64_t bytes, flops; /* what those dispatches declared (struct vkllm__cost) */
};

const char *vkllm__op_name(enum vkllm__op op);
const char *vkllm__op_measure(enum vkllm__op op);
double vkllm__op_bound(enum vkllm__op op);

/* "4096x3", "q8_0 1000x2048 n=3", "n=1 heads=6/2 dim=16 ctx=300" ... */
void vkllm__op_case_shape(const struct vkllm__op_case *c, char *buf, size_t n);

/* The last weight matrix a check made, kept for the next case: W depends only on its type and
 * shape (not on the case's seed), so the cases of a list that differ only in work split or
 * tuning quantize it once. Quantizing random rows to the K-quants and IQ4 types was most of
 * test_op_matvec's time. Zero-initialise; free with vkllm__op_memo_free (before the gpu). */
struct vkllm__op_memo {
    uint32_t type, m, k;
    uint64_t bytes;
    uint8_t *host;
    /* A small buffer held from the first case on: the device's shared memory block then outlives
     * each case's buffers, instead of one vkAllocateMemory and vkFreeMemory of 16 MiB per case
     * (under AddressSpaceSanitizer, which maps and poisons each anew, half of test_ops_basic's
     * time). The cases' buffers then start at varying offsets in that block. */
    struct vkllm__buffer *keep;
};
void vkllm__op_memo_free(struct vkllm__op_memo *memo);

/* Run case c on gpu (inputs seeded from seed, W from its type and shape) and compare with the
 * reference. Fails only on a device or host error, or a case the op refuses (its status); r says
 * whether it met its bound. With profile, the case's recording is timed (r->gpu_ns). memo (may
 * be NULL) keeps the last W between calls. */
vkllm_status vkllm__op_check(struct vkllm__gpu *gpu, const struct vkllm__op_case *c, uint64_t seed, int profile,
                             struct vkllm__op_memo *memo, struct vkllm__op_result *r);

/* --- case lists (cases.c) ------------------------------------------------------------------- */

struct vkllm__case_list {
    struct vkllm__op_case *v;
    size_t n, cap;
    vkllm_status st; /* OOM while adding */
};

/* Append the cases of op: short (every variant on a few shapes, for `vkllm selftest`) or full
 * (the op tests). */
void vkllm__op_cases(enum vkllm__op op, int full, struct vkllm__case_list *out);
void vkllm__case_list_add(struct vkllm__case_list *l, const struct vkllm__op_case *c);
void vkllm__case_list_free(struct vkllm__case_list *l);

#endif /* VKLLM_CHECK_H */
