/* selftest.h - run one op on the device with seeded random inputs and compare it with the scalar
 * reference (runtime/ref/ops.c). Used by the op tests and by `vkllm selftest`, which checks a
 * user's own GPU and driver. */
#ifndef VKLLM_SELFTEST_H
#define VKLLM_SELFTEST_H

#include "gpu.h"

enum vkllm__check_op {
    VKLLM__CHECK_ADD,
    VKLLM__CHECK_MUL,
    VKLLM__CHECK_RMSNORM,
    VKLLM__CHECK_SOFTMAX,
    VKLLM__CHECK_SILU_MUL,
    VKLLM__CHECK_ADD_RMSNORM, /* x += b; rmsnorm(x) * w, w a third input */
    VKLLM__CHECK_COUNT_
};

/* Input flavours. */
#define VKLLM__CHECK_NEG_INF 1u /* softmax: scattered -inf entries and one row all -inf */
#define VKLLM__CHECK_LARGE 2u   /* magnitudes up to 1e4; softmax also gets a few at +-1e30 */
#define VKLLM__CHECK_INPLACE 4u /* add_rmsnorm: the output written over b (as the forward pass does) */

struct vkllm__check_case {
    enum vkllm__check_op op;
    uint32_t ncols, nrows; /* elementwise: n = ncols * nrows */
    uint32_t nb;           /* add/mul: length of b (0 = n) */
    uint32_t flags;
    uint32_t wg;           /* workgroup size (0 = the device default) */
};

struct vkllm__check_result {
    double max_abs;   /* max |gpu - ref| */
    double max_rel;   /* max |gpu - ref| / max(|ref|, 1e-30), over entries with |ref| > 1e-6 */
    double nmse;      /* sum (gpu-ref)^2 / sum ref^2 */
    double bound;     /* the bound the op must meet (on max_rel, or on max_abs for softmax) */
    int pass;
};

const char *vkllm__check_op_name(enum vkllm__check_op op);

/* Run a case; the result says whether it met its bound. Fails only on a device/host error. */
vkllm_status vkllm__check_run(struct vkllm__gpu *gpu, const struct vkllm__check_case *c, uint64_t seed,
                              struct vkllm__check_result *r);

/* The standard set of cases `vkllm selftest` runs. */
extern const struct vkllm__check_case vkllm__selftest_cases[];
extern const uint32_t vkllm__selftest_n_cases;

#endif
