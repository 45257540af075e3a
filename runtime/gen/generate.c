/* generate.c - the autoregressive loop: prompt -> tokens -> prefill -> sample -> stream ->
 * decode -> ... until EOS, n_predict, a stop string, a full context or the callback says stop.
 * Greedy runs take the argmax on the device and read back one id per token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "grammar.h"
#include "kv_cache.h"
#include "json_constraint.h"
#include "sampler.h"
#include "tokenizer.h"

const char *vkllm_stop_reason_str(enum vkllm_stop_reason r) {
    switch (r) {
    case VKLLM_STOP_EOS: return "eos";
    case VKLLM_STOP_MAX_TOKENS: return "max_tokens";
    case VKLLM_STOP_STRING: return "stop_string";
    case VKLLM_STOP_CONTEXT_FULL: return "context_full";
    case VKLLM_STOP_CANCELLED: return "cancelled";
    case VKLLM_STOP_KV_FULL: return "kv_full";
    default: return "none";
    }
}

struct vkllm_generate_params vkllm_generate_params_default(void) {
    struct vkllm_generate_params p = {0};
    p.n_predict = -1;
    p.add_bos = -1;
    p.cache_prompt = 1;
    p.n_probs = -1;
    vkllm__sampler_params_default(&p.sampling);
    return p;
}

// --- stop strings --------------------------------------------------------------------------

/* Text waiting to go out: what might still become a stop string is held back. */
struct outbuf {
    char *buf;
    size_t len, cap;
};

static int out_append(struct outbuf *o, const char *t, size_t n) {
    if (o->len + n + 1 > o->cap) {
        size_t cap = (o->len + n + 1) * 2;
        char *nb = vkllm__realloc(o->buf, cap);
        if (!nb) return -1;
        o->buf = nb;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, t, n);
    o->len += n;
    o->buf[o->len] = 0;
    return 0;
}

/* Bytes of o that can go out now: all of them, except a tail that is a proper prefix of a stop
 * string. *hit is set (and the count is where the stop string starts) when one appears whole. */
static size_t out_ready(const struct outbuf *o, const struct vkllm_generate_params *p, int *hit) {
    *hit = 0;
    size_t first = o->len;
    for (uint32_t i = 0; i < p->n_stop; i++) {
        const char *st = p->stop[i];
        size_t sl = strlen(st);
        if (!sl) continue;
        for (size_t at = 0; at + sl <= o->len; at++)
            if (!memcmp(o->buf + at, st, sl)) {
                if (at < first) first = at;
                *hit = 1;
                break;
            }
    }
    if (*hit) return first;
    size_t hold = 0;
    for (uint32_t i = 0; i < p->n_stop; i++) {
        size_t sl = strlen(p->stop[i]);
        for (size_t k = VKLLM_MIN(sl - (sl > 0), o->len); k > hold; k--)
            if (!memcmp(o->buf + o->len - k, p->stop[i], k)) {
                hold = k;
                break;
            }
    }
    return o->len - hold;
}

static void out_consume(struct outbuf *o, size_t n) {
    if (!n) return;
    memmove(o->buf, o->buf + n, o->len - n);
    o->len -= n;
    if (o->buf) o->buf[o->len] = 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void finish_stats(struct vkllm_generate_stats *st, double *itl, uint32_t n_itl, double t_first, double t_last) {
    if (n_itl) {
        double sum = 0;
        for (uint32_t i = 0; i < n_itl; i++) sum += itl[i];
        st->itl_mean_ms = sum / n_itl;
        qsort(itl, n_itl, sizeof *itl, cmp_double);
        st->itl_p50_ms = itl[(n_itl - 1) / 2];
        st->itl_p90_ms = itl[(uint32_t)((n_itl - 1) * 0.9 + 0.5)];
        st->itl_max_ms = itl[n_itl - 1];
        st->decode_tps = (t_last > t_first) ? n_itl / ((t_last - t_first) / 1e3) : 0;
    }
}

/* The prompt's tokens, BOS as asked. */
static vkllm_status prompt_tokens(vkllm_session_t s, const struct vkllm_generate_params *p, int32_t **ids, size_t *n) {
    struct vkllm__tokenizer *tok = s->model->tok;
    struct vkllm__tokenizer_info ti;
    vkllm__tokenizer_get_info(tok, &ti);
    size_t len = p->prompt ? (p->prompt_len ? p->prompt_len : strlen(p->prompt)) : 0;
    int continuing = p->keep_history && s->n_past > 0;
    int want_bos = continuing ? 0 : (p->add_bos < 0 ? ti.add_bos : p->add_bos);
    int32_t *t = NULL;
    size_t cnt = 0;
    vkllm_status st = VKLLM_STATUS_OK;
    if (p->prompt_tokens) { /* token ids as given */
        const uint32_t V = s->model->desc->hp.n_vocab;
        for (size_t i = 0; i < p->n_prompt_tokens; i++)
            if (p->prompt_tokens[i] < 0 || (uint32_t)p->prompt_tokens[i] >= V)
                return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                                  "prompt token %zu: id %d is outside the vocabulary (%u tokens)", i,
                                  (int)p->prompt_tokens[i], V);
        if (p->n_prompt_tokens && !(t = vkllm__malloc(sizeof *t * p->n_prompt_tokens)))
            return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        if (p->n_prompt_tokens) memcpy(t, p->prompt_tokens, sizeof *t * p->n_prompt_tokens);
        cnt = p->n_prompt_tokens;
        if (cnt && t[0] == ti.bos) want_bos = 0; /* already there */
    } else if (len) {
        st = vkllm__tokenize(tok, p->prompt, len, 0, p->parse_special, &t, &cnt);
    }
    if (st) return st;
    if ((want_bos || (cnt == 0 && !continuing)) && ti.bos >= 0) { /* an empty prompt starts from BOS */
        int32_t *nt = vkllm__malloc(sizeof *nt * (cnt + 1));
        if (!nt) {
            vkllm__free(t);
            return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        }
        nt[0] = ti.bos;
        if (cnt) memcpy(nt + 1, t, sizeof *t * cnt);
        vkllm__free(t);
        t = nt;
        cnt++;
    }
    if (cnt == 0 && continuing) {
        vkllm__free(t);
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "an empty prompt after the session's %u tokens: nothing new to "
                          "evaluate (a generation's last token is sampled, not evaluated, so the session does not hold "
                          "it): pass the text or tokens to continue with",
                          s->n_past);
    }
    if (cnt == 0) {
        vkllm__free(t);
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "empty prompt and the model has no BOS token to start from");
    }
    *ids = t;
    *n = cnt;
    return VKLLM_STATUS_OK;
}

