/* gpu.h - the device layer as the rest of the runtime sees it: no Vulkan types here.
 * Implemented in runtime/vk/ (the only code that talks Vulkan).
 *
 *   struct vkllm__gpu     an opened device: queue, memory blocks, pipelines
 *   struct vkllm__buffer  a sub-allocation of a memory block
 *   struct vkllm__cmd     a recorded sequence of dispatches; submit it once or replay it
 */
#ifndef VKLLM_GPU_H
#define VKLLM_GPU_H

#include <stdint.h>

#include "internal.h"
#include "tuning.h"
#include "vkllm_shaders.h"

struct vkllm__gpu;
struct vkllm__buffer;
struct vkllm__cmd;

struct vkllm__gpu_params {
    int device;         /* index, or -1 for the tuning's device (VKLLM_DEVICE) / the best device */
    int validate;       /* 1 on, 0 off, -1 from the tuning (VKLLM_VALIDATE) */
    const char *tuning; /* "name=value,..." over the environment's tuning (tuning.h), or NULL */
    int compile_only;   /* 1: pipelines only (vkllm_ctx_params.compile_only): no device memory, no
                           submits, no waits; buffers are bookkeeping, dispatches build their pipeline
                           (with the driver's statistics where offered) and record nothing */
};

/* Open a device: tuning (tuning.h: defaults, environment, p->tuning), instance (+ validation
 * when asked), physical device choice, logical device, compute queue, pipeline cache. */
vkllm_status vkllm__gpu_open(const struct vkllm__gpu_params *p, struct vkllm__gpu **out);
void vkllm__gpu_close(struct vkllm__gpu *gpu);

/* The tuning in force on gpu (lives as long as gpu). */
const struct vkllm__tuning *vkllm__gpu_tuning(const struct vkllm__gpu *gpu);
/* Replace it. Ops recorded afterwards follow it; recordings and weights made before keep what
 * they were made with (set kernel knobs before loading a model). The device, validation and
 * pipeline-cache knobs only matter when a device opens. */
void vkllm__gpu_set_tuning(struct vkllm__gpu *gpu, const struct vkllm__tuning *t);

/* Capabilities of the opened device (lives as long as gpu). */
const struct vkllm_device_info *vkllm__gpu_info(const struct vkllm__gpu *gpu);

/* 1 if gpu was opened compile-only (struct vkllm__gpu_params). */
int vkllm__gpu_compile_only(const struct vkllm__gpu *gpu);

/* The pipelines built so far, in the order they were built: how many, and pipeline i as the public
 * header describes it (statistics where gpu captured them). */
uint32_t vkllm__gpu_pipeline_count(const struct vkllm__gpu *gpu);
vkllm_status vkllm__gpu_pipeline_info(const struct vkllm__gpu *gpu, uint32_t i, struct vkllm_pipeline_info *out);

/* Validation messages (warning or error severity) seen so far. */
uint64_t vkllm__gpu_validation_count(const struct vkllm__gpu *gpu);

/* 1 if validation is on and a validation message sent through the debug messenger is seen and
 * counted while a driver's general message is not (the count is restored afterwards). Tests use
 * it to prove that the referee is listening. */
int vkllm__gpu_validation_probe(struct vkllm__gpu *gpu);

/* Enumerate all devices (a short-lived instance, no validation). */
vkllm_status vkllm__gpu_list(struct vkllm_device_info **out, uint32_t *count);

/* --- memory ------------------------------------------------------------------------------ */

enum vkllm__mem_kind {
    VKLLM__MEM_DEVICE = 0, /* device-local: weights, activations, KV cache */
    VKLLM__MEM_HOST = 1,   /* host-visible: staging, readback, small per-step parameters */
};

/* What a buffer holds, for the accounting by use (run --stats json, bench). Keep in the order of
 * enum vkllm_memory_use (include/vkllm.h). */
