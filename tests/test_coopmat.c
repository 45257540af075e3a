/* test_coopmat.c - the cooperative-matrix prefill kernels without a device that runs them (none
 * here has VK_KHR_cooperative_matrix; `vkllm selftest` runs them on one that does):
 *
 *   1. the build's NV -> KHR rewrite (shaders/coopmat/spv_coopmat.h) of every matmul_cm_<type>
 *      and attn_cm_<cache> (the attention's two products share the three matrix types):
 *      the module embedded in the library is the rewrite of the one glslang compiled and spirv-val
 *      passed (build-dir/shaders/<name>.nv.spv, argv[1] is that folder), no NV instruction is
 *      left, every KHR type carries the use its MulAdd slot needs (A: TM x TK of f16, B: TK x TN
 *      of f16, accumulator: TM x TN of f32, TM TN TK the specialization constants 4 5 6 that
 *      ops_matmul.c sets), every load and store keeps its pointer, stride and memory operands with
 *      the layout its column-major flag said, and ids stay within the bound;
 *   2. the rewrite's refusals, on broken copies of a real module;
 *   3. vkllm__matmul_coopmat_plan on made-up devices (shapes as NVIDIA, AMD and Intel drivers
 *      report them, and devices lacking one requirement each), and the emulation's plan.
 * The kernel's tiling, offsets and layouts run on lavapipe through its emulation
 * (matmul_cm_emu_<type>, the selftest's matmul_coopmat=2 cases in test_op_matmul). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops_gpu.h"
#include "spv_coopmat.h"
#include "types.h"
#include "vkllm_shaders.h"

enum {
    OP_EXTENSION = 10,
    OP_CAPABILITY = 17,
    OP_TYPE_FLOAT = 22,
    OP_CONSTANT = 43,
    OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42,
    OP_DECORATE = 71,
    DEC_SPEC_ID = 1,
    OP_NOP = 0
};

struct module {
    uint32_t *w;
    size_t n;
};

static struct module read_spv(const char *path) {
    struct module m = {0};
    FILE *f = fopen(path, "rb");
    if (!f) FAILF("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    ASSERT(bytes > 20 && bytes % 4 == 0);
    m.n = (size_t)bytes / 4;
    m.w = malloc((size_t)bytes);
    ASSERT(m.w && fread(m.w, 4, m.n, f) == m.n);
    fclose(f);
    return m;
}

/* Instruction i of a module: word offset (0 past the end). */
static size_t nth(const struct module *m, size_t i) {
    size_t w = 5;
    for (size_t k = 0; k < i && w < m->n; k++) w += m->w[w] >> 16;
    return w < m->n ? w : 0;
}

static size_t count_instructions(const struct module *m) {
    size_t c = 0;
    for (size_t w = 5; w < m->n; w += m->w[w] >> 16) {
        ASSERT((m->w[w] >> 16) > 0);
        c++;
    }
    return c;
}

static int is_string(const uint32_t *s, size_t nw, const char *str) {
    size_t len = strlen(str);
    return nw * 4 >= len + 1 && !memcmp(s, str, len) && ((const char *)s)[len] == 0;
}

/* What the checks need to know of the KHR module, by id. */
struct ids {
    uint32_t bound;
    uint32_t *vtype;   /* value -> type */
    int64_t *cval;     /* 32-bit OpConstant -> value (-1: not one) */
    size_t *defined;   /* word offset of the instruction defining the id (0: none) */
    uint8_t *is_float; /* OpTypeFloat: its width */
    uint32_t *use;     /* OpTypeCooperativeMatrixKHR: its Use constant's value + 1 */
    uint32_t spec[8];  /* SpecId -> id */
};

