/* pipeline.c - compute pipelines from the embedded SPIR-V, created on first use for each
 * (shader, specialization constants) pair, and the VkPipelineCache persisted under the user's
 * cache directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os.h"
#include "vk.h"

/* Module, descriptor set layout (n buffers of the table's kinds) and pipeline layout of a shader. */
static vkllm_status shader_state(struct vkllm__gpu *gpu, enum vkllm__shader_id id, struct vkllm__shader_state **out) {
    struct vkllm__shader_state *s = &gpu->shaders[id];
    if (s->layout) {
        *out = s;
        return VKLLM_STATUS_OK;
    }
    const struct vkllm__shader_blob *blob = &vkllm__shader_blobs[id];
    vkllm_status st = VKLLM_STATUS_OK;
    if (blob->push_size > gpu->info.max_push_constants)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "shader %s needs %u bytes of push constants; the device has %u",
                          blob->name, blob->push_size, gpu->info.max_push_constants);
    if ((st = vkllm__spirv_binding_access(blob->code, *blob->size, blob->n_bindings, s->access))) goto fail;
    VkShaderModuleCreateInfo mci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = *blob->size,
        .pCode = blob->code,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreateShaderModule(gpu->device, &mci, NULL, &s->module), fail);
    VkDescriptorSetLayoutBinding b[VKLLM__MAX_BINDINGS];
    for (uint32_t i = 0; i < blob->n_bindings; i++)
        b[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = vkllm__binding_type(vkllm__binding_kind(blob, i)),
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = blob->n_bindings,
        .pBindings = b,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreateDescriptorSetLayout(gpu->device, &dci, NULL, &s->set_layout), fail);
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = blob->push_size};
    VkPipelineLayoutCreateInfo lci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &s->set_layout,
        .pushConstantRangeCount = blob->push_size ? 1 : 0,
        .pPushConstantRanges = &pcr,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreatePipelineLayout(gpu->device, &lci, NULL, &s->layout), fail);
    *out = s;
    return VKLLM_STATUS_OK;
fail:
    vkllm__err_prefix("shader %s: ", blob->name);
    return st;
}

/* The driver's statistics of p's compute executable (VK_KHR_pipeline_executable_properties). */
static void capture_stats(struct vkllm__gpu *gpu, struct vkllm__pipeline *p) {
    VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = p->pipeline};
    uint32_t n_exec = 0;
    if (gpu->vk.vkGetPipelineExecutablePropertiesKHR(gpu->device, &pi, &n_exec, NULL) != VK_SUCCESS || !n_exec) return;
    VkPipelineExecutablePropertiesKHR props[4];
    n_exec = VKLLM_MIN(n_exec, 4u);
    for (uint32_t i = 0; i < n_exec; i++)
        props[i] = (VkPipelineExecutablePropertiesKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
    VkResult r = gpu->vk.vkGetPipelineExecutablePropertiesKHR(gpu->device, &pi, &n_exec, props);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || !n_exec) return;
    uint32_t e = 0; /* the compute stage's executable (a compute pipeline has one) */
    while (e + 1 < n_exec && !(props[e].stages & VK_SHADER_STAGE_COMPUTE_BIT)) e++;
    p->exec_subgroup = props[e].subgroupSize;
    VkPipelineExecutableInfoKHR ei = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = p->pipeline, .executableIndex = e};
    uint32_t n = 0;
    if (gpu->vk.vkGetPipelineExecutableStatisticsKHR(gpu->device, &ei, &n, NULL) != VK_SUCCESS || !n) return;
    VkPipelineExecutableStatisticKHR *st = vkllm__calloc(n, sizeof *st);
    p->stats = vkllm__calloc(VKLLM_MIN(n, VKLLM_MAX_PIPELINE_STATS), sizeof *p->stats);
    if (!st || !p->stats) goto done;
    for (uint32_t i = 0; i < n; i++) st[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
    r = gpu->vk.vkGetPipelineExecutableStatisticsKHR(gpu->device, &ei, &n, st);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) goto done;
    for (uint32_t i = 0; i < n && p->n_stats < VKLLM_MAX_PIPELINE_STATS; i++) {
        struct vkllm_pipeline_stat *o = &p->stats[p->n_stats++];
        snprintf(o->name, sizeof o->name, "%.47s", st[i].name);
        snprintf(o->description, sizeof o->description, "%.127s", st[i].description);
        switch (st[i].format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: o->value = st[i].value.b32; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: o->value = (double)st[i].value.i64; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: o->value = (double)st[i].value.u64; break;
        default: o->value = st[i].value.f64; break;
        }
    }
