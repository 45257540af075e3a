/* ops_matmul.c - the prefill product y (n, m) = x (n, k) @ W^T for every weight type
 * (shaders/matmul.comp; see ops_gpu.h).
 *
 * Tiles: a workgroup computes BM weight rows x BN rows of x, stepping BK along k through two
 * pairs of shared-memory tiles (double buffered); each invocation holds a register block of
 * 4*GM weight rows x 4*GN rows of x. BM, BN, BK, GM, GN and the workgroup size are
 * specialization constants picked below from the shape, maxComputeSharedMemorySize and the
 * workgroup limits, as ggml-vulkan sizes its scalar tiles (128 x 128 for large products, smaller
 * for short batches and few rows). Where the device has f16 arithmetic (shaderFloat16) the tiles
 * hold f16 (matmul_h16_<type>: half the shared memory; products and sums stay f32).
 *
 * Bindings: W is bound in row chunks that fit the binding limit (vkllm__dtensor_chunk_rows);
 * a chunk of W's rows is a block of y's columns, so the shader gets y's row stride and the
 * chunk's first column. x and y are bound in blocks of rows when they are larger than the limit
 * (e.g. logits for a long prompt), so every binding fits.
 *
 * Cooperative matrices (matmul_cm_<type>, VK_KHR_cooperative_matrix): the same staging into f16
 * tiles, products by the device's f16 x f16 -> f32 subgroup shape (vkllm__matmul_coopmat_plan).
 * Chosen where the device offers one, unless the tuning's matmul_coopmat or matmul_f16 is 0 or
 * tiles are forced (those test the scalar kernel). No device here has cooperative matrices
 * (lavapipe has none): the real kernel has been compiled, its SPIR-V rewrite checked
 * (tests/test_coopmat.c) and its plan tested on made-up devices, but never run; its emulation
 * (matmul_coopmat=2: the same shader with the matrix operations done by plain arithmetic, F16,
 * Q4_K and Q5_0) runs in the selftest on every device with f16 arithmetic and a required
 * subgroup size, so the tiling, offsets, layouts and way out are checked here; `vkllm selftest`
 * runs the real kernel's cases first thing on a GPU that has them (skipped elsewhere). */
#include <stdlib.h>
#include <string.h>

#include "ops_gpu.h"
#include "shader_abi.h"
#include "types.h"

struct mm_tiles {
    uint32_t bm, bn, bk, gm, gn, wg;
    int h16; /* f16 tiles (matmul_h16_<type>) */
};

/* The tiles the tuning forces (matmul_bm/bn/bk; 0: chosen below). Tests run every tiling so. */
static struct mm_tiles forced_tiles(const struct vkllm__gpu *gpu) {
    const struct vkllm__tuning *tu = vkllm__gpu_tuning(gpu);
    struct mm_tiles f = {0};
    f.bm = tu->matmul_bm > 0 && tu->matmul_bm <= 1024 ? (uint32_t)tu->matmul_bm : 0;
    f.bn = tu->matmul_bn > 0 && tu->matmul_bn <= 1024 ? (uint32_t)tu->matmul_bn : 0;
    f.bk = tu->matmul_bk > 0 && tu->matmul_bk <= 1024 ? (uint32_t)tu->matmul_bk : 0;
    return f;
}

static int use_h16(const struct vkllm__gpu *gpu) {
    return vkllm__gpu_tuning(gpu)->matmul_f16 != 0 && vkllm__gpu_info(gpu)->fp16_arith;
}

int vkllm__coopmat_offers(const struct vkllm_device_info *d, uint32_t m, uint32_t n, uint32_t k) {
    for (uint32_t i = 0; i < d->coopmat_shape_count && i < VKLLM_MAX_COOPMAT_SHAPES; i++) {
        const struct vkllm_coopmat_shape *s = &d->coopmat_shapes[i]; /* VkComponentTypeKHR: 0 FLOAT16, 1 FLOAT32 */
        if (s->m == m && s->n == n && s->k == k && s->a_type == 0 && s->b_type == 0 && s->c_type == 1 &&
            s->result_type == 1)
            return 1;
    }
    return 0;
}

