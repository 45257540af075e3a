/* common.c - status strings, the per-thread last-error text, logging, host allocation with fault
 * injection, version. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "git_commit.h" /* generated at build time: VKLLM_GIT_COMMIT */
#include "internal.h"

#ifndef VKLLM_VERSION_STRING
#define VKLLM_VERSION_STRING "0.0.0"
#endif
#ifndef VKLLM_GIT_COMMIT
#define VKLLM_GIT_COMMIT "unknown"
#endif

// --- status --------------------------------------------------------------------------------

const char *vkllm_status_str(vkllm_status s) {
    switch (s) {
#define VKLLM_STATUS_STR_(name, text) \
    case VKLLM_STATUS_##name: return text;
        VKLLM_STATUS_MAP(VKLLM_STATUS_STR_)
#undef VKLLM_STATUS_STR_
    default: return "unknown status";
    }
}

const char *vkllm_status_name(vkllm_status s) {
    switch (s) {
#define VKLLM_STATUS_NAME_(name, text) \
    case VKLLM_STATUS_##name: return "VKLLM_STATUS_" #name;
        VKLLM_STATUS_MAP(VKLLM_STATUS_NAME_)
#undef VKLLM_STATUS_NAME_
    default: return "VKLLM_STATUS_UNKNOWN";
    }
}

// --- last error ----------------------------------------------------------------------------

static _Thread_local char g_err[1024];

const char *vkllm_last_error(void) { return g_err; }

vkllm_status vkllm__err(vkllm_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    vkllm__log(VKLLM_LOG_DEBUG, "error: %s (%s)", g_err, vkllm_status_name(s));
    return s;
}

void vkllm__err_prefix(const char *fmt, ...) {
    char old[sizeof g_err];
    memcpy(old, g_err, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof g_err) snprintf(g_err + n, sizeof g_err - (size_t)n, "%s", old);
}

// --- logging -------------------------------------------------------------------------------

static vkllm_log_fn g_log_fn;
static void *g_log_ud;

void vkllm_log_set(vkllm_log_fn fn, void *user_data) {
    g_log_fn = fn;
    g_log_ud = user_data;
}

void vkllm__log(vkllm_log_level level, const char *fmt, ...) {
    if (!g_log_fn) return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_log_fn(level, buf, g_log_ud);
}

// --- allocation ----------------------------------------------------------------------------

static _Atomic uint64_t g_fault_countdown[3];

void vkllm__fault_inject(enum vkllm__fault_kind kind, uint64_t nth) { g_fault_countdown[kind] = nth; }

int vkllm__fault_hit(enum vkllm__fault_kind kind) {
    /* one decrement per call even when several threads allocate: exactly one of them sees 1 */
    uint64_t c = atomic_load(&g_fault_countdown[kind]);
    while (c && !atomic_compare_exchange_weak(&g_fault_countdown[kind], &c, c - 1)) {}
    return c == 1;
}

uint64_t vkllm__fault_pending(enum vkllm__fault_kind kind) { return g_fault_countdown[kind]; }

/* Live allocations made through these wrappers: tests whose leak checker is off (the Vulkan
 * driver's JIT code leaks on purpose) compare it before and after. */
static _Atomic int64_t g_live;

int64_t vkllm__alloc_live(void) { return g_live; }

void *vkllm__malloc(size_t n) {
    if (vkllm__fault_hit(VKLLM__FAULT_HOST)) return NULL;
    void *p = malloc(n ? n : 1);
    if (p) g_live++;
    return p;
}

void *vkllm__calloc(size_t count, size_t size) {
    if (vkllm__fault_hit(VKLLM__FAULT_HOST)) return NULL;
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p) g_live++;
    return p;
}

void *vkllm__realloc(void *p, size_t n) {
    if (vkllm__fault_hit(VKLLM__FAULT_HOST)) return NULL;
    void *q = realloc(p, n ? n : 1);
    if (q && !p) g_live++;
    return q;
}

void vkllm__free(void *p) {
    if (p) g_live--;
    free(p);
}

struct vkllm__bytes_text vkllm__bytes(uint64_t n) {
    struct vkllm__bytes_text t;
    if (n < 1024) snprintf(t.s, sizeof t.s, "%llu B", (unsigned long long)n);
    else if (n < (1ull << 20)) snprintf(t.s, sizeof t.s, "%.1f KiB", n / 1024.0);
    else if (n < (1ull << 30)) snprintf(t.s, sizeof t.s, "%.1f MiB", n / 1048576.0);
    else snprintf(t.s, sizeof t.s, "%.2f GiB", n / 1073741824.0);
    return t;
}

char *vkllm__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = vkllm__malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

// --- misc ----------------------------------------------------------------------------------

/* vkllm__now_ns: os_unix.c, os_win.c */

const char *vkllm_version(void) { return VKLLM_VERSION_STRING; }
const char *vkllm_git_commit(void) { return VKLLM_GIT_COMMIT; }
