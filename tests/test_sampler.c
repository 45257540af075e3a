/* test_sampler.c - the sampler against an independent reference: exact distributions (checked
 * directly through vkllm__sampler_probs and statistically with chi-square goodness of fit on
 * many seeded draws), edge cases, determinism, parameter errors, OOM and speed. CPU only. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "internal.h"
#include "sampler.h"

#define NV 12        /* vocabulary of the distribution tests */
#define DRAWS 200000 /* draws per chi-square test */

/* Logits of the distribution tests, deliberately not in token order. */
static const float k_logits[NV] = {0.3f, 2.0f, -0.4f, 1.2f, -2.2f, 1.5f, 0.0f, -0.9f, 1.0f, -3.0f, 0.7f, -1.5f};

/* Chi-square critical values at p = 0.001 for 1..30 degrees of freedom (checked against the
 * regularized upper incomplete gamma: Q(df/2, x/2) = 0.001). */
static const double k_chi2_crit[30] = {10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588,
                                       31.264, 32.909, 34.528, 36.123, 37.697, 39.252, 40.790, 42.312, 43.820, 45.315,
                                       46.797, 48.268, 49.728, 51.179, 52.620, 54.052, 55.476, 56.892, 58.301, 59.703};

/* --- the reference: straightforward, written apart from the library ---------------------- */

/* Rank of token i: how many tokens come before it (higher logit, or equal and lower id). */
static int ref_rank(const double *l, int n, int i) {
    int r = 0;
    for (int j = 0; j < n; j++)
        if (l[j] > l[i] || (l[j] == l[i] && j < i)) r++;
    return r;
}

/* The exact distribution for params p, the logits and the accepted history hist[0..n_hist). */
static void ref_probs(const struct vkllm_sampling_params *p, const float *logits, int n, const int32_t *hist,
                      int n_hist, double *out) {
    double *l = calloc((size_t)n, sizeof *l);
    int *keep = calloc((size_t)n, sizeof *keep);
    ASSERT(l && keep);
    for (int i = 0; i < n; i++) l[i] = isnan(logits[i]) ? -INFINITY : (double)logits[i];
    for (uint32_t b = 0; b < p->n_bias; b++) l[p->bias_tokens[b]] += (double)p->bias_values[b];
    int first = p->penalty_last_n < 0 ? 0 : (n_hist > p->penalty_last_n ? n_hist - p->penalty_last_n : 0);
    for (int t = 0; t < n; t++) {
        int c = 0;
        for (int h = first; h < n_hist && p->penalty_last_n != 0; h++) c += hist[h] == t;
        if (c == 0) continue;
        l[t] = l[t] <= 0 ? l[t] * p->repeat_penalty : l[t] / p->repeat_penalty;
        l[t] -= c * (double)p->frequency_penalty + (double)p->presence_penalty;
    }
    int *rank = calloc((size_t)n, sizeof *rank);
    ASSERT(rank);
    for (int i = 0; i < n; i++) rank[i] = ref_rank(l, n, i);
    for (int i = 0; i < n; i++) {
        int r = rank[i];
        keep[i] = l[i] > -INFINITY && (p->top_k <= 0 || r < p->top_k);
        if (p->temperature <= 0) keep[i] = r == 0;
    }
    double m = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
        if (keep[i] && l[i] > m) m = l[i];
    for (int i = 0; i < n; i++) sum += keep[i] ? exp(l[i] - m) : 0;
    if (p->top_p < 1 && p->temperature > 0) { /* walk the kept tokens by rank */
        double cum = 0;
        int done = 0;
        int *by_rank = calloc((size_t)n, sizeof *by_rank);
        ASSERT(by_rank);
        for (int i = 0; i < n; i++) by_rank[rank[i]] = i;
        for (int r = 0; r < n; r++) {
            int i = by_rank[r];
            if (!keep[i]) continue;
            if (done) {
                keep[i] = 0;
                continue;
            }
            cum += exp(l[i] - m) / sum;
            if (cum >= p->top_p) done = 1;
        }
        free(by_rank);
    }
    if (p->min_p > 0 && p->temperature > 0)
        for (int i = 0; i < n; i++)
            if (keep[i] && exp(l[i] - m) < p->min_p) keep[i] = 0; /* p_i / p_max < min_p */
    double t = p->temperature > 0 ? p->temperature : 1.0;
    sum = 0;
    for (int i = 0; i < n; i++) sum += out[i] = keep[i] ? exp((l[i] - m) / t) : 0;
    for (int i = 0; i < n; i++) out[i] /= sum;
    free(l);
    free(keep);
    free(rank);
}

