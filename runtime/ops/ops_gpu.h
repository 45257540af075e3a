/* ops_gpu.h - record one op into a command list: the vocabulary forward.c is written in.
 * No Vulkan types; each function picks the shader variant, workgroup size and grid, fills the
 * push constants and calls vkllm__cmd_dispatch (which checks everything). Buffers are f32 unless
 * said otherwise; shapes in the comments are (rows, cols), cols contiguous. */
#ifndef VKLLM_OPS_GPU_H
#define VKLLM_OPS_GPU_H

#include "gpu.h"

/* A tensor view on the device: a buffer range. */
struct vkllm__view {
    const struct vkllm__buffer *buf;
    uint64_t offset; /* bytes */
    uint64_t size;   /* bytes; 0 = to the end of buf */
};

static inline struct vkllm__view vkllm__view_of(const struct vkllm__buffer *b) {
    struct vkllm__view v = {b, 0, 0};
    return v;
}

/* Bytes a view covers (size 0: to the end of its buffer; 0 past the end or without a buffer). */
static inline uint64_t vkllm__view_bytes(struct vkllm__view v) {
    if (!v.buf) return 0;
    uint64_t total = vkllm__buffer_size(v.buf);
    if (v.offset >= total) return 0;
    return v.size ? v.size : total - v.offset;
}

/* OK when view v covers at least bytes, else INVALID_ARGUMENT "op: what covers N bytes, needs M". */
vkllm_status vkllm__op_need(const char *op, const char *what, struct vkllm__view v, uint64_t bytes);

/* The binding of a whole view. */
static inline struct vkllm__binding vkllm__bind(struct vkllm__view v) {
    struct vkllm__binding b = {v.buf, v.offset, v.size};
    return b;
}

/* The work splits and paths the ops take come from the device's tuning (vkllm__gpu_tuning, see
 * base/tuning.h): tests change them per device to run every variant. */

/* --- the kernels of each weight type (kernels.c) --------------------------------------------
 * One row per type vkllm computes with: the shader of each op family for that type
 * (VKLLM__SHADER_COUNT_ where a family has none). */
struct vkllm__type_kernels {
    uint32_t type;                         /* enum vkllm__type */
    enum vkllm__shader_id matvec;          /* decode, subgroupAdd reduction */
    enum vkllm__shader_id matvec_shm;      /* decode, shared-memory reduction */
    enum vkllm__shader_id get_rows;        /* embedding lookup */
    enum vkllm__shader_id matmul;          /* prefill, tiled */
    enum vkllm__shader_id matmul_h16;      /* ... f16 shared-memory tiles (shaderFloat16) */
    enum vkllm__shader_id matmul_cm;       /* ... f16 tiles by cooperative matrices (VK_KHR_cooperative_matrix) */
    enum vkllm__shader_id matvec_tb;       /* decode on CPU devices, repacked (ops_matvec_tb.c) */
    enum vkllm__shader_id matvec_id;       /* mixture of experts: the picked experts' products, subgroupAdd */
    enum vkllm__shader_id matvec_id_shm;   /* ... shared-memory reduction */
    enum vkllm__shader_id matvec_tb_id;    /* mixture of experts on CPU devices, repacked experts */
    enum vkllm__shader_id matvec_tb_id_gg; /* ... experts in their GGUF blocks (whole texels; else COUNT_) */
    enum vkllm__shader_id matvec_x8;       /* decode on GPUs, x in int8 (matvec_x8.comp; else COUNT_) */
    enum vkllm__shader_id matvec_x8dp;     /* ... with the packed int8 dot product instruction */
    enum vkllm__shader_id matvec_id_x8;    /* the experts' products, x in int8 */
    enum vkllm__shader_id matvec_id_x8dp;  /* ... with the instruction */
    enum vkllm__shader_id matmul_id;       /* mixture-of-experts prefill, tiled over each expert's picks */
    enum vkllm__shader_id matmul_id_h16;   /* ... f16 shared-memory tiles */
    enum vkllm__shader_id matmul_id_cm;    /* ... by cooperative matrices */
};
/* The row of type; NULL (and an UNSUPPORTED last error naming op) when the type has none. */
const struct vkllm__type_kernels *vkllm__type_kernels(uint32_t type, const char *op);

