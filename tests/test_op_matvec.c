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

/* The 16-byte layout made on the device (shaders/repack.comp, through vkllm__dtensor_upload with the
 * tuning's repack on) is byte for byte the host's vkllm__rp_pack, for every type that has it: rows
 * of the file's size, and (Q6_K rows that are not whole groups of 8 blocks) longer rows, whole and
 * split into buffers and binding chunks; rows of 32-element blocks that are not
 * whole groups, a type without the layout and repack=0 stay as uploaded. */
static void repack_bytes(struct vkllm__gpu *gpu) {
    static const struct {
        uint32_t type, k, m;
        const char *tuning;
        int rp;
    } cs[] = {
        {VKLLM__TYPE_Q8_0, 512, 33, "repack=1", 1},
        {VKLLM__TYPE_Q4_0, 2816, 7, "repack=1", 1},
        {VKLLM__TYPE_Q5_0, 256, 100, "repack=1,max_alloc=9000,max_binding=3000", 1},
        {VKLLM__TYPE_Q6_K, 2048, 9, "repack=1,max_binding=5000", 1},
        {VKLLM__TYPE_Q6_K, 5632, 30, "repack=1,max_alloc=40000,max_binding=15000", 1}, /* 22 blocks: 2 + 6 */
        {VKLLM__TYPE_Q6_K, 1280, 3, "repack=1", 1},                                    /* 5: a short group */
        {VKLLM__TYPE_Q8_0, 96, 5, "repack=1", 0},                                      /* 3 blocks */
        {VKLLM__TYPE_Q4_K, 512, 5, "repack=1", 0},                                     /* no such layout */
        {VKLLM__TYPE_Q8_0, 512, 5, "repack=0", 0},
    };
    const struct vkllm__tuning saved = *vkllm__gpu_tuning(gpu);
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(cs); i++) {
        struct vkllm__tuning t = saved;
        ASSERT_OK(vkllm__tuning_parse(&t, cs[i].tuning));
        vkllm__gpu_set_tuning(gpu, &t);
        uint64_t rb = 0;
        ASSERT_OK(vkllm__row_size(cs[i].type, cs[i].k, &rb));
        uint64_t rp_rb = cs[i].rp ? vkllm__rp_row_bytes(cs[i].type, cs[i].k) : rb;
        ASSERT(rp_rb >= rb && (!cs[i].rp || rp_rb % 16 == 0));
        uint64_t bytes = rb * cs[i].m, out = rp_rb * cs[i].m;
        uint8_t *src = malloc(bytes), *want = malloc(out), *got = malloc(out);
        ASSERT(src && want && got);
        float *row = malloc(cs[i].k * sizeof *row);
        ASSERT(row);
        for (uint32_t r = 0; r < cs[i].m; r++) {
            for (uint32_t j = 0; j < cs[i].k; j++) row[j] = (float)((r * 7919u + j * 104729u) % 2001u) / 1000.0f - 1.0f;
            vkllm__quantize_row(cs[i].type, row, src + r * rb, cs[i].k);
        }
        memcpy(want, src, bytes);
        if (cs[i].rp) vkllm__rp_pack(cs[i].type, cs[i].k, cs[i].m, src, want); /* a short group's padding: zeros */
        struct vkllm__dtensor d;
        ASSERT_OK(vkllm__dtensor_upload(gpu, cs[i].type, cs[i].k, cs[i].m, src, &d));
        if (d.rp != cs[i].rp || d.row_bytes != rp_rb)
            FAILF("case %zu (%s %ux%u, %s): rp %d, rows of %llu bytes; want %d, %llu", i, vkllm__type_name(cs[i].type),
                  cs[i].m, cs[i].k, cs[i].tuning, d.rp, (unsigned long long)d.row_bytes, cs[i].rp,
                  (unsigned long long)rp_rb);
        if ((d.n_parts > 1) != (strstr(cs[i].tuning, "max_alloc") != NULL)) FAILF("case %zu: %u buffers", i, d.n_parts);
        uint64_t per = d.n_parts > 1 ? d.part_rows * rp_rb : out;
        for (uint64_t off = 0, p = 0; off < out; off += per, p++)
            ASSERT_OK(
                vkllm__buffer_download(d.n_parts > 1 ? d.part[p] : d.buf, 0, got + off, VKLLM_MIN(per, out - off)));
        for (uint64_t b = 0; b < out; b++)
            if (got[b] != want[b])
                FAILF("case %zu (%s %ux%u, %s): byte %llu is %u, want %u", i, vkllm__type_name(cs[i].type), cs[i].m,
                      cs[i].k, cs[i].tuning, (unsigned long long)b, got[b], want[b]);
        if (cs[i].rp && !memcmp(src, want, bytes)) FAILF("case %zu: the layout changed nothing", i);
        vkllm__dtensor_free(&d);
        free(src), free(want), free(got), free(row);
    }
    vkllm__gpu_set_tuning(gpu, &saved);
    printf("16-byte layout: %zu uploads as the host's vkllm__rp_pack\n", VKLLM_ARRAY_LEN(cs));
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
    repack_bytes(gpu);
    gpu_test_close(gpu);
    printf("%d cases (%d ran W in several chunks), %d failed\n", s.run, s.chunked, s.failed);
    /* every type had matrices bound in chunks (seen where the device has timestamps) */
    if (s.timed) ASSERT(chunked_mv >= op_test_chunked_want(3 * 11) && s.chunked > chunked_mv);
    return s.failed ? 1 : 0;
}