/* --- helpers ----------------------------------------------------------------------------- */

static struct vkllm_sampling_params plain(float temp) {
    struct vkllm_sampling_params p;
    vkllm__sampler_params_default(&p);
    p.temperature = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.has_seed = 1;
    p.seed = 20240611;
    return p;
}

static struct vkllm__sampler *make(const struct vkllm_sampling_params *p, uint32_t n_vocab, const int32_t *hist,
                                   int n_hist) {
    struct vkllm__sampler *s = NULL;
    ASSERT_OK(vkllm__sampler_init(p, n_vocab, &s));
    for (int i = 0; i < n_hist; i++) vkllm__sampler_accept(s, hist[i]);
    return s;
}

/* probs from the library match the reference within float rounding. */
static void check_probs(const char *name, struct vkllm__sampler *s, const float *logits, const double *want, int n) {
    float *got = calloc((size_t)n, sizeof *got);
    ASSERT(got);
    ASSERT_OK(vkllm__sampler_probs(s, logits, got));
    for (int i = 0; i < n; i++) {
        if (!(fabs((double)got[i] - want[i]) <= 2e-6))
            FAILF("%s: probs[%d] = %.9g, want %.9g", name, i, got[i], want[i]);
        if (want[i] == 0 && got[i] != 0) FAILF("%s: token %d must be excluded", name, i);
    }
    free(got);
}

/* Chi-square goodness of fit of DRAWS seeded draws against want. Bins with an expected count
 * under 5 are pooled into one; df = bins - 1; fails above the p = 0.001 critical value, and on
 * any draw of a token whose expected probability is 0. */
static void check_draws(const char *name, struct vkllm__sampler *s, const float *logits, const double *want, int n) {
    long count[NV] = {0};
    ASSERT(n <= NV);
    for (int d = 0; d < DRAWS; d++) {
        int32_t t = -1;
        ASSERT_OK(vkllm__sampler_sample(s, logits, &t));
        ASSERT(t >= 0 && t < n);
        if (want[t] == 0) FAILF("%s: drew token %d, whose probability is 0", name, t);
        count[t]++;
    }
    double chi2 = 0, pool_e = 0, pool_o = 0;
    int bins = 0;
    for (int i = 0; i < n; i++) {
        double e = want[i] * DRAWS;
        if (want[i] == 0) continue;
        if (e < 5) {
            pool_e += e;
            pool_o += (double)count[i];
            continue;
        }
        chi2 += ((double)count[i] - e) * ((double)count[i] - e) / e;
        bins++;
    }
    if (pool_e > 0) {
        chi2 += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
        bins++;
    }
    int df = bins - 1;
    if (df < 1) { /* a single possible token: every draw was it (checked above) */
        printf("  %-28s support 1: all %d draws on it\n", name, DRAWS);
        return;
    }
    ASSERT(df <= 30);
    double crit = k_chi2_crit[df - 1];
    printf("  %-28s chi2 = %7.3f  df = %2d  critical(p=0.001) = %.3f\n", name, chi2, df, crit);
    if (chi2 > crit) FAILF("%s: chi-square %.3f exceeds %.3f (df %d)", name, chi2, crit, df);
}

/* Reference, probs and draws for one configuration over k_logits. */
static void dist_case(const char *name, const struct vkllm_sampling_params *p, const int32_t *hist, int n_hist) {
    double want[NV];
    ref_probs(p, k_logits, NV, hist, n_hist, want);
    struct vkllm__sampler *s = make(p, NV, hist, n_hist);
    check_probs(name, s, k_logits, want, NV);
    check_draws(name, s, k_logits, want, NV);
    vkllm__sampler_free(s);
}

/* --- tests ------------------------------------------------------------------------------- */

