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
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
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
    VKLLM_VK_TRY(st, gpu->vk.vkCreateComputePipelines(gpu->device, gpu->pipeline_cache, 1, &ci, NULL, &p->pipeline), fail);
    p->next = s->pipelines;
    s->pipelines = p;
    *out = p->pipeline;
    return VKLLM_STATUS_OK;
fail:
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
            vkllm__free(p);
        }
        if (s->layout) gpu->vk.vkDestroyPipelineLayout(gpu->device, s->layout, NULL);
        if (s->set_layout) gpu->vk.vkDestroyDescriptorSetLayout(gpu->device, s->set_layout, NULL);
        if (s->module) gpu->vk.vkDestroyShaderModule(gpu->device, s->module, NULL);
        memset(s, 0, sizeof *s);
    }
    if (gpu->pipeline_cache) gpu->vk.vkDestroyPipelineCache(gpu->device, gpu->pipeline_cache, NULL);
    gpu->pipeline_cache = VK_NULL_HANDLE;
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
