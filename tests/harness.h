/* harness.h - a tiny test harness (in the spirit of sds's testhelp.h and libuv's task.h).
 *
 *   ASSERT(cond), ASSERT_EQ(a, b), ASSERT_OK(status_expr), ASSERT_STATUS(expr, status),
 *   ASSERT_NEAR(a, b, tol): on failure print file:line and what was expected, and exit(1).
 *   vkllm_test_model(name): full path of ../shared/models/<name> (VKLLM_TEST_MODELS); when the
 *   file is missing the test exits 77 (SKIPPED in CTest), or fails when
 *   VKLLM_REQUIRE_TEST_MODELS=1.
 *   vkllm_test_data(name): tests/data/<name>.
 */
#ifndef VKLLM_TEST_HARNESS_H
#define VKLLM_TEST_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vkllm.h"

#define VKLLM_TEST_SKIP 77

#define FAILF(...)                                           \
    do {                                                     \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                        \
        fprintf(stderr, "\n");                               \
        exit(1);                                             \
    } while (0)

#define ASSERT(c)                                    \
    do {                                             \
        if (!(c)) FAILF("assertion failed: %s", #c); \
    } while (0)

#define ASSERT_EQ(a, b)                                                \
    do {                                                               \
        long long a_ = (long long)(a), b_ = (long long)(b);            \
        if (a_ != b_) FAILF("%s == %s: %lld != %lld", #a, #b, a_, b_); \
    } while (0)

#define ASSERT_STREQ(a, b)                                                               \
    do {                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                 \
        if (strcmp(a_, b_) != 0) FAILF("%s == %s:\n  \"%s\"\n  \"%s\"", #a, #b, a_, b_); \
    } while (0)

#define ASSERT_NEAR(a, b, tol)                                                                                 \
    do {                                                                                                       \
        double a_ = (double)(a), b_ = (double)(b);                                                             \
        if (!(fabs(a_ - b_) <= (tol))) FAILF("%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, (double)(tol)); \
    } while (0)

#define ASSERT_STATUS(expr, want)                                                                    \
    do {                                                                                             \
        vkllm_status s_ = (expr);                                                                    \
        if (s_ != (want))                                                                            \
            FAILF("%s: got %s, want %s (%s)", #expr, vkllm_status_name(s_), vkllm_status_name(want), \
                  vkllm_last_error());                                                               \
    } while (0)

#define ASSERT_OK(expr) ASSERT_STATUS(expr, VKLLM_STATUS_OK)

static inline const char *vkllm_test_models_dir(void) {
    const char *d = getenv("VKLLM_TEST_MODELS");
    if (!d || !*d) d = getenv("VKLLM_TEST_MODELS_DEFAULT");
    if (!d || !*d) d = "../shared/models";
    return d;
}

/* Path of a real model file; skips (77) or fails when it is missing. The returned string is
 * static storage, overwritten by the next call. */
static inline const char *vkllm_test_model(const char *name) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", vkllm_test_models_dir(), name);
    if (access(path, R_OK) != 0) {
        const char *req = getenv("VKLLM_REQUIRE_TEST_MODELS");
        if (req && strcmp(req, "1") == 0) FAILF("required test model missing: %s", path);
        fprintf(stderr, "SKIPPED: test model missing: %s\n", path);
        exit(VKLLM_TEST_SKIP);
    }
    return path;
}

static inline const char *vkllm_test_data(const char *name) {
    static char path[4096];
    const char *d = getenv("VKLLM_TEST_DATA");
    snprintf(path, sizeof path, "%s/%s", d ? d : "tests/data", name);
    return path;
}

/* Read a whole file into a NUL-terminated malloc'd buffer; *len gets its size. */
static inline char *vkllm_test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) FAILF("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) FAILF("cannot read %s", path);
    buf[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

/* Normalized mean squared error of got against want (0 when equal). */
static inline double vkllm_test_nmse(const float *got, const float *want, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)want[i];
        num += d * d;
        den += (double)want[i] * (double)want[i];
    }
    return den > 0 ? num / den : num;
}

/* Deterministic pseudo-random floats in [-1, 1) for test inputs (xorshift64*). */
static inline float vkllm_test_randf(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (float)((x * 0x2545F4914F6CDD1DULL) >> 40) / (float)(1u << 23) - 1.0f;
}

#endif /* VKLLM_TEST_HARNESS_H */