/* o (n,) = a (n,) + b (nb,) repeated */
vkllm_status vkllm__op_add(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view a, struct vkllm__view b,
                           uint32_t n, uint32_t nb);
/* o (n,) = a (n,) * b (nb,) repeated */
vkllm_status vkllm__op_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view a, struct vkllm__view b,
                           uint32_t n, uint32_t nb);
/* o (nrows, ncols) = rmsnorm(x) * w (ncols,) */
vkllm_status vkllm__op_rmsnorm(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, struct vkllm__view w,
                               uint32_t ncols, uint32_t nrows, float eps);
/* The residual add fused with the next norm: x += d, then o = rmsnorm(x) * w (x, d, o all
 * (nrows, ncols)); the same numbers as vkllm__op_add then vkllm__op_rmsnorm. o may be d itself,
 * otherwise it must not overlap d or x. */
vkllm_status vkllm__op_add_rmsnorm(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x,
                                   struct vkllm__view d, struct vkllm__view w, uint32_t ncols, uint32_t nrows,
                                   float eps);
/* o (nrows, ncols) = softmax(scale * x) */
vkllm_status vkllm__op_softmax(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, uint32_t ncols,
                               uint32_t nrows, float scale);
/* o (n,) = silu(gate) * up */
vkllm_status vkllm__op_silu_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view gate,
                                struct vkllm__view up, uint32_t n);
/* o = gelu(gate) * up, GELU's tanh approximation (gemma's FFN). */
vkllm_status vkllm__op_gelu_mul(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view gate,
                                struct vkllm__view up, uint32_t n);
/* o = gpt-oss's clamped SwiGLU of gate and up (vkllm__ref_swiglu_oai). */
vkllm_status vkllm__op_swiglu_oai(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view gate,
                                  struct vkllm__view up, uint32_t n);
/* o (n,) = cap * tanh(x / cap), cap one f32 at its view (gemma2's final logits). */
vkllm_status vkllm__op_softcap(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, struct vkllm__view cap,
                               uint32_t n);

/* --- weights in their GGUF encoding ---------------------------------------------------------
 * A matrix of m rows of k elements (ggml ne = [k, m]) stored on the device exactly as in the
 * file (any compute type: F32, F16, BF16, Q8_0, Q4_0, ..., the K-quants, IQ4_*). It may be larger than
 * maxStorageBufferRange: ops then bind it in row chunks that each fit (vkllm__dtensor_chunk). */
#define VKLLM__DTENSOR_PARTS 16 /* most buffers one matrix is split into */
struct vkllm__dtensor {
    uint32_t type;      /* enum vkllm__type */
    uint64_t k;         /* elements per row (ne[0]) */
    uint64_t m;         /* rows (ne[1] * ne[2] * ne[3]) */
    uint64_t row_bytes; /* bytes per row */
    struct vkllm__buffer *buf;
    uint64_t offset; /* bytes, in buf */
    /* A matrix larger than one allocation may hold (vkllm__gpu_max_alloc) is split by rows into
     * n_parts buffers of part_rows rows each (the last one fewer), part[0] == buf; ops bind rows
     * through vkllm__dtensor_rows, in chunks (vkllm__dtensor_chunk_rows) that lie in one part.
     * n_parts 0 or 1: all of it in buf. */
    struct vkllm__buffer *part[VKLLM__DTENSOR_PARTS];
    uint32_t n_parts;
    uint64_t part_rows;
    /* CPU devices: a copy repacked for vkllm__op_matvec_tb (NULL when there is none; made by
     * vkllm__dtensor_add_tb, freed by vkllm__dtensor_free). A model's decode matrices have only
     * this copy there (buf NULL): matvec and matmul then run on it. */
    struct vkllm__buffer *tb;
    int view; /* 1: rows of another dtensor's buffer (a stacked matrix): not freed with it */
    /* 1: buf's rows are in the 16-byte layout (vkllm__dtensor_rp_row_bytes; types.h vkllm__rp_pack),
     * which every reader of buf takes through its specialization constant 7 (vkllm__spec_rp) */
    int rp;
};

/* Allocate and upload a matrix from host bytes in GGUF encoding (m rows of row_bytes); split
 * into parts where it exceeds one allocation, each part whole groups of row_group rows (an
 * expert's, for stacked experts; 1 otherwise). */