uint32_t vkllm__coopmat_subgroup(const struct vkllm_device_info *d) {
    uint32_t sg = d->subgroup_size;
    if (!d->subgroup_size_control || sg == 0 || sg < d->subgroup_size_min || sg > d->subgroup_size_max) return 0;
    return sg;
}

/* The device's f16 x f16 -> f32 subgroup shape with sides of 8 or 16: 16 x 16 x 16 where
 * offered, else the largest. */
static int coopmat_shape(const struct vkllm_device_info *d, uint32_t *tm, uint32_t *tn, uint32_t *tk) {
    uint32_t best = 0;
    for (uint32_t i = 0; i < 8; i++) {
        uint32_t m = i & 1 ? 8 : 16, n = i & 2 ? 8 : 16, k = i & 4 ? 8 : 16;
        if (m * n * k > best && vkllm__coopmat_offers(d, m, n, k)) best = m * n * k, *tm = m, *tn = n, *tk = k;
    }
    return best != 0;
}

/* emulated: the emulation's accumulators take BM x BN floats of shared memory too */
static int plan(const struct vkllm_device_info *d, uint32_t n, uint64_t m, int emulated,
                struct vkllm__mm_coopmat *out) {
    struct vkllm__mm_coopmat p = {0};
    if (!d || !d->cooperative_matrix || !d->fp16_arith || !coopmat_shape(d, &p.tm, &p.tn, &p.tk)) return 0;
    if (!(p.subgroup = vkllm__coopmat_subgroup(d))) return 0;
    p.wg = 4 * p.subgroup;
    if (p.wg > d->max_workgroup_invocations || p.wg > d->max_workgroup_size[0]) return 0;
    /* square tiles as the scalar kernel's, halved until they fit shared memory; each side at least
     * twice the shape's (2 x 2 subgroups) */
    uint32_t side = m <= 32 || n <= 32 ? 32 : m <= 64 || n <= 64 ? 64 : 128;
    uint32_t least = 2 * VKLLM_MAX(p.tm, p.tn);
    p.bk = 16;
    for (;; side /= 2) {
        p.bm = p.bn = side;
        uint64_t shared = 2ull * p.bk * (p.bm + 8 + p.bn + 8) * 2 + 4ull * p.tm * p.tn * 4;
        if (emulated) shared += 4ull * p.bm * p.bn;
        if (side < least) return 0;
        if (shared <= d->max_shared_memory) break;
    }
    *out = p;
    return 1;
}

int vkllm__matmul_coopmat_plan(const struct vkllm_device_info *d, uint32_t n, uint64_t m,
                               struct vkllm__mm_coopmat *out) {
    return plan(d, n, m, 0, out);
}

/* Where the device offers cooperative matrices, is the kernel on by default? As ggml-vulkan
 * decides (ggml_vk_khr_cooperative_matrix_support): Intel only from Xe2 on (older GPUs, e.g. the
 * Arc A770, ran slower with them; vkllm cannot tell the generations apart, so off on Intel), AMD's
 * own drivers report them on every GPU (emulated before RDNA3; RADV offers them where the
 * hardware has them), everyone else yes. */
int vkllm__matmul_coopmat_default(const struct vkllm_device_info *d) {
    if (d->vendor_id == 0x8086) return 0;
    if (d->vendor_id == 0x1002) return strstr(d->driver_name, "radv") != NULL;
    return 1;
}

/* The emulated kernel of a type (matmul_coopmat=2, tests; id: the grouped MoE one), or
 * VKLLM__SHADER_COUNT_. */
static enum vkllm__shader_id emu_shader(uint32_t type, int id) {
    switch (type) {
    case VKLLM__TYPE_F16: return id ? VKLLM__SHADER_MATMUL_ID_CM_EMU_F16 : VKLLM__SHADER_MATMUL_CM_EMU_F16;
    case VKLLM__TYPE_Q4_K: return id ? VKLLM__SHADER_MATMUL_ID_CM_EMU_Q4_K : VKLLM__SHADER_MATMUL_CM_EMU_Q4_K;
    case VKLLM__TYPE_Q5_0: return id ? VKLLM__SHADER_MATMUL_ID_CM_EMU_Q5_0 : VKLLM__SHADER_MATMUL_CM_EMU_Q5_0;
    default: return VKLLM__SHADER_COUNT_;
    }
}

