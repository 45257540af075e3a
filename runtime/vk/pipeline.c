/* pipeline.c - compute pipelines from the embedded SPIR-V, created on first use for each
 * (shader, specialization constants) pair, and the VkPipelineCache persisted under the user's
 * cache directory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vk.h"

/* Module, descriptor set layout (n buffers of the table's kinds) and pipeline layout of a shader. */
static vkllm_status shader_state(struct vkllm__gpu *gpu, enum vkllm__shader_id id,
                                 struct vkllm__shader_state **out) {
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
    VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                      .pipeline = p->pipeline, .executableIndex = e};
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
        .stage = {
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
    VKLLM_VK_TRY(st, gpu->vk.vkCreateComputePipelines(gpu->device, gpu->pipeline_cache, 1, &ci, NULL, &p->pipeline), fail);
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

/* $XDG_CACHE_HOME/vkllm or ~/.cache/vkllm; the tuning's pipeline_cache 0 turns persistence off. */
static int cache_path(struct vkllm__gpu *gpu) {
    char dir[768];
    if (gpu->tuning.pipeline_cache == 0 || !vkllm__env_cache_dir(dir, sizeof dir)) return 0;
    char parent[768];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = 0;
        mkdir(parent, 0755);
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 0;
    snprintf(gpu->pipeline_cache_path, sizeof gpu->pipeline_cache_path,
             "%s/pipelines-%04x-%04x-%08x-%s.bin", dir, gpu->info.vendor_id, gpu->info.device_id,
             gpu->info.driver_version, vkllm_git_commit());
    return 1;
}

vkllm_status vkllm__pipeline_cache_load(struct vkllm__gpu *gpu) {
    vkllm_status st = VKLLM_STATUS_OK;
    if (gpu->compile_only) return st; /* no cache: every pipeline is built by the driver, and timed */
    void *data = NULL;
    size_t size = 0;
    if (cache_path(gpu)) {
        FILE *f = fopen(gpu->pipeline_cache_path, "rb");
        if (f) {
            if (fseek(f, 0, SEEK_END) == 0) {
                long n = ftell(f);
                /* The driver checks the header (vendor, device, UUID) and ignores a foreign blob;
                 * we check the size is sane before handing it over. */
                if (n > 32 && n < (64l << 20) && fseek(f, 0, SEEK_SET) == 0) {
                    data = vkllm__malloc((size_t)n);
                    if (data && fread(data, 1, (size_t)n, f) == (size_t)n) size = (size_t)n;
                }
            }
            fclose(f);
        }
    }
    if (size >= 32) {
        const uint32_t *h = data;
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(gpu->phys, &p);
        if (h[0] < 32 || h[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || h[2] != p.vendorID ||
            h[3] != p.deviceID || memcmp(&h[4], p.pipelineCacheUUID, VK_UUID_SIZE) != 0)
            size = 0;
    }
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = size,
        .pInitialData = size ? data : NULL,
    };
    VKLLM_VK_TRY(st, gpu->vk.vkCreatePipelineCache(gpu->device, &ci, NULL, &gpu->pipeline_cache), done);
done:
    vkllm__free(data);
    return st;
}

void vkllm__pipeline_cache_save(struct vkllm__gpu *gpu) {
    if (!gpu->pipeline_cache || !gpu->pipeline_cache_path[0]) return;
    size_t size = 0;
    if (gpu->vk.vkGetPipelineCacheData(gpu->device, gpu->pipeline_cache, &size, NULL) != VK_SUCCESS || !size)
        return;
    void *data = vkllm__malloc(size);
    if (!data) return;
    if (gpu->vk.vkGetPipelineCacheData(gpu->device, gpu->pipeline_cache, &size, data) == VK_SUCCESS) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", gpu->pipeline_cache_path, (int)getpid());
        FILE *f = fopen(tmp, "wb");
        if (f) {
            int ok = fwrite(data, 1, size, f) == size;
            ok &= fclose(f) == 0;
            if (ok) rename(tmp, gpu->pipeline_cache_path);
            else remove(tmp);
        }
    }
    vkllm__free(data);
}