vkllm_status vkllm__dtensor_upload(struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m, const void *data,
                                   struct vkllm__dtensor *out);
vkllm_status vkllm__dtensor_upload_grouped(struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m,
                                           uint64_t row_group, const void *data, struct vkllm__dtensor *out);
/* The row bytes of the 16-byte layout (types.h vkllm__rp_row_bytes) for a matrix of type and k where
 * the device takes it (the tuning's repack: 1, or -1 on a device that is not a CPU), else 0.
 * vkllm__dtensor_upload makes such a matrix in that layout (t->rp), with rows of those bytes (the
 * file's, or longer for Q6_K rows that are not whole groups of 8 blocks), and writes data into it
 * through vkllm__dtensor_put_rows; made without data, its rows are to be written with that. */
uint64_t vkllm__dtensor_rp_row_bytes(const struct vkllm__gpu *gpu, uint32_t type, uint64_t k);
/* Write rows [r0, r0 + nr) of t from the file's rows at data (GGUF encoding): where t->rp, through a
 * temporary device buffer of at most 64 MiB and shaders/repack.comp, each submit waited for; else
 * copied as they are. */
vkllm_status vkllm__dtensor_put_rows(struct vkllm__gpu *gpu, struct vkllm__dtensor *t, uint64_t r0, uint64_t nr,
                                     const void *data);
/* Where w->rp, set specialization constant 7 (dequant.glsl's DQ_RP) of dispatch d, which reads w, to
 * 1, and the constants below it that d does not set to 0: right only for constants its shader does
 * not declare or whose default is 0 (matvec's GLU and A16), so callers set the others (matvec_x8's
 * KC, matmul's tiles). INTERNAL where d already sets constant 7. */
vkllm_status vkllm__spec_rp(struct vkllm__dispatch *d, const struct vkllm__dtensor *w);
/* The binding of rows [r0, r0 + nr) of t, which must lie in one part; the range is rounded up
 * to a multiple of 4 bytes (the shaders read 32-bit words), which the buffer must hold. */
vkllm_status vkllm__dtensor_rows(const struct vkllm__dtensor *t, uint64_t r0, uint64_t nr, const char *op,
                                 struct vkllm__binding *b);
void vkllm__dtensor_free(struct vkllm__dtensor *t);

/* Rows per chunk so that one binding covers at most the device's binding limit
 * (vkllm__gpu_max_binding), every chunk starts at an offset aligned for a storage binding and,
 * for a split matrix, chunks starting at multiples of it lie in one part.
 * VKLLM_STATUS_UNSUPPORTED when not even one row fits. */
vkllm_status vkllm__dtensor_chunk_rows(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *t, uint64_t *rows);

/* --- matrix products (ops_matvec.c, ops_matmul.c) -------------------------------------------
 * y (n, m) f32 = x (n, k) f32 @ W^T, W a dtensor (m, k). One kernel family per product for all
 * weight types, dequantizing as it reads. */

/* Decode: y (ncols, m) = x (ncols, k) @ W^T, for one token (ncols = 1) or a batch of tokens
 * decoded together (one per sequence). Each weight unit is read once for up to 8 columns, and
 * every column's result is bit-identical to what ncols = 1 gives for it (a sequence's tokens do
 * not depend on what else is in the batch). ncols > 1 needs k % 4 == 0. */
vkllm_status vkllm__op_matvec(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                              struct vkllm__view x, uint32_t ncols);

/* y (m,) = silu(gate) * up, gate = W[0:m) @ x and up = W[m:2m) @ x, W gate's rows stacked over
 * up's (2m rows): the feed-forward's two products and the SiLU in one dispatch, each value
 * bit-identical to vkllm__op_matvec of W then vkllm__op_silu_mul. One column. UNSUPPORTED where
 * vkllm__matvec_glu_applies says no (then use those two). */
vkllm_status vkllm__op_matvec_glu(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                  struct vkllm__view x);
/* Whether vkllm__op_matvec_glu takes w: not repacked for the CPU devices' texel matvec, an even
 * row count, and all of it within one storage binding. */
