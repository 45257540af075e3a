/* spv_coopmat.c - SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix (see spv_coopmat.h).
 *
 * Two passes over the module: the first learns each value's type, the 32-bit integer and boolean
 * constants, and each NV matrix type's use from the MulAdds; the second writes the module with
 * the KHR opcodes, three new integer constants (0, 1, 2: the uses and the layouts) placed just
 * before the first matrix type, and the id bound raised by three. */
#include "spv_coopmat.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_NAME = 5,
    OP_MEMBER_NAME = 6,
    OP_EXTENSION = 10,
    OP_CAPABILITY = 17,
    OP_TYPE_BOOL = 20,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42,
    OP_CONSTANT = 43,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    OP_DECORATE_ID = 332,
};

static const char EXT_NV[] = "SPV_NV_cooperative_matrix";
static const char EXT_KHR[] = "SPV_KHR_cooperative_matrix";

static int fail(char *err, size_t size, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Opcodes that declare a type (result id in word 1). */
static int declares_type(uint32_t op) {
    return (op >= 19 && op <= 39) || op == 322 || op == 327 || op == 4472 || op == 5341 || op == SPV_CM_OP_TYPE_NV ||
           op == SPV_CM_OP_TYPE_KHR;
}

/* Opcodes whose word 1 is a target id rather than a result type. */
static int annotates(uint32_t op) {
    return op == OP_NAME || op == OP_MEMBER_NAME || op == OP_DECORATE || op == OP_MEMBER_DECORATE ||
           op == OP_DECORATE_ID || op == 5632 || op == 5633;
}

/* Does the literal string starting at s (at most nw words) equal str? */
static int string_is(const uint32_t *s, size_t nw, const char *str) {
    size_t len = strlen(str);
    if (nw * 4 < len + 1) return 0;
    return memcmp(s, str, len) == 0 && ((const char *)s)[len] == 0;
}

struct info {
    uint32_t *vtype;     /* result id -> its type id (0: none seen) */
    uint8_t *is_type;    /* 1: a type; 2: a 32-bit int type; 3: a float type; 4: an NV matrix type */
    uint8_t *boolc;      /* 1: OpConstantFalse, 2: OpConstantTrue */
    uint8_t *use;        /* NV matrix types: SPV_CM_USE_*, 0xff unknown */
    uint32_t *component; /* NV matrix types: component type */
};

static int set_use(struct info *I, uint32_t t, uint8_t u, const char *slot, char *err, size_t es) {
    if (I->use[t] != 0xff && I->use[t] != u)
        return fail(err, es,
                    "cooperative matrix type %%%u is used as %s and as %s of OpCooperativeMatrixMulAddNV: "
                    "KHR types carry one use, give them distinct dimensions (specialization constants)",
                    t, slot,
                    I->use[t] == SPV_CM_USE_A   ? "A"
                    : I->use[t] == SPV_CM_USE_B ? "B"
                                                : "the accumulator");
    I->use[t] = u;
    return 0;
}

int spv_coopmat_nv_to_khr(const uint32_t *in, size_t n, uint32_t **out, size_t *n_out, char *err, size_t es) {
    *out = NULL;
    *n_out = 0;
    if (!in || n < 5 || in[0] != 0x07230203u) return fail(err, es, "not a SPIR-V module");
    uint32_t bound = in[3];
    if (bound == 0 || bound > (1u << 22) - 4) return fail(err, es, "id bound %u out of range", bound);
    struct info I = {calloc(bound, 4), calloc(bound, 1), calloc(bound, 1), malloc(bound), calloc(bound, 4)};
    uint32_t *o = NULL;
    int rc = -1;
    if (!I.vtype || !I.is_type || !I.boolc || !I.use || !I.component) {
        fail(err, es, "out of memory");
        goto done;
    }
    memset(I.use, 0xff, bound);

    /* pass 1 */
    size_t first_type = 0; /* word offset of the first NV matrix type */
    uint32_t int_type = 0, n_nv = 0;
    for (size_t w = 5; w < n;) {
        uint32_t op = in[w] & 0xffffu, len = in[w] >> 16;
        if (len == 0 || len > n - w) {
            fail(err, es, "instruction at word %zu overruns the module", w);
            goto done;
        }
        const uint32_t *a = in + w + 1;
        /* the result ids this pass indexes by: a type's (word 1), a typed value's (word 2) */
        int typed = !declares_type(op) && !annotates(op) && len >= 3 && a[0] < bound && I.is_type[a[0]];
        if ((declares_type(op) && len >= 2 && a[0] >= bound) || (typed && a[1] >= bound)) {
            fail(err, es, "an id at word %zu is out of the bound %u", w, bound);
            goto done;
        }
        if (declares_type(op) && len >= 2) {
            I.is_type[a[0]] = 1;
            if (op == OP_TYPE_INT && len >= 3 && a[1] == 32) I.is_type[a[0]] = 2;
            if (op == OP_TYPE_FLOAT) I.is_type[a[0]] = 3;
            if (op == SPV_CM_OP_TYPE_NV) {
                if (len != 6 || a[1] >= bound || a[2] >= bound) {
                    fail(err, es, "OpTypeCooperativeMatrixNV at word %zu has %u words, not 6", w, len);
                    goto done;
                }
                I.is_type[a[0]] = 4;
                I.component[a[0]] = a[1];
                if (!first_type) first_type = w;
                n_nv++;
                uint32_t st = I.vtype[a[2]]; /* the scope's type: a 32-bit integer */
                if (!st || I.is_type[st] != 2) {
                    fail(err, es, "the scope of matrix type %%%u is not a 32-bit integer constant", a[0]);
                    goto done;
                }
                int_type = st;
            }
        } else if (typed) {
            I.vtype[a[1]] = a[0];
            if (op == OP_CONSTANT_TRUE) I.boolc[a[1]] = 2;
            if (op == OP_CONSTANT_FALSE) I.boolc[a[1]] = 1;
        }
        if (op == SPV_CM_OP_MULADD_NV) {
            if (len != 6) {
                fail(err, es, "OpCooperativeMatrixMulAddNV at word %zu has %u words, not 6", w, len);
                goto done;
            }
            static const char *slots[] = {"A", "B", "the accumulator"};
            for (int s = 0; s < 3; s++) {
                uint32_t v = a[2 + s], t = v < bound ? I.vtype[v] : 0;
                if (!t || I.is_type[t] != 4) {
                    fail(err, es, "operand %s (%%%u) of the MulAdd at word %zu is not a known matrix value", slots[s],
                         v, w);
                    goto done;
                }
                if (I.is_type[I.component[t]] != 3) {
                    fail(err, es, "matrix type %%%u is not of floats: integer MulAdds are not rewritten", t);
                    goto done;
                }
                if (set_use(&I, t, (uint8_t)s, slots[s], err, es)) goto done;
            }
            if (I.is_type[a[0]] != 4 || set_use(&I, a[0], SPV_CM_USE_ACC, "the accumulator", err, es)) {
                if (I.is_type[a[0]] != 4) fail(err, es, "the MulAdd at word %zu does not yield a matrix", w);
                goto done;
            }
        }
        w += len;
    }
    if (!n_nv) { /* nothing to do */
        o = malloc(n * 4);
        if (!o) {
            fail(err, es, "out of memory");
            goto done;
        }
        memcpy(o, in, n * 4);
        *out = o, *n_out = n;
        o = NULL;
        rc = 0;
        goto done;
    }
    for (uint32_t t = 0; t < bound; t++)
        if (I.is_type[t] == 4 && I.use[t] == 0xff) {
            fail(err, es, "cooperative matrix type %%%u is no operand of any MulAdd: its KHR use is unknown", t);
            goto done;
        }

    /* pass 2 */
    uint32_t cid = bound; /* cid + v: the new constant of value v (0, 1, 2) */
    size_t cap = n + 12 + n_nv + 8, k = 0;
    o = malloc(cap * 4);
    if (!o) {
        fail(err, es, "out of memory");
        goto done;
    }
    memcpy(o, in, 20);
    o[3] = bound + 3;
    k = 5;
    for (size_t w = 5; w < n;) {
        uint32_t op = in[w] & 0xffffu, len = in[w] >> 16;
        const uint32_t *a = in + w + 1;
        if (w == first_type)
            for (uint32_t v = 0; v < 3; v++) {
                o[k++] = (4u << 16) | OP_CONSTANT;
                o[k++] = int_type, o[k++] = cid + v, o[k++] = v;
            }
        if (k + len + 2 > cap) {
            fail(err, es, "internal: output overflow");
            goto done;
        }
        if (op == OP_CAPABILITY && len == 2 && a[0] == SPV_CM_CAP_NV) {
            o[k++] = in[w], o[k++] = SPV_CM_CAP_KHR;
        } else if (op == OP_EXTENSION && string_is(a, len - 1, EXT_NV)) {
            uint32_t nw = (uint32_t)(sizeof EXT_KHR + 3) / 4; /* with its NUL, in words */
            o[k++] = ((1 + nw) << 16) | OP_EXTENSION;
            memset(o + k, 0, nw * 4);
            memcpy(o + k, EXT_KHR, sizeof EXT_KHR);
            k += nw;
        } else if (op == SPV_CM_OP_TYPE_NV) {
            o[k++] = (7u << 16) | SPV_CM_OP_TYPE_KHR;
            for (int i = 0; i < 5; i++) o[k++] = a[i];
            o[k++] = cid + I.use[a[0]];
        } else if (op == SPV_CM_OP_LOAD_NV || op == SPV_CM_OP_STORE_NV) {
            /* load: rtype result pointer stride colmajor [memory]; store: pointer object stride colmajor [memory] */
            uint32_t lead = op == SPV_CM_OP_LOAD_NV ? 3 : 2;
            if (len < 1 + lead + 2) {
                fail(err, es, "cooperative matrix load or store at word %zu is too short", w);
                goto done;
            }
            uint32_t stride = a[lead], cm = a[lead + 1];
            if (cm >= bound || !I.boolc[cm]) {
                fail(err, es, "the column-major operand at word %zu is not OpConstantTrue/False", w);
                goto done;
            }
            o[k++] = (len << 16) | (op == SPV_CM_OP_LOAD_NV ? SPV_CM_OP_LOAD_KHR : SPV_CM_OP_STORE_KHR);
            for (uint32_t i = 0; i < lead; i++) o[k++] = a[i];
            o[k++] = cid + (I.boolc[cm] == 2 ? SPV_CM_COL_MAJOR : SPV_CM_ROW_MAJOR);
            o[k++] = stride;
            for (uint32_t i = lead + 2; i < len - 1; i++) o[k++] = a[i];
        } else if (op == SPV_CM_OP_MULADD_NV || op == SPV_CM_OP_LENGTH_NV) {
            o[k++] = (len << 16) | (op == SPV_CM_OP_MULADD_NV ? SPV_CM_OP_MULADD_KHR : SPV_CM_OP_LENGTH_KHR);
            for (uint32_t i = 0; i < len - 1; i++) o[k++] = a[i];
        } else {
            memcpy(o + k, in + w, len * 4);
            k += len;
        }
        w += len;
    }
    *out = o, *n_out = k;
    o = NULL;
    rc = 0;
done:
    free(o);
    free(I.vtype), free(I.is_type), free(I.boolc), free(I.use), free(I.component);
    return rc;
}
