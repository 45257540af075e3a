/* op_test.h - the op tests run the op-case registry's full lists (runtime/check: the same cases,
 * runners and bounds `vkllm selftest` uses, with longer lists) with validation on; a test adds
 * only what is not a numeric case (refusals, special layouts). */
#ifndef VKLLM_OP_TEST_H
#define VKLLM_OP_TEST_H

#include "check.h"
#include "gpu_test.h"
#include "ops_gpu.h"
#include "types.h"

/* --short: the selftest's short lists (every variant on a few shapes) instead of the full ones
 * (the shape sweeps: `make test-full`); --every N: every Nth case of each list only, and every
 * case that is cut into several dispatches (a lowered binding limit: code of its own). */
static int op_test_every = 1;
static int op_test_full = 1;
static inline void op_test_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--every") && i + 1 < argc) op_test_every = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
        if (!strcmp(argv[i], "--short")) op_test_full = 0;
    }
}
/* The chunked cases a list must have had: n of the full list (every Nth of it), 1 of a short one. */
static inline int op_test_chunked_want(int n) { return op_test_full ? n / op_test_every : 1; }

struct op_test_stats {
    int run, failed;
    int chunked; /* cases with a lowered binding limit that ran more than one dispatch */
    int timed;   /* cases whose dispatches were seen (the device has timestamps) */
    int skipped; /* cases for a feature the device lacks (cooperative matrices), reported */
};

/* Run op's full case list (or short with full = 0, or --short) on gpu; every failure is printed. Fails the
 * test on a device or host error. */
static inline void op_test_run(struct vkllm__gpu *gpu, enum vkllm__op op, int full, struct op_test_stats *s) {
    struct vkllm__case_list l = {0};
    vkllm__op_cases(op, full && op_test_full, &l);
    ASSERT_OK(l.st);
    ASSERT(l.n > 0);
    int failed0 = s->failed, skipped0 = s->skipped, run0 = s->run;
    struct vkllm__op_memo memo = {0};
    for (size_t i = 0; i < l.n; i++) {
        const struct vkllm__op_case *c = &l.v[i];
        int chunk = strstr(c->tuning, "max_binding=") || strstr(c->tuning, "max_texels=");
        if (i % (size_t)op_test_every && !chunk) continue; /* --every N: the chunked cases all the same */
        struct vkllm__op_result r;
        vkllm_status st = vkllm__op_check(gpu, c, i + 1, 0, &memo, &r);
        char shape[96];
        vkllm__op_case_shape(c, shape, sizeof shape);
        if (st)
            FAILF("%s %s [%s]: %s (%s)", vkllm__op_name(c->op), shape, c->tuning, vkllm_status_name(st),
                  vkllm_last_error());
        s->run++;
        s->timed += r.dispatches > 0;
        if (chunk && r.dispatches > 1) s->chunked++;
        /* the cooperative-matrix cases skip only where the device cannot run that kernel */
        if (!r.ok && r.skipped && (c->flags & VKLLM__CASE_COOPMAT)) {
            struct vkllm__mm_coopmat cm;
            int emulated = strstr(c->tuning, "coopmat=2") != NULL;
            const struct vkllm_device_info *d = vkllm__gpu_info(gpu);
            if (c->op == VKLLM__OP_ATTENTION ? !vkllm__attn_coopmat_can(d, emulated)
                                             : !vkllm__matmul_coopmat_can(d, c->type, c->n, c->rows, emulated, &cm)) {
                s->skipped++;
                continue;
            }
        }
        if (!r.ok) {
            s->failed++;
            fprintf(stderr, "FAIL %s %s [%s]: %s %.3g (bound %.1g)%s%s%s\n", vkllm__op_name(c->op), shape,
                    c->tuning[0] ? c->tuning : "default", vkllm__op_measure(c->op), r.err, r.bound,
                    r.detail[0] ? " (" : "", r.detail, r.detail[0] ? ")" : "");
        }
    }
    vkllm__op_memo_free(&memo);
    printf("%-11s %5d cases%s, %d failed", vkllm__op_name(op), s->run - run0,
           op_test_every > 1 ? " (every few of the list and the chunked ones: --every)" : "", s->failed - failed0);
    if (s->skipped > skipped0)
        printf(
            ", %d skipped: the device has no cooperative matrices (vkllm__matmul_coopmat_can, vkllm__attn_coopmat_can)",
            s->skipped - skipped0);
    printf("\n");
    fflush(stdout);
    vkllm__case_list_free(&l);
}

/* For refusal checks: a zeroed scratch buffer of bytes and a command list being recorded; end
 * finishes the recording (submitting nothing) and frees both. */
struct op_test_scratch {
    struct vkllm__buffer *b;
    struct vkllm__view v;
    struct vkllm__cmd *c;
};

static inline struct op_test_scratch op_test_scratch_begin(struct vkllm__gpu *gpu, uint64_t bytes) {
    struct op_test_scratch s;
    ASSERT_OK(vkllm__buffer_alloc(gpu, bytes, VKLLM__MEM_DEVICE, &s.b));
    ASSERT_OK(vkllm__buffer_fill_zero(s.b));
    s.v = vkllm__view_of(s.b);
    ASSERT_OK(vkllm__cmd_init(gpu, &s.c));
    ASSERT_OK(vkllm__cmd_begin(s.c));
    return s;
}

static inline void op_test_scratch_end(struct op_test_scratch *s) {
    ASSERT_OK(vkllm__cmd_end(s->c));
    vkllm__cmd_free(s->c);
    vkllm__buffer_free(s->b);
}

#endif
