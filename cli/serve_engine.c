/* serve_engine.c - the thread that owns the slot sessions: admit queued requests into free
 * slots, decode every running request together in one vkllm_gen_step, hand each request its
 * text, finish the done ones; and the metrics it keeps on the way. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

/* --- requests ------------------------------------------------------------------------------ */

void serve_piece_free(struct serve_piece *p) {
    if (p) free(p->probs);
    free(p);
}

struct serve_req *serve_req_new(void) {
    struct serve_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_mutex_init(&r->mu, NULL);
    r->refs = 1;
    r->gp = vkllm_generate_params_default();
    return r;
}

/* A copy of src[0..n) (NULL when src is); *ok becomes 0 when out of memory. */
static void *dup_mem(const void *src, size_t n, int *ok) {
    if (!src) return NULL;
    void *d = malloc(n ? n : 1);
    if (d) memcpy(d, src, n);
    else *ok = 0;
    return d;
}

static char *dup_str(const char *s, int *ok) { return dup_mem(s, s ? strlen(s) + 1 : 0, ok); }

struct serve_req *serve_req_clone(const struct serve_req *r) {
    struct serve_req *c = serve_req_new();
    if (!c) return NULL;
    memcpy(c, r, offsetof(struct serve_req, held));
    int ok = 1; /* every pointer copied over is replaced by c's own copy (NULL: none, or no memory) */
    c->echo = dup_str(r->echo, &ok);
    c->prompt = dup_str(r->prompt, &ok);
    c->grammar = dup_str(r->grammar, &ok);
    c->prompt_ids = dup_mem(r->prompt_ids, sizeof *r->prompt_ids * r->n_prompt_ids, &ok);
    c->bias_tokens = dup_mem(r->bias_tokens, sizeof *r->bias_tokens * r->gp.sampling.n_bias, &ok);
    c->bias_values = dup_mem(r->bias_values, sizeof *r->bias_values * r->gp.sampling.n_bias, &ok);
    for (int i = 0; i < SERVE_MAX_STOP; i++) c->stops[i] = dup_str(r->stops[i], &ok);
    c->tools = r->tools ? cJSON_Duplicate(r->tools, 1) : NULL;
    if (r->tools && !c->tools) ok = 0;
    /* gp points into the request: into c's copies now */
    c->gp.prompt = c->prompt;
    c->gp.prompt_tokens = r->gp.prompt_tokens ? c->prompt_ids : NULL;
    c->gp.stop = r->gp.stop ? (const char *const *)c->stops : NULL;
    c->gp.sampling.bias_tokens = r->gp.sampling.bias_tokens ? c->bias_tokens : NULL;
    c->gp.sampling.bias_values = r->gp.sampling.bias_values ? c->bias_values : NULL;
    c->gp.grammar = r->gp.grammar ? c->grammar : NULL;
    if (ok) return c;
    serve_req_unref(c);
    return NULL;
}

void serve_req_ref(struct serve_req *r) {
    pthread_mutex_lock(&r->mu);
    r->refs++;
    pthread_mutex_unlock(&r->mu);
}

void serve_req_unref(struct serve_req *r) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    int last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last) return;
    for (struct serve_piece *p = r->head, *n; p; p = n) {
        n = p->next;
        serve_piece_free(p);
    }
    for (int i = 0; i < SERVE_MAX_STOP; i++) free(r->stops[i]);
    free(r->prompt);
    free(r->grammar);
    cJSON_Delete(r->tools);
    sbuf_free(&r->held);
    free(r->scan);
    free(r->echo);
    free(r->embedding);
    free(r->prompt_ids);
    free(r->bias_tokens);
    free(r->bias_values);
    free(r->probs);
    sbuf_free(&r->text);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void serve_req_unlock_notify(struct serve_req *r) {
    void (*wake)(void *) = NULL;
    void *arg = NULL;
    if (r->wake && (!r->wake_ready || r->wake_ready(r))) {
        wake = r->wake, arg = r->wake_arg;
        r->wake = NULL, r->wake_arg = NULL, r->wake_ready = NULL;
    }
    pthread_mutex_unlock(&r->mu);
    if (wake) wake(arg); /* after the unlock: the waiter stays parked until this call */
}

/* records[0..n) appended to r->probs (r->mu held); 0, or -1 when out of memory. */
static int add_probs(struct serve_req *r, const struct vkllm_token_probs *lp, uint32_t n) {
    if (r->n_probs + n > r->cap_probs) {
        uint32_t cap = r->n_probs + n < 2 * r->cap_probs ? 2 * r->cap_probs : r->n_probs + n + 16;
        struct vkllm_token_probs *np = realloc(r->probs, sizeof *np * cap);
        if (!np) return -1;
        r->probs = np, r->cap_probs = cap;
    }
    if (n) memcpy(r->probs + r->n_probs, lp, sizeof *lp * n);
    r->n_probs += n;
    return 0;
}

/* A stream's piece: the text and its tokens' records. NULL when out of memory. */
static struct serve_piece *piece_new(const char *text, size_t len, const struct vkllm_token_probs *lp, uint32_t n) {
    struct serve_piece *p = malloc(sizeof *p + len + 1);
    if (!p) return NULL;
    int ok = 1;
    p->next = NULL;
    p->probs = n ? dup_mem(lp, sizeof *lp * n, &ok) : NULL;
    p->n_probs = n;
    p->len = len;
    memcpy(p->text, text, len);
    p->text[len] = 0;
    if (ok) return p;
    free(p);
    return NULL;
}

