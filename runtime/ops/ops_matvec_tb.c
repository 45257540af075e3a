/* ops_matvec_tb.c - decode's matvec on CPU devices: the repacked weight copy and its kernel
 * (shaders/matvec_tb.comp, which describes the layout; see ops_gpu.h).
 *
 * Why: on lavapipe every storage-buffer load a lane makes has about the same cost whatever its
 * width; 16-byte texel fetches are several times cheaper (also for x), and with 8 rows
 * interleaved one workgroup's fetches of a unit are neighbours. Every tensor type is repacked into
 * one of eight storage formats (enum tb_kind). runtime/forward/weights.c keeps a matrix only in this
 * layout, except tied embeddings (the embedding lookup reads the GGUF one).
 *
 * A matrix larger than one texel binding may cover (maxTexelBufferElements) is bound in chunks of
 * whole 8-row groups; x columns in groups that fit one too. */
#include <stdlib.h>
#include <string.h>

#include "ops_gpu.h"
#include "shader_abi.h"
#include "types.h"

/* How a type's units are stored (the kernel variant that reads them, see matvec_tb.comp). */
enum tb_kind {
    TB_PLAIN,     /* f32 or f16 values as in the file */
    TB_BF16,      /* bf16 widened to f32 (exact) */
    TB_Q8,        /* int8 quants, scale d per 32 */
    TB_Q8_16,     /* int8 quants, a scale per 16 */
    TB_Q8_16_AFF, /* int8 quants, a scale and an offset per 16 */
    TB_Q8_AFF,    /* int8 quants, scale d and offset m per 32 */
    TB_Q4,        /* nibbles (quant + 8), scale d per 32 */
    TB_Q4_AFF,    /* nibbles, scale d and offset m per 32 */
};

struct tb_format {
    uint32_t type;
    uint32_t unit;     /* elements per unit */
    uint32_t tpu;      /* 16-byte texels per unit of a row */
    int scales;        /* f32 scales per unit of a row (0, 1, 2 or 4), in a second texel buffer */
    enum tb_kind kind; /* the kernel that reads it: vkllm__type_kernels(type)->matvec_tb */
};

static const struct tb_format k_formats[] = {
    {VKLLM__TYPE_F32, 4, 1, 0, TB_PLAIN},
    {VKLLM__TYPE_BF16, 4, 1, 0, TB_BF16},
    {VKLLM__TYPE_F16, 8, 1, 0, TB_PLAIN},
    {VKLLM__TYPE_Q8_0, 32, 2, 1, TB_Q8},
    {VKLLM__TYPE_Q5_0, 32, 2, 1, TB_Q8},
    {VKLLM__TYPE_IQ4_NL, 32, 2, 1, TB_Q8}, /* the table's levels as int8 */
    {VKLLM__TYPE_IQ4_XS, 32, 2, 1, TB_Q8},
    {VKLLM__TYPE_MXFP4, 32, 2, 1, TB_Q8}, /* the table's levels as int8, a power-of-two scale */
    {VKLLM__TYPE_Q6_K, 32, 2, 2, TB_Q8_16},
    {VKLLM__TYPE_Q3_K, 32, 2, 2, TB_Q8_16},
    {VKLLM__TYPE_Q2_K, 32, 2, 4, TB_Q8_16_AFF},
    {VKLLM__TYPE_Q5_1, 32, 2, 2, TB_Q8_AFF},
    {VKLLM__TYPE_Q5_K, 32, 2, 2, TB_Q8_AFF},
    {VKLLM__TYPE_Q4_0, 32, 1, 1, TB_Q4},
    {VKLLM__TYPE_Q4_1, 32, 1, 2, TB_Q4_AFF},
    {VKLLM__TYPE_Q4_K, 32, 1, 2, TB_Q4_AFF},
};

#define GROUP 8u /* rows interleaved */
#define MAX_NCOLS 8u
#define TB_WG 8 /* the narrow work split: invocations per workgroup ... */
#define TB_NR 4 /* ... and rows each (tb_split) */
#define SCALES_ALIGN 256u

static const struct tb_format *find_format(uint32_t type) {
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(k_formats); i++)
        if (k_formats[i].type == type) return &k_formats[i];
    return NULL;
}