done:
    vkllm__free(st);
}

/* Note p in the build order (vkllm__gpu_pipeline_info). */
static vkllm_status remember(struct vkllm__gpu *gpu, struct vkllm__pipeline *p) {
    if (gpu->n_built == gpu->cap_built) {
        uint32_t cap = gpu->cap_built ? gpu->cap_built * 2 : 64;
        struct vkllm__pipeline **nb = vkllm__realloc(gpu->built, cap * sizeof *nb);
        if (!nb) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        gpu->built = nb;
        gpu->cap_built = cap;
    }
    gpu->built[gpu->n_built++] = p;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__pipeline_get(struct vkllm__gpu *gpu, enum vkllm__shader_id id, uint32_t n_spec,
                                 const uint32_t *spec, uint32_t subgroup, VkPipeline *out) {
    if ((unsigned)id >= VKLLM__SHADER_COUNT_)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "unknown shader id %d", (int)id);
    if (n_spec > VKLLM__MAX_SPEC)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "too many specialization constants (%u)", n_spec);
    struct vkllm__shader_state *s = NULL;
    vkllm_status st = shader_state(gpu, id, &s);
    if (st) return st;
    for (struct vkllm__pipeline *p = s->pipelines; p; p = p->next) {
        if (p->n_spec == n_spec && p->subgroup == subgroup && !memcmp(p->spec, spec, n_spec * sizeof *spec)) {
            *out = p->pipeline;
            return VKLLM_STATUS_OK;
        }
    }
    struct vkllm__pipeline *p = vkllm__calloc(1, sizeof *p);
    if (!p) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    if ((st = remember(gpu, p))) {
        vkllm__free(p);
        return st;
    }
    p->shader = id;
    p->cache_hit = -1;
    p->n_spec = n_spec;
    p->subgroup = subgroup;
    if (n_spec) memcpy(p->spec, spec, n_spec * sizeof *spec);
    VkSpecializationMapEntry map[VKLLM__MAX_SPEC];
    for (uint32_t i = 0; i < n_spec; i++)
        map[i] = (VkSpecializationMapEntry){.constantID = i, .offset = i * 4, .size = 4};
    VkSpecializationInfo si = {
        .mapEntryCount = n_spec,
        .pMapEntries = map,
        .dataSize = n_spec * 4,
        .pData = p->spec,
    };
    /* A subgroup reduction's lanes must all be there: its size asked for, subgroups full. */
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT rss = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT,
        .requiredSubgroupSize = subgroup,
    };
    /* compile-only: whether the driver's cache answered, and its statistics */
    VkPipelineCreationFeedbackEXT fb = {0}, fb_stage = {0};
    VkPipelineCreationFeedbackCreateInfoEXT fci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO_EXT,
        .pPipelineCreationFeedback = &fb,
        .pipelineStageCreationFeedbackCount = 1,
        .pPipelineStageCreationFeedbacks = &fb_stage,
    };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .pNext = gpu->creation_feedback ? &fci : NULL,
        .flags = gpu->capture_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .pNext = subgroup ? &rss : NULL,
                .flags = subgroup ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT : 0,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = s->module,
                .pName = "main",
                .pSpecializationInfo = n_spec ? &si : NULL,
            },
        .layout = s->layout,
    };
    uint64_t t0 = vkllm__now_ns();
    VKLLM_VK_TRY(st, gpu->vk.vkCreateComputePipelines(gpu->device, gpu->pipeline_cache, 1, &ci, NULL, &p->pipeline),
                 fail);
    p->compile_ms = (double)(vkllm__now_ns() - t0) / 1e6;
    if (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT_EXT)
        p->cache_hit = (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT_EXT) != 0;
    if (gpu->capture_stats) capture_stats(gpu, p);
    p->next = s->pipelines;
    s->pipelines = p;
    *out = p->pipeline;
    return VKLLM_STATUS_OK;
