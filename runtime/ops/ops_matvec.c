/* ops_matvec.c - decode's matrix-vector product and the embedding lookup for every weight type
 * (shaders/matvec.comp, shaders/get_rows.comp; see ops_gpu.h).
 *
 * W may be larger than one storage binding may cover: it is split into row chunks
 * (vkllm__dtensor_chunk_rows) and each chunk is one dispatch that binds only its rows. */
#include <string.h>

#include "ops_gpu.h"
#include "shader_abi.h"
#include "types.h"

/* Columns (x vectors) one matvec dispatch takes at most. */
#define MATVEC_MAX_COLS 8u

/* --- variants ------------------------------------------------------------------------------ */

/* The matvec work split (specialization constants of matvec.comp). */
struct mv_config {
    uint32_t wg;       /* workgroup size */
    uint32_t nt;       /* invocations per row group (1, or a power of two up to wg) */
    uint32_t nr;       /* rows per invocation */
    int sg;            /* the subgroup variant: subgroupAdd when nt is the subgroup size */
    uint32_t xs;       /* nt = 1: lanes share the x loads through subgroupShuffle (the subgroup size) */
    uint32_t subgroup; /* the subgroup size the dispatch requires, full (0: none) */
};

static int is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

/* Whether subgroups of exactly n lanes, all present, can be relied on: where the device offers
 * subgroup size control they are asked for (*req = n, full subgroups); without it, only a size
 * that cannot vary is the device's own (no range reported, or min == max). 0: not safe; the
 * caller takes the shared-memory path. */
static int subgroups_of(const struct vkllm_device_info *d, uint32_t n, uint32_t *req) {
    *req = 0;
    if (!is_pow2(n)) return 0;
    if (d->subgroup_size_control) {
        if (n < d->subgroup_size_min || n > d->subgroup_size_max) return 0;
        *req = n;
        return 1;
    }
    return n == d->subgroup_size && (!d->subgroup_size_min || d->subgroup_size_min == d->subgroup_size_max);
}

/* The lanes of a GPU's row group (nt): the subgroup size, at most 64; on Intel 16 where
 * subgroups of 16 may be asked for (ANV reports 32, and a required 32 forces SIMD32, which halves
 * the registers a lane may hold before it spills; ggml-vulkan's matrix-vector kernels ask for 16
 * there as well). */
static uint32_t row_group_lanes(const struct vkllm_device_info *d) {
    uint32_t sgs = d->subgroup_size ? d->subgroup_size : 1, req;
    if (d->vendor_id == 0x8086 && sgs > 16 && subgroups_of(d, 16, &req)) return 16;
    return VKLLM_MIN(sgs, 64);
}

/* CPU devices (lavapipe): one invocation per row group (NR rows), the subgroup's lanes sharing
 * the x loads; on lavapipe every lane's load costs about the same, so loads per weight byte are
 * what counts. GPUs: one subgroup per row group, reading neighbouring
 * blocks of the row (coalesced), reduced with subgroupAdd. The tuning's matvec_{wg,nt,nr,sg,xs}
 * override (tests and benchmarks use them to run every path on one device). */
static vkllm_status pick_config(const struct vkllm__gpu *gpu, struct mv_config *cfg) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    uint32_t sgs = d->subgroup_size ? d->subgroup_size : 1;
    /* the subgroup variant's module uses arithmetic, ballot and shuffle operations */
    const uint32_t sg_ops = VKLLM_SUBGROUP_ARITHMETIC | VKLLM_SUBGROUP_BALLOT | VKLLM_SUBGROUP_SHUFFLE;
    int has_sg = (d->subgroup_ops & sg_ops) == sg_ops;
    struct mv_config c = {0, 0, 0, 0, 0, 0};
    if (d->type == VKLLM_DEVICE_CPU) {
        c.nt = 1;
        c.nr = 8;
        c.wg = 32;
    } else {
        c.nt = row_group_lanes(d);
        c.nr = 2;
        c.wg = VKLLM_MAX(c.nt * 2, 64);
    }
    const struct vkllm__tuning *tu = vkllm__gpu_tuning(gpu);
    if (tu->matvec_wg) c.wg = (uint32_t)VKLLM_MIN((unsigned long)tu->matvec_wg, 65536ul);
    if (tu->matvec_nt) c.nt = (uint32_t)VKLLM_MIN((unsigned long)tu->matvec_nt, 65536ul);
    if (tu->matvec_nr) c.nr = (uint32_t)VKLLM_MIN((unsigned long)tu->matvec_nr, 65536ul);
    /* a row group of nt lanes reduced with subgroupAdd needs subgroups of exactly nt lanes */
    c.sg = has_sg && tu->matvec_sg && (c.nt == 1 || subgroups_of(d, c.nt, &c.subgroup));
    /* x shared across the subgroup (nt = 1): every unit (16..128 elements) splits evenly up to 16
     * lanes, and every lane of the subgroup must be there */
    uint32_t xreq = 0;
    c.xs = c.sg && c.nt == 1 && is_pow2(sgs) && sgs <= 16 && tu->matvec_xs && subgroups_of(d, sgs, &xreq) ? sgs : 0;
    if (c.xs) c.subgroup = xreq;
    while (c.wg > d->max_workgroup_invocations || c.wg > d->max_workgroup_size[0]) c.wg /= 2;
    if (c.subgroup && c.wg % c.subgroup) c.subgroup = 0, c.sg = c.nt == 1, c.xs = 0; /* no full subgroups */
    if (!is_pow2(c.nt) || c.nt > c.wg || c.wg % c.nt || c.nr == 0 || c.nr > 8 ||
        (uint64_t)c.nr * c.wg * 4 > d->max_shared_memory)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec: bad work split wg=%u nt=%u nr=%u", c.wg, c.nt, c.nr);
    *cfg = c;
    return VKLLM_STATUS_OK;
}

