/* check_impl.h - what the runners of check_*.c share (check.c): one RNG, one allocation helper
 * that frees everything a case made, one comparison, one way to record and submit. */
#ifndef VKLLM_CHECK_IMPL_H
#define VKLLM_CHECK_IMPL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ops_gpu.h"
#include "ref.h"
#include "ref_ops.h"
#include "types.h"

#define CHK_MAX_ALLOCS 32

/* One case's state: its device, inputs' random stream, and everything it allocated. The first
 * failure is kept in st; later helper calls do nothing (return NULL / 0) once it is set. */
struct chk {
    struct vkllm__gpu *gpu;
    const struct vkllm__op_case *c;
    struct vkllm__op_result *r;
    uint64_t rng;
    int profile;
    struct vkllm__op_memo *memo; /* may be NULL */
    vkllm_status st;
    void *host[CHK_MAX_ALLOCS];
    uint32_t n_host;
    struct vkllm__buffer *bufs[CHK_MAX_ALLOCS];
    uint32_t n_bufs;
    struct vkllm__cmd *cmds[4];
    uint32_t n_cmds;
};

/* Uniform in [-1, 1). */
float vkllm__chk_rand(struct chk *k);
/* v rounded to f16 (to nearest even, or toward zero), as a device's f16 tiles may round it */
float vkllm__chk_f16_round(float v, int toward_zero);

/* n floats (host), freed with the case; fill: uniform * scale (0: left uninitialised). */
float *vkllm__chk_floats(struct chk *k, uint64_t n, float scale);
void *vkllm__chk_alloc(struct chk *k, uint64_t bytes);
/* A device buffer of bytes, with data (may be NULL) uploaded at offset 0. */
struct vkllm__buffer *vkllm__chk_buf(struct chk *k, uint64_t bytes, const void *data);
/* Free b with the case (a buffer made outside vkllm__chk_buf); NULL is ignored. */
void vkllm__chk_own(struct chk *k, struct vkllm__buffer *b);
/* A command list, freed with the case; with k->profile it times each dispatch. */
struct vkllm__cmd *vkllm__chk_cmd(struct chk *k);
/* Submit c and take its first dispatch's label, count and time into k->r. */
void vkllm__chk_submit(struct chk *k, struct vkllm__cmd *c);
void vkllm__chk_download(struct chk *k, struct vkllm__buffer *b, void *dst, uint64_t bytes);
void vkllm__chk_upload(struct chk *k, struct vkllm__buffer *b, const void *src, uint64_t bytes);
/* Keep a failing status (the first one). Returns 1 when k is still fine. */
int vkllm__chk_ok(struct chk *k, vkllm_status st);

/* Compare n values: max_abs, max_rel (entries with |want| > 1e-6) and nmse; a NaN or inf that
 * the reference does not have counts as an infinite error. */
struct chk_stats {
    double max_abs, max_rel, nmse;
};
void vkllm__chk_compare(const float *got, const float *want, uint64_t n, struct chk_stats *s);
/* Fold s into the result: the measure of the case's op; the worst of several comparisons. */
void vkllm__chk_fold(struct chk *k, const struct chk_stats *s);
/* Note something wrong beyond the measure (the case fails). printf-style. */
void vkllm__chk_fail(struct chk *k, const char *fmt, ...) VKLLM_PRINTF(2, 3);

/* A VKLLM__CASE_RP case whose W was not repacked: a failure (selftest --defaults runs these cases only
 * where the device takes the layout by default). */
void vkllm__chk_not_rp(struct chk *k);

/* x (n vectors of kk) as the op will see it: where the device quantizes x to int8 (x8: what
 * vkllm__matvec_x8_applies / vkllm__matvec_id_x8_applies say for the case's W; GPUs' matvec_x8),
 * x is first nudged off rounding ties (so that any conforming division rounds it alike) and the
 * quantized copy the reference multiplies is returned; elsewhere x itself. A VKLLM__CASE_X8 case
 * that the kernel cannot take is skipped. */
const float *vkllm__chk_x_seen(struct chk *k, int x8, float *x, uint32_t n, uint32_t kk);

/* The runners, one per op family (check_basic.c, check_matrix.c, check_attn.c). */
void vkllm__chk_elementwise(struct chk *k);
void vkllm__chk_matvec(struct chk *k);
void vkllm__chk_matvec_tb(struct chk *k);
void vkllm__chk_matmul(struct chk *k);
void vkllm__chk_get_rows(struct chk *k);
void vkllm__chk_rope(struct chk *k);
void vkllm__chk_kv_store(struct chk *k);
void vkllm__chk_rope_kv(struct chk *k);
void vkllm__chk_matvec_glu(struct chk *k);
void vkllm__chk_attention(struct chk *k);
void vkllm__chk_argmax(struct chk *k);
void vkllm__chk_matvec_id(struct chk *k);
void vkllm__chk_moe_route(struct chk *k);
void vkllm__chk_moe_sum(struct chk *k);
void vkllm__chk_moe_add_id(struct chk *k);

#endif /* VKLLM_CHECK_IMPL_H */
