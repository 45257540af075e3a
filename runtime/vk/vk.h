/* vk.h - private to runtime/vk/: the Vulkan objects behind gpu.h. The only header that includes
 * volk.h. */
#ifndef VKLLM_VK_H
#define VKLLM_VK_H

#include <volk.h>

#include "gpu.h"
#include "internal.h"

/* VK_KHR_cooperative_matrix arrived in Vulkan headers 1.3.255; Debian 12 ships 1.3.239. The few
 * definitions we need for querying it follow the extension's specification. */
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VKLLM_STYPE_COOPMAT_FEATURES_KHR ((VkStructureType)1000506000)
#define VKLLM_STYPE_COOPMAT_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    uint32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    uint32_t scope; /* VkScopeKHR */
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(VkPhysicalDevice, uint32_t *,
                                                                                   VkCooperativeMatrixPropertiesKHR *);
#else
#define VKLLM_STYPE_COOPMAT_FEATURES_KHR VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
#define VKLLM_STYPE_COOPMAT_PROPERTIES_KHR VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
#endif

/* Map a failing VkResult to a status, record "file:line: call: VK_ERROR_..." and jump to label. */
vkllm_status vkllm__vk_status(VkResult r, const char *call, const char *file, int line);
const char *vkllm__vk_result_str(VkResult r);