/* --- x in int8 (matvec_x8.comp) ------------------------------------------------------------ */

/* Where matvec_x8 runs and how: GPUs' Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K products, one subgroup per row group
 * (matvec.comp's split: nt lanes, nr rows each; by default 4 row groups per workgroup, 8 rows,
 * since each workgroup quantizes x once for all its rows), x quantized KC elements at a time into
 * at most 16 KiB of shared memory; or, where the caller hands x already quantized once per step
 * (vkllm__op_quantize_x8, ops_gpu.h), the X_Q8 variants reading that buffer (no shared
 * memory, the same KC chunks ordering the sums, so the same bits). */
struct x8_config {
    enum vkllm__shader_id shader, shader_id;     /* matvec (plain, GLU), matvec_id */
    enum vkllm__shader_id shader_q, shader_id_q; /* ... reading x quantized once per step (X_Q8) */
    const char *label, *label_q;
    uint32_t wg, nt, nr, kc, subgroup;
};

/* Where matvec_x8 is the default (tuning matvec_x8 = -1): GPUs whose packed int8 dot product is
 * accelerated, and there only where llama.cpp's Vulkan backend measured its own int8 path
 * (ggml_vk_should_use_mmvq, x quantized by a dispatch of its own) faster than its f32/f16 one:
 * rows longer than 4096 on NVIDIA, 2048 on AMD and Intel (below that, quantizing x does not pay);
 * not Q8_0 on NVIDIA and AMD, not Q4_0 / Q5_1 on Intel, Q6_K (2-byte aligned blocks) only on
 * Intel. Not measured on any GPU by vkllm yet: scripts/gpu-check.sh compares both. The choice
 * depends on the matrix, never on the number of columns (a column's bits do not depend on the
 * batch). */
static int x8_default(const struct vkllm_device_info *d, uint32_t type, uint64_t k) {
    if (d->type == VKLLM_DEVICE_CPU || !d->integer_dot_product || !d->integer_dot_product_accel) return 0;
    if (type == VKLLM__TYPE_Q6_K) return d->vendor_id == 0x8086;
    switch (d->vendor_id) {
    case 0x10de: return k > 4096 && type != VKLLM__TYPE_Q8_0;                              /* NVIDIA */
    case 0x1002: return k >= 2048 && type != VKLLM__TYPE_Q8_0;                             /* AMD */
    case 0x8086: return k >= 2048 && type != VKLLM__TYPE_Q4_0 && type != VKLLM__TYPE_Q5_1; /* Intel */
    default: return 1;
    }
}

/* matvec_x8.comp's X_Q8 variants of type t: plain and MATVEC_ID, with (dp) and without the
 * instruction; 0 where there are none (the table's x8 types all have them). */
static int xq_shaders(uint32_t t, int dp, enum vkllm__shader_id *plain, enum vkllm__shader_id *id) {
#define XQ(T, n)                                                                        \
    case VKLLM__TYPE_##T:                                                               \
        *plain = dp ? VKLLM__SHADER_MATVEC_XQ8DP_##n : VKLLM__SHADER_MATVEC_XQ8_##n;    \
        *id = dp ? VKLLM__SHADER_MATVEC_ID_XQ8DP_##n : VKLLM__SHADER_MATVEC_ID_XQ8_##n; \
        return 1;
    switch (t) {
        XQ(Q8_0, Q8_0)
        XQ(Q4_0, Q4_0)
        XQ(Q4_1, Q4_1)
        XQ(Q5_0, Q5_0)
        XQ(Q5_1, Q5_1)
        XQ(Q4_K, Q4_K)
        XQ(Q5_K, Q5_K)
        XQ(Q6_K, Q6_K)
    default: return 0;
    }
#undef XQ
}

static int x8_pick(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t nc, int glu,
                   struct x8_config *out) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    const struct vkllm__tuning *tu = vkllm__gpu_tuning(gpu);
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "matvec");
    if (!sh || sh->matvec_x8 == VKLLM__SHADER_COUNT_ || tu->matvec_x8 == 0) return 0;
    if (tu->matvec_x8 < 0 && !x8_default(d, w->type, w->k)) return 0;
    if (w->k % 256 && (w->type == VKLLM__TYPE_Q4_K || w->type == VKLLM__TYPE_Q5_K || w->type == VKLLM__TYPE_Q6_K))
        return 0;
    /* a row group is one whole subgroup (of row_group_lanes' size unless the tuning says) */
    const uint32_t sg_ops = VKLLM_SUBGROUP_BASIC | VKLLM_SUBGROUP_ARITHMETIC;
    struct x8_config x = {0};
    x.nt = tu->matvec_nt ? (uint32_t)VKLLM_MIN((unsigned long)tu->matvec_nt, 1024ul) : row_group_lanes(d);
    if ((d->subgroup_ops & sg_ops) != sg_ops || !tu->matvec_sg || x.nt < 2 || !subgroups_of(d, x.nt, &x.subgroup))
        return 0;
    int hw = d->integer_dot_product && tu->matvec_x8 != 2;
    x.shader = hw ? sh->matvec_x8dp : sh->matvec_x8;
    x.shader_id = hw ? sh->matvec_id_x8dp : sh->matvec_id_x8;
    x.label = glu ? (hw ? "matvec_glu_x8dp" : "matvec_glu_x8") : (hw ? "matvec_x8dp" : "matvec_x8");
    x.label_q = glu ? (hw ? "matvec_glu_xq8dp" : "matvec_glu_xq8") : (hw ? "matvec_xq8dp" : "matvec_xq8");
    if (!xq_shaders(w->type, hw, &x.shader_q, &x.shader_id_q)) x.shader_q = x.shader_id_q = VKLLM__SHADER_COUNT_;
    x.wg = tu->matvec_wg ? (uint32_t)VKLLM_MIN((unsigned long)tu->matvec_wg, 65536ul) : x.nt * 4;
    while (x.wg > x.nt && (x.wg > d->max_workgroup_invocations || x.wg > d->max_workgroup_size[0])) x.wg /= 2;
    if (x.wg % x.nt || x.wg > d->max_workgroup_invocations || (x.subgroup && x.wg % x.subgroup)) return 0;
    uint32_t nr = tu->matvec_nr ? (uint32_t)VKLLM_MIN((unsigned long)tu->matvec_nr, 8ul) : 2;
    x.nr = VKLLM_MAX(1u, VKLLM_MIN(nr, 16u / (nc * (glu ? 2u : 1u))));
    /* KC: quants (1 byte) and the block's (d, s) (8 bytes per 32) of nc columns, and the 32 bytes
     * of padding between the quants' two planes. Any KC gives the same bits: each lane takes the
     * items of k congruent to it modulo NT, in order, however k is cut into chunks. */
    uint64_t budget = VKLLM_MIN(d->max_shared_memory, 16384u) - 32, kc = budget * 32 / (40ull * nc) / 256 * 256;
    kc = VKLLM_MIN(kc, (w->k + 255) / 256 * 256);
    if (kc < 256) return 0;
    x.kc = (uint32_t)kc;
    *out = x;
    return 1;
}