int vkllm__matvec_glu_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w);
/* 1 if vkllm__op_matvec (ncols columns) and vkllm__op_matvec_glu run w with x quantized to int8
 * (matvec_x8.comp: GPUs, the 4-, 5- and 8-bit types but IQ4_*; tuning matvec_x8): their results are then those of x
 * as vkllm__ref_quantize_x8 makes it. */
int vkllm__matvec_x8_applies(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t ncols);
/* 1 if vkllm__op_matvec_id (grouped: vkllm__op_matvec_id_grouped) runs the experts w with x
 * quantized to int8 (matvec_x8.comp's MATVEC_ID variants), as vkllm__ref_quantize_x8 makes it. */
int vkllm__matvec_id_x8_applies(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, int grouped);
/* 1 if vkllm__op_matmul multiplies w (storage-buffer layout) by n rows of x through vkllm__op_matvec. */
int vkllm__matmul_uses_matvec(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n);
/* 1 if it multiplies them with the f16 tiles (x and W's values rounded to f16; the scalar
 * kernel's or the cooperative matrices'). */
int vkllm__matmul_uses_h16(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n);
/* 1 if it multiplies them by cooperative matrices (matmul_cm_<type>). */
int vkllm__matmul_uses_coopmat(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n);

/* Does d offer the f16 x f16 -> f32 subgroup shape m x n x k? And the subgroup size the
 * cooperative-matrix kernels require (the device's default, with full subgroups), 0 where it
 * cannot be required. */
int vkllm__coopmat_offers(const struct vkllm_device_info *d, uint32_t m, uint32_t n, uint32_t k);
uint32_t vkllm__coopmat_subgroup(const struct vkllm_device_info *d);
struct vkllm__mm_coopmat {
    uint32_t subgroup, wg, bm, bn, bk, tm, tn, tk;
};
/* The cooperative-matrix tiling for a device and shape (n rows of x, m weight rows): the
 * subgroup size required (full subgroups), four subgroups per workgroup, BM x BN tiles of y^T
 * stepping BK, and the device's shape TM x TN x TK (f16 A and B, f32 accumulator). Returns 0
 * where the device cannot run matmul_cm (no VK_KHR_cooperative_matrix, no f16 x f16 -> f32
 * subgroup shape of sides 8 or 16, no fp16 arithmetic, no required subgroup size, too little
 * shared memory); the tuning is not consulted here. */
int vkllm__matmul_coopmat_plan(const struct vkllm_device_info *d, uint32_t n, uint64_t m,
                               struct vkllm__mm_coopmat *out);
/* vkllm__matmul_coopmat_plan, or with emulated set the plan of the emulated kernel (tests: the
 * tuning's matmul_coopmat=2, F16, Q4_K and Q5_0 weights) as if d offered 16 x 16 x 16. */
int vkllm__matmul_coopmat_can(const struct vkllm_device_info *d, uint32_t type, uint32_t n, uint64_t m, int emulated,
                              struct vkllm__mm_coopmat *out);
/* 1 where the kernel is on by default (the tuning's matmul_coopmat -1) on a device that can run
 * it: by vendor and driver, as ggml-vulkan decides (ops_matmul.c). */
int vkllm__matmul_coopmat_default(const struct vkllm_device_info *d);

/* Decode on CPU devices (lavapipe; ops_matvec_tb.c): W read from a copy repacked at load time
 * (8 rows interleaved, Q8_0/Q4_0 scales apart as f32) through uniform texel buffers, x through a
 * uniform buffer; several times faster there than storage-buffer loads. F32, F16, Q8_0 and Q4_0,
 * k a multiple of 4. Used where the device is a CPU, or where VKLLM_MATVEC_TEXEL=1 (=0: never).
 *
 * vkllm__matvec_tb_bytes: bytes of the repacked copy of an (m, k) matrix of `type` on this device,
 * 0 where the path does not apply (other types, shapes, devices, or turned off).
 * vkllm__dtensor_add_tb: make t's repacked copy from its GGUF bytes (no-op where the size is 0).
 * vkllm__matvec_tb_applies: 1 if vkllm__op_matvec_tb can run w (and, where w has both layouts,
 * the path is on).
 * vkllm__op_matvec_tb: y (ncols, m) = x (ncols, k) @ W^T, 1 <= ncols <= 8; each column's result is
 * bit-identical whatever ncols is. x's offset must be a multiple of 16 bytes. */
