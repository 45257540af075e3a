/* generate.c - the autoregressive loop: prompt -> tokens -> prefill -> sample -> stream ->
 * decode -> ... until EOS, n_predict, a stop string, a full context or the callback says stop.
 * Greedy runs take the argmax on the device and read back one id per token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "sampler.h"
#include "tokenizer.h"

const char *vkllm_stop_reason_str(enum vkllm_stop_reason r) {
    switch (r) {
    case VKLLM_STOP_EOS: return "eos";
    case VKLLM_STOP_MAX_TOKENS: return "max_tokens";
    case VKLLM_STOP_STRING: return "stop_string";
    case VKLLM_STOP_CONTEXT_FULL: return "context_full";
    case VKLLM_STOP_CANCELLED: return "cancelled";
    default: return "none";
    }
}

struct vkllm_generate_params vkllm_generate_params_default(void) {
    struct vkllm_generate_params p = {0};
    p.n_predict = -1;
    p.add_bos = -1;
    struct vkllm__sampler_params sp;
    vkllm__sampler_params_default(&sp);
    p.sampling.temperature = sp.temperature;
    p.sampling.top_k = sp.top_k;
    p.sampling.top_p = sp.top_p;
    p.sampling.min_p = sp.min_p;
    p.sampling.repeat_penalty = sp.repeat_penalty;
    p.sampling.frequency_penalty = sp.frequency_penalty;
    p.sampling.presence_penalty = sp.presence_penalty;
    p.sampling.penalty_last_n = sp.penalty_last_n;
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
    memmove(o->buf, o->buf + n, o->len - n);
    o->len -= n;
    if (o->buf) o->buf[o->len] = 0;
}

// --- the loop ------------------------------------------------------------------------------

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
    vkllm_status st = len ? vkllm__tokenize(tok, p->prompt, len, 0, p->parse_special, &t, &cnt) : VKLLM_STATUS_OK;
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
    if (cnt == 0) {
        vkllm__free(t);
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "empty prompt and the model has no BOS token to start from");
    }
    *ids = t;
    *n = cnt;
    return VKLLM_STATUS_OK;
}

static vkllm_status make_sampler(vkllm_session_t s, const struct vkllm_sampling_params *sp, struct vkllm__sampler **out) {
    struct vkllm__sampler_params p;
    vkllm__sampler_params_default(&p);
    p.temperature = sp->temperature;
    p.top_k = sp->top_k;
    p.top_p = sp->top_p;
    p.min_p = sp->min_p;
    p.repeat_penalty = sp->repeat_penalty;
    p.frequency_penalty = sp->frequency_penalty;
    p.presence_penalty = sp->presence_penalty;
    p.penalty_last_n = sp->penalty_last_n;
    p.seed = sp->seed;
    p.has_seed = sp->has_seed;
    p.order = sp->order;
    p.bias_tokens = sp->bias_tokens;
    p.bias_values = sp->bias_values;
    p.n_bias = sp->n_bias;
    return vkllm__sampler_init(&p, s->model->desc->hp.n_vocab, out);
}

vkllm_status vkllm_generate(vkllm_session_t s, const struct vkllm_generate_params *params, vkllm_text_fn fn,
                            void *user_data, struct vkllm_generate_stats *stats) {
    const double t0 = vkllm__now_ns() / 1e6;
    if (!s || !params) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_generate: NULL argument");
    if (!s->model->tok)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "this model's tokenizer is not supported: %s", s->model->tok_error);
    struct vkllm_generate_stats st0 = {0}, *stt = stats ? stats : &st0;
    memset(stt, 0, sizeof *stt);
    const struct vkllm_generate_params *p = params;
    const uint32_t n_ctx = vkllm_session_n_ctx(s);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    struct vkllm__sampler *smp = NULL;
    struct vkllm__detok_stream ds;
    struct outbuf out = {0};
    double *itl = NULL;
    int ds_init = 0;
    vkllm_status st;

    if (!p->keep_history) vkllm_session_truncate(s, 0);
    int continuing = s->n_past > 0;
    VKLLM_TRY(st, prompt_tokens(s, p, &ids, &n_ids), done);
    if ((uint64_t)s->n_past + n_ids > n_ctx) {
        st = vkllm__err(VKLLM_STATUS_CONTEXT_FULL,
                        "the prompt is %zu tokens; the context has room for %u (of %u, %u in use)", n_ids,
                        n_ctx - s->n_past, n_ctx, s->n_past);
        goto done;
    }
    VKLLM_TRY(st, make_sampler(s, &p->sampling, &smp), done);
    stt->seed = vkllm__sampler_seed(smp);
    for (size_t i = 0; i < n_ids; i++) vkllm__sampler_accept(smp, ids[i]);
    uint32_t cap_itl = p->n_predict >= 0 ? (uint32_t)p->n_predict + 1 : n_ctx + 1;
    itl = vkllm__malloc(sizeof *itl * cap_itl);
    if (!itl) {
        st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
        goto done;
    }

    // prefill
    double tp = vkllm__now_ns() / 1e6;
    VKLLM_TRY(st, vkllm_session_eval(s, ids, (uint32_t)n_ids, 0), done);
    stt->n_prompt = (uint32_t)n_ids;
    stt->prefill_ms = vkllm__now_ns() / 1e6 - tp;
    stt->prefill_tps = stt->prefill_ms > 0 ? n_ids / (stt->prefill_ms / 1e3) : 0;

    /* SentencePiece's leading space is dropped only when the text starts at BOS (as llama2.c). */
    int from_bos_only = !continuing && n_ids == 1;
    vkllm__detok_stream_init(&ds, s->model->tok, from_bos_only ? 0 : VKLLM__DETOK_KEEP_SPACE);
    ds_init = 1;
    int greedy = vkllm__sampler_is_greedy(smp);
    int32_t cur;
    VKLLM_TRY(st, vkllm__sampler_sample(smp, vkllm_session_logits(s, 0), &cur), done);
    double t_prev = 0, t_first = 0;
    enum vkllm_stop_reason reason = VKLLM_STOP_NONE;
    for (;;) {
        double now = vkllm__now_ns() / 1e6;
        if (vkllm__token_is_eog(s->model->tok, cur)) {
            reason = VKLLM_STOP_EOS;
            break;
        }
        vkllm__sampler_accept(smp, cur);
        if (stt->n_generated == 0) {
            t_first = now;
            stt->ttft_ms = now - t0;
        } else if (stt->n_generated - 1 < cap_itl) {
            itl[stt->n_generated - 1] = now - t_prev;
        }
        t_prev = now;
        stt->n_generated++;
        const char *text;
        size_t len;
        VKLLM_TRY(st, vkllm__detok_stream_push(&ds, cur, &text, &len), done);
        if (len && out_append(&out, text, len)) {
            st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
            goto done;
        }
        int hit;
        size_t ready = out_ready(&out, p, &hit);
        if (ready && fn && fn(out.buf, ready, user_data)) reason = VKLLM_STOP_CANCELLED;
        out_consume(&out, ready);
        if (hit) {
            out.len = 0; /* the stop string and anything after it are dropped */
            reason = VKLLM_STOP_STRING;
        }
        if (reason) break;
        if (p->n_predict >= 0 && stt->n_generated >= (uint32_t)p->n_predict) {
            reason = VKLLM_STOP_MAX_TOKENS;
            break;
        }
        if (s->n_past >= n_ctx) {
            reason = VKLLM_STOP_CONTEXT_FULL;
            break;
        }
        if (greedy) {
            VKLLM_TRY(st, vkllm_session_decode_greedy(s, cur, &cur), done);
        } else {
            VKLLM_TRY(st, vkllm_session_eval(s, &cur, 1, 0), done);
            VKLLM_TRY(st, vkllm__sampler_sample(smp, vkllm_session_logits(s, 0), &cur), done);
        }
    }
    if (reason != VKLLM_STOP_STRING && reason != VKLLM_STOP_CANCELLED) { /* the rest goes out */
        const char *text;
        size_t len;
        VKLLM_TRY(st, vkllm__detok_stream_flush(&ds, &text, &len), done);
        if (len && out_append(&out, text, len)) {
            st = vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
            goto done;
        }
        int hit;
        size_t ready = out_ready(&out, p, &hit);
        if (hit) reason = VKLLM_STOP_STRING;
        else ready = out.len;
        if (ready && fn) fn(out.buf, ready, user_data);
    }
    stt->stop_reason = reason;
    finish_stats(stt, itl, stt->n_generated > 1 ? stt->n_generated - 1 : 0, t_first, t_prev);
