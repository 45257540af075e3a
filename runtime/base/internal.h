/* internal.h - what every library source file shares: errors, logging, checked arithmetic,
 * host allocation with fault injection. No Vulkan here (that is runtime/vk/). */
#ifndef VKLLM_INTERNAL_H
#define VKLLM_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "vkllm.h"

#if defined(__GNUC__)
#define VKLLM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VKLLM_PRINTF(a, b)
#endif

/* Record the detail of a failure for vkllm_last_error() and return s, so that a failing path
 * reads `return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: tensor %s: ...", path, name);`. */
vkllm_status vkllm__err(vkllm_status s, const char *fmt, ...) VKLLM_PRINTF(2, 3);

/* Prefix the current last-error text with more context ("loading model.gguf: " + old text). */
void vkllm__err_prefix(const char *fmt, ...) VKLLM_PRINTF(1, 2);

/* Log through the callback installed with vkllm_log_set(). */
void vkllm__log(vkllm_log_level level, const char *fmt, ...) VKLLM_PRINTF(2, 3);

/* Jump to `label` when a status-returning call fails (st must be a vkllm_status variable). */
#define VKLLM_TRY(st, expr, label)               \
    do {                                         \
        (st) = (expr);                           \
        if ((st) != VKLLM_STATUS_OK) goto label; \
    } while (0)

/* Overflow-checked size arithmetic: return 1 and store the result, or 0 on overflow. */
static inline int vkllm__add_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline int vkllm__mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }

static inline uint64_t vkllm__gcd_u64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}
static inline uint64_t vkllm__lcm_u64(uint64_t a, uint64_t b) { return a / vkllm__gcd_u64(a, b) * b; }
/* The smallest n with n * unit_bytes a multiple of align: offsets at multiples of n units stay
 * aligned. */
static inline uint64_t vkllm__align_step(uint64_t unit_bytes, uint64_t align) {
    return align / vkllm__gcd_u64(unit_bytes, align);
}

/* Host allocation. These return NULL on failure (and when a test injected a failure); callers
 * turn that into VKLLM_STATUS_OOM. vkllm__free(NULL) is a no-op. */
void *vkllm__malloc(size_t n);
void *vkllm__calloc(size_t count, size_t size);
void *vkllm__realloc(void *p, size_t n);
void vkllm__free(void *p);
char *vkllm__strdup(const char *s);
/* Number of live allocations made through the wrappers above (for leak checks in tests). */
int64_t vkllm__alloc_live(void);

/* Fault injection for tests: make the Nth next allocation of the given kind fail (1 = the very
 * next one); 0 turns injection off. Kinds: host (vkllm__malloc & co.), device memory, and a
 * buffer upload (vkllm__buffer_upload fails as on a lost device). */
enum vkllm__fault_kind { VKLLM__FAULT_HOST = 0, VKLLM__FAULT_DEVICE = 1, VKLLM__FAULT_UPLOAD = 2 };
void vkllm__fault_inject(enum vkllm__fault_kind kind, uint64_t nth);
int vkllm__fault_hit(enum vkllm__fault_kind kind); /* 1 if this allocation must fail */
/* Allocations still to go before the injected failure (0 = it happened, or none injected). */
uint64_t vkllm__fault_pending(enum vkllm__fault_kind kind);

/* A byte count for messages, in the unit that shows it ("512 B", "12.5 KiB", "3.2 MiB",
 * "1.50 GiB"): vkllm__err(..., "%s", vkllm__bytes(n).s) (the array lives until the end of the
 * full expression). */
struct vkllm__bytes_text {
    char s[24];
};
struct vkllm__bytes_text vkllm__bytes(uint64_t n);

/* Monotonic clock in nanoseconds. */
uint64_t vkllm__now_ns(void);

#define VKLLM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define VKLLM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define VKLLM_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif /* VKLLM_INTERNAL_H */
