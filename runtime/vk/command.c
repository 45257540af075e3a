/* command.c - recording dispatches into a command buffer that can be submitted once or replayed:
 * argument checks, descriptor sets (owned by the recording), barriers, GPU timestamps, fences, and
 * the cut into several command buffers where a time budget asks for it. */
#include <stdatomic.h>
#include <string.h>

#include "vk.h"

#define SETS_PER_POOL 256
#define QUERIES_PER_POOL 1024 /* timestamps per query pool; a recording takes as many pools as it needs */
#define MAX_TIMESTAMPS (1u << 20)
#define MAX_TOUCHED 64 /* buffer ranges tracked since the last barrier; more: a barrier */

/* A timestamp of the recording: after a dispatch (profiling) or asked for by label. */
struct ts_entry {
    const char *label;
    int dispatch; /* 1: written after a dispatch, whose shader and cost follow */
    enum vkllm__shader_id shader;
    struct vkllm__cost cost;
    int barrier;                                      /* a barrier stood before the dispatch */
    uint32_t n_spec, spec[VKLLM__MAX_SPEC], subgroup; /* the pipeline variant */
};

struct vkllm__cmd {
    struct vkllm__gpu *gpu;
    VkCommandBuffer cb;    /* the one being recorded: cbs[n_cb - 1] */
    VkCommandBuffer *cbs;  /* the recording's command buffers, in order (kept for the next one) */
    uint32_t n_cb, cap_cb; /* in the recording; allocated */
    uint32_t n_sent;       /* of the recording's, submitted already while it was being recorded */
    int in_flight;         /* submitted without a wait since (a cut, or a submit that failed) */
    double budget_ns;      /* vkllm__cmd_set_budget: 0 none */
    uint32_t budget_pos;   /* the position its costs are taken at */
    double pending_ns;     /* expected time of the dispatches since the last cut */
    VkFence fence;
    int recording, recorded;
    uint32_t n_dispatch;
    /* descriptor pools; sets live until the next begin */
    VkDescriptorPool *pools;
    uint32_t n_pools, cap_pools;
    uint32_t sets_in_last; /* sets taken from pools[n_pools - 1] */
    /* timestamps: timestamp i is query i % QUERIES_PER_POOL of queries[i / QUERIES_PER_POOL] */
    int has_ts;             /* the device has timestamps */
    int profile, profiling; /* profiling asked for / on in the current recording */
    VkQueryPool *queries;
    uint32_t n_queries, cap_queries; /* pools created (kept across recordings) */
    struct ts_entry *ts;
    uint64_t *ts_value;
    uint32_t n_ts, cap_ts;
    uint32_t n_ts_done;   /* timestamps read back after the last submit */
    uint32_t n_prof_done; /* of those, written after a dispatch */
    uint32_t *prof_ts;    /* (cap_ts,) the timestamp index of each of those */
    uint64_t serial;      /* vkllm__cmd_submit_serial */
    /* What the dispatches since the last barrier read and wrote: a dispatch gets a barrier in
     * front of it only when it reads what one of them wrote or writes what one of them touched. */
    struct touched {
        const struct vkllm__block *block;
        uint64_t lo, hi; /* bytes of the block */
        int write;
    } touched[MAX_TOUCHED];
    uint32_t n_touched;
    uint32_t n_barriers; /* barriers between dispatches in the current recording */
    int last_barrier;    /* the dispatch just recorded got one */
};

static atomic_uint_least64_t g_submits; /* submits of all command lists */

// --- one-shot transfers (memory.c) ---------------------------------------------------------

/* A global memory barrier: what src_stage wrote with src_access is visible to dst_access in
 * dst_stage of the commands after it. */
static void memory_barrier(struct vkllm__gpu *gpu, VkCommandBuffer cb, VkPipelineStageFlags src_stage,
                           VkAccessFlags src_access, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access, .dstAccessMask = dst_access};
    gpu->vk.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

static void full_barrier(struct vkllm__gpu *gpu, VkCommandBuffer cb) {
    const VkPipelineStageFlags all = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT;
    memory_barrier(gpu, cb, all, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                   all,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT);
}

vkllm_status vkllm__xfer_begin(struct vkllm__gpu *gpu) {
    vkllm_status st = VKLLM_STATUS_OK;
    if (gpu->compile_only) return vkllm__err(VKLLM_STATUS_INTERNAL, "a transfer on a compile-only context");
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkResetCommandBuffer(gpu->xfer_cmd, 0), fail);
    VKLLM_VK_TRY(st, gpu->vk.vkBeginCommandBuffer(gpu->xfer_cmd, &bi), fail);
    full_barrier(gpu, gpu->xfer_cmd);
