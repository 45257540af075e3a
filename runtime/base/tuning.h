/* tuning.h - every knob that changes how vkllm runs on a device, in one table: device choice,
 * memory, and the kernels' paths and work splits. A device reads them once, when it opens: the
 * defaults below, then the VKLLM_* environment variables that are set, then the context's own
 * settings (vkllm_ctx_params.tuning, vkllm_ctx_tune). The ops read the device's struct, never the
 * environment, and tests set knobs per device instead of through setenv.
 *
 * This file and tuning.c are the only library code that reads the environment. */
#ifndef VKLLM_TUNING_H
#define VKLLM_TUNING_H

#include <stddef.h>

#include "internal.h"

/* Device profiles: X(id, name). A profile clamps what vkllm believes about the device it opens to
 * a real GPU's published features and limits (their values and sources: runtime/vk/profiles.c),
 * so that it takes the code paths it would take on that GPU, on whatever driver runs underneath.
 * It only ever removes capabilities. */
#define VKLLM__DEVICE_PROFILES(X)             \
    X(NVIDIA_AMPERE, "nvidia-ampere")         \
    X(AMD_RDNA3, "amd-rdna3")                 \
    X(AMD_GCN5, "amd-gcn5")                   \
    X(INTEL_XE_LPG, "intel-xe-lpg")           \
    X(APPLE_M1_MOLTENVK, "apple-m1-moltenvk") \
    X(MALI_G710, "mali-g710")                 \
    X(ADRENO_740, "adreno-740")               \
    X(VULKAN_1_1_MINIMAL, "vulkan-1.1-minimal")

enum vkllm__device_profile {
    VKLLM__PROFILE_NONE = 0,
#define VKLLM__PROFILE_ENUM_(id, name) VKLLM__PROFILE_##id,
    VKLLM__DEVICE_PROFILES(VKLLM__PROFILE_ENUM_)
#undef VKLLM__PROFILE_ENUM_
        VKLLM__PROFILE_COUNT_
};
#define VKLLM__PROFILE_NAME_(id, name) "," name
#define VKLLM__DEVICE_PROFILE_NAMES "none" VKLLM__DEVICE_PROFILES(VKLLM__PROFILE_NAME_)

/* X(field, environment variable, default, value names, help). Values are integers; a knob with
 * value names also takes them ("tiled" for 0, "matvec" for 1, ...). -1 usually means "as the
 * device type suggests", 0 for a size "chosen from the device". */