/* Turn dispatch d into matvec_x8's (shader: x's plain or MATVEC_ID variant, or their X_Q8 ones:
 * the same constants, KC only ordering the sums there) for nc columns; returns the rows each
 * workgroup takes. */
static uint64_t x8_dispatch(const struct x8_config *x, enum vkllm__shader_id shader, const char *label, uint32_t nc,
                            uint32_t glu, struct vkllm__dispatch *d) {
    const uint32_t spec[6] = {x->wg, x->nt, x->nr, nc, glu, x->kc};
    d->shader = shader, d->label = label, d->subgroup = x->subgroup;
    d->n_spec = 6;
    memcpy(d->spec, spec, sizeof spec);
    return (uint64_t)(x->wg / x->nt) * x->nr;
}

int vkllm__matvec_x8_applies(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t ncols) {
    struct x8_config x;
    return w && w->buf && !vkllm__matvec_tb_applies(gpu, w) && w->k <= UINT32_MAX &&
           x8_pick(gpu, w, VKLLM_MIN(ncols, MATVEC_MAX_COLS), 0, &x);
}

static int tb_id_applies(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w) {
    return w && ((w->tb && vkllm__matvec_tb_applies(gpu, w)) || vkllm__matvec_tb_gg_applies(gpu, w));
}

int vkllm__matvec_id_x8_applies(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, int grouped) {
    struct x8_config x;
    return w && w->buf && !tb_id_applies(gpu, w) && w->k <= UINT32_MAX &&
           x8_pick(gpu, w, grouped ? MATVEC_MAX_COLS : 1, 0, &x);
}

/* --- x quantized once per step (quantize_x8.comp) ----------------------------------------- */

uint64_t vkllm__xq8_col_groups(uint64_t k) { return (k + 127) / 128; }

uint64_t vkllm__xq8_bytes(uint64_t k, uint64_t ncols) { return 160 * ncols * vkllm__xq8_col_groups(k); }

int vkllm__matvec_xq_on(const struct vkllm__gpu *gpu) { return vkllm__gpu_tuning(gpu)->matvec_xq != 0; }

vkllm_status vkllm__op_quantize_x8(struct vkllm__cmd *c, struct vkllm__view xq, struct vkllm__view x, uint32_t k,
                                   uint32_t ncols) {
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    uint64_t nb = k / 32, cg = vkllm__xq8_col_groups(k), align = vkllm__gpu_storage_align(gpu);
    if (k == 0 || k % 32 || ncols == 0 || nb * ncols > UINT32_MAX || cg * ncols > UINT32_MAX / 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "quantize_x8: %u columns of %u elements (a multiple of 32)",
                          ncols, k);
    vkllm_status st;
    if ((st = vkllm__op_need("quantize_x8", "x", x, 4ull * k * ncols)) ||
        (st = vkllm__op_need("quantize_x8", "xq", xq, vkllm__xq8_bytes(k, ncols))))
        return st;
    if (x.offset % 16 || xq.offset % align)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "quantize_x8: x offset %llu or xq offset %llu not aligned",
                          (unsigned long long)x.offset, (unsigned long long)xq.offset);
    /* x bound from the aligned offset at or before it */
    uint64_t xal = x.offset / align * align;
    struct vkllm__pc_quantize_x8 pc = {(uint32_t)nb, ncols, (uint32_t)((x.offset - xal) / 4), k, (uint32_t)cg};
    uint32_t wg = VKLLM_MIN(64, vkllm__gpu_info(gpu)->max_workgroup_invocations);
    struct vkllm__dispatch d = {
        .shader = VKLLM__SHADER_QUANTIZE_X8,
        .n_spec = 1,
        .spec = {wg},
        .n_bind = 2,
        .bind = {{x.buf, xal, x.offset - xal + 4ull * k * ncols}, {xq.buf, xq.offset, vkllm__xq8_bytes(k, ncols)}},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "quantize_x8",
    };
    vkllm__gpu_grid_1d(gpu, nb * ncols, wg, d.groups);
    d.cost.bytes_read = 4ull * k * ncols;
    d.cost.bytes_written = 40ull * nb * ncols;
    d.cost.flops = 3ull * k * ncols;
    return vkllm__cmd_dispatch(c, &d);
}

