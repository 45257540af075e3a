/* profiles.c - device profiles (VKLLM_DEVICE_PROFILE, the tuning knob device_profile; names in
 * base/tuning.h): what vkllm believes about a device, clamped to a real GPU's published features
 * and limits, so that the runtime takes the code paths it would take on that GPU whatever driver
 * runs underneath (lavapipe in CI). A profile only removes: every limit is the smaller of the
 * device's and the profile's (an offset alignment the larger), every feature the device's and the
 * profile's; the device type is the profile's (it chooses between the CPU-device and the GPU
 * paths), and so is the vendor id (the choices made per vendor, e.g. matvec_x8's default, follow
 * it).
 *
 * What a profile cannot change: the subgroup size the driver really runs. Subgroup size control is
 * kept only where the device's range and the profile's overlap (then narrowed to the overlap);
 * otherwise it is off and the device's own fixed size is what reductions may rely on. */
#include <stdio.h>

#include "vk.h"

struct profile {
    const char *source; /* where the values come from */
    uint32_t vendor;    /* the GPU's PCI vendor id (per-vendor choices follow it); 0: keep */
    int set_type;       /* 1: the device type below replaces the device's */
    vkllm_device_type type;
    uint32_t api_version;    /* at most this */
    uint32_t sg_min, sg_max; /* subgroup sizes compute may ask for (with control) */
    int sg_control;          /* subgroup size control with full subgroups, for compute */
    uint32_t sg_ops;         /* VKLLM_SUBGROUP_* the profile has in compute */
    int fp16, int8, int64, storage16, storage8, dot, dot_accel, coopmat, bda;
    uint64_t storage_range, max_alloc; /* bytes; 0: no clamp */
    uint32_t shared, wg_invocations, wg_x, push;
    uint64_t texels, uniform;
    /* offset alignments (minStorage/Texel/UniformBufferOffsetAlignment), bytes; 0: the device's.
     * Larger is stricter: the device's is raised to these, never lowered. */
    uint64_t align_storage, align_texel, align_uniform;
    uint64_t device_local; /* bytes of the device-local heap(s); 0: no clamp */
    int unified;           /* 1: device-local memory is host-visible (integrated GPUs) */
};

#define SG_ALL                                                                                        \
    (VKLLM_SUBGROUP_BASIC | VKLLM_SUBGROUP_VOTE | VKLLM_SUBGROUP_ARITHMETIC | VKLLM_SUBGROUP_BALLOT | \
     VKLLM_SUBGROUP_SHUFFLE | VKLLM_SUBGROUP_SHUFFLE_RELATIVE | VKLLM_SUBGROUP_CLUSTERED | VKLLM_SUBGROUP_QUAD)
#define GIB (1ull << 30)

#define SG_ANDROID                                                                                    \
    (VKLLM_SUBGROUP_BASIC | VKLLM_SUBGROUP_VOTE | VKLLM_SUBGROUP_ARITHMETIC | VKLLM_SUBGROUP_BALLOT | \
     VKLLM_SUBGROUP_SHUFFLE | VKLLM_SUBGROUP_SHUFFLE_RELATIVE)
#define DISCRETE .set_type = 1, .type = VKLLM_DEVICE_DISCRETE_GPU
#define INTEGRATED .set_type = 1, .type = VKLLM_DEVICE_INTEGRATED_GPU

/* The values, each from a published report of the named GPU and driver. "gpuinfo export" is a
 * vulkan.gpuinfo.org report kept in github.com/KhronosGroup/Vulkan-Profiles (profiles/LunarG/...);
 * "llama.cpp line" is the device line ggml-vulkan prints (warp size = subgroupSize, shared
 * memory = maxComputeSharedMemorySize), quoted in public llama.cpp issues. Where no report of the
 * exact GPU was found the value is the sibling's (same architecture and driver) or, for the two
 * phones, the floor of Khronos' VP_ANDROID_baseline_2022 profile, which every Android device
 * since 2022 meets: a profile is never more generous than the evidence. */