fail:
    return st;
}

vkllm_status vkllm__xfer_submit_wait(struct vkllm__gpu *gpu) {
    vkllm_status st = VKLLM_STATUS_OK;
    full_barrier(gpu, gpu->xfer_cmd);
    VKLLM_VK_TRY(st, gpu->vk.vkEndCommandBuffer(gpu->xfer_cmd), fail);
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &gpu->xfer_cmd,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkResetFences(gpu->device, 1, &gpu->xfer_fence), fail);
    VKLLM_VK_TRY(st, gpu->vk.vkQueueSubmit(gpu->queue, 1, &si, gpu->xfer_fence), fail);
    gpu->submitted = 1;
    VKLLM_VK_TRY(st, gpu->vk.vkWaitForFences(gpu->device, 1, &gpu->xfer_fence, VK_TRUE, UINT64_MAX), fail);
fail:
    return st;
}

// --- recordings ----------------------------------------------------------------------------

vkllm_status vkllm__cmd_init(struct vkllm__gpu *gpu, struct vkllm__cmd **out) {
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm__cmd *c = vkllm__calloc(1, sizeof *c);
    if (!c) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    c->gpu = gpu;
    if (gpu->compile_only) { /* dispatches build pipelines and record nothing */
        *out = c;
        return VKLLM_STATUS_OK;
    }
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = gpu->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    c->cbs = vkllm__calloc(1, sizeof *c->cbs);
    if (!c->cbs) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    VKLLM_VK_TRY(st, gpu->vk.vkAllocateCommandBuffers(gpu->device, &ai, &c->cbs[0]), fail);
    c->cb = c->cbs[0];
    c->cap_cb = c->n_cb = 1;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKLLM_VK_TRY(st, gpu->vk.vkCreateFence(gpu->device, &fci, NULL, &c->fence), fail);
    c->has_ts = gpu->info.timestamps;
    *out = c;
    return VKLLM_STATUS_OK;
fail:
    vkllm__cmd_free(c);
    return st;
}

struct vkllm__gpu *vkllm__cmd_gpu(struct vkllm__cmd *c) {
    return c->gpu;
}

static void free_pools(struct vkllm__cmd *c) {
    for (uint32_t i = 0; i < c->n_pools; i++) c->gpu->vk.vkDestroyDescriptorPool(c->gpu->device, c->pools[i], NULL);
    c->n_pools = 0;
    c->sets_in_last = 0;
}

/* Wait for what was submitted without a wait (command buffers cut off by a budget whose
 * recording was not submitted after all): an empty submit signals the fence after all of it. */
static vkllm_status wait_in_flight(struct vkllm__cmd *c) {
    struct vkllm__gpu *gpu = c->gpu;
    vkllm_status st = VKLLM_STATUS_OK;
    if (!c->in_flight) return st;
    VKLLM_VK_TRY(st, gpu->vk.vkResetFences(gpu->device, 1, &c->fence), fail);
    VKLLM_VK_TRY(st, gpu->vk.vkQueueSubmit(gpu->queue, 0, NULL, c->fence), fail);
    VKLLM_VK_TRY(st, gpu->vk.vkWaitForFences(gpu->device, 1, &c->fence, VK_TRUE, UINT64_MAX), fail);
    c->in_flight = 0;
fail:
    return st;
}

void vkllm__cmd_free(struct vkllm__cmd *c) {
    if (!c) return;
    struct vkllm__gpu *gpu = c->gpu;
    if (c->in_flight && wait_in_flight(c)) gpu->vk.vkQueueWaitIdle(gpu->queue); /* before freeing what runs */
    if (c->fence) {
        gpu->vk.vkDestroyFence(gpu->device, c->fence, NULL);
    }
    free_pools(c);
    vkllm__free(c->pools);
    for (uint32_t i = 0; i < c->n_queries; i++) gpu->vk.vkDestroyQueryPool(gpu->device, c->queries[i], NULL);
    vkllm__free(c->queries);
    vkllm__free(c->ts);
    vkllm__free(c->ts_value);
    vkllm__free(c->prof_ts);
    for (uint32_t i = 0; i < c->cap_cb; i++)
        if (c->cbs[i]) gpu->vk.vkFreeCommandBuffers(gpu->device, gpu->pool, 1, &c->cbs[i]);
    vkllm__free(c->cbs);
    vkllm__free(c);
}