static void test_distributions(void) {
    printf("distributions (%d draws each):\n", DRAWS);
    struct vkllm_sampling_params p = plain(1.0f);
    dist_case("temperature 1", &p, NULL, 0);
    p = plain(0.5f);
    dist_case("temperature 0.5", &p, NULL, 0);
    p = plain(2.0f);
    dist_case("temperature 2", &p, NULL, 0);
    p = plain(1.0f);
    p.top_k = 3;
    dist_case("top-k 3", &p, NULL, 0);
    p = plain(1.0f);
    p.top_p = 0.5f;
    dist_case("top-p 0.5", &p, NULL, 0);
    p = plain(1.0f);
    p.top_p = 0.9f;
    dist_case("top-p 0.9", &p, NULL, 0);
    p = plain(2.0f);
    p.top_p = 0.9f;
    dist_case("top-p 0.9, temperature 2", &p, NULL, 0);
    p = plain(1.0f);
    p.min_p = 0.1f;
    dist_case("min-p 0.1", &p, NULL, 0);
    p = plain(0.7f);
    p.top_k = 6;
    p.top_p = 0.9f;
    p.min_p = 0.15f;
    dist_case("k 6, p 0.9, min-p 0.15, t 0.7", &p, NULL, 0);
    vkllm__sampler_params_default(&p);
    p.has_seed = 1;
    p.seed = 7;
    dist_case("llama.cpp defaults", &p, NULL, 0);
}

/* A larger vocabulary, where top-p alone prunes before its sort and top-k uses its heap. */
static void test_large_vocab(void) {
    enum { V = 3000 };
    static float row[V];
    static double want[V];
    uint64_t st = 17;
    for (int i = 0; i < V; i++) row[i] = 6.0f * vkllm_test_randf(&st);
    row[100] = row[2000] = row[2500] = 6.5f; /* ties at the top */
    struct vkllm_sampling_params ps[4];
    ps[0] = plain(1.0f);
    ps[0].top_p = 0.9f;
    ps[1] = plain(0.8f);
    ps[1].top_p = 0.3f;
    ps[1].min_p = 0.01f;
    ps[2] = plain(1.0f);
    ps[2].top_k = 50;
    ps[2].top_p = 0.8f;
    vkllm__sampler_params_default(&ps[3]);
    for (int c = 0; c < 4; c++) {
        ref_probs(&ps[c], row, V, NULL, 0, want);
        struct vkllm__sampler *s = make(&ps[c], V, NULL, 0);
        check_probs("large vocabulary", s, row, want, V);
        vkllm__sampler_free(s);
    }
}

static void test_penalties_bias(void) {
    /* History: tokens 1 (logit 2.0, positive) three times, 2 (-0.4, negative) twice, 6 (0.0)
     * once; token 3 only before the last-4 window. */
    static const int32_t hist[] = {3, 3, 1, 2, 1, 6, 2, 1};
    struct vkllm_sampling_params p = plain(1.0f);
    p.repeat_penalty = 1.3f;
    p.frequency_penalty = 0.2f;
    p.presence_penalty = 0.5f;
    p.penalty_last_n = 4;
    dist_case("penalties, last 4", &p, hist, 8);
    p.penalty_last_n = -1;
    dist_case("penalties, whole history", &p, hist, 8);
    p.penalty_last_n = 6;
    p.top_k = 5;
    p.top_p = 0.95f;
    dist_case("penalties + top-k/top-p", &p, hist, 8);

    static const int32_t bt[] = {9, 1, 4};
    static const float bv[] = {3.5f, -INFINITY, 1.0f};
    p = plain(1.0f);
    p.bias_tokens = bt;
    p.bias_values = bv;
    p.n_bias = 3;
    dist_case("logit bias", &p, NULL, 0);
    p.repeat_penalty = 1.5f;
    p.penalty_last_n = 8;
    dist_case("logit bias + penalties", &p, hist, 8); /* bias first, as llama.cpp */

    /* The window: only the last 2 accepted tokens count; reset forgets them. */
    p = plain(1.0f);
    p.repeat_penalty = 2.0f;
    p.penalty_last_n = 2;
    struct vkllm__sampler *s = make(&p, NV, hist, 8);
    double want[NV];
    ref_probs(&p, k_logits, NV, hist, 8, want);
    check_probs("window of 2", s, k_logits, want, NV);
    vkllm__sampler_accept(s, -1); /* ignored */
    vkllm__sampler_accept(s, NV);
    check_probs("window of 2, bad ids ignored", s, k_logits, want, NV);
    vkllm__sampler_reset(s);
    ref_probs(&p, k_logits, NV, NULL, 0, want);
    check_probs("after reset", s, k_logits, want, NV);
    vkllm__sampler_free(s);
}

