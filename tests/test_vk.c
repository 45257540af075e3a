/* test_vk.c - the device layer: memory blocks and sub-allocation, uploads and downloads (mapped
 * and staged), device-memory exhaustion and injected allocation failures, every dispatch argument
 * check, replay of a recorded command list, timestamps. Validation is on throughout. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test.h"
#include "shader_abi.h"

static void fill_pattern(uint32_t *p, uint64_t n, uint32_t seed) {
    for (uint64_t i = 0; i < n; i++) p[i] = seed * 2654435761u + (uint32_t)i;
}

static void check_pattern(struct vkllm__buffer *b, uint32_t seed) {
    uint64_t n = vkllm__buffer_size(b) / 4;
    uint32_t *p = malloc(n * 4);
    ASSERT(p);
    ASSERT_OK(vkllm__buffer_download(b, 0, p, n * 4));
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != seed * 2654435761u + (uint32_t)i)
            FAILF("buffer %u word %llu corrupted", seed, (unsigned long long)i);
    free(p);
}

static void upload_pattern(struct vkllm__buffer *b, uint32_t seed) {
    uint64_t n = vkllm__buffer_size(b) / 4;
    uint32_t *p = malloc(n * 4);
    ASSERT(p);
    fill_pattern(p, n, seed);
    ASSERT_OK(vkllm__buffer_upload(b, 0, p, n * 4));
    free(p);
}

/* Many buffers of awkward sizes: no two overlap, freed space is reused, accounting returns to 0. */
static void test_suballocation(struct vkllm__gpu *gpu) {
    enum { N = 120 };
    struct vkllm__buffer *b[N] = {0};
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        uint64_t size = 4 * (1 + (uint64_t)((vkllm_test_randf(&s) + 1.0f) * 50000));
        if (i % 17 == 0) size = 4 * 17u << 20; /* some over a quarter of the 256 MiB block: their own */
        ASSERT_OK(vkllm__buffer_alloc(gpu, size, i % 5 == 0 ? VKLLM__MEM_HOST : VKLLM__MEM_DEVICE, &b[i]));
        upload_pattern(b[i], (uint32_t)i);
    }
    for (int i = 0; i < N; i++) check_pattern(b[i], (uint32_t)i);
    for (int i = 0; i < N; i += 2) {
        vkllm__buffer_free(b[i]);
        b[i] = NULL;
    }
    for (int i = 0; i < N; i += 2) {
        ASSERT_OK(vkllm__buffer_alloc(gpu, 4 * (uint64_t)(1000 + i * 7), VKLLM__MEM_DEVICE, &b[i]));
        upload_pattern(b[i], 1000u + (uint32_t)i);
    }
    for (int i = 0; i < N; i++) check_pattern(b[i], i % 2 ? (uint32_t)i : 1000u + (uint32_t)i);
    ASSERT(vkllm__gpu_memory_used(gpu) > 0);
    for (int i = 0; i < N; i++) vkllm__buffer_free(b[i]);
    ASSERT_EQ(vkllm__gpu_memory_used(gpu), 0);
    ASSERT_EQ(vkllm__gpu_memory_allocated(gpu), 0);
    /* out-of-range transfers are refused */
    struct vkllm__buffer *x;
    uint32_t w[4] = {0};
    ASSERT_OK(vkllm__buffer_alloc(gpu, 16, VKLLM__MEM_DEVICE, &x));
    ASSERT_STATUS(vkllm__buffer_upload(x, 8, w, 16), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__buffer_download(x, UINT64_MAX - 2, w, 16), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm__buffer_free(x);
    ASSERT_STATUS(vkllm__buffer_alloc(gpu, 0, VKLLM__MEM_DEVICE, &x), VKLLM_STATUS_INVALID_ARGUMENT);
}

/* More than the heap, and an injected failure: DEVICE_OOM with a message, nothing leaked, and the
 * allocator keeps working afterwards. */