vkllm_status vkllm__cmd_begin(struct vkllm__cmd *c) {
    struct vkllm__gpu *gpu = c->gpu;
    vkllm_status st = VKLLM_STATUS_OK;
    if (gpu->compile_only) goto begun;
    VKLLM_TRY(st, wait_in_flight(c), fail); /* nothing of the previous recording may still run */
    c->cb = c->cbs[0];
    c->n_cb = 1;
    c->n_sent = 0;
    /* Descriptor sets of the previous recording are dropped with their pools; keep the first. */
    if (c->n_pools > 0) {
        for (uint32_t i = 1; i < c->n_pools; i++) gpu->vk.vkDestroyDescriptorPool(gpu->device, c->pools[i], NULL);
        c->n_pools = 1;
        VKLLM_VK_TRY(st, gpu->vk.vkResetDescriptorPool(gpu->device, c->pools[0], 0), fail);
        c->sets_in_last = 0;
    }
    VKLLM_VK_TRY(st, gpu->vk.vkResetCommandBuffer(c->cb, 0), fail);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKLLM_VK_TRY(st, gpu->vk.vkBeginCommandBuffer(c->cb, &bi), fail);
    /* Earlier submissions and host writes happen-before this recording. */
    full_barrier(gpu, c->cb);
begun:
    c->recording = 1;
    c->recorded = 0;
    c->n_dispatch = 0;
    c->n_touched = 0;
    c->n_barriers = 0;
    c->pending_ns = 0;
    c->n_ts = 0;
    c->n_ts_done = 0;
    c->n_prof_done = 0;
    c->profiling = c->profile && c->has_ts;
    if (c->profiling) st = vkllm__cmd_timestamp(c, "start");
fail:
    return st;
}

void vkllm__cmd_set_profile(struct vkllm__cmd *c, int on) { c->profile = on != 0; }

/* Room for timestamp n_ts: its entry, its value, and its query (a pool is created the first time
 * it is needed and reset in the recording before its first query is written). */
static vkllm_status ts_reserve(struct vkllm__cmd *c) {
    struct vkllm__gpu *gpu = c->gpu;
    vkllm_status st = VKLLM_STATUS_OK;
    if (c->n_ts == MAX_TIMESTAMPS)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "more than %u timestamps in one recording", MAX_TIMESTAMPS);
    if (c->n_ts == c->cap_ts) {
        uint32_t cap = c->cap_ts ? c->cap_ts * 2 : 64;
        struct ts_entry *nt = vkllm__realloc(c->ts, cap * sizeof *nt);
        if (!nt) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        c->ts = nt;
        uint64_t *nv = vkllm__realloc(c->ts_value, cap * sizeof *nv);
        if (!nv) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        c->ts_value = nv;
        uint32_t *np = vkllm__realloc(c->prof_ts, cap * sizeof *np);
        if (!np) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        c->prof_ts = np;
        c->cap_ts = cap;
    }
    uint32_t pool = c->n_ts / QUERIES_PER_POOL;
    if (pool == c->n_queries) {
        if (c->n_queries == c->cap_queries) {
            uint32_t cap = c->cap_queries ? c->cap_queries * 2 : 4;
            VkQueryPool *np = vkllm__realloc(c->queries, cap * sizeof *np);
            if (!np) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
            c->queries = np;
            c->cap_queries = cap;
        }
        VkQueryPoolCreateInfo qci = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = QUERIES_PER_POOL,
        };
        VKLLM_VK_TRY(st, gpu->vk.vkCreateQueryPool(gpu->device, &qci, NULL, &c->queries[c->n_queries]), fail);
        c->n_queries++;
    }
    if (c->n_ts % QUERIES_PER_POOL == 0) gpu->vk.vkCmdResetQueryPool(c->cb, c->queries[pool], 0, QUERIES_PER_POOL);
fail:
    return st;
}

static vkllm_status write_ts(struct vkllm__cmd *c, const char *label, const struct vkllm__dispatch *d) {
    vkllm_status st = ts_reserve(c);
    if (st) return st;
    struct ts_entry *e = &c->ts[c->n_ts];
    memset(e, 0, sizeof *e);
    e->label = label;
    if (d) {
        e->dispatch = 1;
        e->shader = d->shader;
        e->cost = d->cost;
        e->barrier = c->last_barrier;
        e->n_spec = d->n_spec;
        memcpy(e->spec, d->spec, sizeof e->spec);
        e->subgroup = d->subgroup;
        if (!e->label) e->label = vkllm__shader_blobs[d->shader].name;
    }
    c->gpu->vk.vkCmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->queries[c->n_ts / QUERIES_PER_POOL],
                                   c->n_ts % QUERIES_PER_POOL);
    c->n_ts++;
    return VKLLM_STATUS_OK;
}