enum vkllm__mem_use {
    VKLLM__USE_WEIGHTS,
    VKLLM__USE_REPACKED,
    VKLLM__USE_KV,
    VKLLM__USE_ACTIVATIONS,
    VKLLM__USE_LOGITS,
    VKLLM__USE_INPUTS,
    VKLLM__USE_STAGING,
    VKLLM__USE_READBACK,
    VKLLM__USE_OTHER,
    VKLLM__USE_COUNT_
};
/* Buffers allocated from now on hold use; returns the use set before (to restore it). */
enum vkllm__mem_use vkllm__gpu_set_mem_use(struct vkllm__gpu *gpu, enum vkllm__mem_use use);
/* The caller is about to allocate about bytes of buffers: new blocks are sized to hold them (not
 * larger), instead of growing with what the blocks already hold. 0: no such hint. Returns what was
 * left of the hint before (a caller's own hint, to keep when nested in another's). */
uint64_t vkllm__gpu_expect(struct vkllm__gpu *gpu, uint64_t bytes);
/* Bytes handed out by use (VKLLM__USE_COUNT_ entries) and, in the last entry, the bytes of blocks
 * not handed out: device the device-local heap, host the other heaps. */
void vkllm__gpu_memory_by_use(const struct vkllm__gpu *gpu, uint64_t device[VKLLM__USE_COUNT_ + 1],
                              uint64_t host[VKLLM__USE_COUNT_ + 1]);
/* A run of uploads (a model's weights): through staging, each returns with its last copy in flight
 * and the next overlaps it; end waits for them all and gives the staging buffer back. */
void vkllm__gpu_upload_begin(struct vkllm__gpu *gpu);
vkllm_status vkllm__gpu_upload_end(struct vkllm__gpu *gpu);

/* Sub-allocate size bytes (aligned for storage-buffer binding). VKLLM_STATUS_DEVICE_OOM when the
 * heap is exhausted (by our own accounting, not only the driver's word). */
vkllm_status vkllm__buffer_alloc(struct vkllm__gpu *gpu, uint64_t size, enum vkllm__mem_kind kind,
                                 struct vkllm__buffer **out);
void vkllm__buffer_free(struct vkllm__buffer *b);
uint64_t vkllm__buffer_size(const struct vkllm__buffer *b);

/* Host pointer to the buffer's bytes when its memory is host-visible (unified memory, or
 * VKLLM__MEM_HOST), NULL otherwise. Coherent: no flush needed. */
void *vkllm__buffer_map(const struct vkllm__buffer *b);
/* 1 where vkllm__buffer_upload writes the buffer's memory directly (mapped, or device-local
 * memory the host may write: ReBAR), 0 where it copies through staging. */
int vkllm__buffer_host_writes(const struct vkllm__buffer *b);

/* Copy host <-> buffer (directly when mapped, otherwise through a staging buffer). Waits. */
vkllm_status vkllm__buffer_upload(struct vkllm__buffer *b, uint64_t offset, const void *src, uint64_t size);
vkllm_status vkllm__buffer_download(struct vkllm__buffer *b, uint64_t offset, void *dst, uint64_t size);
vkllm_status vkllm__buffer_fill_zero(struct vkllm__buffer *b);

/* Device memory allocated (blocks) and handed out (sub-allocations), bytes. */
uint64_t vkllm__gpu_memory_allocated(const struct vkllm__gpu *gpu);
uint64_t vkllm__gpu_memory_used(const struct vkllm__gpu *gpu);
/* The most bytes one storage binding may cover: maxStorageBufferRange, or less where the tuning's
 * max_binding says (tests lower it to exercise chunked binding cheaply). */
uint64_t vkllm__gpu_max_binding(const struct vkllm__gpu *gpu);
/* The offset alignment a storage binding takes (minStorageBufferOffsetAlignment, raised where a
 * profile says), at least 4: shaders read 32-bit words. */