/* The gen's piece callback (engine thread): a piece of text with the records of the tokens that
 * produced it (the library pairs them: vkllm_generate_params.on_piece). A stream gets each piece as
 * its own event, records that come without text with the final chunk; a plain reply appends both.
 * Returns nonzero (stop) once the client has gone. */
static int on_piece(const struct vkllm_text_piece *pc, void *ud) {
    struct serve_req *r = ud;
    const char *text = pc->text;
    size_t len = pc->len;
    /* a NUL byte (a byte token's 0x00) becomes U+FFFD: replies are built from C strings, where
     * it would silently end the text (the rest of a piece is UTF-8 already: the detokenizer's) */
    char *clean = NULL;
    int nul = memchr(text, 0, len) != NULL;
    if (nul && (clean = serve_utf8_valid_n(text, len))) text = clean, len = strlen(clean);
    pthread_mutex_lock(&r->mu);
    int oom = nul && !clean; /* reported as an error when the request finishes, not cut short */
    if (r->stream && len) {
        struct serve_piece *p = piece_new(text, len, pc->probs, pc->n_probs);
        if (p && r->tail) r->tail->next = p;
        else if (p) r->head = p;
        if (p) r->tail = p;
        oom |= !p;
    } else { /* a plain reply's piece, or a stream's records without text */
        if (len) sbuf_add(&r->text, text, len);
        oom |= add_probs(r, pc->probs, pc->n_probs) != 0;
    }
    if (oom) r->text.oom = 1;
    int stop = r->cancelled;
    serve_req_unlock_notify(r);
    free(clean);
    return stop;
}

/* --- metrics ------------------------------------------------------------------------------- */

static const double ttft_bounds[SERVE_TTFT_BUCKETS - 1] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                           1,     2.5,  5,     10,   30,  60};
static const double itl_bounds[SERVE_ITL_BUCKETS - 1] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                         0.1,   0.25,   0.5,   1,    2.5};

static void hist_observe(struct serve_hist *h, const double *bounds, size_t nb, double v) {
    size_t i = 0;
    while (i < nb && v > bounds[i]) i++;
    h->counts[i]++;
    h->sum += v;
    h->count++;
}

static void hist_print(struct serve_buf *o, const char *name, const char *help, const struct serve_hist *h,
                       const double *bounds, size_t nb) {
    sbuf_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i <= nb; i++) {
        cum += h->counts[i];
        if (i < nb) sbuf_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
        else sbuf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    sbuf_printf(o, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->count);
}

