/* cases.c - the case lists of every op (see check.h): short ones for `vkllm selftest` (every
 * kernel and every variant on a few shapes) and full ones for the op tests (shapes that are
 * multiples of nothing, every type, chunked bindings, every work split). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "types.h"

/* The case lists are tables, laid out by hand: clang-format would put designated initializers
 * one per line. */
// clang-format off

void vkllm__case_list_add(struct vkllm__case_list *l, const struct vkllm__op_case *c) {
    if (l->st) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct vkllm__op_case *v = vkllm__realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->st = vkllm__err(VKLLM_STATUS_OOM, "case list of %zu cases", cap);
            return;
        }
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = *c;
}

void vkllm__case_list_free(struct vkllm__case_list *l) {
    vkllm__free(l->v);
    *l = (struct vkllm__case_list){0};
}

/* c with its variant printf'd into it, appended. */
static void addv(struct vkllm__case_list *l, struct vkllm__op_case c, const char *fmt, ...) VKLLM_PRINTF(3, 4);
static void addv(struct vkllm__case_list *l, struct vkllm__op_case c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c.tuning, sizeof c.tuning, fmt, ap);
    va_end(ap);
    vkllm__case_list_add(l, &c);
}
#define ADD(l, ...) vkllm__case_list_add(l, &(struct vkllm__op_case){__VA_ARGS__})

static const uint32_t k_types[] = {
    VKLLM__TYPE_F32,  VKLLM__TYPE_F16,  VKLLM__TYPE_BF16, VKLLM__TYPE_Q8_0, VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q4_1,
    VKLLM__TYPE_Q5_0, VKLLM__TYPE_Q5_1, VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K, VKLLM__TYPE_IQ4_NL,
    VKLLM__TYPE_IQ4_XS, VKLLM__TYPE_Q2_K, VKLLM__TYPE_Q3_K, VKLLM__TYPE_MXFP4,
};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

static uint32_t block_of(uint32_t type) { return vkllm__type_traits(type)->block_size; }

/* The row length a short case uses: two super-blocks, or 520 elements for the plain types. */
static uint32_t short_k(uint32_t type) { return block_of(type) == 1 ? 520 : 512; }

/* --- elementwise and row ops ----------------------------------------------------------------- */

static void elementwise_short(struct vkllm__case_list *l) {
    ADD(l, .op = VKLLM__OP_ADD, .rows = 3, .cols = 1000);
    ADD(l, .op = VKLLM__OP_ADD, .rows = 2, .cols = 1u << 20); /* 8 MiB per operand */
    ADD(l, .op = VKLLM__OP_ADD, .rows = 7, .cols = 4099, .nb = 4099); /* bias row repeated */
    ADD(l, .op = VKLLM__OP_MUL, .rows = 5, .cols = 777, .nb = 777);
    ADD(l, .op = VKLLM__OP_RMSNORM, .rows = 3, .cols = 4096);
    ADD(l, .op = VKLLM__OP_RMSNORM, .rows = 17, .cols = 333, .flags = VKLLM__CASE_LARGE);
    ADD(l, .op = VKLLM__OP_SOFTMAX, .rows = 5, .cols = 1);
    ADD(l, .op = VKLLM__OP_SOFTMAX, .rows = 4, .cols = 1000, .flags = VKLLM__CASE_NEG_INF);
    ADD(l, .op = VKLLM__OP_SOFTMAX, .rows = 2, .cols = 32000, .flags = VKLLM__CASE_LARGE);
    ADD(l, .op = VKLLM__OP_SILU_MUL, .rows = 3, .cols = 5632);
    ADD(l, .op = VKLLM__OP_GELU_MUL, .rows = 3, .cols = 5632);
    ADD(l, .op = VKLLM__OP_GELU_MUL, .rows = 2, .cols = 333, .flags = VKLLM__CASE_LARGE);
    ADD(l, .op = VKLLM__OP_GELU_MUL, .rows = 2, .cols = 333, .flags = VKLLM__CASE_NONFINITE);
    ADD(l, .op = VKLLM__OP_SWIGLU_OAI, .rows = 3, .cols = 2880, .flags = VKLLM__CASE_LARGE); /* past the clamps */
    ADD(l, .op = VKLLM__OP_SOFTCAP, .rows = 2, .cols = 32000, .nb = 1, .flags = VKLLM__CASE_LARGE);
    ADD(l, .op = VKLLM__OP_SOFTCAP, .rows = 2, .cols = 1000, .nb = 1, .flags = VKLLM__CASE_NONFINITE);
    ADD(l, .op = VKLLM__OP_ADD_RMSNORM, .rows = 3, .cols = 2048, .flags = VKLLM__CASE_INPLACE);
    ADD(l, .op = VKLLM__OP_ADD_RMSNORM, .rows = 2, .cols = 333, .tuning = "ops_wg=32");
}

/* Lengths that are multiples of nothing, with several workgroup sizes; rows of a vocabulary and
 * beyond; grids that spill into y past 65535 workgroups. */
static void elementwise_full(struct vkllm__case_list *l) {
    static const uint32_t wgs[] = {0, 32, 64, 128, 1024};
    static const uint32_t lens[] = {1, 2, 7, 31, 33, 255, 257, 1000, 4099};
    for (size_t w = 0; w < sizeof wgs / sizeof wgs[0]; w++)
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            uint32_t n = lens[i];
            const struct vkllm__op_case cs[] = {
                {.op = VKLLM__OP_ADD, .rows = 3, .cols = n},
                {.op = VKLLM__OP_ADD, .rows = 3, .cols = n, .nb = n}, /* b repeated per row */
                {.op = VKLLM__OP_MUL, .rows = 2, .cols = n, .nb = n},
                {.op = VKLLM__OP_SILU_MUL, .rows = 2, .cols = n},
                {.op = VKLLM__OP_GELU_MUL, .rows = 2, .cols = n},
                {.op = VKLLM__OP_SWIGLU_OAI, .rows = 2, .cols = n},
                {.op = VKLLM__OP_SOFTCAP, .rows = 2, .cols = n, .nb = 1},
                {.op = VKLLM__OP_RMSNORM, .rows = 5, .cols = n},
                {.op = VKLLM__OP_RMSNORM, .rows = 2, .cols = n, .flags = VKLLM__CASE_LARGE},
                {.op = VKLLM__OP_ADD_RMSNORM, .rows = 3, .cols = n},
                {.op = VKLLM__OP_ADD_RMSNORM, .rows = 2, .cols = n, .flags = VKLLM__CASE_INPLACE | VKLLM__CASE_LARGE},
                {.op = VKLLM__OP_SOFTMAX, .rows = 3, .cols = n},
                {.op = VKLLM__OP_SOFTMAX, .rows = 3, .cols = n, .flags = VKLLM__CASE_NEG_INF},
                {.op = VKLLM__OP_SOFTMAX, .rows = 2, .cols = n, .flags = VKLLM__CASE_LARGE},
            };
            for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
                if (wgs[w]) addv(l, cs[c], "ops_wg=%u", wgs[w]);
                else vkllm__case_list_add(l, &cs[c]);
        }
    static const uint32_t long_rows[] = {32000, 65537, 151936, 200000};
    for (size_t i = 0; i < sizeof long_rows / sizeof long_rows[0]; i++) {
        ADD(l, .op = VKLLM__OP_SOFTMAX, .rows = 1, .cols = long_rows[i]);
        ADD(l, .op = VKLLM__OP_SOFTMAX, .rows = 2, .cols = long_rows[i], .tuning = "ops_wg=256",
            .flags = VKLLM__CASE_NEG_INF | VKLLM__CASE_LARGE);
        ADD(l, .op = VKLLM__OP_RMSNORM, .rows = 1, .cols = long_rows[i]);
    }
    ADD(l, .op = VKLLM__OP_RMSNORM, .rows = 70001, .cols = 3, .tuning = "ops_wg=32");
    ADD(l, .op = VKLLM__OP_SOFTMAX, .rows = 70001, .cols = 2, .tuning = "ops_wg=32");
    ADD(l, .op = VKLLM__OP_ADD, .rows = 40, .cols = 70001, .nb = 70001, .tuning = "ops_wg=32"); /* 2D grid */
    elementwise_short(l);
}

static int is_elementwise(enum vkllm__op op) {
    return op == VKLLM__OP_ADD || op == VKLLM__OP_MUL || op == VKLLM__OP_SILU_MUL || op == VKLLM__OP_GELU_MUL ||
           op == VKLLM__OP_SWIGLU_OAI ||
           op == VKLLM__OP_SOFTCAP || op == VKLLM__OP_RMSNORM ||
           op == VKLLM__OP_ADD_RMSNORM || op == VKLLM__OP_SOFTMAX;
}

/* --- matvec and get_rows --------------------------------------------------------------------- */

/* The storage-buffer matvec's work splits: the device's, subgroupAdd over 8 lanes, the
 * shared-memory reductions, one lane per row group with x per lane or shared, no subgroup ops. */
static const char *const k_splits[] = {
    "",
    "matvec_wg=64,matvec_nt=8,matvec_nr=2,matvec_sg=1",
    "matvec_wg=64,matvec_nt=8,matvec_nr=3,matvec_sg=0",
    "matvec_wg=32,matvec_nt=4,matvec_nr=1,matvec_sg=1",
    "matvec_wg=128,matvec_nt=1,matvec_nr=4,matvec_sg=1,matvec_xs=0",
    "matvec_wg=64,matvec_nt=1,matvec_nr=3,matvec_sg=1,matvec_xs=1",
    "matvec_wg=16,matvec_nt=1,matvec_nr=1,matvec_sg=0",
    "matvec_wg=32,matvec_nt=32,matvec_nr=2,matvec_sg=1",
};
#define N_SPLITS (sizeof k_splits / sizeof k_splits[0])