/* Sizes of the repacked layout of an (m, k) matrix. */
struct tb_layout {
    uint64_t nu;       /* units per row */
    uint64_t groups;   /* 8-row groups */
    uint64_t q_group;  /* bytes of quants (or plain values) per group */
    uint64_t s_group;  /* bytes of scales per group (0: none) */
    uint64_t s_offset; /* bytes: where the scales start */
    uint64_t total;
};

static struct tb_layout layout_of(const struct tb_format *f, uint64_t k, uint64_t m) {
    struct tb_layout l;
    l.nu = (k + f->unit - 1) / f->unit;
    l.groups = (m + GROUP - 1) / GROUP;
    l.q_group = l.nu * f->tpu * GROUP * 16;
    l.s_group = l.nu * GROUP * 4 * (uint64_t)f->scales;
    l.s_offset = (l.groups * l.q_group + SCALES_ALIGN - 1) / SCALES_ALIGN * SCALES_ALIGN;
    l.total = f->scales ? l.s_offset + l.groups * l.s_group : l.groups * l.q_group;
    return l;
}

/* The path is on for CPU devices unless the tuning's matvec_texel is 0, and on any device with 1. */
static int path_on(const struct vkllm__gpu *gpu) {
    long on = vkllm__gpu_tuning(gpu)->matvec_texel;
    if (on == 0 || on == 1) return (int)on;
    return vkllm__gpu_info(gpu)->type == VKLLM_DEVICE_CPU;
}

/* Bytes of the repacked layout where the device can run it, else 0. */
static uint64_t layout_bytes(const struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m) {
    const struct tb_format *f = find_format(type);
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    if (!f || !bl->texel_formats) return 0;
    /* k % 4: x is read as vec4s; one column of x (at any 16-byte offset) fits a texel binding;
     * one 8-row group fits a texel binding. */
    uint64_t block = vkllm__type_traits(type)->block_size; /* 256 for the K-quants */
    if (k == 0 || m == 0 || k % 4 || (f->scales && (k % f->unit || k % block))) return 0;
    if (k * 4 + VKLLM_MAX(bl->texel_align, 16) - 16 > bl->max_texels * 16 || m > UINT32_MAX) return 0;
    struct tb_layout l = layout_of(f, k, m);
    if (l.q_group / 16 > bl->max_texels || l.total > vkllm__gpu_max_alloc(gpu)) return 0; /* one buffer */
    return l.total;
}

uint64_t vkllm__matvec_tb_bytes(const struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m) {
    return path_on(gpu) ? layout_bytes(gpu, type, k, m) : 0;
}

/* A matrix with both layouts takes this path while it is on; one with only the repacked layout
 * always does. */
int vkllm__matvec_tb_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w) {
    return w && w->tb && layout_bytes(gpu, w->type, w->k, w->m) == vkllm__buffer_size(w->tb) &&
           (!w->buf || path_on(gpu));
}

/* --- repacking ----------------------------------------------------------------------------- */

/* Scale j of a unit of row `lane` of its group, at its place in the layout. */
static void put_scale(const struct tb_format *f, const struct tb_layout *l, uint64_t unit, uint64_t lane, int j,
                      float v, uint8_t *dst) {
    memcpy(dst + l->s_offset + ((unit * (uint64_t)f->scales + (uint64_t)j) * GROUP + lane) * 4, &v, 4);
}