/* xq (if any) holds ncx quantized columns of w's rows and may be bound as it is. */
static vkllm_status xq_check(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, struct vkllm__view xq,
                             uint64_t ncx, const char *op) {
    if (!xq.buf || !w) return VKLLM_STATUS_OK;
    uint64_t align = vkllm__gpu_storage_align(gpu);
    if (xq.offset % align)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: xq offset %llu is not aligned for binding", op,
                          (unsigned long long)xq.offset);
    return vkllm__op_need(op, "xq", xq, vkllm__xq8_bytes(w->k, ncx));
}

/* Whether dispatch d (made by x8_dispatch) reads xq instead of x: xq given and the X_Q8 variant
 * there; then binds it, x0 and x_stride counting xq's groups (first: the first column's). */
static int use_xq(const struct vkllm__dtensor *w, struct vkllm__view xq, enum vkllm__shader_id shader, uint64_t first,
                  uint32_t *x0, uint32_t *x_stride, struct vkllm__dispatch *d) {
    if (!xq.buf || shader == VKLLM__SHADER_COUNT_) return 0;
    uint64_t cg = vkllm__xq8_col_groups(w->k);
    d->shader = shader;
    d->bind[1] = vkllm__bind(xq);
    *x0 = (uint32_t)(first * cg);
    *x_stride = (uint32_t)cg;
    return 1;
}

/* --- the weights -------------------------------------------------------------------------- */

static vkllm_status check_w(const struct vkllm__dtensor *w, const char *op) {
    if (!w || !w->buf || w->k == 0 || w->m == 0 || w->k > UINT32_MAX || w->m > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: empty or oversized weight matrix", op);
    if (w->offset % 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: weight offset %llu is not word aligned", op,
                          (unsigned long long)w->offset);
    /* matvec_x8.comp reads Q4_K and Q5_K blocks (144, 176 bytes) as 16-byte words */
    if ((w->type == VKLLM__TYPE_Q4_K || w->type == VKLLM__TYPE_Q5_K) && w->offset % 16)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: %s weight offset %llu is not 16-byte aligned", op,
                          vkllm__type_name(w->type), (unsigned long long)w->offset);
    return VKLLM_STATUS_OK;
}

/* matvec.comp's A16 (constant 6) for dispatch d of W's rows, its weights bound: F16 and BF16
 * units read as 16-byte words where every row and the binding start 16-byte aligned (not for
 * matvec_x8, whose constants differ). ACO, polaris10 to gfx1201: 352 -> 225 instructions for F16
 * at one column, no more registers. */
static void set_a16(const struct vkllm__dtensor *w, struct vkllm__dispatch *d) {
    int half = w->type == VKLLM__TYPE_F16 || w->type == VKLLM__TYPE_BF16;
    if (!half || w->row_bytes % 16 || d->bind[0].offset % 16 || d->n_spec > 6) return;
    if (d->n_spec < 6) d->spec[5] = 0; /* GLU */
    d->spec[6] = 1;
    d->n_spec = 7;
}

/* --- matvec -------------------------------------------------------------------------------- */

vkllm_status vkllm__op_matvec(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                              struct vkllm__view x, uint32_t ncols) {
    return vkllm__op_matvec_xq(c, y, w, x, (struct vkllm__view){0}, ncols);
}