int vkllm__matmul_coopmat_can(const struct vkllm_device_info *d, uint32_t type, uint32_t n, uint64_t m, int emulated,
                              struct vkllm__mm_coopmat *p) {
    if (!emulated) return vkllm__matmul_coopmat_plan(d, n, m, p);
    if (!d || emu_shader(type, 0) == VKLLM__SHADER_COUNT_) return 0;
    struct vkllm_device_info e = *d; /* as if it offered 16 x 16 x 16, f16 -> f32 */
    e.cooperative_matrix = 1, e.coopmat_shape_count = 1;
    e.coopmat_shapes[0] = (struct vkllm_coopmat_shape){16, 16, 16, 0, 0, 1, 1};
    return plan(&e, n, m, 1, p);
}

/* 1 (and the plan) where the cooperative-matrix kernel takes this product; *emulated: its
 * emulation (the tuning's matmul_coopmat=2). */
static int use_coopmat_rows(const struct vkllm__gpu *gpu, uint32_t type, uint64_t m, uint32_t n,
                            struct vkllm__mm_coopmat *p, int *emulated) {
    const struct vkllm__tuning *tu = vkllm__gpu_tuning(gpu);
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    struct mm_tiles f = forced_tiles(gpu);
    *emulated = tu->matmul_coopmat == 2;
    if (tu->matmul_coopmat == 0 || !use_h16(gpu) || f.bm || f.bn || f.bk) return 0;
    if (tu->matmul_coopmat < 0 && !vkllm__matmul_coopmat_default(d)) return 0;
    return vkllm__matmul_coopmat_can(d, type, n, m, *emulated, p);
}

static int use_coopmat(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n,
                       struct vkllm__mm_coopmat *p, int *emulated) {
    return use_coopmat_rows(gpu, w->type, w->m, n, p, emulated);
}

/* 4-row groups per invocation along a tile side of s rows: 2 (8 rows in registers) from 64 on. */
static uint32_t groups_of(uint32_t s) { return s >= 64 && s % 8 == 0 ? 2 : 1; }

static uint32_t tile_invocations(uint32_t bm, uint32_t bn) {
    return bm / (4 * groups_of(bm)) * (bn / (4 * groups_of(bn)));
}

/* Tile sizes for this device and shape: square tiles chosen as ggml-vulkan chooses its scalar
 * ones (32 x 32 where m or n is at most 32, 64 x 64 where one is at most 64, else 128 x 128; three
 * pipelines per type), halved until the workgroup fits the invocation limits; BK 16, halved (down
 * to 4) until both pairs of tiles fit in shared memory. */
static vkllm_status pick_tiles(const struct vkllm__gpu *gpu, uint32_t n, uint64_t m, struct mm_tiles *t) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    struct mm_tiles f = forced_tiles(gpu);
    t->h16 = use_h16(gpu);
    uint32_t es = t->h16 ? 2 : 4;
    uint32_t side = m <= 32 || n <= 32 ? 32 : m <= 64 || n <= 64 ? 64 : 128;
    t->bm = f.bm ? f.bm : side;
    t->bn = f.bn ? f.bn : side;
    uint32_t max_wg = VKLLM_MIN(d->max_workgroup_invocations, d->max_workgroup_size[0]);
    while (tile_invocations(t->bm, t->bn) > max_wg) {
        if (t->bn >= t->bm && t->bn > 4) t->bn /= 2;
        else if (t->bm > 4) t->bm /= 2;
        else break;
    }
    t->bk = f.bk ? f.bk : 16;
    while (t->bk > 4 && 2ull * (t->bm + t->bn) * t->bk * es > d->max_shared_memory) t->bk /= 2;
    t->gm = groups_of(t->bm), t->gn = groups_of(t->bn);
    t->wg = tile_invocations(t->bm, t->bn);
    uint64_t shared = 2ull * (t->bm + t->bn) * t->bk * es;
    if (t->wg == 0 || t->wg > max_wg || t->bm % (4 * t->gm) || t->bn % (4 * t->gn) || t->bk % 4 ||
        shared > d->max_shared_memory)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "matmul: no tiling fits the device (BM %u, BN %u, BK %u: %u invocations of at most %u, "
                          "%llu bytes of shared memory of at most %u)",
                          t->bm, t->bn, t->bk, t->wg, max_wg, (unsigned long long)shared, d->max_shared_memory);
    return VKLLM_STATUS_OK;
}