static void index_module(const struct module *m, struct ids *I) {
    I->bound = m->w[3];
    I->vtype = calloc(I->bound, 4), I->cval = malloc(I->bound * 8), I->defined = calloc(I->bound, sizeof(size_t));
    I->is_float = calloc(I->bound, 1), I->use = calloc(I->bound, 4);
    ASSERT(I->vtype && I->cval && I->defined && I->is_float && I->use);
    for (uint32_t i = 0; i < I->bound; i++) I->cval[i] = -1;
    memset(I->spec, 0, sizeof I->spec);
    for (size_t w = 5; w < m->n; w += m->w[w] >> 16) {
        uint32_t op = m->w[w] & 0xffff, len = m->w[w] >> 16;
        const uint32_t *a = m->w + w + 1;
        if (op == OP_DECORATE && len == 4 && a[1] == DEC_SPEC_ID && a[2] < 8) I->spec[a[2]] = a[0];
        if (op == OP_TYPE_FLOAT) {
            ASSERT(a[0] < I->bound);
            I->is_float[a[0]] = (uint8_t)a[1];
            I->defined[a[0]] = w;
        }
        if (op == SPV_CM_OP_TYPE_KHR) {
            ASSERT(len == 7 && a[0] < I->bound && a[5] < I->bound);
            ASSERT(I->defined[a[5]] && I->defined[a[5]] < w); /* the Use constant comes first */
            ASSERT(I->cval[a[5]] >= 0 && I->cval[a[5]] <= 2);
            I->use[a[0]] = (uint32_t)I->cval[a[5]] + 1;
            I->defined[a[0]] = w;
        }
        if ((op == OP_CONSTANT || op == OP_CONSTANT_TRUE || op == OP_CONSTANT_FALSE || op == 50 /* OpSpecConstant */) &&
            len >= 3) {
            ASSERT(a[1] < I->bound);
            I->defined[a[1]] = w;
            I->vtype[a[1]] = a[0];
            if (op == OP_CONSTANT && len == 4) I->cval[a[1]] = a[2];
        }
        if ((op == SPV_CM_OP_LOAD_KHR || op == SPV_CM_OP_MULADD_KHR) && len >= 3) {
            ASSERT(a[1] < I->bound);
            I->vtype[a[1]] = a[0];
        }
    }
}

static void free_ids(struct ids *I) {
    free(I->vtype), free(I->cval), free(I->defined), free(I->is_float), free(I->use);
}

/* The type of a value that is the result of OpLoad / OpCopyObject / a matrix op (what the MulAdd
 * operands are here): from the instruction defining it. */
static uint32_t type_of(const struct module *m, uint32_t v) {
    for (size_t w = 5; w < m->n; w += m->w[w] >> 16) {
        uint32_t len = m->w[w] >> 16, op = m->w[w] & 0xffff;
        if (len >= 3 && m->w[w + 2] == v && op != OP_DECORATE && op != 5 /* OpName */) return m->w[w + 1];
    }
    return 0;
}

