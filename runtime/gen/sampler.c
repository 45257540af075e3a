/* sampler.c - choosing the next token from logits (see sampler.h for the contract).
 *
 * The chain, per draw, follows llama.cpp's common_sampler_init with its default sampler list:
 *
 *   logit bias -> penalties -> top-k -> top-p -> min-p -> temperature -> draw
 *
 * llama.cpp adds the logit-bias sampler to the chain before the configurable list, whose first
 * default entry is the penalties; we do the same (the two orders differ only for a biased token
 * that is also penalized by a repeat penalty). Truncation (top-k, top-p, min-p) works on the
 * distribution at temperature 1; the temperature only reshapes the survivors, as in llama.cpp.
 *
 * Conventions: NaN logits count as -inf. Ties are broken by the lower token id everywhere (sort
 * order, top-k boundary, top-p prefix, greedy). A row where every logit is -inf or NaN (after
 * bias and penalties) is an INVALID_ARGUMENT error: there is nothing to choose. +inf logits are
 * allowed: the +inf tokens then share all the probability equally.
 *
 * Randomness: xoshiro256** seeded through splitmix64, one 64-bit draw per non-greedy sample, so
 * a fixed seed reproduces the same uniform numbers on every platform. Greedy samples draw none.
 */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A candidate token and its (biased, penalized) logit. */
struct vkllm__cand {
    float logit;
    int32_t id;
};

enum stage { STAGE_TOP_K, STAGE_TOP_P, STAGE_MIN_P, STAGE_TEMPERATURE };
#define MAX_STAGES 8

struct vkllm__sampler {
    struct vkllm_sampling_params p; /* bias pointers point at the copies below; order is NULL */
    enum stage stages[MAX_STAGES];  /* the chain after bias and penalties */
    uint32_t n_stages;
    uint32_t n_vocab;
    int penalties_on;

    int32_t *bias_tokens; /* (n_bias) */
    float *bias_values;   /* (n_bias) */

    uint64_t seed;
    uint64_t rng[4]; /* xoshiro256** state */

    /* History for the penalties: up to penalty_last_n tokens (all of them when -1). It fills as
     * an array, then wraps as a ring at hist_head; the order inside does not matter. */
    int32_t *hist;      /* (hist_cap) */
    uint32_t hist_len;  /* tokens held (<= hist_cap) */
    uint32_t hist_cap;  /* allocated slots */
    uint32_t hist_head; /* next slot to overwrite once full */
    int hist_oom;       /* accept() could not grow the history: reported by the next sample */
    uint32_t *counts;   /* (n_vocab) zero between calls; only when penalties_on */

    float *work;              /* (n_vocab) logits after bias and penalties, when there are any */
    const float *src;         /* the logits the chain reads: work, or the caller's as they are */
    struct vkllm__cand *cand; /* (n_vocab) surviving candidates */
    double *w;                /* (n_vocab) unnormalized probability of cand[i] */
    uint32_t n_cand;
    double w_sum;
};

/* --- RNG: splitmix64 to seed, xoshiro256** to draw ------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t s[4]) {
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

static void rng_seed(uint64_t s[4], uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) s[i] = splitmix64(&x);
}

/* Uniform double in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t s[4]) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

/* --- parameters -------------------------------------------------------------------------- */

void vkllm__sampler_params_default(struct vkllm_sampling_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->temperature = 0.8f;
    p->top_k = 40;
    p->top_p = 0.95f;
    p->min_p = 0.05f;
    p->repeat_penalty = 1.0f;
    p->frequency_penalty = 0.0f;
    p->presence_penalty = 0.0f;
    p->penalty_last_n = 64;
    p->seed = 0;
    p->has_seed = 0;
}