/* Row lengths per type: the smallest legal one, a few blocks, and model-sized ones. */
static uint32_t row_lengths(uint32_t type, uint32_t *ks) {
    uint32_t b = block_of(type), n = 0;
    if (b == 1) {
        static const uint32_t plain[] = {1, 7, 16, 33, 2048, 5632};
        memcpy(ks, plain, sizeof plain);
        return 6;
    }
    ks[n++] = b;
    ks[n++] = 3 * b;
    if (b < 256) ks[n++] = 7 * b;
    ks[n++] = 2048;
    ks[n++] = 5632;
    return n;
}

/* The types the int8-x kernel takes (matvec_x8.comp; runtime/ops/kernels.c's column). */
static const uint32_t x8_types[] = {VKLLM__TYPE_Q8_0, VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q4_1, VKLLM__TYPE_Q5_0,
                                    VKLLM__TYPE_Q5_1, VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K};
static int is_x8_type(uint32_t type) {
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(x8_types); i++)
        if (x8_types[i] == type) return 1;
    return 0;
}

/* The int8-x kernel (GPUs; forced here): every type with the instruction (the full list: and
 * without); then integer arithmetic, three columns, another work split and x in several chunks
 * (5632 elements of 3 columns: 4352 at a time) on one type of each item kind (block of realigned
 * words, 16-byte words of a K-quant, Q6_K's quarters). */
static void x8_cases(int full, struct vkllm__case_list *l) {
    for (size_t t = 0; t < VKLLM_ARRAY_LEN(x8_types); t++) {
        uint32_t type = x8_types[t];
        struct vkllm__op_case c = {.op = VKLLM__OP_MATVEC, .type = type, .rows = 33, .cols = short_k(type), .n = 1,
                                   .flags = VKLLM__CASE_X8};
        int rep = type == VKLLM__TYPE_Q5_0 || type == VKLLM__TYPE_Q5_K || type == VKLLM__TYPE_Q6_K;
        if (full) { /* the full list's additions to the short one's */
            if (!rep) addv(l, c, "%s", "matvec_texel=0,matvec_x8=2");
            continue;
        }
        addv(l, c, "%s", "matvec_texel=0,matvec_x8=1");
        if (!rep) continue;
        addv(l, c, "%s", "matvec_texel=0,matvec_x8=2");
        addv(l, (c.n = 3, c), "%s", "matvec_texel=0,matvec_x8=1");
        addv(l, (c.n = 1, c.rows = 100, c), "%s", "matvec_texel=0,matvec_x8=1,matvec_wg=64,matvec_nr=3");
        addv(l, (c.n = 3, c.rows = 65, c.cols = 5632, c), "%s", "matvec_texel=0,matvec_x8=1");
        /* 3 blocks of 32 a row: x quantized once per step pads its last group of 4 blocks */
        if (type == VKLLM__TYPE_Q5_0) addv(l, (c.n = 3, c.rows = 33, c.cols = 96, c), "%s", "matvec_texel=0,matvec_x8=1");
    }
}

/* The short list: every type with the device's split and several columns; every work split on the
 * first 11 types, whose units cover every way a unit is read (plain, 2-byte-realigned, word-aligned
 * blocks, K-quant groups of 64 and 128). The table types and the newer K-quants take every split in
 * the full list (test_op_matvec); here each split's pipeline costs a compile on every selftest. */
#define N_SPLIT_TYPES 11u
static void matvec_short(enum vkllm__op op, struct vkllm__case_list *l) {
    /* larger than one allocation: split by rows into buffers (2176-, 420- and 192-byte rows), the
     * binding's chunks within them; x, y and o within one allocation */
    static const struct { uint32_t type, m, k, max_alloc, max_binding; } split[] = {
        {VKLLM__TYPE_Q8_0, 64, 2048, 60000, 0}, {VKLLM__TYPE_Q8_0, 64, 2048, 60000, 20000},
        {VKLLM__TYPE_Q6_K, 33, 512, 6500, 0},   {VKLLM__TYPE_F16, 100, 96, 6000, 1000},
    };
    for (size_t i = 0; (op == VKLLM__OP_MATVEC || op == VKLLM__OP_GET_ROWS) && i < VKLLM_ARRAY_LEN(split); i++) {
        struct vkllm__op_case c = {.op = op, .type = split[i].type, .rows = split[i].m, .cols = split[i].k,
                                   .n = op == VKLLM__OP_GET_ROWS ? 2 : 1, .flags = VKLLM__CASE_SPLIT};
        addv(l, c, "max_alloc=%u,max_binding=%u", split[i].max_alloc, split[i].max_binding);
        if (op == VKLLM__OP_MATVEC) addv(l, (c.n = 3, c), "max_alloc=%u,max_binding=%u", split[i].max_alloc, split[i].max_binding);
    }
    if (op == VKLLM__OP_MATVEC) {
        x8_cases(0, l);
        /* an inf / a NaN in x: the int8-x kernel, the storage-buffer kernel, the device's default */
        ADD(l, .op = op, .type = VKLLM__TYPE_Q4_K, .rows = 33, .cols = 512, .n = 2,
            .flags = VKLLM__CASE_NONFINITE | VKLLM__CASE_X8, .tuning = "matvec_texel=0,matvec_x8=1");
        ADD(l, .op = op, .type = VKLLM__TYPE_Q8_0, .rows = 33, .cols = 512, .n = 2, .flags = VKLLM__CASE_NONFINITE,
            .tuning = "matvec_texel=0,matvec_x8=0");
        ADD(l, .op = op, .type = VKLLM__TYPE_Q8_0, .rows = 33, .cols = 512, .n = 2, .flags = VKLLM__CASE_NONFINITE);
        /* f16/bf16 rows of 1032 bytes: not 16-byte aligned, so read in 4-byte words (520: 16-byte words) */
        ADD(l, .op = op, .type = VKLLM__TYPE_F16, .rows = 33, .cols = 516, .n = 1);
        ADD(l, .op = op, .type = VKLLM__TYPE_BF16, .rows = 33, .cols = 516, .n = 1);
    }
    for (size_t t = 0; t < N_TYPES; t++) {
        struct vkllm__op_case c = {.op = op, .type = k_types[t], .rows = 33, .cols = short_k(k_types[t]), .n = 1};
        if (op == VKLLM__OP_GET_ROWS) {
            c.n = 7;
            vkllm__case_list_add(l, &c);
            continue;
        }
        if (t < N_SPLIT_TYPES)
            for (size_t s = 0; s < N_SPLITS; s++) addv(l, c, "%s", k_splits[s]);
        else
            vkllm__case_list_add(l, &c);
        c.n = 3; /* several columns, each bit-identical to the column alone */
        vkllm__case_list_add(l, &c);
    }
}

/* Every type, row lengths and counts that are multiples of nothing, W at an offset, several
 * columns, every work split on some shapes, and W bound in row chunks (binding limit lowered). */
static void matvec_full(enum vkllm__op op, struct vkllm__case_list *l) {
    static const uint32_t ms[] = {1, 7, 33, 1000, 4099};
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t ks[8], nk = row_lengths(k_types[t], ks);
        uint64_t rb;
        for (uint32_t ki = 0; ki < nk; ki++)
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                uint32_t m = ms[mi], k = ks[ki];
                if ((uint64_t)m * k > 6000000 || vkllm__row_size(k_types[t], k, &rb)) continue;
                struct vkllm__op_case c = {.op = op, .type = k_types[t], .rows = m, .cols = k, .n = 1,
                                           .flags = (mi & 1) ? VKLLM__CASE_OFFSET : 0};
                if (op == VKLLM__OP_GET_ROWS) {
                    c.n = 7;
                    if (k <= 2048 && m >= 7) vkllm__case_list_add(l, &c);
                } else {
                    vkllm__case_list_add(l, &c);
                    /* several columns: every pipeline variant costs a JIT compile on lavapipe, so few */
                    int cols = k % 4 == 0 && k <= 2048 && m == 33;
                    for (uint32_t nc = 3; cols && nc <= 11; nc += 8) addv(l, (c.n = nc, c), "%s", "");
                    c.n = 1;
                    if (m == 33 || (m == 1000 && k <= 2048))
                        for (size_t s = 1; s < N_SPLITS; s++) {
                            addv(l, c, "%s", k_splits[s]);
                            if (cols && (s == 1 || s == 2 || s == 5)) addv(l, (c.n = 3, c), "%s", k_splits[s]), c.n = 1;
                        }
                }
                /* chunked binding: x, y and o bound whole, W in chunks of its rows */
                if (m < 33 || k > 2048) continue;
                uint64_t limits[] = {65536, 4096, rb * m / 3};
                for (size_t li = 0; li < 3; li++) {
                    if (limits[li] < 28ull * k || limits[li] < 4ull * m + 256 || limits[li] >= rb * m) continue;
                    if (op == VKLLM__OP_GET_ROWS) {
                        addv(l, c, "max_binding=%llu", (unsigned long long)limits[li]);
                        continue;
                    }
                    addv(l, c, "max_binding=%llu", (unsigned long long)limits[li]);
                    if (k % 4 == 0) addv(l, (c.n = 3, c), "max_binding=%llu", (unsigned long long)limits[li]), c.n = 1;
                    addv(l, c, "max_binding=%llu,%s", (unsigned long long)limits[li], k_splits[1]);
                }
            }
    }
    /* a matrix made the way models load, and the short list's shapes */
    ADD(l, .op = op, .type = VKLLM__TYPE_Q8_0, .rows = 64, .cols = 2048, .n = op == VKLLM__OP_GET_ROWS ? 7 : 1,
        .flags = VKLLM__CASE_UPLOADED);
    if (op == VKLLM__OP_MATVEC) x8_cases(1, l);
    matvec_short(op, l);
}