uint64_t vkllm__matvec_tb_bytes(const struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m);
vkllm_status vkllm__dtensor_add_tb(struct vkllm__gpu *gpu, struct vkllm__dtensor *t, const void *data);
int vkllm__matvec_tb_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w);
vkllm_status vkllm__op_matvec_tb(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 struct vkllm__view x, uint32_t ncols);
/* Prefill's product for a matrix that has only the repacked copy (on CPU devices the decode
 * matrices are loaded that way, see weights.c): y (n, m) = x (n, k) @ W^T as vkllm__op_matvec_tb
 * over groups of 8 rows of x; each row's result is bit-identical to decode's. */
vkllm_status vkllm__op_matmul_tb(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 struct vkllm__view x, uint32_t n);

/* Prefill: y (n, m) = x (n, k) @ W^T, tiled in shared memory. */
vkllm_status vkllm__op_matmul(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                              struct vkllm__view x, uint32_t n);

/* Embedding lookup: o (n, k) f32 = rows ids[0..n) of W (any weight type), ids a uint32 buffer. */
vkllm_status vkllm__op_get_rows(struct vkllm__cmd *c, struct vkllm__view o, const struct vkllm__dtensor *w,
                                struct vkllm__view ids, uint32_t n);

/* --- attention (ops_attn.c) ------------------------------------------------------------------
 * Positions come from a device buffer (a uint32 pos0 at `pos`), so a recorded decode step can be
 * replayed with a new position without re-recording. Token i of a batch is at position pos0 + i.
 * The KV cache is F16: (n_ctx, n_head_kv * head_dim) per layer for K and for V. */

/* RoPE's frequencies as the shaders take them: pair i turns by pos * inv_freq[i] (inv_freq from
 * vkllm__rope_freqs), given as inv_freq[i] / (2 pi) turns per position in 64-bit fixed point (out:
 * n_rot/2 pairs of u32, low word first; exact to 2^-64). The shaders multiply it by the position
 * in integers and evaluate sin and cos of what is left of a quarter turn by polynomials
 * (shaders/include/rope_angle.glsl): within 1.2e-7 of the exact rotation at every uint32
 * position on any driver. */
void vkllm__rope_turns(const float *inv_freq, uint32_t n_rot, uint32_t *out);

/* x (n, n_head, head_dim) rotated in place; turns (n_rot/2) u32 pairs from vkllm__rope_turns; the
 * rotated dims scaled by mscale (struct vkllm__rope's). */
vkllm_status vkllm__op_rope(struct vkllm__cmd *c, struct vkllm__view x, struct vkllm__view pos,
                            struct vkllm__view turns, uint32_t n, uint32_t n_head, uint32_t head_dim, uint32_t n_rot,
                            int neox, float mscale);

/* A paged cache (shift > 0): the cache buffer is a pool of blocks of 2^shift positions, and
 * position p is row table[p >> shift] * 2^shift + p % 2^shift (shaders/include/kv_page.glsl);
 * table: u32 block ids covering every position written or read. shift 0: not paged. */
struct vkllm__kv_pages {
    struct vkllm__view table;
    uint32_t shift;
};
#define VKLLM__KV_SHIFT 4 /* the runtime's blocks (runtime/forward/kv_cache.c): 16 positions */
#define VKLLM__KV_BLOCK (1u << VKLLM__KV_SHIFT)
/* rope on q and on k, and k and v stored into the caches (f16) at rows pos0.., in one dispatch:
 * what vkllm__op_rope on q and k then vkllm__op_kv_store of k and v do, except that k itself is not
 * rotated in place (only its cache rows are). q (n, n_head, head_dim); k, v (n, n_head_kv *
 * head_dim); the caches (n_ctx, n_head_kv * head_dim) f16; turns as vkllm__op_rope's. */