static void test_oom(struct vkllm__gpu *gpu) {
    struct vkllm__buffer *b = NULL;
    uint64_t budget = vkllm__gpu_memory_budget(gpu);
    ASSERT_STATUS(vkllm__buffer_alloc(gpu, budget + 4096, VKLLM__MEM_DEVICE, &b), VKLLM_STATUS_DEVICE_OOM);
    ASSERT(strstr(vkllm_last_error(), "out of device memory"));
    ASSERT(b == NULL);
    /* 200 MiB gets a block of its own (no retry with a smaller block), so one injected failure
     * fails the allocation. */
    vkllm__fault_inject(VKLLM__FAULT_DEVICE, 1);
    ASSERT_STATUS(vkllm__buffer_alloc(gpu, 200u << 20, VKLLM__MEM_DEVICE, &b), VKLLM_STATUS_DEVICE_OOM);
    vkllm__fault_inject(VKLLM__FAULT_DEVICE, 0);
    ASSERT_EQ(vkllm__gpu_memory_allocated(gpu), 0);
    ASSERT_OK(vkllm__buffer_alloc(gpu, 1024, VKLLM__MEM_DEVICE, &b));
    vkllm__buffer_free(b);
    /* A host allocation failure inside the allocator is OOM as well. */
    vkllm__fault_inject(VKLLM__FAULT_HOST, 1);
    ASSERT_STATUS(vkllm__buffer_alloc(gpu, 1024, VKLLM__MEM_DEVICE, &b), VKLLM_STATUS_OOM);
    vkllm__fault_inject(VKLLM__FAULT_HOST, 0);
}

/* The driver's memory budget (VK_EXT_memory_budget), where offered, is reported and bounds what
 * vkllm allocates: with a budget pretended lower than the heap, the budget and not the heap size
 * is what an allocation runs into, with an error that says so; the memory budget vkllm plans
 * with (weights, KV cache) follows it. */
static void test_memory_budget(struct vkllm__gpu *gpu) {
    const struct vkllm_device_info *info = vkllm__gpu_info(gpu);
    for (uint32_t h = 0; h < info->heap_count; h++)
        if (info->memory_budget) ASSERT(info->heap_budget[h] > 0 && info->heap_budget[h] <= info->heap_size[h]);
        else ASSERT(info->heap_budget[h] == 0 && info->heap_usage[h] == 0);
    printf("memory budget: %s\n", info->memory_budget ? "VK_EXT_memory_budget" : "not offered (heap sizes)");
    uint64_t full = vkllm__gpu_memory_budget(gpu);
    ASSERT(full > (512u << 20));
    struct vkllm__buffer *a = NULL, *b = NULL;
    ASSERT_OK(vkllm__buffer_alloc(gpu, 200u << 20, VKLLM__MEM_DEVICE, &a));
    uint64_t used = vkllm__gpu_memory_allocated(gpu);
    vkllm__gpu_test_budget_room(gpu, 300u << 20); /* the driver lets us add 300 MiB, no more */
    ASSERT_EQ(vkllm__gpu_memory_budget(gpu), used + (300u << 20));
    ASSERT_STATUS(vkllm__buffer_alloc(gpu, 400u << 20, VKLLM__MEM_DEVICE, &b), VKLLM_STATUS_DEVICE_OOM);
    ASSERT(strstr(vkllm_last_error(), "memory budget") && b == NULL);
    ASSERT_EQ(vkllm__gpu_memory_allocated(gpu), used);
    ASSERT_OK(vkllm__buffer_alloc(gpu, 250u << 20, VKLLM__MEM_DEVICE, &b)); /* within the room */
    vkllm__buffer_free(b);
    vkllm__buffer_free(a);
    vkllm__gpu_test_budget_room(gpu, 0);
    ASSERT_EQ(vkllm__gpu_memory_budget(gpu), full);
}

/* Opening the device with the k-th host allocation failing, for every k: an error, never a crash
 * or a leak (ASan checks the latter). */