/* Sample n times with s and require every token to be want. */
static void expect_always(const char *name, const struct vkllm_sampling_params *p, const float *logits, uint32_t n,
                          int32_t want) {
    struct vkllm__sampler *s = make(p, n, NULL, 0);
    for (int i = 0; i < 200; i++) {
        int32_t t = -1;
        ASSERT_OK(vkllm__sampler_sample(s, logits, &t));
        if (t != want) FAILF("%s: got token %d, want %d", name, t, want);
    }
    float *pr = calloc(n, sizeof *pr);
    ASSERT(pr);
    ASSERT_OK(vkllm__sampler_probs(s, logits, pr));
    if (pr[want] != 1.0f) FAILF("%s: probs[%d] = %g, want 1", name, want, pr[want]);
    free(pr);
    vkllm__sampler_free(s);
}

/* Every configuration of interest, for the edge cases. */
static int edge_configs(struct vkllm_sampling_params *ps) {
    int n = 0;
    ps[n++] = plain(0.0f);
    ps[n++] = plain(1.0f);
    ps[n] = plain(1.0f);
    ps[n++].top_k = 1;
    ps[n] = plain(1.0f);
    ps[n++].top_p = 0.0f;
    ps[n] = plain(1.0f);
    ps[n++].min_p = 1.0f;
    ps[n] = plain(3.0f);
    ps[n++].top_k = 5;
    vkllm__sampler_params_default(&ps[n]);
    ps[n].has_seed = 1;
    ps[n++].seed = 1;
    ps[n] = plain(1.0f);
    ps[n].repeat_penalty = 1.5f;
    ps[n].frequency_penalty = 1.0f;
    ps[n++].presence_penalty = 1.0f;
    return n;
}

static void test_edges(void) {
    struct vkllm_sampling_params ps[16];
    int np = edge_configs(ps);
    /* All but one logit -inf (some NaN): that one, whatever the configuration. */
    float one[NV];
    for (int i = 0; i < NV; i++) one[i] = (i % 3 == 0) ? NAN : -INFINITY;
    one[7] = -5.0f;
    for (int c = 0; c < np; c++) expect_always("all but one -inf", &ps[c], one, NV, 7);

    /* Ties: the lower id wins greedy, top-k 1, top-p 0, and the top-k boundary. */
    static const float tie[NV] = {0, 3, 3, 1, 3, 0, 0, 0, 0, 0, 0, 0};
    for (int c = 0; c < 4; c++) /* greedy, top-k 1, top-p 0 */
        if (c != 1) expect_always("ties", &ps[c], tie, NV, 1);
    struct vkllm_sampling_params p = plain(1.0f);
    p.top_k = 2;
    double want[NV];
    ref_probs(&p, tie, NV, NULL, 0, want);
    ASSERT(want[1] == 0.5 && want[2] == 0.5 && want[4] == 0);
    struct vkllm__sampler *s = make(&p, NV, NULL, 0);
    check_probs("top-k 2 at a tie", s, tie, want, NV);
    check_draws("top-k 2 at a tie", s, tie, want, NV);
    vkllm__sampler_free(s);
    p = plain(1.0f);
    p.min_p = 1.0f; /* keeps exactly the three tied maxima */
    ref_probs(&p, tie, NV, NULL, 0, want);
    s = make(&p, NV, NULL, 0);
    check_probs("min-p 1 at a tie", s, tie, want, NV);
    vkllm__sampler_free(s);

    /* top_k 1 and top_p 0 are the argmax of k_logits (token 1); top_p 1 is top-p off. */
    p = plain(1.0f);
    p.top_k = 1;
    expect_always("top-k 1", &p, k_logits, NV, 1);
    p = plain(1.0f);
    p.top_p = 0.0f;
    expect_always("top-p 0", &p, k_logits, NV, 1);
    p = plain(1.0f);
    p.top_p = 1.0f;
    ref_probs(&p, k_logits, NV, NULL, 0, want);
    ASSERT(want[9] > 0);
    s = make(&p, NV, NULL, 0);
    check_probs("top-p 1", s, k_logits, want, NV);
    vkllm__sampler_free(s);

    /* NaN is -inf; +inf tokens share everything. */
    float odd[NV];
    memcpy(odd, k_logits, sizeof odd);
    odd[1] = NAN;
    odd[5] = NAN;
    p = plain(1.0f);
    ref_probs(&p, odd, NV, NULL, 0, want);
    s = make(&p, NV, NULL, 0);
    check_probs("NaN logits", s, odd, want, NV);
    check_draws("NaN logits", s, odd, want, NV);
    odd[3] = INFINITY;
    odd[10] = INFINITY;
    float pr[NV];
    ASSERT_OK(vkllm__sampler_probs(s, odd, pr));
    ASSERT(pr[3] == 0.5f && pr[10] == 0.5f);
    vkllm__sampler_free(s);

    /* Every logit -inf or NaN: INVALID_ARGUMENT, whatever the configuration. */
    float none[NV];
    for (int i = 0; i < NV; i++) none[i] = (i & 1) ? NAN : -INFINITY;
    for (int c = 0; c < np; c++) {
        s = make(&ps[c], NV, NULL, 0);
        int32_t t = 0;
        ASSERT_STATUS(vkllm__sampler_sample(s, none, &t), VKLLM_STATUS_INVALID_ARGUMENT);
        ASSERT_STATUS(vkllm__sampler_probs(s, none, pr), VKLLM_STATUS_INVALID_ARGUMENT);
        vkllm__sampler_free(s);
    }
    /* Banning all but one token through the bias leaves that one. */
    int32_t bt[NV - 1];
    float bv[NV - 1];
    for (int i = 0, j = 0; i < NV; i++)
        if (i != 4) {
            bt[j] = i;
            bv[j++] = -INFINITY;
        }
    p = plain(1.0f);
    p.bias_tokens = bt;
    p.bias_values = bv;
    p.n_bias = NV - 1;
    expect_always("bias bans all but one", &p, k_logits, NV, 4);
}