/* Rows of x and y per dispatch so that both bindings fit the binding limit and every block of
 * rows starts at an aligned offset. */
static vkllm_status rows_per_block(const struct vkllm__gpu *gpu, uint64_t x_row, uint64_t y_row, uint32_t n,
                                   uint32_t bn, uint64_t *out) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    uint64_t align = vkllm__gpu_storage_align(gpu); /* block starts n0 * row aligned for x and y: step | n0 */
    uint64_t step = vkllm__lcm_u64(vkllm__align_step(x_row, align), vkllm__align_step(y_row, align));
    uint64_t widest = x_row > y_row ? x_row : y_row;
    uint64_t r = vkllm__gpu_max_binding(gpu) / widest / step * step;
    uint64_t grid = (uint64_t)d->max_workgroup_count[1] * bn / step * step;
    if (r > grid) r = grid;
    if (r == 0)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "matmul: a row of x (%llu bytes) or y (%llu bytes) exceeds the binding limit of %llu bytes",
                          (unsigned long long)x_row, (unsigned long long)y_row,
                          (unsigned long long)vkllm__gpu_max_binding(gpu));
    *out = r >= n ? n : r;
    return VKLLM_STATUS_OK;
}

static vkllm_status check_args(const struct vkllm__dtensor *w, struct vkllm__view y, struct vkllm__view x, uint32_t n) {
    if (!w || !w->buf || !x.buf || !y.buf || n == 0 || w->k == 0 || w->m == 0)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matmul: missing buffer or empty shape (n=%u)", n);
    if (w->offset % 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matmul: weight offset %llu is not word aligned",
                          (unsigned long long)w->offset);
    if (w->k > UINT32_MAX / 4 || w->m > UINT32_MAX / 4 || w->row_bytes > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matmul: matrix of %llu x %llu is too large",
                          (unsigned long long)w->m, (unsigned long long)w->k);
    uint64_t need_x = (uint64_t)n * w->k * 4, need_y = (uint64_t)n * w->m * 4;
    if (vkllm__view_bytes(x) < need_x || vkllm__view_bytes(y) < need_y)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "matmul: x has %llu bytes (needs %llu), y has %llu bytes (needs %llu)",
                          (unsigned long long)vkllm__view_bytes(x), (unsigned long long)need_x,
                          (unsigned long long)vkllm__view_bytes(y), (unsigned long long)need_y);
    return VKLLM_STATUS_OK;
}

/* CPU devices (lavapipe): staging tiles through shared memory costs more than it saves there,
 * and the decode kernel reading each weight unit once for 8 columns of x is faster (pp32 of a
 * TinyLlama-shaped Q8_0: 2.7x). GPUs use the tiled kernel from 9 rows of x on; up to 8 (a
 * batched decode step, a short prompt) take the decode kernel's batched columns as ggml-vulkan
 * does (its mul_mat_vec up to 8 columns), so a sequence's logits in a batch are the bits it gets
 * decoded alone. The tuning's matmul (0 tiled, 1 matvec) overrides; forced tiles (tests) mean the
 * tiled kernel. */
#define VKLLM__MM_MATVEC_COLS 8

static int use_matvec(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n) {
    struct mm_tiles f = forced_tiles(gpu);
    long mode = vkllm__gpu_tuning(gpu)->matmul;
    if (f.bm || f.bn || f.bk || w->k % 4 || mode == 0) return 0;
    return mode == 1 || vkllm__gpu_info(gpu)->type == VKLLM_DEVICE_CPU || n <= VKLLM__MM_MATVEC_COLS;
}

int vkllm__matmul_uses_matvec(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n) {
    return w && w->buf && use_matvec(gpu, w, n);
}

int vkllm__matmul_uses_h16(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n) {
    return w && w->buf && !use_matvec(gpu, w, n) && use_h16(gpu);
}

