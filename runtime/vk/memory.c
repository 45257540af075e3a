/* memory.c - device memory in a few large blocks, each with one VkBuffer over all of it;
 * buffers are sub-allocated ranges (first fit, coalescing free list). Uploads and downloads map
 * directly where memory is host-visible (unified memory) and go through a staging buffer
 * otherwise. Heap use is accounted here: some drivers (lavapipe) accept allocations beyond the
 * heap size silently. */
#include <stdio.h>
#include <string.h>

#include "vk.h"

#define DEFAULT_BLOCK_SIZE (256ull << 20)
#define STAGING_SIZE (64ull << 20)

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Bytes of heap h: the driver's, or less where a device profile lowered it. */
static uint64_t heap_bytes(const struct vkllm__gpu *gpu, uint32_t h) {
    uint64_t size = gpu->mem_props.memoryHeaps[h].size;
    return h < gpu->info.heap_count && gpu->info.heap_size[h] < size ? gpu->info.heap_size[h] : size;
}

/* Pick a memory type: required flags must all be present; prefer those with `prefer` too. */
static int find_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits, uint32_t required, uint32_t prefer) {
    int best = -1;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        if (!(bits & (1u << i))) continue;
        uint32_t f = mp->memoryTypes[i].propertyFlags;
        if ((f & required) != required) continue;
        if ((f & prefer) == prefer) return (int)i;
        if (best < 0) best = (int)i;
    }
    return best;
}

vkllm_status vkllm__mem_init(struct vkllm__gpu *gpu) {
    const VkPhysicalDeviceMemoryProperties *mp = &gpu->mem_props;
    const uint32_t DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const uint32_t HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    /* On unified memory take device-local + host-visible for everything: no staging copies. */
    gpu->type_device = gpu->info.unified_memory ? find_type(mp, ~0u, DL | HV, DL | HV) : -1;
    if (gpu->type_device < 0) gpu->type_device = find_type(mp, ~0u, DL, DL);
    if (gpu->type_device < 0) gpu->type_device = find_type(mp, ~0u, 0, 0);
    gpu->type_host = find_type(mp, ~0u, HV, HV | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    /* A discrete GPU whose device-local heap the host can write through a mapping (resizable BAR:
     * a device-local, host-visible type on that same heap, not a 256 MiB window of its own):
     * device blocks are taken from it and uploads write them directly, no staging copy. */
    gpu->type_rebar = -1;
    if (!gpu->info.unified_memory && gpu->type_device >= 0) {
        int t = find_type(mp, ~0u, DL | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, DL | HV);
        if (t >= 0 && mp->memoryTypes[t].heapIndex == mp->memoryTypes[gpu->type_device].heapIndex) gpu->type_rebar = t;
    }
    if ((gpu->type_device < 0 || gpu->type_host < 0) && !gpu->compile_only)
        return vkllm__err(VKLLM_STATUS_NO_DEVICE, "%s has no usable memory type", gpu->info.name);
    struct vkllm__gpu_bind_limits *bl = &gpu->bind_limits;
    gpu->dev_max_texels = gpu->info.max_texel_buffer_elements; /* a device profile may have lowered them */
    bl->max_uniform = gpu->info.max_uniform_buffer_range;
    bl->texel_align = VKLLM_MAX(gpu->info.min_texel_buffer_offset_alignment, 1); /* a profile may have raised these */
    bl->uniform_align = VKLLM_MAX(gpu->info.min_uniform_buffer_offset_alignment, 1);
    VkFormatProperties fu, ff;
    vkGetPhysicalDeviceFormatProperties(gpu->phys, VK_FORMAT_R32G32B32A32_UINT, &fu);
    vkGetPhysicalDeviceFormatProperties(gpu->phys, VK_FORMAT_R32_SFLOAT, &ff);
    bl->texel_formats = (fu.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) &&
                        (ff.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT);
    vkllm__mem_apply_tuning(gpu);
    if (gpu->compile_only) return VKLLM_STATUS_OK; /* no transfers: no pool, no fence */

    vkllm_status st = VKLLM_STATUS_OK;
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = gpu->queue_family,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreateCommandPool(gpu->device, &pci, NULL, &gpu->pool), fail);
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = gpu->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkAllocateCommandBuffers(gpu->device, &ai, &gpu->xfer_cmd), fail);
    ai.commandBufferCount = 2;
    VKLLM_VK_TRY(st, gpu->vk.vkAllocateCommandBuffers(gpu->device, &ai, gpu->slot_cmd), fail);
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKLLM_VK_TRY(st, gpu->vk.vkCreateFence(gpu->device, &fci, NULL, &gpu->xfer_fence), fail);
    for (int i = 0; i < 2; i++)
        VKLLM_VK_TRY(st, gpu->vk.vkCreateFence(gpu->device, &fci, NULL, &gpu->slot_fence[i]), fail);
    return VKLLM_STATUS_OK;
fail:
    return st;
}

