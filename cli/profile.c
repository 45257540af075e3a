/* profile.c - see profile.h. */
#include <stdlib.h>
#include <string.h>

#include "profile.h"

void cli_fill_tokens(int32_t *t, int n, uint32_t n_vocab, uint32_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        t[i] = (int32_t)(3 + (seed >> 8) % (n_vocab > 3 ? n_vocab - 3 : 1));
    }
}

int cli_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One step at depth: the cache truncated to depth, then a decode step (n == 1) or a prefill of
 * n tokens; its wall clock in ms. */
static vkllm_status profile_step(vkllm_session_t s, uint32_t n_vocab, int n, int depth, int greedy, double *ms) {
    vkllm_status st = vkllm_session_truncate(s, (uint32_t)depth);
    int32_t *toks = malloc(sizeof *toks * (size_t)n);
    if (!toks) return VKLLM_STATUS_OOM;
    cli_fill_tokens(toks, n, n_vocab, 13);
    double t0 = cli_now();
    if (!st && n == 1 && greedy) st = vkllm_session_decode_greedy(s, toks[0], &toks[0]);
    else if (!st) st = vkllm_session_eval(s, toks, (uint32_t)n, 0);
    *ms = (cli_now() - t0) * 1e3;
    free(toks);
    return st;
}

/* The dispatches of the step that ran last, per kernel label; NULL, or why not. */
static const char *profile_collect(vkllm_session_t s, struct profile *p) {
    uint32_t n = vkllm_session_profile_count(s);
    if (n == 0) return "the device has no timestamps on its compute queue";
    for (uint32_t i = 0; i < n; i++) {
        struct vkllm_dispatch_profile t;
        if (vkllm_session_profile_get(s, i, &t)) return vkllm_last_error();
        int j = 0;
        while (j < p->n_k && strcmp(p->k[j].label, t.label)) j++;
        if (j == MAX_KERNELS) return "more kernel labels than the table holds";
        struct kernel *k = &p->k[j];
        if (j == p->n_k) memset(k, 0, sizeof *k), k->label = t.label, p->n_k++;
        k->calls++;
        k->ns += t.ns;
        k->cost.bytes_read += t.bytes_read;
        k->cost.bytes_written += t.bytes_written;
        k->cost.weight_bytes += t.weight_bytes;
        k->cost.flops += t.flops;
        k->no_cost += !t.bytes_read && !t.bytes_written && !t.flops;
        k->barriers += t.barrier != 0;
        p->n_barriers += t.barrier != 0;
        int v = 0;
        while (v < k->n_shaders && v < MAX_SHADERS && strcmp(k->shaders[v], t.variant)) v++;
        if (v == k->n_shaders) {
            if (v < MAX_SHADERS) snprintf(k->shaders[v], sizeof k->shaders[v], "%s", t.variant);
            k->n_shaders++;
        }
        if (!strncmp(t.kernel, "matvec", 6)) p->matvec_weight_bytes += t.weight_bytes;
        p->sum_ms += t.ns * 1e-6;
        p->n_dispatch++;
    }
    return NULL;
}

/* Forget the dispatches collected so far (the profile's device and model stay). */
static void profile_clear(struct profile *p) {
    memset(p->k, 0, sizeof p->k);
    p->n_k = p->n_dispatch = p->n_barriers = 0;
    p->sum_ms = 0;
    p->matvec_weight_bytes = 0;
}

/* Profile one step (decode: n == 1) at depth: after a warm-up, PLAIN_STEPS unprofiled decode
 * steps (prefill: one), then with timestamps (decode: after one that records the step again; a
 * prefill batch is recorded every time) PROFILED_STEPS steps, of which the one with the shortest
 * wall clock is reported with its own dispatches: on a machine shared with other work, a step
 * whose thread waited to be scheduled holds time that no kernel took. */
vkllm_status cli_profile_run(vkllm_session_t s, int greedy, int n, int depth, struct profile *p) {
    uint32_t n_vocab = p->mi.n_vocab;
    double ms, plain[PLAIN_STEPS];
    vkllm_status st = vkllm_session_truncate(s, 0);
    int32_t *toks = malloc(sizeof *toks * (size_t)(depth + 1));
    if (!toks) return VKLLM_STATUS_OOM;
    if (!st && depth > 0) {
        cli_fill_tokens(toks, depth, n_vocab, 7);
        st = vkllm_session_eval(s, toks, (uint32_t)depth, 0);
    }
    free(toks);
    p->decode = n == 1, p->n_tokens = n, p->pos0 = depth;
    if (!st) st = vkllm_session_set_profile(s, 0);
    if (!st) st = profile_step(s, n_vocab, n, depth, greedy, &ms); /* warm-up */
    p->n_plain = n == 1 ? PLAIN_STEPS : 1;
    for (int i = 0; !st && i < p->n_plain; i++) st = profile_step(s, n_vocab, n, depth, greedy, &plain[i]);
    if (!st) st = vkllm_session_set_profile(s, 1);
    if (!st && n == 1) st = profile_step(s, n_vocab, n, depth, greedy, &ms); /* records it with timestamps */
    for (int i = 0; !st && i < PROFILED_STEPS; i++) {
        st = profile_step(s, n_vocab, n, depth, greedy, &ms);
        if (st || (i > 0 && ms >= p->step_ms)) continue;
        profile_clear(p);
        p->step_ms = ms;
        if ((p->error = profile_collect(s, p))) st = VKLLM_STATUS_UNSUPPORTED;
    }
    vkllm_status st2 = vkllm_session_set_profile(s, 0);
    if (st) return st;
    qsort(plain, (size_t)p->n_plain, sizeof plain[0], cli_cmp_double);
    p->step_ms_plain = plain[p->n_plain / 2];
    return st2;
}

double cli_k_gbps(const struct kernel *k) {
    return k->ns > 0 ? (double)(k->cost.bytes_read + k->cost.bytes_written) / k->ns : 0;
}

double cli_k_gflops(const struct kernel *k) { return k->ns > 0 ? (double)k->cost.flops / k->ns : 0; }
