/* serve.h - `vkllm serve`: an OpenAI-compatible HTTP server (libmicrohttpd, cJSON).
 *
 * Three parts, one file each:
 *   serve_engine.c  one thread owns the model's N slot sessions: it admits queued requests
 *                   into free slots (vkllm_gen_start), decodes every running request together
 *                   (vkllm_gen_step), hands each request its text and finishes it; metrics.
 *   serve_api.c     the OpenAI request fields -> a serve_req, responses and SSE chunks -> JSON.
 *   serve_http.c    libmicrohttpd: routing, API key, body limit, plain and streaming replies,
 *                   disconnects; /health, /v1/models, /metrics, /tokenize, /detokenize.
 *                   A few event-loop threads serve every connection; a request waiting for
 *                   the engine is parked (MHD_suspend_connection) and costs no thread, so idle
 *                   or slow clients cannot starve the others.
 * cmd_serve.c parses the options, opens the model, starts both and shuts them down on
 * SIGINT/SIGTERM.
 *
 * Threads: once the server runs, the engine thread alone calls the library on the model's
 * context (sessions, gens, the KV pool), which vkllm.h asks of one thread at a time; cmd_serve.c
 * uses them before the engine starts and after it has stopped. The HTTP threads use only the
 * tokenizer and chat templates, which are immutable and need no lock (vkllm.h), so /tokenize,
 * /detokenize, templating and the logprobs' token texts never wait behind a step.
 *
 * Locking: the engine's mu guards its queue, the slots' /slots view and the metrics; each
 * request's mu guards what the engine hands to the HTTP thread serving it. A thread holding a
 * request's mu never takes the engine's mu, and wakes a parked connection only after letting go
 * of it.
 *
 * Text and logprobs: the library hands each piece of text with the records of the tokens that
 * produced it (vkllm_generate_params.on_piece: the pairing, stop strings included, is worked out
 * there and nowhere else); the engine queues the pair as one serve_piece, and a stream sends it
 * as one event. */
#ifndef CLI_SERVE_H
#define CLI_SERVE_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* ---------------------------------------------------------------------------------------------
 * A growable byte string
 * ------------------------------------------------------------------------------------------- */

