/* test_op_attn.c - RoPE, KV-cache store, attention and argmax on the device against runtime/ref:
 * the op-case registry's full lists (runtime/check/cases.c, runners in check_attn.c). Every op is
 * recorded once and replayed with only the position buffer (pos0) changed, which is how the decode
 * step runs. The KV cache is f16; the reference reads the same f16-rounded values. Bounds (inputs
 * of order 1):
 *   RoPE       max abs 2e-6 at positions up to 4e9 (the rotations come from the host's table,
 *              exact in double; no sin or cos on the device: docs/numerics.md)
 *   kv_store   bit-exact f16 (round to nearest even), rows past n_ctx untouched
 *   attention  max abs 1e-4 on outputs (weighted means of V in [-1, 1]), both kernels: attn.comp
 *              (attn_texel=0) and attn_tb.comp (=1, where the shape allows it), with NaNs in the
 *              cache past the current length; a profiled recording checks which kernel ran
 *   argmax     exact index, the first on ties
 * Also: refusals of bad shapes. */
#include "op_test.h"

static void test_attention_args(struct vkllm__gpu *gpu) {
    struct op_test_scratch sc = op_test_scratch_begin(gpu, 4096);
    struct vkllm__view v = sc.v;
    struct vkllm__cmd *c = sc.c;
    struct vkllm__attn_shape odd = {1, 4, 2, 7, 16, 1.0f, 0, 0.0f, {0}, 0, 0, 0, {{0}, 0}, 0, NULL, NULL},
                             gqa = {1, 6, 4, 8, 16, 1.0f, 0, 0.0f, {0}, 0, 0, 0, {{0}, 0}, 0, NULL, NULL},
                             big = {1, 4, 2, 8, 4096, 1.0f, 0, 0.0f, {0}, 0, 0, 0, {{0}, 0}, 0, NULL, NULL},
                             sinks = {1, 4, 2, 8,        16, 1.0f, 0,   0.0f, {v.buf, v.offset, 12},
                                      0, 0, 0, {{0}, 0}, 0,  NULL, NULL},               /* 3 of 4 heads */
        ring = {1, 4, 2, 8, 16, 1.0f, 4, 0.0f, {0}, 17, 0, 0, {{0}, 0}, 0, NULL, NULL}, /* rows > n_ctx */
        q8w = {1, 4, 2, 8, 16, 1.0f, 0, 0.0f, {0}, 0, 1, 0, {{0}, 0}, 0, NULL, NULL},   /* q8_0: width 16 */
        q8d = {1, 4, 1, 34, 16, 1.0f, 0, 0.0f, {0}, 0, 0, 1, {{0}, 0}, 0, NULL, NULL};  /* q8_0: head_dim % 4 */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &odd), VKLLM_STATUS_INVALID_ARGUMENT);   /* odd dim */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &gqa), VKLLM_STATUS_INVALID_ARGUMENT);   /* 6 % 4 */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &big), VKLLM_STATUS_INVALID_ARGUMENT);   /* cache > view */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &sinks), VKLLM_STATUS_INVALID_ARGUMENT); /* sinks < heads */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &ring), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &q8w), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &q8d), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__op_kv_store_q(c, v, v, v, 1, 48, 4, 0, 1, NULL),
                  VKLLM_STATUS_INVALID_ARGUMENT); /* q8_0: width % 32 */
    ASSERT_STATUS(vkllm__op_kv_store_cols(c, v, v, v, 1, 8, 12, 6, 4, 0, 0, NULL),
                  VKLLM_STATUS_INVALID_ARGUMENT); /* 6 + 8 > 12 */
    ASSERT_STATUS(vkllm__op_kv_store_cols(c, v, v, v, 1, 8, 16, 3, 4, 0, 0, NULL),
                  VKLLM_STATUS_INVALID_ARGUMENT); /* odd column */
    /* a cache split by kv heads: parts dividing the kv heads, with their views */
    struct vkllm__view parts[4] = {v, v, v, v};
    struct vkllm__attn_shape p3 = {1, 8, 4, 8, 16, 1.0f, 0, 0.0f, {0}, 0, 0, 0, {{0}, 0}, 3, parts, parts},
                             pn = {1, 8, 4, 8, 16, 1.0f, 0, 0.0f, {0}, 0, 0, 0, {{0}, 0}, 2, NULL, NULL};
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &p3), VKLLM_STATUS_INVALID_ARGUMENT); /* 4 % 3 */
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &pn), VKLLM_STATUS_INVALID_ARGUMENT); /* no views */
    struct vkllm__kv_pages p4 = {{v.buf, v.offset, 4}, 4}, p9 = {v, 4};
    ASSERT_STATUS(vkllm__op_kv_store_q(c, v, v, v, 1, 8, 40, 64, 0, &p4),
                  VKLLM_STATUS_INVALID_ARGUMENT); /* table < 3 blocks */
    ASSERT_STATUS(vkllm__op_kv_store_q(c, v, v, v, 1, 8, 40, 72, 0, &p9), VKLLM_STATUS_INVALID_ARGUMENT); /* 72 % 16 */
    struct vkllm__attn_shape pt = {1, 4,    2,   8, 40, 1.0f, 0, 0.0f, {0}, 64, 0, 0, {{v.buf, v.offset, 8}, 4},
                                   0, NULL, NULL};
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &pt), VKLLM_STATUS_INVALID_ARGUMENT); /* table < 3 blocks */
    pt.pages.table.size = 12;
    ASSERT_STATUS(vkllm__op_attention(c, v, v, v, v, v, v, &pt), VKLLM_STATUS_OK); /* the same, a whole table */
    ASSERT_STATUS(vkllm__op_kv_store(c, v, v, v, 1, 7, 4, 0), VKLLM_STATUS_INVALID_ARGUMENT);       /* odd width */
    ASSERT_STATUS(vkllm__op_kv_store(c, v, v, v, 1, 8, 4, 5), VKLLM_STATUS_INVALID_ARGUMENT);       /* rows > n_ctx */
    ASSERT_STATUS(vkllm__op_rope(c, v, v, v, 1, 1, 8, 10, 0, 1.0f), VKLLM_STATUS_INVALID_ARGUMENT); /* n_rot > dim */
    ASSERT_STATUS(vkllm__op_argmax(c, v, v, 0), VKLLM_STATUS_INVALID_ARGUMENT);
    op_test_scratch_end(&sc);
}

int main(int argc, char **argv) {
    op_test_args(argc, argv);
    struct vkllm__gpu *gpu = gpu_test_open();
    struct op_test_stats s = {0};
    test_attention_args(gpu);
    op_test_run(gpu, VKLLM__OP_ROPE, 1, &s);
    op_test_run(gpu, VKLLM__OP_KV_STORE, 1, &s);
    op_test_run(gpu, VKLLM__OP_ROPE_KV, 1, &s);
    int before = s.timed;
    op_test_run(gpu, VKLLM__OP_ATTENTION, 1, &s);
    printf("kernel choice checked for %d attention cases (needs timestamps)\n", s.timed - before);
    op_test_run(gpu, VKLLM__OP_ARGMAX, 1, &s);
    gpu_test_close(gpu);
    printf("%d cases, %d failed\n", s.run, s.failed);
    return s.failed ? 1 : 0;
}