static vkllm_status alloc_set(struct vkllm__cmd *c, VkDescriptorSetLayout layout, VkDescriptorSet *out) {
    struct vkllm__gpu *gpu = c->gpu;
    vkllm_status st = VKLLM_STATUS_OK;
    if (c->n_pools == 0 || c->sets_in_last == SETS_PER_POOL) {
        if (c->n_pools == c->cap_pools) {
            uint32_t cap = c->cap_pools ? c->cap_pools * 2 : 4;
            VkDescriptorPool *np = vkllm__realloc(c->pools, cap * sizeof *np);
            if (!np) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
            c->pools = np;
            c->cap_pools = cap;
        }
        VkDescriptorPoolSize ps[] = {
            {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = SETS_PER_POOL * VKLLM__MAX_BINDINGS},
            {.type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, .descriptorCount = SETS_PER_POOL * 2},
            {.type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, .descriptorCount = SETS_PER_POOL * 2},
        };
        VkDescriptorPoolCreateInfo pci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
            .maxSets = SETS_PER_POOL,
            .poolSizeCount = VKLLM_ARRAY_LEN(ps),
            .pPoolSizes = ps,
        };
        VKLLM_VK_TRY(st, gpu->vk.vkCreateDescriptorPool(gpu->device, &pci, NULL, &c->pools[c->n_pools]), fail);
        c->n_pools++;
        c->sets_in_last = 0;
    }
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = c->pools[c->n_pools - 1],
        .descriptorSetCount = 1,
        .pSetLayouts = &layout,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkAllocateDescriptorSets(gpu->device, &ai, out), fail);
    c->sets_in_last++;
fail:
    return st;
}

/* Every argument of a dispatch against the shader's declaration and the device's limits. */
static vkllm_status check_dispatch(const struct vkllm__gpu *gpu, const struct vkllm__dispatch *d) {
    if ((unsigned)d->shader >= VKLLM__SHADER_COUNT_)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch: unknown shader id %d", (int)d->shader);
    const struct vkllm__shader_blob *blob = &vkllm__shader_blobs[d->shader];
    const struct vkllm_device_info *info = &gpu->info;
    const char *name = blob->name;
    if (d->n_bind != blob->n_bindings)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch %s: %u buffers bound, the shader has %u", name,
                          d->n_bind, blob->n_bindings);
    if (d->push_size != blob->push_size || (d->push_size && !d->push))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch %s: %u bytes of push constants, the shader takes %u",
                          name, d->push_size, blob->push_size);
    if (d->n_spec > VKLLM__MAX_SPEC)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch %s: %u specialization constants", name, d->n_spec);
    uint32_t wg = d->n_spec ? d->spec[0] : 1;
    if (wg == 0 || wg > info->max_workgroup_size[0] || wg > info->max_workgroup_invocations)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch %s: workgroup size %u outside 1..%u", name, wg,
                          VKLLM_MIN(info->max_workgroup_size[0], info->max_workgroup_invocations));
    if (d->subgroup && (!info->subgroup_size_control || d->subgroup < info->subgroup_size_min ||
                        d->subgroup > info->subgroup_size_max || (d->subgroup & (d->subgroup - 1)) || wg % d->subgroup))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "dispatch %s: full subgroups of %u lanes for workgroups of %u: the device %s (range %u..%u)",
                          name, d->subgroup, wg,
                          info->subgroup_size_control ? "cannot" : "has no subgroup size control",
                          info->subgroup_size_min, info->subgroup_size_max);
    for (int i = 0; i < 3; i++)
        if (d->groups[i] == 0 || d->groups[i] > info->max_workgroup_count[i])
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch %s: %u workgroups in dimension %d (limit %u)",
                              name, d->groups[i], i, info->max_workgroup_count[i]);
    for (uint32_t i = 0; i < d->n_bind; i++) {
        const struct vkllm__binding *b = &d->bind[i];
        if (!b->buf) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch %s: binding %u has no buffer", name, i);
        uint64_t range = b->range ? b->range : b->buf->size - VKLLM_MIN(b->offset, b->buf->size);
        uint64_t end;
        if (!vkllm__add_u64(b->offset, range, &end) || end > b->buf->size || range == 0)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "dispatch %s: binding %u range [%llu, +%llu) outside its buffer of %llu bytes", name, i,
                              (unsigned long long)b->offset, (unsigned long long)range,
                              (unsigned long long)b->buf->size);
        char kind = vkllm__binding_kind(blob, i);
        const struct vkllm__gpu_bind_limits *bl = &gpu->bind_limits;
        uint64_t limit = gpu->max_binding, align = info->min_storage_buffer_offset_alignment;
        const char *lname = "maxStorageBufferRange";
        if (kind == 'u') {
            limit = bl->max_uniform, align = bl->uniform_align, lname = "maxUniformBufferRange";
        } else if (kind == 't' || kind == 'f') {
            uint64_t tb = vkllm__texel_bytes(kind);
            if (range % tb)
                return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                                  "dispatch %s: texel binding %u covers %llu bytes, not whole %llu-byte texels", name,
                                  i, (unsigned long long)range, (unsigned long long)tb);
            limit = bl->max_texels * tb, align = bl->texel_align, lname = "maxTexelBufferElements";
        }
        if (range > limit)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "dispatch %s: binding %u covers %llu bytes, more than %s (%llu)", name, i,
                              (unsigned long long)range, lname, (unsigned long long)limit);
        if (align && (b->buf->offset + b->offset) % align)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "dispatch %s: binding %u offset %llu is not a multiple of %llu", name, i,
                              (unsigned long long)b->offset, (unsigned long long)align);
    }
    return VKLLM_STATUS_OK;
}