static vkllm_status make_sampler(vkllm_session_t s, const struct vkllm_sampling_params *sp,
                                 struct vkllm__sampler **out) {
    return vkllm__sampler_init(sp, s->model->desc->hp.n_vocab, out);
}
// --- one request, step by step ---------------------------------------------------------------

struct vkllm_gen {
    vkllm_session_t s;
    struct vkllm_generate_params p; /* copied; the pointers below own what it points to */
    char **stop;                    /* n_stop copies */
    char *order;
    int32_t *bias_tokens;
    float *bias_values;
    vkllm_text_fn fn;
    void *user;
    struct vkllm__sampler *smp;
    struct vkllm__detok_stream ds;
    int ds_init;
    struct outbuf out; /* text held back (a stop string may be starting) */
    double *itl;       /* inter-token latencies, ms */
    uint32_t cap_itl;
    double t0, t_first, t_prev;      /* ms */
    int32_t cur;                     /* the last token sampled: the next one to evaluate */
    int greedy;                      /* the device takes the argmax when decoding alone */
    int32_t *pending;                /* prompt tokens still to evaluate (chunked prefill) */
    uint32_t n_pending, pending_at;  /* how many, and how many of them are evaluated */
    int continuing;                  /* the prompt continues the session's text (keep_history) */
    struct vkllm__json json;         /* json_object: the output so far */
    struct vkllm__grammar *gram;     /* grammar: the compiled rules and matcher */
    struct vkllm__gstate gst;        /* grammar: the output so far */
    struct vkllm__vocab_trie *trie;  /* grammar: the vocabulary's bytes as a trie */
    float *masked;                   /* json_object, grammar: the logits, refused tokens banned */
    char *pieces;                    /* json_object, grammar: every token's bytes (end-of-generation, control */
    uint32_t *piece_at;              /* and empty ones: none), token i at piece_at[i..i+1) */
    struct vkllm_token_probs *probs; /* n_probs >= 0: one per sampled token */
    uint64_t *probs_end;             /* ... and where its text ends in the output (UINT64_MAX: unknown) */
    uint32_t n_probs_rec, cap_probs;
    uint32_t n_handed;            /* records handed to on_piece (with the pieces before) */
    uint64_t bytes_in, bytes_out; /* text produced, and handed to fn (the rest held back or dropped) */
    int done;
    vkllm_status err;
    enum vkllm_stop_reason reason;
    struct vkllm_generate_stats st;
    /* preemption (a KV pool shared by several generations, when it runs dry): the youngest gives
     * its blocks back and waits; pending then holds every token of its text so far, recomputed
     * when the pool has room again (its full blocks may still be cached) */
    uint64_t seq;   /* start order: the largest is the youngest */
    int pool_state; /* counted on its pool: 0 not, 1 running, 2 preempted */
    int resuming;   /* pending recomputes text already sampled: nothing is sampled after it */
};

static _Atomic uint64_t gen_seq;

static struct vkllm__kv_pool *pool_of(const struct vkllm_gen *g) { return vkllm__forward_kv(g->s->fw)->pool; }

/* g counted on its pool as running (1), preempted (2) or not at all (0). */
static void set_pool_state(struct vkllm_gen *g, int state) {
    if (g->pool_state == state || !g->s) return;
    vkllm__kv_pool_gens(pool_of(g), (state == 1) - (g->pool_state == 1), (state == 2) - (g->pool_state == 2));
    g->pool_state = state;
}

static double now_ms(void) { return vkllm__now_ns() / 1e6; }

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = vkllm__malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* The params with every pointer (but the prompt and prompt_tokens, used only in vkllm_gen_start) owned by g. */
static vkllm_status copy_params(struct vkllm_gen *g, const struct vkllm_generate_params *p) {
    g->p = *p;
    g->p.stop = NULL;
    g->p.sampling.order = NULL;
    g->p.sampling.bias_tokens = NULL;
    g->p.sampling.bias_values = NULL;
    g->p.grammar = NULL;
    if (p->grammar && p->json_object)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "grammar and json_object cannot be used together");
    if (p->grammar) {
        vkllm_status st =
            vkllm__grammar_parse(p->grammar, p->grammar_len ? p->grammar_len : strlen(p->grammar), &g->gram);
        if (st) return st;
        if ((st = vkllm__grammar_start(g->gram, &g->gst))) return st;
    }
    if (p->n_share && !p->share)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%u sessions to share with but share is NULL", p->n_share);
    if (p->n_stop) {
        if (!p->stop) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%u stop strings but stop is NULL", p->n_stop);
        if (!(g->stop = vkllm__calloc(p->n_stop, sizeof *g->stop))) goto oom;
        for (uint32_t i = 0; i < p->n_stop; i++) {
            if (!p->stop[i]) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "stop string %u is NULL", i);
            if (!(g->stop[i] = dup_str(p->stop[i]))) goto oom;
        }
        g->p.stop = (const char *const *)g->stop;
    }
    if (p->sampling.order) {
        if (!(g->order = dup_str(p->sampling.order))) goto oom;
        g->p.sampling.order = g->order;
    }
    if (p->sampling.n_bias) {
        if (!p->sampling.bias_tokens || !p->sampling.bias_values)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%u logit biases but no arrays", p->sampling.n_bias);
        g->bias_tokens = vkllm__malloc(sizeof *g->bias_tokens * p->sampling.n_bias);
        g->bias_values = vkllm__malloc(sizeof *g->bias_values * p->sampling.n_bias);
        if (!g->bias_tokens || !g->bias_values) goto oom;
        memcpy(g->bias_tokens, p->sampling.bias_tokens, sizeof *g->bias_tokens * p->sampling.n_bias);
        memcpy(g->bias_values, p->sampling.bias_values, sizeof *g->bias_values * p->sampling.n_bias);
        g->p.sampling.bias_tokens = g->bias_tokens;
        g->p.sampling.bias_values = g->bias_values;
    }
    return VKLLM_STATUS_OK;
