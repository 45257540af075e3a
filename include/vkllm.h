/* vkllm.h - the public interface of libvkllm, a vendor-neutral LLM inference runtime on Vulkan.
 *
 * Conventions
 * - Every call that can fail returns a vkllm_status and hands results back through an
 *   out-parameter. On failure the out-parameter is left untouched (or set to NULL for handles)
 *   and vkllm_last_error() holds a one-line explanation (file, tensor, limit that was hit).
 * - Nothing in the library prints, aborts or exits. Diagnostics go to the callback installed with
 *   vkllm_log_set(); by default they are dropped. The one signal handler it installs is for
 *   SIGBUS from a model file cut short while mapped (vkllm_model_load).
 * - Handles are opaque pointers with a _t suffix. Every *_init has a *_free; *_free(NULL) is a no-op.
 * - Threads (an application with a UI thread and workers; docs/embedding.md shows both ways):
 *   - The library starts no threads that call you (vkllm_make_model's writer threads end before
 *     it returns). Every callback (text, on_piece, cancel, progress, pipeline, selftest, and the
 *     log callback) runs on the thread that made the call it comes from, before that call
 *     returns. vkllm_generate blocks until the reply is done: run it on a worker and post the
 *     text to the UI thread, or drive vkllm_gen_start / vkllm_gen_step (one token a call) from
 *     the UI's event loop.
 *   - Handles are not tied to the thread that made them: any thread may use one, one thread at
 *     a time as below. Nothing is set up or torn down per thread.
 *   - Calls without a handle (status strings, version, devices, tuning knobs, model files, the
 *     reference forward pass's own handle, make-model, chat template names, grammar
 *     validation) may be made from any thread at any time; vkllm_log_set is the exception (call
 *     it at start-up). The log callback runs on whichever thread is in a library call that logs,
 *     so several at once when several threads use the library: it must be thread-safe itself.
 *   - A tokenizer (vkllm_tokenizer_t, also the one vkllm_model_tokenizer returns) is immutable:
 *     any number of threads may use it at once, also while its model's sessions run.
 *     vkllm_tokenize, vkllm_detokenize, vkllm_chat_format, vkllm_chat_template_resolve and
 *     vkllm_model_n_vocab on a model use only its tokenizer and file, and vkllm_ctx_device and
 *     vkllm_model_get_info only what init and load wrote: thread-safe the same way.
 *   - A context, its models, their KV pools, sessions and gens share one device queue: every
 *     other call on any of them (also the read-only ones such as vkllm_gen_done,
 *     vkllm_session_n_past, vkllm_ctx_device_memory_used, and vkllm_gen_cancel) must come from
 *     one thread at a time: the caller serializes, e.g. with one lock per context held across
 *     each call. Different contexts are independent.
 *   - Stopping a generation from another thread (a Stop button): set a flag (an atomic_int)
 *     there, and have the text callback (or on_piece) return nonzero when it sees it, and
 *     params.cancel too for a long prompt; or, driving vkllm_gen_step yourself, call
 *     vkllm_gen_cancel between steps under the context's lock.
 *   - The last-error text is per thread: read it on the thread whose call failed.
 * - Callbacks are not reentrant: inside one, make no call on the handles of the call it comes
 *   from nor on anything else of that context (no eval, generate, gen_step, gen_cancel, free);
 *   return nonzero to stop instead. Allowed inside: the thread-safe calls above, calls on other
 *   contexts, and on the gen being run the reads vkllm_gen_n_generated, vkllm_gen_n_released and
 *   vkllm_gen_token_probs. Text handed to a callback (len bytes, not necessarily NUL-terminated) and the
 *   pointers in its structs are valid during the call only: copy what you keep.
 * - Ownership: what you pass in (params structs, prompts, stop strings, paths, grammars) is
 *   read during the call and not kept (vkllm_gen_start copies its params). user_data pointers are
 *   kept and handed back: a callback's user_data must live until vkllm_generate returns, or until
 *   vkllm_gen_free for a gen's callbacks, vkllm_model_load's return for its progress. Every
 *   handle you get is yours to free with its *_free, in the reverse order of making: gens,
 *   sessions, KV pools, models, then their context (a session freed before its gen ends the gen
 *   with INVALID_ARGUMENT; free the gen still). Memory the library hands you is freed with the
 *   call its comment names (vkllm_free, vkllm_devices_free). Pointers into the library's own
 *   memory stay valid as their comments say (vkllm_ctx_device: while the context lives;
 *   vkllm_session_logits: until the next eval; vkllm_last_error: until the next failure on the
 *   thread; status, type and stop-reason names, version: forever).
 * - Slow calls, to keep off a UI thread: vkllm_ctx_init (opens the device, loads the pipeline
 *   cache), vkllm_model_load (uploads the weights; progress reports it), vkllm_session_init,
 *   vkllm_generate, vkllm_gen_start (the prompt, unless prefill_chunk splits it), and
 *   vkllm_ctx_free (waits for the device, writes the pipeline cache). vkllm_gen_step takes one
 *   decode step (milliseconds to a few hundred on a slow device).
 */