/* --- barriers ---------------------------------------------------------------------------- */

/* The bytes of its block binding b covers. */
static void binding_span(const struct vkllm__binding *b, uint64_t *lo, uint64_t *hi) {
    uint64_t range = b->range ? b->range : b->buf->size - b->offset;
    *lo = b->buf->offset + b->offset;
    *hi = *lo + range;
}

/* Whether dispatch d, whose shader uses its bindings as access[] says, must wait for the
 * dispatches recorded since the last barrier: it reads a range one of them wrote, or writes a
 * range one of them read or wrote (read after read needs nothing). */
static int needs_barrier(const struct vkllm__cmd *c, const struct vkllm__dispatch *d, const uint8_t *access) {
    if (c->n_dispatch == 0) return 0; /* vkllm__cmd_begin's barrier covers what came before */
    if (c->gpu->tuning.barriers == 1) return 1;
    if (c->gpu->tuning.barriers == 2) return 0; /* "none": wrong on purpose, for the tests */
    uint32_t adds = 0;
    for (uint32_t i = 0; i < d->n_bind; i++) {
        if (!access[i]) continue;
        adds++;
        uint64_t lo, hi;
        binding_span(&d->bind[i], &lo, &hi);
        for (uint32_t j = 0; j < c->n_touched; j++) {
            const struct touched *t = &c->touched[j];
            if (t->block == d->bind[i].buf->block && lo < t->hi && t->lo < hi &&
                ((access[i] & VKLLM__ACCESS_WRITE) || t->write))
                return 1;
        }
    }
    return c->n_touched + adds > MAX_TOUCHED; /* no room to track it: start afresh */
}

/* Note what dispatch d touches (after needs_barrier, which made room). */
static void touch(struct vkllm__cmd *c, const struct vkllm__dispatch *d, const uint8_t *access) {
    for (uint32_t i = 0; i < d->n_bind && c->n_touched < MAX_TOUCHED; i++) {
        if (!access[i]) continue;
        struct touched *t = &c->touched[c->n_touched++];
        t->block = d->bind[i].buf->block;
        binding_span(&d->bind[i], &t->lo, &t->hi);
        t->write = (access[i] & VKLLM__ACCESS_WRITE) != 0;
    }
}

uint32_t vkllm__cmd_barrier_count(const struct vkllm__cmd *c) { return c->n_barriers; }

/* End the command buffer being recorded, submit it (and any cut before it not yet submitted)
 * without waiting, and go on recording in the next one. */
static vkllm_status cut(struct vkllm__cmd *c) {
    struct vkllm__gpu *gpu = c->gpu;
    vkllm_status st = VKLLM_STATUS_OK;
    VKLLM_VK_TRY(st, gpu->vk.vkEndCommandBuffer(c->cb), fail);
    for (; c->n_sent < c->n_cb; c->n_sent++) {
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->cbs[c->n_sent]};
        VKLLM_VK_TRY(st, gpu->vk.vkQueueSubmit(gpu->queue, 1, &si, VK_NULL_HANDLE), fail);
        gpu->submitted = 1;
        c->in_flight = 1;
    }
    if (c->n_cb == c->cap_cb) {
        VkCommandBuffer *nc = vkllm__realloc(c->cbs, 2 * c->cap_cb * sizeof *nc);
        if (!nc) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        memset(nc + c->cap_cb, 0, c->cap_cb * sizeof *nc);
        c->cbs = nc;
        c->cap_cb *= 2;
    }
    if (!c->cbs[c->n_cb]) {
        VkCommandBufferAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = gpu->pool,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
        };
        VKLLM_VK_TRY(st, gpu->vk.vkAllocateCommandBuffers(gpu->device, &ai, &c->cbs[c->n_cb]), fail);
    }
    c->cb = c->cbs[c->n_cb++];
    VKLLM_VK_TRY(st, gpu->vk.vkResetCommandBuffer(c->cb, 0), fail);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKLLM_VK_TRY(st, gpu->vk.vkBeginCommandBuffer(c->cb, &bi), fail);
    full_barrier(gpu, c->cb); /* after everything submitted before, as at vkllm__cmd_begin */
    c->n_touched = 0;
    c->pending_ns = 0;