struct vkllm__rope_kv_shape {
    uint32_t n, n_head, n_head_kv, head_dim, n_rot;
    int neox;
    uint32_t n_ctx;
    float mscale;                 /* the rotated dims' magnitude, as vkllm__op_rope's */
    uint32_t n_rows;              /* rows of the caches (0: n_ctx): position p is row p % n_rows (a window's ring) */
    uint8_t k_q8, v_q8;           /* the k (v) cache is q8_0 (shaders/include/kv_q8.glsl), else f16 */
    struct vkllm__kv_pages pages; /* a paged cache: n_rows is then the pool's rows */
};
/* Bytes of one cache row of width values: f16, or q8_0 (int8 quants and an f32 scale per 32). */
static inline uint64_t vkllm__kv_row_bytes(uint32_t width, int q8) {
    return q8 ? (uint64_t)width + width / 8 : (uint64_t)width * 2;
}
vkllm_status vkllm__op_rope_kv(struct vkllm__cmd *c, struct vkllm__view q, struct vkllm__view k, struct vkllm__view v,
                               struct vkllm__view pos, struct vkllm__view turns, struct vkllm__view kcache,
                               struct vkllm__view vcache, const struct vkllm__rope_kv_shape *s);

/* cache rows of positions pos0 .. pos0+n-1 (f16) = src (n, width) f32; position p is row
 * p % n_rows (0: n_ctx). _q: the cache is q8_0 when q8 (width a multiple of 32). */
vkllm_status vkllm__op_kv_store(struct vkllm__cmd *c, struct vkllm__view cache, struct vkllm__view src,
                                struct vkllm__view pos, uint32_t n, uint32_t width, uint32_t n_ctx, uint32_t n_rows);
vkllm_status vkllm__op_kv_store_q(struct vkllm__cmd *c, struct vkllm__view cache, struct vkllm__view src,
                                  struct vkllm__view pos, uint32_t n, uint32_t width, uint32_t n_ctx, uint32_t n_rows,
                                  int q8, const struct vkllm__kv_pages *pages /* NULL: not paged */);
/* The same from columns src0 .. src0+width-1 of src's rows of src_stride floats (src0 even): a
 * cache split by kv heads (struct vkllm__attn_shape's chunk_heads) stores each part's columns. */
vkllm_status vkllm__op_kv_store_cols(struct vkllm__cmd *c, struct vkllm__view cache, struct vkllm__view src,
                                     struct vkllm__view pos, uint32_t n, uint32_t width, uint32_t src_stride,
                                     uint32_t src0, uint32_t n_ctx, uint32_t n_rows, int q8,
                                     const struct vkllm__kv_pages *pages);

/* Causal attention of n queries (token i sees cache positions 0 .. pos0+i), GQA:
 * o (n, n_head*head_dim) = softmax(q k^T * scale) v, q (n, n_head*head_dim) f32.
 * Prefill (n > 1) is flash-attention style (online softmax, no n x n_ctx score matrix);
 * decode (n = 1) splits the sequence over workgroups and reduces. scratch: at least
 * vkllm__attention_scratch_bytes(...) bytes for the split partials. */
struct vkllm__attn_shape {
    uint32_t n; /* queries in the batch */
    uint32_t n_head, n_head_kv, head_dim;
    uint32_t n_ctx;               /* rows of the cache */
    float scale;                  /* usually 1/sqrt(head_dim) */
    uint32_t window;              /* sliding window: the query at position p sees p - window + 1 .. p (0: all) */
    float softcap;                /* > 0: each scaled score s becomes softcap * tanh(s / softcap) (gemma2) */
    struct vkllm__view sinks;     /* (n_head,) f32: head h's softmax also counts the score sinks[h], which
                                   * has no value (gpt-oss's attention sinks); buf NULL: none */
    uint32_t n_rows;              /* rows of the cache (0: n_ctx): position t is row t % n_rows, a sliding-window
                                   * layer's ring of at least window + n - 1 rows */
    uint8_t k_q8, v_q8;           /* the k (v) cache is q8_0 (head_dim % 4 == 0, its width % 32 == 0); the texel
                                   * kernel takes q8_0 K and V together with head_dim % 32 == 0, else attn.comp */
    struct vkllm__kv_pages pages; /* a paged cache (shift > 0): n_rows is the pool's rows */
    /* A cache larger than one binding, split by kv heads: chunk_heads (dividing n_head_kv, 0: not
     * split) kv heads per part, part i holding heads i * chunk_heads .. as its own (n_rows,
     * chunk_heads, head_dim) cache; k_chunks / v_chunks the n_head_kv / chunk_heads parts (the
     * k_cache and v_cache arguments are then unused). One dispatch per part, one reduce. */
    uint32_t chunk_heads;
    const struct vkllm__view *k_chunks, *v_chunks;
};
uint64_t vkllm__attention_scratch_bytes(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s);
/* Attention by cooperative matrices (attn.comp's ATTN_CM: prefill, the tuning's attn_coopmat):
 * can the device run it (emulated: its emulation, attn_coopmat=2)? f16 arithmetic, full
 * subgroups of its default size dividing the 64-wide workgroup, a 16 x 16 x 16 f16 x f16 -> f32
 * shape (emulated: subgroups of 4 lanes or more). And does vkllm__op_attention take it for s
 * under the tuning in force (2: the emulation)? */