static vkllm_status check_bias(const struct vkllm_sampling_params *p, uint32_t n_vocab) {
    if (p->n_bias == 0) return VKLLM_STATUS_OK;
    if (!p->bias_tokens || !p->bias_values)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: n_bias is %u but bias_tokens or bias_values is NULL",
                          p->n_bias);
    for (uint32_t i = 0; i < p->n_bias; i++) {
        int32_t t = p->bias_tokens[i];
        if (t < 0 || (uint32_t)t >= n_vocab)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "sampler: bias_tokens[%u] = %d is outside the vocabulary (0..%u)", i, t, n_vocab - 1);
        if (isnan(p->bias_values[i]))
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: bias_values[%u] is NaN", i);
    }
    return VKLLM_STATUS_OK;
}

static vkllm_status check_params(const struct vkllm_sampling_params *p, uint32_t n_vocab) {
    if (n_vocab == 0 || n_vocab > (uint32_t)INT32_MAX)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: n_vocab %u is out of range (1..%d)", n_vocab,
                          INT32_MAX);
    if (isnan(p->temperature) || p->temperature == INFINITY)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "sampler: temperature %g must not be NaN or +inf (<= 0 is greedy)", (double)p->temperature);
    if (!(p->top_p >= 0.0f))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: top_p %g must be >= 0 (>= 1 turns it off)",
                          (double)p->top_p);
    if (isnan(p->min_p) || p->min_p > 1.0f)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: min_p %g must be <= 1 (<= 0 turns it off)",
                          (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: repeat_penalty %g must be finite and > 0 (1 = off)",
                          (double)p->repeat_penalty);
    if (!isfinite(p->frequency_penalty))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: frequency_penalty %g must be finite",
                          (double)p->frequency_penalty);
    if (!isfinite(p->presence_penalty))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: presence_penalty %g must be finite",
                          (double)p->presence_penalty);
    if (p->penalty_last_n < -1)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "sampler: penalty_last_n %d must be >= -1 (-1 = whole history, 0 = off)", p->penalty_last_n);
    return check_bias(p, n_vocab);
}

/* --- init / free ------------------------------------------------------------------------- */

static vkllm_status alloc_buffers(struct vkllm__sampler *s) {
    uint32_t n = s->n_vocab;
    uint32_t nb = s->p.n_bias;
    s->work = vkllm__malloc((size_t)n * sizeof *s->work);
    s->cand = vkllm__malloc((size_t)n * sizeof *s->cand);
    s->w = vkllm__malloc((size_t)n * sizeof *s->w);
    if (!s->work || !s->cand || !s->w) return vkllm__err(VKLLM_STATUS_OOM, "sampler: out of memory (n_vocab %u)", n);
    if (nb > 0) {
        s->bias_tokens = vkllm__malloc((size_t)nb * sizeof *s->bias_tokens);
        s->bias_values = vkllm__malloc((size_t)nb * sizeof *s->bias_values);
        if (!s->bias_tokens || !s->bias_values)
            return vkllm__err(VKLLM_STATUS_OOM, "sampler: out of memory (%u logit biases)", nb);
        memcpy(s->bias_tokens, s->p.bias_tokens, (size_t)nb * sizeof *s->bias_tokens);
        memcpy(s->bias_values, s->p.bias_values, (size_t)nb * sizeof *s->bias_values);
    }
    s->p.bias_tokens = s->bias_tokens;
    s->p.bias_values = s->bias_values;
    if (s->penalties_on) {
        s->counts = vkllm__calloc(n, sizeof *s->counts);
        if (!s->counts) return vkllm__err(VKLLM_STATUS_OOM, "sampler: out of memory (penalty counts)");
    }
    return VKLLM_STATUS_OK;
}

