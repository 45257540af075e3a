/* gpu_test.h - opening the device in tests: validation (with synchronization validation) always
 * on, and at the end no validation message may have been reported. */
#ifndef VKLLM_GPU_TEST_H
#define VKLLM_GPU_TEST_H

#include "gpu.h"
#include "harness.h"

static void gpu_test_log(vkllm_log_level level, const char *msg, void *ud) {
    (void)ud;
    if (level >= VKLLM_LOG_WARN) fprintf(stderr, "[vkllm %s] %s\n", level == VKLLM_LOG_WARN ? "warn" : "error", msg);
}

static int64_t gpu_test_live_before = -1;

/* The device, with tuning "name=value,..." over the environment's (NULL: none). */
static inline struct vkllm__gpu *gpu_test_open_tuned(const char *tuning) {
    vkllm_log_set(gpu_test_log, NULL);
    if (gpu_test_live_before < 0) gpu_test_live_before = vkllm__alloc_live();
    struct vkllm__gpu_params p = {.device = -1, .validate = 1, .tuning = tuning};
    struct vkllm__gpu *gpu = NULL;
    ASSERT_OK(vkllm__gpu_open(&p, &gpu));
    ASSERT(vkllm__gpu_validation_probe(gpu));
    return gpu;
}

static inline struct vkllm__gpu *gpu_test_open(void) { return gpu_test_open_tuned(NULL); }

static inline void gpu_test_close(struct vkllm__gpu *gpu) {
    uint64_t n = vkllm__gpu_validation_count(gpu);
    vkllm__gpu_close(gpu);
    if (n) FAILF("%llu validation message(s) reported", (unsigned long long)n);
    /* LeakSanitizer is off for device tests (the driver's JIT code leaks); count our own. */
    if (vkllm__alloc_live() != gpu_test_live_before)
        FAILF("%lld allocation(s) of the library still live after closing the device",
              (long long)(vkllm__alloc_live() - gpu_test_live_before));
}

/* Set one tuning knob of gpu (tuning.h: its field name or VKLLM_ variable) to value, or back to
 * its default with NULL: how tests run each kernel variant on one device. */
static inline void gpu_test_tune(struct vkllm__gpu *gpu, const char *name, const char *value) {
    struct vkllm__tuning t = *vkllm__gpu_tuning(gpu);
    ASSERT_OK(vkllm__tuning_set(&t, name, value));
    vkllm__gpu_set_tuning(gpu, &t);
}

/* gpu_test_tune with a number. */
static inline void gpu_test_tune_n(struct vkllm__gpu *gpu, const char *name, long value) {
    char v[32];
    snprintf(v, sizeof v, "%ld", value);
    gpu_test_tune(gpu, name, v);
}

/* A new device buffer holding n floats. */
static inline struct vkllm__buffer *gpu_test_upload_f32(struct vkllm__gpu *gpu, const float *v, uint64_t n) {
    struct vkllm__buffer *b;
    ASSERT_OK(vkllm__buffer_alloc(gpu, n * 4, VKLLM__MEM_DEVICE, &b));
    ASSERT_OK(vkllm__buffer_upload(b, 0, v, n * 4));
    return b;
}

#endif