/* n tokens sampled from rows of random logits (vocabulary nv). */
static void run_tokens(struct vkllm__sampler *s, uint32_t nv, int n, uint64_t data_seed, int32_t *out) {
    float *row = malloc(nv * sizeof *row);
    ASSERT(row);
    for (int i = 0; i < n; i++) {
        for (uint32_t j = 0; j < nv; j++) row[j] = 3.0f * vkllm_test_randf(&data_seed);
        ASSERT_OK(vkllm__sampler_sample(s, row, &out[i]));
        vkllm__sampler_accept(s, out[i]);
    }
    free(row);
}

static void test_determinism(void) {
    enum { N = 500, V = 1000 };
    static int32_t a[N], b[N], c[N];
    struct vkllm_sampling_params p;
    vkllm__sampler_params_default(&p);
    p.top_k = 0;
    p.repeat_penalty = 1.1f;
    p.has_seed = 1;
    p.seed = 1234;
    struct vkllm__sampler *s = make(&p, V, NULL, 0);
    ASSERT_EQ(vkllm__sampler_seed(s), 1234);
    run_tokens(s, V, N, 99, a);
    vkllm__sampler_free(s);
    s = make(&p, V, NULL, 0);
    run_tokens(s, V, N, 99, b);
    vkllm__sampler_free(s);
    ASSERT(memcmp(a, b, sizeof a) == 0);
    p.seed = 1235;
    s = make(&p, V, NULL, 0);
    run_tokens(s, V, N, 99, c);
    vkllm__sampler_free(s);
    ASSERT(memcmp(a, c, sizeof a) != 0);

    /* No seed: one is picked and reported, and giving it back reproduces the run. */
    p.has_seed = 0;
    struct vkllm__sampler *s1 = make(&p, V, NULL, 0), *s2 = make(&p, V, NULL, 0);
    uint64_t seed = vkllm__sampler_seed(s1);
    ASSERT(seed != vkllm__sampler_seed(s2));
    run_tokens(s1, V, N, 5, a);
    p.has_seed = 1;
    p.seed = seed;
    s = make(&p, V, NULL, 0);
    run_tokens(s, V, N, 5, b);
    ASSERT(memcmp(a, b, sizeof a) == 0);
    printf("picked seed %llu reproduced\n", (unsigned long long)seed);
    vkllm__sampler_free(s);
    vkllm__sampler_free(s1);
    vkllm__sampler_free(s2);

    /* Platform independence of the RNG: with 1000 equal logits every weight is exactly 1, so
     * token = floor(u * 1000) with u the 53-bit uniform of xoshiro256** (seeded by splitmix64
     * from 42); the golden values come from an independent implementation. */
    static const int32_t golden[12] = {83, 378, 680, 924, 991, 769, 719, 850, 761, 583, 682, 290};
    float flat[V];
    for (int i = 0; i < V; i++) flat[i] = 0.25f;
    p = plain(1.0f);
    p.seed = 42;
    s = make(&p, V, NULL, 0);
    for (int i = 0; i < 12; i++) {
        int32_t t = -1;
        ASSERT_OK(vkllm__sampler_sample(s, flat, &t));
        ASSERT_EQ(t, golden[i]);
    }
    vkllm__sampler_free(s);
}