/* --- matvec_tb --------------------------------------------------------------------------------- */

/* Work splits other than the default (8 invocations of 4 rows): rows per invocation 8, 2, 1. */
static const char *const k_tb_splits[] = {"matvec_tb_wg=64,matvec_tb_nr=8", "matvec_tb_wg=16,matvec_tb_nr=2",
                                          "matvec_tb_wg=8,matvec_tb_nr=1"};

static void matvec_tb_short(struct vkllm__case_list *l) {
    for (size_t t = 0; t < N_TYPES; t++)
        ADD(l, .op = VKLLM__OP_MATVEC_TB, .type = k_types[t], .rows = 33, .cols = 512, .n = 3,
            .flags = VKLLM__CASE_BOTH_PATHS, .tuning = "matvec_texel=1");
    static const uint32_t types[] = {VKLLM__TYPE_F16, VKLLM__TYPE_Q8_0, VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q6_K};
    for (size_t t = 0; t < VKLLM_ARRAY_LEN(types); t++)
        for (size_t s = 0; s < VKLLM_ARRAY_LEN(k_tb_splits); s++)
            addv(l, (struct vkllm__op_case){.op = VKLLM__OP_MATVEC_TB, .type = types[t], .rows = 33, .cols = 512,
                                            .n = s == 0 ? 8 : 3, .flags = VKLLM__CASE_BOTH_PATHS},
                 "matvec_texel=1,%s", k_tb_splits[s]);
    /* the texel copy beside W in the 16-byte layout (Q6_K rows 12 bytes longer than the file's): both
     * made from the file's rows */
    ADD(l, .op = VKLLM__OP_MATVEC_TB, .type = VKLLM__TYPE_Q6_K, .rows = 33, .cols = 512, .n = 3,
        .flags = VKLLM__CASE_BOTH_PATHS | VKLLM__CASE_RP, .tuning = "matvec_texel=1,repack=1");
    /* W in chunks of two 8-row groups and 3 texels (Q8_0 k = 512: 256 texels per group) */
    ADD(l, .op = VKLLM__OP_MATVEC_TB, .type = VKLLM__TYPE_Q8_0, .rows = 33, .cols = 512, .n = 2,
        .tuning = "matvec_texel=1,max_texels=515");
}

/* Texels of one 8-row group of rows of k elements of type (the repacked layout, ops_matvec_tb.c):
 * units of 4 (f32, bf16), 8 (f16) or 32 elements, the int8 formats two texels per unit. */
static uint64_t tb_group_texels(uint32_t type, uint32_t k) {
    uint32_t unit = type == VKLLM__TYPE_F32 || type == VKLLM__TYPE_BF16 ? 4 : type == VKLLM__TYPE_F16 ? 8 : 32;
    int two = type == VKLLM__TYPE_Q8_0 || type == VKLLM__TYPE_Q6_K || type == VKLLM__TYPE_Q5_0 ||
              type == VKLLM__TYPE_Q5_1 || type == VKLLM__TYPE_Q5_K || type == VKLLM__TYPE_IQ4_NL ||
              type == VKLLM__TYPE_IQ4_XS || type == VKLLM__TYPE_Q2_K || type == VKLLM__TYPE_Q3_K ||
              type == VKLLM__TYPE_MXFP4;
    return (uint64_t)(k + unit - 1) / unit * (two ? 2 : 1) * 8;
}

/* Every storage format: rows not a multiple of the 8-row group, k not a multiple of the unit
 * where the type allows it, batches of up to 8 columns, W in chunks of 1, 2 and 3 groups, x over
 * several texel bindings. */
static void matvec_tb_full(struct vkllm__case_list *l) {
    static const uint32_t ms[] = {1, 7, 9, 33, 1003};
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = k_types[t], b = block_of(type), ks[4];
        if (b == 1) {
            uint32_t plain[4] = {4, 12, type == VKLLM__TYPE_F16 ? 176 : 172, type == VKLLM__TYPE_F16 ? 2052 : 2048};
            memcpy(ks, plain, sizeof ks);
        } else {
            uint32_t q[4] = {b, 2 * b == 64 ? 96 : 2 * b, b == 32 ? 224 : 3 * b, 2048};
            memcpy(ks, q, sizeof ks);
        }
        for (int ki = 0; ki < 4; ki++)
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                uint32_t m = ms[mi], k = ks[ki];
                struct vkllm__op_case c = {.op = VKLLM__OP_MATVEC_TB, .type = type, .rows = m, .cols = k,
                                           .n = m == 9 || m == 33 ? 8 : m > 100 ? 2 : 3,
                                           .flags = VKLLM__CASE_BOTH_PATHS, .tuning = "matvec_texel=1"};
                vkllm__case_list_add(l, &c);
                if (m != 33) continue;
                uint64_t g = tb_group_texels(type, k);
                uint64_t limits[] = {g, 2 * g + 3, 3 * g};
                c.n = 2, c.flags = 0; /* the last recording is then a chunked one */
                for (int li = 0; li < 3; li++)
                    addv(l, c, "matvec_texel=1,max_texels=%llu", (unsigned long long)limits[li]);
            }
    }
    /* x over several texel bindings: 8 columns of 5632 floats, room for 3 (the weights chunked too) */
    ADD(l, .op = VKLLM__OP_MATVEC_TB, .type = VKLLM__TYPE_Q8_0, .rows = 61, .cols = 5632, .n = 8,
        .tuning = "matvec_texel=1,max_texels=4224");
}

/* --- matmul ------------------------------------------------------------------------------------ */

static void matmul_short(struct vkllm__case_list *l) {
    for (size_t t = 0; t < N_TYPES; t++)
        ADD(l, .op = VKLLM__OP_MATMUL, .type = k_types[t], .rows = 65, .cols = short_k(k_types[t]), .n = 17,
            .tuning = "matmul=tiled");
    ADD(l, .op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q8_0, .rows = 65, .cols = 512, .n = 17, .tuning = "matmul=matvec");
    ADD(l, .op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q4_K, .rows = 65, .cols = 512, .n = 17,
        .tuning = "matmul=matvec,matvec_texel=0,matvec_x8=1", .flags = VKLLM__CASE_X8);
    ADD(l, .op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q4_K, .rows = 100, .cols = 512, .n = 70,
        .tuning = "matmul_bm=32,matmul_bn=16,matmul_bk=8");
    /* 128 x 128 tiles (8 x 8 per invocation) in both precisions: f16 where the device has it */
    ADD(l, .op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q5_0, .rows = 200, .cols = 160, .n = 130,
        .tuning = "matmul=tiled,matmul_coopmat=0");
    ADD(l, .op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q5_0, .rows = 200, .cols = 160, .n = 130,
        .tuning = "matmul=tiled,matmul_f16=0");
    /* cooperative matrices (=1, skipped where the device has none) and their emulation (=2, every
     * device with f16 arithmetic and a required subgroup size: lavapipe too, so the kernel's tiles,
     * offsets, layouts and way out run here): 128 tiles (=1 only: the emulation's accumulators in
     * shared memory leave those to devices with over 80 KiB), 64 (2 x 2 accumulators per subgroup,
     * several workgroups each way) and 32, k not a multiple of the step, edges of both sides masked */
    static const struct {
        uint32_t type, rows, cols, n;
    } cm[] = {{VKLLM__TYPE_Q5_0, 200, 160, 130}, {VKLLM__TYPE_Q5_0, 60, 160, 130}, {VKLLM__TYPE_Q4_K, 100, 512, 40},
              {VKLLM__TYPE_F16, 65, 37, 17}};
    for (int e = 1; e <= 2; e++)
        for (size_t i = e == 2 ? 1 : 0; i < sizeof cm / sizeof cm[0]; i++)
            addv(l, (struct vkllm__op_case){.op = VKLLM__OP_MATMUL, .type = cm[i].type, .rows = cm[i].rows,
                                            .cols = cm[i].cols, .n = cm[i].n, .flags = VKLLM__CASE_COOPMAT},
                 "matmul=tiled,matmul_coopmat=%d", e);
    ADD(l, .op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q6_K, .rows = 7, .cols = 256, .n = 5, .tuning = "matmul=tiled",
        .flags = VKLLM__CASE_UPLOADED); /* 210-byte rows, padded to a word by the upload */
    /* W and x/y in chunks: 66-byte rows, the last chunk ending inside a word */
    ADD(l, .op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q5_0, .rows = 65, .cols = 96, .n = 100,
        .tuning = "matmul=tiled,max_binding=2048");
}

/* The tiled kernel (forced: CPU devices default to the matvec path) on every n x m with small k
 * (the block size, and an odd count of blocks or elements) and long k on a few; W and x/y bound
 * in chunks and row blocks; forced tile sizes; and the matvec path on some. */