uint64_t vkllm__gpu_storage_align(const struct vkllm__gpu *gpu);
/* The most bytes one buffer may hold: maxMemoryAllocationSize, or less where the tuning's
 * max_alloc says (tests lower it to exercise split tensors), in whole buffer alignments. */
uint64_t vkllm__gpu_max_alloc(const struct vkllm__gpu *gpu);
/* CPU devices (lavapipe): how many threads run its workgroups side by side; 0 on GPUs. */
uint32_t vkllm__gpu_cpu_threads(const struct vkllm__gpu *gpu);

/* Uniform-buffer and uniform-texel-buffer bindings (shaders whose table row declares binding
 * kinds, see shaders/shaders.cmake). Every device buffer may be bound either way. */
struct vkllm__gpu_bind_limits {
    uint64_t max_texels;    /* elements one texel binding may cover: maxTexelBufferElements, or less
                               where the tuning's max_texels says (tests lower it for chunks) */
    uint64_t max_uniform;   /* bytes one uniform binding may cover: maxUniformBufferRange */
    uint64_t texel_align;   /* minTexelBufferOffsetAlignment, bytes */
    uint64_t uniform_align; /* minUniformBufferOffsetAlignment, bytes */
    int texel_formats;      /* 1: R32G32B32A32_UINT and R32_SFLOAT work as uniform texel buffers */
};
const struct vkllm__gpu_bind_limits *vkllm__gpu_bind_limits(const struct vkllm__gpu *gpu);

/* Bytes of device memory the device has for us (the device-local heap(s)): its size, or
 * VKLLM_MEMORY_LIMIT_MB, and where VK_EXT_memory_budget is offered no more than what vkllm holds
 * plus what the driver's budget lets this process add now. */
uint64_t vkllm__gpu_memory_budget(const struct vkllm__gpu *gpu);

/* Tests: pretend the driver's memory budget (VK_EXT_memory_budget) for every heap leaves this
 * process at most bytes more than it uses now (0: the driver's own figures again), also where
 * the extension is not offered. */
void vkllm__gpu_test_budget_room(struct vkllm__gpu *gpu, uint64_t bytes);

/* --- commands ---------------------------------------------------------------------------- */

/* A range of a buffer bound to one shader binding. range 0 = to the end of the buffer. */
struct vkllm__binding {
    const struct vkllm__buffer *buf;
    uint64_t offset;
    uint64_t range;
};

#define VKLLM__MAX_BINDINGS 8
#define VKLLM__MAX_SPEC 8

/* What one dispatch costs, for profiles (vkllm bench --profile); all zero = not given. Filled in
 * by the op that records the dispatch, computed from the shapes:
 *   bytes_read     bytes the kernel loads from device memory: the parts of its bindings it
 *                  touches, counted once per workgroup (or tile) that loads them (matvec: its
 *                  weight rows once for all its columns, x once per workgroup; matmul: the
 *                  weight rows once per block of BN rows of x, x once per block of BM weight
 *                  rows; attention: the cache rows up to the query's position once per head
 *                  group; a small operand every invocation reads, e.g. pos0, once)
 *   bytes_written  bytes it stores
 *   weight_bytes   of bytes_read, bytes of weight matrices (struct vkllm__dtensor)
 *   flops          arithmetic operations the result needs: a multiply-add is 2, an exp, a
 *                  division or a square root 1 (work on masked or padded elements not counted)
 * Some kernels read the position pos0 of the batch from the device (a recorded decode step
 * replays at any position), so their work depends on it. At pos0 such a dispatch costs the fixed
 * fields above plus pos0 times the *_per_pos fields plus, when split_len is set, ceil((pos0 + 1) /
 * split_len) (at most max_splits, when set) times the *_per_split fields (attention over the cache
 * in splits of at least split_len positions, of which only those holding a position do work);
 * vkllm__cost_at adds this up. */