int vkllm__matmul_uses_coopmat(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n) {
    struct vkllm__mm_coopmat p;
    int emulated;
    return w && w->buf && !use_matvec(gpu, w, n) && use_coopmat(gpu, w, n, &p, &emulated);
}

vkllm_status vkllm__op_matmul(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                              struct vkllm__view x, uint32_t n) {
    if (w && !w->buf && w->tb) return vkllm__op_matmul_tb(c, y, w, x, n); /* repacked only (ops_matvec_tb.c) */
    vkllm_status st = check_args(w, y, x, n);
    if (st) return st;
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "matmul");
    if (!sh) return VKLLM_STATUS_UNSUPPORTED;
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    if (use_matvec(gpu, w, n)) return vkllm__op_matvec(c, y, w, x, n);
    struct mm_tiles t;
    struct vkllm__mm_coopmat cm;
    uint64_t chunk = 0, block = 0;
    int emulated = 0, coopmat = use_coopmat(gpu, w, n, &cm, &emulated);
    if (coopmat) t = (struct mm_tiles){.bm = cm.bm, .bn = cm.bn, .bk = cm.bk, .wg = cm.wg, .h16 = 1};
    else if ((st = pick_tiles(gpu, n, w->m, &t))) return st;
    if ((st = vkllm__dtensor_chunk_rows(gpu, w, &chunk))) return st;
    if ((st = rows_per_block(gpu, w->k * 4, w->m * 4, n, t.bn, &block))) return st;
    if ((chunk + t.bm - 1) / t.bm > d->max_workgroup_count[0])
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matmul: %llu weight rows in one binding exceed the grid limit",
                          (unsigned long long)chunk);
    for (uint64_t n0 = 0; n0 < n; n0 += block) {
        uint32_t nb = (uint32_t)VKLLM_MIN(block, n - n0);
        for (uint64_t r0 = 0; r0 < w->m; r0 += chunk) {
            uint32_t rows = (uint32_t)VKLLM_MIN(chunk, w->m - r0);
            struct vkllm__binding wb; /* chunk starts are aligned: only the last can end inside a word */
            if ((st = vkllm__dtensor_rows(w, r0, rows, "matmul", &wb))) return st;
            struct vkllm__pc_matmul pc = {nb,          rows, (uint32_t)w->k, (uint32_t)w->row_bytes, (uint32_t)w->m,
                                          (uint32_t)r0};
            struct vkllm__dispatch dp = {
                .shader = t.h16 ? sh->matmul_h16 : sh->matmul,
                .n_spec = 6,
                .spec = {t.wg, t.bm, t.bn, t.bk, t.gm, t.gn},
                .n_bind = 3,
                .bind = {wb,
                         {x.buf, x.offset + n0 * w->k * 4, (uint64_t)nb * w->k * 4},
                         {y.buf, y.offset + n0 * w->m * 4, (uint64_t)nb * w->m * 4}},
                .push = &pc,
                .push_size = sizeof pc,
                .groups = {(rows + t.bm - 1) / t.bm, (nb + t.bn - 1) / t.bn, 1},
                .label = t.h16 ? "matmul_h16" : "matmul",
            };
            if (coopmat) { /* matmul.comp's COOPMAT variant: its own specialization constants */
                dp.shader = emulated ? emu_shader(w->type, 0) : sh->matmul_cm, dp.n_spec = 7, dp.subgroup = cm.subgroup;
                dp.label = emulated ? "matmul_cm_emu" : "matmul_cm";
                uint32_t spec[7] = {cm.wg, cm.bm, cm.bn, cm.bk, cm.tm, cm.tn, cm.tk};
                memcpy(dp.spec, spec, sizeof spec);
            }
            if ((st = vkllm__spec_rp(&dp, w))) return st;
            /* each workgroup loads its BM weight rows and its BN rows of x, all of k */
            uint64_t wbytes = (uint64_t)rows * w->row_bytes * dp.groups[1];
            dp.cost.bytes_read = wbytes + (uint64_t)nb * w->k * 4 * dp.groups[0];
            dp.cost.weight_bytes = wbytes;
            dp.cost.bytes_written = (uint64_t)nb * rows * 4;
            dp.cost.flops = 2ull * nb * rows * w->k;
            if ((st = vkllm__cmd_dispatch(c, &dp))) return st;
        }
    }
    return VKLLM_STATUS_OK;
}