/* Row r of GGUF bytes `src` into the repacked layout `dst` (zeroed beforehand). */
static void repack_row(const struct tb_format *f, const struct tb_layout *l, const uint8_t *src, uint64_t k, uint64_t r,
                       uint8_t *dst) {
    uint64_t g = r / GROUP, lane = r % GROUP;
    const struct vkllm__type_traits *tt = vkllm__type_traits(f->type);
    int q[256];
    float d[16], m[16];
    for (uint64_t u = 0; u < l->nu; u++) {
        uint64_t unit = g * l->nu + u;
        uint8_t *t0 = dst + ((unit * f->tpu) * GROUP + lane) * 16; /* texel h at + h * GROUP * 16 */
        if (f->kind == TB_PLAIN || f->kind == TB_BF16) {
            uint64_t es = f->type == VKLLM__TYPE_F16 ? 2 : 4, e0 = u * f->unit;
            uint64_t n = VKLLM_MIN((uint64_t)f->unit, k - e0); /* the rest stays zero */
            if (f->kind == TB_PLAIN) memcpy(t0, src + e0 * es, n * es);
            for (uint64_t i = 0; f->kind == TB_BF16 && i < n; i++) {
                uint16_t h;
                memcpy(&h, src + (e0 + i) * 2, 2);
                float v = vkllm__bf16_to_f32(h);
                memcpy(t0 + i * 4, &v, 4);
            }
            continue;
        }
        /* quantized: the unit's 32 quants and scales from the pieces of its block */
        uint64_t per_block = tt->block_size / 32, i0 = u % per_block * 32;
        if (u % per_block == 0) vkllm__block_parts(f->type, src + u / per_block * tt->type_size, q, d, m);
        const int *qu = q + i0;
        uint8_t *t1 = t0 + GROUP * 16;
        if (f->kind == TB_Q4 || f->kind == TB_Q4_AFF) { /* byte i: elements i and 16 + i */
            int bias = f->kind == TB_Q4 ? 8 : 0;
            for (int i = 0; i < 16; i++) t0[i] = (uint8_t)((qu[i] + bias) | (qu[16 + i] + bias) << 4);
        } else {
            for (int i = 0; i < 16; i++) t0[i] = (uint8_t)(int8_t)qu[i], t1[i] = (uint8_t)(int8_t)qu[16 + i];
        }
        if (f->kind == TB_Q8_16 || f->kind == TB_Q8_16_AFF) { /* Q6_K, Q3_K, Q2_K: sub-blocks of 16 */
            put_scale(f, l, unit, lane, 0, d[i0 / 16], dst);
            put_scale(f, l, unit, lane, 1, d[i0 / 16 + 1], dst);
            if (f->kind == TB_Q8_16_AFF) {
                put_scale(f, l, unit, lane, 2, m[i0 / 16], dst);
                put_scale(f, l, unit, lane, 3, m[i0 / 16 + 1], dst);
            }
        } else {
            put_scale(f, l, unit, lane, 0, d[i0 / 32], dst);
            if (f->scales == 2) put_scale(f, l, unit, lane, 1, m[i0 / 32], dst);
        }
    }
}

vkllm_status vkllm__dtensor_add_tb(struct vkllm__gpu *gpu, struct vkllm__dtensor *t, const void *data) {
    uint64_t bytes = vkllm__matvec_tb_bytes(gpu, t->type, t->k, t->m);
    if (!bytes || !data) return VKLLM_STATUS_OK;
    const struct tb_format *f = find_format(t->type);
    struct tb_layout l = layout_of(f, t->k, t->m);
    uint8_t *host = vkllm__calloc(1, bytes);
    if (!host)
        return vkllm__err(VKLLM_STATUS_OOM, "out of host memory (%llu bytes to repack a matrix)",
                          (unsigned long long)bytes);
    uint64_t file_rb = 0; /* data holds the file's rows (t's may be the 16-byte layout's, longer) */
    vkllm_status st0 = vkllm__row_size(t->type, t->k, &file_rb);
    if (st0) return vkllm__free(host), st0;
    for (uint64_t r = 0; r < t->m; r++) repack_row(f, &l, (const uint8_t *)data + r * file_rb, t->k, r, host);
    struct vkllm__buffer *b = NULL;
    vkllm_status st = vkllm__buffer_alloc(gpu, bytes, VKLLM__MEM_DEVICE, &b);
    if (!st) st = vkllm__buffer_upload(b, 0, host, bytes);
    vkllm__free(host);
    if (st) {
        vkllm__buffer_free(b);
        return st;
    }
    vkllm__buffer_free(t->tb);
    t->tb = b;
    return VKLLM_STATUS_OK;
}

/* --- the op -------------------------------------------------------------------------------- */

static int pow2_le8(long v) { return v == 1 || v == 2 || v == 4 || v == 8; }