/* What the driver says this process holds on heap h (VK_EXT_memory_budget's heapUsage: vkllm's
 * blocks and the driver's own objects, shaders and command buffers); UINT64_MAX where the
 * extension is not offered. */
static uint64_t driver_heap_usage(const struct vkllm__gpu *gpu, uint32_t h) {
    if (!gpu->info.memory_budget) return UINT64_MAX;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {.sType =
                                                       VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                            .pNext = &b};
    vkGetPhysicalDeviceMemoryProperties2(gpu->phys, &mp);
    return b.heapUsage[h];
}

/* A debug line per block given or taken back, with vkllm's count and the driver's heap usage
 * before and after the call: where nothing else allocates in between, the driver's change is
 * the block's size (scripts/lane-amdgpu-shim.sh checks it on RADV). Format kept stable. */
static void log_block(const struct vkllm__gpu *gpu, const char *what, const struct vkllm__block *b, uint32_t heap,
                      uint64_t driver_before) {
    uint64_t after = driver_before == UINT64_MAX ? UINT64_MAX : driver_heap_usage(gpu, heap);
    char drv[96] = "driver heapUsage unknown";
    if (after != UINT64_MAX)
        snprintf(drv, sizeof drv, "driver heapUsage %llu -> %llu", (unsigned long long)driver_before,
                 (unsigned long long)after);
    vkllm__log(VKLLM_LOG_DEBUG,
               "memory: %s %llu bytes (heap %u, type %u, %s); vkllm holds %llu of heap %u, %llu in all; %s", what,
               (unsigned long long)b->size, heap, b->type_index, b->kind == VKLLM__MEM_HOST ? "host" : "device",
               (unsigned long long)gpu->heap_used[heap], heap, (unsigned long long)gpu->allocated, drv);
}

static void block_destroy(struct vkllm__gpu *gpu, struct vkllm__block *b) {
    if (!b) return;
    if (b->buffer) gpu->vk.vkDestroyBuffer(gpu->device, b->buffer, NULL);
    if (b->memory) {
        uint32_t heap = gpu->mem_props.memoryTypes[b->type_index].heapIndex;
        uint64_t before = driver_heap_usage(gpu, heap);
        gpu->vk.vkFreeMemory(gpu->device, b->memory, NULL);
        gpu->heap_used[heap] -= b->size;
        gpu->allocated -= b->size;
        if (b->shared) gpu->shared_bytes -= b->size;
        log_block(gpu, "freed", b, heap, before);
    }
    vkllm__free(b->free_list);
    vkllm__free(b);
}

static vkllm_status slots_wait(struct vkllm__gpu *gpu);

void vkllm__mem_free_all(struct vkllm__gpu *gpu) {
    slots_wait(gpu);
    if (gpu->staging) vkllm__buffer_free(gpu->staging);
    gpu->staging = NULL;
    for (uint32_t i = 0; i < gpu->n_blocks; i++) block_destroy(gpu, gpu->blocks[i]);
    vkllm__free(gpu->blocks);
    gpu->blocks = NULL;
    gpu->n_blocks = gpu->cap_blocks = 0;
    if (gpu->xfer_fence) gpu->vk.vkDestroyFence(gpu->device, gpu->xfer_fence, NULL);
    for (int i = 0; i < 2; i++) {
        if (gpu->slot_fence[i]) gpu->vk.vkDestroyFence(gpu->device, gpu->slot_fence[i], NULL);
        gpu->slot_fence[i] = VK_NULL_HANDLE;
    }
    if (gpu->pool) gpu->vk.vkDestroyCommandPool(gpu->device, gpu->pool, NULL);
    gpu->xfer_fence = VK_NULL_HANDLE;
    gpu->pool = VK_NULL_HANDLE;
}

/* What VK_EXT_memory_budget says of heap h now: the bytes this process may use (the budget,
 * other programs' use taken into account) and those it uses. 0 where the extension is not
 * offered (and no test cap is set). */
static uint64_t heap_budget(const struct vkllm__gpu *gpu, uint32_t h, uint64_t *usage) {
    uint64_t budget = 0;
    *usage = gpu->heap_used[h];
    if (gpu->info.memory_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 mp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                                .pNext = &b};
        vkGetPhysicalDeviceMemoryProperties2(gpu->phys, &mp);
        budget = b.heapBudget[h];
        *usage = VKLLM_MAX(*usage, b.heapUsage[h]); /* some drivers count lazily */
    }
    if (gpu->budget_room && (!budget || *usage + gpu->budget_room < budget)) budget = *usage + gpu->budget_room;
    return budget;
}

void vkllm__gpu_test_budget_room(struct vkllm__gpu *gpu, uint64_t bytes) { gpu->budget_room = bytes; }