oom:
    return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
}

/* Text to the callbacks: on_piece with the records released since the piece before (the one place
 * that pairs text with its tokens), then fn. Nonzero: a callback asked to stop. */
static int hand_out(struct vkllm_gen *g, const char *text, size_t len) {
    int stop = 0;
    if (g->p.on_piece) {
        uint32_t n = vkllm_gen_n_released(g);
        struct vkllm_text_piece piece = {text, len, n > g->n_handed ? g->probs + g->n_handed : NULL, n - g->n_handed,
                                         g->n_handed};
        g->n_handed = n;
        stop = g->p.on_piece(&piece, g->p.piece_user_data);
    }
    if (len && g->fn && g->fn(text, len, g->user)) stop = 1;
    return stop;
}

/* Hand out the text that is final; with `flush`, also what was held back (the end). */
static vkllm_status push_text(struct vkllm_gen *g, const char *text, size_t len, int flush) {
    if (len && out_append(&g->out, text, len)) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    g->bytes_in += len;
    int hit;
    size_t ready = out_ready(&g->out, &g->p, &hit);
    if (flush && !hit) ready = g->out.len;
    g->bytes_out += ready; /* before the callbacks: its text's tokens are released (vkllm_gen_n_released) */
    if (hit) g->reason = VKLLM_STOP_STRING; /* before them too: the token the stop string cuts is released */
    if (ready && hand_out(g, g->out.buf, ready) && !g->reason) g->reason = VKLLM_STOP_CANCELLED;
    out_consume(&g->out, ready);
    if (hit) g->out.len = 0; /* the stop string and anything after it are dropped */
    return VKLLM_STATUS_OK;
}

static void finish(struct vkllm_gen *g) {
    if (g->done) return;
    g->done = 1;
    set_pool_state(g, 0);
    if (!g->err && g->reason != VKLLM_STOP_STRING && g->reason != VKLLM_STOP_CANCELLED) {
        const char *text;
        size_t len;
        vkllm_status st = vkllm__detok_stream_flush(&g->ds, &text, &len);
        if (!st) st = push_text(g, text, len, 1);
        if (st) g->err = st;
    }
    /* records released with no text of their own after the last piece (a stop string's cut token) */
    if (!g->err && g->reason != VKLLM_STOP_CANCELLED && g->p.on_piece && vkllm_gen_n_released(g) > g->n_handed)
        hand_out(g, "", 0);
    g->st.stop_reason = g->err ? VKLLM_STOP_NONE : g->reason;
    g->st.total_ms = now_ms() - g->t0;
}

static void fail(struct vkllm_gen *g, vkllm_status st) {
    g->err = st;
    g->reason = VKLLM_STOP_NONE;
    finish(g);
}

/* With n_probs: tok's log-probability and the top n_probs under softmax(logits) (temperature 1,
 * nothing applied), as record n_probs_rec. */
static vkllm_status record_probs(struct vkllm_gen *g, const float *logits, int32_t tok) {
    if (g->p.n_probs < 0) return VKLLM_STATUS_OK;
    if (!logits) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "token probabilities: no logits");
    if (g->n_probs_rec == g->cap_probs) {
        uint32_t cap = g->cap_probs ? 2 * g->cap_probs : 64;
        struct vkllm_token_probs *np = vkllm__realloc(g->probs, sizeof *np * cap);
        if (np) g->probs = np;
        uint64_t *ne = np ? vkllm__realloc(g->probs_end, sizeof *ne * cap) : NULL;
        if (!ne) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        g->probs_end = ne;
        g->cap_probs = cap;
    }
    g->probs_end[g->n_probs_rec] = UINT64_MAX; /* its text is not out yet (take_token sets it) */
    const uint32_t V = g->s->model->desc->hp.n_vocab;
    uint32_t n_top = (uint32_t)VKLLM_MIN(g->p.n_probs, VKLLM_MAX_TOP_PROBS);
    struct vkllm_token_probs *r = &g->probs[g->n_probs_rec++];
    memset(r, 0, sizeof *r);
    float mx = -INFINITY;
    for (uint32_t i = 0; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (uint32_t i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    double lse = mx + log(sum);
    r->id = tok;
    r->logprob = (float)(logits[tok] - lse);
    for (uint32_t i = 0; i < V; i++) { /* insertion into the top n_top, highest first (lower id on ties) */
        float l = logits[i];
        if (r->n_top == n_top && (n_top == 0 || l <= r->top[n_top - 1].logprob)) continue;
        uint32_t j = r->n_top < n_top ? r->n_top++ : n_top - 1;
        while (j > 0 && r->top[j - 1].logprob < l) r->top[j] = r->top[j - 1], j--;
        r->top[j] = (struct vkllm_token_prob){(int32_t)i, l};
    }
    for (uint32_t j = 0; j < r->n_top; j++) r->top[j].logprob = (float)(r->top[j].logprob - lse);
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm_gen_token_probs(vkllm_gen_t g, uint32_t i, struct vkllm_token_probs *out) {
    if (!g || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_gen_token_probs: NULL argument");
    if (g->p.n_probs < 0)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "token probabilities were not asked for (n_probs < 0)");
    if (i >= g->n_probs_rec)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "token %u: %u token(s) recorded", i, g->n_probs_rec);
    *out = g->probs[i];
    return VKLLM_STATUS_OK;
}

/* JSON mode's and the grammar's table of every token's bytes, made once per generation. */
static vkllm_status token_pieces(struct vkllm_gen *g, uint32_t n_vocab) {
    const struct vkllm__tokenizer *t = g->s->model->tok;
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t at = 0;
        for (uint32_t i = 0; i < n_vocab; i++) {
            const char *piece;
            size_t len = 0;
            if (vkllm__token_is_eog(t, (int32_t)i) || vkllm__token_piece(t, (int32_t)i, 0, &piece, &len)) len = 0;
            if (pass) memcpy(g->pieces + at, piece, len), g->piece_at[i] = (uint32_t)at;
            at += len;
        }
        if (pass) g->piece_at[n_vocab] = (uint32_t)at;
        total = at;
        if (!pass && (!(g->pieces = vkllm__malloc(total ? total : 1)) ||
                      !(g->piece_at = vkllm__malloc(sizeof *g->piece_at * (n_vocab + 1)))))
            return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    }
    return VKLLM_STATUS_OK;
}