/* The work split for rows rows (invocations per workgroup, rows per invocation): the tuning's
 * matvec_tb_wg / _nr where set. Otherwise the widest of 64 x 8, 32 x 8 and 16 x 8 that still
 * gives each of the device's threads 4 workgroups, else 8 x 4: wide workgroups read x once for
 * more rows and cost less to launch (lavapipe 22.3, TinyLlama-1.1B q4_K decode: 64 x 8 about 25%
 * faster than 8 x 4), but too few of them leave threads idle (a 256-row matrix in one 64 x 8
 * workgroup made the 4-layer small file's prefill 25% slower). */
static void tb_split(const struct vkllm__gpu *gpu, uint64_t rows, long *wg, long *nr) {
    const struct vkllm__tuning *tu = vkllm__gpu_tuning(gpu);
    *wg = tu->matvec_tb_wg ? tu->matvec_tb_wg : TB_WG;
    *nr = tu->matvec_tb_nr ? tu->matvec_tb_nr : TB_NR;
    if (tu->matvec_tb_wg || tu->matvec_tb_nr) return;
    uint64_t want = 4ull * VKLLM_MAX(vkllm__gpu_cpu_threads(gpu), 1u);
    for (long w = 64; w >= 16; w /= 2)
        if ((rows + 8 * w - 1) / (8 * w) >= want && w <= (long)vkllm__gpu_info(gpu)->max_workgroup_invocations) {
            *wg = w, *nr = 8;
            return;
        }
}