struct vkllm__cost {
    uint64_t bytes_read, bytes_written, weight_bytes, flops;
    uint64_t read_per_pos, written_per_pos, flops_per_pos;
    uint32_t split_len, max_splits;
    uint64_t read_per_split, written_per_split, flops_per_split;
};

/* The fixed cost of c at position pos0 (only the first four fields are set in *out). */
void vkllm__cost_at(const struct vkllm__cost *c, uint32_t pos0, struct vkllm__cost *out);

/* The time a cost at its position (vkllm__cost_at) is expected to take on a slow device of gpu's
 * kind, in nanoseconds: its flops and bytes at the throughput of the slowest current device of that
 * type (scalar shaders, no cooperative matrices), added, plus a fixed cost per dispatch. A bound
 * for cutting work into submits that cannot trip a driver's watchdog, not a prediction of speed:
 * runtime/vk/command.c holds the rates, docs/devices.md says how they were chosen. */
double vkllm__gpu_cost_ns(const struct vkllm__gpu *gpu, const struct vkllm__cost *at);

/* How a shader uses a buffer binding (VKLLM__ACCESS_* bits). */
#define VKLLM__ACCESS_READ 1u
#define VKLLM__ACCESS_WRITE 2u

/* From a SPIR-V module (bytes long): access[i] for bindings 0..n_bindings-1 of descriptor set 0
 * (0 where the module has no variable at that binding). A storage buffer is read unless declared
 * writeonly and written unless declared readonly; uniform and texel buffers are read. */
vkllm_status vkllm__spirv_binding_access(const uint32_t *code, size_t bytes, uint32_t n_bindings, uint8_t *access);

/* One dispatch: shader, specialization constants (spec[0] = workgroup size x), buffers, push
 * constants (must be the size of the shader's C twin), workgroup counts. */
struct vkllm__dispatch {
    enum vkllm__shader_id shader;
    uint32_t n_spec;
    uint32_t spec[VKLLM__MAX_SPEC];
    uint32_t n_bind;
    struct vkllm__binding bind[VKLLM__MAX_BINDINGS];
    const void *push;
    uint32_t push_size;
    uint32_t groups[3];
    uint32_t subgroup;       /* subgroups of exactly this many lanes, all full (0: the driver's choice): for
                                subgroup reductions; needs the device's subgroup_size_control, a size in its
                                range and a workgroup size (spec[0]) that is a multiple of it */
    const char *label;       /* for timestamps and messages (may be NULL) */
    struct vkllm__cost cost; /* for profiles (zero: not given) */
};

vkllm_status vkllm__cmd_init(struct vkllm__gpu *gpu, struct vkllm__cmd **out);
struct vkllm__gpu *vkllm__cmd_gpu(struct vkllm__cmd *c);
void vkllm__cmd_free(struct vkllm__cmd *c);

/* Start recording (drops what was recorded before). */
vkllm_status vkllm__cmd_begin(struct vkllm__cmd *c);
/* Record a dispatch after checking every argument against the shader and the device limits.
 * A compute->compute memory barrier is recorded before it when it depends on a dispatch recorded
 * since the last one: it reads a buffer range that dispatch wrote, or writes one that dispatch
 * read or wrote (how each shader uses its bindings comes from its SPIR-V: readonly / writeonly).
 * Dispatches that do not depend on each other (q/k/v of one layer) may run side by side; every
 * dispatch still sees the writes of all earlier dispatches it depends on. The tuning's barriers
 * = all puts one before every dispatch. */
vkllm_status vkllm__cmd_dispatch(struct vkllm__cmd *c, const struct vkllm__dispatch *d);
/* Record a copy of size bytes from src (at src_off) to dst (at dst_off), after every dispatch
 * recorded before it and before every one recorded after it (e.g. logits into host-cached memory
 * at the end of a decode step, so the host reads them without another submit). */
vkllm_status vkllm__cmd_copy(struct vkllm__cmd *c, const struct vkllm__buffer *dst, uint64_t dst_off,
                             const struct vkllm__buffer *src, uint64_t src_off, uint64_t size);