static void test_greedy(void) {
    enum { V = 5000, N = 100 };
    static float row[V];
    uint64_t st = 3;
    float temps[] = {0.0f, -1.0f};
    for (int ti = 0; ti < 2; ti++) {
        struct vkllm_sampling_params p;
        vkllm__sampler_params_default(&p); /* top-k, top-p and min-p on: still exactly greedy */
        p.temperature = temps[ti];
        struct vkllm__sampler *s = make(&p, V, NULL, 0);
        ASSERT(vkllm__sampler_is_greedy(s));
        for (int n = 0; n < N; n++) {
            for (int j = 0; j < V; j++) row[j] = vkllm_test_randf(&st);
            row[(n * 37) % V] = row[(n * 53) % V] = 2.0f; /* a tie: the lower id */
            int32_t want = 0, t = -1;
            for (int j = 1; j < V; j++)
                if (row[j] > row[want]) want = j;
            ASSERT_OK(vkllm__sampler_sample(s, row, &t));
            ASSERT_EQ(t, want);
        }
        vkllm__sampler_free(s);
    }
    /* a temperature just above 0 (logit / T overflows a float): the argmax, never a NaN draw */
    float tiny[] = {1e-40f, 1e-37f, 1e-30f};
    for (int ti = 0; ti < 3; ti++) {
        struct vkllm_sampling_params p = plain(tiny[ti]);
        p.has_seed = 1, p.seed = 7 + (uint64_t)ti;
        struct vkllm__sampler *s = make(&p, V, NULL, 0);
        ASSERT(!vkllm__sampler_is_greedy(s));
        for (int n = 0; n < N; n++) {
            for (int j = 0; j < V; j++) row[j] = 3.0f * vkllm_test_randf(&st);
            int32_t want = 0, t = -1;
            for (int j = 1; j < V; j++)
                if (row[j] > row[want]) want = j;
            ASSERT_OK(vkllm__sampler_sample(s, row, &t));
            if (t != want) FAILF("temperature %g: drew %d, the argmax is %d", (double)tiny[ti], t, want);
        }
        vkllm__sampler_free(s);
    }
    struct vkllm_sampling_params p = plain(0.0f);
    struct vkllm__sampler *s = make(&p, 4, NULL, 0);
    ASSERT(vkllm__sampler_is_greedy(s));
    vkllm__sampler_free(s);
    p = plain(1.0f);
    p.top_k = 1;
    s = make(&p, 4, NULL, 0);
    ASSERT(vkllm__sampler_is_greedy(s));
    vkllm__sampler_free(s);
    vkllm__sampler_params_default(&p);
    s = make(&p, 4, NULL, 0);
    ASSERT(!vkllm__sampler_is_greedy(s));
    vkllm__sampler_free(s);
    p = plain(0.0f);
    p.repeat_penalty = 1.1f;
    s = make(&p, 4, NULL, 0);
    ASSERT(!vkllm__sampler_is_greedy(s)); /* penalties change the argmax */
    vkllm__sampler_free(s);
    p.penalty_last_n = 0;
    s = make(&p, 4, NULL, 0);
    ASSERT(vkllm__sampler_is_greedy(s));
    vkllm__sampler_free(s);
    static const int32_t bt[] = {2};
    static const float bv[] = {1.0f};
    p = plain(0.0f);
    p.bias_tokens = bt;
    p.bias_values = bv;
    p.n_bias = 1;
    s = make(&p, 4, NULL, 0);
    ASSERT(!vkllm__sampler_is_greedy(s));
    vkllm__sampler_free(s);
}

static void expect_bad(const char *what, const struct vkllm_sampling_params *p, uint32_t n_vocab) {
    struct vkllm__sampler *s = (struct vkllm__sampler *)(uintptr_t)1;
    vkllm_status st = vkllm__sampler_init(p, n_vocab, &s);
    if (st != VKLLM_STATUS_INVALID_ARGUMENT) FAILF("%s: got %s", what, vkllm_status_name(st));
    ASSERT(s == NULL);
    printf("  %-24s -> %s\n", what, vkllm_last_error());
}