/* A compile-only context's block: offsets to hand out, no memory behind them. */
static vkllm_status block_create_bookkeeping(uint64_t size, enum vkllm__mem_kind kind, struct vkllm__block **out) {
    struct vkllm__block *b = vkllm__calloc(1, sizeof *b);
    if (b) b->free_list = vkllm__malloc(4 * sizeof *b->free_list);
    if (!b || !b->free_list) {
        vkllm__free(b);
        return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    }
    b->size = size;
    b->kind = kind;
    b->cap_free = 4;
    b->n_free = 1;
    b->free_list[0] = (struct vkllm__range){0, size};
    *out = b;
    return VKLLM_STATUS_OK;
}

static vkllm_status block_create(struct vkllm__gpu *gpu, uint64_t size, enum vkllm__mem_kind kind,
                                 struct vkllm__block **out) {
    vkllm_status st = VKLLM_STATUS_OK;
    if (gpu->compile_only) return block_create_bookkeeping(size, kind, out);
    int type = kind == VKLLM__MEM_HOST ? gpu->type_host : gpu->type_rebar >= 0 ? gpu->type_rebar : gpu->type_device;
    uint32_t heap = gpu->mem_props.memoryTypes[type].heapIndex;
    uint64_t heap_size = heap_bytes(gpu, heap);
    if (gpu->memory_limit && gpu->memory_limit < heap_size) heap_size = gpu->memory_limit;
    if (vkllm__fault_hit(VKLLM__FAULT_DEVICE) || gpu->heap_used[heap] + size > heap_size)
        return vkllm__err(VKLLM_STATUS_DEVICE_OOM,
                          "out of device memory: %s more asked for, %s of heap %u's %s already in use%s",
                          vkllm__bytes(size).s, vkllm__bytes(gpu->heap_used[heap]).s, heap, vkllm__bytes(heap_size).s,
                          gpu->memory_limit ? " (capped by VKLLM_MEMORY_LIMIT_MB)" : "");
    uint64_t usage, budget = heap_budget(gpu, heap, &usage);
    if (budget && usage + size > budget)
        return vkllm__err(VKLLM_STATUS_DEVICE_OOM,
                          "out of device memory: %s more asked for, but the driver's memory budget for heap "
                          "%u is %s and this process uses %s (VK_EXT_memory_budget: other programs "
                          "hold the rest of the heap's %s)",
                          vkllm__bytes(size).s, heap, vkllm__bytes(budget).s, vkllm__bytes(usage).s,
                          vkllm__bytes(heap_size).s);
    if (size > gpu->max_alloc)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "one buffer of %llu bytes exceeds the device's maxMemoryAllocationSize (%llu%s)",
                          (unsigned long long)size, (unsigned long long)gpu->max_alloc,
                          gpu->max_alloc < gpu->info.max_memory_allocation_size ? ", lowered by VKLLM_MAX_ALLOC" : "");

    struct vkllm__block *b = vkllm__calloc(1, sizeof *b);
    if (!b) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    b->size = size;
    b->kind = kind;
    b->type_index = (uint32_t)type;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        /* any range may be bound as a storage, uniform or uniform texel buffer */
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                 VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreateBuffer(gpu->device, &bci, NULL, &b->buffer), fail);
    VkMemoryRequirements req;
    gpu->vk.vkGetBufferMemoryRequirements(gpu->device, b->buffer, &req);
    if (!(req.memoryTypeBits & (1u << type))) {
        st = vkllm__err(VKLLM_STATUS_UNSUPPORTED, "storage buffers cannot live in memory type %d", type);
        goto fail;
    }
    VkMemoryAllocateInfo mai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    uint64_t before = driver_heap_usage(gpu, heap);
    VKLLM_VK_TRY(st, gpu->vk.vkAllocateMemory(gpu->device, &mai, NULL, &b->memory), fail);
    gpu->heap_used[heap] += size;
    gpu->allocated += size;
    log_block(gpu, "allocated", b, heap, before);
    VKLLM_VK_TRY(st, gpu->vk.vkBindBufferMemory(gpu->device, b->buffer, b->memory, 0), fail);
    /* VKLLM_FORCE_STAGING=1 leaves device blocks unmapped so that the staging path runs even on
     * unified memory (tests use it on lavapipe). */
    if ((gpu->mem_props.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
        !(kind == VKLLM__MEM_DEVICE && gpu->force_staging))
        VKLLM_VK_TRY(st, gpu->vk.vkMapMemory(gpu->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped), fail);
    else if (kind == VKLLM__MEM_DEVICE && type == gpu->type_rebar) /* written through, read back by copies */
        VKLLM_VK_TRY(st, gpu->vk.vkMapMemory(gpu->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->wmapped), fail);
    b->free_list = vkllm__malloc(4 * sizeof *b->free_list);
    if (!b->free_list) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }
    b->cap_free = 4;
    b->n_free = 1;
    b->free_list[0] = (struct vkllm__range){0, size};
    *out = b;
    return VKLLM_STATUS_OK;
fail:
    block_destroy(gpu, b);
    return st;
}