static void test_open_oom(void) {
    int failures = 0;
    for (uint64_t k = 1; k < 10000; k++) {
        struct vkllm__gpu_params p = {.device = -1, .validate = 0};
        struct vkllm__gpu *g = NULL;
        vkllm__fault_inject(VKLLM__FAULT_HOST, k);
        vkllm_status st = vkllm__gpu_open(&p, &g);
        int consumed = vkllm__fault_pending(VKLLM__FAULT_HOST) == 0;
        vkllm__fault_inject(VKLLM__FAULT_HOST, 0);
        if (st == VKLLM_STATUS_OK) {
            vkllm__gpu_close(g);
        } else {
            ASSERT(g == NULL);
            ASSERT(vkllm_last_error()[0]);
            failures++;
        }
        if (!consumed) { /* open made fewer than k allocations: every point has been tried */
            ASSERT_EQ(st, VKLLM_STATUS_OK);
            printf("device open: %llu allocation points tried, %d failed cleanly\n", (unsigned long long)k - 1,
                   failures);
            ASSERT(failures > 0);
            return;
        }
    }
    FAILF("device open kept allocating");
}

static void dispatch_add(struct vkllm__dispatch *d, struct vkllm__buffer *a, struct vkllm__buffer *b,
                         struct vkllm__buffer *o, const struct vkllm__pc_elementwise *pc) {
    memset(d, 0, sizeof *d);
    d->shader = VKLLM__SHADER_ADD_F32;
    d->n_spec = 1;
    d->spec[0] = 64;
    d->n_bind = 3;
    d->bind[0] = (struct vkllm__binding){a, 0, 0};
    d->bind[1] = (struct vkllm__binding){b, 0, 0};
    d->bind[2] = (struct vkllm__binding){o, 0, 0};
    d->push = pc;
    d->push_size = sizeof *pc;
    d->groups[0] = (pc->n + 63) / 64;
    d->groups[1] = d->groups[2] = 1;
}

/* Each wrong argument is refused with INVALID_ARGUMENT before it reaches Vulkan. */
static void test_dispatch_checks(struct vkllm__gpu *gpu) {
    const struct vkllm_device_info *info = vkllm__gpu_info(gpu);
    struct vkllm__buffer *a, *b, *o, *big;
    ASSERT_OK(vkllm__buffer_alloc(gpu, 4096, VKLLM__MEM_DEVICE, &a));
    ASSERT_OK(vkllm__buffer_alloc(gpu, 4096, VKLLM__MEM_DEVICE, &b));
    ASSERT_OK(vkllm__buffer_alloc(gpu, 4096, VKLLM__MEM_DEVICE, &o));
    struct vkllm__pc_elementwise pc = {1024, 1024};
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    struct vkllm__dispatch d;
    dispatch_add(&d, a, b, o, &pc);
    ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT); /* not recording */
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__cmd_dispatch(c, &d));
    d.n_bind = 2;
    ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    dispatch_add(&d, a, b, o, &pc);
    d.push_size = 4;
    ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    dispatch_add(&d, a, b, o, &pc);
    d.groups[0] = 0;
    ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    d.groups[0] = info->max_workgroup_count[0] + 1u;
    if (d.groups[0] != 0) ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    dispatch_add(&d, a, b, o, &pc);
    d.spec[0] = info->max_workgroup_invocations + 1;
    ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    dispatch_add(&d, a, b, o, &pc);
    d.bind[1].offset = 4000;
    d.bind[1].range = 200;
    ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    dispatch_add(&d, a, b, o, &pc);
    d.bind[1].buf = NULL;
    ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    if (info->min_storage_buffer_offset_alignment > 4) {
        dispatch_add(&d, a, b, o, &pc);
        d.bind[0].offset = 4;
        ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
    }
    /* A binding wider than maxStorageBufferRange is refused (lavapipe would "run" it). */
    uint64_t over = info->max_storage_buffer_range + 4096;
    if (over < vkllm__gpu_memory_budget(gpu) / 2 && over < info->max_memory_allocation_size) {
        ASSERT_OK(vkllm__buffer_alloc(gpu, over, VKLLM__MEM_DEVICE, &big));
        dispatch_add(&d, big, b, o, &pc);
        ASSERT_STATUS(vkllm__cmd_dispatch(c, &d), VKLLM_STATUS_INVALID_ARGUMENT);
        ASSERT(strstr(vkllm_last_error(), "maxStorageBufferRange"));
        d.bind[0].range = info->max_storage_buffer_range; /* a range that fits is fine */
        ASSERT_OK(vkllm__cmd_dispatch(c, &d));
        ASSERT_OK(vkllm__cmd_end(c));
        ASSERT_OK(vkllm__cmd_submit(c));
        vkllm__buffer_free(big);
    } else {
        ASSERT_OK(vkllm__cmd_end(c));
    }
    vkllm__cmd_free(c);
    vkllm__buffer_free(a);
    vkllm__buffer_free(b);
    vkllm__buffer_free(o);
}