vkllm_status vkllm__op_matvec_tb(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 struct vkllm__view x, uint32_t ncols) {
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    if (!vkllm__matvec_tb_applies(gpu, w))
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matvec_tb: no repacked copy of this %s matrix for this device",
                          w ? vkllm__type_name(w->type) : "(null)");
    if (ncols == 0 || ncols > MAX_NCOLS)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_tb: %u columns (1..%u)", ncols, MAX_NCOLS);
    if (vkllm__view_bytes(x) < ncols * w->k * 4 || vkllm__view_bytes(y) < ncols * w->m * 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "matvec_tb: x (%llu bytes) or y (%llu bytes) too small for %u columns of %llu x %llu",
                          (unsigned long long)vkllm__view_bytes(x), (unsigned long long)vkllm__view_bytes(y), ncols,
                          (unsigned long long)w->m, (unsigned long long)w->k);
    if (x.offset % 16 || y.offset % 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "matvec_tb: x offset %llu (16-byte multiple) or y offset %llu"
                          " (4-byte multiple) misaligned",
                          (unsigned long long)x.offset, (unsigned long long)y.offset);
    const struct tb_format *f = find_format(w->type);
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    const struct vkllm_device_info *info = vkllm__gpu_info(gpu);
    struct tb_layout l = layout_of(f, w->k, w->m);

    long wg, nr;
    tb_split(gpu, w->m, &wg, &nr);
    if (wg < 1 || wg > (long)info->max_workgroup_invocations || wg > (long)info->max_workgroup_size[0] || !pow2_le8(nr))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_tb: bad work split wg=%ld nr=%ld", wg, nr);

    /* chunks of whole groups: each binding within maxTexelBufferElements, each start aligned */
    uint64_t ta = bl->texel_align;
    uint64_t step = vkllm__align_step(l.q_group, ta);
    if (l.s_group) step = vkllm__lcm_u64(step, vkllm__align_step(l.s_group, ta));
    uint64_t per_group = l.q_group / 16; /* texels; the scales' are fewer */
    uint64_t gpc = bl->max_texels / per_group / step * step;
    if (gpc == 0)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "matvec_tb: %llu groups of %llu texels exceed maxTexelBufferElements (%llu)",
                          (unsigned long long)step, (unsigned long long)per_group, (unsigned long long)bl->max_texels);
    uint64_t ya = vkllm__gpu_storage_align(gpu);
    uint64_t ua = VKLLM_MAX(bl->texel_align, 16), xcol = w->k * 4;

    vkllm_status st = VKLLM_STATUS_OK;
    for (uint64_t g0 = 0; g0 < l.groups; g0 += gpc) {
        uint64_t ng = VKLLM_MIN(gpc, l.groups - g0);
        uint64_t r0 = g0 * GROUP, nr_rows = VKLLM_MIN(ng * GROUP, w->m - r0);
        for (uint32_t c0 = 0; c0 < ncols;) {
            /* x: columns c0.. from the aligned offset at or before column c0 */
            uint64_t xoff = x.offset + c0 * xcol, xbase = xoff / ua * ua, xd = xoff - xbase;
            uint32_t nc = (uint32_t)VKLLM_MIN((uint64_t)(ncols - c0), (bl->max_texels * 16 - xd) / xcol);
            /* y: rows r0.. of columns c0..c0+nc-1 */
            uint64_t yoff = y.offset + ((uint64_t)c0 * w->m + r0) * 4, ybase = yoff / ya * ya;
            uint64_t yrange = yoff - ybase + ((uint64_t)(nc - 1) * w->m + nr_rows) * 4;
            struct vkllm__pc_matvec_tb pc = {
                (uint32_t)w->k, (uint32_t)l.nu,      (uint32_t)nr_rows,    (uint32_t)((yoff - ybase) / 4),
                (uint32_t)w->m, (uint32_t)(xd / 16), (uint32_t)(w->k / 4),
            };
            struct vkllm__dispatch d = {
                .shader = vkllm__type_kernels(w->type, "matvec_tb")->matvec_tb,
                .n_spec = 3,
                .spec = {(uint32_t)wg, (uint32_t)nr, nc},
                .push = &pc,
                .push_size = sizeof pc,
                .label = "matvec_tb",
            };
            uint32_t nb = 0;
            d.bind[nb++] = (struct vkllm__binding){w->tb, g0 * l.q_group, ng * l.q_group};
            if (l.s_group) d.bind[nb++] = (struct vkllm__binding){w->tb, l.s_offset + g0 * l.s_group, ng * l.s_group};
            d.bind[nb++] = (struct vkllm__binding){x.buf, xbase, xd + nc * xcol};
            d.bind[nb++] = (struct vkllm__binding){y.buf, ybase, yrange};
            d.n_bind = nb;
            vkllm__gpu_grid_1d(gpu, (nr_rows + (uint64_t)nr - 1) / (uint64_t)nr, (uint32_t)wg, d.groups);
            /* the chunk's repacked texels once for all nc columns (8-row groups, so a last partial
             * group's padding too), x of the nc columns once per workgroup */
            uint64_t groups = (uint64_t)d.groups[0] * d.groups[1];
            d.cost.weight_bytes = ng * (l.q_group + l.s_group);
            d.cost.bytes_read = d.cost.weight_bytes + groups * nc * xcol;
            d.cost.bytes_written = (uint64_t)nc * nr_rows * 4;
            d.cost.flops = 2ull * nc * nr_rows * w->k;
            if ((st = vkllm__cmd_dispatch(c, &d))) return st;
            c0 += nc;
        }
    }
    return VKLLM_STATUS_OK;
}

/* The part of view v from byte off on. */
static struct vkllm__view sub_view(struct vkllm__view v, uint64_t off) {
    struct vkllm__view r = {v.buf, v.offset + off, v.size ? (v.size > off ? v.size - off : 1) : 0};
    return r;
}

