/* test_op_matvec.c - decode matvec and embedding lookup (get_rows) for every weight type against
 * the reference: the op-case registry's full lists (runtime/check/cases.c: random weights
 * quantized with vkllm__quantize_row, shapes that are multiples of nothing, W at an offset, several
 * columns each bit-identical to the column alone, every work split (the CPU one, subgroupAdd,
 * shared memory, x shared or per lane), W bound in row chunks with the binding limit lowered, a
 * matrix made by vkllm__dtensor_upload). Bounds: runtime/check/check.h (matvec NMSE < 1e-10,
 * get_rows < 1e-12). Validation with synchronization validation is on and must stay silent.
 * Also: a type without a kernel is refused with a status. */
#include "op_test.h"

/* Types without a kernel are refused with a status, not a crash. */
static void unsupported_type(struct vkllm__gpu *gpu) {
    struct vkllm__dtensor t;
    ASSERT_OK(vkllm__dtensor_upload(gpu, VKLLM__TYPE_IQ2_XS, 256, 1, NULL, &t));
    struct op_test_scratch sc = op_test_scratch_begin(gpu, 1024);
    ASSERT_STATUS(vkllm__op_matvec(sc.c, sc.v, &t, sc.v, 1), VKLLM_STATUS_UNSUPPORTED);
    ASSERT_STATUS(vkllm__op_get_rows(sc.c, sc.v, &t, sc.v, 1), VKLLM_STATUS_UNSUPPORTED);
    op_test_scratch_end(&sc);
    vkllm__dtensor_free(&t);
}

/* A subgroup reduction over nt lanes runs only where subgroups of exactly nt lanes, all present,
 * are guaranteed (asked for where the device has subgroup size control, or the device's one fixed
 * size); otherwise the shared-memory variant runs. Checked on the kernel each case ran. */
static void reduction_choice(struct vkllm__gpu *gpu) {
    const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
    static const uint32_t nts[] = {2, 4, 8, 16, 32, 64};
    int checked = 0;
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(nts); i++) {
        uint32_t nt = nts[i];
        struct vkllm__op_case c = {.op = VKLLM__OP_MATVEC, .type = VKLLM__TYPE_Q8_0, .rows = 33, .cols = 256, .n = 1};
        snprintf(c.tuning, sizeof c.tuning, "matvec_wg=%u,matvec_nt=%u,matvec_nr=1,matvec_sg=1", 2 * nt, nt);
        if (2 * nt > d->max_workgroup_invocations) continue;
        struct vkllm__op_result r;
        ASSERT_OK(vkllm__op_check(gpu, &c, 7, 0, NULL, &r));
        ASSERT(r.ok);
        int sg_ok =
            (d->subgroup_ops & VKLLM_SUBGROUP_ARITHMETIC) && (d->subgroup_ops & VKLLM_SUBGROUP_BALLOT) &&
            (d->subgroup_ops & VKLLM_SUBGROUP_SHUFFLE) &&
            (d->subgroup_size_control
                 ? nt >= d->subgroup_size_min && nt <= d->subgroup_size_max
                 : nt == d->subgroup_size && (!d->subgroup_size_min || d->subgroup_size_min == d->subgroup_size_max));
        if (!r.dispatches) continue; /* no timestamps: the kernel is not known */
        int shm = strstr(r.kernel, "_shm") != NULL;
        if (shm == sg_ok)
            FAILF("nt=%u on subgroups %u (%u..%u, control %d): ran %s", nt, d->subgroup_size, d->subgroup_size_min,
                  d->subgroup_size_max, d->subgroup_size_control, r.kernel);
        checked++;
    }
    printf("reduction variant as the device guarantees: %d work splits checked (subgroup %u, range %u..%u, size "
           "control %s)\n",
           checked, d->subgroup_size, d->subgroup_size_min, d->subgroup_size_max,
           d->subgroup_size_control ? "yes" : "no");
}

int main(int argc, char **argv) {
    op_test_args(argc, argv);
    struct vkllm__gpu *gpu = gpu_test_open();
    struct op_test_stats s = {0};
    op_test_run(gpu, VKLLM__OP_MATVEC, 1, &s);
    int chunked_mv = s.chunked;
    op_test_run(gpu, VKLLM__OP_GET_ROWS, 1, &s);
    op_test_run(gpu, VKLLM__OP_MATVEC_GLU, 1, &s);
    unsupported_type(gpu);
    reduction_choice(gpu);
    gpu_test_close(gpu);
    printf("%d cases (%d ran W in several chunks), %d failed\n", s.run, s.chunked, s.failed);
    /* every type had matrices bound in chunks (seen where the device has timestamps) */
    if (s.timed) ASSERT(chunked_mv >= op_test_chunked_want(3 * 11) && s.chunked > chunked_mv);
    return s.failed ? 1 : 0;
}