/* Barriers recorded between dispatches since vkllm__cmd_begin. */
uint32_t vkllm__cmd_barrier_count(const struct vkllm__cmd *c);
/* Record a GPU timestamp (no-op when the device has none). label must outlive the recording. */
vkllm_status vkllm__cmd_timestamp(struct vkllm__cmd *c, const char *label);
vkllm_status vkllm__cmd_end(struct vkllm__cmd *c);
/* Submit what was recorded and wait for it. May be called again to replay. */
vkllm_status vkllm__cmd_submit(struct vkllm__cmd *c);

/* Submits cut to a time budget: from the next dispatch on, when the dispatches recorded since the
 * last cut are expected (vkllm__gpu_cost_ns of their costs at position pos0) to take more than
 * budget_ns with the next one added, the recording ends its command buffer there, submits it at
 * once without waiting, and goes on in a new one (which starts with a barrier after everything
 * submitted before). So no command buffer is expected to run longer than the budget, unless one
 * dispatch alone does. vkllm__cmd_submit then submits the rest and waits for all of them; a replay
 * submits them all again, in order. 0 (the default): one command buffer. Set it only where the
 * step's inputs are in place before it is recorded: what was cut off runs while the rest is being
 * recorded. Kept across recordings. */
void vkllm__cmd_set_budget(struct vkllm__cmd *c, double budget_ns, uint32_t pos0);
/* Command buffers of the last recording (each its own submit): 1 unless it was cut. */
uint32_t vkllm__cmd_segments(const struct vkllm__cmd *c);

/* When c was last submitted, as a count of the submits of all command lists so far (0: never):
 * tells which of several ran last. */
uint64_t vkllm__cmd_submit_serial(const struct vkllm__cmd *c);

/* Timestamps of the last submit: count, labels and nanoseconds since the first one. */
uint32_t vkllm__cmd_timestamp_count(const struct vkllm__cmd *c);
vkllm_status vkllm__cmd_timestamp_get(const struct vkllm__cmd *c, uint32_t i, const char **label, double *ns);

/* Profiling: from the next vkllm__cmd_begin on (until turned off), the recording puts a GPU
 * timestamp at its start and one after every dispatch (no-op on a device without timestamps), so
 * that each submit measures every dispatch: the time from the previous timestamp to its own,
 * which covers the barrier before it. Explicit vkllm__cmd_timestamp calls still work. */
void vkllm__cmd_set_profile(struct vkllm__cmd *c, int on);

/* The dispatches the last submit measured (0 when it was not recorded with profiling on or the
 * device has no timestamps), and dispatch i of them: its label (the shader's name when the
 * dispatch had none), shader, cost as recorded and GPU time in nanoseconds. */
struct vkllm__dispatch_time {
    const char *label;
    enum vkllm__shader_id shader;
    struct vkllm__cost cost;
    int barrier;                                      /* a barrier stood before it (vkllm__cmd_dispatch) */
    uint32_t n_spec, spec[VKLLM__MAX_SPEC], subgroup; /* its specialization constants and required subgroup size */
    double ns;
};
uint32_t vkllm__cmd_profile_count(const struct vkllm__cmd *c);
vkllm_status vkllm__cmd_profile_get(const struct vkllm__cmd *c, uint32_t i, struct vkllm__dispatch_time *out);

/* Convenience: begin, dispatch once, end, submit. */
vkllm_status vkllm__gpu_run1(struct vkllm__gpu *gpu, const struct vkllm__dispatch *d);

/* Workgroup counts for n items of group size wg, spread over x and y so that neither exceeds the
 * device limit (shaders use global_index_2d()). */
void vkllm__gpu_grid_1d(const struct vkllm__gpu *gpu, uint64_t n, uint32_t wg, uint32_t groups[3]);

#endif /* VKLLM_GPU_H */