/* Grammar: the tokens the matcher allows from its state (the mask, cached per state), and
 * end-of-generation once the output is a whole sentence. Within the tokens left (max tokens, the
 * context), only tokens after which the output can still be finished in time, counting one
 * character per token; when none can, those that come closest. So a JSON schema's reply closes
 * its brackets before max_tokens instead of being cut, whenever max_tokens leaves room. */
static vkllm_status grammar_mask(struct vkllm_gen *g, const float *logits, uint32_t n_vocab, uint32_t *allowed) {
    vkllm_status st;
    if (!g->trie && (st = vkllm__vocab_trie_build(g->pieces, g->piece_at, n_vocab, &g->trie))) return st;
    const uint8_t *bits;
    const uint16_t *dist;
    uint32_t n_bits;
    if ((st = vkllm__grammar_mask(g->gram, g->gst, g->trie, &bits, &n_bits, &dist))) return st;
    const int eog_ok = vkllm__grammar_accepting(g->gram, g->gst);
    uint64_t left = vkllm_session_n_ctx(g->s) > g->s->n_past ? vkllm_session_n_ctx(g->s) - g->s->n_past : 1;
    if (g->p.n_predict >= 0 && (uint64_t)g->p.n_predict - g->st.n_generated < left)
        left = (uint64_t)g->p.n_predict - g->st.n_generated;
    const uint32_t budget = left > 0 ? (uint32_t)VKLLM_MIN(left - 1, UINT16_MAX) : 0; /* after this token */
    uint32_t best = UINT32_MAX; /* the least distance among the allowed tokens */
    for (uint32_t i = 0; i < n_vocab; i++)
        if (((bits[i >> 3] >> (i & 7)) & 1) && !isinf(logits[i]) && dist[i] < best) best = dist[i];
    const uint32_t limit = eog_ok ? budget : VKLLM_MAX(budget, best);
    *allowed = 0;
    for (uint32_t i = 0; i < n_vocab; i++) {
        int ok = ((bits[i >> 3] >> (i & 7)) & 1) && dist[i] <= limit;
        if (!ok && eog_ok) ok = vkllm__token_is_eog(g->s->model->tok, (int32_t)i);
        ok = ok && !isinf(logits[i]);
        g->masked[i] = ok ? logits[i] : -INFINITY;
        *allowed += (uint32_t)ok;
    }
    return VKLLM_STATUS_OK;
}

/* Choose the next token from logits: the sampler's chain, in JSON mode over the tokens whose
 * bytes keep the output a prefix of one JSON object (the others banned; the end-of-generation
 * tokens too, as generation stops by itself once the object closes). No token fits: -1. */
static vkllm_status sample(struct vkllm_gen *g, const float *logits, int32_t *tok) {
    if (!g->p.json_object && !g->gram) return vkllm__sampler_sample(g->smp, logits, tok);
    const uint32_t n_vocab = g->s->model->desc->hp.n_vocab;
    if (!g->masked && !(g->masked = vkllm__malloc(sizeof *g->masked * n_vocab)))
        return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    vkllm_status st;
    if (!g->pieces && (st = token_pieces(g, n_vocab))) return st;
    uint32_t allowed = 0;
    if (g->gram) {
        if ((st = grammar_mask(g, logits, n_vocab, &allowed))) return st;
        if (!allowed) *tok = -1;
        return allowed ? vkllm__sampler_sample(g->smp, g->masked, tok) : VKLLM_STATUS_OK;
    }
    for (uint32_t i = 0; i < n_vocab; i++) {
        uint32_t a = g->piece_at[i], len = g->piece_at[i + 1] - a;
        struct vkllm__json try = g->json;
        int ok = len && !isinf(logits[i]) && !vkllm__json_feed(&try, g->pieces + a, len);
        g->masked[i] = ok ? logits[i] : -INFINITY;
        allowed += ok;
    }
    if (!allowed) {
        *tok = -1;
        return VKLLM_STATUS_OK;
    }
    return vkllm__sampler_sample(g->smp, g->masked, tok);
}

/* Generated token i's text ends at byte `end` of the output (its probability record, if any). */
static void mark_end(struct vkllm_gen *g, uint32_t i, uint64_t end) {
    if (i < g->n_probs_rec) g->probs_end[i] = end;
}

/* Token tok was sampled: record it, stream its text, decide whether g stops here. */
static vkllm_status take_token(struct vkllm_gen *g, int32_t tok) {
    const double now = now_ms();
    struct vkllm_generate_stats *st = &g->st;
    mark_end(g, st->n_generated, g->bytes_in); /* end of generation: no text of its own */
    if (tok < 0) {                             /* JSON mode found no token that fits: end here */
        g->reason = VKLLM_STOP_EOS;
        finish(g);
        return g->err;
    }
    g->cur = tok;
    if (vkllm__token_is_eog(g->s->model->tok, tok)) {
        g->reason = VKLLM_STOP_EOS;
        finish(g);
        return g->err;
    }
    vkllm__sampler_accept(g->smp, tok);
    if (st->n_generated == 0) {
        g->t_first = now;
        st->ttft_ms = now - g->t0;
    } else if (st->n_generated - 1 < g->cap_itl) {
        g->itl[st->n_generated - 1] = now - g->t_prev;
    }
    g->t_prev = now;
    st->n_generated++;
    const char *text;
    size_t len;
    vkllm_status s = vkllm__detok_stream_push(&g->ds, tok, &text, &len);
    if (!s) {
        mark_end(g, st->n_generated - 1, g->bytes_in + len);
        s = push_text(g, text, len, 0);
    }
    if (s) return s;
    if (g->p.json_object) { /* the token was chosen to fit */
        const char *piece;
        size_t plen;
        if (!vkllm__token_piece(g->s->model->tok, tok, 0, &piece, &plen)) vkllm__json_feed(&g->json, piece, plen);
        if (vkllm__json_complete(&g->json)) g->reason = VKLLM_STOP_EOS;
    }
    if (g->gram) { /* the token was chosen to fit */
        const char *piece;
        size_t plen;
        int ok = 0;
        if (!vkllm__token_piece(g->s->model->tok, tok, 0, &piece, &plen) &&
            (s = vkllm__grammar_feed(g->gram, &g->gst, piece, plen, &ok)))
            return s;
        if (vkllm__grammar_finished(g->gram, g->gst)) g->reason = VKLLM_STOP_EOS;
    }
    if (!g->reason && g->p.n_predict >= 0 && st->n_generated >= (uint32_t)g->p.n_predict)
        g->reason = VKLLM_STOP_MAX_TOKENS;
    if (!g->reason && g->s->n_past >= vkllm_session_n_ctx(g->s)) g->reason = VKLLM_STOP_CONTEXT_FULL;
    if (g->reason) finish(g);
    return g->err;
}