fail:
    gpu->n_built--;
    vkllm__free(p);
    vkllm__err_prefix("shader %s: ", vkllm__shader_blobs[id].name);
    return st;
}

void vkllm__pipelines_free(struct vkllm__gpu *gpu) {
    for (int i = 0; i < VKLLM__SHADER_COUNT_; i++) {
        struct vkllm__shader_state *s = &gpu->shaders[i];
        for (struct vkllm__pipeline *p = s->pipelines, *next; p; p = next) {
            next = p->next;
            gpu->vk.vkDestroyPipeline(gpu->device, p->pipeline, NULL);
            vkllm__free(p->stats);
            vkllm__free(p);
        }
        if (s->layout) gpu->vk.vkDestroyPipelineLayout(gpu->device, s->layout, NULL);
        if (s->set_layout) gpu->vk.vkDestroyDescriptorSetLayout(gpu->device, s->set_layout, NULL);
        if (s->module) gpu->vk.vkDestroyShaderModule(gpu->device, s->module, NULL);
        memset(s, 0, sizeof *s);
    }
    if (gpu->pipeline_cache) gpu->vk.vkDestroyPipelineCache(gpu->device, gpu->pipeline_cache, NULL);
    gpu->pipeline_cache = VK_NULL_HANDLE;
    vkllm__free(gpu->built);
    gpu->built = NULL;
    gpu->n_built = gpu->cap_built = 0;
}

uint32_t vkllm__gpu_pipeline_count(const struct vkllm__gpu *gpu) { return gpu->n_built; }

vkllm_status vkllm__gpu_pipeline_info(const struct vkllm__gpu *gpu, uint32_t i, struct vkllm_pipeline_info *out) {
    if (i >= gpu->n_built) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "pipeline %u of %u", i, gpu->n_built);
    const struct vkllm__pipeline *p = gpu->built[i];
    memset(out, 0, sizeof *out);
    snprintf(out->shader, sizeof out->shader, "%s", vkllm__shader_blobs[p->shader].name);
    out->n_spec = VKLLM_MIN(p->n_spec, (uint32_t)VKLLM_ARRAY_LEN(out->spec));
    memcpy(out->spec, p->spec, out->n_spec * sizeof *p->spec);
    out->required_subgroup = p->subgroup;
    out->subgroup_size = p->exec_subgroup;
    out->compile_ms = p->compile_ms;
    out->cache_hit = p->cache_hit;
    out->n_stats = p->n_stats;
    if (p->n_stats) memcpy(out->stats, p->stats, p->n_stats * sizeof *p->stats);
    return VKLLM_STATUS_OK;
}

// --- persisted pipeline cache --------------------------------------------------------------

/* $XDG_CACHE_HOME/vkllm or ~/.cache/vkllm (Windows: %LOCALAPPDATA%\vkllm); the tuning's
 * pipeline_cache 0 turns persistence off. */
static int cache_path(struct vkllm__gpu *gpu) {
    char dir[768];
    if (gpu->tuning.pipeline_cache == 0 || !vkllm__env_cache_dir(dir, sizeof dir)) return 0;
    char parent[768];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = 0;
        vkllm__os_mkdir(parent);
    }
    if (vkllm__os_mkdir(dir) != 0 && errno != EEXIST) return 0;
    snprintf(gpu->pipeline_cache_path, sizeof gpu->pipeline_cache_path, "%s/pipelines-%04x-%04x-%08x-%s.bin", dir,
             gpu->info.vendor_id, gpu->info.device_id, gpu->info.driver_version, vkllm_git_commit());
    return 1;
}