// clang-format off
static const struct profile k_profiles[VKLLM__PROFILE_COUNT_] = {
    /* GeForce RTX 3060 Ti, driver 517.22 (gpuinfo export, VP_LUNARG_desktop_max_2023), checked
     * against RTX 3090 / 3070 llama.cpp lines (Linux 580/590: warp 32, shared 49152, int dot,
     * KHR_coopmat on current drivers). Workgroup size x from RTX 4070 551.61. Device-local VRAM
     * is not host-visible (only a 246 MiB BAR heap is, RTX 3070/2080 vulkaninfo). Offset
     * alignments 16 / 16 / 64 (storage, texel, uniform) in the 517.22 and RTX 4070 551.61 exports. */
    [VKLLM__PROFILE_NVIDIA_AMPERE] = {
        .source = "RTX 3060 Ti 517.22 gpuinfo export; RTX 3090/3070 llama.cpp lines",
        .vendor = 0x10de,
        DISCRETE, .api_version = VK_MAKE_API_VERSION(0, 1, 3, 224), .sg_min = 32, .sg_max = 32, .sg_control = 1,
        .sg_ops = SG_ALL, .fp16 = 1, .int8 = 1, .int64 = 1, .storage16 = 1, .storage8 = 1, .dot = 1,
        .dot_accel = 1, .coopmat = 1, .bda = 1, .storage_range = 4294967295ull, .max_alloc = 4292870144ull,
        .shared = 49152, .wg_invocations = 1024, .wg_x = 1024, .push = 256, .texels = 134217728,
        .uniform = 65536, .device_local = 24 * GIB,
        .align_storage = 16, .align_texel = 16, .align_uniform = 64, .unified = 0,
    },
    /* Radeon RX 7900 XTX on RADV: llama.cpp line (warp 64, shared 65536, int dot, KHR_coopmat);
     * the rest from the RX 7800 XT (same gfx11) RADV 24.1 gpuinfo export. Where AMD's Windows
     * driver is lower (shared 32768, push 128, allocation 2 GiB: RX 7800 XT 2.0.294 export) the
     * lower value is taken, so the profile holds on either driver; likewise the uniform offset
     * alignment, 16 on AMD's driver (4 on RADV; storage and texel 4 on both). */
    [VKLLM__PROFILE_AMD_RDNA3] = {
        .source = "RX 7800 XT RADV 24.1 and AMD 2.0.294 gpuinfo exports; RX 7900 XTX llama.cpp line",
        .vendor = 0x1002,
        DISCRETE, .api_version = VK_MAKE_API_VERSION(0, 1, 3, 270), .sg_min = 32, .sg_max = 64, .sg_control = 1,
        .sg_ops = SG_ALL, .fp16 = 1, .int8 = 1, .int64 = 1, .storage16 = 1, .storage8 = 1, .dot = 1,
        .dot_accel = 1, .coopmat = 1, .bda = 1, .storage_range = 4294967295ull, .max_alloc = 2 * GIB,
        .shared = 32768, .wg_invocations = 1024, .wg_x = 1024, .push = 128, .texels = 536870912,
        .uniform = 65536, .device_local = 24 * GIB,
        .align_storage = 4, .align_texel = 4, .align_uniform = 16, .unified = 0,
    },
    /* Radeon RX Vega 56/64 on RADV: llama.cpp line (warp 64, shared 65536, fp16, int dot not
     * accelerated, no coopmat); RADV has no required subgroup size below GFX10
     * (requiredSubgroupSizeStages = 0: radv_physical_device.c), so no size control for compute;
     * other limits from the RX 570/580 RADV gpuinfo exports (same GFX8/9 code path; offset
     * alignments 4, as every RADV export). */
    [VKLLM__PROFILE_AMD_GCN5] = {
        .source = "Vega 56 RADV llama.cpp line; RX 570/580 RADV gpuinfo exports; RADV source",
        .vendor = 0x1002,
        DISCRETE, .api_version = VK_MAKE_API_VERSION(0, 1, 3, 0), .sg_min = 64, .sg_max = 64, .sg_control = 0,
        .sg_ops = SG_ALL, .fp16 = 1, .int8 = 1, .int64 = 1, .storage16 = 1, .storage8 = 1, .dot = 1,
        .dot_accel = 0, .coopmat = 0, .bda = 1, .storage_range = 4294967295ull, .max_alloc = 4294967292ull,
        .shared = 65536, .wg_invocations = 1024, .wg_x = 1024, .push = 256, .texels = 536870912,
        .uniform = 65536, .device_local = 8 * GIB,
        .align_storage = 4, .align_texel = 4, .align_uniform = 4, .unified = 0,
    },
    /* Core Ultra (Meteor Lake) Arc Graphics on ANV: llama.cpp line (uma, warp 32, int dot);
     * shared memory 49152 as ANV 26.1 reports on Xe (the MTL line's 65536 is an older Mesa);
     * other limits from the A770 / TGL ANV 26.1 gpuinfo exports and ANV source; storage range
     * and allocation from Intel's Windows driver (Arc 140T export: 1073741820, 4294901760), the
     * lower. No cooperative matrix (no XMX on Xe-LPG). One device-local heap, host-visible.
     * Offset alignments: Windows' 64 for all three (ANV: 4 / 16 / 64), the stricter. */
    [VKLLM__PROFILE_INTEL_XE_LPG] = {
        .source = "Meteor Lake ANV llama.cpp line; A770/TGL ANV 26.1 and Arc 140T gpuinfo exports",
        .vendor = 0x8086,
        INTEGRATED, .api_version = VK_MAKE_API_VERSION(0, 1, 3, 0), .sg_min = 8, .sg_max = 32, .sg_control = 1,
        .sg_ops = SG_ALL, .fp16 = 1, .int8 = 1, .int64 = 1, .storage16 = 1, .storage8 = 1, .dot = 1,
        .dot_accel = 1, .coopmat = 0, .bda = 1, .storage_range = 1073741820ull, .max_alloc = 4294901760ull,
        .shared = 49152, .wg_invocations = 1024, .wg_x = 1024, .push = 256, .texels = 134217728,
        .uniform = 134217724, .device_local = 0,
        .align_storage = 64, .align_texel = 64, .align_uniform = 64, .unified = 1,
    },
    /* Apple M1 on MoltenVK 1.4.1 (gpuinfo export, macOS 26.5.1): subgroup 4..32 with size
     * control but no required size for compute (requiredSubgroupSizeStages empty), so reductions
     * cannot rely on a size; int dot not accelerated; one device-local heap, host-visible (M1
     * vulkaninfo, MoltenVK issue 2292). The 1.2.7 export allows 8 GiB allocations; 1.4.1 4 GiB.
     * Offset alignments 16 in both exports. */
    [VKLLM__PROFILE_APPLE_M1_MOLTENVK] = {
        .source = "Apple M1 MoltenVK 1.4.1 and 1.2.7 gpuinfo exports; M1 vulkaninfo memory",
        .vendor = 0x106b,
        INTEGRATED, .api_version = VK_MAKE_API_VERSION(0, 1, 2, 275), .sg_min = 4, .sg_max = 32, .sg_control = 0,
        .sg_ops = SG_ALL & ~VKLLM_SUBGROUP_CLUSTERED, .fp16 = 1, .int8 = 1, .int64 = 1, .storage16 = 1,
        .storage8 = 1, .dot = 1, .dot_accel = 0, .coopmat = 0, .bda = 1, .storage_range = 4294967295ull,
        .max_alloc = 4294967296ull, .shared = 32768, .wg_invocations = 1024, .wg_x = 1024, .push = 4096,
        .texels = 67108864, .uniform = 65536, .device_local = 0,
        .align_storage = 16, .align_texel = 16, .align_uniform = 16, .unified = 1,
    },
    /* Mali-G710 (Pixel 7, Arm's driver). No public report of the G710 was found: fp16, shared
     * 32768 and no coopmat are the Mali-G720's (llama.cpp lines, Arm r44p1); the API version is
     * the G610's (r32p1 vulkaninfo, 1.1.177); subgroup operations beyond basic, storage widths,
     * dot products and all other limits are unknown, so they are VP_ANDROID_baseline_2022's
     * floor (storage range 256 MiB, 128 invocations, push 128, 65536 texels, offset alignments
     * 256) and "no". */
    [VKLLM__PROFILE_MALI_G710] = {
        .source = "Mali-G720/G610 reports (no G710 report found); VP_ANDROID_baseline_2022 floor",
        .vendor = 0x13b5,
        INTEGRATED, .api_version = VK_MAKE_API_VERSION(0, 1, 1, 177), .sg_min = 16, .sg_max = 16, .sg_control = 0,
        .sg_ops = VKLLM_SUBGROUP_BASIC, .fp16 = 1, .storage_range = 1ull << 28, .max_alloc = GIB, .shared = 32768,
        .wg_invocations = 128, .wg_x = 128, .push = 128, .texels = 65536, .uniform = 65536, .device_local = 0,
        .align_storage = 256, .align_texel = 256, .align_uniform = 256, .unified = 1,
    },
    /* Adreno 740 (Snapdragon 8 Gen 2, Qualcomm's driver). No public report of the 740 on that
     * driver was found: subgroup 64 (Adreno 750 llama.cpp line; 64..128 with size control on
     * the proprietary Adreno 620), its six subgroup operations (no clustered or quad: Adreno 620
     * vulkaninfo), fp16/int8 and 16/8-bit storage buffers (llama.cpp issue 6401 on Adreno 7xx);
     * shared memory 32768 (Adreno 750 on Turnip); the other limits VP_ANDROID_baseline_2022's
     * (offset alignments 256: no report of Qualcomm's driver for a known Adreno was found). */
    [VKLLM__PROFILE_ADRENO_740] = {
        .source = "Adreno 750/620 reports (no 740 report found); VP_ANDROID_baseline_2022 floor",
        .vendor = 0x5143,
        INTEGRATED, .api_version = VK_MAKE_API_VERSION(0, 1, 1, 0), .sg_min = 64, .sg_max = 128, .sg_control = 1,
        .sg_ops = SG_ANDROID, .fp16 = 1, .int8 = 1, .storage16 = 1, .storage8 = 1, .storage_range = 1ull << 28,
        .max_alloc = GIB, .shared = 32768, .wg_invocations = 128, .wg_x = 128, .push = 128, .texels = 65536,
        .uniform = 65536, .device_local = 0,
        .align_storage = 256, .align_texel = 256, .align_uniform = 256, .unified = 1,
    },
    /* The minimum every Vulkan 1.1 implementation guarantees: the Vulkan specification's table of
     * required limits (chapter "Limits", "Required Limits": offset alignments 256, the largest
     * a device may report; maxMemoryAllocationSize from
     * VkPhysicalDeviceMaintenance3Properties) and the subgroup requirements of Vulkan 1.1
     * (supportedStages includes compute, supportedOperations includes basic). No optional
     * feature; no device-local host-visible memory type is required, so none is assumed. */
    [VKLLM__PROFILE_VULKAN_1_1_MINIMAL] = {
        .source = "Vulkan 1.1 specification, Required Limits; VkPhysicalDeviceSubgroupProperties requirements",
        .api_version = VK_API_VERSION_1_1, .sg_min = 1, .sg_max = 128, .sg_control = 0,
        .sg_ops = VKLLM_SUBGROUP_BASIC, .storage_range = 1ull << 27, .max_alloc = GIB, .shared = 16384,
        .wg_invocations = 128, .wg_x = 128, .push = 128, .texels = 65536, .uniform = 16384,
        .align_storage = 256, .align_texel = 256, .align_uniform = 256, .unified = 0,
    },
};
// clang-format on