static void check_rewrite(const char *name, const struct module *nv, const struct module *k) {
    /* the same instructions plus the three constants; the bound three higher */
    ASSERT_EQ(count_instructions(k), count_instructions(nv) + 3);
    ASSERT_EQ(k->w[3], nv->w[3] + 3);
    ASSERT(!memcmp(k->w, nv->w, 12)); /* magic, version, generator */
    struct ids I;
    index_module(k, &I);
    int cap_khr = 0, ext_khr = 0, n_types = 0, n_muladd = 0, n_load = 0, n_store = 0;
    uint32_t type_a = 0, type_b = 0, type_c = 0;
    for (size_t w = 5; w < k->n; w += k->w[w] >> 16) {
        uint32_t op = k->w[w] & 0xffff, len = k->w[w] >> 16;
        const uint32_t *a = k->w + w + 1;
        if (op >= SPV_CM_OP_TYPE_NV && op <= SPV_CM_OP_LENGTH_NV)
            FAILF("%s: NV opcode %u left at word %zu", name, op, w);
        if (op == OP_CAPABILITY) {
            ASSERT(a[0] != SPV_CM_CAP_NV);
            cap_khr += a[0] == SPV_CM_CAP_KHR;
        }
        if (op == OP_EXTENSION) {
            ASSERT(!is_string(a, len - 1, "SPV_NV_cooperative_matrix"));
            ext_khr += is_string(a, len - 1, "SPV_KHR_cooperative_matrix");
        }
        if (op == SPV_CM_OP_TYPE_KHR) n_types++;
        if (op == SPV_CM_OP_MULADD_KHR) {
            ASSERT_EQ(len, 6u); /* no operand mask: floats */
            uint32_t ta = type_of(k, a[2]), tb = type_of(k, a[3]), tc = type_of(k, a[4]);
            ASSERT(ta && tb && tc);
            ASSERT_EQ(I.use[ta], 1u + SPV_CM_USE_A);
            ASSERT_EQ(I.use[tb], 1u + SPV_CM_USE_B);
            ASSERT_EQ(I.use[tc], 1u + SPV_CM_USE_ACC);
            ASSERT_EQ(I.use[a[0]], 1u + SPV_CM_USE_ACC);
            type_a = ta, type_b = tb, type_c = tc;
            n_muladd++;
        }
        if (op == SPV_CM_OP_LOAD_KHR) n_load++;
        if (op == SPV_CM_OP_STORE_KHR) n_store++;
    }
    ASSERT_EQ(cap_khr, 1);
    ASSERT_EQ(ext_khr, 1);
    ASSERT_EQ(n_types, 3);
    ASSERT(n_muladd >= 1 && n_load >= 2 && n_store >= 1);
    /* the types' shapes: A TM x TK f16, B TK x TN f16, C TM x TN f32 (spec ids 4 5 6) */
    uint32_t TM = I.spec[4], TN = I.spec[5], TK = I.spec[6];
    ASSERT(TM && TN && TK && TM != TN && TN != TK && TM != TK);
    const uint32_t *da = k->w + I.defined[type_a] + 1, *db = k->w + I.defined[type_b] + 1,
                   *dc = k->w + I.defined[type_c] + 1;
    ASSERT(I.defined[type_a] && I.defined[type_b] && I.defined[type_c]);
    ASSERT(da[3] == TM && da[4] == TK && I.is_float[da[1]] == 16);
    ASSERT(db[3] == TK && db[4] == TN && I.is_float[db[1]] == 16);
    ASSERT(dc[3] == TM && dc[4] == TN && I.is_float[dc[1]] == 32);
    ASSERT(I.cval[da[2]] == 3 && da[2] == db[2] && db[2] == dc[2]); /* subgroup scope */

    /* instruction by instruction against the NV module (after the three new constants) */
    size_t ni = count_instructions(nv), shift = 0;
    for (size_t i = 0; i < ni; i++) {
        size_t wn = nth(nv, i), wk = nth(k, i + shift);
        uint32_t op = nv->w[wn] & 0xffff, len = nv->w[wn] >> 16;
        const uint32_t *a = nv->w + wn + 1, *b = k->w + wk + 1;
        if (op == SPV_CM_OP_TYPE_NV && !shift) { /* the new constants stand just before the first type */
            for (uint32_t v = 0; v < 3; v++) {
                size_t wc = nth(k, i + v);
                ASSERT_EQ(k->w[wc], (4u << 16) | OP_CONSTANT);
                ASSERT_EQ(k->w[wc + 2], nv->w[3] + v);
                ASSERT_EQ(k->w[wc + 3], v);
            }
            shift = 3;
            wk = nth(k, i + shift), b = k->w + wk + 1;
        }
        uint32_t kop = k->w[wk] & 0xffff, klen = k->w[wk] >> 16;
        if (op == SPV_CM_OP_TYPE_NV) {
            ASSERT(kop == SPV_CM_OP_TYPE_KHR && !memcmp(a, b, 5 * 4));
        } else if (op == SPV_CM_OP_LOAD_NV || op == SPV_CM_OP_STORE_NV) {
            uint32_t lead = op == SPV_CM_OP_LOAD_NV ? 3 : 2;
            ASSERT(kop == (op == SPV_CM_OP_LOAD_NV ? SPV_CM_OP_LOAD_KHR : SPV_CM_OP_STORE_KHR) && klen == len);
            ASSERT(!memcmp(a, b, lead * 4)); /* result type, result, pointer (object) */
            ASSERT_EQ(b[lead + 1], a[lead]); /* the stride */
            uint32_t colmajor = a[lead + 1];
            size_t dcm = 0;
            for (size_t w = 5; w < nv->n && !dcm; w += nv->w[w] >> 16)
                if (nv->w[w] >> 16 == 3 && nv->w[w + 2] == colmajor) dcm = w;
            ASSERT(dcm);
            uint32_t want = (nv->w[dcm] & 0xffff) == OP_CONSTANT_TRUE ? SPV_CM_COL_MAJOR : SPV_CM_ROW_MAJOR;
            ASSERT_EQ((uint32_t)I.cval[b[lead]], want);                            /* the layout */
            ASSERT(!memcmp(a + lead + 2, b + lead + 2, (len - 1 - lead - 2) * 4)); /* memory operands */
        } else if (op == SPV_CM_OP_MULADD_NV || op == SPV_CM_OP_LENGTH_NV) {
            ASSERT(kop == op - SPV_CM_OP_TYPE_NV + SPV_CM_OP_TYPE_KHR && klen == len && !memcmp(a, b, (len - 1) * 4));
        } else if (op == OP_CAPABILITY && a[0] == SPV_CM_CAP_NV) {
            ASSERT(kop == OP_CAPABILITY && b[0] == SPV_CM_CAP_KHR);
        } else if (op == OP_EXTENSION && is_string(a, len - 1, "SPV_NV_cooperative_matrix")) {
            ASSERT(kop == OP_EXTENSION);
        } else {
            ASSERT(klen == len && !memcmp(nv->w + wn, k->w + wk, len * 4)); /* everything else as it was */
        }
    }
    free_ids(&I);
}