/* The file: this header, then the driver's data (vkGetPipelineCacheData: its own
 * VkPipelineCacheHeaderVersionOne, then what the driver keeps). The spec requires initial data to
 * be what vkGetPipelineCacheData returned: drivers check their header and may trust the rest, so
 * a truncated, corrupted or foreign file must never reach them. Everything is checked here first
 * (A. Kapoulkine, "Robust pipeline cache serialization", 2019): size, hash, device, driver and
 * ABI, and the driver's own header. Host byte order (the file never leaves the machine). */
struct cache_file_header {
    char magic[8];        /* "VKLLMPC1" */
    uint32_t header_size; /* sizeof(struct cache_file_header) */
    uint32_t abi;         /* sizeof(void *): a 32-bit build's driver data differs */
    uint64_t data_size;   /* bytes of driver data after the header */
    uint64_t data_hash;   /* FNV-1a (64-bit) of them */
    uint32_t vendor_id, device_id, driver_version, reserved;
    uint8_t uuid[VK_UUID_SIZE]; /* pipelineCacheUUID */
};
_Static_assert(sizeof(struct cache_file_header) == 64, "the pipeline cache file header is 64 bytes");
#define CACHE_MAGIC "VKLLMPC1"
#define CACHE_MAX_BYTES (256ull << 20)

static uint64_t fnv1a64(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void header_for(const VkPhysicalDeviceProperties *p, const void *data, size_t size,
                       struct cache_file_header *h) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CACHE_MAGIC, 8);
    h->header_size = sizeof *h;
    h->abi = (uint32_t)sizeof(void *);
    h->data_size = size;
    h->data_hash = fnv1a64(data, size);
    h->vendor_id = p->vendorID, h->device_id = p->deviceID, h->driver_version = p->driverVersion;
    memcpy(h->uuid, p->pipelineCacheUUID, VK_UUID_SIZE);
}

/* NULL when file[0..n) is a cache this device wrote, else why not. */
static const char *cache_problem(const uint8_t *file, size_t n, const VkPhysicalDeviceProperties *p) {
    struct cache_file_header h, want;
    if (n < sizeof h) return "shorter than its header";
    memcpy(&h, file, sizeof h);
    if (memcmp(h.magic, CACHE_MAGIC, 8) || h.header_size != sizeof h) return "not a vkllm pipeline cache file";
    if (h.abi != sizeof(void *)) return "written by a build of another pointer size";
    if (h.data_size != n - sizeof h) return "truncated or extended (its size is not the one recorded)";
    const uint8_t *data = file + sizeof h;
    header_for(p, data, (size_t)h.data_size, &want);
    if (h.vendor_id != want.vendor_id || h.device_id != want.device_id || memcmp(h.uuid, want.uuid, VK_UUID_SIZE))
        return "written for another device";
    if (h.driver_version != want.driver_version) return "written by another driver version";
    if (h.data_hash != want.data_hash) return "corrupted (its hash does not match)";
    /* the driver's own header, as vkGetPipelineCacheData wrote it */
    uint32_t d[4 + VK_UUID_SIZE / 4];
    if (h.data_size < sizeof d) return "the driver's data is shorter than its header";
    memcpy(d, data, sizeof d);
    if (d[0] < sizeof d || d[0] > h.data_size || d[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || d[2] != p->vendorID ||
        d[3] != p->deviceID || memcmp(&d[4], p->pipelineCacheUUID, VK_UUID_SIZE))
        return "the driver's header is not this device's";
    return NULL;
}

/* The file's bytes (at most CACHE_MAX_BYTES), or NULL when there is none to read: absent, or not
 * a regular file (a FIFO must not block the device's opening; /dev/null reads as nothing). */
static uint8_t *read_cache_file(const char *path, size_t *n) {
    int fd = vkllm__os_open_read(path); /* no FIFO blocks it; binary on Windows */
    if (fd < 0) return NULL;
    struct stat sb;
    uint8_t *data = NULL;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode))
        vkllm__log(VKLLM_LOG_INFO, "pipeline cache %s: not a regular file: not read, not written", path);
    else if (sb.st_size > 0 && (uint64_t)sb.st_size <= CACHE_MAX_BYTES && (data = vkllm__malloc((size_t)sb.st_size))) {
        size_t got = 0;
        while (got < (size_t)sb.st_size) {
            ssize_t k = read(fd, data + got, (size_t)sb.st_size - got);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            got += (size_t)k;
        }
        *n = got; /* short when the file shrank meanwhile: cache_problem sees the size */
    }
    close(fd);
    return data;
}