/* Evaluate n prompt tokens; with a cancel hook, one micro-batch at a time (each computed as the
 * forward pass computes it within a longer evaluation), asking the hook before each. CANCELLED
 * when it says so (the micro-batches before stay evaluated). */
static vkllm_status eval_prompt(struct vkllm_gen *g, const int32_t *ids, uint32_t n) {
    if (!g->p.cancel) return vkllm__session_eval(g->s, ids, n, 0);
    uint32_t ub = g->s->n_ubatch ? g->s->n_ubatch : n;
    for (uint32_t done = 0; done < n;) {
        if (g->p.cancel(g->p.cancel_user_data))
            return vkllm__err(VKLLM_STATUS_CANCELLED, "cancelled after %u of the prompt's %u tokens",
                              g->pending_at + done, g->n_pending);
        uint32_t nb = VKLLM_MIN(n - done, ub);
        vkllm_status st = vkllm__session_eval(g->s, ids + done, nb, 0);
        if (st) return st;
        done += nb;
    }
    return VKLLM_STATUS_OK;
}

/* Evaluate the next chunk of g's prompt (all of it without prefill_chunk); after the last, sample
 * the first token. An error is returned (g not failed: the caller decides). */
static vkllm_status prefill_chunk(struct vkllm_gen *g) {
    vkllm_session_t s = g->s;
    uint32_t left = g->n_pending - g->pending_at;
    uint32_t n = g->p.prefill_chunk && left > g->p.prefill_chunk ? g->p.prefill_chunk : left;
    double tp = now_ms();
    vkllm_status st = eval_prompt(g, g->pending + g->pending_at, n);
    if (st) return st;
    g->pending_at += n;
    g->st.prefill_ms += now_ms() - tp;
    if (g->pending_at < g->n_pending) return VKLLM_STATUS_OK; /* more chunks to come */
    if (g->resuming) { /* the text so far is in the cache again: decoding goes on from g->cur */
        vkllm__free(g->pending);
        g->pending = NULL;
        g->resuming = 0;
        return VKLLM_STATUS_OK;
    }
    g->st.prefill_tps = g->st.prefill_ms > 0 ? g->n_pending / (g->st.prefill_ms / 1e3) : 0;
    vkllm__free(g->pending);
    g->pending = NULL;

    /* SentencePiece's leading space is dropped only when the text starts at BOS (as llama2.c). */
    int from_bos_only = !g->continuing && g->st.n_prompt == 1;
    vkllm__detok_stream_init(&g->ds, s->model->tok, from_bos_only ? 0 : VKLLM__DETOK_KEEP_SPACE);
    g->ds_init = 1;
    if (g->p.n_predict == 0) { /* the prompt is in the cache; nothing to generate */
        g->reason = VKLLM_STOP_MAX_TOKENS;
        finish(g);
        return VKLLM_STATUS_OK;
    }
    int32_t tok;
    if ((st = sample(g, vkllm_session_logits(s, 0), &tok))) return st;
    if (tok >= 0 && (st = record_probs(g, vkllm_session_logits(s, 0), tok))) return st;
    return take_token(g, tok); /* EOS or a callback's stop is not an error */
}