int vkllm__attn_coopmat_can(const struct vkllm_device_info *d, int emulated);
int vkllm__attention_uses_coopmat(const struct vkllm__gpu *gpu, const struct vkllm__attn_shape *s);
vkllm_status vkllm__op_attention(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view q,
                                 struct vkllm__view k_cache, struct vkllm__view v_cache, struct vkllm__view pos,
                                 struct vkllm__view scratch, const struct vkllm__attn_shape *s);

/* --- mixture of experts (ops_moe.c) --------------------------------------------------------- */
/* Per token t < n: softmax over logits (n, n_expert), the k largest into ids (n, k) (uint32; the
 * lower index first on ties), their probabilities renormalized into w (n, k): vkllm__ref_moe_route.
 * n_expert <= 1024, k <= 64. */
vkllm_status vkllm__op_moe_route(struct vkllm__cmd *c, struct vkllm__view ids, struct vkllm__view w,
                                 struct vkllm__view logits, uint32_t n, uint32_t n_expert, uint32_t k);
/* y (rows, width) += bias (n_expert, width) row ids[r] for each row r (an id >= n_expert: nothing). */
vkllm_status vkllm__op_moe_add_id(struct vkllm__cmd *c, struct vkllm__view y, struct vkllm__view bias,
                                  struct vkllm__view ids, uint32_t rows, uint32_t width, uint32_t n_expert);
/* o (n, width) = sum over j < k of w[t, j] * y[t k + j] (y (n k, width)). */
vkllm_status vkllm__op_moe_sum(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view y, struct vkllm__view w,
                               uint32_t n, uint32_t k, uint32_t width);
/* Column c < ncols of y (ncols, m) = expert ids[c] of w (n_expert stacked (m, k) matrices in GGUF
 * encoding, w->m = n_expert m; bound in chunks of whole experts where it passes one binding, one
 * dispatch each) @ x column c / x_div (columns x_stride floats apart); an id past n_expert gives
 * a zero column. Reads only the picked experts' rows. */
vkllm_status vkllm__op_matvec_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                 struct vkllm__view ids, uint32_t ncols);
/* Prefill: the columns grouped by expert first (vkllm__op_moe_group of the same ids), then each
 * workgroup multiplies one expert's rows with up to vkllm__moe_group_cols() of its columns, each
 * weight unit read once for all of them; every column's arithmetic is that of vkllm__op_matvec_id
 * (where vkllm__matmul_id_applies, below: the grouped GEMM's instead). */
vkllm_status vkllm__op_moe_group(struct vkllm__cmd *c, struct vkllm__view group, struct vkllm__view ids, uint32_t ncols,
                                 uint32_t n_expert);
vkllm_status vkllm__op_matvec_id_grouped(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                         uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                         struct vkllm__view group, uint32_t ncols);
uint32_t vkllm__moe_group_cols(void);
/* Prefill's grouped GEMM (ops_matmul.c; matmul.comp's MATMUL_ID variants, as ggml-vulkan's
 * mul_mm_id), which vkllm__op_matvec_id_grouped runs by itself where it applies: tiles of BM rows of
 * one expert by up to BN of its picks, each picked row of x fetched through the grouping and each
 * row of y written back to its pick; the grid covers an upper bound of the tiles, so nothing is
 * read back. Applies (1) where w is in a storage buffer and the tuning's matmul is tiled or forces
 * tiles, or by default on GPUs where the picks per used expert average more than
 * vkllm__moe_group_cols() (a matvec tile); not with matmul=matvec, nor by default on CPU devices.
 * *h16 (may be NULL): x and W are rounded to f16 as they are staged (f16 or cooperative-matrix
 * tiles). Each column's arithmetic is that of vkllm__op_matmul's kernel, not matvec_id's. */