/* First fit with alignment; returns 1 and the offset on success. */
static int block_take(struct vkllm__block *b, uint64_t size, uint64_t align, uint64_t *off) {
    for (uint32_t i = 0; i < b->n_free; i++) {
        struct vkllm__range *r = &b->free_list[i];
        uint64_t start = align_up(r->offset, align);
        if (start + size > r->offset + r->size) continue;
        uint64_t end = start + size, rend = r->offset + r->size;
        /* Offsets and sizes are kept aligned, so start == r->offset in practice. */
        if (start != r->offset) continue;
        if (end == rend) {
            memmove(r, r + 1, (b->n_free - i - 1) * sizeof *r);
            b->n_free--;
        } else {
            r->offset = end;
            r->size = rend - end;
        }
        *off = start;
        return 1;
    }
    return 0;
}

static vkllm_status block_give(struct vkllm__block *b, uint64_t off, uint64_t size) {
    uint32_t i = 0;
    while (i < b->n_free && b->free_list[i].offset < off) i++;
    int merge_prev = i > 0 && b->free_list[i - 1].offset + b->free_list[i - 1].size == off;
    int merge_next = i < b->n_free && off + size == b->free_list[i].offset;
    if (merge_prev && merge_next) {
        b->free_list[i - 1].size += size + b->free_list[i].size;
        memmove(&b->free_list[i], &b->free_list[i + 1], (b->n_free - i - 1) * sizeof *b->free_list);
        b->n_free--;
    } else if (merge_prev) {
        b->free_list[i - 1].size += size;
    } else if (merge_next) {
        b->free_list[i].offset = off;
        b->free_list[i].size += size;
    } else {
        if (b->n_free == b->cap_free) {
            uint32_t cap = b->cap_free * 2;
            struct vkllm__range *nl = vkllm__realloc(b->free_list, cap * sizeof *nl);
            if (!nl) return VKLLM_STATUS_OOM; /* the range is lost to this block, nothing else */
            b->free_list = nl;
            b->cap_free = cap;
        }
        memmove(&b->free_list[i + 1], &b->free_list[i], (b->n_free - i) * sizeof *b->free_list);
        b->free_list[i] = (struct vkllm__range){off, size};
        b->n_free++;
    }
    return VKLLM_STATUS_OK;
}

/* Every buffer starts where any kind of binding may start, and takes a whole number of these. */
static uint64_t buffer_align(const struct vkllm__gpu *gpu) {
    uint64_t align = VKLLM_MAX(gpu->info.min_storage_buffer_offset_alignment, 256);
    return VKLLM_MAX(align, VKLLM_MAX(gpu->bind_limits.texel_align, gpu->bind_limits.uniform_align));
}

/* Bytes of the blocks of this kind that small buffers share. */
static uint64_t shared_bytes(const struct vkllm__gpu *gpu, enum vkllm__mem_kind kind) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < gpu->n_blocks; i++)
        if (gpu->blocks[i]->shared && gpu->blocks[i]->kind == kind) n += gpu->blocks[i]->size;
    return n;
}

/* 0 where the block is on the device-local heap (the one the budgets are of), 1 elsewhere. */
static int on_device_heap(const struct vkllm__gpu *gpu, const struct vkllm__block *b) {
    if (gpu->compile_only || gpu->type_device < 0) return b->kind == VKLLM__MEM_DEVICE ? 0 : 1;
    return gpu->mem_props.memoryTypes[b->type_index].heapIndex !=
           gpu->mem_props.memoryTypes[gpu->type_device].heapIndex;
}