vkllm_status vkllm_gen_start(vkllm_session_t s, const struct vkllm_generate_params *params, vkllm_text_fn fn,
                             void *user_data, vkllm_gen_t *out) {
    const double t0 = now_ms();
    if (out) *out = NULL;
    if (!s || !params || !out) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_gen_start: NULL argument");
    if (!s->model->tok)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "this model's tokenizer is not supported: %s", s->model->tok_error);
    if (s->gen)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_gen_start: another generation owns this session "
                                                         "(one at a time): vkllm_gen_free it first");
    struct vkllm_gen *g = vkllm__calloc(1, sizeof *g);
    if (!g) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    g->s = s;
    s->gen = g;
    g->fn = fn;
    g->user = user_data;
    g->t0 = t0;
    const uint32_t n_ctx = vkllm_session_n_ctx(s);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    vkllm_status st;
    VKLLM_TRY(st, copy_params(g, params), fail);
    /* the prompt goes after the session's text (keep_history) or from position 0 */
    const uint32_t base = g->p.keep_history ? s->n_past : 0;
    const int continuing = base > 0;
    st = prompt_tokens(s, &g->p, &ids, &n_ids);
    if (!st && (uint64_t)base + n_ids > n_ctx)
        st = vkllm__err(VKLLM_STATUS_CONTEXT_FULL,
                        "the prompt is %zu tokens; the context has room for %u (of %u, %u in use)", n_ids, n_ctx - base,
                        n_ctx, base);
    if (!st) st = make_sampler(s, &g->p.sampling, &g->smp);
    if (st) goto fail; /* refused: the session is as it was */
    /* Starting over, the prompt's longest prefix already computed is reused (at least one token
     * is left to evaluate), from the first of: this session's own cache, another session's
     * (copied on the device), the pool's blocks that sequences (this one too) gave back. */
    const int lookup = !g->p.keep_history && g->p.cache_prompt && n_ids > 1;
    const uint32_t n_look = lookup ? (uint32_t)n_ids - 1 : 0;
    uint32_t own = lookup ? vkllm_session_cached_prefix(s, ids, n_look) : 0, longest = own;
    vkllm_session_t from = NULL;
    for (uint32_t k = 0; lookup && k < g->p.n_share; k++) {
        vkllm_session_t o = g->p.share[k];
        if (!o || o == s || o->model != s->model || vkllm_session_n_ctx(o) != n_ctx) continue;
        uint32_t have = vkllm_session_cached_prefix(o, ids, n_look);
        if (have > longest) from = o, longest = have;
    }
    const uint32_t pooled = lookup ? vkllm__session_pool_prefix(s, ids, n_look, 0) : 0;
    uint32_t reuse;
    if (pooled > longest) {
        reuse = vkllm__session_pool_prefix(s, ids, n_look, 1); /* the blocks adopted: n_past = reuse */
    } else if (from) {
        if ((st = vkllm__forward_copy_kv(s->fw, from->fw, longest))) goto fail;
        memcpy(s->hist, from->hist, sizeof *s->hist * longest);
        reuse = longest;
        g->st.n_prompt_shared = longest;
        s->n_past = reuse;
    } else {
        reuse = own;
        s->n_past = base + reuse;
    }
    vkllm__session_truncate(s, s->n_past);
    /* On a pool other generations run on: none starts while a preempted one waits (it goes
     * first), and the prompt leaves a block for each running one's next step. */
    struct vkllm__kv_cache *kv = vkllm__forward_kv(s->fw);
    uint32_t running, waiting;
    uint64_t preempted;
    vkllm__kv_pool_gens_get(kv->pool, &running, &waiting, &preempted);
    const uint32_t need = vkllm__kv_need(kv, s->n_past, s->n_past + (uint32_t)n_ids - reuse);
    if (waiting || (running && need + running > vkllm__kv_pool_room(kv->pool))) {
        st = vkllm__err(VKLLM_STATUS_KV_FULL,
                        "the KV cache pool is full: %u generation(s) wait for it, %u run (the "
                        "prompt needs %u blocks, %u are free)",
                        waiting, running, need, vkllm__kv_pool_room(kv->pool));
        goto fail;
    }
    /* the KV pool's blocks for the whole prompt now (KV_FULL, nothing evaluated, when it has too
     * few), so that no later chunk of it runs out */
    VKLLM_TRY(st, vkllm__session_reserve(s, (uint32_t)n_ids - reuse), fail);
    if (lookup) vkllm__kv_pool_count_lookup(kv->pool, (uint32_t)n_ids, pooled); /* once per prompt started */
    g->seq = ++gen_seq;
    set_pool_state(g, 1);
    g->st.seed = vkllm__sampler_seed(g->smp);
    /* probabilities, JSON mode and grammars need the logits */
    g->greedy = vkllm__sampler_is_greedy(g->smp) && g->p.n_probs < 0 && !g->p.json_object && !g->gram;
    vkllm__json_init(&g->json);
    for (size_t i = 0; i < n_ids; i++) vkllm__sampler_accept(g->smp, ids[i]);
    /* the context bounds the tokens whatever n_predict says (INT32_MAX would be a 16 GiB array) */
    g->cap_itl = (g->p.n_predict >= 0 ? VKLLM_MIN((uint32_t)g->p.n_predict, n_ctx) : n_ctx) + 1;
    if (!(g->itl = vkllm__malloc(sizeof *g->itl * g->cap_itl))) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto fail;
    }

    // prefill: all of it, or the first chunk (vkllm_gen_step evaluates the rest)
    g->st.n_prompt = (uint32_t)n_ids;
    g->st.n_prompt_cached = reuse;
    g->continuing = continuing;
    g->pending = ids;
    ids = NULL;
    g->n_pending = (uint32_t)(n_ids - reuse);
    g->pending_at = 0;
    memmove(g->pending, g->pending + reuse, sizeof *g->pending * g->n_pending);
    VKLLM_TRY(st, prefill_chunk(g), fail);
    *out = g;
    return VKLLM_STATUS_OK;
fail:
    vkllm__free(ids);
    vkllm_gen_free(g);
    return st;
}

/* Preempt g: its session gives its KV blocks back to the pool (the full ones stay cached there,
 * found again by their tokens unless evicted meanwhile), and g waits with every token of its text
 * so far pending, to be recomputed (try_resume). Its sampler, detokenizer and output stay as they
 * are: the text goes on where it stopped. */
static vkllm_status preempt(struct vkllm_gen *g) {
    vkllm_session_t s = g->s;
    const uint32_t rest = g->pending ? g->n_pending - g->pending_at : 0, n = s->n_past + rest;
    int32_t *t = vkllm__malloc(sizeof *t * (n ? n : 1));
    if (!t) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    memcpy(t, s->hist, sizeof *t * s->n_past);
    if (rest) memcpy(t + s->n_past, g->pending + g->pending_at, sizeof *t * rest);
    vkllm__free(g->pending);
    g->pending = t, g->n_pending = n, g->pending_at = 0;
    g->resuming = g->ds_init; /* its first token was sampled: the rest of its text is recomputed, not sampled */
    vkllm__session_truncate(s, 0);
    set_pool_state(g, 2);
    vkllm__log(VKLLM_LOG_DEBUG, "gen %llu preempted at %u tokens (%u generated): the KV pool is full",
               (unsigned long long)g->seq, n, g->st.n_generated);
    return VKLLM_STATUS_OK;
}

/* Take preempted g back when the pool has room for its text (its cached blocks adopted) and, on
 * top, `margin` blocks (the running generations' next step): its text is then pending, evaluated
 * chunk by chunk as a prompt is. *ok = 0: not yet (g holds nothing). */