static void test_param_errors(void) {
    printf("parameter errors:\n");
    struct vkllm_sampling_params p = plain(1.0f);
    struct vkllm__sampler *s = NULL;
    ASSERT_STATUS(vkllm__sampler_init(NULL, 10, &s), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__sampler_init(&p, 10, NULL), VKLLM_STATUS_INVALID_ARGUMENT);
    expect_bad("n_vocab 0", &p, 0);
    p.temperature = NAN;
    expect_bad("temperature NaN", &p, 10);
    p = plain(1.0f);
    p.top_p = -0.1f;
    expect_bad("top_p < 0", &p, 10);
    p = plain(1.0f);
    p.min_p = 1.5f;
    expect_bad("min_p > 1", &p, 10);
    p = plain(1.0f);
    p.repeat_penalty = 0.0f;
    expect_bad("repeat_penalty 0", &p, 10);
    p = plain(1.0f);
    p.frequency_penalty = INFINITY;
    expect_bad("frequency_penalty inf", &p, 10);
    p = plain(1.0f);
    p.penalty_last_n = -2;
    expect_bad("penalty_last_n -2", &p, 10);
    static const int32_t bt[] = {10};
    static const float bv[] = {1.0f};
    p = plain(1.0f);
    p.bias_tokens = bt;
    p.bias_values = bv;
    p.n_bias = 1;
    expect_bad("bias token 10 of 10", &p, 10);
    p.bias_tokens = NULL;
    expect_bad("bias arrays NULL", &p, 10);
    /* Acceptable extremes. */
    p = plain(-2.0f);
    p.top_k = 1000;
    p.top_p = 5.0f;
    p.min_p = -1.0f;
    ASSERT_OK(vkllm__sampler_init(&p, 10, &s));
    vkllm__sampler_free(s);
    vkllm__sampler_free(NULL);
    int32_t t;
    float l[10] = {0};
    ASSERT_STATUS(vkllm__sampler_sample(NULL, l, &t), VKLLM_STATUS_INVALID_ARGUMENT);
}