/* Record once, replay with new data: the result follows the data (decode's replay model). */
static void test_replay_and_timestamps(struct vkllm__gpu *gpu) {
    enum { N = 3000 };
    struct vkllm__buffer *a, *b, *o;
    ASSERT_OK(vkllm__buffer_alloc(gpu, N * 4, VKLLM__MEM_DEVICE, &a));
    ASSERT_OK(vkllm__buffer_alloc(gpu, N * 4, VKLLM__MEM_DEVICE, &b));
    ASSERT_OK(vkllm__buffer_alloc(gpu, N * 4, VKLLM__MEM_DEVICE, &o));
    static float x[N], y[N], r[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 0.5f;
    ASSERT_OK(vkllm__buffer_upload(a, 0, x, sizeof x));
    ASSERT_OK(vkllm__buffer_upload(b, 0, y, sizeof y));
    struct vkllm__pc_elementwise pc = {N, N};
    struct vkllm__dispatch d;
    dispatch_add(&d, a, b, o, &pc);
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    ASSERT_OK(vkllm__cmd_timestamp(c, "start"));
    ASSERT_OK(vkllm__cmd_dispatch(c, &d));
    ASSERT_OK(vkllm__cmd_timestamp(c, "add"));
    ASSERT_OK(vkllm__cmd_end(c));
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < N; i++) x[i] = (float)(i * (rep + 1));
        ASSERT_OK(vkllm__buffer_upload(a, 0, x, sizeof x));
        ASSERT_OK(vkllm__cmd_submit(c));
        ASSERT_OK(vkllm__buffer_download(o, 0, r, sizeof r));
        for (int i = 0; i < N; i++) ASSERT_NEAR(r[i], x[i] + 0.5f, 0);
        if (vkllm__gpu_info(gpu)->timestamps) {
            ASSERT_EQ(vkllm__cmd_timestamp_count(c), 2);
            const char *label;
            double ns;
            ASSERT_OK(vkllm__cmd_timestamp_get(c, 1, &label, &ns));
            ASSERT_STREQ(label, "add");
            ASSERT(ns >= 0 && ns < 10e9);
        }
    }
    ASSERT_STATUS(vkllm__cmd_timestamp_get(c, 5, NULL, NULL), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm__cmd_free(c);
    vkllm__buffer_free(a);
    vkllm__buffer_free(b);
    vkllm__buffer_free(o);
}