/* "top_k;top_p;min_p;temperature" -> stages. */
static vkllm_status parse_order(const char *order, enum stage *stages, uint32_t *n) {
    static const struct {
        const char *name;
        int stage; /* -1: accepted, always first anyway */
    } names[] = {{"top_k", STAGE_TOP_K},
                 {"top-k", STAGE_TOP_K},
                 {"top_p", STAGE_TOP_P},
                 {"top-p", STAGE_TOP_P},
                 {"min_p", STAGE_MIN_P},
                 {"min-p", STAGE_MIN_P},
                 {"temperature", STAGE_TEMPERATURE},
                 {"temp", STAGE_TEMPERATURE},
                 {"penalties", -1}};
    if (!order || !*order) order = "top_k;top_p;min_p;temperature";
    *n = 0;
    const char *p = order;
    int seen_stage = 0;
    while (*p) {
        size_t len = strcspn(p, ";,");
        int found = -2;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strlen(names[k].name) == len && !strncmp(p, names[k].name, len)) found = names[k].stage;
        if (found == -2 || (found == -1 && seen_stage) || *n == MAX_STAGES)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                              "sampler: order '%s': '%.*s' is not a stage here (known: top_k, top_p, min_p, "
                              "temperature; penalties only first; at most %d)",
                              order, (int)len, p, MAX_STAGES);
        if (found >= 0) {
            stages[(*n)++] = (enum stage)found;
            seen_stage = 1;
        }
        p += len;
        if (*p) p++;
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__sampler_init(const struct vkllm_sampling_params *p, uint32_t n_vocab, struct vkllm__sampler **out) {
    if (!out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: out is NULL");
    *out = NULL;
    if (!p) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: params is NULL");
    vkllm_status st = check_params(p, n_vocab);
    if (st != VKLLM_STATUS_OK) return st;
    enum stage stages[MAX_STAGES];
    uint32_t n_stages;
    if ((st = parse_order(p->order, stages, &n_stages))) return st;

    struct vkllm__sampler *s = vkllm__calloc(1, sizeof *s);
    if (!s) return vkllm__err(VKLLM_STATUS_OOM, "sampler: out of memory");
    s->p = *p;
    s->p.order = NULL; /* parsed; the caller's string need not outlive the sampler */
    memcpy(s->stages, stages, sizeof stages);
    s->n_stages = n_stages;
    s->n_vocab = n_vocab;
    s->penalties_on = p->penalty_last_n != 0 &&
                      (p->repeat_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f);
    st = alloc_buffers(s);
    if (st != VKLLM_STATUS_OK) {
        vkllm__sampler_free(s);
        return st;
    }
    if (p->has_seed) {
        s->seed = p->seed;
    } else {
        /* Clock and address, mixed: distinct samplers made in the same tick still differ. */
        uint64_t x = vkllm__now_ns() ^ ((uint64_t)(uintptr_t)s << 16);
        s->seed = splitmix64(&x);
    }
    rng_seed(s->rng, s->seed);
    *out = s;
    return VKLLM_STATUS_OK;
}

void vkllm__sampler_free(struct vkllm__sampler *s) {
    if (!s) return;
    vkllm__free(s->bias_tokens);
    vkllm__free(s->bias_values);
    vkllm__free(s->hist);
    vkllm__free(s->counts);
    vkllm__free(s->work);
    vkllm__free(s->cand);
    vkllm__free(s->w);
    vkllm__free(s);
}

uint64_t vkllm__sampler_seed(const struct vkllm__sampler *s) { return s ? s->seed : 0; }

int vkllm__sampler_is_greedy(const struct vkllm__sampler *s) {
    if (!s) return 0;
    if (s->penalties_on || s->p.n_bias > 0) return 0;
    if (s->p.temperature <= 0.0f) return 1;
    for (uint32_t i = 0; i < s->n_stages; i++) /* top_k 1 decides only where the order runs top_k */
        if (s->stages[i] == STAGE_TOP_K) return s->p.top_k == 1;
    return 0;
}

/* --- history ----------------------------------------------------------------------------- */

void vkllm__sampler_accept(struct vkllm__sampler *s, int32_t token) {
    /* Tokens outside the vocabulary cannot be penalized and are ignored. */
    if (!s || !s->penalties_on || token < 0 || (uint32_t)token >= s->n_vocab) return;
    uint32_t limit = s->p.penalty_last_n < 0 ? UINT32_MAX : (uint32_t)s->p.penalty_last_n;
    if (s->hist_len < limit) {
        if (s->hist_len == s->hist_cap) {
            uint32_t cap = s->hist_cap ? s->hist_cap * 2 : 64;
            if (cap < s->hist_cap || cap > limit) cap = limit;
            int32_t *h = vkllm__realloc(s->hist, (size_t)cap * sizeof *h);
            if (!h) {
                s->hist_oom = 1;
                return;
            }
            s->hist = h;
            s->hist_cap = cap;
        }
        s->hist[s->hist_len++] = token;
        return;
    }
    s->hist[s->hist_head] = token; /* full: overwrite the oldest */
    s->hist_head = (s->hist_head + 1) % s->hist_len;
}

void vkllm__sampler_reset(struct vkllm__sampler *s) {
    if (!s) return;
    s->hist_len = 0;
    s->hist_head = 0;
    s->hist_oom = 0;
}

/* --- the chain --------------------------------------------------------------------------- */

/* a ranks before b: higher logit, then lower id. */
static int cand_before(const struct vkllm__cand *a, const struct vkllm__cand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cand_cmp(const void *pa, const void *pb) {
    const struct vkllm__cand *a = pa, *b = pb;
    if (cand_before(a, b)) return -1;
    if (cand_before(b, a)) return 1;
    return 0;
}

/* work = logits + bias, then llama.cpp's penalties over the history window. */
static void apply_bias_penalties(struct vkllm__sampler *s, const float *logits) {
    s->src = logits;
    if (s->p.n_bias == 0 && (!s->penalties_on || s->hist_len == 0)) return; /* nothing to change */
    memcpy(s->work, logits, (size_t)s->n_vocab * sizeof *s->work);
    s->src = s->work;
    for (uint32_t i = 0; i < s->p.n_bias; i++) s->work[s->bias_tokens[i]] += s->bias_values[i];
    if (!s->penalties_on) return;
    for (uint32_t i = 0; i < s->hist_len; i++) s->counts[s->hist[i]]++;
    const float rep = s->p.repeat_penalty, freq = s->p.frequency_penalty, pres = s->p.presence_penalty;
    for (uint32_t i = 0; i < s->hist_len; i++) {
        int32_t t = s->hist[i];
        uint32_t c = s->counts[t];
        if (c == 0) continue; /* already done */
        float v = s->work[t];
        if (v != v) v = -INFINITY;
        v = v <= 0.0f ? v * rep : v / rep;
        v -= (float)c * freq + pres;
        s->work[t] = v;
        s->counts[t] = 0;
    }
}

/* Restore the heap property (root = the candidate that ranks last) below node i. */
static void heap_sift_down(struct vkllm__cand *h, uint32_t n, uint32_t i) {
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cand_before(&h[m], &h[l])) m = l;
        if (r < n && cand_before(&h[m], &h[r])) m = r;
        if (m == i) return;
        struct vkllm__cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The k best candidates (NaN and -inf excluded), sorted, with one pass over the vocabulary and
 * a k-element heap: O(n + k log k log(n/k)) in practice, no full sort. */
static void gather_top_k(struct vkllm__sampler *s, uint32_t k) {
    struct vkllm__cand *h = s->cand;
    const float *src = s->src;
    uint32_t n = 0;
    /* Until the heap is full anything above -inf enters; then only what beats the root. Ids
     * grow, so a logit equal to the root's never beats it: a strict > is exact. */
    float thresh = -INFINITY;
    for (uint32_t i = 0; i < s->n_vocab; i++) {
        float v = src[i];
        if (!(v > thresh)) continue; /* also skips NaN */
        struct vkllm__cand c = {v, (int32_t)i};
        if (n < k) {
            h[n++] = c;
            if (n < k) continue;
            for (uint32_t j = k / 2; j-- > 0;) heap_sift_down(h, k, j);
        } else {
            h[0] = c;
            heap_sift_down(h, k, 0);
        }
        thresh = h[0].logit;
    }
    qsort(h, n, sizeof *h, cand_cmp);
    s->n_cand = n;
}

/* All finite or +inf candidates, in token order. */
static void gather_all(struct vkllm__sampler *s) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n_vocab; i++) {
        float v = s->src[i];
        if (v > -INFINITY) s->cand[n++] = (struct vkllm__cand){v, (int32_t)i};
    }
    s->n_cand = n;
}