/* --- mixture-of-experts prefill: the grouped GEMM (matmul.comp's MATMUL_ID) ------------------ */

/* Picks per used expert, on average: what the tiles are sized by (a tile holds one expert's). */
static uint32_t picks_per_expert(uint32_t n_expert, uint32_t ncols) {
    uint32_t used = VKLLM_MAX(1u, VKLLM_MIN(ncols, n_expert));
    return (ncols + used - 1) / used;
}

int vkllm__matmul_id_applies(const struct vkllm__gpu *gpu, const struct vkllm__dtensor *w, uint32_t n_expert,
                             uint32_t ncols, int *h16) {
    if (h16) *h16 = 0;
    if (!w || !w->buf || n_expert == 0 || ncols == 0 || !vkllm__type_kernels(w->type, "matmul_id")) return 0;
    struct mm_tiles f = forced_tiles(gpu);
    long mode = vkllm__gpu_tuning(gpu)->matmul;
    int on = mode == 0 || f.bm || f.bn || f.bk;
    /* by default GPUs only (CPU devices: the texel kernels, as the dense products), from more picks
     * per used expert than a matvec tile holds: below that the grouped matvec reads each expert
     * once per tile as well, with no padded tile */
    if (!on && mode != 1)
        on = vkllm__gpu_info(gpu)->type != VKLLM_DEVICE_CPU &&
             picks_per_expert(n_expert, ncols) > vkllm__moe_group_cols();
    if (on && h16) *h16 = use_h16(gpu);
    return on;
}