/* How each shader uses its bindings, read from its SPIR-V: what the barriers are decided on. */
static void test_spirv_access(void) {
    uint8_t acc[VKLLM__MAX_BINDINGS];
    const struct vkllm__shader_blob *add = &vkllm__shader_blobs[VKLLM__SHADER_ADD_F32];
    ASSERT_OK(vkllm__spirv_binding_access(add->code, *add->size, add->n_bindings, acc));
    ASSERT(acc[0] == VKLLM__ACCESS_READ && acc[1] == VKLLM__ACCESS_READ && acc[2] == VKLLM__ACCESS_WRITE);
    /* add_rmsnorm: x += d in place (read and write), d and the norm's weight read, the normed row written */
    const struct vkllm__shader_blob *arn = &vkllm__shader_blobs[VKLLM__SHADER_ADD_RMSNORM_F32];
    ASSERT_OK(vkllm__spirv_binding_access(arn->code, *arn->size, arn->n_bindings, acc));
    ASSERT(acc[0] == (VKLLM__ACCESS_READ | VKLLM__ACCESS_WRITE) && acc[1] == VKLLM__ACCESS_READ &&
           acc[2] == VKLLM__ACCESS_READ && acc[3] == VKLLM__ACCESS_WRITE);
    /* every shader: each binding used, at least one written, uniform and texel bindings only read */
    for (int i = 0; i < VKLLM__SHADER_COUNT_; i++) {
        const struct vkllm__shader_blob *b = &vkllm__shader_blobs[i];
        ASSERT(b->n_bindings <= VKLLM__MAX_BINDINGS);
        ASSERT_OK(vkllm__spirv_binding_access(b->code, *b->size, b->n_bindings, acc));
        int writes = 0;
        for (uint32_t j = 0; j < b->n_bindings; j++) {
            char kind = b->kinds && b->kinds[0] ? b->kinds[j] : 's';
            if (!acc[j]) FAILF("shader %s: binding %u is not used", b->name, j);
            if (kind != 's' && acc[j] != VKLLM__ACCESS_READ)
                FAILF("shader %s: %c binding %u written", b->name, kind, j);
            writes += (acc[j] & VKLLM__ACCESS_WRITE) != 0;
        }
        if (!writes) FAILF("shader %s writes no binding", b->name);
    }
    /* broken modules: a status, never a crash */
    size_t n = *add->size / 4;
    uint32_t *m = malloc(*add->size);
    ASSERT(m);
    memcpy(m, add->code, *add->size);
    ASSERT_STATUS(vkllm__spirv_binding_access(NULL, 0, 3, acc), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__spirv_binding_access(m, 16, 3, acc), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__spirv_binding_access(m, *add->size - 2, 3, acc), VKLLM_STATUS_INVALID_ARGUMENT);
    m[0] ^= 1;
    ASSERT_STATUS(vkllm__spirv_binding_access(m, *add->size, 3, acc), VKLLM_STATUS_INVALID_ARGUMENT);
    m[0] ^= 1;
    uint32_t save = m[5];
    m[5] = (m[5] & 0xffffu) | (uint32_t)(n << 16); /* first instruction runs past the end */
    ASSERT_STATUS(vkllm__spirv_binding_access(m, *add->size, 3, acc), VKLLM_STATUS_INVALID_ARGUMENT);
    m[5] = save;
    m[3] = 0; /* id bound */
    ASSERT_STATUS(vkllm__spirv_binding_access(m, *add->size, 3, acc), VKLLM_STATUS_INVALID_ARGUMENT);
    m[3] = add->code[3];
    for (size_t w = 5; w < n; w += m[w] >> 16) /* decorations of ids past the bound */
        if ((m[w] & 0xffffu) == 71) {
            m[w + 1] = 0xfffffff0u;
            break;
        }
    ASSERT_STATUS(vkllm__spirv_binding_access(m, *add->size, 3, acc), VKLLM_STATUS_INVALID_ARGUMENT);
    free(m);
}

/* Barriers only between dependent dispatches: independent ones share none, a read after a write,
 * a write after a read and a write after a write each get one, disjoint ranges of one buffer are
 * independent; the results are right and synchronization validation (on) stays silent. With the
 * tuning's barriers=all every dispatch after the first gets one; with barriers=none the
 * validation layer reports the hazards (the check above can fail). */