static void matmul_full(struct vkllm__case_list *l) {
    static const uint32_t ns[] = {1, 3, 17, 64, 100}, ms[] = {1, 7, 65, 1000};
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t bs = block_of(k_types[t]);
        uint32_t ks[2] = {bs, bs == 1 ? 37 : bs == 32 ? 5 * 32 : 3 * 256}, kbig = bs == 1 ? 2052 : 2048;
        for (int kk = 0; kk < 2; kk++)
            for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
                for (size_t b = 0; b < sizeof ms / sizeof ms[0]; b++)
                    ADD(l, .op = VKLLM__OP_MATMUL, .type = k_types[t], .rows = ms[b], .cols = ks[kk], .n = ns[a],
                        .tuning = "matmul=tiled");
        static const uint32_t big[][2] = {{1, 1000}, {17, 7}, {100, 300}};
        for (int i = 0; i < 3; i++) {
            ADD(l, .op = VKLLM__OP_MATMUL, .type = k_types[t], .rows = big[i][1], .cols = kbig, .n = big[i][0],
                .tuning = "matmul=tiled");
            ADD(l, .op = VKLLM__OP_MATMUL, .type = k_types[t], .rows = big[i][1], .cols = kbig, .n = big[i][0],
                .tuning = "matmul=matvec");
        }
    }
    static const struct {
        uint32_t limit, type, n, m, k;
    } chunked[] = {
        {12288, VKLLM__TYPE_Q5_0, 17, 1000, 64}, /* 44-byte rows: chunk starts need alignment */
        {2048, VKLLM__TYPE_Q5_0, 100, 65, 96},   /* 66-byte rows, the last chunk ends inside a word */
        {12288, VKLLM__TYPE_Q8_0, 17, 1000, 160}, {12288, VKLLM__TYPE_Q4_K, 9, 1000, 256},
        {4096, VKLLM__TYPE_Q6_K, 5, 300, 512},
        {65536, VKLLM__TYPE_F16, 17, 1000, 37},  /* 74-byte rows; x rows of 148 bytes */
        {65536, VKLLM__TYPE_BF16, 33, 999, 5},   /* 20-byte x rows: blocks of 16 rows */
    };
    for (size_t i = 0; i < sizeof chunked / sizeof chunked[0]; i++)
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_MATMUL, .type = chunked[i].type, .rows = chunked[i].m,
                                        .cols = chunked[i].k, .n = chunked[i].n},
             "matmul=tiled,max_binding=%u", chunked[i].limit);
    /* W split into buffers (larger than one allocation), the binding's chunks within them */
    addv(l, (struct vkllm__op_case){.op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q8_0, .rows = 64, .cols = 2048, .n = 9,
                                    .flags = VKLLM__CASE_SPLIT}, "matmul=tiled,max_alloc=100000");
    addv(l, (struct vkllm__op_case){.op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q6_K, .rows = 33, .cols = 512, .n = 3,
                                    .flags = VKLLM__CASE_SPLIT}, "matmul=tiled,max_alloc=6500,max_binding=9000");
    static const uint32_t tiles[][3] = {{32, 16, 8}, {16, 64, 4}, {128, 32, 16}, {64, 64, 32}};
    for (int i = 0; i < 4; i++) {
        const struct vkllm__op_case cs[] = {
            {.op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_F32, .rows = 130, .cols = 37, .n = 70},
            {.op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q4_1, .rows = 65, .cols = 96, .n = 33},
            {.op = VKLLM__OP_MATMUL, .type = VKLLM__TYPE_Q5_K, .rows = 100, .cols = 512, .n = 17},
        };
        for (int c = 0; c < 3; c++)
            addv(l, cs[c], "matmul_bm=%u,matmul_bn=%u,matmul_bk=%u", tiles[i][0], tiles[i][1], tiles[i][2]);
    }
    matmul_short(l);
}

/* --- rope, kv_store, attention, argmax ----------------------------------------------------------- */

#define POS(...) .pos = {__VA_ARGS__}, .n_pos = sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t)

static void rope_cases(int full, struct vkllm__case_list *l) {
    for (uint32_t neox = 0; neox <= 1; neox++) {
        uint32_t f = neox ? VKLLM__CASE_NEOX : 0;
        ADD(l, .op = VKLLM__OP_ROPE, .n = 5, .heads = 3, .head_dim = 64, .n_rot = 64, .flags = f, POS(0, 1, 5000, 65000));
        /* a magnitude on a partial rotation (Phi-4-mini's LongRoPE attn_factor, YaRN) */
        ADD(l, .op = VKLLM__OP_ROPE, .n = 3, .heads = 2, .head_dim = 64, .n_rot = 48, .flags = f | VKLLM__CASE_MAGNITUDE,
            POS(0, 7, 5000));
        /* long contexts and beyond, to the last uint32 positions (rope_angle.glsl's integer turns) */
        ADD(l, .op = VKLLM__OP_ROPE, .n = 4, .heads = 2, .head_dim = 128, .n_rot = 128, .flags = f,
            POS(131068, 131072, 1000003, 16777213, 4000000000u));
        if (!full) continue;
        ADD(l, .op = VKLLM__OP_ROPE, .n = 3, .heads = 2, .head_dim = 128, .n_rot = 128, .scale = 0.125f,
            .flags = f | VKLLM__CASE_MAGNITUDE, POS(32767, 65535, 131071, 262142, 524287, 1048575, 0xfffffff0u));
        ADD(l, .op = VKLLM__OP_ROPE, .n = 1, .heads = 1, .head_dim = 8, .n_rot = 8, .flags = f, POS(0, 1, 5000, 65000));
        ADD(l, .op = VKLLM__OP_ROPE, .n = 7, .heads = 4, .head_dim = 64, .n_rot = 32, .flags = f, POS(0, 1, 5000, 65000));
        ADD(l, .op = VKLLM__OP_ROPE, .n = 3, .heads = 2, .head_dim = 128, .n_rot = 128, .scale = 0.25f, .flags = f,
            POS(0, 1, 5000, 65000)); /* linear scaling folded into the frequencies */
        ADD(l, .op = VKLLM__OP_ROPE, .n = 2, .heads = 5, .head_dim = 80, .n_rot = 24, .flags = f, POS(0, 1, 5000, 65000));
    }
}

static void kv_store_cases(int full, struct vkllm__case_list *l) {
    ADD(l, .op = VKLLM__OP_KV_STORE, .n = 5, .heads_kv = 2, .head_dim = 12, .n_ctx = 37,
        POS(0, 3, 32, 35, 37, 47, 0xfffffffeu));
    ADD(l, .op = VKLLM__OP_KV_STORE, .n = 5, .heads_kv = 2, .head_dim = 16, .n_ctx = 37, .flags = VKLLM__CASE_KQ8,
        POS(0, 3, 32, 35, 37, 47, 0xfffffffeu));
    /* paged: rows through a block table, across block boundaries and past n_ctx */
    ADD(l, .op = VKLLM__OP_KV_STORE, .n = 5, .heads_kv = 2, .head_dim = 12, .n_ctx = 37, .flags = VKLLM__CASE_PAGED,
        POS(0, 3, 14, 30, 35, 37, 0xfffffffeu));
    ADD(l, .op = VKLLM__OP_KV_STORE, .n = 18, .heads_kv = 2, .head_dim = 16, .n_ctx = 37,
        .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_PAGED, POS(0, 15, 30, 37));
    if (!full) return;
    ADD(l, .op = VKLLM__OP_KV_STORE, .n = 9, .heads_kv = 3, .head_dim = 64, .n_ctx = 4096, .flags = VKLLM__CASE_KQ8,
        POS(0, 3, 4087, 4094, 4096));
    ADD(l, .op = VKLLM__OP_KV_STORE, .n = 1, .heads_kv = 1, .head_dim = 2, .n_ctx = 3, POS(0, 3, 2, 1, 3, 13, 0xfffffffeu));
    ADD(l, .op = VKLLM__OP_KV_STORE, .n = 9, .heads_kv = 2, .head_dim = 64, .n_ctx = 4096,
        POS(0, 3, 4087, 4094, 4096, 4106, 0xfffffffeu));
}

/* rope_kv: rows running past n_ctx (q still rotated there), GQA, partial rotation, NeoX */
static void rope_kv_cases(int full, struct vkllm__case_list *l) {
    for (uint32_t neox = 0; neox <= 1; neox++) {
        uint32_t f = neox ? VKLLM__CASE_NEOX : 0;
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 5, .heads = 4, .heads_kv = 2, .head_dim = 12, .n_rot = 12, .n_ctx = 37,
            .flags = f, POS(0, 3, 32, 35, 37, 5000));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 4, .heads = 4, .heads_kv = 2, .head_dim = 16, .n_rot = 12, .n_ctx = 37,
            .flags = f | VKLLM__CASE_MAGNITUDE, POS(0, 3, 33));
        /* q8_0 caches: both, k only (partial rotation), v only */
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 5, .heads = 4, .heads_kv = 2, .head_dim = 16, .n_rot = 16, .n_ctx = 37,
            .flags = f | VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8, POS(0, 3, 32, 35, 37, 5000));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 3, .heads = 4, .heads_kv = 1, .head_dim = 32, .n_rot = 24, .n_ctx = 37,
            .flags = f | VKLLM__CASE_KQ8 | VKLLM__CASE_MAGNITUDE, POS(0, 34));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 3, .heads = 4, .heads_kv = 1, .head_dim = 32, .n_rot = 32, .n_ctx = 37,
            .flags = f | VKLLM__CASE_VQ8, POS(0, 34));
        /* paged caches: f16, and q8_0 K and V */
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 5, .heads = 4, .heads_kv = 2, .head_dim = 12, .n_rot = 12, .n_ctx = 37,
            .flags = f | VKLLM__CASE_PAGED, POS(0, 14, 32, 35, 5000));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 17, .heads = 4, .heads_kv = 2, .head_dim = 16, .n_rot = 16, .n_ctx = 37,
            .flags = f | VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 | VKLLM__CASE_PAGED, POS(0, 15, 33));
        /* a 128k context's last rows, and q alone (past n_ctx) at positions beyond */
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 5, .heads = 4, .heads_kv = 1, .head_dim = 64, .n_rot = 64, .n_ctx = 131076,
            .flags = f | VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8, POS(131068, 131071, 16777213, 4000000000u));
        if (!full) continue;
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 3, .heads = 4, .heads_kv = 2, .head_dim = 64, .n_rot = 64, .n_ctx = 131076,
            .flags = f, POS(65535, 131071, 131073));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 3, .heads = 4, .heads_kv = 2, .head_dim = 32, .n_rot = 24, .n_ctx = 131076,
            .flags = f | VKLLM__CASE_KQ8 | VKLLM__CASE_MAGNITUDE | VKLLM__CASE_PAGED, POS(0, 65534, 131072));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 1, .heads = 32, .heads_kv = 4, .head_dim = 64, .n_rot = 64, .n_ctx = 4096,
            .flags = f | VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8, POS(0, 1, 4095, 4096, 65000));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 1, .heads = 32, .heads_kv = 4, .head_dim = 64, .n_rot = 64, .n_ctx = 4096,
            .flags = f, POS(0, 1, 4095, 4096, 65000));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 3, .heads = 6, .heads_kv = 2, .head_dim = 80, .n_rot = 24, .n_ctx = 100,
            .flags = f, POS(0, 97, 98, 5000));
        ADD(l, .op = VKLLM__OP_ROPE_KV, .n = 9, .heads = 1, .heads_kv = 1, .head_dim = 2, .n_rot = 2, .n_ctx = 12,
            .flags = f, POS(0, 3, 10, 12));
    }
}