/* xq: vkllm__op_quantize_x8 of x's ncols columns, or none */
vkllm_status vkllm__op_matvec_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 struct vkllm__view x, struct vkllm__view xq, uint32_t ncols) {
    vkllm_status st0 = xq_check(vkllm__cmd_gpu(c), w, xq, ncols, "matvec");
    if (st0) return st0;
    /* the texel path (ops_matvec_tb.c) takes 8 columns per dispatch; matmul_tb loops over groups */
    if (w && !w->buf && w->tb) return vkllm__op_matmul_tb(c, y, w, x, ncols); /* repacked only */
    vkllm_status st = check_w(w, "matvec");
    if (st) return st;
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "matvec");
    if (!sh) return VKLLM_STATUS_UNSUPPORTED;
    if (ncols == 0 || vkllm__view_bytes(x) < ncols * w->k * 4 || vkllm__view_bytes(y) < ncols * w->m * 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "matvec: %u columns: x (%llu bytes) or y (%llu bytes) too small for %llu x %llu", ncols,
                          (unsigned long long)vkllm__view_bytes(x), (unsigned long long)vkllm__view_bytes(y),
                          (unsigned long long)w->m, (unsigned long long)w->k);
    if (ncols > 1 && w->k % 4)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "matvec: %u columns need rows of a multiple of 4 elements, not %llu", ncols,
                          (unsigned long long)w->k);
    if ((uint64_t)ncols * w->k > UINT32_MAX || (uint64_t)ncols * w->m > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec: %u columns of %llu x %llu: too large", ncols,
                          (unsigned long long)w->m, (unsigned long long)w->k);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    if (vkllm__matvec_tb_applies(gpu, w) && x.offset % 16 == 0) /* CPU devices (ops_matvec_tb.c) */
        return vkllm__op_matmul_tb(c, y, w, x, ncols);
    struct mv_config cfg = {64, 1, 1, 0, 0, 0};
    uint64_t chunk = 1;
    if ((st = pick_config(gpu, &cfg))) return st;
    if ((st = vkllm__dtensor_chunk_rows(gpu, w, &chunk))) return st;
    uint64_t yalign = vkllm__gpu_storage_align(gpu);
    if (y.offset % yalign)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec: y offset %llu is not aligned for binding",
                          (unsigned long long)y.offset);
    /* Columns go MATVEC_MAX_COLS at a time; a dispatch of nc columns runs the nc-column variant,
     * whose every column computes exactly what the one-column variant computes. */
    for (uint32_t c0 = 0, nc; c0 < ncols; c0 += nc) {
        nc = VKLLM_MIN(MATVEC_MAX_COLS, ncols - c0);
        /* y of nc columns in one binding: fewer columns when that would pass the binding limit */
        uint64_t words = vkllm__gpu_max_binding(gpu) / 4, ypad = yalign / 4 + VKLLM_MIN(chunk, w->m);
        if (words > ypad) nc = (uint32_t)VKLLM_MIN(nc, (words - ypad) / w->m + 1);
        /* and x of nc columns too */
        if (words > yalign / 4) nc = (uint32_t)VKLLM_MIN(nc, (words - yalign / 4) / w->k);
        nc = VKLLM_MAX(nc, 1u);
        /* x: the nc columns, from the aligned offset at or before the first (a lone column at an
         * offset a binding may take: bound there, at any 4-byte offset on devices that allow it) */
        uint64_t xoff = x.offset + (uint64_t)c0 * w->k * 4;
        uint64_t xal = ncols == 1 && xoff % yalign == 0 ? xoff : xoff / yalign * yalign;
        if ((xoff - xal) % 16)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec: x offset %llu is not 16-byte aligned",
                              (unsigned long long)x.offset);
        struct vkllm__binding xb = {x.buf, xal, xoff - xal + (uint64_t)nc * w->k * 4};
        /* at most 8 accumulators per invocation: fewer rows each when there are more columns
         * (a row's arithmetic does not depend on how many rows an invocation has); 16 made AMD's
         * compiler spill at 8 columns (GFX11, `vkllm pipelines`) */
        uint32_t nr = VKLLM_MAX(1u, VKLLM_MIN(cfg.nr, 8u / nc));
        uint64_t rows_per_wg = (uint64_t)(cfg.wg / cfg.nt) * nr;
        struct x8_config x8;
        int use_x8 = x8_pick(gpu, w, nc, 0, &x8), q = 0;
        for (uint64_t r0 = 0; r0 < w->m; r0 += chunk) {
            uint64_t rows = VKLLM_MIN(chunk, w->m - r0);
            /* y: this chunk's rows of the nc columns, from the aligned offset at or before the first */
            uint64_t yoff = y.offset + ((uint64_t)c0 * w->m + r0) * 4, yal = yoff / yalign * yalign;
            struct vkllm__binding yb = {y.buf, yal, yoff - yal + ((uint64_t)(nc - 1) * w->m + rows) * 4};
            struct vkllm__pc_matvec pc = {(uint32_t)w->k,
                                          (uint32_t)rows,
                                          (uint32_t)w->row_bytes,
                                          (uint32_t)((yoff - yal) / 4),
                                          (uint32_t)((xoff - xal) / 4),
                                          (uint32_t)w->k,
                                          (uint32_t)w->m};
            struct vkllm__dispatch d = {
                .shader = cfg.sg ? sh->matvec : sh->matvec_shm,
                .n_spec = 5,
                .spec = {cfg.wg, cfg.nt, nr, cfg.xs, nc},
                .subgroup = cfg.subgroup,
                .n_bind = 3,
                .bind = {{0}, ncols == 1 && xal == xoff ? vkllm__bind(x) : xb, yb},
                .push = &pc,
                .push_size = sizeof pc,
                .label = "matvec",
            };
            if (use_x8) rows_per_wg = x8_dispatch(&x8, x8.shader, x8.label, nc, 0, &d);
            if (use_x8 && (q = use_xq(w, xq, x8.shader_q, c0, &pc.x0, &pc.x_stride, &d))) d.label = x8.label_q;
            if ((st = vkllm__dtensor_rows(w, r0, rows, "matvec", &d.bind[0]))) return st;
            if (!use_x8) set_a16(w, &d);
            if ((st = vkllm__spec_rp(&d, w))) return st;
            vkllm__gpu_grid_1d(gpu, (rows + rows_per_wg - 1) / rows_per_wg, 1, d.groups);
            /* the chunk's weight rows once (for all nc columns), x of the nc columns once per
             * workgroup (every workgroup walks all of k; quantized: 1.25 bytes an element) */
            uint64_t groups = (uint64_t)d.groups[0] * d.groups[1];
            d.cost.weight_bytes = rows * w->row_bytes;
            d.cost.bytes_read = d.cost.weight_bytes + groups * nc * (q ? w->k * 5 / 4 : w->k * 4);
            d.cost.bytes_written = (uint64_t)nc * rows * 4;
            d.cost.flops = 2ull * nc * rows * w->k;
            if ((st = vkllm__cmd_dispatch(c, &d))) return st;
        }
    }
    return VKLLM_STATUS_OK;
}

/* --- the experts' products (mixture of experts) -------------------------------------------- */

/* Columns per tile of the grouped products (matvec.comp's NC). */
#define MOE_GROUP_COLS MATVEC_MAX_COLS

uint32_t vkllm__moe_group_cols(void) { return MOE_GROUP_COLS; }

uint32_t vkllm__moe_group_tiles(uint32_t ncols, uint32_t n_expert) {
    return (ncols + MOE_GROUP_COLS - 1) / MOE_GROUP_COLS + n_expert + 1;
}

uint64_t vkllm__moe_group_bytes(uint32_t ncols, uint32_t n_expert) {
    return 4ull * (4 + 4ull * vkllm__moe_group_tiles(ncols, n_expert) + ncols + n_expert + 2);
}