static void test_barriers(const char *tuning, int expect_hazards) {
    enum { N = 4096 };
    struct vkllm__gpu *gpu = gpu_test_open_tuned(tuning);
    struct vkllm__buffer *a, *b, *o1, *o2, *o3;
    static float x[N], y[N], r[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 0.25f;
    a = gpu_test_upload_f32(gpu, x, N);
    b = gpu_test_upload_f32(gpu, y, N);
    ASSERT_OK(vkllm__buffer_alloc(gpu, N * 4, VKLLM__MEM_DEVICE, &o1));
    ASSERT_OK(vkllm__buffer_alloc(gpu, N * 4, VKLLM__MEM_DEVICE, &o2));
    ASSERT_OK(vkllm__buffer_alloc(gpu, N * 4, VKLLM__MEM_DEVICE, &o3));
    struct vkllm__pc_elementwise pc = {N, N}, half = {N / 2, N / 2};
    struct vkllm__dispatch d;
    struct vkllm__cmd *c;
    ASSERT_OK(vkllm__cmd_init(gpu, &c));
    ASSERT_OK(vkllm__cmd_begin(c));
    uint32_t want[8], nd = 0;
#define DISPATCH(A, B, O, PC, BARRIER)         \
    do {                                       \
        dispatch_add(&d, A, B, O, PC);         \
        ASSERT_OK(vkllm__cmd_dispatch(c, &d)); \
        want[nd] = (BARRIER);                  \
        nd++;                                  \
    } while (0)
    DISPATCH(a, b, o1, &pc, 0);       /* o1 = a + b */
    DISPATCH(a, b, o2, &pc, 0);       /* o2 = a + b: reads what the first read, writes elsewhere */
    DISPATCH(o1, b, o3, &pc, 1);      /* o3 = o1 + b: reads o1 (read after write) */
    DISPATCH(o2, o2, o1, &pc, 1);     /* o1 = 2 o2: writes o1, which the third read (write after read) */
    DISPATCH(b, b, o1, &pc, 1);       /* o1 = 2 b: writes o1 again (write after write) */
    dispatch_add(&d, b, b, a, &half); /* a[0:N/2] = 2 b: a was read before the last barriers only */
    d.bind[2].range = N / 2 * 4;
    ASSERT_OK(vkllm__cmd_dispatch(c, &d));
    want[nd++] = 0;
    dispatch_add(&d, o3, o3, a, &half); /* a[N/2:] = 2 o3: the same buffer, the other half */
    for (int i = 0; i < 3; i++) d.bind[i].offset = N / 2 * 4, d.bind[i].range = N / 2 * 4;
    ASSERT_OK(vkllm__cmd_dispatch(c, &d));
    want[nd++] = 0;
#undef DISPATCH
    ASSERT_OK(vkllm__cmd_end(c));
    uint32_t nb = 0;
    for (uint32_t i = 0; i < nd; i++) nb += want[i];
    const struct vkllm__tuning *t = vkllm__gpu_tuning(gpu);
    uint32_t expect = t->barriers == 1 ? nd - 1 : t->barriers == 2 ? 0 : nb;
    ASSERT_EQ(vkllm__cmd_barrier_count(c), expect);
    ASSERT_OK(vkllm__cmd_submit(c));
    if (expect_hazards) {
        ASSERT(vkllm__gpu_validation_count(gpu) > 0); /* the layer saw the missing barriers */
        printf("barriers=none: %llu synchronization hazard(s) reported, as they must be\n",
               (unsigned long long)vkllm__gpu_validation_count(gpu));
    } else {
        ASSERT_OK(vkllm__buffer_download(o1, 0, r, sizeof r));
        for (int i = 0; i < N; i++) ASSERT_NEAR(r[i], 0.5f, 0);
        ASSERT_OK(vkllm__buffer_download(a, 0, r, sizeof r));
        for (int i = 0; i < N / 2; i++) ASSERT_NEAR(r[i], 0.5f, 0);
        for (int i = N / 2; i < N; i++) ASSERT_NEAR(r[i], 2 * (x[i] + 0.5f), 0);
        ASSERT_OK(vkllm__buffer_download(o2, 0, r, sizeof r));
        for (int i = 0; i < N; i++) ASSERT_NEAR(r[i], x[i] + 0.25f, 0);
    }
    vkllm__cmd_free(c);
    vkllm__buffer_free(a);
    vkllm__buffer_free(b);
    vkllm__buffer_free(o1);
    vkllm__buffer_free(o2);
    vkllm__buffer_free(o3);
    if (expect_hazards) vkllm__gpu_close(gpu);
    else gpu_test_close(gpu);
}

/* The staging path (devices without host-visible device memory), forced on this device: 70 MiB
 * round trip through a 64 MiB staging buffer, then a dispatch on staged data. */
static void test_staging(void) {
    struct vkllm__gpu *gpu = gpu_test_open_tuned("force_staging=1");
    struct vkllm__buffer *b;
    ASSERT_OK(vkllm__buffer_alloc(gpu, 70u << 20, VKLLM__MEM_DEVICE, &b));
    ASSERT(vkllm__buffer_map(b) == NULL);
    upload_pattern(b, 77);
    check_pattern(b, 77);
    ASSERT_OK(vkllm__buffer_fill_zero(b));
    uint32_t w[4];
    ASSERT_OK(vkllm__buffer_download(b, 1000, w, sizeof w));
    ASSERT(w[0] == 0 && w[3] == 0);
    vkllm__buffer_free(b);
    test_replay_and_timestamps(gpu);
    gpu_test_close(gpu);
}

/* The loader and the instance-level functions are process-wide and set once (device.c): devices
 * listed and contexts opened from several threads at once all succeed and agree; an instance
 * with validation made after one without still gets its debug messenger (its debug-utils
 * functions are its own, not the first instance's). ThreadSanitizer saw volk's pointers written
 * by two threads at once before. */
struct loader_job {
    uint32_t n_devices;
    vkllm_status st;
};

static void *loader_thread(void *arg) {
    struct loader_job *j = arg;
    for (int k = 0; k < 3 && !j->st; k++) {
        struct vkllm_device_info *d = NULL;
        uint32_t n = 0;
        j->st = vkllm_devices_list(&d, &n);
        vkllm_devices_free(d);
        if (!j->st && k && n != j->n_devices) j->st = VKLLM_STATUS_INTERNAL;
        j->n_devices = n;
        struct vkllm__gpu_params p = {.device = -1};
        struct vkllm__gpu *g = NULL;
        if (!j->st) j->st = vkllm__gpu_open(&p, &g);
        vkllm__gpu_close(g);
    }
    return NULL;
}

static void test_loader_threads(void) {
    struct vkllm_device_info *d = NULL;
    uint32_t n = 0;
    ASSERT_OK(vkllm_devices_list(&d, &n)); /* an instance without validation first */
    vkllm_devices_free(d);
    struct vkllm__gpu *gpu = gpu_test_open(); /* asserts the validation probe */
    gpu_test_close(gpu);
    struct loader_job jobs[4] = {{0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++) ASSERT(pthread_create(&th[i], NULL, loader_thread, &jobs[i]) == 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(jobs[i].st);
        ASSERT_EQ(jobs[i].n_devices, n);
    }
}

int main(void) {
    test_loader_threads();
    struct vkllm__gpu *gpu = gpu_test_open();
    const struct vkllm_device_info *info = vkllm__gpu_info(gpu);
    printf("device: %s, maxStorageBufferRange %llu, subgroup %u\n", info->name,
           (unsigned long long)info->max_storage_buffer_range, info->subgroup_size);
    ASSERT(info->max_storage_buffer_range > 0 && info->subgroup_size > 0 && info->has_compute_queue);
    test_suballocation(gpu);
    test_oom(gpu);
    test_memory_budget(gpu);
    test_dispatch_checks(gpu);
    test_replay_and_timestamps(gpu);
    gpu_test_close(gpu);
    test_staging();
    test_open_oom();
    test_spirv_access();
    test_barriers(NULL, 0);
    test_barriers("barriers=all", 0);
    printf("barriers=none: the validation errors that follow are expected\n");
    test_barriers("barriers=none", 1);
    printf("ok\n");
    return 0;
}
