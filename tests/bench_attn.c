/* bench_attn.c - attention time, the two kernels side by side: attn.comp (VKLLM_ATTN_TEXEL=0) and
 * attn_tb.comp (=1; where the shape allows it). 32 heads, 4 kv heads, head_dim 64 (TinyLlama
 * 1.1B), n_ctx 8192: decode (one query, split + reduce) at several current lengths of one
 * recording, and prefill batches from position 0. Every case is timed for both kernels in turn,
 * `rounds` times (interleaved, so that a noisy machine hits both alike); printed: the median and
 * the minimum over the rounds of the mean time per submit, and old/new ratios of both.
 * Built, not a test: build-dir/tests/bench_attn [rounds [new|f16|lanes]] ("new": time attn_tb only,
 * for tuning its VKLLM_ATTN_TB_* overrides; "f16": attn.comp's walk in f32 (old) against f16
 * arithmetic (new, attn_f16 1); "lanes": the walk's key groups as on GPUs (old, attn_lanes 0)
 * against the device's own (new, -1: one lane each on CPU devices); both with attn_texel 0; knobs
 * set on the device, as the environment is read once when it opens). BENCH_ATTN_SHAPE=H,KV,D
 * sets the heads, kv heads and head_dim (default 32,4,64). Set VKLLM_VALIDATE=0 for
 * timing; BENCH_ATTN_PROFILE=1 prints each dispatch's GPU time of the last submit of every
 * measurement. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "ops_gpu.h"
#include "types.h"

#define MAX_ROUNDS 64

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
    double s[MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double minimum(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

struct bufs {
    struct vkllm__buffer *k, *v, *q, *o, *pos, *scratch;
};

/* One recording of attention of shape s with the kernel the tuning's attn_texel = texel picks,
 * and the knob (when not NULL) set to value (both kept for the recordings that follow). */
static struct vkllm__cmd *record(struct vkllm__gpu *gpu, const struct bufs *b, const struct vkllm__attn_shape *s,
                                 int texel, const char *knob, const char *value) {
    tune(gpu, "attn_texel", texel ? "1" : "0");
    if (knob) tune(gpu, knob, value); /* the ops read the device's tuning when they record */
    struct vkllm__cmd *c;
    CHECK(vkllm__cmd_init(gpu, &c));
    vkllm__cmd_set_profile(c, getenv("BENCH_ATTN_PROFILE") != NULL);
    CHECK(vkllm__cmd_begin(c));
    CHECK(vkllm__op_attention(c, vkllm__view_of(b->o), vkllm__view_of(b->q), vkllm__view_of(b->k), vkllm__view_of(b->v),
                              vkllm__view_of(b->pos), vkllm__view_of(b->scratch), s));
    CHECK(vkllm__cmd_end(c));
    return c;
}

/* Mean ms per submit of c at pos0, over enough submits to take ~100 ms (at least one). */
static double time_at(struct vkllm__cmd *c, struct vkllm__buffer *pos, uint32_t pos0) {
    CHECK(vkllm__buffer_upload(pos, 0, &pos0, 4));
    double t0 = now_ms();
    CHECK(vkllm__cmd_submit(c)); /* also the warm-up (shader JIT on the first use) */
    double one = now_ms() - t0;
    int iters = one > 100 ? 1 : (int)(100 / (one > 0.01 ? one : 0.01));
    if (iters > 200) iters = 200;
    t0 = now_ms();
    for (int i = 0; i < iters; i++) CHECK(vkllm__cmd_submit(c));
    double ms = (now_ms() - t0) / iters;
    for (uint32_t i = 0; i < vkllm__cmd_profile_count(c); i++) { /* BENCH_ATTN_PROFILE: the last submit's */
        struct vkllm__dispatch_time dt;
        CHECK(vkllm__cmd_profile_get(c, i, &dt));
        printf("    pos0 %u: %s %.3f ms\n", pos0, dt.label, dt.ns / 1e6);
    }
    return ms;
}