static const struct vkllm__shader_blob *blob(const char *name) {
    for (int i = 0; i < VKLLM__SHADER_COUNT_; i++)
        if (!strcmp(vkllm__shader_blobs[i].name, name)) return &vkllm__shader_blobs[i];
    return NULL;
}

/* A broken copy of m must be refused with a message containing want. */
static void expect_refusal(const struct module *m, const char *want) {
    uint32_t *out = (uint32_t *)1;
    size_t n_out = 1;
    char err[256] = "";
    ASSERT_EQ(spv_coopmat_nv_to_khr(m->w, m->n, &out, &n_out, err, sizeof err), -1);
    ASSERT(out == NULL && n_out == 0);
    if (!strstr(err, want)) FAILF("refusal '%s' does not say '%s'", err, want);
}

static void refusals(const struct module *nv) {
    struct module c = {malloc(nv->n * 4), nv->n};
    ASSERT(c.w);
    size_t muladd = 0, load = 0;
    for (size_t w = 5; w < nv->n; w += nv->w[w] >> 16) {
        if ((nv->w[w] & 0xffff) == SPV_CM_OP_MULADD_NV && !muladd) muladd = w;
        if ((nv->w[w] & 0xffff) == SPV_CM_OP_LOAD_NV && !load) load = w;
    }
    ASSERT(muladd && load);
    /* A's value in B's slot: one type in two uses */
    memcpy(c.w, nv->w, nv->n * 4);
    c.w[muladd + 4] = c.w[muladd + 3];
    expect_refusal(&c, "is used as");
    /* the column-major flag not a boolean constant (the stride's id) */
    memcpy(c.w, nv->w, nv->n * 4);
    c.w[load + 5] = c.w[load + 4];
    expect_refusal(&c, "column-major");
    /* no MulAdd at all (replaced by OpNops): the types' uses are unknown */
    memcpy(c.w, nv->w, nv->n * 4);
    for (size_t w = muladd; w < nv->n; w += nv->w[w] >> 16)
        if ((nv->w[w] & 0xffff) == SPV_CM_OP_MULADD_NV)
            for (uint32_t i = 0; i < 6; i++) c.w[w + i] = (1u << 16) | OP_NOP;
    expect_refusal(&c, "no operand of any MulAdd");
    /* cut inside an instruction; a wrong magic number */
    memcpy(c.w, nv->w, nv->n * 4);
    c.n = muladd + 3;
    expect_refusal(&c, "overruns");
    c.n = nv->n;
    c.w[0] = 0x12345678;
    expect_refusal(&c, "not a SPIR-V module");
    free(c.w);
}

/* A module without NV matrices comes back as it was. */
static void passthrough(void) {
    const struct vkllm__shader_blob *b = blob("matmul_h16_q4_k");
    ASSERT(b);
    uint32_t *out = NULL;
    size_t n_out = 0;
    char err[256];
    ASSERT_EQ(spv_coopmat_nv_to_khr(b->code, *b->size / 4, &out, &n_out, err, sizeof err), 0);
    ASSERT(n_out == *b->size / 4 && !memcmp(out, b->code, *b->size));
    free(out);
}

/* --- the plan -------------------------------------------------------------------------------- */

static struct vkllm_device_info gpu_like(uint32_t sg, uint32_t sg_min, uint32_t sg_max) {
    struct vkllm_device_info d;
    memset(&d, 0, sizeof d);
    d.cooperative_matrix = 1, d.fp16_arith = 1, d.subgroup_size_control = 1;
    d.subgroup_size = sg, d.subgroup_size_min = sg_min, d.subgroup_size_max = sg_max;
    d.max_shared_memory = 49152, d.max_workgroup_invocations = 1024;
    d.max_workgroup_size[0] = 1024;
    return d;
}