vkllm_status vkllm__op_matmul_tb(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 struct vkllm__view x, uint32_t n) {
    if (n == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matmul_tb: 0 rows of x");
    for (uint32_t n0 = 0; n0 < n; n0 += MAX_NCOLS) {
        uint32_t nc = VKLLM_MIN(MAX_NCOLS, n - n0);
        vkllm_status st =
            vkllm__op_matvec_tb(c, sub_view(y, (uint64_t)n0 * w->m * 4), w, sub_view(x, (uint64_t)n0 * w->k * 4), nc);
        if (st) return st;
    }
    return VKLLM_STATUS_OK;
}

/* --- the experts' products (mixture of experts) -------------------------------------------- */

int vkllm__matvec_tb_id_fits(const struct vkllm__gpu *gpu, uint32_t type, uint64_t k, uint64_t m, uint32_t n_expert) {
    if (!n_expert || m % n_expert || (m / n_expert) % GROUP || !vkllm__matvec_tb_bytes(gpu, type, k, m)) return 0;
    const struct tb_format *f = find_format(type);
    struct tb_layout l = layout_of(f, k, m);
    uint64_t max = vkllm__gpu_bind_limits(gpu)->max_texels;
    /* a column's expert is data: the quants, and the scales, each in one binding */
    return l.groups * l.q_group / 16 <= max && l.groups * l.s_group / 16 <= max && m / n_expert <= UINT32_MAX;
}

/* Experts without a repacked copy (too large for the device's memory repacked) whose GGUF blocks
 * are whole texels (Q4_K: 144 bytes, Q5_K: 176) are read as they are (matvec_tb.comp's
 * TB_GG_Q4_K, TB_GG_Q5_K) where the tensor fits one texel binding. */
int vkllm__matvec_tb_gg_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w) {
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    const struct vkllm__type_kernels *sh = w ? vkllm__type_kernels(w->type, "matvec_tb_id") : NULL;
    return sh && sh->matvec_tb_id_gg != VKLLM__SHADER_COUNT_ && w->buf && !w->rp && w->n_parts <= 1 && !w->tb &&
           path_on(gpu) && bl->texel_formats && w->k % 256 == 0 && w->offset % VKLLM_MAX(bl->texel_align, 16) == 0 &&
           w->m * w->row_bytes / 16 <= bl->max_texels;
}

/* x vectors [v0, v1] of columns x_stride floats apart as one texel binding: its start aligned at
 * or before v0 (*xd bytes before it); 0 where it does not fit one. */
static int x_window(const struct vkllm__gpu *gpu, struct vkllm__view x, uint64_t v0, uint64_t v1, uint64_t x_stride,
                    uint64_t k, struct vkllm__binding *b, uint64_t *xd) {
    const struct vkllm__gpu_bind_limits *bl = vkllm__gpu_bind_limits(gpu);
    uint64_t ua = VKLLM_MAX(bl->texel_align, 16), xoff = x.offset + v0 * x_stride * 4, xbase = xoff / ua * ua;
    uint64_t range = xoff - xbase + ((v1 - v0) * x_stride + k) * 4;
    if (range > bl->max_texels * 16) return 0;
    *b = (struct vkllm__binding){x.buf, xbase, range};
    *xd = xoff - xbase;
    return 1;
}