static void metric(struct serve_buf *o, const char *name, const char *type, const char *help, double v) {
    sbuf_printf(o, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

/* Generated tokens per second over the last 10 seconds (the server's uptime while shorter):
 * the tokens counted after the newest entry at least 10 s old, over the window, idle time in it
 * included. Entries are at least SERVE_TPS_GAP s apart (tps_record), so the ring reaches back
 * past 10 s. */
static double recent_tps(const struct serve_metrics *m, double now, double uptime) {
    if (m->tps_count == 0) return 0;
    uint32_t first = (m->tps_head + SERVE_TPS_RING - m->tps_count) % SERVE_TPS_RING;
    uint32_t last = (m->tps_head + SERVE_TPS_RING - 1) % SERVE_TPS_RING;
    uint64_t base = m->tps_count < SERVE_TPS_RING ? 0 : m->tps_n[first]; /* nothing older was counted */
    for (uint32_t k = 0; k < m->tps_count; k++) {
        uint32_t i = (first + k) % SERVE_TPS_RING;
        if (now - m->tps_t[i] < 10) break;
        base = m->tps_n[i];
    }
    double window = uptime < 10 ? uptime : 10;
    return window > 0 ? (double)(m->tps_n[last] - base) / window : 0;
}

/* After a step: (now, tokens generated so far) into the ring: a new entry once the one before the
 * newest is SERVE_TPS_GAP s old, else the newest moved up to now. */
static void tps_record(struct serve_metrics *m, double now, uint64_t total) {
    uint32_t last = (m->tps_head + SERVE_TPS_RING - 1) % SERVE_TPS_RING;
    uint32_t prev = (m->tps_head + SERVE_TPS_RING - 2) % SERVE_TPS_RING;
    if (m->tps_count >= 2 && now - m->tps_t[prev] < SERVE_TPS_GAP) {
        m->tps_t[last] = now, m->tps_n[last] = total;
        return;
    }
    m->tps_t[m->tps_head] = now;
    m->tps_n[m->tps_head] = total;
    m->tps_head = (m->tps_head + 1) % SERVE_TPS_RING;
    if (m->tps_count < SERVE_TPS_RING) m->tps_count++;
}

void serve_engine_metrics(struct serve_engine *e, struct serve_buf *o, const uint64_t *requests,
                          const char *const *endpoints, size_t n_endpoints, const uint64_t *codes,
                          const int *code_values, size_t n_codes) {
    pthread_mutex_lock(&e->mu);
    const struct serve_metrics *m = &e->m;
    double now = cli_now();
    sbuf_printf(o, "# HELP vkllm_requests_total HTTP requests received, by endpoint.\n"
                   "# TYPE vkllm_requests_total counter\n");
    for (size_t i = 0; i < n_endpoints; i++)
        sbuf_printf(o, "vkllm_requests_total{endpoint=\"%s\"} %llu\n", endpoints[i], (unsigned long long)requests[i]);
    sbuf_printf(o, "# HELP vkllm_responses_total HTTP responses sent, by status code.\n"
                   "# TYPE vkllm_responses_total counter\n");
    for (size_t i = 0; i < n_codes; i++)
        sbuf_printf(o, "vkllm_responses_total{code=\"%d\"} %llu\n", code_values[i], (unsigned long long)codes[i]);
    static const char *fin[SERVE_FIN_COUNT] = {"stop", "length", "cancelled", "error"};
    sbuf_printf(o, "# HELP vkllm_requests_finished_total Generation requests finished, by how.\n"
                   "# TYPE vkllm_requests_finished_total counter\n");
    for (int i = 0; i < SERVE_FIN_COUNT; i++)
        sbuf_printf(o, "vkllm_requests_finished_total{reason=\"%s\"} %llu\n", fin[i],
                    (unsigned long long)m->finished[i]);
    metric(o, "vkllm_requests_rejected_total", "counter", "Requests refused with 503 because the queue was full.",
           (double)m->rejected_queue_full);
    metric(o, "vkllm_prompt_tokens_total", "counter", "Prompt tokens of finished requests.", (double)m->prompt_tokens);
    metric(o, "vkllm_prompt_cached_tokens_total", "counter",
           "Of those, tokens found in a slot's KV cache (prefix reuse) and not evaluated again.",
           (double)m->prompt_cached_tokens);
    metric(o, "vkllm_prompt_shared_tokens_total", "counter",
           "Of the cached prompt tokens, those copied from another slot's KV cache (a shared prefix, n > 1 choices)",
           (double)m->prompt_shared_tokens);
    metric(o, "vkllm_generation_tokens_total", "counter", "Tokens generated.", (double)m->generated_tokens);
    hist_print(o, "vkllm_time_to_first_token_seconds", "Request arrival to its first token (queue wait included).",
               &m->ttft, ttft_bounds, SERVE_TTFT_BUCKETS - 1);
    hist_print(o, "vkllm_inter_token_latency_seconds", "Time between consecutive tokens of a request.", &m->itl,
               itl_bounds, SERVE_ITL_BUCKETS - 1);
    metric(o, "vkllm_generation_tokens_per_second", "gauge", "Tokens generated per second over the last 10 s.",
           recent_tps(m, now, now - e->t_start));
    metric(o, "vkllm_decode_steps_total", "counter", "Batched decode steps.", (double)m->steps);
    metric(o, "vkllm_decode_step_rows_total", "counter", "Requests decoded over all steps (rows / steps = batch).",
           (double)m->step_rows);
    metric(o, "vkllm_kv_cache_used_bytes", "gauge", "KV cache bytes holding positions of running requests.",
           (double)m->kv_used);
    metric(o, "vkllm_kv_cache_retained_bytes", "gauge",
           "KV pool bytes no running request holds that keep tokens for prefix reuse (evicted when needed).",
           (double)m->kv_retained);
    metric(o, "vkllm_kv_cache_allocated_bytes", "gauge",
           "KV cache bytes on the device (the pool and any window rings).", (double)m->kv_allocated);
    metric(o, "vkllm_kv_cache_usage_ratio", "gauge", "KV pool blocks held by running requests over the pool's blocks.",
           m->kv_blocks ? (double)m->kv_blocks_running / m->kv_blocks : 0);
    metric(o, "vkllm_kv_cache_block_size", "gauge", "Positions (tokens) per KV pool block.", m->kv_block_tokens);
    metric(o, "vkllm_kv_cache_blocks_total", "gauge", "KV pool blocks (the pool's block count).", m->kv_blocks);
    metric(o, "vkllm_kv_cache_blocks_used", "gauge", "KV pool blocks held by running requests.", m->kv_blocks_running);
    metric(o, "vkllm_kv_cache_blocks_cached", "gauge",
           "KV pool blocks no running request holds that keep tokens for later prompts (evicted when needed).",
           m->kv_blocks_cached);
    metric(o, "vkllm_kv_cache_pool_bytes", "gauge", "Bytes of the KV pool.", (double)m->kv_pool_bytes);
    metric(o, "vkllm_kv_cache_evicted_blocks_total", "counter", "Cached KV blocks taken for new tokens.",
           (double)m->kv_evicted);
    metric(o, "vkllm_kv_cache_waits_total", "counter", "Requests that waited in the queue for KV blocks (each once).",
           (double)m->kv_waits);
    metric(o, "vkllm_requests_preempted_total", "counter",
           "Running requests preempted because the KV pool ran dry (their blocks given back; recomputed later, "
           "the reply unchanged).",
           (double)m->preempted);
    metric(o, "vkllm_prefix_cache_queries_tokens_total", "counter",
           "Prompt tokens looked up in the KV pool's block cache.", (double)m->prefix_queried);
    metric(o, "vkllm_prefix_cache_hits_tokens_total", "counter", "Of those, tokens found there (whole blocks).",
           (double)m->prefix_hits);
    if (m->n_devices > 1) { /* a layer split (--devices): each device's part of the steps, as bench shows */
        sbuf_printf(o, "# HELP vkllm_device_seconds_total Seconds the slots' steps spent in each device's layers "
                       "of a split (--devices), the copy to the next device included.\n"
                       "# TYPE vkllm_device_seconds_total counter\n");
        for (uint32_t d = 0; d < m->n_devices; d++) {
            uint32_t l0 = 0, l1 = 0;
            vkllm_model_device(e->model, d, NULL, &l0, &l1);
            sbuf_printf(o, "vkllm_device_seconds_total{device=\"%u\",layers=\"%u-%u\"} %.6f\n", d, l0, l1 ? l1 - 1 : 0,
                        m->device_ms[d] / 1e3);
        }
    }
    metric(o, "vkllm_slots_total", "gauge", "Slots (--parallel).", e->n_slots);
    metric(o, "vkllm_slots_busy", "gauge", "Slots running a request.", m->busy);
    metric(o, "vkllm_queue_length", "gauge", "Requests waiting for a slot.", e->q_len);
    metric(o, "vkllm_queue_capacity", "gauge", "Requests that may wait before 503.", e->queue_cap);
    metric(o, "vkllm_uptime_seconds", "gauge", "Seconds since the server started.", now - e->t_start);
    pthread_mutex_unlock(&e->mu);
}

/* KV cache bytes over all slots, and each slot's state for /slots (engine thread; running slots
 * count their positions as used; the pool's blocks no running request holds, an idle slot's or
 * cached, as retained for prefix reuse); and a layer split's time per device. */
static void update_kv(struct serve_engine *e) {
    uint64_t used = 0, rings = 0;
    uint32_t n_dev = vkllm_model_n_devices(e->model);
    pthread_mutex_lock(&e->mu);
    e->m.n_devices = n_dev < VKLLM_MAX_DEVICES ? n_dev : VKLLM_MAX_DEVICES;
    for (uint32_t d = 0; d < e->m.n_devices; d++) { /* since the sessions were made: a counter */
        e->m.device_ms[d] = 0;
        for (uint32_t i = 0; i < e->n_slots; i++) e->m.device_ms[d] += vkllm_session_device_ms(e->slots[i], d);
    }
    for (uint32_t i = 0; i < e->n_slots; i++) {
        struct vkllm_session_memory sm;
        vkllm_session_memory(e->slots[i], &sm);
        rings += sm.kv_bytes_rings;
        if (e->active[i]) used += sm.kv_bytes_used;
        struct serve_slot_info *si = &e->slot_info[i];
        si->busy = e->active[i] != NULL;
        snprintf(si->req_id, sizeof si->req_id, "%s", e->active[i] ? e->active[i]->id : "");
        si->n_past = vkllm_session_n_past(e->slots[i]);
        si->n_ctx = vkllm_session_n_ctx(e->slots[i]);
        si->kv_used = sm.kv_bytes_used;
        si->kv_allocated = sm.kv_bytes_allocated;
    }
    /* the pool: blocks the running requests hold (a block shared by several counted once per
     * holder, at most the pool's held ones); the rest of the held ones are idle slots' */
    struct vkllm_kv_pool_info pi;
    vkllm_kv_pool_get_info(e->pool, &pi);
    uint64_t running = 0;
    for (uint32_t i = 0; i < e->n_slots; i++)
        if (e->active[i]) running += (vkllm_session_n_past(e->slots[i]) + pi.block_tokens - 1) / pi.block_tokens;
    if (running > pi.n_held) running = pi.n_held;
    e->m.kv_used = used;
    /* blocks no running request holds that keep tokens (cached, or an idle slot's): within the pool */
    e->m.kv_retained = (uint64_t)(pi.n_cached + pi.n_held - running) * pi.block_bytes;
    e->m.kv_block_tokens = pi.block_tokens;
    e->m.kv_allocated = pi.bytes + rings; /* the pool once (a block several slots share too), and the rings */
    e->m.kv_blocks = pi.n_blocks;
    e->m.kv_blocks_running = (uint32_t)running;
    e->m.kv_blocks_cached = pi.n_cached + pi.n_held - (uint32_t)running;
    e->m.kv_pool_bytes = pi.bytes;
    e->m.prefix_queried = pi.queried_tokens;
    e->m.prefix_hits = pi.hit_tokens;
    e->m.kv_evicted = pi.evicted_blocks;
    e->m.preempted = pi.preempted;
    pthread_mutex_unlock(&e->mu);
}

cJSON *serve_engine_slots_json(struct serve_engine *e) {
    cJSON *a = cJSON_CreateArray();
    pthread_mutex_lock(&e->mu);
    for (uint32_t i = 0; a && i < e->n_slots; i++) {
        const struct serve_slot_info *si = &e->slot_info[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", i);
        cJSON_AddNumberToObject(o, "n_ctx", si->n_ctx);
        cJSON_AddBoolToObject(o, "is_processing", si->busy);
        if (si->busy) cJSON_AddStringToObject(o, "request", si->req_id);
        else cJSON_AddNullToObject(o, "request");
        cJSON_AddNumberToObject(o, "n_past", si->n_past);
        cJSON_AddNumberToObject(o, "kv_bytes_used", (double)si->kv_used);
        cJSON_AddNumberToObject(o, "kv_bytes_allocated", (double)si->kv_allocated);
        cJSON_AddItemToArray(a, o);
    }
    pthread_mutex_unlock(&e->mu);
    return a;
}

/* --- finishing ----------------------------------------------------------------------------- */

/* Hand r its end (error status 0: finished normally, r->stats holding the gen's final
 * stats) and drop the engine's reference: r may be gone when this returns. */
static void finish(struct serve_engine *e, struct serve_req *r, int status, const char *msg) {
    /* a client gone before its request started is a cancellation; a request refused before it
     * started (400: the prompt does not fit) is not a generation at all (the responses counter
     * has it) */
    enum serve_finish how = status == 499 ? SERVE_FIN_CANCELLED : SERVE_FIN_ERROR;
    int counted = status < 400 || status >= 500 || status == 499;
    /* the token counters before the reply goes out (a client reading /metrics right after its
     * reply sees them); r->stats is the engine thread's own by now */
    pthread_mutex_lock(&e->mu);
    e->m.prompt_tokens += r->stats.n_prompt;
    e->m.prompt_cached_tokens += r->stats.n_prompt_cached;
    e->m.prompt_shared_tokens += r->stats.n_prompt_shared;
    e->m.generated_tokens += r->stats.n_generated;
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_lock(&r->mu);
    if (!status && r->text.oom) status = 500, msg = "out of memory while streaming the reply";
    if (!status) {
        enum vkllm_stop_reason why = r->stats.stop_reason;
        if (why == VKLLM_STOP_CANCELLED || r->cancelled) {
            how = SERVE_FIN_CANCELLED;
            status = 499; /* nobody reads it: the client has gone */
            msg = "cancelled";
        } else if (why == VKLLM_STOP_EOS || why == VKLLM_STOP_STRING) {
            how = SERVE_FIN_STOP;
            r->finish_reason = "stop";
        } else if (why == VKLLM_STOP_MAX_TOKENS || why == VKLLM_STOP_CONTEXT_FULL || why == VKLLM_STOP_KV_FULL) {
            how = SERVE_FIN_LENGTH;
            r->finish_reason = "length";
        } else {
            status = 500;
            msg = "generation stopped without a reason";
        }
    }
    if (status) {
        r->http_status = status;
        snprintf(r->err, sizeof r->err, "%s", msg);
    }
    r->state = SERVE_DONE;
    serve_req_unlock_notify(r);

    pthread_mutex_lock(&e->mu);
    if (counted) e->m.finished[how]++;
    pthread_mutex_unlock(&e->mu);
    serve_req_unref(r);
}

static int req_cancelled(struct serve_req *r) {
    pthread_mutex_lock(&r->mu);
    int c = r->cancelled;
    pthread_mutex_unlock(&r->mu);
    return c;
}

/* Free slot i after its request ended: its final stats go to the request, the gen is freed.
 * Returns the request, to be finished. */
static struct serve_req *release_slot(struct serve_engine *e, uint32_t i) {
    struct serve_req *r = e->active[i];
    vkllm_gen_t g = r->gen;
    e->active[i] = NULL;
    struct vkllm_generate_stats s;
    vkllm_gen_stats(g, &s);
    vkllm_gen_free(g);
    r->gen = NULL;
    pthread_mutex_lock(&r->mu);
    r->stats = s;
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_lock(&e->mu);
    e->m.busy--;
    pthread_mutex_unlock(&e->mu);
    return r;
}

/* --- the loop ------------------------------------------------------------------------------ */

/* Blocks of the KV pool a request may still take: free ones and cached ones. */
static uint32_t pool_room(const struct serve_engine *e) {
    struct vkllm_kv_pool_info pi;
    vkllm_kv_pool_get_info(e->pool, &pi);
    return pi.n_free + pi.n_cached;
}

/* Idle slots give their blocks back to the pool (engine thread): the full ones stay
 * cached there, for any slot's next prompt that starts the same way. */
static void reclaim_idle(struct serve_engine *e) {
    for (uint32_t i = 0; i < e->n_slots; i++)
        if (!e->active[i] && vkllm_session_n_past(e->slots[i])) vkllm_session_truncate(e->slots[i], 0);
}

/* Whether a running request was preempted (the KV pool ran dry: vkllm_gen_step gave its blocks
 * back, and it waits to be recomputed): its slot's session then holds nothing while its gen goes
 * on (a started gen has evaluated at least one token otherwise). */
static int any_preempted(const struct serve_engine *e) {
    for (uint32_t i = 0; i < e->n_slots; i++)
        if (e->active[i] && !vkllm_gen_done(e->active[i]->gen) && vkllm_session_n_past(e->slots[i]) == 0) return 1;
    return 0;
}

static int any_running(const struct serve_engine *e) {
    for (uint32_t i = 0; i < e->n_slots; i++)
        if (e->active[i]) return 1;
    return 0;
}

/* An embeddings request: evaluated at once on slot i's session (one prefill, no decode steps),
 * its pooled vector handed back. The slot's cache then holds that text. */
static void embed(struct serve_engine *e, uint32_t i, struct serve_req *r) {
    char msg[600] = "out of memory";
    float *v = malloc(sizeof *v * (r->n_embd ? r->n_embd : 1));
    vkllm_status st = VKLLM_STATUS_OOM;
    double t0 = cli_now();
    if (v) {
        st = vkllm_session_embed(e->slots[i], r->prompt_ids, r->n_prompt_ids, (enum vkllm_pooling)r->pooling, 1, v);
        if (st == VKLLM_STATUS_KV_FULL) { /* the idle slots' KV blocks first */
            reclaim_idle(e);
            st = vkllm_session_embed(e->slots[i], r->prompt_ids, r->n_prompt_ids, (enum vkllm_pooling)r->pooling, 1, v);
        }
        if (st == VKLLM_STATUS_CONTEXT_FULL)
            snprintf(msg, sizeof msg, "the input (%u tokens) does not fit in the context of %u tokens", r->n_prompt_ids,
                     vkllm_session_n_ctx(e->slots[i]));
        else if (st) snprintf(msg, sizeof msg, "%s", *vkllm_last_error() ? vkllm_last_error() : vkllm_status_str(st));
    }
    if (e->slot_prompt) free(e->slot_prompt[i]), e->slot_prompt[i] = NULL;
    if (st) {
        free(v);
        finish(e, r,
               st == VKLLM_STATUS_KV_FULL                                               ? 503
               : st == VKLLM_STATUS_CONTEXT_FULL || st == VKLLM_STATUS_INVALID_ARGUMENT ? 400
                                                                                        : 500,
               msg);
        return;
    }
    pthread_mutex_lock(&r->mu);
    r->embedding = v;
    r->stats.n_prompt = r->n_prompt_ids;
    r->stats.prefill_ms = r->stats.total_ms = (cli_now() - t0) * 1e3;
    r->stats.stop_reason = VKLLM_STOP_EOS; /* counted with the finished requests as "stop" */
    pthread_mutex_unlock(&r->mu);
    finish(e, r, 0, NULL);
}

/* gp.cancel: a prompt evaluated at once (--prefill-chunk 0, or a chunk) stops between its
 * micro-batches when the server is stopping or the client has gone, instead of running to the
 * end first (a SIGTERM waited 8.5 s for a prompt of 2,000 tokens). */
static int engine_stopping(struct serve_engine *e) {
    pthread_mutex_lock(&e->mu);
    int stopping = e->stopping;
    pthread_mutex_unlock(&e->mu);
    return stopping;
}

static int prefill_cancelled(void *arg) {
    struct serve_req *r = arg;
    return engine_stopping(r->engine) || req_cancelled(r);
}

/* vkllm_gen_start refused r (st, with the library's msg): r finishes with the status that says
 * why. Returns 1 instead when the KV pool has no room for r's prompt while other requests run
 * (r then waits for the blocks they give back). */
static int refused(struct serve_engine *e, uint32_t i, struct serve_req *r, vkllm_status st, const char *msg) {
    char full[600];
    if (st == VKLLM_STATUS_CANCELLED) { /* by prefill_cancelled: the server stops, or the client went */
        int stopping = engine_stopping(e);
        finish(e, r, stopping ? 503 : 499, stopping ? "the server is shutting down" : "cancelled");
    } else if (st == VKLLM_STATUS_KV_FULL && any_running(e)) {
        return 1;
    } else if (st == VKLLM_STATUS_KV_FULL) {
        snprintf(full, sizeof full,
                 "the prompt needs more of the KV cache than the whole pool holds "
                 "(--kv-cache-mb): %s",
                 msg);
        finish(e, r, 400, full);
    } else if (st == VKLLM_STATUS_CONTEXT_FULL) {
        snprintf(full, sizeof full, "the prompt does not fit in the context of %u tokens: %s",
                 vkllm_session_n_ctx(e->slots[i]), msg);
        finish(e, r, 400, full);
    } else {
        finish(e, r, st == VKLLM_STATUS_INVALID_ARGUMENT ? 400 : 500, msg);
    }
    return 0;
}

/* Start r in slot i. Returns 1 when the KV pool has no room for r's prompt while other requests
 * run (r goes back to the head of the queue, to start when they give blocks back), else 0 (r
 * started, or finished with an error). */
static int admit(struct serve_engine *e, uint32_t i, struct serve_req *r) {
    if (req_cancelled(r)) {
        finish(e, r, 499, "cancelled");
        return 0;
    }
    if (r->embed) {
        embed(e, i, r);
        return 0;
    }
    vkllm_gen_t g = NULL;
    r->gp.prefill_chunk = e->prefill_chunk; /* the rest of a long prompt goes between decode steps */
    r->gp.share = e->slots;                 /* a prefix another slot holds is shared, not evaluated again */
    r->gp.n_share = e->n_slots;
    r->engine = e;
    r->gp.cancel = prefill_cancelled;
    r->gp.cancel_user_data = r;
    r->gp.on_piece = on_piece; /* each piece of text with its tokens' logprobs records */
    r->gp.piece_user_data = r;
    vkllm_status st = vkllm_gen_start(e->slots[i], &r->gp, NULL, NULL, &g);
    if (st == VKLLM_STATUS_KV_FULL) { /* the idle slots' blocks first */
        reclaim_idle(e);
        st = vkllm_gen_start(e->slots[i], &r->gp, NULL, NULL, &g);
    }
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", *vkllm_last_error() ? vkllm_last_error() : vkllm_status_str(st));
        return refused(e, i, r, st, msg);
    }
    /* the first token is there unless the prompt is still being evaluated in chunks (then step()
     * records the time to first token when it comes) */
    double now = cli_now();
    int first = vkllm_gen_n_generated(g) > 0 || vkllm_gen_done(g);
    r->gen = g;
    pthread_mutex_lock(&r->mu);
    r->state = SERVE_RUNNING;
    if (first) r->ttft_ms = (now - r->t_arrival) * 1e3;
    serve_req_unlock_notify(r);
    r->t_last_token = now;
    r->n_seen = first;
    e->active[i] = r;
    pthread_mutex_lock(&e->mu);
    e->m.busy++;
    if (first) hist_observe(&e->m.ttft, ttft_bounds, SERVE_TTFT_BUCKETS - 1, now - r->t_arrival);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* The free slot for r: the one whose last prompt shares the longest start with r's (its KV
 * cache then holds most of r's prompt: a chat's next turn, the same system prompt), else the
 * first free one. e->n_slots when none is free. */
static uint32_t pick_slot(const struct serve_engine *e, const struct serve_req *r) {
    uint32_t best = e->n_slots;
    size_t best_len = 0;
    for (uint32_t i = 0; i < e->n_slots; i++) {
        if (e->active[i]) continue;
        size_t n = 0;
        const char *a = e->slot_prompt ? e->slot_prompt[i] : NULL, *b = r->prompt;
        while (a && b && a[n] && a[n] == b[n]) n++;
        if (best == e->n_slots || n > best_len) best = i, best_len = n;
    }
    return best;
}

/* Whether another choice of r's prompt (n > 1) is still evaluating it: r then waits, and copies
 * that prompt's KV cache once it is there instead of evaluating it too. */
static int sibling_prefilling(const struct serve_engine *e, const struct serve_req *r) {
    if (r->n <= 1) return 0;
    for (uint32_t i = 0; i < e->n_slots; i++) {
        const struct serve_req *a = e->active[i];
        if (a && a->gen && a->prompt_index == r->prompt_index && !strcmp(a->id, r->id) &&
            vkllm_gen_n_generated(a->gen) == 0 && !vkllm_gen_done(a->gen))
            return 1;
    }
    return 0;
}

/* Take queued requests into free slots; drop queued ones whose client has gone. */
static void admit_queued(struct serve_engine *e) {
    for (;;) {
        pthread_mutex_lock(&e->mu);
        uint32_t slot = e->n_slots;
        struct serve_req *r = NULL;
        if (e->q_head && !sibling_prefilling(e, e->q_head) && (slot = pick_slot(e, e->q_head)) < e->n_slots) {
            r = e->q_head;
            e->q_head = r->next;
            if (!e->q_head) e->q_tail = NULL;
            e->q_len--;
        }
        pthread_mutex_unlock(&e->mu);
        if (!r) break;
        if (e->slot_prompt && r->prompt) { /* what this slot's cache will hold */
            free(e->slot_prompt[slot]);
            e->slot_prompt[slot] = strdup(r->prompt);
        }
        if (admit(e, slot, r)) { /* no KV blocks for it yet: first in line when some come back */
            pthread_mutex_lock(&e->mu);
            r->next = e->q_head;
            e->q_head = r;
            if (!e->q_tail) e->q_tail = r;
            e->q_len++;
            if (!r->kv_waited) e->m.kv_waits++, r->kv_waited = 1; /* once per request, not per try */
            pthread_mutex_unlock(&e->mu);
            break;
        }
    }
    /* cancelled requests still waiting for a slot leave the queue now */
    pthread_mutex_lock(&e->mu);
    struct serve_req *gone = NULL, **pp = &e->q_head;
    e->q_tail = NULL;
    while (*pp) {
        struct serve_req *r = *pp;
        if (req_cancelled(r)) {
            *pp = r->next;
            r->next = gone;
            gone = r;
            e->q_len--;
        } else {
            e->q_tail = r;
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&e->mu);
    while (gone) {
        struct serve_req *n = gone->next;
        finish(e, gone, 499, "cancelled");
        gone = n;
    }
}

/* After a step over the requests in slots idx[0..n): their time to first token or inter-token
 * latency, the step and token counters. */
static void step_metrics(struct serve_engine *e, const uint32_t *idx, uint32_t n) {
    double now = cli_now(), itl[256], ttft[256];
    uint32_t n_itl = 0, n_ttft = 0;
    pthread_mutex_lock(&e->mu);
    e->m.steps++;
    e->m.step_rows += n;
    uint64_t total = e->m.generated_tokens;
    pthread_mutex_unlock(&e->mu);
    for (uint32_t k = 0; k < n; k++) {
        struct serve_req *r = e->active[idx[k]];
        uint32_t ng = vkllm_gen_n_generated(r->gen);
        if (r->n_seen == 0 && (ng > 0 || vkllm_gen_done(r->gen))) { /* its prompt's last chunk */
            pthread_mutex_lock(&r->mu);
            r->ttft_ms = (now - r->t_arrival) * 1e3;
            pthread_mutex_unlock(&r->mu);
            ttft[n_ttft++] = now - r->t_arrival;
            r->t_last_token = now;
            r->n_seen = ng ? ng : 1;
        } else if (ng > r->n_seen) {
            itl[n_itl++] = now - r->t_last_token;
            r->t_last_token = now;
            r->n_seen = ng;
        }
        total += ng;
    }
    pthread_mutex_lock(&e->mu);
    for (uint32_t k = 0; k < n_itl; k++) hist_observe(&e->m.itl, itl_bounds, SERVE_ITL_BUCKETS - 1, itl[k]);
    for (uint32_t k = 0; k < n_ttft; k++) hist_observe(&e->m.ttft, ttft_bounds, SERVE_TTFT_BUCKETS - 1, ttft[k]);
    tps_record(&e->m, now, total);
    pthread_mutex_unlock(&e->mu);
}

/* Free the slots whose gen is done and finish their requests. */
static void finish_done(struct serve_engine *e) {
    for (uint32_t i = 0; i < e->n_slots; i++) {
        struct serve_req *r = e->active[i];
        if (!r || !vkllm_gen_done(r->gen)) continue;
        vkllm_status st = vkllm_gen_status(r->gen);
        char msg[512] = "";
        if (st) snprintf(msg, sizeof msg, "generation failed: %s (%s)", vkllm_status_str(st), vkllm_status_name(st));
        /* a prompt's chunk stopped by prefill_cancelled for the shutdown: its client is still there */
        int shut =
            !st && vkllm_gen_stop_reason(r->gen) == VKLLM_STOP_CANCELLED && !req_cancelled(r) && engine_stopping(e);
        if (shut) snprintf(msg, sizeof msg, "the server is shutting down");
        r = release_slot(e, i);
        update_kv(e); /* before the reply: a client reading /metrics after it finds the slot idle */
        finish(e, r, st ? 500 : shut ? 503 : 0, msg);
    }
}

/* One batched decode step over the running requests, then finish the done ones. */
static void step(struct serve_engine *e) {
    vkllm_gen_t gens[256];
    uint32_t idx[256], n = 0;
    for (uint32_t i = 0; i < e->n_slots; i++) {
        struct serve_req *r = e->active[i];
        if (!r) continue;
        if (req_cancelled(r) && !vkllm_gen_done(r->gen)) vkllm_gen_cancel(r->gen);
        if (!vkllm_gen_done(r->gen)) {
            gens[n] = r->gen;
            idx[n++] = i;
        }
    }
    if (n) {
        /* each request may need a block this step; a preempted one, its whole text */
        if (pool_room(e) < n || any_preempted(e)) reclaim_idle(e);
        vkllm_gen_step(gens, n); /* an error stops the gens of the step; each reports it below */
        step_metrics(e, idx, n);
    }
    update_kv(e);
    finish_done(e);
}

static void *engine_main(void *arg) {
    struct serve_engine *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->stopping && !e->q_head && !e->m.busy) pthread_cond_wait(&e->cond, &e->mu);
        int stopping = e->stopping;
        pthread_mutex_unlock(&e->mu);
        if (stopping) break;
        admit_queued(e);
        step(e);
        serve_kv_events_flush(e->kv_events); /* what this step stored and evicted: one batch */
    }
    /* shutting down: everything still queued or running ends with 503 */
    pthread_mutex_lock(&e->mu);
    struct serve_req *q = e->q_head;
    e->q_head = e->q_tail = NULL;
    e->q_len = 0;
    pthread_mutex_unlock(&e->mu);
    while (q) {
        struct serve_req *n = q->next;
        finish(e, q, 503, "the server is shutting down");
        q = n;
    }
    for (uint32_t i = 0; i < e->n_slots; i++) {
        struct serve_req *r = e->active[i];
        if (!r) continue;
        vkllm_gen_cancel(r->gen);
        finish(e, release_slot(e, i), 503, "the server is shutting down");
    }
    serve_kv_events_flush(e->kv_events);
    return NULL;
}

int serve_engine_start(struct serve_engine *e, vkllm_model_t model, vkllm_kv_pool_t pool, vkllm_session_t *slots,
                       uint32_t n_slots, uint32_t queue_cap, uint32_t prefill_chunk,
                       struct serve_kv_events *kv_events) {
    memset(e, 0, sizeof *e);
    e->model = model;
    e->kv_events = kv_events;
    e->pool = pool;
    e->slots = slots;
    e->n_slots = n_slots;
    e->queue_cap = queue_cap;
    e->prefill_chunk = prefill_chunk;
    e->active = calloc(n_slots, sizeof *e->active);
    e->slot_prompt = calloc(n_slots, sizeof *e->slot_prompt);
    e->slot_info = calloc(n_slots, sizeof *e->slot_info);
    if (!e->active || !e->slot_prompt || !e->slot_info) {
        free(e->active), free(e->slot_prompt), free(e->slot_info);
        e->active = NULL, e->slot_prompt = NULL, e->slot_info = NULL;
        return -1;
    }
    e->t_start = cli_now();
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cond, NULL);
    update_kv(e);
    if (pthread_create(&e->thread, NULL, engine_main, e)) {
        free(e->active), free(e->slot_prompt), free(e->slot_info);
        e->active = NULL, e->slot_prompt = NULL, e->slot_info = NULL;
        return -1;
    }
    e->running = 1;
    return 0;
}