vkllm_status vkllm__pipeline_cache_load(struct vkllm__gpu *gpu) {
    vkllm_status st = VKLLM_STATUS_OK;
    if (gpu->compile_only) return st; /* no cache: every pipeline is built by the driver, and timed */
    uint8_t *file = NULL;
    size_t n = 0, size = 0;
    if (cache_path(gpu) && (file = read_cache_file(gpu->pipeline_cache_path, &n))) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(gpu->phys, &p);
        const char *why = cache_problem(file, n, &p);
        if (why)
            vkllm__log(VKLLM_LOG_INFO,
                       "pipeline cache %s: %s: ignored; the pipelines are built again and the "
                       "file rewritten",
                       gpu->pipeline_cache_path, why);
        else size = n - sizeof(struct cache_file_header);
        if (!why)
            vkllm__log(VKLLM_LOG_DEBUG, "pipeline cache %s: %zu bytes of the driver's data", gpu->pipeline_cache_path,
                       size);
    }
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = size,
        .pInitialData = size ? file + sizeof(struct cache_file_header) : NULL,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreatePipelineCache(gpu->device, &ci, NULL, &gpu->pipeline_cache), done);
done:
    vkllm__free(file);
    return st;
}

/* Write the file through a temporary one in its folder and a rename, so that a reader never sees
 * half of it. Only a regular file (or none) is replaced: a device node, FIFO or socket at the path
 * (e.g. a link to /dev/null to keep no cache) is left alone, as a rename would put a file in its
 * place. Nothing is left behind when anything fails. */
static void write_cache_file(const char *path, const struct cache_file_header *h, const void *data, size_t size) {
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) return; /* read_cache_file said so */
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        vkllm__log(VKLLM_LOG_INFO, "pipeline cache %s: cannot create a temporary file: %s", path, strerror(errno));
        return;
    }
    FILE *f = fdopen(fd, "wb");
    int ok = f && fwrite(h, sizeof *h, 1, f) == 1 && fwrite(data, 1, size, f) == size;
    ok &= f ? fclose(f) == 0 : close(fd) == 0;
    const char *what = !ok                                 ? "cannot write it"
                       : vkllm__os_replace(tmp, path) != 0 ? "cannot rename it into place"
                                                           : NULL;
    if (!what) return;
    vkllm__log(VKLLM_LOG_INFO, "pipeline cache %s: %s: %s (not saved)", path, what, strerror(errno));
    remove(tmp);
}

void vkllm__pipeline_cache_save(struct vkllm__gpu *gpu) {
    if (!gpu->pipeline_cache || !gpu->pipeline_cache_path[0]) return;
    size_t size = 0;
    if (gpu->vk.vkGetPipelineCacheData(gpu->device, gpu->pipeline_cache, &size, NULL) != VK_SUCCESS || !size) return;
    void *data = vkllm__malloc(size);
    if (!data) return;
    if (gpu->vk.vkGetPipelineCacheData(gpu->device, gpu->pipeline_cache, &size, data) == VK_SUCCESS) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(gpu->phys, &p);
        struct cache_file_header h;
        header_for(&p, data, size, &h);
        write_cache_file(gpu->pipeline_cache_path, &h, data, size);
    }
    vkllm__free(data);
}