static vkllm_status try_resume(struct vkllm_gen *g, uint32_t margin, int *ok) {
    vkllm_session_t s = g->s;
    struct vkllm__kv_cache *kv = vkllm__forward_kv(s->fw);
    *ok = 0;
    /* a prompt not yet evaluated whole leaves a token to evaluate: its logits sample the first token */
    uint32_t have = vkllm__session_pool_prefix(s, g->pending, g->resuming ? g->n_pending : g->n_pending - 1, 1);
    if (vkllm__kv_need(kv, have, g->n_pending) + margin > vkllm__kv_pool_room(kv->pool)) {
        vkllm__session_truncate(s, 0);
        return VKLLM_STATUS_OK;
    }
    vkllm_status st = vkllm__session_reserve(s, g->n_pending - have);
    if (st) {
        vkllm__session_truncate(s, 0);
        return st == VKLLM_STATUS_KV_FULL ? VKLLM_STATUS_OK : st;
    }
    g->n_pending -= have;
    memmove(g->pending, g->pending + have, sizeof *g->pending * g->n_pending);
    if (!g->n_pending) { /* all of it was cached */
        vkllm__free(g->pending);
        g->pending = NULL;
        g->resuming = 0;
    }
    set_pool_state(g, 1);
    vkllm__log(VKLLM_LOG_DEBUG, "gen %llu resumed: %u tokens cached, %u to recompute", (unsigned long long)g->seq, have,
               g->n_pending);
    *ok = 1;
    return VKLLM_STATUS_OK;
}

static int active(const struct vkllm_gen *g) { return !g->done && g->pool_state != 2; }

/* The youngest generation of gens[0..n) on pool p that is not preempted, or NULL. */
static struct vkllm_gen *youngest(vkllm_gen_t const *gens, uint32_t n, const struct vkllm__kv_pool *p) {
    struct vkllm_gen *y = NULL;
    for (uint32_t i = 0; i < n; i++)
        if (active(gens[i]) && pool_of(gens[i]) == p && (!y || gens[i]->seq > y->seq)) y = gens[i];
    return y;
}

/* The oldest preempted generation of gens[0..n) comes back when the pool has room for it and for
 * the next block of every generation decoding on it; when none runs there and it still does not
 * fit, the pool is too small for it alone: it stops (KV_FULL), as a lone generation does. */
static vkllm_status resume_oldest(vkllm_gen_t const *gens, uint32_t n) {
    struct vkllm_gen *w = NULL;
    for (uint32_t i = 0; i < n; i++)
        if (!gens[i]->done && gens[i]->pool_state == 2 && (!w || gens[i]->seq < w->seq)) w = gens[i];
    if (!w) return VKLLM_STATUS_OK;
    uint32_t margin = 0;
    for (uint32_t i = 0; i < n; i++)
        if (active(gens[i]) && !gens[i]->pending && pool_of(gens[i]) == pool_of(w))
            margin += vkllm__kv_need(vkllm__forward_kv(gens[i]->s->fw), gens[i]->s->n_past, gens[i]->s->n_past + 1);
    int ok;
    vkllm_status st = try_resume(w, margin, &ok);
    if (st) {
        fail(w, st);
        return st;
    }
    uint32_t running, waiting;
    uint64_t preempted;
    vkllm__kv_pool_gens_get(pool_of(w), &running, &waiting, &preempted);
    if (!ok && !running) {
        w->reason = VKLLM_STOP_KV_FULL;
        finish(w);
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm_gen_step(vkllm_gen_t const *gens, uint32_t n) {
    if (n && !gens) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_gen_step: NULL argument");
    struct vkllm_gen *one[1];
    struct vkllm_gen **run = n > 1 ? vkllm__malloc(sizeof *run * n) : one;
    vkllm_session_t *ses = n > 1 ? vkllm__malloc(sizeof *ses * n) : NULL;
    int32_t *toks = n > 1 ? vkllm__malloc(sizeof *toks * n) : NULL;
    vkllm_status st = VKLLM_STATUS_OK;  /* the step's own (a batch that failed fails every gen in it) */
    vkllm_status own = VKLLM_STATUS_OK; /* the first error of one gen alone (its prompt chunk, sampling) */
    if (n > 1 && (!run || !ses || !toks)) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!gens[i] || (!gens[i]->done && !gens[i]->s)) {
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_gen_step: gen %u is NULL", i);
            goto done;
        }
    own = resume_oldest(gens, n);
    /* one chunk of one prefilling generation per step: the others decode between chunks */
    for (uint32_t i = 0; i < n; i++)
        if (active(gens[i]) && gens[i]->pending) {
            vkllm_status s2 = prefill_chunk(gens[i]);
            if (s2 == VKLLM_STATUS_CANCELLED && gens[i]->p.cancel) vkllm_gen_cancel(gens[i]); /* its hook said so */
            else if (s2) fail(gens[i], s2), own = own ? own : s2;
            break;
        }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) /* the decoding ones, oldest first (insertion by start order) */
        if (active(gens[i]) && !gens[i]->pending) {
            uint32_t j = m++;
            while (j > 0 && run[j - 1]->seq > gens[i]->seq) run[j] = run[j - 1], j--;
            run[j] = gens[i];
        }
    /* each gen's block for its next position, oldest first. When the KV pool has none left, the
     * youngest generation on it is preempted (its blocks back to the pool, recomputed later), until
     * the block is there or the gen is the youngest itself; a gen alone on a pool too small for it
     * stops (KV_FULL), as when its context is full */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < m; i++) {
        if (!active(run[i])) continue; /* preempted by an older one's block */
        vkllm_status r;
        while ((r = vkllm__session_reserve(run[i]->s, 1)) == VKLLM_STATUS_KV_FULL) {
            struct vkllm_gen *y = youngest(gens, n, pool_of(run[i]));
            uint32_t running, waiting;
            uint64_t preempted;
            vkllm__kv_pool_gens_get(pool_of(run[i]), &running, &waiting, &preempted);
            if (!y || (y == run[i] && running <= 1)) break;
            if ((r = preempt(y))) {
                fail(y, r), own = own ? own : r;
                if (y != run[i]) continue;
            }
            if (y == run[i]) break;
        }
        if (!active(run[i])) continue;
        if (r == VKLLM_STATUS_KV_FULL) {
            run[i]->reason = VKLLM_STOP_KV_FULL;
            finish(run[i]);
        } else if (r) {
            fail(run[i], r), own = own ? own : r;
        } else {
            run[kept++] = run[i];
        }
    }
    m = 0;
    for (uint32_t i = 0; i < kept; i++) /* preempted after their block came: they wait too */
        if (active(run[i])) run[m++] = run[i];
    if (m == 0) goto done;
    if (m == 1 && run[0]->greedy) { /* alone and greedy: the argmax on the device, one id read back */
        int32_t next;
        if ((st = vkllm__session_decode_greedy(run[0]->s, run[0]->cur, &next))) goto fail_all;
        if ((st = take_token(run[0], next))) fail(run[0], st);
        own = own ? own : st, st = VKLLM_STATUS_OK;
        goto done;
    }
    if (m == 1) {
        st = vkllm__session_eval(run[0]->s, &run[0]->cur, 1, 0);
    } else {
        for (uint32_t i = 0; i < m; i++) ses[i] = run[i]->s, toks[i] = run[i]->cur;
        st = vkllm__session_decode_batch(ses, toks, m);
    }
    if (st) goto fail_all;
    for (uint32_t i = 0; i < m; i++) {
        int32_t tok;
        vkllm_status s2 = sample(run[i], vkllm_session_logits(run[i]->s, 0), &tok);
        if (!s2 && tok >= 0) s2 = record_probs(run[i], vkllm_session_logits(run[i]->s, 0), tok);
        if (!s2) s2 = take_token(run[i], tok);
        if (s2) {
            fail(run[i], s2);
            own = own ? own : s2;
        }
    }
    goto done;