fail:
    return st;
}

void vkllm__cmd_set_budget(struct vkllm__cmd *c, double budget_ns, uint32_t pos0) {
    c->budget_ns = budget_ns > 0 ? budget_ns : 0;
    c->budget_pos = pos0;
}

uint32_t vkllm__cmd_segments(const struct vkllm__cmd *c) { return c->n_cb ? c->n_cb : 1; }

vkllm_status vkllm__cmd_dispatch(struct vkllm__cmd *c, const struct vkllm__dispatch *d) {
    struct vkllm__gpu *gpu = c->gpu;
    if (!c->recording) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "dispatch outside vkllm__cmd_begin/end");
    vkllm_status st = check_dispatch(gpu, d);
    if (st) return st;
    VkPipeline pipe;
    if ((st = vkllm__pipeline_get(gpu, d->shader, d->n_spec, d->spec, d->subgroup, &pipe))) return st;
    const struct vkllm__shader_state *s = &gpu->shaders[d->shader];
    if (gpu->compile_only) { /* the barriers it would get are still counted */
        if ((c->last_barrier = needs_barrier(c, d, s->access))) c->n_barriers++, c->n_touched = 0;
        touch(c, d, s->access);
        c->n_dispatch++;
        return VKLLM_STATUS_OK;
    }
    if (c->budget_ns > 0) { /* a new command buffer where this one would take it past the budget */
        struct vkllm__cost at;
        vkllm__cost_at(&d->cost, c->budget_pos, &at);
        double ns = vkllm__gpu_cost_ns(gpu, &at);
        if (c->pending_ns > 0 && c->pending_ns + ns > c->budget_ns && (st = cut(c))) return st;
        c->pending_ns += ns;
    }
    VkDescriptorSet set;
    if ((st = alloc_set(c, s->set_layout, &set))) return st;
    VkDescriptorBufferInfo bi[VKLLM__MAX_BINDINGS];
    VkBufferView tv[VKLLM__MAX_BINDINGS];
    VkWriteDescriptorSet w[VKLLM__MAX_BINDINGS];
    const struct vkllm__shader_blob *blob = &vkllm__shader_blobs[d->shader];
    for (uint32_t i = 0; i < d->n_bind; i++) {
        const struct vkllm__binding *b = &d->bind[i];
        char kind = vkllm__binding_kind(blob, i);
        uint64_t range = b->range ? b->range : b->buf->size - b->offset;
        bi[i] = (VkDescriptorBufferInfo){
            .buffer = b->buf->block->buffer,
            .offset = b->buf->offset + b->offset,
            .range = range,
        };
        w[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = vkllm__binding_type(kind),
            .pBufferInfo = &bi[i],
        };
        if (kind == 't' || kind == 'f') {
            if ((st = vkllm__buffer_texel_view(b->buf, b->offset, range, vkllm__texel_format(kind), &tv[i]))) return st;
            w[i].pBufferInfo = NULL;
            w[i].pTexelBufferView = &tv[i];
        }
    }
    gpu->vk.vkUpdateDescriptorSets(gpu->device, d->n_bind, w, 0, NULL);
    c->last_barrier = needs_barrier(c, d, s->access);
    if (c->last_barrier) { /* it sees the writes of the dispatches before it */
        c->n_barriers++;
        c->n_touched = 0;
        const VkAccessFlags rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        memory_barrier(gpu, c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
    }
    touch(c, d, s->access);
    gpu->vk.vkCmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    gpu->vk.vkCmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->layout, 0, 1, &set, 0, NULL);
    if (d->push_size)
        gpu->vk.vkCmdPushConstants(c->cb, s->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, d->push_size, d->push);
    gpu->vk.vkCmdDispatch(c->cb, d->groups[0], d->groups[1], d->groups[2]);
    c->n_dispatch++;
    if (c->profiling) return write_ts(c, d->label, d);
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__cmd_copy(struct vkllm__cmd *c, const struct vkllm__buffer *dst, uint64_t dst_off,
                             const struct vkllm__buffer *src, uint64_t src_off, uint64_t size) {
    struct vkllm__gpu *gpu = c->gpu;
    uint64_t se, de;
    if (!c->recording) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "copy outside vkllm__cmd_begin/end");
    if (!dst || !src || size == 0 || !vkllm__add_u64(src_off, size, &se) || se > src->size ||
        !vkllm__add_u64(dst_off, size, &de) || de > dst->size)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "copy of %llu bytes outside its buffers",
                          (unsigned long long)size);
    c->n_touched = 0; /* everything before is complete for what follows */
    if (gpu->compile_only) return VKLLM_STATUS_OK;
    /* the dispatches before it wrote what it reads (and may read what it overwrites) */
    const VkAccessFlags shader = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    const VkAccessFlags transfer = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    memory_barrier(gpu, c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, shader, VK_PIPELINE_STAGE_TRANSFER_BIT, transfer);
    VkBufferCopy r = {.srcOffset = src->offset + src_off, .dstOffset = dst->offset + dst_off, .size = size};
    gpu->vk.vkCmdCopyBuffer(c->cb, src->block->buffer, dst->block->buffer, 1, &r);
    /* and the dispatches after it see what it wrote */
    memory_barrier(gpu, c->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, transfer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, shader);
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__cmd_timestamp(struct vkllm__cmd *c, const char *label) {
    if (!c->recording) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "timestamp outside vkllm__cmd_begin/end");
    if (!c->has_ts) return VKLLM_STATUS_OK;
    return write_ts(c, label, NULL);
}