/* own_block: a block of the buffer's own size, shared with nothing (the staging buffer). */
static vkllm_status buffer_alloc(struct vkllm__gpu *gpu, uint64_t size, enum vkllm__mem_kind kind, int own_block,
                                 struct vkllm__buffer **out) {
    if (size == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "buffer of 0 bytes");
    /* Where device blocks are mapped and of the host type (unified memory: lavapipe), host buffers
     * share them: no block of their own for a few bytes of per-step parameters. */
    if (kind == VKLLM__MEM_HOST && !own_block && gpu->type_host == gpu->type_device && !gpu->force_staging)
        kind = VKLLM__MEM_DEVICE;
    uint64_t align = buffer_align(gpu);
    if (size > UINT64_MAX / 2) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "buffer size overflows");
    uint64_t reserved = align_up(size, align);
    struct vkllm__buffer *buf = vkllm__calloc(1, sizeof *buf);
    if (!buf) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    struct vkllm__block *blk = NULL;
    uint64_t off = 0;
    for (uint32_t i = 0; i < gpu->n_blocks && !own_block; i++) {
        if (gpu->blocks[i]->kind != kind) continue;
        if (block_take(gpu->blocks[i], reserved, align, &off)) {
            blk = gpu->blocks[i];
            break;
        }
    }
    if (!blk) {
        if (gpu->n_blocks == gpu->cap_blocks) {
            uint32_t cap = gpu->cap_blocks ? gpu->cap_blocks * 2 : 8;
            struct vkllm__block **nb = vkllm__realloc(gpu->blocks, cap * sizeof *nb);
            if (!nb) {
                vkllm__free(buf);
                return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
            }
            gpu->blocks = nb;
            gpu->cap_blocks = cap;
        }
        /* A buffer over a quarter of block_size (a model's large tensors) gets a block of its own
         * size, so no block's tail is left empty between them. Smaller ones share blocks that
         * start at 16 MiB and double with what the shared blocks of their kind hold, up to
         * block_size: the memory left empty stays within the small buffers' own size, and a
         * small model does not hold 256 MiB. (Counted per kind: the host-visible blocks of a
         * discrete GPU, a few small buffers, grew with the device's and took 256 MiB.) */
        uint64_t grow = VKLLM_MIN(gpu->block_size, VKLLM_MAX(16ull << 20, shared_bytes(gpu, kind)));
        /* A caller that said how much it is about to allocate gets blocks of that size: the last
         * block of a model's weights, or the one of a session's state, is not left mostly empty. */
        if (gpu->expect && kind == VKLLM__MEM_DEVICE)
            grow = VKLLM_MIN(gpu->block_size, VKLLM_MAX(gpu->expect, reserved));
        grow = (grow + align - 1) / align * align;
        int shared = !own_block && reserved <= gpu->block_size / 4;
        uint64_t bsize = shared && reserved < grow ? grow : reserved;
        /* whole 64 KiB: drivers allocate whole pages (RADV's heapUsage grows by the size rounded up) */
        if (align_up(bsize, 64u << 10) <= gpu->max_alloc) bsize = align_up(bsize, 64u << 10);
        vkllm_status st = block_create(gpu, bsize, kind, &blk);
        if (st && bsize > reserved) /* a smaller block may still fit */
            st = block_create(gpu, reserved, kind, &blk);
        if (st) {
            vkllm__free(buf);
            return st;
        }
        blk->shared = shared;
        if (shared) gpu->shared_bytes += blk->size;
        gpu->blocks[gpu->n_blocks++] = blk;
        if (!block_take(blk, reserved, align, &off)) {
            vkllm__free(buf);
            return vkllm__err(VKLLM_STATUS_INTERNAL, "fresh memory block cannot hold %llu bytes",
                              (unsigned long long)reserved);
        }
    }
    blk->used += reserved;
    gpu->used += reserved;
    if (kind == VKLLM__MEM_DEVICE) gpu->expect -= VKLLM_MIN(gpu->expect, reserved); /* the hint is of device blocks */
    buf->use = own_block ? VKLLM__USE_STAGING : gpu->mem_use;
    gpu->use_bytes[on_device_heap(gpu, blk)][buf->use] += reserved;
    buf->gpu = gpu;
    buf->block = blk;
    buf->offset = off;
    buf->size = size;
    buf->reserved = reserved;
    *out = buf;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__buffer_alloc(struct vkllm__gpu *gpu, uint64_t size, enum vkllm__mem_kind kind,
                                 struct vkllm__buffer **out) {
    return buffer_alloc(gpu, size, kind, 0, out);
}

void vkllm__buffer_free(struct vkllm__buffer *b) {
    if (!b) return;
    struct vkllm__gpu *gpu = b->gpu;
    if (gpu->slot_busy[0] || gpu->slot_busy[1]) slots_wait(gpu); /* a copy may still write it */
    struct vkllm__block *blk = b->block;
    for (struct vkllm__texel_view *v = b->views, *next; v; v = next) {
        next = v->next;
        gpu->vk.vkDestroyBufferView(gpu->device, v->view, NULL);
        vkllm__free(v);
    }
    block_give(blk, b->offset, b->reserved);
    gpu->use_bytes[on_device_heap(gpu, blk)][b->use] -= b->reserved;
    blk->used -= b->reserved;
    gpu->used -= b->reserved;
    /* Give an empty block back to the driver. */
    if (blk->used == 0) {
        for (uint32_t i = 0; i < gpu->n_blocks; i++) {
            if (gpu->blocks[i] != blk) continue;
            gpu->blocks[i] = gpu->blocks[--gpu->n_blocks];
            block_destroy(gpu, blk);
            break;
        }
    }
    int is_staging = b == gpu->staging;
    vkllm__free(b);
    /* The staging buffer lives while something else does: freeing the last model or session
     * gives the context's device memory back to where it started. */
    if (gpu->staging && !is_staging && gpu->used == gpu->staging->reserved) {
        struct vkllm__buffer *st = gpu->staging;
        slots_wait(gpu); /* a copy from it may be in flight (a failed load frees what it uploaded) */
        gpu->staging = NULL;
        vkllm__buffer_free(st);
    }
}

uint64_t vkllm__buffer_size(const struct vkllm__buffer *b) { return b->size; }

int vkllm__buffer_host_writes(const struct vkllm__buffer *b) {
    return b->gpu->compile_only || b->block->mapped || b->block->wmapped;
}

void *vkllm__buffer_map(const struct vkllm__buffer *b) {
    return b->block->mapped ? (uint8_t *)b->block->mapped + b->offset : NULL;
}