#define VKLLM_VK_TRY(st, expr, label)                                \
    do {                                                             \
        VkResult vr_ = (expr);                                       \
        if (vr_ != VK_SUCCESS) {                                     \
            (st) = vkllm__vk_status(vr_, #expr, __FILE__, __LINE__); \
            goto label;                                              \
        }                                                            \
    } while (0)

/* One large VkDeviceMemory + a VkBuffer over all of it; sub-allocations carve ranges out of it. */
struct vkllm__range {
    uint64_t offset, size;
};

struct vkllm__block {
    VkDeviceMemory memory;
    VkBuffer buffer;
    uint64_t size;
    uint32_t type_index; /* memory type */
    enum vkllm__mem_kind kind;
    void *mapped;                   /* host pointer when host-visible and read back directly */
    void *wmapped;                  /* host pointer for writes only: a discrete GPU's device-local, host-visible
                                       (ReBAR) memory, write-combined and slow to read over the bus */
    struct vkllm__range *free_list; /* sorted by offset, coalesced */
    uint32_t n_free, cap_free;
    uint64_t used; /* bytes handed out */
    int shared;    /* holds small buffers (else one large buffer's own) */
};

struct vkllm__buffer {
    struct vkllm__gpu *gpu;
    struct vkllm__block *block;
    uint64_t offset;                 /* in the block */
    uint64_t size;                   /* bytes asked for */
    uint64_t reserved;               /* bytes taken from the block (aligned) */
    enum vkllm__mem_use use;         /* what it holds (vkllm__gpu_memory_by_use) */
    struct vkllm__texel_view *views; /* texel views made for bindings, freed with the buffer */
};

/* A VkBufferView over a range of a buffer, made on first use and kept for the buffer's life (a
 * recording that binds it may be replayed). */
struct vkllm__texel_view {
    uint64_t offset, range; /* bytes, relative to the buffer */
    VkFormat format;
    VkBufferView view;
    struct vkllm__texel_view *next;
};

/* A pipeline for one (shader, specialization constants, required subgroup size) triple, created
 * on first use. */
struct vkllm__pipeline {
    uint32_t subgroup; /* 0, or the subgroup size it requires with full subgroups */
    uint32_t n_spec;
    uint32_t spec[VKLLM__MAX_SPEC];
    VkPipeline pipeline;
    struct vkllm__pipeline *next;
    enum vkllm__shader_id shader;
    /* how it was built (vkllm__gpu_pipeline_info) */
    double compile_ms;
    int cache_hit;          /* 1 / 0 from VK_EXT_pipeline_creation_feedback, -1 unknown */
    uint32_t exec_subgroup; /* the executable's subgroup size (statistics), 0 unknown */
    uint32_t n_stats;
    struct vkllm_pipeline_stat *stats; /* (n_stats,) the driver's statistics, or NULL */
};

struct vkllm__shader_state {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    uint8_t access[VKLLM__MAX_BINDINGS]; /* VKLLM__ACCESS_* of each binding, from the SPIR-V */
    struct vkllm__pipeline *pipelines;
};

struct vkllm__gpu {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger; /* this instance's (device.c: g_loader_mu) */
    PFN_vkSubmitDebugUtilsMessageEXT submit_message;
    VkPhysicalDevice phys;
    VkDevice device;
    struct VolkDeviceTable vk;
    VkQueue queue;
    uint32_t queue_family;
    struct vkllm_device_info info;
    VkPhysicalDeviceMemoryProperties mem_props;
    int validate;
    int compile_only;            /* pipelines only: no memory, no submits (struct vkllm__gpu_params) */
    int capture_stats;           /* pipelines are built with VK_KHR_pipeline_executable_properties'
                                    statistics (compile-only contexts where it is offered) */
    int creation_feedback;       /* VK_EXT_pipeline_creation_feedback (or Vulkan 1.3) is there */
    int submitted;               /* a queue submit was made: closing waits for the device */
    struct vkllm__tuning tuning; /* read once at open (tuning.h); set per device by tests */
    uint32_t cpu_threads;        /* CPU devices: the threads that run workgroups (0 on GPUs) */
    uint64_t validation_count;   /* messages of warning or error severity */

    /* memory */
    struct vkllm__block **blocks;
    uint32_t n_blocks, cap_blocks;
    uint64_t block_size;                     /* default size of a new block */
    uint64_t shared_bytes;                   /* bytes of the blocks small buffers share */
    uint64_t heap_used[VK_MAX_MEMORY_HEAPS]; /* our accounting, bytes allocated per heap */
    uint64_t allocated, used;
    enum vkllm__mem_use mem_use;              /* what buffers allocated now hold (vkllm__gpu_set_mem_use) */
    uint64_t use_bytes[2][VKLLM__USE_COUNT_]; /* bytes handed out by use: [0] the device-local heap, [1] others */
    uint64_t expect;                          /* bytes the caller said it is about to allocate (vkllm__gpu_expect) */
    int type_rebar;                           /* device-local + host-visible type on the device-local heap, written
                                                 through a mapping (discrete GPUs with resizable BAR), or -1 */
    int type_device, type_host;               /* memory type index for each kind */
    /* from the tuning (vkllm__mem_apply_tuning) */
    uint64_t memory_limit;                     /* memory_limit_mb in bytes, 0 = the heap size */
    uint64_t budget_room;                      /* tests: pretend the budget leaves at most this much room (0: off) */
    int force_staging;                         /* 1: never map device blocks */
    uint64_t max_binding;                      /* bytes one binding may cover (<= maxStorageBufferRange) */
    uint64_t max_alloc;                        /* bytes one allocation may hold (<= maxMemoryAllocationSize) */
    struct vkllm__gpu_bind_limits bind_limits; /* uniform and texel bindings */
    uint64_t dev_max_texels;                   /* maxTexelBufferElements */

    /* staging for devices without host-visible device-local memory: two halves, each copied by
     * its own command buffer while the host fills the other */
    struct vkllm__buffer *staging;
    VkCommandPool pool;
    VkCommandBuffer xfer_cmd;
    VkFence xfer_fence;
    VkCommandBuffer slot_cmd[2];
    VkFence slot_fence[2];
    int slot_busy[2]; /* a copy from that half is in flight */
    uint32_t next_slot;
    int upload_batch; /* vkllm__gpu_upload_begin: uploads return with their last copy in flight */

    /* pipelines */
    VkPipelineCache pipeline_cache;
    char pipeline_cache_path[1024];
    struct vkllm__shader_state shaders[VKLLM__SHADER_COUNT_];
    struct vkllm__pipeline **built; /* (n_built,) every pipeline, in the order built */
    uint32_t n_built, cap_built;
};

/* The kind of binding i of a shader (see shaders/shaders.cmake): 's', 'u', 't' or 'f'. */
static inline char vkllm__binding_kind(const struct vkllm__shader_blob *blob, uint32_t i) {
    return blob->kinds && blob->kinds[0] ? blob->kinds[i] : 's';
}
static inline VkDescriptorType vkllm__binding_type(char kind) {
    return kind == 'u'                  ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
           : kind == 't' || kind == 'f' ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                        : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}
/* Texel format and bytes per texel of a texel binding kind. */
static inline VkFormat vkllm__texel_format(char kind) {
    return kind == 't' ? VK_FORMAT_R32G32B32A32_UINT : VK_FORMAT_R32_SFLOAT;
}
static inline uint64_t vkllm__texel_bytes(char kind) { return kind == 't' ? 16 : 4; }

/* profiles.c: clamp info to device profile id (a VKLLM__PROFILE_*, 0: none); INVALID_ARGUMENT for
 * an id without values. */
vkllm_status vkllm__profile_apply(long id, struct vkllm_device_info *info);
/* The vendor's name for a PCI vendor id ("unknown" when not known). */
const char *vkllm__vk_vendor_name(uint32_t id);

/* memory.c */
vkllm_status vkllm__mem_init(struct vkllm__gpu *gpu);
/* Take the memory and binding knobs of gpu->tuning (at init and whenever the tuning changes). */
void vkllm__mem_apply_tuning(struct vkllm__gpu *gpu);
void vkllm__mem_free_all(struct vkllm__gpu *gpu);
/* The texel view of [offset, offset + range) of b in format fmt (cached on b). */
vkllm_status vkllm__buffer_texel_view(const struct vkllm__buffer *b, uint64_t offset, uint64_t range, VkFormat fmt,
                                      VkBufferView *out);

/* pipeline.c */
vkllm_status vkllm__pipeline_get(struct vkllm__gpu *gpu, enum vkllm__shader_id id, uint32_t n_spec,
                                 const uint32_t *spec, uint32_t subgroup, VkPipeline *out);
void vkllm__pipelines_free(struct vkllm__gpu *gpu);
vkllm_status vkllm__pipeline_cache_load(struct vkllm__gpu *gpu);
void vkllm__pipeline_cache_save(struct vkllm__gpu *gpu);

/* command.c: one-shot command buffer for transfers (uses gpu->xfer_cmd / xfer_fence). */
vkllm_status vkllm__xfer_begin(struct vkllm__gpu *gpu);
vkllm_status vkllm__xfer_submit_wait(struct vkllm__gpu *gpu);

#endif /* VKLLM_VK_H */
