/* bench.h - what the op benchmarks (bench_*.c) share: a failing call ends the run with one line,
 * and tuning knobs set per device (base/tuning.h). Benchmarks report numbers; they assert
 * nothing. */
#ifndef VKLLM_BENCH_H
#define VKLLM_BENCH_H

#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"

#define CHECK(expr)                                                                                            \
    do {                                                                                                       \
        vkllm_status st_ = (expr);                                                                             \
        if (st_) {                                                                                             \
            fprintf(stderr, "%s: %s: %s (%s)\n", __FILE__, #expr, vkllm_status_name(st_), vkllm_last_error()); \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

/* Set one tuning knob of gpu to value. */
static inline void tune(struct vkllm__gpu *gpu, const char *name, const char *value) {
    struct vkllm__tuning t = *vkllm__gpu_tuning(gpu);
    CHECK(vkllm__tuning_set(&t, name, value));
    vkllm__gpu_set_tuning(gpu, &t);
}

#endif