struct serve_buf {
    char *p;
    size_t len, cap;
    int oom; /* an append failed: the content is incomplete */
};
void sbuf_add(struct serve_buf *b, const char *s, size_t n);
void sbuf_printf(struct serve_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_free(struct serve_buf *b);

/* ---------------------------------------------------------------------------------------------
 * A request: what the client asked (set before it is queued, read-only afterwards) and what the
 * engine hands back (under mu)
 * ------------------------------------------------------------------------------------------- */

enum serve_state { SERVE_QUEUED = 0, SERVE_RUNNING = 1, SERVE_DONE = 2 };

struct serve_piece { /* one text piece of a streaming reply, as the gen handed it over */
    struct serve_piece *next;
    struct vkllm_token_probs *probs; /* logprobs asked: the records of the tokens that produced it */
    uint32_t n_probs;
    size_t len;
    char text[];
};

#define SERVE_MAX_STOP 16
#define SERVE_MAX_N 16 /* choices per request (n) */

struct serve_server;

enum serve_tool_style { SERVE_TOOLS_NONE = 0, SERVE_TOOLS_HERMES, SERVE_TOOLS_LLAMA3, SERVE_TOOLS_MISTRAL };

struct serve_req {
    /* the request */
    int chat;         /* /v1/chat/completions (else /v1/completions) */
    int embed;        /* /v1/embeddings: prompt_ids pooled into embedding, no text */
    int pooling;      /* its enum vkllm_pooling */
    uint32_t n_embd;  /* floats of the embedding */
    int b64;          /* embed: encoding_format base64 */
    int n;            /* choices asked for per prompt (n), each its own serve_req */
    int n_prompts;    /* prompts in the request (a batch of prompts: several) */
    int prompt_index; /* which of them this one completes (0: the parse's; a clone's is
                         set before serve_api_parse_prompt) */
    int index;        /* its choice: prompt_index * n + its number among the n */
    int stream, include_usage;
    int kv_waited;       /* the engine put its admission off for want of KV blocks (counted once) */
    char *echo;          /* completions' echo: the prompt's text, which the reply starts with */
    char *prompt;        /* the prompt text (chat: rendered with the template; "" for token ids) */
    int32_t *prompt_ids; /* a token-id prompt (gp.prompt_tokens points here) */
    uint32_t n_prompt_ids;
    struct vkllm_generate_params gp; /* points into prompt, stops, bias_*, grammar */
    char *grammar;                   /* grammar, json_schema, response_format json_schema, a required
                                        tool call: GBNF text */
    int tool_style;                  /* enum serve_tool_style: tools shown to the model (chat) */
    int history_style;               /* ... the template's, for earlier calls and tool results (chat) */
    int mistral_v3;                  /* the template is mistral-v3*: its [INST] holds the system prompt */
    int llama31;                     /* the template is llama3.1 / 3.2: "Environment: ipython" with tools */
    cJSON *tools;                    /* ... the request's tools */
    char *stops[SERVE_MAX_STOP];
    int32_t *bias_tokens;
    float *bias_values;
    char id[48];       /* "chatcmpl-..." / "cmpl-..." */
    long long created; /* Unix seconds */
    double t_arrival;  /* monotonic seconds: the whole body was read */
    /* --- serve_req_clone copies everything above --- */

    /* the HTTP thread's, while it streams the reply */
    struct serve_buf held;        /* with tools: the reply's text so far */
    struct serve_tool_scan *scan; /* ... and the calls in it as they come */
    size_t tool_content_end;      /* ... the end of the text streamed as content */
    size_t text_offset;           /* completions' logprobs: text_offset of the next token */

    /* handed back by the engine, under mu */
    pthread_mutex_t mu;
    void (*wake)(void *arg); /* the HTTP side parked until r changes: serve_req_unlock_notify */
    void *wake_arg;          /* takes it and calls it once */
    /* when set, the change the parked side waits for (under mu): other changes do not wake it (a
     * plain reply waits for the end: its connection is not resumed and parked again per token) */
    int (*wake_ready)(const struct serve_req *r);
    int ping; /* stream: probe a client that half-closed with an SSE comment */
    int refs;
    enum serve_state state;
    int cancelled;                   /* the client went away or the server is stopping */
    struct serve_piece *head, *tail; /* stream: pieces not yet sent */
    struct serve_buf text;           /* plain: the whole reply */
    float *embedding;                /* embed: n_embd floats once done */
    struct vkllm_token_probs *probs; /* logprobs asked (gp.n_probs >= 0): plain, every reply token's
                                        record; stream, those that came without text of their own
                                        (a stop string's cut token): they go with the final chunk */
    uint32_t n_probs, cap_probs;
    int http_status;                   /* 0, or the error status once done with an error */
    char err[512];                     /* its message */
    const char *finish_reason;         /* "stop" / "length" once done without an error */
    struct vkllm_generate_stats stats; /* final once done */
    double ttft_ms;                    /* arrival -> first token sampled (queue wait included) */

    /* the engine's, under its mu (queue) or its thread alone */
    struct serve_engine *engine; /* set when admitted: gp.cancel asks it whether it is stopping */
    struct serve_req *next;
    vkllm_gen_t gen;
    double t_last_token;
    uint32_t n_seen;
};

/* Function calling (serve_tools.c). serve_tools_parse: the template's r->history_style, tools and
 * tool_choice into r->tool_style, r->tools and, when a call is required, r->grammar (0, or 400
 * with err and *param).
 * serve_tools_message: a message as the template sees it (a tool result's role and text, an
 * assistant's earlier calls appended); -1 when out of memory. serve_tools_inject: the tools'
 * description into the conversation (cm and texts have room for one more message).
 * serve_tools_extract: the reply's calls as OpenAI's tool_calls array (NULL: none; then the text
 * is the content), and in *content (malloc'd, may be NULL) any text before them. */
int serve_tools_parse(struct serve_server *srv, const cJSON *body, struct serve_req *r, char *err, size_t errn,
                      const char **param);
int serve_tools_message(const struct serve_req *r, const cJSON *m, const char **role, struct serve_buf *text);
int serve_tools_inject(const struct serve_req *r, struct vkllm_chat_message *cm, struct serve_buf *texts, int *n);
cJSON *serve_tools_extract(const struct serve_req *r, const char *text, char **content);

/* The reply's calls as they stream (serve_tools.c): run over the text so far (all of it, with
 * final, at the end), the scanner reports content, each call's start (its name) and its
 * arguments' JSON as it comes, to the sink. serve_tool_scan_ok: 0 when the text left the style's
 * call layout (then use serve_tools_extract on the whole). */
struct serve_tool_scan {
    int style, phase, n_calls;
    size_t pos;             /* bytes of the text handled */
    int depth, in_str, esc; /* inside the arguments' JSON */
    char name[128];
};
struct serve_tool_sink {
    void (*content)(void *ud, const char *text, size_t len);
    void (*call)(void *ud, int index, const char *name);
    void (*args)(void *ud, int index, const char *text, size_t len);
    void *ud;
};
void serve_tool_scan_init(struct serve_tool_scan *s, int style);
int serve_tool_scan_run(struct serve_tool_scan *s, const char *text, size_t len, int final,
                        const struct serve_tool_sink *k);
int serve_tool_scan_ok(const struct serve_tool_scan *s);

/* A request with one reference; NULL when out of memory. */
struct serve_req *serve_req_new(void);
/* A new request (one reference) with r's request part: what r's parse set, the strings, arrays and
 * tools it points to copied. NULL when out of memory. */
struct serve_req *serve_req_clone(const struct serve_req *r);
void serve_req_ref(struct serve_req *r);
void serve_req_unref(struct serve_req *r);
/* Free a piece that left r's list (NULL: nothing). */
void serve_piece_free(struct serve_piece *p);
/* Unlock r->mu after a change the HTTP side may wait for, and wake it when that is the change it
 * waits for (wake_ready) (engine; r->mu held). */
void serve_req_unlock_notify(struct serve_req *r);

/* ---------------------------------------------------------------------------------------------
 * KV events for a router (cli/kv_events.c: libzmq and msgpack-c, where the build found them)
 * ------------------------------------------------------------------------------------------- */

#define SERVE_KV_EVENTS_MISSING \
    "this vkllm was built without libzmq and msgpack-c (Debian: libzmq3-dev, libmsgpack-dev; then build again)"
struct serve_kv_events;
/* 1 when this build publishes KV events. */
int serve_kv_events_available(void);
/* "kv@<host name>@<model_id>": the topic the llm-d router parses (pod, model). */
void serve_kv_events_default_topic(char *out, size_t n, const char *model_id);
/* Publish pool's events on endpoint (a PUB socket, bound when the host is a wildcard, '*', else
 * connected, as vLLM decides) under topic, from now on. 0, or -1 with the reason printed. */
int serve_kv_events_start(vkllm_kv_pool_t pool, const char *endpoint, const char *topic, struct serve_kv_events **out);
/* The events since the last call, as one batch to the publisher thread (the thread calling into
 * the pool, after each step: never waits for the network). */
void serve_kv_events_flush(struct serve_kv_events *k);
/* After the pool is freed (its last event, cleared, goes too): send what is left (within a
 * second), close, free. NULL: nothing. */
void serve_kv_events_stop(struct serve_kv_events *k);

/* ---------------------------------------------------------------------------------------------
 * The engine
 * ------------------------------------------------------------------------------------------- */

#define SERVE_TTFT_BUCKETS 14
#define SERVE_ITL_BUCKETS 12
#define SERVE_TPS_RING 256
#define SERVE_TPS_GAP 0.1 /* s between every other entry of the ring at least: 256 span 12.8 s, past 10 s */

struct serve_hist {
    uint64_t counts[16]; /* per upper bound, the last one +Inf */
    double sum;
    uint64_t count;
};

enum serve_finish { SERVE_FIN_STOP, SERVE_FIN_LENGTH, SERVE_FIN_CANCELLED, SERVE_FIN_ERROR, SERVE_FIN_COUNT };

struct serve_metrics {
    uint64_t finished[SERVE_FIN_COUNT];
    uint64_t prompt_tokens, generated_tokens;
    uint64_t prompt_cached_tokens; /* of the prompt tokens, those found in a slot's KV cache */
    uint64_t prompt_shared_tokens; /* ... of those, copied from another slot's */
    uint64_t rejected_queue_full;
    uint64_t steps, step_rows; /* vkllm_gen_step calls and the gens they decoded */
    struct serve_hist ttft, itl;
    double tps_t[SERVE_TPS_RING]; /* (time, generated tokens so far) after steps, SERVE_TPS_GAP s apart */
    uint64_t tps_n[SERVE_TPS_RING];
    uint32_t tps_head, tps_count;
    uint64_t kv_used, kv_retained, kv_allocated;
    uint32_t kv_block_tokens;                                /* positions per block */
    uint32_t kv_blocks, kv_blocks_running, kv_blocks_cached; /* the pool's; held by running requests;
                                                                 cached (or kept by idle slots) */
    uint64_t kv_pool_bytes, prefix_queried, prefix_hits, kv_evicted;
    uint64_t kv_waits;  /* admissions put off for want of KV blocks */
    uint64_t preempted; /* running requests preempted because the pool ran dry (recomputed later) */
    uint32_t busy;      /* slots running a request */
    /* a layer split over n_devices devices: ms every slot's steps spent in each device's part */
    uint32_t n_devices;
    double device_ms[VKLLM_MAX_DEVICES];
};

struct serve_slot_info { /* a slot as /slots shows it (under the engine's mu) */
    int busy;
    char req_id[48];
    uint32_t n_past, n_ctx;
    uint64_t kv_used, kv_allocated;
};

struct serve_engine {
    vkllm_model_t model;
    vkllm_kv_pool_t pool; /* the slots' KV cache blocks (set before start; not owned) */
    vkllm_session_t *slots;
    uint32_t n_slots;
    uint32_t queue_cap;
    uint32_t prefill_chunk;            /* prompt tokens per prefill chunk (0: whole prompts) */
    struct serve_req **active;         /* per slot, NULL when free (engine thread only) */
    struct serve_slot_info *slot_info; /* per slot, under mu */
    char **slot_prompt;                /* per slot, the prompt text of its last request (engine thread only):
                                          a request goes to the free slot whose cache likely holds most of it */

    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct serve_req *q_head, *q_tail;
    uint32_t q_len;
    int stopping;
    struct serve_kv_events *kv_events; /* --kv-events: the pool's events, handed over after each step (or NULL) */
    struct serve_metrics m;
    double t_start;
    pthread_t thread;
    int running;
};

/* Start the engine thread over n_slots sessions of model on pool (the engine owns neither), the
pool's events going to kv_events after each step (NULL: none; not owned). */
int serve_engine_start(struct serve_engine *e, vkllm_model_t model, vkllm_kv_pool_t pool, vkllm_session_t *slots,
                       uint32_t n_slots, uint32_t queue_cap, uint32_t prefill_chunk, struct serve_kv_events *kv_events);
/* Stop: requests still queued or running end with 503 "the server is shutting down"; joins
 * the thread. The locks stay usable (HTTP threads may still take them) until engine_free. */
void serve_engine_stop(struct serve_engine *e);
void serve_engine_free(struct serve_engine *e);
/* Queue rs[0..n) (the choices of one request: all or none; a reference to each). 0, or -1
 * (rs[0] has http_status and err set) when the engine stops or the queue has no room for them
 * now (503), or could never hold them at once (400: n above the queue plus the slots). */
int serve_engine_submit(struct serve_engine *e, struct serve_req *const *rs, int n);
/* The client of r went away: mark it and wake the engine, which frees its slot. */
void serve_engine_cancel(struct serve_engine *e, struct serve_req *r);
/* GET /slots: an array of each slot's state. */
cJSON *serve_engine_slots_json(struct serve_engine *e);
/* Prometheus text of the metrics. */
void serve_engine_metrics(struct serve_engine *e, struct serve_buf *out, const uint64_t *requests,
                          const char *const *endpoints, size_t n_endpoints, const uint64_t *codes,
                          const int *code_values, size_t n_codes);

/* ---------------------------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------------------------- */

#define SERVE_N_ENDPOINTS 15 /* serve_http.c's ENDPOINTS and "other" (checked there) */
#define SERVE_N_CODES 11

struct serve_server {
    struct serve_engine engine;
    vkllm_model_t model;
    const char *model_id;      /* what /v1/models lists and replies name */
    const char *chat_template; /* NULL: the model's */
    int has_chat_template;     /* 0: chat requests fail with a clear 400 */
    int template_fallback;     /* the model has none: chatml (with a warning) */
    const char *api_key;       /* NULL: open */
    size_t max_body;           /* bytes */
    uint32_t n_ctx;            /* positions per slot */
    uint64_t kv_bytes;         /* the KV cache on the device: the pool and the slots' window rings */
    uint32_t n_vocab;
    uint32_t n_embd;
    struct MHD_Daemon *daemon;
    uint16_t port;                   /* bound */
    unsigned timeout_s;              /* a connection idle this long is closed (0: never) */
    unsigned max_client_connections; /* per client address (0: no cap) */
    int pooling;                     /* embeddings: enum vkllm_pooling (--pooling, else the model's) */
    const char *cors_origin;   /* origins other pages may call from ("*", or a comma-separated list); NULL: none */
    const char *allowed_hosts; /* Host names answered besides loopback names, IP addresses and listen_host
                                  (comma-separated; ".example.com": it and its subdomains; "*": any) */
    const char *listen_host;   /* --host */
    int loopback_only;         /* the listening address is a loopback one (set by serve_http_start) */
    unsigned max_connections;  /* open connections at most (0: as many as file descriptors allow) */
    unsigned http_threads;     /* event-loop threads */

    /* connections whose request is in flight, watched for a client that leaves (serve_http.c) */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cond;
    struct serve_http_conn *watch_head;
    pthread_t watcher;
    int watch_init, watching, watch_stop;
    long long created; /* Unix seconds the server started */

    pthread_mutex_t stat_mu; /* the HTTP counters below */
    uint64_t requests[SERVE_N_ENDPOINTS];
    uint64_t codes[SERVE_N_CODES];
    uint64_t next_id;
    uint32_t inflight; /* generation requests whose reply is not complete */
};

/* serve_http.c: listen on host:port (port 0: any free one, then srv->port says which). */
int serve_http_start(struct serve_server *srv, const char *host, int port);
/* Wait (at most timeout_s) until every generation request's reply has been sent. */
void serve_http_drain(struct serve_server *srv, double timeout_s);
/* Close every connection and stop the HTTP threads. */
void serve_http_stop(struct serve_server *srv);

/* serve_api.c: parse an OpenAI request body into r. 0, or 400 with an OpenAI-style message in
 * err and the offending field in *param. */
/* "mean" / "cls" / "last" -> enum vkllm_pooling; -1 for anything else. */
int serve_pooling(const char *name, int *out);
int serve_api_parse(struct serve_server *srv, const cJSON *body, int chat, struct serve_req *r, char *err, size_t errn,
                    const char **param);
/* A batch of completion prompts: r (a clone of the request's first choice) takes prompt
 * r->prompt_index instead, with its echo. 0, or 400 as serve_api_parse. */
int serve_api_parse_prompt(struct serve_server *srv, const cJSON *body, struct serve_req *r, char *err, size_t errn,
                           const char **param);
/* The OpenAI error body {"error": {...}}; free with cJSON_free. */
char *serve_api_error_json(const char *message, const char *type, const char *param, const char *code);
/* s (or its n bytes) as valid UTF-8 (malloc'ed; NULL when out of memory): a byte that does not
 * start a well-formed sequence, and a NUL, becomes U+FFFD. */
char *serve_utf8_valid(const char *s);
char *serve_utf8_valid_n(const char *s, size_t n);
/* 1 when s[0..n) is well-formed UTF-8 without a NUL, else 0. */
int serve_utf8_is_valid(const char *s, size_t n);
/* /v1/embeddings: parse the body into n_req (at most SERVE_MAX_N) embedding requests (created
 * here, one reference each). 0, or 400 with the message in err and the field in *param. */
int serve_api_parse_embeddings(struct serve_server *srv, const cJSON *body, struct serve_req **reqs, int *n_req,
                               char *err, size_t errn, const char **param);
/* The reply of finished embedding requests (encoding_format base64 when b64). */
char *serve_api_embeddings_json(struct serve_server *srv, struct serve_req *const *rs, int n);
/* The plain reply of a finished request: its n choices. */
char *serve_api_reply_json(struct serve_server *srv, struct serve_req *const *rs, int n);
/* SSE events ("data: {...}\n\n") appended to out: the first chunk (chat: the role; completions
 * with echo: the prompt), a text piece, the end
 * (final chunk, usage chunk when asked, [DONE]) and an error event. */
void serve_api_sse_start(struct serve_server *srv, struct serve_req *r, struct serve_buf *out);
/* A text chunk, with the logprobs of lp[0..n_lp) (the tokens produced since the last chunk). */
void serve_api_sse_text(struct serve_server *srv, struct serve_req *r, const char *text, size_t len,
                        const struct vkllm_token_probs *lp, uint32_t n_lp, struct serve_buf *out);
void serve_api_sse_end(struct serve_server *srv, struct serve_req *r, const struct vkllm_token_probs *lp, uint32_t n_lp,
                       struct serve_buf *out);
/* After every choice's end: the usage chunk when asked, then [DONE]. */
void serve_api_sse_done(struct serve_server *srv, struct serve_req *const *rs, int n, struct serve_buf *out);
void serve_api_sse_error(struct serve_req *r, struct serve_buf *out);

#endif