static const char *const k_names[VKLLM__PROFILE_COUNT_] = {[VKLLM__PROFILE_NONE] = "none",
#define VKLLM__PROFILE_NAMES_(id, name) [VKLLM__PROFILE_##id] = name,
                                                           VKLLM__DEVICE_PROFILES(VKLLM__PROFILE_NAMES_)
#undef VKLLM__PROFILE_NAMES_
};

static uint64_t min_nz(uint64_t dev, uint64_t prof) { return prof && prof < dev ? prof : dev; }
static uint64_t max_nz(uint64_t dev, uint64_t prof) { return prof > dev ? prof : dev; }

vkllm_status vkllm__profile_apply(long id, struct vkllm_device_info *info) {
    if (id == VKLLM__PROFILE_NONE) return VKLLM_STATUS_OK;
    if (id < 0 || id >= VKLLM__PROFILE_COUNT_ || !k_profiles[id].source)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "there is no device profile %ld (VKLLM_DEVICE_PROFILE: 0..%d or a name)", id,
                          VKLLM__PROFILE_COUNT_ - 1);
    const struct profile *p = &k_profiles[id];
    snprintf(info->profile, sizeof info->profile, "%s", k_names[id]);
    if (p->set_type) info->type = p->type;
    if (p->vendor) {
        info->vendor_id = p->vendor;
        snprintf(info->vendor, sizeof info->vendor, "%s", vkllm__vk_vendor_name(p->vendor));
    }
    info->api_version = (uint32_t)min_nz(info->api_version, p->api_version);
    /* subgroups: size control only where the ranges overlap */
    uint32_t lo = VKLLM_MAX(info->subgroup_size_min, p->sg_min), hi = VKLLM_MIN(info->subgroup_size_max, p->sg_max);
    if (info->subgroup_size_control && p->sg_control && lo <= hi)
        info->subgroup_size_min = lo, info->subgroup_size_max = hi;
    else info->subgroup_size_control = 0;
    info->subgroup_ops &= p->sg_ops;
    info->fp16_arith &= p->fp16, info->int8_arith &= p->int8, info->int64_arith &= p->int64;
    info->storage_16bit &= p->storage16, info->storage_8bit &= p->storage8;
    info->integer_dot_product &= p->dot, info->integer_dot_product_accel &= p->dot && p->dot_accel;
    info->buffer_device_address &= p->bda;
    info->cooperative_matrix &= p->coopmat;
    if (!info->cooperative_matrix) info->coopmat_shape_count = 0;
    info->max_storage_buffer_range = min_nz(info->max_storage_buffer_range, p->storage_range);
    info->max_memory_allocation_size = min_nz(info->max_memory_allocation_size, p->max_alloc);
    info->max_shared_memory = (uint32_t)min_nz(info->max_shared_memory, p->shared);
    info->max_workgroup_invocations = (uint32_t)min_nz(info->max_workgroup_invocations, p->wg_invocations);
    info->max_workgroup_size[0] = (uint32_t)min_nz(info->max_workgroup_size[0], p->wg_x);
    info->max_push_constants = (uint32_t)min_nz(info->max_push_constants, p->push);
    info->max_texel_buffer_elements = min_nz(info->max_texel_buffer_elements, p->texels);
    info->max_uniform_buffer_range = min_nz(info->max_uniform_buffer_range, p->uniform);
    info->min_storage_buffer_offset_alignment = max_nz(info->min_storage_buffer_offset_alignment, p->align_storage);
    info->min_texel_buffer_offset_alignment = max_nz(info->min_texel_buffer_offset_alignment, p->align_texel);
    info->min_uniform_buffer_offset_alignment = max_nz(info->min_uniform_buffer_offset_alignment, p->align_uniform);
    for (uint32_t h = 0; h < info->heap_count; h++)
        if (info->heap_device_local[h]) {
            info->heap_size[h] = min_nz(info->heap_size[h], p->device_local);
            if (info->heap_budget[h] > info->heap_size[h]) info->heap_budget[h] = info->heap_size[h];
        }
    info->unified_memory = info->unified_memory && p->unified &&
                           (info->type == VKLLM_DEVICE_INTEGRATED_GPU || info->type == VKLLM_DEVICE_CPU);
    return VKLLM_STATUS_OK;
}