static void add_shape(struct vkllm_device_info *d, uint32_t m, uint32_t n, uint32_t k, uint32_t a, uint32_t c) {
    ASSERT(d->coopmat_shape_count < VKLLM_MAX_COOPMAT_SHAPES);
    d->coopmat_shapes[d->coopmat_shape_count++] = (struct vkllm_coopmat_shape){m, n, k, a, a, c, c};
}

static void plan(void) {
    struct vkllm__mm_coopmat p;
    /* NVIDIA (as its driver lists them: 16x8x16, 16x8x8, 16x16x16 f16 -> f16 and -> f32, int8) */
    struct vkllm_device_info nv = gpu_like(32, 32, 32);
    add_shape(&nv, 16, 8, 16, 0, 0), add_shape(&nv, 16, 8, 16, 0, 1), add_shape(&nv, 16, 8, 8, 0, 1);
    add_shape(&nv, 16, 16, 16, 0, 0), add_shape(&nv, 16, 16, 16, 0, 1), add_shape(&nv, 16, 16, 32, 3, 7);
    ASSERT(vkllm__matmul_coopmat_plan(&nv, 512, 4096, &p));
    ASSERT(p.subgroup == 32 && p.wg == 128 && p.bm == 128 && p.bn == 128 && p.bk == 16);
    ASSERT(p.tm == 16 && p.tn == 16 && p.tk == 16);
    ASSERT(vkllm__matmul_coopmat_plan(&nv, 50, 4096, &p) && p.bm == 64 && p.bn == 64);
    ASSERT(vkllm__matmul_coopmat_plan(&nv, 9, 4096, &p) && p.bm == 32 && p.bn == 32);
    ASSERT(vkllm__matmul_coopmat_plan(&nv, 512, 20, &p) && p.bm == 32);
    /* AMD RDNA3 (wave64 by default, 32..64): four subgroups of 64 */
    struct vkllm_device_info amd = gpu_like(64, 32, 64);
    add_shape(&amd, 16, 16, 16, 0, 1), add_shape(&amd, 16, 16, 16, 0, 0), add_shape(&amd, 16, 16, 16, 3, 7);
    ASSERT(vkllm__matmul_coopmat_plan(&amd, 512, 4096, &p) && p.subgroup == 64 && p.wg == 256 && p.tm == 16);
    /* Intel Arc (8 x 16 x 16 at subgroup 16): the shape as offered */
    struct vkllm_device_info intel = gpu_like(16, 8, 32);
    add_shape(&intel, 8, 16, 16, 0, 1);
    ASSERT(vkllm__matmul_coopmat_plan(&intel, 512, 4096, &p) && p.tm == 8 && p.tn == 16 && p.tk == 16 && p.wg == 64);
    /* 16 KiB of shared memory: 64-wide tiles (128 need 21 KiB); 4 KiB: none fits */
    nv.max_shared_memory = 16384;
    ASSERT(vkllm__matmul_coopmat_plan(&nv, 512, 4096, &p) && p.bm == 64 && p.bn == 64);
    nv.max_shared_memory = 4096;
    ASSERT(!vkllm__matmul_coopmat_plan(&nv, 512, 4096, &p));
    nv.max_shared_memory = 49152;
    /* one requirement missing at a time */
    struct vkllm_device_info d = nv;
    d.cooperative_matrix = 0;
    ASSERT(!vkllm__matmul_coopmat_plan(&d, 512, 4096, &p));
    d = nv, d.fp16_arith = 0;
    ASSERT(!vkllm__matmul_coopmat_plan(&d, 512, 4096, &p));
    d = nv, d.subgroup_size_control = 0;
    ASSERT(!vkllm__matmul_coopmat_plan(&d, 512, 4096, &p));
    d = nv, d.max_workgroup_invocations = 64; /* four subgroups of 32 do not fit */
    ASSERT(!vkllm__matmul_coopmat_plan(&d, 512, 4096, &p));
    /* only f16 accumulators, only int8, only 32-wide shapes: no shape for these kernels */
    d = gpu_like(32, 32, 32);
    add_shape(&d, 16, 16, 16, 0, 0), add_shape(&d, 16, 16, 32, 3, 7), add_shape(&d, 32, 32, 16, 0, 1);
    ASSERT(!vkllm__matmul_coopmat_plan(&d, 512, 4096, &p));
    ASSERT(!vkllm__matmul_coopmat_plan(NULL, 512, 4096, &p));
    /* the emulation (matmul_coopmat=2) on a device without any shape: 16 x 16 x 16 as if offered,
     * its accumulators in shared memory too (64 KiB: 64 tiles, not 128), three types only */
    struct vkllm_device_info lvp = gpu_like(8, 8, 8);
    lvp.cooperative_matrix = 0, lvp.max_shared_memory = 65536;
    ASSERT(!vkllm__matmul_coopmat_can(&lvp, VKLLM__TYPE_Q4_K, 512, 4096, 0, &p));
    ASSERT(vkllm__matmul_coopmat_can(&lvp, VKLLM__TYPE_Q4_K, 512, 4096, 1, &p));
    ASSERT(p.subgroup == 8 && p.wg == 32 && p.bm == 64 && p.bn == 64 && p.tm == 16 && p.tn == 16 && p.tk == 16);
    ASSERT(vkllm__matmul_coopmat_can(&lvp, VKLLM__TYPE_F16, 17, 65, 1, &p) && p.bm == 32);
    ASSERT(vkllm__matmul_coopmat_can(&lvp, VKLLM__TYPE_Q5_0, 130, 60, 1, &p) && p.bm == 64);
    ASSERT(!vkllm__matmul_coopmat_can(&lvp, VKLLM__TYPE_F32, 512, 4096, 1, &p));
    lvp.subgroup_size_control = 0;
    ASSERT(!vkllm__matmul_coopmat_can(&lvp, VKLLM__TYPE_Q4_K, 512, 4096, 1, &p));
    printf("plan: NVIDIA-, AMD- and Intel-like shapes, 9 devices refused, the emulation's tiles\n");
    /* on by default: NVIDIA, AMD through RADV; not Intel, not AMD's own drivers */
    ASSERT(vkllm__matmul_coopmat_default(&(struct vkllm_device_info){.vendor_id = 0x10de, .driver_name = "NVIDIA"}));
    ASSERT(vkllm__matmul_coopmat_default(&(struct vkllm_device_info){.vendor_id = 0x1002, .driver_name = "radv"}));
    ASSERT(!vkllm__matmul_coopmat_default(
        &(struct vkllm_device_info){.vendor_id = 0x1002, .driver_name = "AMD proprietary driver"}));
    ASSERT(!vkllm__matmul_coopmat_default(
        &(struct vkllm_device_info){.vendor_id = 0x8086, .driver_name = "Intel open-source Mesa driver"}));
}