void serve_engine_stop(struct serve_engine *e) {
    if (!e->running) return;
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    e->running = 0;
}

void serve_engine_free(struct serve_engine *e) {
    serve_engine_stop(e);
    if (!e->active) return;
    free(e->active);
    e->active = NULL;
    for (uint32_t i = 0; e->slot_prompt && i < e->n_slots; i++) free(e->slot_prompt[i]);
    free(e->slot_prompt);
    e->slot_prompt = NULL;
    free(e->slot_info);
    e->slot_info = NULL;
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cond);
}

int serve_engine_submit(struct serve_engine *e, struct serve_req *const *rs, int n) {
    pthread_mutex_lock(&e->mu);
    struct serve_req *r0 = rs[0];
    r0->http_status = 503;
    if (e->stopping) {
        snprintf(r0->err, sizeof r0->err, "the server is shutting down");
    } else if ((uint64_t)n > (uint64_t)e->queue_cap + e->n_slots) {
        r0->http_status = 400;
        snprintf(r0->err, sizeof r0->err,
                 "%d %s are more than this server holds at once (%u slots and a queue of %u: "
                 "--parallel, --queue)",
                 n, r0->embed ? "inputs" : "choices ('n')", e->n_slots, e->queue_cap);
    } else if (e->q_len + (uint64_t)n > e->queue_cap + (e->n_slots - e->m.busy)) { /* free slots take theirs at once */
        snprintf(r0->err, sizeof r0->err,
                 "the server is busy: every slot is running and the queue is full; retry later");
        e->m.rejected_queue_full++;
    } else {
        r0->http_status = 0;
    }
    if (r0->http_status) {
        pthread_mutex_unlock(&e->mu);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct serve_req *r = rs[i];
        serve_req_ref(r);
        r->next = NULL;
        if (e->q_tail) e->q_tail->next = r;
        else e->q_head = r;
        e->q_tail = r;
        e->q_len++;
    }
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

void serve_engine_cancel(struct serve_engine *e, struct serve_req *r) {
    pthread_mutex_lock(&r->mu);
    int was = r->cancelled || r->state == SERVE_DONE;
    r->cancelled = 1;
    pthread_mutex_unlock(&r->mu);
    if (was) return;
    pthread_mutex_lock(&e->mu);
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
}