/* matvec_glu (the storage-buffer path: the texel one keeps gate and up apart): every type, the
 * subgroup and shared-memory reductions, a few work splits; row counts that keep up's half
 * aligned for binding. */
static void matvec_glu_cases(int full, struct vkllm__case_list *l) {
    static const char *const splits[] = {
        "matvec_texel=0",
        "matvec_texel=0,matvec_wg=64,matvec_nt=8,matvec_nr=3,matvec_sg=0",
        "matvec_texel=0,matvec_wg=32,matvec_nt=32,matvec_nr=2,matvec_sg=1",
        "matvec_texel=0,matvec_wg=64,matvec_nt=1,matvec_nr=3,matvec_sg=1,matvec_xs=1",
    };
    for (size_t t = 0; t < N_TYPES; t++) {
        struct vkllm__op_case c = {.op = VKLLM__OP_MATVEC_GLU, .type = k_types[t], .rows = 128, .cols = short_k(k_types[t]), .n = 1};
        addv(l, c, "%s", splits[0]);
        addv(l, c, "%s", splits[1]);
        if (is_x8_type(k_types[t])) {
            c.flags = VKLLM__CASE_X8; /* the int8-x kernel, with the instruction (full: and without) */
            addv(l, c, "%s,matvec_x8=1", splits[0]);
            if (full || k_types[t] == VKLLM__TYPE_Q4_K) addv(l, c, "%s,matvec_x8=2", splits[0]);
            c.flags = 0;
        }
        if (!full) continue;
        addv(l, c, "%s", splits[2]);
        addv(l, c, "%s", splits[3]);
        c.rows = 2 * 1024, c.cols = 2048;
        addv(l, c, "%s", splits[0]);
    }
}

static void argmax_cases(int full, struct vkllm__case_list *l) {
    static const uint32_t ns[] = {32000, 151936, 1, 2, 7, 262144};
    for (size_t i = 0; i < (full ? 6u : 2u); i++) ADD(l, .op = VKLLM__OP_ARGMAX, .cols = ns[i]);
}

/* Mixture of experts: every type's expert product (short: a few; full: all, with odd shapes),
 * routing over 8 .. 1000 experts with ties, the weighted sum. */
static void moe_cases(enum vkllm__op op, int full, struct vkllm__case_list *l) {
    if (op == VKLLM__OP_MATVEC_ID) {
        for (size_t t = 0; t < N_TYPES; t++) {
            uint32_t block = vkllm__type_traits(k_types[t])->block_size, k = block == 256 ? 512 : 96;
            if (!full && t % 4) continue;
            ADD(l, .op = op, .type = k_types[t], .rows = 33, .cols = k, .n = 3, .nb = 2, .heads = 5);
            if (full) ADD(l, .op = op, .type = k_types[t], .rows = 7, .cols = block == 256 ? 256 : 32, .n = 1, .nb = 8,
                          .heads = 8);
            /* prefill: columns grouped by expert (tiles of 8, part-filled, several per expert) */
            ADD(l, .op = op, .type = k_types[t], .rows = 33, .cols = k, .n = 21, .nb = 4, .heads = 5,
                .flags = VKLLM__CASE_GROUPED);
            if (full) ADD(l, .op = op, .type = k_types[t], .rows = 9, .cols = block == 256 ? 256 : 64, .n = 70, .nb = 1,
                          .heads = 3, .flags = VKLLM__CASE_GROUPED);
            /* CPU devices' texel kernel on repacked experts (rows per expert a multiple of 8), one
             * column per workgroup and grouped */
            if (!full && t % 8) continue;
            addv(l, (struct vkllm__op_case){.op = op, .type = k_types[t], .rows = 40, .cols = k, .n = 3, .nb = 2,
                                            .heads = 5, .flags = VKLLM__CASE_BOTH_PATHS}, "matvec_texel=1");
            addv(l, (struct vkllm__op_case){.op = op, .type = k_types[t], .rows = 16, .cols = k, .n = 21, .nb = 4,
                                            .heads = 5, .flags = VKLLM__CASE_BOTH_PATHS | VKLLM__CASE_GROUPED},
                 "matvec_texel=1");
        }
        /* the int8-x kernel (GPUs; forced here): one column and grouped, on one type of each item
         * kind (full: every type it takes), and the experts in chunks of whole experts */
        for (size_t t = 0; t < VKLLM_ARRAY_LEN(x8_types); t++) {
            uint32_t type = x8_types[t], k = vkllm__type_traits(type)->block_size == 256 ? 512 : 96;
            if (!full && type != VKLLM__TYPE_Q5_0 && type != VKLLM__TYPE_Q4_K && type != VKLLM__TYPE_Q6_K) continue;
            addv(l, (struct vkllm__op_case){.op = op, .type = type, .rows = 33, .cols = k, .n = 3, .nb = 2, .heads = 5,
                                            .flags = VKLLM__CASE_X8}, "matvec_texel=0,matvec_x8=1");
            addv(l, (struct vkllm__op_case){.op = op, .type = type, .rows = 33, .cols = k, .n = 21, .nb = 4, .heads = 5,
                                            .flags = VKLLM__CASE_X8 | VKLLM__CASE_GROUPED}, "matvec_texel=0,matvec_x8=1");
        }
        addv(l, (struct vkllm__op_case){.op = op, .type = VKLLM__TYPE_Q4_K, .rows = 33, .cols = 512, .n = 9, .nb = 3,
                                        .heads = 5, .flags = VKLLM__CASE_X8 | VKLLM__CASE_GROUPED},
             "max_binding=20000,matvec_texel=0,matvec_x8=2");
        /* matvec.comp's work splits, as the GPU paths take them (CPU devices' texel path off): subgroupAdd and shared memory over
         * 8 and 32 lanes, x shared by shuffles */
        static const char *const splits[] = {"matvec_wg=64,matvec_nt=8,matvec_nr=2,matvec_sg=1",
                                             "matvec_wg=64,matvec_nt=8,matvec_nr=3,matvec_sg=0",
                                             "matvec_wg=32,matvec_nt=32,matvec_nr=2,matvec_sg=1",
                                             "matvec_wg=64,matvec_nt=1,matvec_nr=3,matvec_sg=1,matvec_xs=1"};
        static const uint32_t split_types[] = {VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q8_0, VKLLM__TYPE_MXFP4, VKLLM__TYPE_F16};
        /* experts past one binding: chunks of 2 of 5 q4_K experts (9504 bytes each), an id past
         * the experts among the columns (zeros, written once), one column each and grouped */
        addv(l, (struct vkllm__op_case){.op = op, .type = VKLLM__TYPE_Q4_K, .rows = 33, .cols = 512, .n = 3, .nb = 2,
                                        .heads = 5}, "max_binding=20000,matvec_texel=0");
        addv(l, (struct vkllm__op_case){.op = op, .type = VKLLM__TYPE_Q4_K, .rows = 33, .cols = 512, .n = 9, .nb = 3,
                                        .heads = 5, .flags = VKLLM__CASE_GROUPED}, "max_binding=20000,matvec_texel=0");
        /* GGUF-block experts of q5_K (the q4_K ones run in the type loop above), one column and
         * grouped; the texel kernels' other work splits: q4_K experts repacked and read as they are */
        ADD(l, .op = op, .type = VKLLM__TYPE_Q5_K, .rows = 33, .cols = 512, .n = 3, .nb = 2, .heads = 5);
        ADD(l, .op = op, .type = VKLLM__TYPE_Q5_K, .rows = 33, .cols = 512, .n = 21, .nb = 4, .heads = 5,
            .flags = VKLLM__CASE_GROUPED);
        for (size_t s = 0; s < VKLLM_ARRAY_LEN(k_tb_splits); s++) {
            struct vkllm__op_case c = {.op = op, .type = VKLLM__TYPE_Q4_K, .rows = 40, .cols = 512, .n = 3, .nb = 2,
                                       .heads = 5, .flags = VKLLM__CASE_BOTH_PATHS};
            addv(l, c, "matvec_texel=1,%s", k_tb_splits[s]);
            c.flags = VKLLM__CASE_GROUPED, c.rows = 33, c.n = 21, c.nb = 4;
            addv(l, c, "%s", k_tb_splits[s]);
        }
        /* experts larger than one allocation: split between experts (2 of 5 per buffer) */
        addv(l, (struct vkllm__op_case){.op = op, .type = VKLLM__TYPE_Q4_K, .rows = 33, .cols = 512, .n = 3, .nb = 2,
                                        .heads = 5, .flags = VKLLM__CASE_SPLIT}, "max_alloc=20000");
        addv(l, (struct vkllm__op_case){.op = op, .type = VKLLM__TYPE_Q8_0, .rows = 32, .cols = 96, .n = 9, .nb = 3,
                                        .heads = 5, .flags = VKLLM__CASE_SPLIT | VKLLM__CASE_GROUPED}, "max_alloc=7000");
        /* and buffers of 4 experts that one binding cannot cover: chunks of 2 within a buffer, the
         * second starting 19008 bytes in (aligned under 64-byte profiles, intel-xe-lpg; refused,
         * so skipped, at 128 and 256 bytes) */
        addv(l, (struct vkllm__op_case){.op = op, .type = VKLLM__TYPE_Q4_K, .rows = 33, .cols = 512, .n = 3, .nb = 2,
                                        .heads = 5, .flags = VKLLM__CASE_SPLIT}, "max_alloc=40000,max_binding=30000");
        addv(l, (struct vkllm__op_case){.op = op, .type = VKLLM__TYPE_Q4_K, .rows = 33, .cols = 512, .n = 9, .nb = 3,
                                        .heads = 5, .flags = VKLLM__CASE_SPLIT | VKLLM__CASE_GROUPED},
             "max_alloc=40000,max_binding=30000");
        for (size_t s = 0; s < (full ? 4u : 2u); s++)
            for (size_t t = 0; t < (full ? 4u : 1u); t++)
                addv(l, (struct vkllm__op_case){.op = op, .type = split_types[t], .rows = 33, .cols = 512, .n = 2,
                                                .nb = 3, .heads = 6}, "%s,matvec_texel=0", splits[s]),
                addv(l, (struct vkllm__op_case){.op = op, .type = split_types[t], .rows = 33, .cols = 512, .n = 11,
                                                .nb = 3, .heads = 6, .flags = VKLLM__CASE_GROUPED}, "%s,matvec_texel=0",
                                                splits[s]);
    } else if (op == VKLLM__OP_MOE_ROUTE) {
        ADD(l, .op = op, .n = 3, .cols = 8, .nb = 2);
        ADD(l, .op = op, .n = 5, .cols = 128, .nb = 8);
        if (full) ADD(l, .op = op, .n = 2, .cols = 1000, .nb = 64), ADD(l, .op = op, .n = 1, .cols = 4, .nb = 4);
    } else if (op == VKLLM__OP_MOE_ADD_ID) {
        ADD(l, .op = op, .n = 12, .cols = 2880, .heads = 32);
        if (full) ADD(l, .op = op, .n = 1, .cols = 7, .heads = 1), ADD(l, .op = op, .n = 513, .cols = 333, .heads = 5);
    } else {
        ADD(l, .op = op, .n = 3, .cols = 64, .nb = 2);
        if (full) ADD(l, .op = op, .n = 7, .cols = 4099, .nb = 8);
    }
}