// clang-format off
#define VKLLM__TUNING_MAP(X)                                                                                    \
    X(device, "VKLLM_DEVICE", -1, NULL,                                                                         \
      "device index to open when none is given (-1: the first discrete GPU, then integrated, virtual, CPU)")    \
    X(device_profile, "VKLLM_DEVICE_PROFILE", 0, VKLLM__DEVICE_PROFILE_NAMES,                                   \
      "clamp the device's features and limits to a published GPU's, to take that GPU's code paths")            \
    X(validate, "VKLLM_VALIDATE", 0, NULL,                                                                      \
      "1: Khronos validation layer with synchronization validation; messages are logged and counted")         \
    X(memory_limit_mb, "VKLLM_MEMORY_LIMIT_MB", 0, NULL, "use at most this many MiB of device memory (0: the heap)") \
    X(block_mb, "VKLLM_BLOCK_MB", 0, NULL,                                                                      \
      "MiB of the device memory blocks buffers are carved from (0: 256, or maxMemoryAllocationSize)")           \
    X(force_staging, "VKLLM_FORCE_STAGING", 0, NULL,                                                            \
      "1: copy through a staging buffer even where device memory is host-visible")                              \
    X(pipeline_cache, "VKLLM_PIPELINE_CACHE", 1, NULL, "0: do not persist compiled pipelines under ~/.cache/vkllm") \
    X(submit_us, "VKLLM_SUBMIT_US", -1, NULL,                                                                  \
      "a forward step's command list is cut into command buffers, each submitted (without waiting) as soon as the next dispatch would take the ones recorded in it past this many microseconds on a slow device of its kind (the cost model's estimate): no submit runs long enough for a driver's watchdog (TDR); 0: one command buffer per step; -1: 50000 on GPUs, 0 on CPU devices (no watchdog there)") \
    X(fuse, "VKLLM_FUSE", 1, NULL,                                                                              \
      "1: fused dispatches: a decode step multiplies q/k/v, and gate/up, in one each (matrices stacked at load), and rope + KV-cache store is one; 0: one per op") \
    X(barriers, "VKLLM_BARRIERS", 0, "dependent,all,none",                                                      \
      "barriers between dispatches: where one reads what an earlier one wrote or writes what it touched, before every one, or none (wrong results: only for proving that synchronization validation sees it)") \
    X(max_binding, "VKLLM_MAX_BINDING", 0, NULL,                                                                \
      "bytes one storage binding may cover (0: maxStorageBufferRange); lower it to exercise chunked binding")   \
    X(max_alloc, "VKLLM_MAX_ALLOC", 0, NULL,                                                                    \
      "bytes one device memory allocation may hold (0: maxMemoryAllocationSize); lower it to exercise split tensors") \
    X(repack_buffer, "VKLLM_REPACK_BUFFER", 0, NULL,                                                            \
      "bytes of the device buffer a matrix's file rows go through into the 16-byte layout, whole aligned chunks of rows (0: 64 MiB); lower it to exercise the chunks") \
    X(kv_parts, "VKLLM_KV_PARTS", 0, NULL,                                                                      \
      "split each layer's K and V by kv heads into at least this many buffers (a divisor of the kv heads; 0: only where one binding cannot hold them); for tests") \
    X(max_texels, "VKLLM_MAX_TEXELS", 0, NULL,                                                                  \
      "elements one texel binding may cover (0: maxTexelBufferElements)")                                       \
    X(ops_wg, "VKLLM_OPS_WG", 0, NULL, "workgroup size of the elementwise and row ops (0: from the device)")   \
    X(matvec_texel, "VKLLM_MATVEC_TEXEL", -1, NULL,                                                             \
      "decode matvec on repacked weights through texel buffers: 1 on, 0 off, -1 on CPU devices")              \
    X(matvec_tb_wg, "VKLLM_MATVEC_TB_WG", 0, NULL, "texel matvec: workgroup size (0: by matrix size)")        \
    X(matvec_tb_nr, "VKLLM_MATVEC_TB_NR", 0, NULL, "texel matvec: rows per invocation, 1, 2, 4 or 8 (0: by matrix size)") \
    X(matvec_wg, "VKLLM_MATVEC_WG", 0, NULL, "storage-buffer matvec: workgroup size (0: by device)")           \
    X(matvec_nt, "VKLLM_MATVEC_NT", 0, NULL,                                                                    \
      "storage-buffer matvec: invocations per row group, a power of two (0: by device)")                        \
    X(matvec_nr, "VKLLM_MATVEC_NR", 0, NULL, "storage-buffer matvec: rows per invocation, 1..8 (0: by device)") \
    X(matvec_sg, "VKLLM_MATVEC_SG", 1, NULL, "0: the shared-memory reduction even where subgroupAdd works")    \
    X(matvec_xs, "VKLLM_MATVEC_XS", 1, NULL, "0: every lane loads its own x (no sharing through the subgroup)") \
    X(matvec_x8, "VKLLM_MATVEC_X8", -1, NULL,                                                                   \
      "Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q4_K/Q5_K/Q6_K decode matvec with x in int8: 1 on (the packed dot product instruction where offered), 2 on without the instruction, 0 off, -1 on GPUs where it is accelerated, by vendor, type and row length (ops_matvec.c)") \
    X(matvec_xq, "VKLLM_MATVEC_XQ", 1, NULL,                                                                    \
      "1: where the decode products run matvec_x8, the forward pass quantizes each activation once per step (a quantize_x8 dispatch) and the products read it; 0: each workgroup quantizes x itself (same bits)") \
    X(repack, "VKLLM_REPACK", -1, NULL,                                                                         \
      "Q8_0/Q4_0/Q5_0 (rows of a multiple of 256) and Q6_K weights rearranged at load into groups of 8 blocks whose quants lie 16-byte aligned, so the GPU kernels read them as 16-byte words (repack.comp; docs/gpu.md): 1 on, 0 off (the file's layout), -1 on GPUs (not CPU devices, whose texel matvec has its own copy)") \
    X(matmul, "VKLLM_MATMUL", -1, "tiled,matvec",                                                               \
      "prefill's product: tiled (shared-memory tiles; MoE experts too, a grouped GEMM) or matvec (8 tokens per weight read; MoE: the grouped matvec); -1: matvec on CPU devices, and for MoE experts on GPUs with 8 picks or fewer an expert") \
    X(moe_group, "VKLLM_MOE_GROUP", -1, NULL,                                                                   \
      "1: prefill groups the tokens' expert picks by expert, each expert's weights read once per 8 picks; 0: one pick per workgroup; -1: on GPUs, and on CPU devices where the experts are repacked") \
    X(matmul_bm, "VKLLM_MATMUL_BM", 0, NULL, "tiled matmul: weight rows per tile (0: by device); any tile forced means tiled") \
    X(matmul_bn, "VKLLM_MATMUL_BN", 0, NULL, "tiled matmul: rows of x per tile (0: by batch)")                  \
    X(matmul_bk, "VKLLM_MATMUL_BK", 0, NULL, "tiled matmul: k step (0: by shared memory)")                      \
    X(matmul_f16, "VKLLM_MATMUL_F16", -1, NULL,                                                                 \
      "tiled matmul: shared-memory tiles in f16 (products and sums in f32): 1 where shaderFloat16 is offered, 0 f32 tiles, -1 as 1") \
    X(matmul_coopmat, "VKLLM_MATMUL_COOPMAT", -1, NULL,                                                         \
      "tiled matmul: the f16 tiles multiplied by cooperative matrices (VK_KHR_cooperative_matrix) where the device offers an f16 x f16 -> f32 shape: 1 on, 0 off (matmul_f16=0 turns it off too), -1 on except on Intel and on AMD's own drivers (as llama.cpp's Vulkan backend); 2: emulated, for tests on devices without them (F16, Q4_K, Q5_0)") \
    X(attn_coopmat, "VKLLM_ATTN_COOPMAT", -1, NULL,                                                             \
      "prefill attention's two products by cooperative matrices (16x16x16 f16 -> f32): 1 on where offered, 0 off, -1 as the matmul's default (not Intel, not AMD's own drivers), 2 emulated (tests)") \
    X(attn_splits, "VKLLM_ATTN_SPLITS", -1, NULL,                                                               \
      "attention, decode (attn.comp): splits of the current span (-1: about two workgroups per compute unit)") \
    X(attn_lanes, "VKLLM_ATTN_LANES", -1, NULL,                                                                 \
      "attention walk (attn.comp, decode and the prefill without cooperative matrices): lanes that share one key's head row (a power of two, at most a subgroup); -1: 1 on CPU devices (a lane walks whole rows, one subgroup a workgroup), on GPUs the row's 8-value chunks; 0: as on GPUs") \
    X(attn_f16, "VKLLM_ATTN_F16", 0, NULL,                                                                     \
      "1: the attention walk (attn_split*) in f16 arithmetic where shaderFloat16 is offered (q.k and each step's P V in f16 sums, the softmax and the output f32); 0: f32 (docs/gpu.md: why 0 by default)") \
    X(attn_texel, "VKLLM_ATTN_TEXEL", -1, NULL,                                                                 \
      "attention through texel buffers, one row per invocation: 1 on, 0 off, -1 on CPU devices")               \
    X(attn_tb_lanes, "VKLLM_ATTN_TB_LANES", 8, NULL, "texel attention, prefill: lanes per workgroup")         \
    X(attn_tb_dlanes, "VKLLM_ATTN_TB_DLANES", 8, NULL, "texel attention, decode: lanes per workgroup")        \
    X(attn_tb_block, "VKLLM_ATTN_TB_BLOCK", 8, NULL, "texel attention: cache positions per block (1..64)")     \
    X(attn_tb_splits, "VKLLM_ATTN_TB_SPLITS", 8, NULL, "texel attention, decode: splits of the current length")