/* The device-local heap's bytes: what the budgets (vkllm__gpu_memory_budget) are of. The
 * host-visible blocks of a discrete GPU (the staging buffer, readback, per-step parameters) are on
 * another heap and do not count; on unified memory (lavapipe) the heaps are one. */
uint64_t vkllm__gpu_memory_allocated(const struct vkllm__gpu *gpu) {
    if (gpu->type_device < 0) return gpu->allocated; /* compile-only without memory: 0 */
    return gpu->heap_used[gpu->mem_props.memoryTypes[gpu->type_device].heapIndex];
}
uint64_t vkllm__gpu_memory_used(const struct vkllm__gpu *gpu) { return gpu->used; }

enum vkllm__mem_use vkllm__gpu_set_mem_use(struct vkllm__gpu *gpu, enum vkllm__mem_use use) {
    enum vkllm__mem_use old = gpu->mem_use;
    gpu->mem_use = use;
    return old;
}

uint64_t vkllm__gpu_expect(struct vkllm__gpu *gpu, uint64_t bytes) {
    uint64_t was = gpu->expect;
    gpu->expect = bytes;
    return was;
}

void vkllm__gpu_memory_by_use(const struct vkllm__gpu *gpu, uint64_t device[VKLLM__USE_COUNT_ + 1],
                              uint64_t host[VKLLM__USE_COUNT_ + 1]) {
    for (int u = 0; u < VKLLM__USE_COUNT_; u++) device[u] = gpu->use_bytes[0][u], host[u] = gpu->use_bytes[1][u];
    device[VKLLM__USE_COUNT_] = host[VKLLM__USE_COUNT_] = 0;
    for (uint32_t i = 0; i < gpu->n_blocks; i++) {
        const struct vkllm__block *b = gpu->blocks[i];
        (on_device_heap(gpu, b) ? host : device)[VKLLM__USE_COUNT_] += b->size - b->used;
    }
}

uint64_t vkllm__gpu_max_binding(const struct vkllm__gpu *gpu) { return gpu->max_binding; }

uint64_t vkllm__gpu_storage_align(const struct vkllm__gpu *gpu) {
    return VKLLM_MAX(gpu->info.min_storage_buffer_offset_alignment, 4);
}

uint32_t vkllm__gpu_cpu_threads(const struct vkllm__gpu *gpu) { return gpu->cpu_threads; }

uint64_t vkllm__gpu_max_alloc(const struct vkllm__gpu *gpu) {
    return gpu->max_alloc / buffer_align(gpu) * buffer_align(gpu);
}

const struct vkllm__gpu_bind_limits *vkllm__gpu_bind_limits(const struct vkllm__gpu *gpu) { return &gpu->bind_limits; }

/* The device's limits as the tuning lowers them (never raises them), and the memory knobs. */
void vkllm__mem_apply_tuning(struct vkllm__gpu *gpu) {
    const struct vkllm__tuning *t = &gpu->tuning;
    uint64_t maxalloc = gpu->info.max_memory_allocation_size ? gpu->info.max_memory_allocation_size : (1ull << 30);
    uint64_t range = gpu->info.max_storage_buffer_range;
    gpu->max_binding = t->max_binding > 0 && (uint64_t)t->max_binding < range ? (uint64_t)t->max_binding : range;
    gpu->max_alloc = t->max_alloc > 0 && (uint64_t)t->max_alloc < maxalloc ? (uint64_t)t->max_alloc : maxalloc;
    gpu->bind_limits.max_texels = t->max_texels > 0 && (uint64_t)t->max_texels < gpu->dev_max_texels
                                      ? (uint64_t)t->max_texels
                                      : gpu->dev_max_texels;
    /* Only unified memory (integrated and CPU devices) is mapped: a discrete GPU's host-visible
     * VRAM is slow to read back over the bus, and a profile of one runs the staging path. */
    gpu->force_staging = t->force_staging == 1 || !gpu->info.unified_memory;
    gpu->memory_limit = t->memory_limit_mb > 0 ? (uint64_t)t->memory_limit_mb << 20 : 0;
    gpu->block_size = VKLLM_MIN(t->block_mb > 0 ? (uint64_t)t->block_mb << 20 : DEFAULT_BLOCK_SIZE, gpu->max_alloc);
}

vkllm_status vkllm__buffer_texel_view(const struct vkllm__buffer *cb, uint64_t offset, uint64_t range, VkFormat fmt,
                                      VkBufferView *out) {
    struct vkllm__buffer *b = (struct vkllm__buffer *)cb; /* the view cache is not part of its value */
    for (struct vkllm__texel_view *v = b->views; v; v = v->next) {
        if (v->offset == offset && v->range == range && v->format == fmt) {
            *out = v->view;
            return VKLLM_STATUS_OK;
        }
    }
    struct vkllm__gpu *gpu = b->gpu;
    if (gpu->compile_only) { /* nothing is recorded that would bind it */
        *out = VK_NULL_HANDLE;
        return VKLLM_STATUS_OK;
    }
    struct vkllm__texel_view *v = vkllm__calloc(1, sizeof *v);
    if (!v) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm_status st = VKLLM_STATUS_OK;
    VkBufferViewCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = b->block->buffer,
        .format = fmt,
        .offset = b->offset + offset,
        .range = range,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreateBufferView(gpu->device, &ci, NULL, &v->view), fail);
    v->offset = offset;
    v->range = range;
    v->format = fmt;
    v->next = b->views;
    b->views = v;
    *out = v->view;
    return VKLLM_STATUS_OK;