static float cand_max(const struct vkllm__sampler *s) {
    float m = -INFINITY;
    for (uint32_t i = 0; i < s->n_cand; i++)
        if (s->cand[i].logit > m) m = s->cand[i].logit;
    return m;
}

/* w[i] = exp((logit_i - max) / temp) in double, and their sum. With a +inf logit, the +inf
 * tokens share everything. */
static void compute_weights(struct vkllm__sampler *s, double temp) {
    double mx = (double)cand_max(s), sum = 0.0;
    for (uint32_t i = 0; i < s->n_cand; i++) {
        double l = (double)s->cand[i].logit;
        double w = mx == INFINITY ? (l == INFINITY ? 1.0 : 0.0) : exp((l - mx) / temp);
        s->w[i] = w;
        sum += w;
    }
    s->w_sum = sum;
}

/* Before sorting a whole vocabulary for top-p: keep only the tokens with a logit >= max - d for
 * the smallest d in 1, 2, 4, ... whose tokens already hold the target mass. Exact: those tokens
 * are a prefix of the sorted order (ties included), so the nucleus lies inside them. */
static void prune_for_top_p(struct vkllm__sampler *s, double target) {
    double mx = (double)cand_max(s);
    if (mx == INFINITY) return;
    for (double d = 1.0; d < 1e38; d *= 2.0) {
        double t = mx - d, mass = 0.0;
        for (uint32_t i = 0; i < s->n_cand; i++)
            if ((double)s->cand[i].logit >= t) mass += s->w[i];
        if (mass < target) continue;
        uint32_t n = 0;
        for (uint32_t i = 0; i < s->n_cand; i++)
            if ((double)s->cand[i].logit >= t) s->cand[n++] = s->cand[i];
        s->n_cand = n;
        return;
    }
}