done:
    if (ds_init) vkllm__detok_stream_free(&ds);
    vkllm__free(out.buf);
    vkllm__free(itl);
    vkllm__sampler_free(smp);
    vkllm__free(ids);
    {
        struct vkllm_session_memory mem;
        vkllm_session_memory(s, &mem);
        stt->kv_bytes_used = mem.kv_bytes_used;
        stt->kv_bytes_allocated = mem.kv_bytes_allocated;
        stt->device_bytes = mem.device_bytes;
        stt->total_ms = vkllm__now_ns() / 1e6 - t0;
    }
    return st;
}

// --- chat templates ------------------------------------------------------------------------

const char *vkllm_chat_template_names(void) { return vkllm__chat_template_names(); }

void vkllm_free(void *p) { vkllm__free(p); }

vkllm_status vkllm_chat_format(vkllm_model_t model, const char *template_name, const struct vkllm_chat_message *msgs,
                               size_t n, int add_generation_prompt, char **out) {
    if (!model || !out || (n && !msgs)) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_chat_format: NULL argument");
    if (!model->tok)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "this model's tokenizer is not supported: %s", model->tok_error);
    enum vkllm__chat_tmpl id;
    vkllm_status st = vkllm__chat_template_for(model->tok, template_name, &id);
    if (st == VKLLM_STATUS_NOT_FOUND)
        return vkllm__err(st, "the model has no chat template; name one (known: %s)", vkllm__chat_template_names());
    if (st) return st;
    struct vkllm__chat_msg *m = vkllm__calloc(n ? n : 1, sizeof *m);
    if (!m) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    for (size_t i = 0; i < n; i++) m[i] = (struct vkllm__chat_msg){msgs[i].role, msgs[i].content};
    size_t len;
    st = vkllm__chat_apply(id, m, n, add_generation_prompt, out, &len);
    vkllm__free(m);
    return st;
}