fail:
    vkllm__free(v);
    return st;
}

uint64_t vkllm__gpu_memory_budget(const struct vkllm__gpu *gpu) {
    if (gpu->type_device < 0) return UINT64_MAX / 4; /* compile-only on a device without memory: no limit */
    uint32_t heap = gpu->mem_props.memoryTypes[gpu->type_device].heapIndex;
    uint64_t size = heap_bytes(gpu, heap);
    if (gpu->memory_limit && gpu->memory_limit < size) size = gpu->memory_limit;
    /* with VK_EXT_memory_budget: what vkllm holds plus what the driver lets this process add now */
    uint64_t usage, budget = heap_budget(gpu, heap, &usage);
    if (budget) size = VKLLM_MIN(size, gpu->heap_used[heap] + (budget > usage ? budget - usage : 0));
    return size;
}

// --- transfers -----------------------------------------------------------------------------

static vkllm_status check_range(const struct vkllm__buffer *b, uint64_t offset, uint64_t size) {
    uint64_t end;
    if (!vkllm__add_u64(offset, size, &end) || end > b->size)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "range [%llu, +%llu) is outside the buffer of %llu bytes",
                          (unsigned long long)offset, (unsigned long long)size, (unsigned long long)b->size);
    return VKLLM_STATUS_OK;
}

/* The staging buffer has a block of its own: it comes and goes with the context's other buffers,
 * and counted among the shared blocks it made the next host-visible block as large as itself. It
 * is as large as the largest transfer asked for (up to STAGING_SIZE), and given back at the end of
 * a run of uploads (vkllm__gpu_upload_end): a model's load does not keep 64 MiB for later. */
static vkllm_status ensure_staging(struct vkllm__gpu *gpu, uint64_t want) {
    uint64_t size = VKLLM_MIN(STAGING_SIZE, vkllm__gpu_max_alloc(gpu));
    size = VKLLM_MIN(size, VKLLM_MAX(align_up(want, 2 * buffer_align(gpu)), 1ull << 20));
    if (gpu->staging && gpu->staging->size >= size) return VKLLM_STATUS_OK;
    vkllm_status st = slots_wait(gpu); /* the old one may still be read */
    if (st) return st;
    if (gpu->staging) {
        struct vkllm__buffer *old = gpu->staging;
        gpu->staging = NULL;
        vkllm__buffer_free(old);
    }
    return buffer_alloc(gpu, size, VKLLM__MEM_HOST, 1, &gpu->staging);
}

static vkllm_status copy_chunk(struct vkllm__gpu *gpu, VkBuffer src, uint64_t soff, VkBuffer dst, uint64_t doff,
                               uint64_t size) {
    vkllm_status st = vkllm__xfer_begin(gpu);
    if (st) return st;
    VkBufferCopy region = {.srcOffset = soff, .dstOffset = doff, .size = size};
    gpu->vk.vkCmdCopyBuffer(gpu->xfer_cmd, src, dst, 1, &region);
    return vkllm__xfer_submit_wait(gpu);
}

/* Wait for the copies in flight from the staging halves. */
static vkllm_status slots_wait(struct vkllm__gpu *gpu) {
    vkllm_status st = VKLLM_STATUS_OK;
    for (int i = 0; i < 2; i++) {
        if (!gpu->slot_busy[i]) continue;
        gpu->slot_busy[i] = 0;
        VKLLM_VK_TRY(st, gpu->vk.vkWaitForFences(gpu->device, 1, &gpu->slot_fence[i], VK_TRUE, UINT64_MAX), fail);
    }
fail:
    return st;
}

static void all_barrier(struct vkllm__gpu *gpu, VkCommandBuffer cb) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
    gpu->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb,
                                 0, NULL, 0, NULL);
}

/* Copy n bytes of src into staging half i (once its last copy is done) and submit their copy to
 * dst, not waiting: the host fills the other half meanwhile. */