int vkllm__matmul_id_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n_expert,
                             uint32_t ncols, int *h16);
vkllm_status vkllm__op_matmul_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                 struct vkllm__view group, uint32_t ncols);
/* CPU devices: the experts' products on their repacked copy (ops_matvec_tb.c), which
 * vkllm__op_matvec_id and _grouped take by themselves; group.buf NULL: ids. Whether an
 * (n_expert stacked (m / n_expert, k)) tensor of type can be repacked for it: */
int vkllm__matvec_tb_id_fits(const struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m, uint32_t n_expert);
/* 1 where vkllm__op_matvec_tb_id reads experts w without a repacked copy in their GGUF encoding
 * (types whose blocks are whole texels: Q4_K, Q5_K; CPU devices). */
int vkllm__matvec_tb_gg_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w);
vkllm_status vkllm__op_matvec_tb_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                    uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                    struct vkllm__view ids, struct vkllm__view group, uint32_t ncols);
uint32_t vkllm__moe_group_tiles(uint32_t ncols, uint32_t n_expert);
/* Experts of w (n_expert stacked matrices) per binding, whole ones, and the dispatches (chunks) that
 * makes; an error naming op where one expert exceeds a binding or a split falls inside one. */
vkllm_status vkllm__moe_expert_chunks(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n_expert,
                                      const char *op, uint64_t *per, uint32_t *n_chunks);
/* Bytes of the grouping of ncols columns over n_expert experts. */
uint64_t vkllm__moe_group_bytes(uint32_t ncols, uint32_t n_expert);

/* out (uint32 at o) = index of the largest of x (n,) f32 (the first on ties). */
vkllm_status vkllm__op_argmax(struct vkllm__cmd *c, struct vkllm__view o, struct vkllm__view x, uint32_t n);

/* --- x quantized to int8 once per step (matvec_x8.comp's X_Q8 variants; ops_matvec.c) ----------
 * The forward pass owns the buffer: it quantizes an activation once with vkllm__op_quantize_x8 (a
 * dispatch), then hands the buffer to every product of that activation; each product that runs
 * matvec_x8 reads it instead of quantizing x in every workgroup, and gives the same bits. Products
 * that do not run matvec_x8 ignore it. */
/* Groups of 128 elements (4 blocks of 32, 160 bytes: shaders/include/quant_x8.glsl) per column of
 * k elements, and the bytes of ncols such columns. */
uint64_t vkllm__xq8_col_groups(uint64_t k);
uint64_t vkllm__xq8_bytes(uint64_t k, uint64_t ncols);

/* xq = x (ncols columns of k elements, one after another; k % 32 == 0) quantized as matvec_x8
 * quantizes it (vkllm__ref_quantize_x8's rounding), column j at group j * vkllm__xq8_col_groups(k).
 * xq's offset must be aligned for a storage binding. */
vkllm_status vkllm__op_quantize_x8(struct vkllm__cmd *c, struct vkllm__view xq, struct vkllm__view x, uint32_t k,
                                   uint32_t ncols);

/* 1 where the forward pass quantizes x once per step for these products (the tuning's matvec_xq). */
int vkllm__matvec_xq_on(const struct vkllm__gpu *gpu);

/* vkllm__op_matvec, vkllm__op_matvec_glu, vkllm__op_matvec_id and vkllm__op_matvec_id_grouped with
 * x also quantized in xq (vkllm__op_quantize_x8 of x; the experts' products: of x's columns
 * 0, 1, .. that picks share x_div at a time). xq.buf NULL, or a product that does not run
 * matvec_x8 (vkllm__matvec_x8_applies, vkllm__matvec_id_x8_applies): the same as those ops. */
vkllm_status vkllm__op_matvec_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 struct vkllm__view x, struct vkllm__view xq, uint32_t ncols);
vkllm_status vkllm__op_matvec_glu_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                     struct vkllm__view x, struct vkllm__view xq);
vkllm_status vkllm__op_matvec_id_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                    uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                    struct vkllm__view ids, struct vkllm__view xq, uint32_t ncols);
vkllm_status vkllm__op_matvec_id_grouped_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                            uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                            struct vkllm__view group, struct vkllm__view xq, uint32_t ncols);

#endif