/* Attention of one kernel (tuning t: "attn_texel=0" or "=1"): decode over a long cache (split),
 * short caches, prefill from an empty cache and continuing, GQA ratios, head dims. */
static void attention_kernel(const char *t, struct vkllm__case_list *l) {
    static const uint32_t dims[] = {8, 64, 128}, ratios[] = {1, 2, 4, 8};
    /* The full length first, so that every split's partial holds stale values afterwards: a
     * reduce that read splits past the current length would be caught. */
    for (int d = 0; d < 3; d++)
        for (int r = 0; r < 4; r++)
            addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 2 * ratios[r], .heads_kv = 2,
                                            .head_dim = dims[d], .n_ctx = 4096, POS(4095, 0, 1, 30, 256, 2999)},
                 "%s", t);
    const struct vkllm__op_case misc[] = {
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 4, .heads_kv = 1, .head_dim = 64, .n_ctx = 100, POS(0, 5, 99)},
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 6, .heads_kv = 3, .head_dim = 80, .n_ctx = 1000, POS(999, 0, 299, 300)},
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 8, .head_dim = 256, .n_ctx = 1000, POS(999, 0, 299, 300)},
        {.op = VKLLM__OP_ATTENTION, .n = 33, .heads = 16, .heads_kv = 2, .head_dim = 64, .n_ctx = 300, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 4, .heads_kv = 2, .head_dim = 64, .n_ctx = 300, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 20, .heads = 6, .heads_kv = 2, .head_dim = 80, .n_ctx = 300, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 9, .heads = 4, .heads_kv = 4, .head_dim = 256, .n_ctx = 300, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 7, .heads = 3, .heads_kv = 1, .head_dim = 18, .n_ctx = 64, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 4, .heads_kv = 2, .head_dim = 6, .n_ctx = 600, POS(599, 0, 300)},
        {.op = VKLLM__OP_ATTENTION, .n = 11, .heads = 6, .heads_kv = 2, .head_dim = 6, .n_ctx = 200, POS(0, 150)},
        {.op = VKLLM__OP_ATTENTION, .n = 10, .heads = 2, .heads_kv = 2, .head_dim = 96, .n_ctx = 900, POS(0, 3, 850)},
        /* attn_tb's cuts: GQA ratios 1, 3, 5, 16, 32, dims 8 .. 72, lengths around blocks and splits */
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 3, .heads_kv = 3, .head_dim = 40, .n_ctx = 700,
         POS(699, 0, 6, 7, 8, 62, 63, 64, 65, 511, 512, 513, 600)},
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 6, .heads_kv = 2, .head_dim = 24, .n_ctx = 333, POS(332, 63, 64, 191, 192, 200)},
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 10, .heads_kv = 2, .head_dim = 72, .n_ctx = 333, POS(332, 63, 64, 191, 192, 200)},
        {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 16, .heads_kv = 1, .head_dim = 16, .n_ctx = 130, POS(129, 0, 64, 100)},
        {.op = VKLLM__OP_ATTENTION, .n = 13, .heads = 10, .heads_kv = 2, .head_dim = 32, .n_ctx = 200, POS(0, 1, 64, 187)},
        {.op = VKLLM__OP_ATTENTION, .n = 3, .heads = 32, .heads_kv = 1, .head_dim = 8, .n_ctx = 50, POS(0, 47)},
        {.op = VKLLM__OP_ATTENTION, .n = 129, .heads = 4, .heads_kv = 4, .head_dim = 64, .n_ctx = 300, POS(0, 171)},
    };
    for (size_t i = 0; i < sizeof misc / sizeof misc[0]; i++) addv(l, misc[i], "%s", t);
    static const uint32_t prefill_n[] = {1, 5, 64, 100};
    for (int i = 0; i < 4; i++)
        for (int d = 0; d < 3; d++)
            for (int r = 0; r < 4; r += 2) /* ratios 1, 4 */
                addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = prefill_n[i], .heads = 2 * ratios[r],
                                                .heads_kv = 2, .head_dim = dims[d], .n_ctx = 256, POS(0, 37, 155)},
                     "%s", t);
    /* attention sinks over the same cuts: splits, prefill tiles, windows, head dims */
    for (int d = 0; d < 3; d++) {
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = dims[d],
                                        .n_ctx = 1000, .flags = VKLLM__CASE_SINKS, POS(999, 0, 1, 255, 256, 600)}, "%s", t);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 37, .heads = 4, .heads_kv = 4, .head_dim = dims[d],
                                        .n_ctx = 256, .window = 7, .flags = VKLLM__CASE_SINKS, POS(0, 37, 155)}, "%s", t);
    }
}

/* Decode at depths 1, 17, 256, 1000, 4096 and 16384 (positions 0 .. 16383 of one cache), as the
 * device splits it (lavapipe: one split), with forced splits (13: most empty at small depths; the
 * split length follows the depth, shaders/include/attn_split.glsl) in GPUs' key groups (lanes
 * splitting a head row, attn_lanes 0) and, full list, in the device's and on the texel kernel;
 * every head size the models use (64, 80, 96, 128, 256) and odd ones (40, 18, 6), GQA ratios 1 to
 * 8, f16 and q8_0 caches, sinks, a window. Short list: head size 64 at every depth, 96 and 256 up
 * to 4096. */
static void attention_depths(int full, struct vkllm__case_list *l) {
    static const uint32_t dims[] = {64, 80, 96, 128, 256, 40, 18, 6};
    static const char *const tunings[] = {"attn_texel=0", "attn_texel=0,attn_splits=13,attn_lanes=0", "attn_texel=1",
                                          "attn_texel=0,attn_splits=13"};
    for (int t = 0; t < (full ? 4 : 2); t++)
        for (int d = 0; d < (full ? 8 : 1); d++) {
            uint32_t ratio = 1u << ((d + 2) % 4), q8 = dims[d] % 16 == 0 && d % 2 ? VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 : 0;
            addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 2 * ratio, .heads_kv = 2,
                                            .head_dim = dims[d], .n_ctx = 16384, .flags = q8,
                                            POS(16383, 0, 16, 255, 999, 4095)}, "%s", tunings[t]);
        }
    addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 1, .head_dim = 96,
                                    .n_ctx = 4096, POS(4095, 0, 16, 999)}, "%s", tunings[1]);
    addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 4, .heads_kv = 2, .head_dim = 256,
                                    .n_ctx = 4096, .flags = VKLLM__CASE_SINKS, POS(4095, 0, 16, 999)}, "%s", tunings[1]);
    if (!full) return;
    for (int t = 0; t < 4; t++) /* sinks over a window: splits of the window's span */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 128,
                                        .n_ctx = 16384, .window = 1000, .flags = VKLLM__CASE_SINKS,
                                        POS(16383, 0, 16, 999, 1000, 4095)}, "%s", tunings[t]);
    addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 16, .heads_kv = 1, .head_dim = 64,
                                    .n_ctx = 16384, .flags = VKLLM__CASE_PAGED, POS(16383, 0, 16, 255, 999, 4095)},
         "%s", tunings[1]);
}