int main(int argc, char **argv) {
    if (argc != 2) FAILF("usage: %s BUILD_DIR/shaders", argv[0]);
    int n = 0;
    for (int i = 0; i < VKLLM__SHADER_COUNT_; i++) {
        const struct vkllm__shader_blob *b = &vkllm__shader_blobs[i];
        if (strncmp(b->name, "matmul_cm_", 10) && strncmp(b->name, "attn_cm_", 8)) continue;
        if (strstr(b->name, "_cm_emu_")) { /* the emulation: no cooperative matrix at all */
            for (size_t w = 5; w < *b->size / 4; w += b->code[w] >> 16) {
                uint32_t op = b->code[w] & 0xffff;
                ASSERT((b->code[w] >> 16) > 0);
                ASSERT(!(op >= SPV_CM_OP_TYPE_NV && op <= SPV_CM_OP_LENGTH_NV) &&
                       !(op >= SPV_CM_OP_TYPE_KHR && op <= SPV_CM_OP_LENGTH_KHR));
            }
            continue;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.nv.spv", argv[1], b->name);
        struct module nv = read_spv(path);
        uint32_t *out = NULL;
        size_t n_out = 0;
        char err[256];
        if (spv_coopmat_nv_to_khr(nv.w, nv.n, &out, &n_out, err, sizeof err)) FAILF("%s: %s", b->name, err);
        /* what the library embeds is this rewrite */
        if (n_out * 4 != *b->size || memcmp(out, b->code, *b->size))
            FAILF("%s: the embedded module is not the rewrite", b->name);
        struct module k = {out, n_out};
        check_rewrite(b->name, &nv, &k);
        if (!n) refusals(&nv);
        free(out);
        free(nv.w);
        n++;
    }
    ASSERT_EQ(n, 16 + 4);
    passthrough();
    printf("rewrite: %d matmul_cm and attn_cm modules checked, 5 broken ones refused\n", n);
    plan();
    return 0;
}