struct bench_case {
    const char *name;
    int prefill;  /* index into the prefill recordings, -1: decode */
    uint32_t len; /* decode: current length; prefill: tokens */
    double flop;
    double ms[2][MAX_ROUNDS];
};

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1) rounds = 1;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    const char *mode = argc > 2 ? argv[2] : "";
    int only_new = strcmp(mode, "new") == 0, f16 = strcmp(mode, "f16") == 0, lanes = strcmp(mode, "lanes") == 0;
    /* the two kernels: attn.comp (texel 0) against attn_tb, or attn.comp with the knob at each value */
    const char *knob = f16 ? "attn_f16" : lanes ? "attn_lanes" : NULL, *const values[2][2] = {{"0", "1"}, {"0", "-1"}};
    int texel_new = knob ? 0 : 1;
    uint32_t n_head = 32, n_kv = 4, dim = 64;
    const uint32_t n_ctx = 8192, n_pf_max = 512;
    const char *shape = getenv("BENCH_ATTN_SHAPE"); /* "heads,kv_heads,head_dim", e.g. Llama-3-8B's 32,8,128 */
    if (shape && (sscanf(shape, "%u,%u,%u%c", &n_head, &n_kv, &dim, &(char){0}) != 3 || !n_head || !n_kv ||
                  n_head % n_kv || !dim || dim % 8 || dim > 256)) {
        fprintf(stderr, "BENCH_ATTN_SHAPE: heads,kv_heads,head_dim (heads a multiple of kv_heads, head_dim of 8s)\n");
        return 2;
    }
    const float scale = 1.0f / sqrtf((float)dim);
    struct vkllm__gpu_params gp = {.device = -1, .validate = 0};
    struct vkllm__gpu *gpu;
    CHECK(vkllm__gpu_open(&gp, &gpu));
    uint64_t kv_halves = (uint64_t)n_ctx * n_kv * dim, qn = (uint64_t)n_pf_max * n_head * dim;
    uint16_t *kv = malloc(kv_halves * 2);
    float *q = malloc(qn * 4);
    if (!kv || !q) return 1;
    for (uint64_t i = 0; i < kv_halves; i++) kv[i] = vkllm__f32_to_f16((float)((i * 2654435761u) % 1000) / 1000 - 0.5f);
    for (uint64_t i = 0; i < qn; i++) q[i] = (float)(i % 17) / 17 - 0.5f;
    struct vkllm__attn_shape sd = {1, n_head, n_kv, dim, n_ctx, scale, 0, 0.0f, {0}, 0, 0, 0, {{0}, 0}, 0, NULL, NULL};
    tune(gpu, "attn_texel", "1"); /* scratch for either kernel */
    uint64_t sb = vkllm__attention_scratch_bytes(gpu, &sd);
    struct bufs b;
    CHECK(vkllm__buffer_alloc(gpu, kv_halves * 2, VKLLM__MEM_DEVICE, &b.k));
    CHECK(vkllm__buffer_alloc(gpu, kv_halves * 2, VKLLM__MEM_DEVICE, &b.v));
    CHECK(vkllm__buffer_alloc(gpu, qn * 4, VKLLM__MEM_DEVICE, &b.q));
    CHECK(vkllm__buffer_alloc(gpu, qn * 4, VKLLM__MEM_DEVICE, &b.o));
    CHECK(vkllm__buffer_alloc(gpu, 4, VKLLM__MEM_DEVICE, &b.pos));
    CHECK(vkllm__buffer_alloc(gpu, sb ? sb : 4, VKLLM__MEM_DEVICE, &b.scratch));
    CHECK(vkllm__buffer_upload(b.k, 0, kv, kv_halves * 2));
    CHECK(vkllm__buffer_upload(b.v, 0, kv, kv_halves * 2));
    CHECK(vkllm__buffer_upload(b.q, 0, q, qn * 4));

    static const uint32_t pf_n[] = {128, 512};
    struct vkllm__cmd *dec[2], *pf[2][2];
    for (int k = 0; k < 2; k++) {
        dec[k] = record(gpu, &b, &sd, k ? texel_new : 0, knob, values[lanes][k]);
        for (int i = 0; i < 2; i++) {
            struct vkllm__attn_shape sp = {pf_n[i], n_head, n_kv, dim, n_ctx,    scale, 0,    0.0f,
                                           {0},     0,      0,    0,   {{0}, 0}, 0,     NULL, NULL};
            pf[i][k] = record(gpu, &b, &sp, k ? texel_new : 0, knob, values[lanes][k]);
        }
    }
    struct bench_case cases[] = {
        {"decode len     1", -1, 1, 0, {{0}}},    {"decode len   128", -1, 128, 0, {{0}}},
        {"decode len   512", -1, 512, 0, {{0}}},  {"decode len  2048", -1, 2048, 0, {{0}}},
        {"decode len  8192", -1, 8192, 0, {{0}}}, {"prefill 128 tok", 0, 128, 0, {{0}}},
        {"prefill 512 tok", 1, 512, 0, {{0}}},
    };
    const int n_cases = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n_cases; i++) /* q.k and the v update, 2 flops each per element (causal) */
        cases[i].flop = cases[i].prefill < 0 ? 4.0 * n_head * dim * cases[i].len
                                             : 4.0 * n_head * dim * ((double)cases[i].len * (cases[i].len + 1) / 2);
    printf("device: %s\nattention, %u heads, %u kv heads, dim %u, n_ctx %u; %d rounds, kernels interleaved%s\n",
           vkllm__gpu_info(gpu)->name, n_head, n_kv, dim, n_ctx, rounds,
           f16     ? "; old: attn.comp f32, new: attn.comp f16 arithmetic"
           : lanes ? "; old: attn.comp with GPUs' key groups (attn_lanes 0), new: the device's (-1)"
                   : "; old: attn.comp, new: attn_tb");
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n_cases; i++)
            for (int k = 0; k < 2; k++) {
                int kk = (r + i) % 2 ? 1 - k : k; /* alternate which kernel goes first */
                if (only_new && kk == 0) continue;
                struct vkllm__cmd *c = cases[i].prefill < 0 ? dec[kk] : pf[cases[i].prefill][kk];
                cases[i].ms[kk][r] = time_at(c, b.pos, cases[i].prefill < 0 ? cases[i].len - 1 : 0);
            }
    printf("%-17s %12s %12s %12s %12s %8s %8s %10s\n", "case (ms/submit)", "old median", "old min", "new median",
           "new min", "med x", "min x", "new GF/s");
    for (int i = 0; i < n_cases; i++) {
        double om = median(cases[i].ms[0], rounds), on = minimum(cases[i].ms[0], rounds);
        double nm = median(cases[i].ms[1], rounds), nn = minimum(cases[i].ms[1], rounds);
        printf("%-17s %12.3f %12.3f %12.3f %12.3f %8.2f %8.2f %10.2f\n", cases[i].name, om, on, nm, nn, om / nm,
               on / nn, cases[i].flop / (nm / 1e3) / 1e9);
    }
    for (int k = 0; k < 2; k++) {
        vkllm__cmd_free(dec[k]);
        for (int i = 0; i < 2; i++) vkllm__cmd_free(pf[i][k]);
    }
    vkllm__buffer_free(b.k), vkllm__buffer_free(b.v), vkllm__buffer_free(b.q), vkllm__buffer_free(b.o);
    vkllm__buffer_free(b.pos), vkllm__buffer_free(b.scratch);
    vkllm__gpu_close(gpu);
    free(kv), free(q);
    return 0;
}