/* The attention cases of each kernel: attn.comp's walk in GPUs' key groups (attn_lanes 0: lanes
 * that split a head row, their partial scores added by subgroup operations or in shared memory)
 * and in the device's (on CPU devices one lane each), and attn_tb. The short list takes the
 * device's key groups on the depths above and one prefill here: with one lane a key group a CPU
 * driver compiles the walk's pipeline in 2-20 s (lavapipe, cold cache: a 128-wide head or q8_0
 * the longest) against 1-2 s for GPUs' key groups, and the full list has every shape. */
static void attention_cases(int full, struct vkllm__case_list *l) {
    static const char *const kernels[] = {"attn_texel=0,attn_lanes=0", "attn_texel=1", "attn_texel=0"};
    attention_depths(full, l);
    if (!full) /* the device's key groups on a prefill with a window and soft-capped scores */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 256, .window = 5, .softcap = 1.5f, POS(0, 3, 100)}, "%s", kernels[2]);
    for (int i = 0; i < (full ? 3 : 2); i++) {
        if (full) {
            attention_kernel(kernels[i], l);
            continue;
        }
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 256, POS(0, 100)}, "%s", kernels[i]);        /* prefill */
        /* prefill deep in a cache: two queries a workgroup (4 heads of a kv head), many steps of
         * the walk, its causal rows, a 128-wide head (key groups of 8 or 16 lanes) */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 9, .heads = 4, .heads_kv = 1, .head_dim = 128,
                                        .n_ctx = 2048, POS(0, 1500)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 4096, POS(4095, 0, 300)}, "%s", kernels[i]); /* split decode */
        /* sliding windows (gemma2/3) and soft-capped scores (gemma2): prefill rows whose windows
         * start at different places, split decode with whole splits before the window */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 256, .window = 5, .softcap = 1.5f, POS(0, 3, 100)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 4096, .window = 100, POS(4095, 0, 99, 100, 300)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 40, .heads = 4, .heads_kv = 4, .head_dim = 16,
                                        .n_ctx = 300, .window = 33, .softcap = 0.5f, POS(0, 7, 200)}, "%s", kernels[i]);
        /* attention sinks (gpt-oss, with its windows): prefill, split decode, a window */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 256, .flags = VKLLM__CASE_SINKS, POS(0, 100)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 4096, .window = 128, .flags = VKLLM__CASE_SINKS, POS(4095, 0, 3, 300)},
             "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 4096, .flags = VKLLM__CASE_SINKS, POS(4095, 0, 3, 300)}, "%s", kernels[i]);
        /* a window's cache as a ring of window + n - 1 rows: prefill and split decode, wrapped many times */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 1024, .window = 20, .flags = VKLLM__CASE_RING | VKLLM__CASE_SINKS,
                                        POS(0, 3, 100, 1000)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 4096, .window = 128, .flags = VKLLM__CASE_RING, POS(4095, 0, 127, 128, 300)},
             "%s", kernels[i]);
        /* q8_0 K and V (the texel kernel's own variant, and attn.comp's): prefill, split decode
         * with a 128-wide head, a paged pool */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 256, .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8, POS(0, 100)},
             "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 128,
                                        .n_ctx = 700, .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 | VKLLM__CASE_SINKS,
                                        POS(699, 0, 300)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 5, .heads = 4, .heads_kv = 1, .head_dim = 32,
                                        .n_ctx = 100, .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 | VKLLM__CASE_PAGED,
                                        POS(0, 30, 95)}, "%s", kernels[i]);
        /* a paged cache: prefill and split decode */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 256, .flags = VKLLM__CASE_PAGED, POS(0, 7, 239)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 1000, .flags = VKLLM__CASE_PAGED, POS(999, 0, 16, 300)}, "%s", kernels[i]);
        /* caches split by kv heads into two buffers (larger than one binding): prefill with GQA,
         * split decode with sinks on q8_0, a paged q8_0 pool, a window's ring */
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 256, .flags = VKLLM__CASE_PARTS, POS(0, 100)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 12, .heads_kv = 4, .head_dim = 64,
                                        .n_ctx = 1000, .flags = VKLLM__CASE_PARTS | VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 |
                                        VKLLM__CASE_SINKS, POS(999, 0, 300)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 5, .heads = 4, .heads_kv = 2, .head_dim = 32,
                                        .n_ctx = 100, .flags = VKLLM__CASE_PARTS | VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 |
                                        VKLLM__CASE_PAGED, POS(0, 30, 95)}, "%s", kernels[i]);
        addv(l, (struct vkllm__op_case){.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64,
                                        .n_ctx = 1024, .window = 20, .flags = VKLLM__CASE_PARTS | VKLLM__CASE_RING,
                                        POS(0, 3, 100, 1000)}, "%s", kernels[i]);
    }
    /* split by kv heads, k alone q8_0 (attn.comp) */
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 9, .heads = 6, .heads_kv = 2, .head_dim = 32, .n_ctx = 64,
        .flags = VKLLM__CASE_PARTS | VKLLM__CASE_KQ8, POS(0, 29));
    /* paged caches: prefill across blocks, split decode, GQA with sinks; the q8_0 ones below too */
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 256,
        .flags = VKLLM__CASE_PAGED, POS(0, 7, 100, 239));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 1000,
        .flags = VKLLM__CASE_PAGED | VKLLM__CASE_SINKS, POS(999, 0, 15, 16, 300));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 9, .heads = 6, .heads_kv = 2, .head_dim = 16, .n_ctx = 64,
        .flags = VKLLM__CASE_PAGED, POS(0, 29, 55));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 256,
        .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 | VKLLM__CASE_PAGED, POS(0, 100));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 1, .heads = 4, .heads_kv = 1, .head_dim = 32, .n_ctx = 700,
        .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 | VKLLM__CASE_PAGED, POS(699, 0, 256, 600));
    /* q8_0 caches (attn.comp on every device): prefill, split decode, k or v alone, a window's ring */
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 256,
        .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8, POS(0, 100));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 4096,
        .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8, POS(4095, 0, 300));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 9, .heads = 6, .heads_kv = 2, .head_dim = 16, .n_ctx = 64,
        .flags = VKLLM__CASE_KQ8, POS(0, 29));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 1, .heads = 4, .heads_kv = 1, .head_dim = 32, .n_ctx = 700,
        .flags = VKLLM__CASE_VQ8 | VKLLM__CASE_SINKS, POS(699, 0, 256, 600));
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 1024, .window = 20,
        .softcap = 1.5f, .flags = VKLLM__CASE_RING | VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8, POS(0, 3, 100, 1000));
    /* prefill by cooperative matrices (attn_coopmat=1, skipped where the device has none) and
     * their emulation (=2, every device with f16 arithmetic and a required subgroup size): 16
     * rows of GQA, head dims 80 (five 16-wide blocks) and 18 (padded, odd quads), a window with
     * soft-capped scores and sinks, q8_0 caches in a paged pool, a ring, rows from one head (128
     * wide needs 43 KiB of shared memory: lavapipe has 32) */
    static const char *const cms[] = {"attn_texel=0,attn_coopmat=1", "attn_texel=0,attn_coopmat=2"};
    const struct vkllm__op_case cmc[] = {
        {.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 256, POS(0, 100)},
        {.op = VKLLM__OP_ATTENTION, .n = 20, .heads = 6, .heads_kv = 2, .head_dim = 80, .n_ctx = 300, .window = 5,
         .softcap = 1.5f, .flags = VKLLM__CASE_SINKS, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 256,
         .flags = VKLLM__CASE_KQ8 | VKLLM__CASE_VQ8 | VKLLM__CASE_PAGED | VKLLM__CASE_PARTS, POS(0, 100)},
        {.op = VKLLM__OP_ATTENTION, .n = 7, .heads = 3, .heads_kv = 1, .head_dim = 18, .n_ctx = 64, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 9, .heads = 4, .heads_kv = 4, .head_dim = 32, .n_ctx = 300, POS(0, 13)},
        {.op = VKLLM__OP_ATTENTION, .n = 17, .heads = 8, .heads_kv = 2, .head_dim = 64, .n_ctx = 1024, .window = 20,
         .flags = VKLLM__CASE_RING, POS(0, 3, 100, 1000)},
    };
    for (size_t i = 0; i < sizeof cmc / sizeof cmc[0]; i++)
        for (int e = 0; e < 2; e++)
            if (full || i < 3) {
                struct vkllm__op_case cc = cmc[i];
                cc.flags |= VKLLM__CASE_COOPMAT;
                addv(l, cc, "%s", cms[e]);
            }
    if (!full) return;
    /* attn_tb's work split: blocks that divide nothing, one lane per workgroup, many lanes, one
     * split (none), many more splits than positions */
    static const uint32_t split[][4] = {{1, 8, 8, 8}, {5, 1, 1, 7}, {3, 32, 32, 13}, {16, 64, 64, 1}, {8, 2, 3, 1000}};
    for (int i = 0; i < 5; i++) {
        const struct vkllm__op_case cs[] = {
            {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 6, .heads_kv = 2, .head_dim = 16, .n_ctx = 300,
             POS(299, 0, 6, 7, 64, 65, 150)},
            {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 4, .heads_kv = 4, .head_dim = 8, .n_ctx = 300,
             POS(299, 0, 6, 7, 64, 65, 150)},
            {.op = VKLLM__OP_ATTENTION, .n = 11, .heads = 6, .heads_kv = 2, .head_dim = 16, .n_ctx = 64, POS(0, 29)},
            /* paged: kernel blocks inside a cache block (one table read per block) or across two */
            {.op = VKLLM__OP_ATTENTION, .n = 1, .heads = 6, .heads_kv = 2, .head_dim = 16, .n_ctx = 300,
             .flags = VKLLM__CASE_PAGED, POS(299, 0, 15, 16, 150)},
            {.op = VKLLM__OP_ATTENTION, .n = 11, .heads = 6, .heads_kv = 2, .head_dim = 16, .n_ctx = 64,
             .flags = VKLLM__CASE_PAGED, POS(0, 29)},
        };
        for (int c = 0; c < 5; c++)
            addv(l, cs[c], "attn_texel=1,attn_tb_block=%u,attn_tb_lanes=%u,attn_tb_dlanes=%u,attn_tb_splits=%u",
                 split[i][0], split[i][1], split[i][2], split[i][3]);
    }
    /* shapes past one texel binding take attn.comp even when attn_tb is asked for */
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 1, .heads = 8, .heads_kv = 4, .head_dim = 64, .n_ctx = 300, POS(299, 0, 100),
        .tuning = "attn_texel=1,max_texels=1000"); /* the cache: 9600 texels */
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 70, .heads = 4, .heads_kv = 1, .head_dim = 16, .n_ctx = 300, POS(0, 100),
        .tuning = "attn_texel=1,max_texels=1000"); /* q: 1120 */
    ADD(l, .op = VKLLM__OP_ATTENTION, .n = 5, .heads = 4, .heads_kv = 1, .head_dim = 16, .n_ctx = 300, POS(0, 100),
        .tuning = "attn_texel=1,max_texels=1000"); /* fits: 80, 600 */
}