#ifndef VKLLM_H
#define VKLLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* VKLLM_API marks the public functions. On Windows: __declspec(dllexport) while libvkllm itself
 * is compiled (VKLLM_SHARED_BUILD), nothing for an application linking the static library (it
 * defines VKLLM_STATIC: without it MinGW's ld looks for __imp_vkllm_* and fails), and
 * __declspec(dllimport) for one linking the DLL through its import library (the default).
 * Elsewhere: default visibility (the library is compiled with -fvisibility=hidden). */
#if defined(_WIN32)
#if defined(VKLLM_SHARED_BUILD)
#define VKLLM_API __declspec(dllexport)
#elif defined(VKLLM_STATIC)
#define VKLLM_API
#else
#define VKLLM_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define VKLLM_API __attribute__((visibility("default")))
#else
#define VKLLM_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------- */

/* One list for the enum and its strings (libuv's UV_ERRNO_MAP idea). */
#define VKLLM_STATUS_MAP(XX)                     \
    XX(OK, "success")                            \
    XX(INVALID_ARGUMENT, "invalid argument")     \
    XX(BAD_FORMAT, "malformed input file")       \
    XX(UNSUPPORTED, "not supported")             \
    XX(IO, "input/output error")                 \
    XX(OOM, "out of host memory")                \
    XX(DEVICE_OOM, "out of device memory")       \
    XX(NO_VULKAN, "Vulkan loader not available") \
    XX(NO_DEVICE, "no usable Vulkan device")     \
    XX(VULKAN, "Vulkan call failed")             \
    XX(DEVICE_LOST, "device lost")               \
    XX(CONTEXT_FULL, "context is full")          \
    XX(CANCELLED, "cancelled")                   \
    XX(NOT_FOUND, "not found")                   \
    XX(INTERNAL, "internal error")               \
    XX(KV_FULL, "KV cache pool full")

// clang-format off
typedef enum vkllm_status {
#define VKLLM_STATUS_ENUM_(name, text) VKLLM_STATUS_##name,
    VKLLM_STATUS_MAP(VKLLM_STATUS_ENUM_)
#undef VKLLM_STATUS_ENUM_
    VKLLM_STATUS_COUNT_
} vkllm_status;
// clang-format on

/* Short fixed text for a status ("out of device memory"); never NULL. */
VKLLM_API const char *vkllm_status_str(vkllm_status s);

/* Symbolic name of a status ("VKLLM_STATUS_DEVICE_OOM"); never NULL. */
VKLLM_API const char *vkllm_status_name(vkllm_status s);

/* Detail of the last failure on the calling thread ("" if none). Valid until the next failing
 * call on this thread. */
VKLLM_API const char *vkllm_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Logging and version
 * ------------------------------------------------------------------------------------------- */

typedef enum vkllm_log_level {
    VKLLM_LOG_DEBUG = 0,
    VKLLM_LOG_INFO = 1,
    VKLLM_LOG_WARN = 2,
    VKLLM_LOG_ERROR = 3,
} vkllm_log_level;

typedef void (*vkllm_log_fn)(vkllm_log_level level, const char *msg, void *user_data);

/* Install a process-wide log callback (NULL drops all messages, the default). Not thread-safe
 * with respect to concurrent logging: call it at start-up. */
VKLLM_API void vkllm_log_set(vkllm_log_fn fn, void *user_data);

/* "0.1.0" and the git commit the library was built from ("unknown" outside a checkout). */
VKLLM_API const char *vkllm_version(void);
VKLLM_API const char *vkllm_git_commit(void);

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

typedef enum vkllm_device_type {
    VKLLM_DEVICE_OTHER = 0,
    VKLLM_DEVICE_INTEGRATED_GPU = 1,
    VKLLM_DEVICE_DISCRETE_GPU = 2,
    VKLLM_DEVICE_VIRTUAL_GPU = 3,
    VKLLM_DEVICE_CPU = 4,
} vkllm_device_type;

#define VKLLM_MAX_HEAPS 16
#define VKLLM_MAX_MEMORY_TYPES 32
#define VKLLM_MAX_COOPMAT_SHAPES 16

/* Bits of vkllm_device_info.memory_types[i].flags (same values as VkMemoryPropertyFlagBits). */
#define VKLLM_MEMORY_DEVICE_LOCAL 0x1u
#define VKLLM_MEMORY_HOST_VISIBLE 0x2u
#define VKLLM_MEMORY_HOST_COHERENT 0x4u
#define VKLLM_MEMORY_HOST_CACHED 0x8u

/* Bits of vkllm_device_info.subgroup_ops (same values as VkSubgroupFeatureFlagBits). */
#define VKLLM_SUBGROUP_BASIC 0x01u
#define VKLLM_SUBGROUP_VOTE 0x02u
#define VKLLM_SUBGROUP_ARITHMETIC 0x04u
#define VKLLM_SUBGROUP_BALLOT 0x08u
#define VKLLM_SUBGROUP_SHUFFLE 0x10u
#define VKLLM_SUBGROUP_SHUFFLE_RELATIVE 0x20u
#define VKLLM_SUBGROUP_CLUSTERED 0x40u
#define VKLLM_SUBGROUP_QUAD 0x80u

/* One shape offered by VK_KHR_cooperative_matrix for a subgroup: C(MxN) += A(MxK) * B(KxN).
 * Component types use the VkComponentTypeKHR numbering (0 = f16, 1 = f32, ...). */
struct vkllm_coopmat_shape {
    uint32_t m, n, k;
    uint32_t a_type, b_type, c_type, result_type;
};

/* What a Vulkan physical device is and can do: the capabilities that matter for inference. */
struct vkllm_device_info {
    uint32_t index;     /* position in the enumeration, what --device N takes */
    char name[256];     /* deviceName */
    uint32_t vendor_id; /* PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel, ...) */
    char vendor[32];    /* vendor name derived from vendor_id */
    uint32_t device_id;
    vkllm_device_type type;
    char driver_name[256];   /* VkPhysicalDeviceDriverProperties.driverName */
    char driver_info[256];   /* .driverInfo (e.g. "Mesa 22.3.6 (LLVM 15.0.6)") */
    uint32_t driver_version; /* raw driverVersion (encoding is vendor specific) */
    uint32_t api_version;    /* VK_MAKE_API_VERSION encoding */
    /* memory */
    uint32_t heap_count;
    uint64_t heap_size[VKLLM_MAX_HEAPS];         /* bytes */
    uint32_t heap_device_local[VKLLM_MAX_HEAPS]; /* 1 if VK_MEMORY_HEAP_DEVICE_LOCAL_BIT */
    int memory_budget;                           /* 1: VK_EXT_memory_budget: vkllm allocates within the heap's budget
                                                    (what the driver lets this process use now, other programs'
                                                    use taken into account) rather than within its size */
    uint64_t heap_budget[VKLLM_MAX_HEAPS];       /* bytes this process may use, when queried (0: not reported) */
    uint64_t heap_usage[VKLLM_MAX_HEAPS];        /* bytes this process used then */
    uint32_t memory_type_count;
    struct {
        uint32_t flags; /* VKLLM_MEMORY_* bits */
        uint32_t heap;  /* heap index */
    } memory_types[VKLLM_MAX_MEMORY_TYPES];
    int unified_memory; /* 1: an integrated or CPU device with a device-local, host-visible
                           memory type (vkllm maps it instead of copying through staging) */
    /* compute */
    uint32_t subgroup_size;                        /* default subgroup size */
    uint32_t subgroup_size_min, subgroup_size_max; /* VK_EXT_subgroup_size_control range (0 if none) */
    int subgroup_size_control;     /* 1: a compute shader can be given a subgroup size in that range with
                                      full subgroups (vkllm's subgroup reductions then ask for theirs) */
    uint32_t subgroup_ops;         /* VKLLM_SUBGROUP_* bits supported in compute shaders */
    int fp16_arith;                /* shaderFloat16 */
    int int8_arith;                /* shaderInt8 */
    int int64_arith;               /* shaderInt64 */
    int storage_16bit;             /* storageBuffer16BitAccess */
    int storage_8bit;              /* storageBuffer8BitAccess */
    int integer_dot_product;       /* VK_KHR_shader_integer_dot_product feature present */
    int integer_dot_product_accel; /* 4x8-bit packed signed dot product is accelerated */
    int buffer_device_address;     /* bufferDeviceAddress feature */
    int cooperative_matrix;        /* VK_KHR_cooperative_matrix usable (with the Vulkan memory model,
                                      which vkllm's cooperative-matrix shaders use) */
    uint32_t coopmat_shape_count;
    struct vkllm_coopmat_shape coopmat_shapes[VKLLM_MAX_COOPMAT_SHAPES];
    /* limits */
    uint64_t max_storage_buffer_range;            /* bytes one storage descriptor may cover */
    uint64_t max_memory_allocation_size;          /* bytes in one vkAllocateMemory */
    uint64_t min_storage_buffer_offset_alignment; /* bytes */
    uint32_t max_shared_memory;                   /* maxComputeSharedMemorySize, bytes */
    uint32_t max_workgroup_invocations;           /* maxComputeWorkGroupInvocations */
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_count[3];
    uint32_t max_push_constants;        /* bytes */
    uint64_t max_texel_buffer_elements; /* elements one texel buffer view may cover */
    uint64_t max_uniform_buffer_range;  /* bytes one uniform binding may cover */
    int timestamps;                     /* compute queue supports timestamps */
    float timestamp_period_ns;          /* nanoseconds per timestamp tick */
    uint32_t timestamp_valid_bits;
    int pipeline_statistics; /* VK_KHR_pipeline_executable_properties: the driver reports
                                registers, spills, shared memory, ... per pipeline
                                (vkllm_ctx_pipelines on a compile-only context) */
    int has_compute_queue;   /* a queue family with compute */
    int usable;              /* vkllm runs on it: Vulkan 1.1, a compute queue and a memory
                                type (a device without memory, such as RADV's null
                                hardware, can still build pipelines: compile_only) */
    char profile[32];        /* the device profile in force (VKLLM_DEVICE_PROFILE), "" for
                                none: the limits are then the device's clamped to it (its
                                offset alignments raised to it) */
    /* limits, appended after profile (the struct grew by 16 bytes: code built against an older
       vkllm.h indexes vkllm_devices_list's array wrongly and must be rebuilt) */
    uint64_t min_texel_buffer_offset_alignment;   /* bytes */
    uint64_t min_uniform_buffer_offset_alignment; /* bytes */
};

/* Human-readable name of a device type ("discrete GPU", "CPU", ...). */
VKLLM_API const char *vkllm_device_type_str(vkllm_device_type t);

/* Enumerate every Vulkan physical device. On success *out is an array of *count entries (possibly
 * zero) to be released with vkllm_devices_free(). Fails with VKLLM_STATUS_NO_VULKAN when no
 * Vulkan loader can be loaded and VKLLM_STATUS_NO_DEVICE when the loader has no driver. */
VKLLM_API vkllm_status vkllm_devices_list(struct vkllm_device_info **out, uint32_t *count);
VKLLM_API void vkllm_devices_free(struct vkllm_device_info *devices);

/* ---------------------------------------------------------------------------------------------
 * Context: one opened Vulkan device
 * ------------------------------------------------------------------------------------------- */

typedef struct vkllm_ctx *vkllm_ctx_t;

struct vkllm_ctx_params {
    int device;         /* device index from vkllm_devices_list(); -1 = VKLLM_DEVICE env or the best */
    int validate;       /* 1: Khronos validation layer + synchronization validation; -1: VKLLM_VALIDATE env */
    const char *tuning; /* "name=value,name=value": tuning knobs (vkllm_tuning_knob) over the VKLLM_*
                           environment variables, which are read once, here; NULL: none */
    int compile_only;   /* 1: build pipelines only: no device memory is allocated and nothing is
                           submitted or waited on. Buffers are bookkeeping (uploads are dropped,
                           downloads read zeros), dispatches are checked and their pipelines built
                           with the driver's statistics captured (vkllm_ctx_pipelines). Opens devices
                           that have no memory (RADV's null hardware, RADV_FORCE_FAMILY). Nothing it
                           computes is meaningful. */
};

VKLLM_API struct vkllm_ctx_params vkllm_ctx_params_default(void);

/* Open a device. Default choice (device = -1 and no VKLLM_DEVICE): the first discrete GPU, then
 * integrated, then virtual, then CPU. */
VKLLM_API vkllm_status vkllm_ctx_init(const struct vkllm_ctx_params *params, vkllm_ctx_t *out);
VKLLM_API void vkllm_ctx_free(vkllm_ctx_t ctx);

/* The capabilities of the device the context opened. The pointer lives as long as ctx. */
VKLLM_API const struct vkllm_device_info *vkllm_ctx_device(vkllm_ctx_t ctx);

/* Validation messages (warnings and errors) reported by the validation layer so far. */
VKLLM_API uint64_t vkllm_ctx_validation_messages(vkllm_ctx_t ctx);

/* Device memory the context has allocated right now, in bytes. */
VKLLM_API uint64_t vkllm_ctx_device_memory_used(vkllm_ctx_t ctx);

/* What the context's memory holds, by use (run --stats json and bench print it). */
enum vkllm_memory_use {
    VKLLM_MEMORY_WEIGHTS,     /* the model's tensors in their GGUF encoding */
    VKLLM_MEMORY_REPACKED,    /* matrices in the layout a device's kernels read instead (CPU devices) */
    VKLLM_MEMORY_KV,          /* KV cache pools, window rings and block tables */
    VKLLM_MEMORY_ACTIVATIONS, /* a micro-batch's activations and attention scratch */
    VKLLM_MEMORY_LOGITS,      /* logits on the device (one row unless all positions' are asked for) */
    VKLLM_MEMORY_INPUTS,      /* token ids and positions of a step (and their host-visible twins) */
    VKLLM_MEMORY_STAGING,     /* the staging buffer of uploads and downloads (given back after a load) */
    VKLLM_MEMORY_READBACK,    /* host-visible copies of results: logits, the greedy token */
    VKLLM_MEMORY_OTHER,
    VKLLM_MEMORY_EMPTY, /* allocated blocks not handed out to any buffer */
    VKLLM_MEMORY_USE_COUNT
};
struct vkllm_memory_breakdown {
    uint64_t device[VKLLM_MEMORY_USE_COUNT]; /* bytes on the device-local heap (all of them on unified
                                                memory); they sum to vkllm_ctx_device_memory_used */
    uint64_t host[VKLLM_MEMORY_USE_COUNT];   /* bytes on other heaps (host-visible system memory) */
};
VKLLM_API void vkllm_ctx_memory_breakdown(vkllm_ctx_t ctx, struct vkllm_memory_breakdown *out);
/* "weights", "repacked", "kv", ... ("?" out of range). */
VKLLM_API const char *vkllm_memory_use_name(enum vkllm_memory_use u);

/* Tuning: the knobs that change how vkllm runs on a device (kernel paths and work splits,
 * binding and memory limits), each also a VKLLM_* environment variable. Knob i (0, 1, ... until
 * it returns 0): its name, variable, default value and a line of help; value names, when the
 * knob takes words ("tiled,matvec" for 0, 1), else NULL. */
struct vkllm_tuning_knob {
    const char *name, *env, *value_names, *help;
    long default_value;
};
VKLLM_API int vkllm_tuning_knob(size_t i, struct vkllm_tuning_knob *out);

/* Set knob `name` (its name or its variable) of ctx to value (a number, or one of its value
 * names; NULL: the default). Models and sessions made afterwards follow it (set kernel knobs
 * before loading a model). INVALID_ARGUMENT for an unknown knob or value. Not thread-safe with
 * other calls on ctx or its models. */
VKLLM_API vkllm_status vkllm_ctx_tune(vkllm_ctx_t ctx, const char *name, const char *value);

/* The value of knob i in force on ctx. */
VKLLM_API long vkllm_ctx_tuning_value(vkllm_ctx_t ctx, size_t i);

/* ---------------------------------------------------------------------------------------------
 * Pipelines: what the driver made of each compute pipeline built so far
 * ------------------------------------------------------------------------------------------- */

#define VKLLM_MAX_PIPELINE_STATS 40

/* One statistic as the driver names it (VK_KHR_pipeline_executable_properties): "VGPRs",
 * "Spilled VGPRs", "Scratch size", "LDS size", "Subgroups per SIMD", "Code size" on RADV. */
struct vkllm_pipeline_stat {
    char name[48];
    char description[128];
    double value;
};

/* One compute pipeline: a shader with its specialization constants and required subgroup size. */
struct vkllm_pipeline_info {
    char shader[48]; /* the embedded shader's name (matvec_q4_k, attn_split, ...) */
    uint32_t n_spec;
    uint32_t spec[8];           /* specialization constants; spec[0] is the workgroup size */
    uint32_t required_subgroup; /* full subgroups of this size asked for (0: the driver's choice) */
    uint32_t subgroup_size;     /* the executable's subgroup size, as the driver reports it (0: unknown) */
    double compile_ms;          /* host time of vkCreateComputePipelines */
    int cache_hit;              /* 1: the driver's pipeline cache answered (VK_EXT_pipeline_creation_feedback),
                                   0: compiled, -1: not reported */
    uint32_t n_stats;           /* the driver's statistics (0 where it offers none: compile_only and
                                   vkllm_device_info.pipeline_statistics are both needed) */
    struct vkllm_pipeline_stat stats[VKLLM_MAX_PIPELINE_STATS];
};

/* Called with every pipeline; return nonzero to stop. */
typedef int (*vkllm_pipeline_fn)(const struct vkllm_pipeline_info *p, void *user_data);

/* Every compute pipeline ctx has built so far, in the order they were built. *count (may be NULL)
 * gets how many were reported. To build every pipeline the device's tuning uses without running
 * anything, run vkllm_selftest (defaults_only, or not for every variant) on a compile_only context
 * first: that is `vkllm pipelines`. */
VKLLM_API vkllm_status vkllm_ctx_pipelines(vkllm_ctx_t ctx, vkllm_pipeline_fn fn, void *user_data, uint32_t *count);

/* ---------------------------------------------------------------------------------------------
 * Selftest: every kernel and variant of the device against the scalar C reference
 * ------------------------------------------------------------------------------------------- */

/* One case: an op (add, mul, silu_mul, rmsnorm, add_rmsnorm, softmax, matvec, matvec_tb, matmul,
 * get_rows, rope, kv_store, attention, argmax), a variant (tuning knobs set for it, "" for the
 * device's own choices), a shape, the error by the op's measure and the bound it must meet. */
struct vkllm_selftest_case {
    char op[24];
    char variant[96];
    char shape[64];
    char measure[8];   /* "max_rel", "max_abs", "nmse" or "wrong" (entries that differ) */
    double err, bound; /* ok when err <= bound and nothing else was wrong */
    double max_abs;    /* max |device - reference| */
    int ok;
    int skipped;           /* the device cannot run the variant (a feature it lacks, or a path or limit the
                              variant forces: detail says why); a case with the device's own tuning
                              that an op refuses is failed instead */
    char detail[192];      /* what else was wrong, or why it was skipped; "" otherwise */
    char kernel[32];       /* the shader that ran first */
    double gpu_ms;         /* with profile: the device time of the case's recording (0: no timestamps) */
    double gbytes, gflops; /* with profile: GB and GFLOP its dispatches declared */
};

struct vkllm_selftest_params {
    int full;          /* 1: the long lists of the test suite (thousands of cases) instead of the short ones */
    int profile;       /* 1: time each case */
    const char *ops;   /* comma-separated op names to run; NULL or "": all */
    int defaults_only; /* 1: what a model run takes on this device: each case's op and shape once, with the
                          device's own tuning (the variants' knobs ignored); the cases that exist to
                          force one kernel (int8 x, cooperative matrices) or a split are left out */
    int list_only;     /* 1: call fn with every case that would run, without running it (no counts) */
    int unchecked;     /* 1: record and submit every case but do not compare it with the reference: for a
                          device that executes nothing (a simulated GPU); a case is ok when it records
                          and submits without error (always so on a compile_only context) */
};

VKLLM_API struct vkllm_selftest_params vkllm_selftest_params_default(void);

/* Called with every case as it finishes; return nonzero to stop. */
typedef int (*vkllm_selftest_fn)(const struct vkllm_selftest_case *c, void *user_data);

/* Run the selftest on ctx's device: n_ok, n_failed and n_skipped (may be NULL) get the counts.
 * Fails only on a device or host error (the cases' own failures are in the counts). */
VKLLM_API vkllm_status vkllm_selftest(vkllm_ctx_t ctx, const struct vkllm_selftest_params *params, vkllm_selftest_fn fn,
                                      void *user_data, uint32_t *n_ok, uint32_t *n_failed, uint32_t *n_skipped);

/* ---------------------------------------------------------------------------------------------
 * Models: a GGUF file's weights on a context's device
 * ------------------------------------------------------------------------------------------- */

typedef struct vkllm_model *vkllm_model_t;

#define VKLLM_MAX_DEVICES 8
struct vkllm_model_params {
    /* Called while the weights are uploaded: fraction in [0, 1]. May be NULL. */
    void (*progress)(float fraction, void *user_data);
    void *progress_user_data;
    /* A layer split over several devices (llama.cpp's --split-mode layer): n_devices contexts in
     * devices[], devices[0] the ctx passed to vkllm_model_load (or NULL for it); 0 or 1: ctx alone.
     * Each device holds a contiguous range of layers with their KV cache, the first one the token
     * embeddings, the last one the output norm and matrix; the residual stream goes from one to
     * the next through host-visible memory (docs/devices.md). The layers are shared out by
     * tensor_split[i] (proportions, as llama.cpp's --tensor-split 3,1), or, where all are 0, by
     * each device's free device-local memory; a device whose share rounds to no layer is left out.
     * Every context must outlive the model. Sessions, KV pools and generations work unchanged. */
    uint32_t n_devices;
    vkllm_ctx_t devices[VKLLM_MAX_DEVICES];
    float tensor_split[VKLLM_MAX_DEVICES];
};

VKLLM_API struct vkllm_model_params vkllm_model_params_default(void);

/* Load a Llama-family GGUF model (llama, qwen2, qwen3) onto ctx's device. The model must be
 * freed before ctx. Errors: BAD_FORMAT (malformed file), UNSUPPORTED (architecture or tensor
 * type), DEVICE_OOM (the weights do not fit: the message gives bytes needed and free), IO with
 * "model file changed while loading" when the file was truncated or written to while it was
 * read (its size or modification time changed; replacing it by a rename is safe).
 * The file is memory-mapped: the first load installs a SIGBUS handler for the process (chained
 * to the one before it, which still gets every other SIGBUS), so that a read past the end of a
 * file cut short gives that error instead of killing the process. */
VKLLM_API vkllm_status vkllm_model_load(vkllm_ctx_t ctx, const char *path, const struct vkllm_model_params *params,
                                        vkllm_model_t *out);
VKLLM_API void vkllm_model_free(vkllm_model_t model);

/* The devices the model's layers are split over (1 without a split), and device i's context and
 * layers [*layer_begin, *layer_end) (any output pointer may be NULL; NOT_FOUND past the last). */
VKLLM_API uint32_t vkllm_model_n_devices(vkllm_model_t model);
VKLLM_API vkllm_status vkllm_model_device(vkllm_model_t model, uint32_t i, vkllm_ctx_t *ctx, uint32_t *layer_begin,
                                          uint32_t *layer_end);

struct vkllm_model_info {
    char arch[16];  /* "llama", "qwen2", "qwen3" */
    char name[128]; /* general.name, or "" */
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
    uint32_t n_vocab;
    uint32_t n_ctx_train;            /* context length the model was trained for */
    uint64_t n_params;               /* elements over all tensors */
    uint64_t file_bytes;             /* size of the GGUF file */
    uint64_t weight_bytes;           /* bytes of weights on the device */
    uint64_t decode_bytes_per_token; /* weight bytes one decode step reads: the matrices in the layout
                                        the device holds them in (CPU devices: repacked, larger than
                                        the file's), experts n_expert_used of n_expert */
    char type_summary[128];          /* tensor types and counts, e.g. "f32:45 q8_0:155" */
    int pooling;                     /* enum vkllm_pooling the file asks for embeddings (<arch>.pooling_type:
                                        mean, cls or last); MEAN when it says none */
};

VKLLM_API void vkllm_model_get_info(vkllm_model_t model, struct vkllm_model_info *out);

/* ---------------------------------------------------------------------------------------------
 * Model files: what a GGUF file holds, without a device
 * ------------------------------------------------------------------------------------------- */

typedef struct vkllm_model_file *vkllm_model_file_t;

/* Open and parse a GGUF file (metadata and tensor table; the data is mapped, not read). Fails
 * with BAD_FORMAT for a file that is not well-formed GGUF, IO/NOT_FOUND when it cannot be read. A
 * well-formed file of an architecture or type vkllm does not run opens fine: `supported` says. */
VKLLM_API vkllm_status vkllm_model_file_open(const char *path, vkllm_model_file_t *out);
VKLLM_API void vkllm_model_file_close(vkllm_model_file_t f);

#define VKLLM_MAX_TYPES 48
struct vkllm_file_info {
    uint64_t file_bytes;
    uint32_t gguf_version;
    uint64_t n_kv, n_tensors;
    char arch[64];  /* general.architecture, or "" */
    char name[128]; /* general.name, or "" */
    int supported;  /* 1: vkllm can run it; 0: error says why */
    char error[512];
    /* shape, valid when supported */
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
    float rms_eps;
    int tied_embeddings;
    float rope_theta;
    uint32_t rope_dims;    /* rotated dimensions per head */
    int rope_neox;         /* 1: NeoX halves pairing; 0: adjacent pairs */
    char rope_scaling[16]; /* "none", "linear", "llama3", "longrope" (phi3's short and long
                              factors), "yarn" (gpt-oss) */
    float rope_factor;
    int64_t context_length; /* <arch>.context_length, -1 when absent */
    uint64_t n_params;      /* elements over all tensors */
    uint32_t n_types;       /* tensor types present, in type id order: */
    struct {
        char name[16]; /* "q8_0" */
        uint64_t count, bytes;
    } types[VKLLM_MAX_TYPES];
    char tokenizer_model[64];   /* tokenizer.ggml.model ("llama", "gpt2", "bert", ...) or "" */
    int64_t n_tokens, bos, eos; /* -1 when absent */
    int has_chat_template;
    /* gemma2 / gemma3 (0 elsewhere), valid when supported */
    uint32_t sliding_window;                    /* positions a sliding-window layer sees */
    uint32_t n_swa_layers;                      /* layers with the window */
    float attn_softcap, final_softcap;          /* soft-capping of attention scores and logits (0: none) */
    uint32_t n_expert, n_expert_used, n_ff_exp; /* mixture of experts (0: a dense FFN) */
};
VKLLM_API void vkllm_model_file_info(vkllm_model_file_t f, struct vkllm_file_info *out);

/* Tensor i of the file (i < n_tensors). role: what vkllm reads it as: the layer table's field
 * ("wq" for blk.3.attn_q.weight; the layer is in the name) or a global ("token_embd", "output", "output_norm", "rope_freqs"); "" when vkllm
 * does not read it (or the file is not supported). */
struct vkllm_tensor_info {
    char name[96];
    char type[16];
    uint32_t n_dims;
    uint64_t ne[4]; /* ne[0] innermost (the row length) */
    uint64_t bytes;
    char role[32];
};
VKLLM_API vkllm_status vkllm_model_file_tensor(vkllm_model_file_t f, uint64_t i, struct vkllm_tensor_info *out);

/* ---------------------------------------------------------------------------------------------
 * Sessions: a KV cache and run state over a model; evaluates tokens and returns logits
 * ------------------------------------------------------------------------------------------- */

typedef struct vkllm_session *vkllm_session_t;

/* The KV cache's element type: f16, or q8_0 (ggml's: 32 int8 values and a scale, here an f32
 * scale stored after the quants: 1.125 bytes a value, 56% of f16). */
enum vkllm_kv_type { VKLLM_KV_F16 = 0, VKLLM_KV_Q8_0 = 1 };

/* A KV cache pool: K and V of the layers that attend to the whole context, in blocks of
 * VKLLM_KV_BLOCK positions, shared by the sessions made on it (vkllm_session_params.pool). A
 * session takes a block when its tokens reach it and gives its blocks back when truncated or
 * freed; sessions with a common prompt prefix hold its blocks once (copied when one of them writes
 * into a shared block). Full blocks stay cached, keyed by their tokens and every token before
 * them, after the session that wrote them lets them go: a later prompt that starts the same way
 * (vkllm_generate with cache_prompt, any session of the pool) takes them instead of evaluating
 * them, until the pool needs the room (least recently released first). A session without a pool
 * gets one of its own, for n_ctx positions. Sliding-window layers (gemma2/3, gpt-oss) keep a
 * ring per session outside the pool, and their prompts are not taken from the pool's cache. */
#define VKLLM_KV_BLOCK 16
typedef struct vkllm_kv_pool *vkllm_kv_pool_t;
struct vkllm_kv_pool_params {
    uint64_t bytes;     /* the pool's size in bytes (rounded down to whole blocks); 0: n_ctx x n_seq positions */
    uint32_t n_ctx;     /* 0 = the training context, at most 4096 (as vkllm_session_params) */
    uint32_t n_seq;     /* 0 = 1 */
    int type_k, type_v; /* enum vkllm_kv_type; sessions on the pool must use the same */
};
struct vkllm_kv_pool_info {
    uint32_t block_tokens;   /* positions per block (VKLLM_KV_BLOCK) */
    uint32_t n_blocks;       /* in the pool */
    uint32_t n_held;         /* held by sessions */
    uint32_t n_cached;       /* held by none, keyed: a later prompt may take them */
    uint32_t n_free;         /* held by none, empty */
    uint64_t bytes;          /* device bytes of the pool (all blocks, K and V) */
    uint64_t block_bytes;    /* of one block */
    uint64_t queried_tokens; /* prompt tokens looked up in the pool's cache */
    uint64_t hit_tokens;     /* of those, found (taken instead of evaluated) */
    uint64_t evicted_blocks; /* cached blocks reused for new tokens */
    uint64_t preempted;      /* generations preempted because the pool ran dry (recomputed later) */
};
VKLLM_API struct vkllm_kv_pool_params vkllm_kv_pool_params_default(void);
/* Allocate a pool for model's sessions: refused before allocating (DEVICE_OOM, with the bytes
 * needed and free) when it does not fit, UNSUPPORTED when one layer's blocks exceed what the
 * device binds at once. */
VKLLM_API vkllm_status vkllm_kv_pool_init(vkllm_model_t model, const struct vkllm_kv_pool_params *params,
                                          vkllm_kv_pool_t *out);
/* Drop the handle; the memory goes when the last session on the pool is freed too. Free the pool
 * (and its sessions) before its model's context: the context's device memory goes with it. */
VKLLM_API void vkllm_kv_pool_free(vkllm_kv_pool_t p);
VKLLM_API void vkllm_kv_pool_get_info(vkllm_kv_pool_t p, struct vkllm_kv_pool_info *out);

/* What happens to the pool's cache, for a router that routes by prefix (vLLM's KV events, which
 * the llm-d router reads): a full block becomes findable (stored: its key, its parent's and its
 * tokens), stops being findable (removed: its key) or all of them go (cleared). A block's key is
 * a 64-bit hash of its tokens and every token before them; parent is 0 for a sequence's first. */
enum vkllm_kv_event_type { VKLLM_KV_EVENT_STORED = 1, VKLLM_KV_EVENT_REMOVED, VKLLM_KV_EVENT_CLEARED };
struct vkllm_kv_event {
    enum vkllm_kv_event_type type;
    uint64_t key;          /* stored, removed */
    uint64_t parent;       /* stored */
    const int32_t *tokens; /* stored: the block's n_tokens token ids, valid during the call */
    uint32_t n_tokens;
};
typedef void (*vkllm_kv_event_fn)(const struct vkllm_kv_event *ev, void *user_data);
/* Call fn for each event, on the thread that caused it (one evaluating or freeing on the pool),
 * from now on; fn NULL stops. fn must not call into the pool. */
VKLLM_API void vkllm_kv_pool_set_events(vkllm_kv_pool_t p, vkllm_kv_event_fn fn, void *user_data);

struct vkllm_session_params {
    uint32_t n_ctx;       /* positions in the KV cache; 0 = the training context, at most 4096 */
    uint32_t n_ubatch;    /* tokens per prefill micro-batch; 0 = 256 */
    int type_k, type_v;   /* enum vkllm_kv_type of K and V (llama.cpp's --cache-type-k/v); 0 = f16.
                             q8_0 needs rows of a multiple of 32 values (UNSUPPORTED otherwise); on CPU
                             devices K and V both q8_0 keep the fast attention kernel */
    vkllm_kv_pool_t pool; /* blocks from this pool (its model and K/V types); NULL: a pool of the
                             session's own for n_ctx positions. Evaluating past what the pool has
                             free fails with VKLLM_STATUS_KV_FULL, nothing evaluated */
};

VKLLM_API struct vkllm_session_params vkllm_session_params_default(void);

/* Allocate the KV cache (f16 or q8_0: type_k / type_v, on the device) and the run state. A
 * context that does not fit in device memory is refused before anything is allocated (DEVICE_OOM
 * with bytes needed and free).
 * The session must be freed before its model. */
VKLLM_API vkllm_status vkllm_session_init(vkllm_model_t model, const struct vkllm_session_params *params,
                                          vkllm_session_t *out);
VKLLM_API void vkllm_session_free(vkllm_session_t s);

/* Evaluate n tokens at the next positions (n_past .. n_past+n-1): more than one token runs as a
 * prefill in micro-batches, a single token as one replayed decode step. all_logits keeps the
 * logits of every token, else only the last. CONTEXT_FULL (nothing evaluated) when the tokens do
 * not fit; INVALID_ARGUMENT for an id outside the vocabulary. */
VKLLM_API vkllm_status vkllm_session_eval(vkllm_session_t s, const int32_t *tokens, uint32_t n, int all_logits);

/* Logits (n_vocab floats) of token i of the last eval (i = 0 .. n-1 with all_logits; otherwise
 * only the last token, as i = 0). NULL when there is no such token. Valid until the next eval. */
VKLLM_API const float *vkllm_session_logits(vkllm_session_t s, uint32_t i);

/* One decode step of token that returns the greedy next token, taking the argmax on the device
 * and reading back one id instead of the logits. */
VKLLM_API vkllm_status vkllm_session_decode_greedy(vkllm_session_t s, int32_t token, int32_t *next);

VKLLM_API uint32_t vkllm_session_n_past(vkllm_session_t s); /* positions filled */
VKLLM_API uint32_t vkllm_session_n_ctx(vkllm_session_t s);  /* positions available */
/* How many leading tokens of tokens[0..n) the session's KV cache holds at positions 0.. (what a
 * generation with cache_prompt would reuse, before keeping at least one token to evaluate). */
VKLLM_API uint32_t vkllm_session_cached_prefix(vkllm_session_t s, const int32_t *tokens, uint32_t n);
/* Forget positions from n_past on (0 = start over). INVALID_ARGUMENT if n_past > current. */
VKLLM_API vkllm_status vkllm_session_truncate(vkllm_session_t s, uint32_t n_past);

struct vkllm_session_memory {
    uint64_t kv_bytes_allocated; /* the session's KV cache, K and V, all layers: its own pool, or the
                                    blocks it holds of a shared one (and its window rings) */
    uint64_t kv_bytes_used;      /* the part holding the n_past positions */
    uint64_t kv_bytes_per_token; /* what one more position of context costs */
    uint64_t state_bytes;        /* activations and scratch */
    uint64_t device_bytes;       /* everything the context has allocated on the device now */
    uint64_t kv_bytes_cached;    /* of the session's KV pool: blocks no session holds that keep
                                    tokens for later prompts (reusable until evicted) */
    uint64_t kv_bytes_rings;     /* of kv_bytes_allocated: the sliding-window layers' rings, the
                                    session's own (never shared: sessions of one pool share only
                                    its blocks, so a pool's bytes plus each session's rings count
                                    every byte once) */
};
VKLLM_API void vkllm_session_memory(vkllm_session_t s, struct vkllm_session_memory *out);

/* A model split over several devices (vkllm_model_params.n_devices): milliseconds the session
 * has spent in device i's part of its steps since it was made (its command buffers, submitted and
 * waited for, and the host's copy of the residual stream to the next device), for per-device time
 * in bench and compare. Without a split, device 0 is the whole step. 0 past the last device. */
VKLLM_API double vkllm_session_device_ms(vkllm_session_t s, uint32_t i);

/* Embeddings: the model's final hidden state (after the output norm, before the output
 * projection) of each of tokens[0..n), pooled over the tokens (MEAN), taken at the last one
 * (LAST, as for decoder-only embedding models) or at the first (CLS), and scaled to unit length
 * when normalize. out: n_embd floats (vkllm_model_info.n_embd). The tokens are evaluated from
 * position 0 of the session (its KV cache then holds them: n_past == n); CONTEXT_FULL when
 * n > n_ctx, INVALID_ARGUMENT for no tokens or an id outside the vocabulary, both with the session
 * as it was; a failure once the run started (KV_FULL, the device) leaves the session empty.
 * vkllm_model_info.pooling says which the file asks for. */
enum vkllm_pooling { VKLLM_POOLING_MEAN = 0, VKLLM_POOLING_LAST = 1, VKLLM_POOLING_CLS = 2 };
VKLLM_API vkllm_status vkllm_session_embed(vkllm_session_t s, const int32_t *tokens, uint32_t n,
                                           enum vkllm_pooling pooling, int normalize, float *out);

/* Profiling (vkllm bench --profile): with on, the session's later evaluations put a device
 * timestamp after every dispatch (a recorded decode step is recorded again). The dispatches of
 * the last command list an evaluation ran (the last prefill micro-batch, or the decode step; a
 * batched step of several gens, vkllm_gen_step with n > 1, is not profiled and not counted):
 * their count (0 when profiling is off or the device has no timestamps) and dispatch i, with the
 * cost each declared at the position the list ran at (docs/benchmarks.md defines the fields). */
struct vkllm_dispatch_profile {
    const char *label;  /* the op ("matvec", "attn_tb", "rmsnorm", ...) */
    const char *kernel; /* the shader ("matvec_q8_0") */
    double ns;          /* device time since the previous timestamp */
    uint64_t bytes_read, bytes_written, weight_bytes, flops;
    int barrier;      /* 1: it waited at a barrier for earlier dispatches it depends on */
    char variant[96]; /* the kernel and how it ran: "matvec_q4_k wg=64 spec=32,2,0,1,0 sg=32" (workgroup
                         size, the other specialization constants, the subgroup size it required) */
};
VKLLM_API vkllm_status vkllm_session_set_profile(vkllm_session_t s, int on);
VKLLM_API uint32_t vkllm_session_profile_count(vkllm_session_t s);
VKLLM_API vkllm_status vkllm_session_profile_get(vkllm_session_t s, uint32_t i, struct vkllm_dispatch_profile *out);

/* ---------------------------------------------------------------------------------------------
 * Generation: prompt -> tokens -> prefill -> sample -> stream -> decode -> ...
 * ------------------------------------------------------------------------------------------- */

/* Sampling; the defaults (vkllm_generate_params_default) are llama.cpp's. */
struct vkllm_sampling_params {
    float temperature;       /* <= 0: greedy (argmax on the device). default 0.8 */
    int32_t top_k;           /* <= 0: off. default 40 */
    float top_p;             /* >= 1: off. default 0.95 */
    float min_p;             /* <= 0: off. default 0.05 */
    float repeat_penalty;    /* 1: off (default) */
    float frequency_penalty; /* 0: off */
    float presence_penalty;  /* 0: off */
    int32_t penalty_last_n;  /* tokens the penalties look back over; default 64, -1 = all */
    uint64_t seed;           /* used when has_seed; otherwise one is picked and reported in stats */
    int has_seed;
    const char *order;          /* stage order, e.g. "top_k;top_p;min_p;temperature" (NULL: that, the
                                   llama.cpp default); stages left out do not run */
    const int32_t *bias_tokens; /* logit bias: n_bias (token, value) pairs; -INFINITY bans */
    const float *bias_values;
    uint32_t n_bias;
};

enum vkllm_stop_reason {
    VKLLM_STOP_NONE = 0,
    VKLLM_STOP_EOS = 1,          /* the model's end-of-generation token */
    VKLLM_STOP_MAX_TOKENS = 2,   /* n_predict reached */
    VKLLM_STOP_STRING = 3,       /* a stop string appeared (it is not emitted) */
    VKLLM_STOP_CONTEXT_FULL = 4, /* the session's context (n_ctx) has no room for another token */
    VKLLM_STOP_CANCELLED = 5,    /* the callback asked to stop */
    VKLLM_STOP_KV_FULL = 6,      /* the shared KV pool (vkllm_session_params.pool) has no free block
                                    for another token, though the context has room, and no other
                                    generation on it to preempt (alone on a pool too small for it;
                                    see vkllm_gen_step) */
};

VKLLM_API const char *vkllm_stop_reason_str(enum vkllm_stop_reason r);

/* A piece of the output with its tokens' records (vkllm_generate_params.on_piece): the text as the
 * text callback gets it, and with n_probs >= 0 the records (as vkllm_gen_token_probs gives them) of
 * generated tokens first_prob .. first_prob + n_probs - 1: those whose text this piece completes
 * (vkllm_gen_n_released). A token whose text is held back (a stop string may be starting) comes
 * with the piece that releases that text; the token a stop string cuts comes with the reply's last
 * text; tokens wholly inside a stop string, and the end-of-generation token, never come. Records
 * released after the last text (a cut token whose kept part went out earlier) come in one last
 * call with len 0 when the gen stops (not when it is cancelled or fails). The pointers are valid
 * during the call. */
struct vkllm_token_probs; /* below */
struct vkllm_text_piece {
    const char *text;
    size_t len;                            /* bytes; > 0 except in that last call */
    const struct vkllm_token_probs *probs; /* NULL when n_probs is 0 */
    uint32_t n_probs;
    uint32_t first_prob; /* the generated token probs[0] belongs to */
};

struct vkllm_generate_params {
    const char *prompt;           /* UTF-8 text; "" starts from BOS alone */
    size_t prompt_len;            /* bytes; 0 = strlen(prompt) */
    const int32_t *prompt_tokens; /* non-NULL: the prompt as token ids instead of text (prompt is
                                     ignored); BOS goes in front as for a text prompt, unless the
                                     ids start with it */
    size_t n_prompt_tokens;
    int32_t n_predict;       /* tokens to generate at most; < 0 = until EOS or a full context */
    const char *const *stop; /* stop strings (n_stop of them) */
    uint32_t n_stop;
    int add_bos;                  /* -1: as the model asks (default); 0 no; 1 yes */
    int parse_special;            /* "<|im_start|>" in the prompt becomes its token (default 0) */
    int keep_history;             /* 1: continue after the tokens already in the session (chat; the
                                     prompt must not be empty: a generation's last token was
                                     sampled, not evaluated, so the session does not hold it);
                                     0: start the session over (default) */
    int cache_prompt;             /* with keep_history 0: keep the longest prefix of the prompt the
                                     session's KV cache already holds and evaluate only the rest
                                     (llama-server's cache_prompt). default 1 */
    uint32_t prefill_chunk;       /* > 0: vkllm_gen_start evaluates at most this many prompt tokens and
                                     each vkllm_gen_step the next chunk (of one prefilling gen per
                                     step: several wait their turn), the first token being sampled
                                     after the last (generations decoding beside it wait one chunk at a
                                     time, not the whole prompt). 0: the whole prompt in
                                     vkllm_gen_start (default) */
    int32_t n_probs;              /* >= 0: record, for every generated token, its log-probability and the
                                     n_probs most likely tokens (at most VKLLM_MAX_TOP_PROBS) under the
                                     model's own distribution: softmax of the logits at temperature 1,
                                     before logit bias, penalties and truncation (OpenAI's and vLLM's
                                     default logprobs); vkllm_gen_token_probs reads them. The argmax is
                                     then taken on the host. -1: off (default) */
    int json_object;              /* 1: JSON mode (OpenAI's response_format json_object): every token is
                                     drawn among those whose text keeps the output a prefix of one JSON
                                     object (whitespace around it allowed; nesting up to 32), and
                                     generation stops (VKLLM_STOP_EOS) once the object closes; the model
                                     should still be asked for JSON in the prompt. The argmax is then
                                     taken on the host. 0: off (default) */
    const char *grammar;          /* non-NULL: a GBNF grammar (llama.cpp's format; the rule `root` is the
                                     whole output): every token is drawn among those whose text keeps
                                     the output a prefix of a sentence of the grammar (the others get
                                     -inf before the sampler's chain, so its truncation works on the
                                     allowed tokens; n_probs stays the model's own distribution);
                                     end-of-generation only once the output
                                     is a whole sentence, and generation stops (VKLLM_STOP_EOS) when
                                     nothing more can follow. A bad grammar: INVALID_ARGUMENT naming the
                                     line and column. Not with json_object. NULL: off (default) */
    size_t grammar_len;           /* bytes; 0 = strlen(grammar) */
    const vkllm_session_t *share; /* with cache_prompt: other sessions of the same model and context
                                whose KV caches may hold a longer prefix of the prompt than this
                                session's; the longest is copied on the device instead of being
                                evaluated again (n > 1 choices of one prompt, one system prompt
                                across users). The caller serializes calls on them as on this one.
                                NULL: none (default) */
    uint32_t n_share;
    int (*cancel)(void *user_data); /* non-NULL: asked before each micro-batch (the session's n_ubatch
                                tokens) of the prompt's evaluation, in vkllm_gen_start and in the
                                chunks vkllm_gen_step evaluates; nonzero stops it there, so that a
                                long prompt need not be evaluated to the end to be abandoned (a
                                server shutting down, a client gone). vkllm_gen_start then returns
                                CANCELLED and no gen; a chunk in vkllm_gen_step ends its gen with
                                VKLLM_STOP_CANCELLED. The session keeps the micro-batches evaluated
                                so far (a prefix later prompts may reuse). Called on the thread
                                that evaluates. NULL: none (default) */
    void *cancel_user_data;
    struct vkllm_sampling_params sampling;
    int (*on_piece)(const struct vkllm_text_piece *piece, void *user_data); /* non-NULL: called with
                                every piece of text together with the records of the tokens that
                                produced it (below), before the text callback (which may then be
                                NULL); nonzero stops as the text callback's does. NULL: none (default) */
    void *piece_user_data;
};

VKLLM_API struct vkllm_generate_params vkllm_generate_params_default(void);

/* Check a GBNF grammar (vkllm_generate_params.grammar) without generating: OK, or
 * INVALID_ARGUMENT with the line, column and problem in vkllm_last_error(). len 0 = strlen. */
VKLLM_API vkllm_status vkllm_grammar_validate(const char *gbnf, size_t len);

/* Called with each piece of complete UTF-8 text as it is produced (a character split across
 * tokens arrives whole; text that may begin a stop string is held until it cannot). Return
 * nonzero to stop (reason VKLLM_STOP_CANCELLED). It runs on the thread in vkllm_generate,
 * vkllm_gen_start or vkllm_gen_step, inside that call: text is valid during the call only, and
 * the callback must not call the library on that context (see Threads at the top). */
typedef int (*vkllm_text_fn)(const char *text, size_t len, void *user_data);

/* Per-generation metrics, from real clocks (CLOCK_MONOTONIC). */
struct vkllm_generate_stats {
    uint32_t n_prompt;        /* prompt tokens (BOS included) */
    uint32_t n_prompt_cached; /* of those, already in the session's KV cache (not evaluated again) */
    uint32_t n_prompt_shared; /* of those, copied from another session's cache (params.share) */
    uint32_t n_generated;     /* tokens sampled */
    double ttft_ms;           /* call start -> first token sampled (tokenize + prefill + first
                                 sample), measured; its text reaches the callback then, unless
                                 held back while a stop string may be starting (or an
                                 incomplete UTF-8 character) */
    double prefill_ms;        /* the prompt's forward pass */
    double prefill_tps;       /* (n_prompt - n_prompt_cached) / prefill time */
    double itl_mean_ms, itl_p50_ms, itl_p90_ms, itl_max_ms; /* between consecutive tokens */
    double decode_tps;                                      /* tokens after the first / time spent after the first */
    double total_ms;                                        /* call start -> return */
    uint64_t kv_bytes_used;                                 /* KV cache holding the positions in use at the end */
    uint64_t kv_bytes_allocated;
    uint64_t kv_bytes_per_token; /* K and V of one position, all layers */
    uint64_t device_bytes;       /* all device memory of the context */
    uint64_t seed;               /* the sampler's seed */
    enum vkllm_stop_reason stop_reason;
    uint64_t kv_bytes_cached; /* the KV pool's cached blocks (vkllm_session_memory) */
};

/* Generate from params->prompt on session s, streaming text to fn (may be NULL). A prompt longer
 * than the context fails with CONTEXT_FULL before anything is evaluated. stats may be NULL.
 * Blocks until the generation ends, calling fn on this thread as text comes: an application
 * runs it on a worker thread (or steps vkllm_gen_start / vkllm_gen_step from its event loop). */
VKLLM_API vkllm_status vkllm_generate(vkllm_session_t s, const struct vkllm_generate_params *params, vkllm_text_fn fn,
                                      void *user_data, struct vkllm_generate_stats *stats);

/* ---------------------------------------------------------------------------------------------
 * Step-wise generation: vkllm_generate one token at a time, many requests decoded together
 *
 * A gen is one request on its own session: vkllm_gen_start tokenizes the prompt, prefills it
 * and samples the first token; each vkllm_gen_step then decodes one more token for every gen
 * it is given, in one batched forward pass (the weights are read once for the whole batch), so
 * a server can run several requests at once and let new ones join between steps (continuous
 * batching). A gen's tokens do not depend on what else is in the batch: the batched decode
 * computes each row exactly as a lone decode step does (bit for bit), so a greedy request gives
 * the same text alone and under load. vkllm_generate is vkllm_gen_start + vkllm_gen_step until
 * done.
 * ------------------------------------------------------------------------------------------- */

typedef struct vkllm_gen *vkllm_gen_t;

/* Start a request on session s (which it owns until vkllm_gen_free: one gen per session at a
 * time; meanwhile the session's eval, embed, decode_greedy, truncate and another gen_start fail
 * with INVALID_ARGUMENT, and freeing the session ends the gen with INVALID_ARGUMENT instead of
 * leaving it on freed memory). params is copied (stop strings, order and logit bias too). Text goes to fn as in
 * vkllm_generate, from this call on (the first token's text included). Fails, with nothing
 * evaluated, like vkllm_generate: CONTEXT_FULL for a prompt longer than the context,
 * INVALID_ARGUMENT for bad sampling parameters, UNSUPPORTED when the tokenizer is not; on a KV
 * pool shared with other gens, KV_FULL while a preempted gen waits for the pool (it goes first)
 * or when the prompt would leave no block for each running gen's next token (a server queues
 * the request and tries again later). */
VKLLM_API vkllm_status vkllm_gen_start(vkllm_session_t s, const struct vkllm_generate_params *params, vkllm_text_fn fn,
                                       void *user_data, vkllm_gen_t *out);

/* One decode step for every gen of gens[0..n) that is still running (finished ones are skipped),
 * batched, and the next prompt chunk of one gen still prefilling (the first such in gens). The
 * gens must be on different sessions of one model. Stopping (EOS, n_predict, stop string, full
 * context or pool, callback) is per gen. An error of the batched step stops every gen in it; an
 * error of one gen's own (its prompt chunk, its sampling) stops that gen; either way reason
 * VKLLM_STOP_NONE with the error in vkllm_gen_status, and the first error is returned.
 * Preemption: when a shared KV pool has no block for a gen's next token, the youngest gen on that
 * pool (by start) is preempted, as vLLM does: its blocks go back to the pool (the full ones stay
 * findable as cached prefix), and it waits, not done, producing nothing. Once the pool has room
 * for its text and a block for each running gen, a later step takes it back: its prompt and the
 * tokens it had generated are evaluated again (cached blocks reused) and it goes on from the token
 * it had chosen, its sampler's state kept, so its callbacks see one uninterrupted text. Pass every
 * gen of the pool to vkllm_gen_step, waiting ones included, for them to come back. */
VKLLM_API vkllm_status vkllm_gen_step(vkllm_gen_t const *gens, uint32_t n);
/* (Each call takes one decode step, so an event loop can step a gen between UI events; the
 * callbacks run inside it, on the calling thread.) */

/* Why g stopped; VKLLM_STOP_NONE while it is still running (or after an error). */
VKLLM_API enum vkllm_stop_reason vkllm_gen_stop_reason(vkllm_gen_t g);
/* 1 once g has stopped (for any reason, or an error). */
VKLLM_API int vkllm_gen_done(vkllm_gen_t g);
/* VKLLM_STATUS_OK, or the error that stopped g. */
VKLLM_API vkllm_status vkllm_gen_status(vkllm_gen_t g);
/* Stop g now (stop reason VKLLM_STOP_CANCELLED); its held-back text is dropped. Not from another
 * thread while a step runs, nor from g's callbacks: between steps, on the thread (or under the
 * lock) that steps g. To stop from elsewhere, have a callback return nonzero. */
VKLLM_API void vkllm_gen_cancel(vkllm_gen_t g);
/* Tokens generated so far (cheap; vkllm_gen_stats computes percentiles). */
VKLLM_API uint32_t vkllm_gen_n_generated(vkllm_gen_t g);
/* With params.n_probs >= 0: generated token i (0 .. vkllm_gen_n_generated - 1; the end-of-text
 * token that stopped g, if any, is i = n_generated) with its log-probability and the n_top most
 * likely tokens, highest first. INVALID_ARGUMENT when i has none or n_probs was off. */
#define VKLLM_MAX_TOP_PROBS 20
struct vkllm_token_prob {
    int32_t id;
    float logprob; /* natural log */
};
struct vkllm_token_probs {
    int32_t id; /* the token chosen */
    float logprob;
    uint32_t n_top;
    struct vkllm_token_prob top[VKLLM_MAX_TOP_PROBS];
};
VKLLM_API vkllm_status vkllm_gen_token_probs(vkllm_gen_t g, uint32_t i, struct vkllm_token_probs *out);
/* With params.n_probs >= 0: how many generated tokens (from the first) have all their text handed
 * to the callback (counted before each call, so inside it the call's text counts). Text a stop
 * string may still start is held back, and its tokens with it. Once a stop string matched, the
 * token it cuts (some of its text in the reply, the rest the stop string's) counts too; tokens
 * wholly inside the stop string never do. vkllm_generate_params.on_piece hands each piece the
 * records this count passed since the piece before. */
VKLLM_API uint32_t vkllm_gen_n_released(vkllm_gen_t g);
/* Metrics so far (final once done), as for vkllm_generate. */
VKLLM_API void vkllm_gen_stats(vkllm_gen_t g, struct vkllm_generate_stats *out);
/* Free g; its session is free for another request (its KV cache keeps the tokens, as after
 * vkllm_generate). NULL is a no-op. */
VKLLM_API void vkllm_gen_free(vkllm_gen_t g);

/* ---------------------------------------------------------------------------------------------
 * Tokens
 * ------------------------------------------------------------------------------------------- */

/* A tokenizer: the vocabulary of a GGUF file (a model, or a vocabulary-only file), usable without
 * a device. Immutable once loaded: any number of threads may use one at once. */
typedef struct vkllm_tokenizer *vkllm_tokenizer_t;
struct vkllm_chat_message; /* below */

/* Load the tokenizer of the GGUF file at path. UNSUPPORTED (naming it) for a tokenizer model or
 * pre-tokenizer vkllm does not implement; BAD_FORMAT for missing or inconsistent arrays. */
VKLLM_API vkllm_status vkllm_tokenizer_load(const char *path, vkllm_tokenizer_t *out);
VKLLM_API void vkllm_tokenizer_free(vkllm_tokenizer_t t);

/* The model's tokenizer, owned by the model; UNSUPPORTED (saying why) when it has none vkllm can
 * build (the model still computes logits). */
VKLLM_API vkllm_status vkllm_model_tokenizer(vkllm_model_t model, vkllm_tokenizer_t *out);

/* As vkllm_tokenize, vkllm_detokenize and vkllm_chat_format, on a tokenizer. decode's *len (may be
 * NULL) gets the text's bytes: a byte token may be a NUL. */
VKLLM_API vkllm_status vkllm_tokenizer_encode(vkllm_tokenizer_t t, const char *text, size_t len, int add_bos,
                                              int parse_special, int32_t *out, size_t cap, size_t *n_out);
VKLLM_API vkllm_status vkllm_tokenizer_decode(vkllm_tokenizer_t t, const int32_t *ids, size_t n, int render_special,
                                              char **out, size_t *len);
VKLLM_API vkllm_status vkllm_tokenizer_chat_format(vkllm_tokenizer_t t, const char *template_name,
                                                   const struct vkllm_chat_message *msgs, size_t n,
                                                   int add_generation_prompt, char **out);
/* The bytes token id stands for (a byte token: its byte; SentencePiece's U+2581: a space); control
 * tokens give their text with render_special, nothing otherwise. Valid while t lives.
 * INVALID_ARGUMENT for an id outside the vocabulary. */
VKLLM_API vkllm_status vkllm_tokenizer_piece(vkllm_tokenizer_t t, int32_t id, int render_special, const char **piece,
                                             size_t *len);
VKLLM_API uint32_t vkllm_tokenizer_n_vocab(vkllm_tokenizer_t t);

/* Tokenize text (len bytes; 0 = strlen) with the model's vocabulary. add_bos: -1 as the model
 * asks, 0 no, 1 yes. parse_special: text such as "<|im_start|>" becomes its special token.
 * Writes at most cap ids to out and sets *n_out to the number of tokens (when *n_out > cap, call
 * again with room for them). UNSUPPORTED when the model's tokenizer is not supported. */
VKLLM_API vkllm_status vkllm_tokenize(vkllm_model_t model, const char *text, size_t len, int add_bos, int parse_special,
                                      int32_t *out, size_t cap, size_t *n_out);

/* The text of ids[0..n) as one NUL-terminated UTF-8 string (free with vkllm_free); special
 * tokens (BOS, EOS, ...) appear as their text only with render_special. INVALID_ARGUMENT for an
 * id outside the vocabulary. */
VKLLM_API vkllm_status vkllm_detokenize(vkllm_model_t model, const int32_t *ids, size_t n, int render_special,
                                        char **out);

/* The model's vocabulary size. */
VKLLM_API uint32_t vkllm_model_n_vocab(vkllm_model_t model);

/* ---------------------------------------------------------------------------------------------
 * Chat templates
 * ------------------------------------------------------------------------------------------- */

struct vkllm_chat_message {
    const char *role; /* "system", "user", "assistant" */
    const char *content;
};

/* Known template names, comma-separated ("chatml, llama2, llama3, mistral-v7, ..."). */
VKLLM_API const char *vkllm_chat_template_names(void);

/* The name of the template vkllm_chat_format would use (template_name, or the one recognized
 * in the model's file): *name is static. NOT_FOUND when the model has none and none is named. */
VKLLM_API vkllm_status vkllm_chat_template_resolve(vkllm_model_t model, const char *template_name, const char **name);

/* Render msgs with the model's chat template (recognized from tokenizer.chat_template) or the
 * one named by template_name (NULL: the model's). add_generation_prompt opens the assistant's
 * turn. *out (NUL-terminated, free with vkllm_free) is a prompt for vkllm_generate with
 * parse_special = 1. NOT_FOUND when the model has no template and none is named; UNSUPPORTED or
 * INVALID_ARGUMENT, listing the known names, for one vkllm does not know. */
VKLLM_API vkllm_status vkllm_chat_format(vkllm_model_t model, const char *template_name,
                                         const struct vkllm_chat_message *msgs, size_t n, int add_generation_prompt,
                                         char **out);

/* ---------------------------------------------------------------------------------------------
 * The scalar reference: the whole forward pass in plain C (fp32, one token at a time, its own KV
 * cache), the oracle the device is checked against; slow, for checking numerics, never a product
 * path. No device.
 * ------------------------------------------------------------------------------------------- */

typedef struct vkllm_ref *vkllm_ref_t;

/* The reference for the model file at path with room for n_ctx positions (0: its training
 * context). Errors as vkllm_model_load's (without the device ones); OOM when the cache does not
 * fit in host memory. kv_f16: round the cache to f16 as the device does. */
VKLLM_API vkllm_status vkllm_ref_init(const char *path, uint32_t n_ctx, int kv_f16, vkllm_ref_t *out);
VKLLM_API void vkllm_ref_free(vkllm_ref_t r);
/* Run token at position pos (0..pos-1 run before, in order) and point *logits at the n_vocab
 * logits, valid until the next call. */
VKLLM_API vkllm_status vkllm_ref_eval(vkllm_ref_t r, int32_t token, uint32_t pos, const float **logits);
VKLLM_API uint32_t vkllm_ref_n_vocab(vkllm_ref_t r);

/* ---------------------------------------------------------------------------------------------
 * Random-weight models (`vkllm make-model`): GGUF files of any supported architecture, shape
 * and tensor type, with llama.cpp's key and tensor names, for tests and benchmarks. Same
 * parameters give the same bytes.
 * ------------------------------------------------------------------------------------------- */

struct vkllm_make_model_params {
    char arch[16]; /* "llama", "qwen2", "qwen3" */
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv;
    uint32_t head_dim;    /* 0: n_embd / n_head */
    uint32_t n_vocab;     /* >= 259 (<unk>, <s>, </s>, 256 byte tokens) */
    uint32_t n_ctx;       /* written as <arch>.context_length */
    char type[16];        /* matrices: "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                             "q4_K", "q5_K", "q6_K" (norms and biases stay f32), or one of
                             llama.cpp's mixes: "q3_K_s", "q3_K_m", "q3_K_l", "q4_K_s", "q4_K_m",
                             "q5_K_s", "q5_K_m" (docs/models.md has their tables) */
    int tied;             /* 1: no output.weight */
    int optional_tensors; /* 1: also the tensors the architecture may have (llama: q/k/v/output biases) */
    uint64_t seed;
    float rope_theta, rms_eps;
    char name[64];                    /* general.name; "": generated */
    uint32_t n_expert, n_expert_used; /* mixture of experts (llama: Mixtral's layout; qwen3moe, gpt-oss):
                                         n_expert FFNs of n_ff, n_expert_used per token; 0: a dense FFN
                                         (qwen3moe, gpt-oss: 8, and 2 or 4 per token) */
    uint32_t n_rot;                   /* rope.dimension_count: dims rotated per head; 0: all of them */
    const volatile int *cancel;       /* non-NULL: looked at before each tensor; once *cancel != 0 the write
                                         stops with CANCELLED and its temporary file is removed (a CLI's
                                         SIGINT handler sets it) */
};

/* A tiny llama (2 layers, 64 embd, 4 heads, 2 kv heads, 512 vocab), f32, seed 1. */
VKLLM_API struct vkllm_make_model_params vkllm_make_model_params_default(void);
/* Set the shape of preset name (arch, shape, tied, rope theta, rms eps, context); NOT_FOUND for
 * an unknown one. Preset i's name and description (NULL past the end), for listings. */
VKLLM_API vkllm_status vkllm_make_model_preset(const char *name, struct vkllm_make_model_params *p);
VKLLM_API const char *vkllm_make_model_preset_name(uint32_t i, const char **description);
/* Write the file (atomically replaced); INVALID_ARGUMENT for a bad shape, arch or type. Matrices
 * whose rows are not a multiple of the type's block fall back to a smaller block type (logged). */
VKLLM_API vkllm_status vkllm_make_model(const struct vkllm_make_model_params *p, const char *path);

/* Free memory the library handed out (vkllm_chat_format's text). NULL is a no-op. */
VKLLM_API void vkllm_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* VKLLM_H */
