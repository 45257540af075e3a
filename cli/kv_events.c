/* kv_events.c - `vkllm serve --kv-events ENDPOINT`: the KV pool's events (vkllm_kv_pool_set_events)
 * published over ZeroMQ as vLLM publishes them (vllm/distributed/kv_events.py), for a router that
 * routes by prefix (the llm-d router's precise prefix cache scorer).
 *
 * Wire: a PUB socket, bound when the endpoint's host is a wildcard ('*'), holds "::", or the
 * endpoint is ipc:// or inproc://, else connected (the router's SUB binds), as vLLM decides. Each
 * batch is three frames:
 * the topic, an 8-byte big-endian sequence number (0, 1, ...), and a msgpack array
 *   [ts (float seconds since the epoch), [event, ...], data_parallel_rank (0)]
 * with events as vLLM's msgspec structs encode them (array-like, tagged):
 *   ["BlockStored", [hash, ...], parent hash or nil, [token id, ...], block size, nil (lora_id),
 *    "GPU" (medium), nil (lora_name)]
 *   ["BlockRemoved", [hash, ...], "GPU"]
 *   ["AllBlocksCleared"]
 * A hash is the pool's 64-bit key of a block (its tokens and all before them); a BlockStored
 * holds blocks that follow each other (each one's parent the one before), its token ids theirs in
 * order. No replay socket: a subscriber that misses a sequence number cannot ask for it again.
 *
 * Threads: the pool tells its events on the engine thread (in vkllm_gen_step and the like); they
 * are collected there, and serve_kv_events_flush (after each step) hands them as one batch to the
 * publisher thread, which encodes and sends it. Generation never waits for the network: the PUB
 * socket drops what a slow subscriber does not take (its high-water mark), and batches beyond
 * SERVE_KV_QUEUE waiting for the publisher are dropped (counted, and said once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

#ifdef VKLLM_HAVE_KV_EVENTS

#include <msgpack.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define SERVE_KV_QUEUE 10000 /* batches waiting for the publisher at most */

struct kv_raw { /* one event as the pool told it */
    enum vkllm_kv_event_type type;
    uint32_t n_tokens;
    uint64_t key, parent;
    int32_t tokens[VKLLM_KV_BLOCK];
};

struct kv_batch {
    struct kv_batch *next;
    double ts;
    uint32_t n;
    struct kv_raw ev[];
};

struct serve_kv_events {
    /* the thread that calls into the pool (the engine's; the main thread before and after it) */
    struct kv_raw *pend;
    uint32_t n_pend, cap_pend;
    int pend_lost; /* an event was lost for want of memory: said once */
    /* handed over */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct kv_batch *head, *tail;
    uint32_t queued;
    uint64_t dropped; /* batches dropped: the queue was full */
    int stop;
    /* the publisher thread's */
    void *zctx, *pub;
    char *topic;
    uint64_t seq;
    pthread_t thread;
};

static void on_event(const struct vkllm_kv_event *e, void *ud) {
    struct serve_kv_events *k = ud;
    if (k->n_pend == k->cap_pend) {
        uint32_t cap = k->cap_pend ? 2 * k->cap_pend : 64;
        struct kv_raw *p = realloc(k->pend, sizeof *p * cap);
        if (!p) {
            if (!k->pend_lost) fprintf(stderr, "vkllm: serve: kv events: out of memory: events lost\n");
            k->pend_lost = 1;
            return;
        }
        k->pend = p, k->cap_pend = cap;
    }
    struct kv_raw *r = &k->pend[k->n_pend++];
    r->type = e->type, r->key = e->key, r->parent = e->parent;
    r->n_tokens = e->tokens ? (e->n_tokens < VKLLM_KV_BLOCK ? e->n_tokens : VKLLM_KV_BLOCK) : 0;
    if (r->n_tokens) memcpy(r->tokens, e->tokens, sizeof *r->tokens * r->n_tokens);
}

static double wall_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