/* --- the 16-byte layout (vkllm__dtensor_put_rows) --------------------------------------------- */

/* W repacked at upload (forced: CPU devices keep the file's layout by default), through every
 * reader: matvec.comp (one column and several, its subgroup and shared-memory splits), matvec_x8
 * (x quantized per workgroup and once per step), the fused gate/up, the tiled matmul (f32 and f16
 * tiles, the emulated cooperative-matrix kernel), get_rows, the experts' products and grouped GEMM,
 * W in buffers and chunks. Q8_0, Q4_0, Q5_0: rows of 512 (2 groups of 8 blocks, the file's row
 * size); Q6_K: 2304 (a group of 8 blocks and one of 1: rows 14 bytes longer than the file's). The
 * full list adds longer rows (Q6_K: 5632, TinyLlama's ffn_down, 22 blocks), more rows, and every
 * reader on every type. */
static void rp_cases(enum vkllm__op op, int full, struct vkllm__case_list *l) {
    static const uint32_t types[] = {VKLLM__TYPE_Q8_0, VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q5_0, VKLLM__TYPE_Q6_K};
    static const char *const mv[] = {"matvec_x8=0", "matvec_x8=0,matvec_wg=64,matvec_nt=32,matvec_nr=2,matvec_sg=1",
                                     "matvec_x8=0,matvec_wg=64,matvec_nt=8,matvec_nr=3,matvec_sg=0", "matvec_x8=1",
                                     "matvec_x8=2"};
    for (size_t t = 0; t < VKLLM_ARRAY_LEN(types); t++) {
        uint32_t type = types[t], k = type == VKLLM__TYPE_Q6_K ? 2304 : 512, kl = type == VKLLM__TYPE_Q6_K ? 5632 : 2816;
        struct vkllm__op_case c = {.op = op, .type = type, .rows = 33, .cols = k, .n = 1, .flags = VKLLM__CASE_RP};
        switch (op) {
        case VKLLM__OP_MATVEC:
            for (size_t v = 0; v < VKLLM_ARRAY_LEN(mv); v++) {
                /* short: one split (three columns, each also alone) and x8 per type */
                if (!full && v != t % 3 && v != 3) continue;
                c.flags = VKLLM__CASE_RP | (v >= 3 ? VKLLM__CASE_X8 : 0);
                if (full || v == 3) addv(l, (c.n = 1, c), "repack=1,matvec_texel=0,%s", mv[v]);
                if (full || v != 3 || t >= 2) addv(l, (c.n = 3, c), "repack=1,matvec_texel=0,%s", mv[v]);
                if (full) addv(l, (c.n = 1, c.rows = 1000, c.cols = kl, c), "repack=1,matvec_texel=0,%s", mv[v]);
                c.rows = 33, c.cols = k;
            }
            if (t == 0 || t == 3 || full) { /* in buffers of 20-26 rows (max_alloc), bound in chunks of 7-10;
                                              * Q6_K: repacked through a buffer of 2 rows (4 at a 64-byte
                                              * alignment: chunks start aligned) */
                uint64_t rb = 0;
                vkllm__row_size(type, 2048, &rb);
                addv(l, (c.n = 3, c.rows = 64, c.cols = 2048, c.flags = VKLLM__CASE_RP | VKLLM__CASE_SPLIT, c),
                     "repack=1,matvec_texel=0,max_alloc=%llu,max_binding=%llu%s", (unsigned long long)VKLLM_MAX(20 * rb + 100, 30000ull), /* x: 24576 bytes */
                     (unsigned long long)VKLLM_MAX(7 * rb + 100, 12000ull), /* a column of x: 8192 */
                     type == VKLLM__TYPE_Q6_K ? ",repack_buffer=4000" : "");
            }
            break;
        case VKLLM__OP_GET_ROWS:
            addv(l, (c.n = 7, c), "%s", "repack=1");
            if (full || type == VKLLM__TYPE_Q6_K) /* repacked through a buffer of 2 rows */
                addv(l, (c.n = 7, c), "%s", "repack=1,repack_buffer=4000");
            if (full) addv(l, (c.n = 2, c.rows = 100, c.cols = kl, c), "%s", "repack=1,max_binding=65536");
            break;
        case VKLLM__OP_MATVEC_GLU:
            if (!full && t % 2) break;
            addv(l, (c.rows = 128, c), "%s", "repack=1,matvec_texel=0,matvec_x8=0");
            c.flags |= VKLLM__CASE_X8;
            addv(l, (c.rows = 128, c), "%s", "repack=1,matvec_texel=0,matvec_x8=1");
            break;
        case VKLLM__OP_MATMUL:
            addv(l, (c.rows = 65, c.n = 17, c), "%s", "repack=1,matmul=tiled");
            if (full) {
                addv(l, (c.rows = 100, c.n = 70, c), "%s", "repack=1,matmul=tiled,matmul_f16=0");
                addv(l, (c.rows = 1000, c.cols = kl, c.n = 9, c), "%s", "repack=1,matmul=tiled,max_binding=400000");
            }
            if (type == VKLLM__TYPE_Q5_0) /* the emulated cooperative-matrix kernel's staging */
                addv(l, (c.rows = 60, c.cols = 512, c.n = 130, c.flags |= VKLLM__CASE_COOPMAT, c), "%s",
                     "repack=1,matmul=tiled,matmul_coopmat=2");
            break;
        case VKLLM__OP_MATVEC_ID:
            if (!full && t != 0 && t != 3) break;
            addv(l, (c.n = 3, c.nb = 2, c.heads = 5, c), "%s", "repack=1,matvec_texel=0,matvec_x8=0");
            addv(l, (c.n = 21, c.nb = 4, c.flags = VKLLM__CASE_RP | VKLLM__CASE_GROUPED, c), "%s",
                 "repack=1,matvec_texel=0,matvec_x8=0");
            addv(l, (c.n = 21, c.flags = VKLLM__CASE_RP | VKLLM__CASE_GROUPED | VKLLM__CASE_X8, c), "%s",
                 "repack=1,matvec_texel=0,matvec_x8=1");
            break;
        default: return;
        }
    }
}

// --- the lists -----------------------------------------------------------------------------

void vkllm__op_cases(enum vkllm__op op, int full, struct vkllm__case_list *l) {
    struct vkllm__case_list all = {0};
    if (is_elementwise(op)) {
        if (full) elementwise_full(&all);
        else elementwise_short(&all);
        for (size_t i = 0; i < all.n; i++)
            if (all.v[i].op == op) vkllm__case_list_add(l, &all.v[i]);
        if (all.st && !l->st) l->st = all.st;
        vkllm__case_list_free(&all);
        return;
    }
    switch (op) {
    case VKLLM__OP_MATVEC:
    case VKLLM__OP_GET_ROWS:
        if (full) matvec_full(op, l);
        else matvec_short(op, l);
        break;
    case VKLLM__OP_MATVEC_TB:
        if (full) matvec_tb_full(l);
        else matvec_tb_short(l);
        break;
    case VKLLM__OP_MATMUL:
        if (full) matmul_full(l);
        else matmul_short(l);
        break;
    case VKLLM__OP_ROPE: rope_cases(full, l); break;
    case VKLLM__OP_KV_STORE: kv_store_cases(full, l); break;
    case VKLLM__OP_ROPE_KV: rope_kv_cases(full, l); break;
    case VKLLM__OP_MATVEC_GLU: matvec_glu_cases(full, l); break;
    case VKLLM__OP_ATTENTION: attention_cases(full, l); break;
    case VKLLM__OP_ARGMAX: argmax_cases(full, l); break;
    case VKLLM__OP_MATVEC_ID:
    case VKLLM__OP_MOE_ROUTE:
    case VKLLM__OP_MOE_SUM:
    case VKLLM__OP_MOE_ADD_ID: moe_cases(op, full, l); break;
    default: break;
    }
    rp_cases(op, full, l);
}