vkllm_status vkllm__cmd_end(struct vkllm__cmd *c) {
    vkllm_status st = VKLLM_STATUS_OK;
    if (!c->recording) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm__cmd_end without begin");
    c->recording = 0;
    if (c->gpu->compile_only) {
        c->recorded = 1;
        return VKLLM_STATUS_OK;
    }
    full_barrier(c->gpu, c->cb); /* results visible to the host and to later submissions */
    VKLLM_VK_TRY(st, c->gpu->vk.vkEndCommandBuffer(c->cb), fail);
    c->recorded = 1;
fail:
    return st;
}

vkllm_status vkllm__cmd_submit(struct vkllm__cmd *c) {
    struct vkllm__gpu *gpu = c->gpu;
    vkllm_status st = VKLLM_STATUS_OK;
    if (!c->recorded) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "submit of a command list that is not recorded");
    if (gpu->compile_only) { /* nothing to run */
        c->serial = atomic_fetch_add(&g_submits, 1) + 1;
        return VKLLM_STATUS_OK;
    }
    /* the command buffers not submitted yet (all of them on a replay), each its own batch; the
     * fence of the last one signals after all (and all submitted before) */
    VKLLM_VK_TRY(st, gpu->vk.vkResetFences(gpu->device, 1, &c->fence), fail);
    for (uint32_t i = c->n_sent; i < c->n_cb; i++) {
        VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->cbs[i]};
        c->in_flight = 1;
        VKLLM_VK_TRY(st, gpu->vk.vkQueueSubmit(gpu->queue, 1, &si, i + 1 == c->n_cb ? c->fence : VK_NULL_HANDLE), fail);
        gpu->submitted = 1;
    }
    c->n_sent = 0; /* a replay submits them all */
    VKLLM_VK_TRY(st, gpu->vk.vkWaitForFences(gpu->device, 1, &c->fence, VK_TRUE, UINT64_MAX), fail);
    c->in_flight = 0;
    c->serial = atomic_fetch_add(&g_submits, 1) + 1;
    c->n_ts_done = 0;
    c->n_prof_done = 0;
    for (uint32_t i = 0; i < c->n_ts; i += QUERIES_PER_POOL) {
        uint32_t n = VKLLM_MIN(c->n_ts - i, QUERIES_PER_POOL);
        VKLLM_VK_TRY(st,
                     gpu->vk.vkGetQueryPoolResults(gpu->device, c->queries[i / QUERIES_PER_POOL], 0, n,
                                                   n * sizeof(uint64_t), c->ts_value + i, sizeof(uint64_t),
                                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                     fail);
    }
    c->n_ts_done = c->n_ts;
    for (uint32_t i = 0; i < c->n_ts; i++)
        if (c->ts[i].dispatch) c->prof_ts[c->n_prof_done++] = i;
fail:
    return st;
}

uint32_t vkllm__cmd_timestamp_count(const struct vkllm__cmd *c) { return c->n_ts_done; }

uint64_t vkllm__cmd_submit_serial(const struct vkllm__cmd *c) { return c->serial; }

/* Ticks from timestamp a to timestamp b (b >= a), in nanoseconds. */
static double ts_ns(const struct vkllm__cmd *c, uint32_t a, uint32_t b) {
    uint32_t bits = c->gpu->info.timestamp_valid_bits;
    uint64_t mask = bits >= 64 ? UINT64_MAX : ((1ull << bits) - 1);
    return (double)((c->ts_value[b] - c->ts_value[a]) & mask) * c->gpu->info.timestamp_period_ns;
}