static void test_oom(void) {
    static const int32_t bt[] = {1, 2};
    static const float bv[] = {1.0f, -1.0f};
    struct vkllm_sampling_params p = plain(1.0f);
    p.repeat_penalty = 1.2f;
    p.bias_tokens = bt;
    p.bias_values = bv;
    p.n_bias = 2;
    int64_t live = vkllm__alloc_live();
    for (uint64_t nth = 1;; nth++) {
        struct vkllm__sampler *s = NULL;
        vkllm__fault_inject(VKLLM__FAULT_HOST, nth);
        vkllm_status st = vkllm__sampler_init(&p, 100, &s);
        vkllm__fault_inject(VKLLM__FAULT_HOST, 0);
        if (st == VKLLM_STATUS_OK) {
            vkllm__sampler_free(s);
            ASSERT_EQ(vkllm__alloc_live(), live);
            printf("OOM: %llu allocation failures handled\n", (unsigned long long)(nth - 1));
            break;
        }
        ASSERT_EQ(st, VKLLM_STATUS_OOM);
        ASSERT(s == NULL);
        ASSERT_EQ(vkllm__alloc_live(), live);
    }
    /* A history that cannot grow is reported by the next sample, once. */
    struct vkllm__sampler *s = make(&p, 100, NULL, 0);
    float l[100] = {0};
    int32_t t;
    vkllm__fault_inject(VKLLM__FAULT_HOST, 1);
    vkllm__sampler_accept(s, 3);
    vkllm__fault_inject(VKLLM__FAULT_HOST, 0);
    ASSERT_STATUS(vkllm__sampler_sample(s, l, &t), VKLLM_STATUS_OOM);
    ASSERT_OK(vkllm__sampler_sample(s, l, &t));
    vkllm__sampler_free(s);
    ASSERT_EQ(vkllm__alloc_live(), live);
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Milliseconds per draw: the best of 5 batches of n (the machine may be busy). */
static double ms_per_draw(struct vkllm__sampler *s, const float *row, int n) {
    int32_t t;
    double best = INFINITY;
    for (int b = 0; b < 5; b++) {
        uint64_t t0 = vkllm__now_ns();
        for (int i = 0; i < n; i++) ASSERT_OK(vkllm__sampler_sample(s, row, &t));
        double ms = (double)(vkllm__now_ns() - t0) / 1e6 / n;
        if (ms < best) best = ms;
    }
    return best;
}

static void test_speed(void) {
    enum { V = 256000 };
    float *row = malloc(V * sizeof *row);
    ASSERT(row);
    uint64_t st = 11;
    for (int i = 0; i < V; i++) row[i] = 8.0f * vkllm_test_randf(&st);
    struct vkllm_sampling_params p;
    vkllm__sampler_params_default(&p); /* top-k 40 */
    p.repeat_penalty = 1.1f;
    struct vkllm__sampler *s = make(&p, V, NULL, 0);
    for (int i = 0; i < 64; i++) vkllm__sampler_accept(s, i * 997);
    double ms = ms_per_draw(s, row, 40);
    vkllm__sampler_free(s);
    p.top_k = 0; /* top-p over the whole vocabulary: one sort */
    s = make(&p, V, NULL, 0);
    double ms_p = ms_per_draw(s, row, 2);
    vkllm__sampler_free(s);
    double limit = SANITIZED ? 10.0 : 1.0;
    printf("256k vocabulary: %.3f ms per draw with top-k 40 (limit %.0f ms), %.2f ms with top-k off and top-p "
           "0.95\n",
           ms, limit, ms_p);
    if (ms > limit) FAILF("a top-k 40 draw over 256k tokens takes %.3f ms", ms);
    free(row);
}

/* The stage order: top-p before the temperature (the default) and after it give different,
 * exactly known distributions; a stage left out does not run; a bad name is an error. */
static void test_order(void) {
    const float logits[5] = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f};
    struct vkllm_sampling_params p;
    vkllm__sampler_params_default(&p);
    p.temperature = 2.0f, p.top_k = 0, p.top_p = 0.5f, p.min_p = 0.0f;
    p.has_seed = 1, p.seed = 5;
    struct vkllm__sampler *s;
    float pr[5];
    /* default order: top-p at temperature 1 keeps token 0 alone (e^2 / sum = 0.563 >= 0.5) */
    ASSERT_OK(vkllm__sampler_init(&p, 5, &s));
    ASSERT_OK(vkllm__sampler_probs(s, logits, pr));
    ASSERT_NEAR(pr[0], 1.0, 1e-6);
    vkllm__sampler_free(s);
    /* temperature first: at T=2 token 0 has 0.3745 < 0.5, so tokens 0 and 1 remain,
     * renormalized e^1 : e^0.5 */
    p.order = "temperature;top_p";
    ASSERT_OK(vkllm__sampler_init(&p, 5, &s));
    ASSERT_OK(vkllm__sampler_probs(s, logits, pr));
    double e1 = exp(1.0), e05 = exp(0.5);
    ASSERT_NEAR(pr[0], e1 / (e1 + e05), 1e-6);
    ASSERT_NEAR(pr[1], e05 / (e1 + e05), 1e-6);
    ASSERT_NEAR(pr[2] + pr[3] + pr[4], 0.0, 0);
    vkllm__sampler_free(s);
    /* only min_p listed (penalties first is accepted): no temperature, no top-p */
    p.order = "penalties,min_p";
    p.min_p = 0.3f; /* keeps logits >= 2 + ln 0.3 = 0.796: tokens 0 and 1 at temperature 1 */
    ASSERT_OK(vkllm__sampler_init(&p, 5, &s));
    ASSERT_OK(vkllm__sampler_probs(s, logits, pr));
    ASSERT_NEAR(pr[0], exp(2.0) / (exp(2.0) + exp(1.0)), 1e-6);
    vkllm__sampler_free(s);
    static const char *bad[] = {"top_q", "top_k;;", "top_k;penalties",
                                "temperature;top_k;top_p;min_p;top_k;top_p;min_p;temp;top_k"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p.order = bad[i];
        ASSERT_STATUS(vkllm__sampler_init(&p, 5, &s), VKLLM_STATUS_INVALID_ARGUMENT);
    }
}

int main(void) {
    test_order();
    test_param_errors();
    test_edges();
    test_greedy();
    test_determinism();
    test_penalties_bias();
    test_large_vocab();
    test_distributions();
    test_oom();
    test_speed();
    printf("test_sampler: OK\n");
    return 0;
}