fail_all:
    for (uint32_t i = 0; i < m; i++) fail(run[i], st);
done:
    if (run != one) vkllm__free(run);
    vkllm__free(ses);
    vkllm__free(toks);
    return own ? own : st;
}

enum vkllm_stop_reason vkllm_gen_stop_reason(vkllm_gen_t g) { return g && !g->err ? g->reason : VKLLM_STOP_NONE; }
int vkllm_gen_done(vkllm_gen_t g) { return !g || g->done; }
vkllm_status vkllm_gen_status(vkllm_gen_t g) { return g ? g->err : VKLLM_STATUS_INVALID_ARGUMENT; }

void vkllm_gen_cancel(vkllm_gen_t g) {
    if (!g || g->done) return;
    g->reason = VKLLM_STOP_CANCELLED;
    finish(g);
}

void vkllm_gen_stats(vkllm_gen_t g, struct vkllm_generate_stats *out) {
    if (!g || !out) return;
    *out = g->st;
    uint32_t n_itl = g->st.n_generated > 1 ? VKLLM_MIN(g->st.n_generated - 1, g->cap_itl) : 0;
    double *tmp = n_itl ? vkllm__malloc(sizeof *tmp * n_itl) : NULL;
    if (tmp) {
        memcpy(tmp, g->itl, sizeof *tmp * n_itl);
        finish_stats(out, tmp, n_itl, g->t_first, g->t_prev);
        vkllm__free(tmp);
    }
    struct vkllm_session_memory mem;
    vkllm_session_memory(g->s, &mem); /* zeros once the session was freed */
    out->kv_bytes_used = mem.kv_bytes_used;
    out->kv_bytes_allocated = mem.kv_bytes_allocated;
    out->kv_bytes_per_token = mem.kv_bytes_per_token;
    out->device_bytes = mem.device_bytes;
    out->kv_bytes_cached = mem.kv_bytes_cached;
    if (!g->done) out->total_ms = now_ms() - g->t0; /* else as it was when g stopped */
}

uint32_t vkllm_gen_n_generated(vkllm_gen_t g) { return g ? g->st.n_generated : 0; }

uint32_t vkllm_gen_n_released(vkllm_gen_t g) {
    uint32_t i = 0;
    /* once a stop string ended the text, also the token it cut: part of its text is in the reply */
    int cut = g && g->reason == VKLLM_STOP_STRING;
    while (g && i < g->n_probs_rec && i < g->st.n_generated &&
           (g->probs_end[i] <= g->bytes_out || (cut && (i ? g->probs_end[i - 1] : 0) < g->bytes_out)))
        i++;
    return i;
}

void vkllm__gen_orphan(struct vkllm_gen *g) {
    set_pool_state(g, 0); /* before its session (and maybe the pool) goes */
    if (!g->done) {
        g->err = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "the generation's session was freed before it");
        g->reason = VKLLM_STOP_NONE;
        g->st.stop_reason = VKLLM_STOP_NONE;
        g->done = 1;
    }
    g->s = NULL;
}

void vkllm_gen_free(vkllm_gen_t g) {
    if (!g) return;
    set_pool_state(g, 0);
    if (g->s && g->s->gen == g) g->s->gen = NULL;
    if (g->ds_init) vkllm__detok_stream_free(&g->ds);
    vkllm__free(g->pending);
    vkllm__free(g->probs);
    vkllm__free(g->probs_end);
    vkllm__free(g->masked);
    vkllm__grammar_free(g->gram);
    vkllm__vocab_trie_free(g->trie);
    vkllm__free(g->pieces);
    vkllm__free(g->piece_at);
    vkllm__free(g->out.buf);
    vkllm__free(g->itl);
    vkllm__sampler_free(g->smp);
    for (uint32_t i = 0; g->stop && i < g->p.n_stop; i++) vkllm__free(g->stop[i]);
    vkllm__free(g->stop);
    vkllm__free(g->order);
    vkllm__free(g->bias_tokens);
    vkllm__free(g->bias_values);
    vkllm__free(g);
}

// --- the whole loop ------------------------------------------------------------------------

vkllm_status vkllm_generate(vkllm_session_t s, const struct vkllm_generate_params *params, vkllm_text_fn fn,
                            void *user_data, struct vkllm_generate_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    vkllm_gen_t g = NULL;
    vkllm_status st = vkllm_gen_start(s, params, fn, user_data, &g);
    if (st && s && stats) { /* refused: still say what the session holds */
        struct vkllm_session_memory mem;
        vkllm_session_memory(s, &mem);
        stats->kv_bytes_used = mem.kv_bytes_used;
        stats->kv_bytes_allocated = mem.kv_bytes_allocated;
        stats->kv_bytes_per_token = mem.kv_bytes_per_token;
        stats->device_bytes = mem.device_bytes;
        stats->kv_bytes_cached = mem.kv_bytes_cached;
    }
    while (!st && !vkllm_gen_done(g)) st = vkllm_gen_step(&g, 1);
    if (g && stats) vkllm_gen_stats(g, stats);
    vkllm_gen_free(g);
    return st;
}

void vkllm_free(void *p) { vkllm__free(p); }