/* Experts per binding of w (n_expert stacked matrices): a column's expert is data, so whole experts
 * per binding, as many as one may cover (the shaders address bytes with 32-bit words); more than
 * that, one dispatch per chunk of experts, chunks of equal size (of a split tensor: its buffers'). */
vkllm_status vkllm__moe_expert_chunks(struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n_expert,
                                      const char *op, uint64_t *per_out, uint32_t *n_chunks) {
    uint64_t m = w->m / n_expert, ebytes = m * w->row_bytes;
    uint64_t per = VKLLM_MIN(vkllm__gpu_max_binding(gpu), (uint64_t)UINT32_MAX) / ebytes, fits = per;
    /* a chunk that starts past its buffer's first expert starts at a binding's offset alignment:
     * such chunks hold a multiple of step experts */
    uint64_t align = vkllm__gpu_storage_align(gpu), step = vkllm__align_step(ebytes, align);
    if (w->n_parts > 1) { /* split into buffers of whole experts: chunks that divide a buffer's */
        uint64_t in_part = w->part_rows / m;
        if (w->part_rows % m)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s: experts of %llu rows split every %llu rows", op,
                              (unsigned long long)m, (unsigned long long)w->part_rows);
        per = VKLLM_MIN(per, in_part);
        while (per && (in_part % per || (per % step && per < in_part))) per--;
    } else if (per < n_expert) {
        per = per / step * step;
    }
    if (fits == 0)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "%s: one expert's matrix (%s) is larger than one "
                          "storage binding may cover on this device (%s)",
                          op, vkllm__bytes(ebytes).s, vkllm__bytes(vkllm__gpu_max_binding(gpu)).s);
    if (per == 0)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "%s: %llu experts' matrices (%s each), the fewest that keep a binding's start "
                          "at the device's offset alignment of %llu bytes, are more than one storage "
                          "binding may cover on this device (%s)",
                          op, (unsigned long long)step, vkllm__bytes(ebytes).s, (unsigned long long)align,
                          vkllm__bytes(vkllm__gpu_max_binding(gpu)).s);
    *n_chunks = (uint32_t)((n_expert + per - 1) / per);
    if (w->n_parts <= 1) { /* chunks of equal size, whole steps (no more than before: per was whole steps) */
        uint64_t even = (n_expert + *n_chunks - 1) / *n_chunks;
        per = *n_chunks == 1 ? n_expert : (even + step - 1) / step * step;
        *n_chunks = (uint32_t)((n_expert + per - 1) / per);
    }
    *per_out = per;
    return VKLLM_STATUS_OK;
}

/* One column per workgroup (group.buf NULL: ids[c] picks column c's expert), or tiles of up to
 * MOE_GROUP_COLS columns of one expert (group: vkllm__op_moe_group's output), each weight unit
 * loaded once for the tile's columns. */