void serve_kv_events_flush(struct serve_kv_events *k) {
    if (!k || !k->n_pend) return;
    struct kv_batch *b = malloc(sizeof *b + sizeof *b->ev * k->n_pend);
    if (!b) {
        if (!k->pend_lost) fprintf(stderr, "vkllm: serve: kv events: out of memory: events lost\n");
        k->pend_lost = 1;
        k->n_pend = 0;
        return;
    }
    b->next = NULL;
    b->ts = wall_seconds();
    b->n = k->n_pend;
    memcpy(b->ev, k->pend, sizeof *b->ev * k->n_pend);
    k->n_pend = 0;
    pthread_mutex_lock(&k->mu);
    if (k->queued >= SERVE_KV_QUEUE) {
        if (!k->dropped++)
            fprintf(stderr, "vkllm: serve: kv events: the publisher is %u batches behind: dropping batches\n",
                    k->queued);
        free(b);
    } else {
        if (k->tail) k->tail->next = b;
        else k->head = b;
        k->tail = b;
        k->queued++;
        pthread_cond_signal(&k->cond);
    }
    pthread_mutex_unlock(&k->mu);
}

/* Events ev[i..] of one msgpack event: a run of stored blocks each following the one before, a
 * run of removed ones, or one cleared. Returns the index after the run. */
static uint32_t run_end(const struct kv_raw *ev, uint32_t n, uint32_t i) {
    uint32_t j = i + 1;
    if (ev[i].type == VKLLM_KV_EVENT_STORED)
        while (j < n && ev[j].type == VKLLM_KV_EVENT_STORED && ev[j].parent == ev[j - 1].key &&
               ev[j].n_tokens == ev[i].n_tokens)
            j++;
    else if (ev[i].type == VKLLM_KV_EVENT_REMOVED)
        while (j < n && ev[j].type == VKLLM_KV_EVENT_REMOVED) j++;
    return j;
}

static void pack_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

/* The batch as vLLM's KVEventBatch (the file's comment). */
static void pack_batch(msgpack_packer *pk, const struct kv_batch *b) {
    uint32_t n_runs = 0;
    for (uint32_t i = 0; i < b->n; i = run_end(b->ev, b->n, i)) n_runs++;
    msgpack_pack_array(pk, 3);
    msgpack_pack_double(pk, b->ts);
    msgpack_pack_array(pk, n_runs);
    for (uint32_t i = 0, j; i < b->n; i = j) {
        j = run_end(b->ev, b->n, i);
        const struct kv_raw *e = &b->ev[i];
        if (e->type == VKLLM_KV_EVENT_STORED) {
            msgpack_pack_array(pk, 8);
            pack_str(pk, "BlockStored");
            msgpack_pack_array(pk, j - i);
            for (uint32_t t = i; t < j; t++) msgpack_pack_uint64(pk, b->ev[t].key);
            if (e->parent) msgpack_pack_uint64(pk, e->parent);
            else msgpack_pack_nil(pk);
            msgpack_pack_array(pk, (j - i) * e->n_tokens);
            for (uint32_t t = i; t < j; t++)
                for (uint32_t x = 0; x < e->n_tokens; x++) msgpack_pack_int32(pk, b->ev[t].tokens[x]);
            msgpack_pack_uint32(pk, e->n_tokens);
            msgpack_pack_nil(pk); /* lora_id */
            pack_str(pk, "GPU");  /* medium */
            msgpack_pack_nil(pk); /* lora_name */
        } else if (e->type == VKLLM_KV_EVENT_REMOVED) {
            msgpack_pack_array(pk, 3);
            pack_str(pk, "BlockRemoved");
            msgpack_pack_array(pk, j - i);
            for (uint32_t t = i; t < j; t++) msgpack_pack_uint64(pk, b->ev[t].key);
            pack_str(pk, "GPU");
        } else {
            msgpack_pack_array(pk, 1);
            pack_str(pk, "AllBlocksCleared");
        }
    }
    msgpack_pack_int32(pk, 0); /* data_parallel_rank: vLLM's publisher sets its rank, 0 without data parallelism */
}

