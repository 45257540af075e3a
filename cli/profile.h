/* profile.h - the per-kernel profile of one decode step or prefill micro-batch, shared by
 * `vkllm bench --profile` and `vkllm compare`: GPU timestamps after every dispatch
 * (vkllm_session_set_profile), summed per kernel label with the bytes and flops each dispatch
 * declares (struct vkllm_dispatch_profile), beside the wall clock of the same step and of
 * unprofiled ones. */
#ifndef CLI_PROFILE_H
#define CLI_PROFILE_H

#include <stdint.h>

#include "cli.h"

/* --profile: one decode step or one prefill micro-batch, per kernel label. */
#define MAX_KERNELS 64
#define MAX_SHADERS 4 /* variants listed per kernel label (more: "...") */
struct cost {
    uint64_t bytes_read, bytes_written, weight_bytes, flops;
};
struct kernel {
    const char *label;
    int calls;
    double ns;
    struct cost cost; /* summed over the calls, at the batch's position */
    int no_cost;      /* calls that declared no cost */
    int barriers;     /* calls that waited at a barrier for earlier dispatches */
    char shaders[MAX_SHADERS]
                [96]; /* the variants it ran ("matvec_q4_k wg=64 spec=32,2,0,1,0 sg=32"), in order of first use */
    int n_shaders;
};

struct profile {
    struct vkllm_device_info dev;
    struct vkllm_model_info mi;
    int decode;         /* 1: a decode step, 0: a prefill micro-batch */
    int n_tokens, pos0; /* tokens in the batch, its first position (= the depth) */
    struct kernel k[MAX_KERNELS];
    int n_k, n_dispatch, n_barriers;
    double sum_ms;                /* GPU time of all dispatches */
    double step_ms;               /* wall clock of the same (profiled) step: the shortest of PROFILED_STEPS */
    double step_ms_plain;         /* wall clock of an unprofiled step (decode: median of 3) */
    int n_plain;                  /* unprofiled steps measured */
    uint64_t matvec_weight_bytes; /* weight bytes the matvec kernels read (decode) */
    const char *error;            /* why the profile could not be taken, or NULL */
};
#define PLAIN_STEPS 3    /* unprofiled decode steps measured (prefill: 1) */
#define PROFILED_STEPS 3 /* steps measured with timestamps: the shortest is reported */

/* Deterministic token ids (avoiding ids 0..2, often control tokens). */
void cli_fill_tokens(int32_t *t, int n, uint32_t n_vocab, uint32_t seed);
/* qsort's comparison of doubles. */
int cli_cmp_double(const void *a, const void *b);
/* Profile one step (decode: n == 1; greedy: through the on-device argmax) at depth into p
 * (p->mi.n_vocab set): warm-up, unprofiled steps, then the shortest of PROFILED_STEPS with
 * timestamps. p->error says why when the device cannot (then the status is UNSUPPORTED). */
vkllm_status cli_profile_run(vkllm_session_t s, int greedy, int n, int depth, struct profile *p);
/* A kernel's bytes over its GPU time, GB/s; its GFLOP/s. */
double cli_k_gbps(const struct kernel *k);
double cli_k_gflops(const struct kernel *k);

#endif