vkllm_status vkllm__op_matmul_id(struct vkllm__cmd *c, struct vkllm__view y, const struct vkllm__dtensor *w,
                                 uint32_t n_expert, struct vkllm__view x, uint32_t x_div, uint32_t x_stride,
                                 struct vkllm__view group, uint32_t ncols) {
    if (!w || !w->buf || w->k == 0 || w->m == 0 || w->k > UINT32_MAX / 4 || w->row_bytes > UINT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matmul_id: empty or oversized weight matrix");
    if (w->offset % 4)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "matmul_id: weight offset %llu is not word aligned",
                          (unsigned long long)w->offset);
    if (n_expert == 0 || n_expert > 1024 || w->m % n_expert || ncols == 0 || x_div == 0 || x_stride < w->k ||
        !group.buf)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "matmul_id: %llu rows of %llu for %u experts, %u columns, x_div %u, x_stride %u%s",
                          (unsigned long long)w->m, (unsigned long long)w->k, n_expert, ncols, x_div, x_stride,
                          group.buf ? "" : ", no grouping");
    const struct vkllm__type_kernels *sh = vkllm__type_kernels(w->type, "matmul_id");
    if (!sh) return VKLLM_STATUS_UNSUPPORTED;
    struct vkllm__gpu *gpu = vkllm__cmd_gpu(c);
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    uint64_t m = w->m / n_expert, per, gb = vkllm__moe_group_bytes(ncols, n_expert);
    uint32_t n_chunks;
    vkllm_status st;
    if ((st = vkllm__moe_expert_chunks(gpu, w, n_expert, "matmul_id", &per, &n_chunks))) return st;
    uint64_t nx = (uint64_t)((ncols + x_div - 1) / x_div - 1) * x_stride + w->k;
    if ((st = vkllm__op_need("matmul_id", "x", x, nx * 4)) || (st = vkllm__op_need("matmul_id", "group", group, gb)) ||
        (st = vkllm__op_need("matmul_id", "y", y, 4ull * ncols * m)))
        return st;
    /* tiles sized by the picks per used expert, as vkllm__op_matmul sizes them by its rows */
    uint32_t avg = picks_per_expert(n_expert, ncols);
    struct mm_tiles t;
    struct vkllm__mm_coopmat cm;
    int emulated = 0, coopmat = use_coopmat_rows(gpu, w->type, m, avg, &cm, &emulated);
    if (coopmat && emulated && emu_shader(w->type, 1) == VKLLM__SHADER_COUNT_) coopmat = 0;
    if (coopmat) t = (struct mm_tiles){.bm = cm.bm, .bn = cm.bn, .bk = cm.bk, .wg = cm.wg, .h16 = 1};
    else if ((st = pick_tiles(gpu, avg, m, &t))) return st;
    /* the tiles' column list (BN words) beside the tiles pick_tiles fitted */
    uint64_t shared = 2ull * (t.bm + t.bn) * t.bk * (t.h16 ? 2 : 4) + 4ull * t.bn;
    if (shared > d->max_shared_memory || (m + t.bm - 1) / t.bm > d->max_workgroup_count[0])
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matmul_id: tiles of %u x %u over experts of %llu rows do not fit",
                          t.bm, t.bn, (unsigned long long)m);
    uint32_t width = vkllm__moe_group_tiles(ncols, n_expert), list = 4 + 4 * width;
    for (uint32_t e0 = 0; e0 < n_expert; e0 += (uint32_t)per) {
        uint32_t e1 = (uint32_t)VKLLM_MIN((uint64_t)n_expert, e0 + per);
        /* an upper bound of the tiles: each group's picks / BN rounded up (the group of ids past
         * n_expert with the first chunk) */
        uint64_t groups = (uint64_t)(e1 - e0) + (e0 == 0), tiles = ncols / t.bn + VKLLM_MIN((uint64_t)ncols, groups);
        if (tiles > d->max_workgroup_count[1])
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "matmul_id: %u columns exceed the dispatch grid", ncols);
        struct vkllm__pc_matmul_id pc = {
            (uint32_t)m, (uint32_t)w->k, (uint32_t)w->row_bytes, x_div, x_stride, n_expert, e0, e1, list, list + ncols};
        struct vkllm__dispatch dp = {
            .shader = t.h16 ? sh->matmul_id_h16 : sh->matmul_id,
            .n_spec = 6,
            .spec = {t.wg, t.bm, t.bn, t.bk, t.gm, t.gn},
            .n_bind = 4,
            .bind = {{0}, vkllm__bind(x), vkllm__bind(y), vkllm__bind(group)},
            .push = &pc,
            .push_size = sizeof pc,
            .groups = {(uint32_t)((m + t.bm - 1) / t.bm), (uint32_t)tiles, 1},
            .label = t.h16 ? "matmul_id_h16" : "matmul_id",
        };
        if (coopmat) { /* the COOPMAT variant: its own specialization constants */
            dp.shader = emulated ? emu_shader(w->type, 1) : sh->matmul_id_cm, dp.n_spec = 7;
            dp.subgroup = cm.subgroup, dp.label = emulated ? "matmul_id_cm_emu" : "matmul_id_cm";
            uint32_t spec[7] = {cm.wg, cm.bm, cm.bn, cm.bk, cm.tm, cm.tn, cm.tk};
            memcpy(dp.spec, spec, sizeof spec);
        }
        if ((st = vkllm__spec_rp(&dp, w))) return st;
        if ((st = vkllm__dtensor_rows(w, (uint64_t)e0 * m, (uint64_t)(e1 - e0) * m, "matmul_id", &dp.bind[0])))
            return st;
        /* each used expert's rows once per tile of its picks (at most ncols / BN + one per used
         * expert; over chunks, each its share), x once per BM rows */
        uint64_t used = VKLLM_MIN((uint64_t)ncols, (uint64_t)n_expert), reads = ncols / t.bn + used;
        uint64_t share = n_chunks == 1 ? reads : (reads * (e1 - e0) + n_expert - 1) / n_expert;
        dp.cost.weight_bytes = share * m * w->row_bytes;
        dp.cost.bytes_read = dp.cost.weight_bytes + (uint64_t)dp.groups[0] * ncols * w->k * 4 / n_chunks + gb;
        dp.cost.bytes_written = (uint64_t)ncols * m * 4 / n_chunks;
        dp.cost.flops = 2ull * ncols * m * w->k / n_chunks;
        if ((st = vkllm__cmd_dispatch(c, &dp))) return st;
    }
    return VKLLM_STATUS_OK;
}