static void send_batch(struct serve_kv_events *k, const struct kv_batch *b) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_batch(&pk, b);
    unsigned char seq[8];
    for (int i = 0; i < 8; i++) seq[i] = (unsigned char)(k->seq >> (56 - 8 * i));
    k->seq++;
    /* PUB never blocks: past the high-water mark a subscriber's messages are dropped */
    if (sb.data && zmq_send(k->pub, k->topic, strlen(k->topic), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
        zmq_send(k->pub, seq, 8, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
        zmq_send(k->pub, sb.data, sb.size, ZMQ_DONTWAIT);
    msgpack_sbuffer_destroy(&sb);
}

static void *publisher_main(void *arg) {
    struct serve_kv_events *k = arg;
    for (;;) {
        pthread_mutex_lock(&k->mu);
        while (!k->head && !k->stop) pthread_cond_wait(&k->cond, &k->mu);
        struct kv_batch *b = k->head;
        if (b) {
            k->head = b->next;
            if (!k->head) k->tail = NULL;
            k->queued--;
        }
        pthread_mutex_unlock(&k->mu);
        if (!b) break; /* stopping, and everything sent */
        send_batch(k, b);
        free(b);
    }
    return NULL;
}

/* vLLM's rule: a wildcard address is bound, an address of a host is connected to. */
static int binds(const char *endpoint) {
    return strchr(endpoint, '*') || strstr(endpoint, "::") || !strncmp(endpoint, "ipc://", 6) ||
           !strncmp(endpoint, "inproc://", 9);
}

int serve_kv_events_available(void) { return 1; }

void serve_kv_events_default_topic(char *out, size_t n, const char *model_id) {
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    snprintf(out, n, "kv@%s@%s", host, model_id);
}

int serve_kv_events_start(vkllm_kv_pool_t pool, const char *endpoint, const char *topic, struct serve_kv_events **out) {
    *out = NULL;
    struct serve_kv_events *k = calloc(1, sizeof *k);
    if (!k || !(k->topic = strdup(topic))) {
        free(k);
        fprintf(stderr, "vkllm: serve: --kv-events: out of memory\n");
        return -1;
    }
    int hwm = 100000, linger = 1000; /* vLLM's high-water mark; at the end, a second to send the rest */
    const char *how = binds(endpoint) ? "bind to" : "connect to";
    if (!(k->zctx = zmq_ctx_new()) || !(k->pub = zmq_socket(k->zctx, ZMQ_PUB)) ||
        zmq_setsockopt(k->pub, ZMQ_SNDHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(k->pub, ZMQ_LINGER, &linger, sizeof linger) ||
        (binds(endpoint) ? zmq_bind(k->pub, endpoint) : zmq_connect(k->pub, endpoint))) {
        fprintf(stderr, "vkllm: serve: --kv-events: cannot %s %s: %s\n", how, endpoint, zmq_strerror(zmq_errno()));
        goto fail;
    }
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cond, NULL);
    if (pthread_create(&k->thread, NULL, publisher_main, k)) {
        fprintf(stderr, "vkllm: serve: --kv-events: cannot start the publisher thread\n");
        pthread_mutex_destroy(&k->mu);
        pthread_cond_destroy(&k->cond);
        goto fail;
    }
    vkllm_kv_pool_set_events(pool, on_event, k);
    char at[256] = ""; /* the address bound: a port of '*' is any free one */
    size_t n_at = sizeof at - 1;
    if (binds(endpoint) && zmq_getsockopt(k->pub, ZMQ_LAST_ENDPOINT, at, &n_at)) at[0] = 0;
    fprintf(stderr, "vkllm: serve: KV events: %s %s%s%s%s, topic %s\n", binds(endpoint) ? "bound to" : "connecting to",
            endpoint, *at ? " (" : "", at, *at ? ")" : "", topic);
    *out = k;
    return 0;
fail:
    if (k->pub) zmq_close(k->pub);
    if (k->zctx) zmq_ctx_term(k->zctx);
    free(k->topic);
    free(k);
    return -1;
}

void serve_kv_events_stop(struct serve_kv_events *k) {
    if (!k) return;
    serve_kv_events_flush(k);
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_signal(&k->cond);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    if (k->dropped) fprintf(stderr, "vkllm: serve: kv events: %llu batches dropped\n", (unsigned long long)k->dropped);
    zmq_close(k->pub);
    zmq_ctx_term(k->zctx); /* waits up to the linger for what is still unsent */
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cond);
    free(k->pend);
    free(k->topic);
    free(k);
}

#else /* built without libzmq and msgpack-c */

int serve_kv_events_available(void) { return 0; }

void serve_kv_events_default_topic(char *out, size_t n, const char *model_id) {
    snprintf(out, n, "kv@localhost@%s", model_id);
}

int serve_kv_events_start(vkllm_kv_pool_t pool, const char *endpoint, const char *topic, struct serve_kv_events **out) {
    (void)pool, (void)endpoint, (void)topic;
    *out = NULL;
    fprintf(stderr, "vkllm: serve: --kv-events: %s\n", SERVE_KV_EVENTS_MISSING);
    return -1;
}

void serve_kv_events_flush(struct serve_kv_events *k) { (void)k; }
void serve_kv_events_stop(struct serve_kv_events *k) { (void)k; }

#endif