// clang-format on

struct vkllm__tuning {
#define VKLLM__TUNING_FIELD_(field, env, def, names, help) long field;
    VKLLM__TUNING_MAP(VKLLM__TUNING_FIELD_)
#undef VKLLM__TUNING_FIELD_
};

/* Every knob at its default. */
void vkllm__tuning_default(struct vkllm__tuning *t);

/* The defaults, then every VKLLM_* variable of the table that is set. INVALID_ARGUMENT, naming
 * the first variable whose value does not parse (the others are still read). */
vkllm_status vkllm__tuning_from_env(struct vkllm__tuning *t);

/* Set one knob by its field name ("matvec_wg") or its variable ("VKLLM_MATVEC_WG") to a number
 * or one of its value names (NULL: its default). INVALID_ARGUMENT (nothing changed) for an
 * unknown name or value. */
vkllm_status vkllm__tuning_set(struct vkllm__tuning *t, const char *name, const char *value);

/* Apply "name=value,name=value,..." (spaces around the separators allowed) with
 * vkllm__tuning_set; stops at the first bad entry (INVALID_ARGUMENT). NULL or "" is a no-op. */
vkllm_status vkllm__tuning_parse(struct vkllm__tuning *t, const char *spec);

/* Knob i of the table, NULL past the end: its field name, variable, default and help. */
struct vkllm__tuning_knob {
    const char *name, *env;
    long def;
    const char *names, *help;
};
const struct vkllm__tuning_knob *vkllm__tuning_knob(size_t i);
/* The value of knob i in t. */
long vkllm__tuning_get(const struct vkllm__tuning *t, size_t i);

/* --- the process environment outside the per-device table --------------------------------- */

/* VKLLM_VULKAN_LIBRARY: the Vulkan loader to open instead of the system's (NULL when unset). */
const char *vkllm__env_vulkan_library(void);

/* The folder for vkllm's caches: $XDG_CACHE_HOME/vkllm, else $HOME/.cache/vkllm (Windows:
 * %LOCALAPPDATA%\vkllm; os.h). 0 when no variable is set or the path does not fit n bytes. */
int vkllm__env_cache_dir(char *buf, size_t n);

/* The threads a CPU Vulkan device (lavapipe) runs workgroups on: its LP_NUM_THREADS, else the
 * host's online processors (at least 1, at most 1024). */
uint32_t vkllm__env_cpu_device_threads(void);

#endif /* VKLLM_TUNING_H */