static vkllm_status slot_upload(struct vkllm__gpu *gpu, uint32_t i, const void *src, VkBuffer dst, uint64_t doff,
                                uint64_t n) {
    vkllm_status st = VKLLM_STATUS_OK;
    const uint64_t half = gpu->staging->size / 2;
    if (gpu->slot_busy[i]) {
        gpu->slot_busy[i] = 0;
        VKLLM_VK_TRY(st, gpu->vk.vkWaitForFences(gpu->device, 1, &gpu->slot_fence[i], VK_TRUE, UINT64_MAX), fail);
    }
    memcpy((uint8_t *)vkllm__buffer_map(gpu->staging) + i * half, src, n);
    VkCommandBuffer cb = gpu->slot_cmd[i];
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VKLLM_VK_TRY(st, gpu->vk.vkResetCommandBuffer(cb, 0), fail);
    VKLLM_VK_TRY(st, gpu->vk.vkBeginCommandBuffer(cb, &bi), fail);
    all_barrier(gpu, cb);
    VkBufferCopy region = {.srcOffset = gpu->staging->offset + i * half, .dstOffset = doff, .size = n};
    gpu->vk.vkCmdCopyBuffer(cb, gpu->staging->block->buffer, dst, 1, &region);
    all_barrier(gpu, cb);
    VKLLM_VK_TRY(st, gpu->vk.vkEndCommandBuffer(cb), fail);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    VKLLM_VK_TRY(st, gpu->vk.vkResetFences(gpu->device, 1, &gpu->slot_fence[i]), fail);
    VKLLM_VK_TRY(st, gpu->vk.vkQueueSubmit(gpu->queue, 1, &si, gpu->slot_fence[i]), fail);
    gpu->submitted = 1;
    gpu->slot_busy[i] = 1;
fail:
    return st;
}

void vkllm__gpu_upload_begin(struct vkllm__gpu *gpu) { gpu->upload_batch = 1; }

vkllm_status vkllm__gpu_upload_end(struct vkllm__gpu *gpu) {
    gpu->upload_batch = 0;
    if (gpu->compile_only) return VKLLM_STATUS_OK;
    vkllm_status st = slots_wait(gpu);
    if (gpu->staging) {
        struct vkllm__buffer *old = gpu->staging;
        gpu->staging = NULL;
        vkllm__buffer_free(old);
    }
    return st;
}

vkllm_status vkllm__buffer_upload(struct vkllm__buffer *b, uint64_t offset, const void *src, uint64_t size) {
    vkllm_status st = check_range(b, offset, size);
    if (st || size == 0) return st;
    if (vkllm__fault_hit(VKLLM__FAULT_UPLOAD))
        return vkllm__err(VKLLM_STATUS_DEVICE_LOST, "buffer upload of %llu bytes: injected failure (tests)",
                          (unsigned long long)size);
    if (b->gpu->compile_only) return VKLLM_STATUS_OK;                       /* no memory to hold it */
    uint8_t *dst = b->block->mapped ? b->block->mapped : b->block->wmapped; /* unified memory, or ReBAR */
    if (dst) {
        memcpy(dst + b->offset + offset, src, size);
        return VKLLM_STATUS_OK;
    }
    struct vkllm__gpu *gpu = b->gpu;
    if ((st = ensure_staging(gpu, size))) return st;
    for (uint64_t done = 0, step = gpu->staging->size / 2; done < size; done += step) {
        uint64_t n = VKLLM_MIN(step, size - done);
        st = slot_upload(gpu, gpu->next_slot, (const uint8_t *)src + done, b->block->buffer, b->offset + offset + done,
                         n);
        gpu->next_slot ^= 1;
        if (st) return st;
    }
    return gpu->upload_batch ? VKLLM_STATUS_OK : slots_wait(gpu);
}

vkllm_status vkllm__buffer_download(struct vkllm__buffer *b, uint64_t offset, void *dst, uint64_t size) {
    vkllm_status st = check_range(b, offset, size);
    if (st || size == 0) return st;
    if (b->gpu->compile_only) { /* nothing ran: zeros */
        memset(dst, 0, size);
        return VKLLM_STATUS_OK;
    }
    const uint8_t *src = vkllm__buffer_map(b);
    if (src) {
        memcpy(dst, src + offset, size);
        return VKLLM_STATUS_OK;
    }
    struct vkllm__gpu *gpu = b->gpu;
    if ((st = slots_wait(gpu)) || (st = ensure_staging(gpu, size))) return st;
    for (uint64_t done = 0, step = gpu->staging->size; done < size; done += step) {
        uint64_t n = VKLLM_MIN(step, size - done);
        st = copy_chunk(gpu, b->block->buffer, b->offset + offset + done, gpu->staging->block->buffer,
                        gpu->staging->offset, n);
        if (st) return st;
        memcpy((uint8_t *)dst + done, vkllm__buffer_map(gpu->staging), n);
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__buffer_fill_zero(struct vkllm__buffer *b) {
    uint8_t *p = vkllm__buffer_map(b);
    if (b->gpu->compile_only) return VKLLM_STATUS_OK;
    if (p) {
        memset(p, 0, b->size);
        return VKLLM_STATUS_OK;
    }
    struct vkllm__gpu *gpu = b->gpu;
    vkllm_status st = slots_wait(gpu);
    if (st || (st = vkllm__xfer_begin(gpu))) return st;
    gpu->vk.vkCmdFillBuffer(gpu->xfer_cmd, b->block->buffer, b->offset, b->reserved, 0);
    return vkllm__xfer_submit_wait(gpu);
}