vkllm_status vkllm__op_matvec_tb_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                    uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                    struct vkllm__view ids, struct vkllm__view group, uint32_t ncols) {
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    int gg = vkllm__matvec_tb_gg_applies(gpu, w); /* their GGUF encoding */
    if (!gg && (!vkllm__matvec_tb_applies(gpu, w) || !vkllm__matvec_tb_id_fits(gpu, w->type, w->k, w->m, n_expert)))
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "matvec_tb_id: no repacked copy of these %s experts for this device",
                          w ? vkllm__type_name(w->type) : "(null)");
    if (n_expert == 0 || w->m % n_expert)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_tb_id: %llu rows for %u experts",
                          (unsigned long long)w->m, n_expert);
    if (ncols == 0 || x_div == 0 || x_stride % 4 || x_stride < w->k || x.offset % 16 || y.offset % 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "matvec_tb_id: %u columns, x_div %u, x_stride %u, x offset "
                          "%llu (16-byte multiple), y offset %llu",
                          ncols, x_div, x_stride, (unsigned long long)x.offset, (unsigned long long)y.offset);
    const struct vkllm_device_info *info = vkllm__gpu_info(gpu);
    struct tb_layout l = gg ? (struct tb_layout){.nu = w->k / 256} : layout_of(find_format(w->type), w->k, w->m);
    uint64_t m = w->m / n_expert, nvec = (ncols - 1) / x_div + 1;
    vkllm_status st;
    if ((st = vkllm__op_need("matvec_tb_id", "x", x, ((nvec - 1) * x_stride + w->k) * 4)) ||
        (st = vkllm__op_need("matvec_tb_id", "y", y, 4ull * ncols * m)) ||
        (st = group.buf ? vkllm__op_need("matvec_tb_id", "group", group, vkllm__moe_group_bytes(ncols, n_expert))
                        : vkllm__op_need("matvec_tb_id", "ids", ids, 4ull * ncols)))
        return st;
    /* the experts' split: the tuning's, else the narrow one (their rows go one expert at a time) */
    long wg = vkllm__gpu_tuning(gpu)->matvec_tb_wg, nr = vkllm__gpu_tuning(gpu)->matvec_tb_nr;
    wg = wg ? wg : TB_WG, nr = nr ? nr : TB_NR;
    if (wg < 1 || wg > (long)info->max_workgroup_invocations || wg > (long)info->max_workgroup_size[0] || !pow2_le8(nr))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matvec_tb_id: bad work split wg=%ld nr=%ld", wg, nr);
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "matvec_tb_id");
    /* grouped (tiles of MAX_NCOLS columns of one expert) when all of x fits one texel binding;
     * else one column per workgroup over windows of columns whose x does */
    struct vkllm__binding xb = {0};
    uint64_t xd = 0;
    int grouped = group.buf && x_window(gpu, x, 0, nvec - 1, x_stride, w->k, &xb, &xd) &&
                  vkllm__moe_group_tiles(ncols, n_expert) <= info->max_workgroup_count[2];
    for (uint32_t c0 = 0, nc; c0 < ncols; c0 += nc) {
        nc = grouped ? ncols : VKLLM_MIN(ncols - c0, info->max_workgroup_count[2]);
        if (!grouped) /* the widest window from c0 whose x fits */
            while (!x_window(gpu, x, c0 / x_div, (c0 + nc - 1) / x_div, x_stride, w->k, &xb, &xd))
                if ((nc /= 2) == 0)
                    return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matvec_tb_id: a row of x exceeds one texel binding");
        struct vkllm__pc_matvec_tb_id pc = {
            {(uint32_t)w->k, (uint32_t)l.nu, (uint32_t)m, 0, (uint32_t)m, (uint32_t)(xd / 16), x_stride / 4},
            n_expert,
            x_div,
            c0};
        struct vkllm__dispatch d = {
            .shader = gg ? sh->matvec_tb_id_gg : sh->matvec_tb_id,
            .n_spec = 3,
            .spec = {(uint32_t)wg, (uint32_t)nr, grouped ? MAX_NCOLS : 1},
            .push = &pc,
            .push_size = sizeof pc,
            .label = grouped ? "matvec_tb_id_grouped" : "matvec_tb_id",
        };
        uint32_t nb = 0;
        if (gg) d.bind[nb++] = (struct vkllm__binding){w->buf, w->offset, w->m * w->row_bytes};
        else d.bind[nb++] = (struct vkllm__binding){w->tb, 0, l.groups * l.q_group};
        if (l.s_group) d.bind[nb++] = (struct vkllm__binding){w->tb, l.s_offset, l.groups * l.s_group};
        d.bind[nb++] = xb;
        d.bind[nb++] = vkllm__bind(y);
        d.bind[nb++] = vkllm__bind(grouped ? group : ids);
        d.n_bind = nb;
        vkllm__gpu_grid_1d(gpu, (m + (uint64_t)nr - 1) / (uint64_t)nr, (uint32_t)wg, d.groups);
        d.groups[2] = grouped ? vkllm__moe_group_tiles(ncols, n_expert) : nc;
        /* each column (grouped: each tile, at most one per MAX_NCOLS columns and one more per expert)
         * reads its expert's repacked rows */
        uint64_t reads =
            grouped ? VKLLM_MIN((uint64_t)nc, (nc + MAX_NCOLS - 1) / MAX_NCOLS + (uint64_t)VKLLM_MIN(nc, n_expert))
                    : nc;
        uint64_t groups = (uint64_t)d.groups[0] * d.groups[1];
        d.cost.weight_bytes = reads * (gg ? m * w->row_bytes : (m / GROUP) * (l.q_group + l.s_group));
        d.cost.bytes_read = d.cost.weight_bytes + groups * nc * w->k * 4;
        d.cost.bytes_written = (uint64_t)nc * m * 4;
        d.cost.flops = 2ull * nc * m * w->k;
        if ((st = vkllm__cmd_dispatch(c, &d))) return st;
    }
    return VKLLM_STATUS_OK;
}