uint32_t vkllm__cmd_profile_count(const struct vkllm__cmd *c) { return c->n_prof_done; }

vkllm_status vkllm__cmd_profile_get(const struct vkllm__cmd *c, uint32_t i, struct vkllm__dispatch_time *out) {
    if (i >= c->n_prof_done)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "profiled dispatch %u of %u", i, c->n_prof_done);
    /* the i-th timestamp written after a dispatch; dispatches are timed from the timestamp before */
    uint32_t k = c->prof_ts[i];
    out->label = c->ts[k].label;
    out->shader = c->ts[k].shader;
    out->cost = c->ts[k].cost;
    out->barrier = c->ts[k].barrier;
    out->n_spec = c->ts[k].n_spec;
    memcpy(out->spec, c->ts[k].spec, sizeof out->spec);
    out->subgroup = c->ts[k].subgroup;
    out->ns = k > 0 ? ts_ns(c, k - 1, k) : 0;
    return VKLLM_STATUS_OK;
}

void vkllm__cost_at(const struct vkllm__cost *c, uint32_t pos0, struct vkllm__cost *out) {
    uint64_t splits = c->split_len ? ((uint64_t)pos0 + c->split_len) / c->split_len : 0; /* ceil((pos0 + 1) / len) */
    if (c->max_splits && splits > c->max_splits) splits = c->max_splits;
    memset(out, 0, sizeof *out);
    out->bytes_read = c->bytes_read + pos0 * c->read_per_pos + splits * c->read_per_split;
    out->bytes_written = c->bytes_written + pos0 * c->written_per_pos + splits * c->written_per_split;
    out->weight_bytes = c->weight_bytes;
    out->flops = c->flops + pos0 * c->flops_per_pos + splits * c->flops_per_split;
}

/* The slowest current device of each kind, as the budget of vkllm__cmd_set_budget sees it: what
 * scalar shaders (no cooperative matrices, f32 sums) sustain, in flops and bytes per nanosecond,
 * and what a dispatch costs besides (launch, barrier). Low on purpose: a device that is faster
 * only gets more submits than it needs (each a few microseconds). */
struct rate {
    double flops_per_ns, bytes_per_ns, dispatch_ns;
};
static struct rate device_rate(const struct vkllm__gpu *gpu) {
    const struct vkllm_device_info *d = &gpu->info;
    switch (d->type) {
    case VKLLM_DEVICE_DISCRETE_GPU: /* GTX 1650, RX 6400, Arc A380: 3-4 TFLOP/s peak, 96-186 GB/s */
        return (struct rate){1000, 100, 10000};
    case VKLLM_DEVICE_CPU: /* lavapipe: per thread that runs its workgroups */
        return (struct rate){2.0 * VKLLM_MAX(gpu->cpu_threads, 1u), 2.0 * VKLLM_MAX(gpu->cpu_threads, 1u), 20000};
    default: break;
    }
    switch (d->vendor_id) {
    case 0x13b5: /* Arm Mali, Qualcomm Adreno, Imagination: phones' GPUs (Mali-G52: 0.1 TFLOP/s, 10 GB/s) */
    case 0x5143:
    case 0x1010: return (struct rate){30, 8, 20000};
    default: /* integrated, virtual, other: Intel UHD 620 (0.4 TFLOP/s peak, 20-30 GB/s) */
        return (struct rate){100, 15, 10000};
    }
}

double vkllm__gpu_cost_ns(const struct vkllm__gpu *gpu, const struct vkllm__cost *at) {
    struct rate r = device_rate(gpu);
    return (double)at->flops / r.flops_per_ns + (double)(at->bytes_read + at->bytes_written) / r.bytes_per_ns +
           r.dispatch_ns;
}

vkllm_status vkllm__cmd_timestamp_get(const struct vkllm__cmd *c, uint32_t i, const char **label, double *ns) {
    if (i >= c->n_ts_done) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "timestamp %u of %u", i, c->n_ts_done);
    if (label) *label = c->ts[i].label;
    if (ns) *ns = ts_ns(c, 0, i);
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__gpu_run1(struct vkllm__gpu *gpu, const struct vkllm__dispatch *d) {
    struct vkllm__cmd *c = NULL;
    vkllm_status st = vkllm__cmd_init(gpu, &c);
    if (st) return st;
    VKLLM_TRY(st, vkllm__cmd_begin(c), done);
    VKLLM_TRY(st, vkllm__cmd_dispatch(c, d), done);
    VKLLM_TRY(st, vkllm__cmd_end(c), done);
    VKLLM_TRY(st, vkllm__cmd_submit(c), done);
done:
    vkllm__cmd_free(c);
    return st;
}