static vkllm_status matvec_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                              uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                              struct vkllm__view ids, struct vkllm__view group, struct vkllm__view xq, uint32_t ncols) {
    if (group.buf && vkllm__matmul_id_applies(vkllm__cmd_gpu(c), w, n_expert, ncols, NULL)) /* prefill's GEMM */
        return vkllm__op_matmul_id(c, y, w, n_expert, x, x_div, x_stride, group, ncols);
    if (tb_id_applies(vkllm__cmd_gpu(c), w)) /* CPU devices: the repacked experts, or Q4_K / Q5_K ones as they are */
        return vkllm__op_matvec_tb_id(c, y, w, n_expert, x, x_div, x_stride, ids, group, ncols);
    vkllm_status st = check_w(w, "matvec_id");
    if (st) return st;
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "matvec_id");
    if (!sh) return VKLLM_STATUS_UNSUPPORTED;
    if (n_expert == 0 || w->m % n_expert || ncols == 0 || x_div == 0 || w->k % 4 || x_stride % 4 || x_stride < w->k)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "matvec_id: %llu rows of %llu for %u experts, %u columns, "
                          "x_div %u, x_stride %u",
                          (unsigned long long)w->m, (unsigned long long)w->k, n_expert, ncols, x_div, x_stride);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    const struct vkllm_device_info *di = vkllm__gpu_info(gpu);
    uint64_t m = w->m / n_expert, per;
    uint32_t n_chunks;
    if ((st = vkllm__moe_expert_chunks(gpu, w, n_expert, "matvec_id", &per, &n_chunks))) return st;
    int grouped = group.buf != NULL;
    uint32_t nc = grouped ? MOE_GROUP_COLS : 1, tiles = grouped ? vkllm__moe_group_tiles(ncols, n_expert) : ncols;
    if (tiles > di->max_workgroup_count[2])
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matvec_id: %u columns exceed the dispatch grid", ncols);
    uint64_t nx = (uint64_t)((ncols + x_div - 1) / x_div - 1) * x_stride + w->k;
    if ((st = vkllm__op_need("matvec_id", "x", x, nx * 4)) ||
        (st = grouped ? vkllm__op_need("matvec_id", "group", group, vkllm__moe_group_bytes(ncols, n_expert))
                      : vkllm__op_need("matvec_id", "ids", ids, 4ull * ncols)) ||
        (st = vkllm__op_need("matvec_id", "y", y, 4ull * ncols * m)))
        return st;
    if (x.offset % 16)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_id: x offset %llu is not 16-byte aligned",
                          (unsigned long long)x.offset);
    if ((st = xq_check(gpu, w, xq, (ncols + x_div - 1) / x_div, "matvec_id"))) return st;
    struct mv_config cfg;
    if ((st = pick_config(gpu, &cfg))) return st;
    uint32_t nr = VKLLM_MAX(1u, VKLLM_MIN(cfg.nr, 8u / nc)); /* at most 8 accumulators, as matvec */
    uint64_t rows_per_wg = (uint64_t)(cfg.wg / cfg.nt) * nr;
    struct x8_config x8;
    int use_x8 = x8_pick(gpu, w, nc, 0, &x8);
    /* each column (grouped: each tile, at most one per MOE_GROUP_COLS columns and one more per
     * expert) reads its expert's m rows: the active parameters; over chunks, each its share */
    uint64_t reads =
        grouped ? VKLLM_MIN((uint64_t)ncols, (ncols + nc - 1) / nc + (uint64_t)VKLLM_MIN(ncols, n_expert)) : ncols;
    for (uint32_t e0 = 0; e0 < n_expert; e0 += (uint32_t)per) {
        uint32_t e1 = (uint32_t)VKLLM_MIN((uint64_t)n_expert, e0 + per);
        struct vkllm__pc_matvec_id pc = {
            {(uint32_t)w->k, (uint32_t)m, (uint32_t)w->row_bytes, 0, 0, x_stride, (uint32_t)m},
            n_expert,
            x_div,
            e0,
            e1};
        struct vkllm__dispatch d = {
            .shader = cfg.sg ? sh->matvec_id : sh->matvec_id_shm,
            .n_spec = 5,
            .spec = {cfg.wg, cfg.nt, nr, cfg.xs, nc},
            .subgroup = cfg.subgroup,
            .n_bind = 4,
            .bind = {{0}, vkllm__bind(x), vkllm__bind(y), vkllm__bind(grouped ? group : ids)},
            .push = &pc,
            .push_size = sizeof pc,
            .label = grouped ? "matvec_id_grouped" : "matvec_id",
        };
        int q = 0;
        if (use_x8)
            rows_per_wg = x8_dispatch(&x8, x8.shader_id, grouped ? "matvec_id_x8_grouped" : "matvec_id_x8", nc, 0, &d);
        if (use_x8 && (q = use_xq(w, xq, x8.shader_id_q, 0, &pc.mv.x0, &pc.mv.x_stride, &d)))
            d.label = grouped ? "matvec_id_xq8_grouped" : "matvec_id_xq8";
        if ((st = vkllm__dtensor_rows(w, (uint64_t)e0 * m, (uint64_t)(e1 - e0) * m, "matvec_id", &d.bind[0])))
            return st;
        if (!use_x8) set_a16(w, &d);
        if ((st = vkllm__spec_rp(&d, w))) return st;
        vkllm__gpu_grid_1d(gpu, (m + rows_per_wg - 1) / rows_per_wg, 1, d.groups);
        d.groups[2] = tiles;
        uint64_t share = n_chunks == 1 ? reads : (reads * (e1 - e0) + n_expert - 1) / n_expert;
        d.cost.weight_bytes = share * m * w->row_bytes;
        d.cost.bytes_read = d.cost.weight_bytes +
                            (uint64_t)d.groups[0] * d.groups[1] * ncols * (q ? w->k * 5 / 4 : w->k * 4) / n_chunks;
        d.cost.bytes_written = (uint64_t)ncols * m * 4 / n_chunks;
        d.cost.flops = 2ull * ncols * m * w->k / n_chunks;
        if ((st = vkllm__cmd_dispatch(c, &d))) return st;
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__op_matvec_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                 struct vkllm__view ids, uint32_t ncols) {
    return matvec_id(c, y, w, n_expert, x, x_div, x_stride, ids, (struct vkllm__view){0}, (struct vkllm__view){0},
                     ncols);
}

vkllm_status vkllm__op_matvec_id_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                    uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                    struct vkllm__view ids, struct vkllm__view xq, uint32_t ncols) {
    return matvec_id(c, y, w, n_expert, x, x_div, x_stride, ids, (struct vkllm__view){0}, xq, ncols);
}

vkllm_status vkllm__op_matvec_id_grouped(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                         uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                         struct vkllm__view group, uint32_t ncols) {
    return vkllm__op_matvec_id_grouped_xq(c, y, w, n_expert, x, x_div, x_stride, group, (struct vkllm__view){0}, ncols);
}

vkllm_status vkllm__op_matvec_id_grouped_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                            uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                            struct vkllm__view group, struct vkllm__view xq, uint32_t ncols) {
    if (!group.buf) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_id_grouped: no grouping");
    return matvec_id(c, y, w, n_expert, x, x_div, x_stride, (struct vkllm__view){0}, group, xq, ncols);
}

/* --- matvec + SiLU (GLU) ------------------------------------------------------------------- */

int vkllm__matvec_glu_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w) {
    uint64_t chunk = 0;
    return w && w->buf && w->m % 2 == 0 && w->m >= 2 && !vkllm__matvec_tb_applies(gpu, w) &&
           vkllm__type_kernels(w->type, "matvec_glu") && !vkllm__dtensor_chunk_rows(gpu, w, &chunk) && chunk >= w->m &&
           w->m / 2 <= UINT32_MAX && w->k <= UINT32_MAX;
}

vkllm_status vkllm__op_matvec_glu(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                  struct vkllm__view x) {
    return vkllm__op_matvec_glu_xq(c, y, w, x, (struct vkllm__view){0});
}