/* Nucleus: the shortest prefix of the sorted candidates whose probability reaches p. */
static void apply_top_p(struct vkllm__sampler *s, double p, int sorted) {
    compute_weights(s, 1.0);
    double target = p * s->w_sum, cum = 0.0;
    if (!sorted) {
        prune_for_top_p(s, target);
        qsort(s->cand, s->n_cand, sizeof *s->cand, cand_cmp);
        compute_weights(s, 1.0); /* same max, so the same weights, now in sorted order */
    }
    for (uint32_t i = 0; i < s->n_cand; i++) {
        cum += s->w[i];
        if (cum >= target) {
            s->n_cand = i + 1;
            return;
        }
    }
}

/* Keep the tokens whose probability is at least min_p times the top one's. */
static void apply_min_p(struct vkllm__sampler *s, double min_p) {
    double mx = (double)cand_max(s), floor_logit = mx + log(min_p);
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n_cand; i++)
        if ((double)s->cand[i].logit >= floor_logit) s->cand[n++] = s->cand[i];
    s->n_cand = n;
}

static vkllm_status greedy(struct vkllm__sampler *s) {
    int32_t best = -1;
    float bv = -INFINITY;
    for (uint32_t i = 0; i < s->n_vocab; i++) {
        float v = s->src[i];
        if (v > bv) { /* strict: the first of equal maxima wins; NaN never does */
            bv = v;
            best = (int32_t)i;
        }
    }
    if (best < 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: every logit is -inf or NaN");
    s->cand[0] = (struct vkllm__cand){bv, best};
    s->w[0] = 1.0;
    s->w_sum = 1.0;
    s->n_cand = 1;
    return VKLLM_STATUS_OK;
}

/* Run the chain: leaves cand[0..n_cand) with unnormalized weights w and their sum w_sum. */
static vkllm_status run_chain(struct vkllm__sampler *s, const float *logits) {
    if (!logits) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: logits is NULL");
    if (s->hist_oom) {
        s->hist_oom = 0;
        return vkllm__err(VKLLM_STATUS_OOM, "sampler: out of memory recording the token history");
    }
    apply_bias_penalties(s, logits);
    if (s->p.temperature <= 0.0f) return greedy(s);

    /* Candidates: the top k at once when top-k comes first (no pass over the whole vocabulary
     * with anything else), otherwise every token with a logit above -inf. */
    int sorted = 0;
    uint32_t first = 0;
    if (s->n_stages && s->stages[0] == STAGE_TOP_K && s->p.top_k > 0 && (uint32_t)s->p.top_k < s->n_vocab) {
        gather_top_k(s, (uint32_t)s->p.top_k);
        sorted = 1;
        first = 1;
    } else {
        gather_all(s);
    }
    if (s->n_cand == 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler: every logit is -inf or NaN");

    for (uint32_t k = first; k < s->n_stages; k++) {
        switch (s->stages[k]) {
        case STAGE_TOP_K:
            if (s->p.top_k > 0 && (uint32_t)s->p.top_k < s->n_cand) {
                if (!sorted) qsort(s->cand, s->n_cand, sizeof *s->cand, cand_cmp);
                sorted = 1;
                s->n_cand = (uint32_t)s->p.top_k;
            }
            break;
        case STAGE_TOP_P:
            if (s->p.top_p < 1.0f) {
                apply_top_p(s, (double)s->p.top_p, sorted);
                sorted = 1;
            }
            break;
        case STAGE_MIN_P:
            if (s->p.min_p > 0.0f) apply_min_p(s, (double)s->p.min_p);
            break;
        case STAGE_TEMPERATURE: { /* later stages see the tempered distribution */
            /* A temperature near 0 overflows logit / T to inf, and inf - inf in the weights is NaN
             * (random text): then divide the distance from the largest logit instead, the same
             * distribution (it puts all the weight on the largest). */
            float mx = -INFINITY;
            int over = 0;
            for (uint32_t i = 0; i < s->n_cand; i++) {
                mx = fmaxf(mx, s->cand[i].logit);
                over |= isinf(s->cand[i].logit / s->p.temperature) && !isinf(s->cand[i].logit);
            }
            for (uint32_t i = 0; i < s->n_cand; i++)
                s->cand[i].logit =
                    over ? (s->cand[i].logit - mx) / s->p.temperature : s->cand[i].logit / s->p.temperature;
            break;
        }
        }
    }
    compute_weights(s, 1.0); /* a temperature, if listed, was applied in its place */
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__sampler_sample(struct vkllm__sampler *s, const float *logits, int32_t *token) {
    if (!s || !token) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler_sample: sampler or token is NULL");
    vkllm_status st = run_chain(s, logits);
    if (st != VKLLM_STATUS_OK) return st;
    if (s->p.temperature <= 0.0f) {
        *token = s->cand[0].id;
        return VKLLM_STATUS_OK;
    }
    /* Inverse CDF over the candidates in chain order. The fallback (rounding put the target
     * past the end) takes the last candidate with a nonzero weight. */
    double target = rng_uniform(s->rng) * s->w_sum, cum = 0.0;
    int32_t pick = -1;
    for (uint32_t i = 0; i < s->n_cand; i++) {
        if (s->w[i] <= 0.0) continue;
        pick = s->cand[i].id;
        cum += s->w[i];
        if (cum > target) break;
    }
    if (pick < 0) return vkllm__err(VKLLM_STATUS_INTERNAL, "sampler: no candidate with a nonzero probability");
    *token = pick;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__sampler_probs(struct vkllm__sampler *s, const float *logits, float *probs) {
    if (!s || !probs) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "sampler_probs: sampler or probs is NULL");
    vkllm_status st = run_chain(s, logits);
    if (st != VKLLM_STATUS_OK) return st;
    memset(probs, 0, (size_t)s->n_vocab * sizeof *probs);
    for (uint32_t i = 0; i < s->n_cand; i++) probs[s->cand[i].id] = (float)(s->w[i] / s->w_sum);
    return VKLLM_STATUS_OK;
}