vkllm_status vkllm__op_matvec_glu_xq(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                     struct vkllm__view x, struct vkllm__view xq) {
    vkllm_status st = check_w(w, "matvec_glu");
    if (!st) st = xq_check(vkllm__cmd_gpu(c), w, xq, 1, "matvec_glu");
    if (st) return st;
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    if (!vkllm__matvec_glu_applies(gpu, w))
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "matvec_glu: %s matrix of %llu x %llu: not two stacked halves in one binding on the "
                          "storage-buffer path",
                          vkllm__type_name(w->type), (unsigned long long)w->m, (unsigned long long)w->k);
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "matvec_glu");
    uint64_t m = w->m / 2;
    if (vkllm__view_bytes(x) < w->k * 4 || vkllm__view_bytes(y) < m * 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_glu: x or y too small for %llu x %llu",
                          (unsigned long long)w->m, (unsigned long long)w->k);
    struct mv_config cfg;
    if ((st = pick_config(gpu, &cfg))) return st;
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    uint64_t yalign = vkllm__gpu_storage_align(gpu);
    if (y.offset % yalign)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_glu: y offset %llu is not aligned for binding",
                          (unsigned long long)y.offset);
    /* gate's and up's accumulators share the reduction's memory: fewer rows each if need be */
    uint32_t nr = cfg.nr;
    while (nr > 1 && 2ull * nr * cfg.wg * 4 > d->max_shared_memory) nr--;
    uint64_t rows_per_wg = (uint64_t)(cfg.wg / cfg.nt) * nr;
    struct vkllm__pc_matvec pc = {(uint32_t)w->k, (uint32_t)m, (uint32_t)w->row_bytes, 0, 0,
                                  (uint32_t)w->k, (uint32_t)m};
    struct vkllm__dispatch dp = {
        .shader = cfg.sg ? sh->matvec : sh->matvec_shm,
        .n_spec = 6,
        .spec = {cfg.wg, cfg.nt, nr, cfg.xs, 1, 1},
        .subgroup = cfg.subgroup,
        .n_bind = 3,
        .bind = {{0}, vkllm__bind(x), vkllm__bind(y)},
        .push = &pc,
        .push_size = sizeof pc,
        .label = "matvec_glu",
    };
    struct x8_config x8;
    int use_x8 = x8_pick(gpu, w, 1, 1, &x8), q = 0;
    if (use_x8) rows_per_wg = x8_dispatch(&x8, x8.shader, x8.label, 1, 1, &dp);
    if (use_x8 && (q = use_xq(w, xq, x8.shader_q, 0, &pc.x0, &pc.x_stride, &dp))) dp.label = x8.label_q;
    if ((st = vkllm__dtensor_rows(w, 0, w->m, "matvec_glu", &dp.bind[0]))) return st;
    if (!use_x8) set_a16(w, &dp);
    if ((st = vkllm__spec_rp(&dp, w))) return st;
    vkllm__gpu_grid_1d(gpu, (m + rows_per_wg - 1) / rows_per_wg, 1, dp.groups);
    uint64_t groups = (uint64_t)dp.groups[0] * dp.groups[1];
    dp.cost.weight_bytes = w->m * w->row_bytes;
    dp.cost.bytes_read = dp.cost.weight_bytes + groups * (q ? w->k * 5 / 4 : w->k * 4);
    dp.cost.bytes_written = m * 4;
    dp.cost.flops = 2ull * w->m * w->k + 4 * m; /* the products, then silu (exp, add, divide) and the product */
    return vkllm__cmd_dispatch(c, &dp);
}

/* --- get_rows ------------------------------------------------------------------------------ */

vkllm_status vkllm__op_get_rows(struct vkllm__cmd *c, struct vkllm__view o, const struct vkllm__dtensor *w,
                                struct vkllm__view ids, uint32_t n) {
    vkllm_status st = check_w(w, "get_rows");
    if (st) return st;
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "get_rows");
    if (!sh) return VKLLM_STATUS_UNSUPPORTED;
    uint64_t per_row = (w->k + 3) / 4;
    if (n == 0 || per_row * n > UINT32_MAX || vkllm__view_bytes(ids) < (uint64_t)n * 4 ||
        vkllm__view_bytes(o) < (uint64_t)n * w->k * 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "get_rows: %u ids of rows of %llu: bad sizes", n,
                          (unsigned long long)w->k);
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    const struct vkllm_device_info *info = vkllm__gpu_info(gpu);
    uint32_t wg = VKLLM_MIN(64, info->max_workgroup_invocations);
    uint64_t chunk = 1;
    if ((st = vkllm__dtensor_chunk_rows(gpu, w, &chunk))) return st;
    for (uint64_t r0 = 0; r0 < w->m; r0 += chunk) {
        uint64_t nr = VKLLM_MIN(chunk, w->m - r0);
        struct vkllm__pc_get_rows pc = {(uint32_t)w->k, (uint32_t)w->row_bytes, n,
                                        (uint32_t)r0,   (uint32_t)nr,           r0 + nr >= w->m};
        struct vkllm__dispatch d = {
            .shader = sh->get_rows,
            .n_spec = 1,
            .spec = {wg},
            .n_bind = 3,
            .bind = {{0}, vkllm__bind(ids), vkllm__bind(o)},
            .push = &pc,
            .push_size = sizeof pc,
            .label = "get_rows",
        };
        /* the ids, and the rows of those ids in this chunk: which they are is data, so a chunk is
         * charged its share of them (exact with one chunk); a dequantized value costs 1 */
        d.cost.bytes_read = (uint64_t)n * 4;
        d.cost.weight_bytes = (uint64_t)n * nr / w->m * w->row_bytes;
        d.cost.bytes_read += d.cost.weight_bytes;
        d.cost.bytes_written = (uint64_t)n * nr / w->m * w->k * 4;
        d.cost.flops = (uint64_t)n * nr / w->m * w->k;
        if ((st = vkllm__dtensor_rows(w, r0, nr, "get_rows", &d.bind[0]))) return st;
        if ((st = vkllm__spec_rp(&d, w))) return st;
        vkllm__gpu_grid_1d(gpu, per_row * n, wg, d.groups);
        if ((st = vkllm__cmd_dispatch(c, &d))) return st;
    }
    return VKLLM_STATUS_OK;
}
