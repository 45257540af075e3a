/* serve_http.c - the HTTP side of `vkllm serve` on libmicrohttpd: routing, the API key, the
 * body limit, plain and streaming (SSE) replies, and noticing a client that has gone so that its
 * slot is freed at once.
 *
 * Threads: libmicrohttpd runs a small pool of event-loop threads (epoll) over every connection.
 * A request waiting for the engine (queued, generating, or a stream between tokens) is parked
 * with MHD_suspend_connection and woken by the engine (serve_req_unlock_notify), so an idle,
 * slow or waiting client costs a socket, not a thread. Idle connections close after --timeout.
 *
 * A parked connection is not read, so one watcher thread polls the sockets of the requests in
 * flight. A reset or fully closed socket cancels its request. A read side closed alone is
 * ambiguous: the client may have half-closed after sending (shutdown(SHUT_WR), `nc -N`) and
 * still wait for the reply, or have closed for good. The watcher asks once: before the reply's
 * headers it writes an interim "100 Continue" (every HTTP/1.1 client must skip 1xx replies), in
 * a stream an SSE comment. A closed client answers with a reset, which the next poll sees; a
 * half-closed one reads on. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "os.h"
#include "serve.h"

/* The chat page (cli/web/chat.html, embedded at build time by cmake/embed_file.cmake). */
extern const unsigned char vkllm_web_chat_html[];
extern const size_t vkllm_web_chat_html_size;
static const int code_values[SERVE_N_CODES] = {200, 204, 400, 401, 403, 404, 405, 413, 415, 500, 503};

/* CORS (--cors-origin): a browser page of another origin may call the API only when that origin
 * is listed ("*": any); by default none is (the chat page at / is the server's own origin).
 * Authentication, when on, is still the API key. */
static void add_cors(struct serve_server *srv, struct MHD_Connection *c, struct MHD_Response *resp) {
    if (!srv->cors_origin) return;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    const char *allow = NULL;
    if (!strcmp(srv->cors_origin, "*")) {
        allow = "*";
    } else if (origin) { /* a comma-separated list: echo the request's origin when listed */
        size_t n = strlen(origin);
        for (const char *p = srv->cors_origin; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            while (len && *p == ' ') p++, len--;
            while (len && p[len - 1] == ' ') len--;
            if (len == n && !strncmp(p, origin, n)) allow = origin;
            if (!e) break;
            p = e + 1;
        }
        MHD_add_response_header(resp, "Vary", "Origin");
    }
    if (!allow) return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", allow);
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
}

#define POLL_MS 50 /* how often the watcher looks at the sockets of the requests in flight */

struct serve_http_conn { /* per request on a connection (MHD's con_cls) */
    struct serve_buf body;
    int too_large;
    struct serve_req *req[SERVE_MAX_N]; /* a generation request's n choices: one reference each */
    int n_req;
    struct waiter *w; /* where the connection is parked (one reference) */
    /* while the requests are in flight: on srv's watch list (under srv->watch_mu) */
    struct MHD_Connection *c;
    MHD_socket fd; /* MHD_INVALID_SOCKET: not watched */
    int http11;
    int replied;  /* the reply's headers are queued: a probe must go in the body */
    int probed;   /* the read side closed and the client was asked once */
    int deferred; /* the first wait was put off by one turn of the event loop (completion_reply) */
    int gone;     /* cancelled by the watcher */
    struct serve_http_conn *w_prev, *w_next;
    uint64_t w_gen; /* the watcher's pass that polled it, at index w_idx */
    size_t w_idx;
};
#define conn serve_http_conn

/* --- the endpoints -------------------------------------------------------------------------- */

/* Every endpoint: its path, the method it takes (GET also answers HEAD: load balancers' health
 * checks use it), who may call it, and its handler. AUTH_ANY: any Host name and no key (a load
 * balancer's check needs neither); AUTH_HOST: an allowed Host name, no key (the page, public: it
 * asks for the key and sends it with its API calls); AUTH_KEY: an allowed Host name and the API
 * key, when there is one. /v1/models/{id} is MODELS too. /metrics counts requests in this order,
 * then "other" (any other path). */
#define ENDPOINTS(X)                                                                    \
    X(COMPLETIONS, "/v1/completions", POST, AUTH_KEY, completions)                      \
    X(CHAT, "/v1/chat/completions", POST, AUTH_KEY, chat_completions)                   \
    X(EMBEDDINGS, "/v1/embeddings", POST, AUTH_KEY, embeddings)                         \
    X(MODELS, "/v1/models", GET, AUTH_KEY, models)                                      \
    X(HEALTH, "/health", GET, AUTH_ANY, health)                                         \
    X(METRICS, "/metrics", GET, AUTH_KEY, metrics)                                      \
    X(TOKENIZE, "/tokenize", POST, AUTH_KEY, tokenize)                                  \
    X(DETOKENIZE, "/detokenize", POST, AUTH_KEY, detokenize)                            \
    X(PROPS, "/props", GET, AUTH_KEY, props)                                            \
    X(SLOTS, "/slots", GET, AUTH_KEY, slots)                                            \
    X(APPLY_TEMPLATE, "/apply-template", POST, AUTH_KEY, apply_template)                \
    X(COMPLETIONS_RENDER, "/v1/completions/render", POST, AUTH_KEY, completions_render) \
    X(CHAT_RENDER, "/v1/chat/completions/render", POST, AUTH_KEY, chat_render)          \
    X(PAGE, "/", GET, AUTH_HOST, page)

enum { AUTH_ANY, AUTH_HOST, AUTH_KEY };
/* A handler answers once the checks passed (route): url is the path (MODELS reads its {id}). */
typedef enum MHD_Result handler(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url);
struct endpoint {
    const char *path;
    int post; /* POST, else GET (and HEAD) */
    int auth;
    handler *fn;
};

#define EP_IS_GET 0
#define EP_IS_POST 1
#define EP_ENUM(id, path, method, auth, fn) EP_##id,
#define EP_DECLARE(id, path, method, auth, fn) static handler fn;
#define EP_ROW(id, path, method, auth, fn) {path, EP_IS_##method, auth, fn},
enum { ENDPOINTS(EP_ENUM) EP_OTHER };
ENDPOINTS(EP_DECLARE)
#define N_ENDPOINTS (EP_OTHER + 1)
static const struct endpoint endpoints[N_ENDPOINTS] = {ENDPOINTS(EP_ROW){"other", 0, AUTH_KEY, NULL}};
_Static_assert(N_ENDPOINTS == SERVE_N_ENDPOINTS, "serve.h's SERVE_N_ENDPOINTS counts ENDPOINTS and \"other\"");

static void count_code(struct serve_server *srv, int code) {
    size_t i = 0;
    while (i + 1 < SERVE_N_CODES && code_values[i] != code) i++;
    if (code_values[i] != code) /* anything else counts as 500 */
        for (i = 0; code_values[i] != 500; i++) {}
    pthread_mutex_lock(&srv->stat_mu);
    srv->codes[i]++;
    pthread_mutex_unlock(&srv->stat_mu);
}

/* allow: a 405's Allow header (the methods the endpoint takes), else NULL */
static enum MHD_Result respond_allow(struct serve_server *srv, struct MHD_Connection *c, int code, const char *type,
                                     const char *text, size_t len, const char *allow) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (allow) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    add_cors(srv, c, resp);
    if (code == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (code == 503) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1"); /* a full queue drains fast */
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    count_code(srv, code);
    return ok;
}

static enum MHD_Result respond(struct serve_server *srv, struct MHD_Connection *c, int code, const char *type,
                               const char *text, size_t len) {
    return respond_allow(srv, c, code, type, text, len, NULL);
}

static enum MHD_Result respond_json(struct serve_server *srv, struct MHD_Connection *c, int code, char *json) {
    if (!json) return MHD_NO;
    enum MHD_Result ok = respond(srv, c, code, "application/json", json, strlen(json));
    cJSON_free(json);
    return ok;
}

static enum MHD_Result respond_obj(struct serve_server *srv, struct MHD_Connection *c, cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return respond_json(srv, c, 200, s);
}

static const char *error_type(int code) {
    switch (code) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 500: return "server_error";
    case 503: return "server_error";
    default: return "invalid_request_error";
    }
}

static enum MHD_Result respond_error(struct serve_server *srv, struct MHD_Connection *c, int code, const char *msg,
                                     const char *param, const char *errcode) {
    return respond_json(srv, c, code, serve_api_error_json(msg, error_type(code), param, errcode));
}

/* How the request says its body is framed: Content-Length headers (and whether each is a plain
 * decimal number) and Transfer-Encoding. Two lengths, a length that is not a number, or a length
 * beside Transfer-Encoding is how requests are smuggled past a proxy: refused. */
struct framing {
    int n_length, bad_length, chunked;
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    struct framing *f = cls;
    (void)kind;
    if (key && !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        f->n_length++;
        if (!value || !*value || strspn(value, "0123456789") != strlen(value) || strlen(value) > 18) f->bad_length = 1;
    }
    if (key && !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) f->chunked = 1;
    return MHD_YES;
}

/* A 400 after which the connection closes (what follows the headers cannot be trusted). */
static enum MHD_Result respond_bad_framing(struct serve_server *srv, struct MHD_Connection *c, const char *msg) {
    char *json = serve_api_error_json(msg, error_type(400), NULL, NULL);
    if (!json) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_COPY);
    cJSON_free(json);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    add_cors(srv, c, resp);
    enum MHD_Result ok = MHD_queue_response(c, 400, resp);
    MHD_destroy_response(resp);
    count_code(srv, 400);
    return ok;
}

static MHD_socket conn_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : MHD_INVALID_SOCKET;
}

/* --- parking a connection until its request changes ----------------------------------------- */

/* A parked connection (MHD_suspend_connection) and who may wake it: the requests it waits for
 * (each holds a reference while its wake points here, and the first to change wakes it) and the
 * watcher. Whoever clears parked resumes the connection, after letting go of mu: the connection
 * stays suspended, and so alive, until then. */
struct waiter {
    pthread_mutex_t mu;
    int refs, parked;
    struct MHD_Connection *c;
};

static struct waiter *waiter_new(struct MHD_Connection *c) {
    struct waiter *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    pthread_mutex_init(&w->mu, NULL);
    w->refs = 1;
    w->c = c;
    return w;
}

static void waiter_unref(struct waiter *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (!last) return;
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Resume the connection if it is parked, and drop one reference (a request's wake, or the
 * watcher's). */
static void waiter_wake(void *arg) {
    struct waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    int was = w->parked;
    w->parked = 0;
    pthread_mutex_unlock(&w->mu);
    if (was) MHD_resume_connection(w->c);
    waiter_unref(w);
}

/* Drop what a request's wake still holds (the connection was woken by another, or is done). */
static void unwatch_req(struct serve_req *r) {
    pthread_mutex_lock(&r->mu);
    struct waiter *w = r->wake == waiter_wake ? r->wake_arg : NULL;
    if (w) r->wake = NULL, r->wake_arg = NULL, r->wake_ready = NULL;
    pthread_mutex_unlock(&r->mu);
    waiter_unref(w);
}

/* Park the connection until one of its n requests changes: suspend first, then point each
 * request's wake here, then look again (a change in between wakes it at once). ready(r) under
 * r->mu says whether r needs no waiting. Returns whether every request was ready after all (then
 * the connection has been woken, and its handler or reader runs again). */
static int park(struct waiter *w, struct serve_req *const *rs, int n, int (*ready)(const struct serve_req *)) {
    pthread_mutex_lock(&w->mu);
    w->parked = 1;
    MHD_suspend_connection(w->c);
    pthread_mutex_unlock(&w->mu);
    int all = 1;
    for (int i = 0; i < n; i++) {
        struct serve_req *r = rs[i];
        pthread_mutex_lock(&r->mu);
        if (ready(r)) {
            pthread_mutex_unlock(&r->mu);
            continue;
        }
        all = 0;
        if (!r->wake) {
            pthread_mutex_lock(&w->mu);
            w->refs++;
            pthread_mutex_unlock(&w->mu);
            r->wake = waiter_wake, r->wake_arg = w;
        }
        r->wake_ready = ready; /* woken by that change only (see serve.h) */
        pthread_mutex_unlock(&r->mu);
    }
    if (all || !n) { /* nothing to wait for after all: wake it here */
        pthread_mutex_lock(&w->mu);
        w->refs++;
        pthread_mutex_unlock(&w->mu);
        waiter_wake(w);
    }
    return all;
}

static void watch_add(struct serve_server *srv, struct conn *cn) {
    pthread_mutex_lock(&srv->watch_mu);
    cn->w_prev = NULL;
    cn->w_next = srv->watch_head;
    if (cn->w_next) cn->w_next->w_prev = cn;
    srv->watch_head = cn;
    pthread_cond_signal(&srv->watch_cond);
    pthread_mutex_unlock(&srv->watch_mu);
}

static void watch_remove(struct serve_server *srv, struct conn *cn) {
    pthread_mutex_lock(&srv->watch_mu);
    if (cn->w_prev) cn->w_prev->w_next = cn->w_next;
    else if (srv->watch_head == cn) srv->watch_head = cn->w_next;
    if (cn->w_next) cn->w_next->w_prev = cn->w_prev;
    cn->w_prev = cn->w_next = NULL;
    pthread_mutex_unlock(&srv->watch_mu);
}

/* The read side of cn's socket closed: ask the client once whether it is still there (see the
 * top of the file). watch_mu held. Returns 1 once asked (or when nothing can be asked: an
 * HTTP/1.0 client knows no interim reply, and its request runs to the end), 0 to try on the next
 * pass (the handler runs between two parks). *wake: a waiter to wake once watch_mu is let go
 * (with a reference for that), or NULL. */
static int probe(struct conn *cn, struct waiter **wake) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct waiter *w = cn->w;
    int asked = 1;
    *wake = NULL;
    if (cn->replied) { /* the stream's reader sends a comment when it runs next */
        struct serve_req *r = cn->req[0];
        pthread_mutex_lock(&r->mu);
        r->ping = 1;
        pthread_mutex_unlock(&r->mu);
        pthread_mutex_lock(&w->mu);
        w->refs++;
        pthread_mutex_unlock(&w->mu);
        *wake = w;
        return 1;
    }
    pthread_mutex_lock(&w->mu);
    if (!cn->http11) {
    } else if (w->parked) {
        /* parked before its reply: libmicrohttpd leaves the socket alone until it is resumed,
         * and nobody resumes it while w->mu is held */
        long n = cli_os_socket_send_now(cn->fd, cont, sizeof cont - 1);
        (void)n; /* a failed send shows as an error on the next watch */
    } else {
        asked = 0;
    }
    pthread_mutex_unlock(&w->mu);
    return asked;
}

/* The watcher: polls the sockets of the requests in flight every POLL_MS. */
static void *watch_main(void *arg) {
    struct serve_server *srv = arg;
    struct cli_os_watch *pf = NULL;
    struct waiter **wake = NULL;
    size_t cap = 0;
    uint64_t gen = 0;
    pthread_mutex_lock(&srv->watch_mu);
    while (!srv->watch_stop) {
        size_t n = 0;
        for (struct conn *w = srv->watch_head; w; w = w->w_next) n += !w->gone;
        if (!n) {
            pthread_cond_wait(&srv->watch_cond, &srv->watch_mu);
            continue;
        }
        if (n > cap) {
            struct cli_os_watch *np = realloc(pf, n * sizeof *np);
            if (np) pf = np;
            struct waiter **nw = np ? realloc(wake, n * sizeof *nw) : NULL;
            if (nw) wake = nw;
            if (!np || !nw) { /* try again on the next pass */
                pthread_mutex_unlock(&srv->watch_mu);
                cli_os_watch_peers(NULL, 0, POLL_MS);
                pthread_mutex_lock(&srv->watch_mu);
                continue;
            }
            cap = n;
        }
        gen++;
        n = 0;
        for (struct conn *w = srv->watch_head; w; w = w->w_next) {
            if (w->gone) continue;
            w->w_gen = gen, w->w_idx = n;
            /* a peer gone is always reported; one that shut its side until it was probed */
            pf[n++] = (struct cli_os_watch){.s = w->fd, .shut_wr = !w->probed};
        }
        pthread_mutex_unlock(&srv->watch_mu);
        cli_os_watch_peers(pf, n, POLL_MS);
        pthread_mutex_lock(&srv->watch_mu);
        size_t n_wake = 0;
        for (struct conn *w = srv->watch_head; w; w = w->w_next) {
            int ev = w->w_gen == gen && !w->gone ? pf[w->w_idx].found : 0;
            if (ev & CLI_OS_PEER_GONE) {
                w->gone = 1;
                for (int i = 0; i < w->n_req; i++) serve_engine_cancel(&srv->engine, w->req[i]);
            } else if (ev & CLI_OS_PEER_SHUT_WR) {
                struct waiter *c;
                w->probed = probe(w, &c);
                if (c) wake[n_wake++] = c;
            }
        }
        if (!n_wake) continue;
        pthread_mutex_unlock(&srv->watch_mu); /* each waiter is held by its reference */
        for (size_t i = 0; i < n_wake; i++) waiter_wake(wake[i]);
        pthread_mutex_lock(&srv->watch_mu);
    }
    pthread_mutex_unlock(&srv->watch_mu);
    free(pf);
    free(wake);
    return NULL;
}

/* --- streaming ----------------------------------------------------------------------------- */

struct stream {
    struct serve_server *srv;
    struct serve_req *r[SERVE_MAX_N]; /* the choices, one reference each */
    int n;
    struct waiter *w; /* one reference */
    struct serve_buf out;
    size_t off;
    int started, eof, failed;
    unsigned char ended[SERVE_MAX_N]; /* choice i's last chunk is out */
};

static int has_news(const struct serve_req *r) { return r->head || r->state == SERVE_DONE || r->ping; }

/* Choice i's pieces since the last call, one SSE event each with the logprobs of its tokens, and
 * its final chunk once it is done (with the records that came without text). 1 when something was
 * written, 0 nothing new, -1 the client has gone. */
static int stream_take(struct stream *s, int i) {
    struct serve_req *r = s->r[i];
    pthread_mutex_lock(&r->mu);
    struct serve_piece *p = r->head;
    int done = r->state == SERVE_DONE, status = r->http_status;
    r->head = r->tail = NULL;
    pthread_mutex_unlock(&r->mu);
    if (!p && !done) return 0;
    for (struct serve_piece *n; p; p = n) {
        n = p->next;
        serve_api_sse_text(s->srv, r, p->text, p->len, p->probs, p->n_probs, &s->out);
        serve_piece_free(p);
    }
    if (done && status == 499) return -1;
    if (done && status) { /* an error ends the whole stream */
        serve_api_sse_error(r, &s->out);
        for (int k = 0; k < s->n; k++) serve_engine_cancel(&s->srv->engine, s->r[k]), s->ended[k] = 1;
        s->failed = 1;
    } else if (done) { /* the engine is done with r: its records are final */
        serve_api_sse_end(s->srv, r, r->probs, r->n_probs, &s->out);
        s->ended[i] = 1;
    }
    return 1;
}

/* MHD asks for more of the body: what the engine handed over, as SSE events sent as soon as they
 * are there; with nothing new the connection is parked until there is. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    struct stream *s = cls;
    (void)pos;
    for (;;) {
        if (s->off < s->out.len) {
            size_t n = s->out.len - s->off < max ? s->out.len - s->off : max;
            memcpy(buf, s->out.p + s->off, n);
            s->off += n;
            if (s->off == s->out.len) s->off = s->out.len = 0;
            return (ssize_t)n;
        }
        if (s->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (s->eof) return MHD_CONTENT_READER_END_OF_STREAM;
        if (!s->started) {
            s->started = 1;
            for (int i = 0; i < s->n; i++) serve_api_sse_start(s->srv, s->r[i], &s->out); /* role / echo */
            continue;
        }
        struct serve_req *wait[SERVE_MAX_N];
        int got = 0, live = 0;
        for (int i = 0; i < s->n && !s->failed; i++) {
            if (s->ended[i]) continue;
            int g = stream_take(s, i);
            if (g < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
            got |= g;
            if (!s->ended[i]) wait[live++] = s->r[i];
        }
        if (!live) { /* every choice has ended */
            if (!s->failed) serve_api_sse_done(s->srv, s->r, s->n, &s->out);
            s->eof = 1;
            continue;
        }
        if (got) continue;
        struct serve_req *r0 = s->r[0];
        pthread_mutex_lock(&r0->mu);
        int ping = r0->ping;
        r0->ping = 0;
        pthread_mutex_unlock(&r0->mu);
        if (ping) { /* the watcher asks whether a half-closed client still reads */
            sbuf_add(&s->out, ": ping\n\n", 8);
            continue;
        }
        park(s->w, wait, live, has_news);
        return 0; /* called again once woken */
    }
}

static void stream_free(void *cls) {
    struct stream *s = cls;
    for (int i = 0; i < s->n; i++) {
        unwatch_req(s->r[i]);
        serve_engine_cancel(&s->srv->engine, s->r[i]); /* a no-op once the request is done */
        serve_req_unref(s->r[i]);
    }
    waiter_unref(s->w);
    sbuf_free(&s->out);
    free(s);
}

static enum MHD_Result respond_stream(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn) {
    struct stream *s = calloc(1, sizeof *s);
    if (!s) return respond_error(srv, c, 500, "out of memory", NULL, NULL);
    s->srv = srv;
    s->n = cn->n_req;
    for (int i = 0; i < s->n; i++) serve_req_ref(s->r[i] = cn->req[i]);
    s->w = cn->w;
    pthread_mutex_lock(&s->w->mu);
    s->w->refs++;
    pthread_mutex_unlock(&s->w->mu);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, s, stream_free);
    if (!resp) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    add_cors(srv, c, resp);
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    count_code(srv, 200);
    return ok;
}

/* --- endpoints ----------------------------------------------------------------------------- */

/* The request body as JSON: NULL with *why set when it is not UTF-8 (JSON text is; cJSON would
 * pass the bytes on into replies), not one JSON value (trailing bytes after it, two objects, ...),
 * or when it holds a NUL, raw or as \u0000 (text is passed on as C strings: a NUL would silently
 * cut it). */
static cJSON *parse_body(const struct conn *cn, const char **why) {
    const char *p = cn->body.p ? cn->body.p : "", *end = NULL;
    size_t n = cn->body.p ? cn->body.len : 0;
    if (memchr(p, 0, n)) {
        *why = "the request body holds a NUL byte, which JSON text cannot contain";
        return NULL;
    }
    if (!serve_utf8_is_valid(p, n)) {
        *why = "the request body is not valid UTF-8";
        return NULL;
    }
    *why = "the request body is not valid JSON";
    cJSON *j = cJSON_ParseWithLengthOpts(p, n, &end, 0);
    if (!j) return NULL;
    for (const char *q = end; q && q < p + n; q++)
        if (*q != ' ' && *q != '\t' && *q != '\r' && *q != '\n') {
            cJSON_Delete(j);
            *why = "the request body has more than one JSON value (bytes after the first)";
            return NULL;
        }
    for (size_t i = 0; i + 6 <= n; i++) /* \u0000 with an odd number of backslashes in front */
        if (p[i] == '\\' && p[i + 1] == 'u' && !strncmp(p + i + 2, "0000", 4)) {
            size_t b = 0;
            while (b <= i && p[i - b] == '\\') b++;
            if (b % 2) {
                cJSON_Delete(j);
                *why = "a string holds a NUL character (\\u0000), which text cannot contain here";
                return NULL;
            }
        }
    return j;
}

static int ready_reply(const struct serve_req *r) { return r->state >= (r->stream ? SERVE_RUNNING : SERVE_DONE); }

/* The reply of cn's request once it can start: a stream once every choice's prompt has been
 * evaluated (so that a prompt too long for the context is still a 400), a plain reply once every
 * choice's text is there. Until then the connection is parked, and libmicrohttpd calls
 * on_request again when the engine wakes it. */
static enum MHD_Result completion_reply(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn) {
    int all = 1, status = 0, who = 0;
    for (int i = 0; i < cn->n_req; i++) {
        struct serve_req *r = cn->req[i];
        unwatch_req(r); /* what the last park left on the others */
        pthread_mutex_lock(&r->mu);
        all &= ready_reply(r);
        if (r->state == SERVE_DONE && r->http_status && !status) status = r->http_status, who = i;
        pthread_mutex_unlock(&r->mu);
    }
    if (status == 499) return MHD_NO; /* the client has gone */
    if (!all && !status) {
        /* Not parked in the call that completes the request, but in the next one: libmicrohttpd
         * (0.9.75, and 1.0 by its source) resumes a connection in the state it had before the
         * call that parked it: reading. It then reads before the reply, and closes the connection,
         * with no reply, when it reads the end of a client that half-closed after sending
         * (shutdown(SHUT_WR), `nc -N`): about half the tries with an idle keep-alive connection
         * beside. Returned to without a reply, it calls again at once, from a state that waits for
         * the reply and reads nothing, and such a connection is resumed without reading. */
        if (!cn->deferred) {
            cn->deferred = 1;
            return MHD_YES;
        }
        park(cn->w, cn->req, cn->n_req, ready_reply);
        return MHD_YES;
    }
    pthread_mutex_lock(&srv->watch_mu);
    cn->replied = 1; /* from here a probe goes in the body (see probe) */
    pthread_mutex_unlock(&srv->watch_mu);
    struct serve_req *r = cn->req[who];
    if (status) {
        for (int i = 0; i < cn->n_req; i++) serve_engine_cancel(&srv->engine, cn->req[i]);
        return respond_error(srv, c, status, r->err,
                             status != 400 ? NULL
                             : r->embed    ? "input"
                             : r->chat     ? "messages"
                                           : "prompt",
                             NULL);
    }
    if (r->embed) return respond_json(srv, c, 200, serve_api_embeddings_json(srv, cn->req, cn->n_req));
    if (r->stream) return respond_stream(srv, c, cn);
    return respond_json(srv, c, 200, serve_api_reply_json(srv, cn->req, cn->n_req));
}

static enum MHD_Result submit_all(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, int st,
                                  char *err, const char *param);

/* POST /v1/embeddings: one request per input, each pooled on a free slot. */
static enum MHD_Result embeddings(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                  const char *url) {
    const char *why;
    cJSON *body = parse_body(cn, &why);
    if (!body) return respond_error(srv, c, 400, why, NULL, NULL);
    char err[512];
    const char *param = NULL;
    int st = serve_api_parse_embeddings(srv, body, cn->req, &cn->n_req, err, sizeof err, &param);
    cJSON_Delete(body);
    if (cn->n_req) { /* on_completed counts it down */
        pthread_mutex_lock(&srv->stat_mu);
        srv->inflight++;
        pthread_mutex_unlock(&srv->stat_mu);
    }
    for (int i = 0; i < cn->n_req; i++) cn->req[i]->t_arrival = cli_now();
    return submit_all(srv, c, cn, st, err, param);
}

/* A generation request's choices into cn->req: the body parsed (a chat's template rendered) once,
 * into the first; each other choice a clone of it (a batch of prompts has n per prompt, each clone
 * taking its own; choice i of a prompt samples with seed + i when a seed is given). 0, or an error
 * status with err and *param. */
static int parse_choices(struct serve_server *srv, const cJSON *body, int chat, struct conn *cn, char *err, size_t errn,
                         const char **param) {
    pthread_mutex_lock(&srv->stat_mu);
    uint64_t id = ++srv->next_id;
    pthread_mutex_unlock(&srv->stat_mu);
    snprintf(err, errn, "out of memory");
    struct serve_req *r0 = serve_req_new();
    if (!r0) return 500;
    cn->req[cn->n_req++] = r0;
    pthread_mutex_lock(&srv->stat_mu); /* on_completed counts it down */
    srv->inflight++;
    pthread_mutex_unlock(&srv->stat_mu);
    int st = serve_api_parse(srv, body, chat, r0, err, errn, param);
    if (st) return st;
    r0->created = (long long)time(NULL);
    snprintf(r0->id, sizeof r0->id, "%s-%llx%06llx", chat ? "chatcmpl" : "cmpl", r0->created, (unsigned long long)id);
    r0->t_arrival = cli_now();
    for (int i = 1; i < r0->n * (chat ? 1 : r0->n_prompts); i++) {
        struct serve_req *r = serve_req_clone(r0);
        if (!r) return snprintf(err, errn, "out of memory"), 500;
        cn->req[cn->n_req++] = r;
        r->index = i;
        r->prompt_index = i / r0->n;
        if (r->prompt_index && (st = serve_api_parse_prompt(srv, body, r, err, errn, param))) return st;
        r->t_arrival = cli_now();
        r->gp.sampling.seed += (uint64_t)(i % r->n); /* n samples, not n copies (only seeds given count) */
    }
    return 0;
}

/* POST /v1/completions, /v1/chat/completions: the choices parsed and queued. */
static enum MHD_Result completion(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, int chat) {
    const char *why;
    cJSON *body = parse_body(cn, &why);
    if (!body) return respond_error(srv, c, 400, why, NULL, NULL);
    char err[512];
    const char *param = NULL;
    int st = parse_choices(srv, body, chat, cn, err, sizeof err, &param);
    cJSON_Delete(body);
    return submit_all(srv, c, cn, st, err, param);
}

static enum MHD_Result completions(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                   const char *url) {
    return completion(srv, c, cn, 0);
}

static enum MHD_Result chat_completions(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                        const char *url) {
    return completion(srv, c, cn, 1);
}

/* Queue cn's parsed requests (st: the parse's status, 0 or an error with err and param), and
 * reply once they are done. */
static enum MHD_Result submit_all(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, int st,
                                  char *err, const char *param) {
    if (!st && !(cn->w = waiter_new(c))) st = 500, snprintf(err, 64, "out of memory");
    if (st) return respond_error(srv, c, st, err, param, NULL);
    if (serve_engine_submit(&srv->engine, cn->req, cn->n_req)) {
        struct serve_req *r = cn->req[0];
        return respond_error(srv, c, r->http_status, r->err,
                             r->http_status != 400 ? NULL
                             : r->embed            ? "input"
                                                   : "n",
                             r->http_status == 503 ? "server_busy" : NULL);
    }
    cn->c = c;
    cn->fd = conn_fd(c);
    if (cn->fd != MHD_INVALID_SOCKET) watch_add(srv, cn);
    return completion_reply(srv, c, cn);
}

static enum MHD_Result tokenize_body(struct serve_server *srv, struct MHD_Connection *c, const cJSON *body) {
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(body, "content");
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(body, "add_special");
    const cJSON *special = cJSON_GetObjectItemCaseSensitive(body, "parse_special");
    if (!cJSON_IsString(content)) return respond_error(srv, c, 400, "'content' must be a string", "content", NULL);
    if ((add && !cJSON_IsBool(add)) || (special && !cJSON_IsBool(special)))
        return respond_error(srv, c, 400, "'add_special' and 'parse_special' must be booleans", NULL, NULL);
    size_t len = strlen(content->valuestring), cap = len + 8, n = 0;
    int32_t *ids = NULL;
    vkllm_status st = VKLLM_STATUS_OOM;
    char msg[400] = "out of memory";
    for (int pass = 0; pass < 2; pass++) { /* the tokenizer is immutable: no lock (vkllm.h) */
        int32_t *nids = realloc(ids, cap * sizeof *ids);
        if (!nids) break;
        ids = nids;
        st = vkllm_tokenize(srv->model, content->valuestring, len, cJSON_IsTrue(add) ? 1 : 0,
                            special ? cJSON_IsTrue(special) : 1, ids, cap, &n);
        if (st) snprintf(msg, sizeof msg, "%s", vkllm_last_error());
        if (st || n <= cap) break;
        cap = n;
    }
    if (st) {
        free(ids);
        return respond_error(srv, c, 500, msg, NULL, NULL);
    }
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "tokens");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
    free(ids);
    return respond_obj(srv, c, o);
}

static enum MHD_Result detokenize_body(struct serve_server *srv, struct MHD_Connection *c, const cJSON *body) {
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(body, "tokens");
    if (!cJSON_IsArray(tokens))
        return respond_error(srv, c, 400, "'tokens' must be an array of token ids", "tokens", NULL);
    int n = cJSON_GetArraySize(tokens);
    int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
    if (!ids) return respond_error(srv, c, 500, "out of memory", NULL, NULL);
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tokens) {
        if (!cJSON_IsNumber(t) || t->valuedouble != (double)(int32_t)t->valuedouble || t->valuedouble < 0 ||
            t->valuedouble >= srv->n_vocab) {
            free(ids);
            return respond_error(srv, c, 400, "'tokens' must hold token ids of the vocabulary", "tokens", NULL);
        }
        ids[i++] = (int32_t)t->valuedouble;
    }
    char *text = NULL, msg[400] = "";
    size_t len = 0;
    vkllm_tokenizer_t tok = NULL; /* no lock: see vkllm.h; by length, as a byte token may be a NUL */
    vkllm_status st = vkllm_model_tokenizer(srv->model, &tok);
    if (!st) st = vkllm_tokenizer_decode(tok, ids, (size_t)n, 0, &text, &len);
    if (st) snprintf(msg, sizeof msg, "%s", vkllm_last_error());
    free(ids);
    if (st) return respond_error(srv, c, st == VKLLM_STATUS_INVALID_ARGUMENT ? 400 : 500, msg, "tokens", NULL);
    char *valid = serve_utf8_valid_n(text, len);
    vkllm_free(text);
    if (!valid) return respond_error(srv, c, 500, "out of memory", NULL, NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "content", valid);
    free(valid);
    return respond_obj(srv, c, o);
}

/* The model object of /v1/models and /v1/models/{id}. */
static cJSON *model_object(struct serve_server *srv) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)srv->created);
    cJSON_AddStringToObject(m, "owned_by", "vkllm");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddNumberToObject(meta, "n_ctx", srv->n_ctx);
    cJSON_AddNumberToObject(meta, "n_vocab", srv->n_vocab);
    cJSON_AddNumberToObject(meta, "parallel", srv->engine.n_slots);
    return m;
}

/* GET /v1/models: the list of the one model; /v1/models/{id}: it, or 404. */
static enum MHD_Result models(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url) {
    const char *id = url[10] == '/' ? url + 11 : NULL;
    if (id) {
        if (strcmp(id, srv->model_id)) {
            char msg[400];
            snprintf(msg, sizeof msg, "the model '%.200s' does not exist (this server has '%.60s')", id, srv->model_id);
            return respond_error(srv, c, 404, msg, "model", "model_not_found");
        }
        return respond_obj(srv, c, model_object(srv));
    }
    cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddItemToObject(o, "data", data);
    cJSON_AddItemToArray(data, model_object(srv));
    return respond_obj(srv, c, o);
}

/* GET /props: what llama-server's web UI and clients read about the server. */
static enum MHD_Result props(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url) {
    cJSON *o = cJSON_CreateObject();
    struct vkllm_generate_params gp = vkllm_generate_params_default();
    cJSON *d = cJSON_AddObjectToObject(o, "default_generation_settings");
    cJSON_AddNumberToObject(d, "n_ctx", srv->n_ctx);
    cJSON *p = cJSON_AddObjectToObject(d, "params");
    cJSON_AddNumberToObject(p, "temperature", gp.sampling.temperature);
    cJSON_AddNumberToObject(p, "top_k", gp.sampling.top_k);
    cJSON_AddNumberToObject(p, "top_p", gp.sampling.top_p);
    cJSON_AddNumberToObject(p, "min_p", gp.sampling.min_p);
    cJSON_AddNumberToObject(p, "n_predict", gp.n_predict);
    cJSON_AddBoolToObject(p, "cache_prompt", gp.cache_prompt);
    cJSON_AddNumberToObject(o, "total_slots", srv->engine.n_slots);
    cJSON_AddNumberToObject(o, "kv_cache_bytes", (double)srv->kv_bytes);
    cJSON_AddStringToObject(o, "model_path", srv->model_id);
    if (srv->has_chat_template)
        cJSON_AddStringToObject(o, "chat_template", srv->chat_template ? srv->chat_template : "the model's");
    else cJSON_AddNullToObject(o, "chat_template");
    /* where it comes from: the model's file, --chat-template, or chatml because the model has none */
    cJSON_AddStringToObject(o, "chat_template_source",
                            srv->template_fallback ? "fallback"
                            : srv->chat_template   ? "option"
                                                   : "model");
    cJSON_AddStringToObject(o, "build_info", vkllm_version());
    cJSON *mod = cJSON_AddObjectToObject(o, "modalities");
    cJSON_AddBoolToObject(mod, "vision", 0);
    return respond_obj(srv, c, o);
}

static enum MHD_Result metrics(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url) {
    uint64_t requests[N_ENDPOINTS], codes[SERVE_N_CODES];
    const char *names[N_ENDPOINTS];
    for (int i = 0; i < N_ENDPOINTS; i++) names[i] = endpoints[i].path;
    pthread_mutex_lock(&srv->stat_mu);
    memcpy(requests, srv->requests, sizeof requests);
    memcpy(codes, srv->codes, sizeof codes);
    pthread_mutex_unlock(&srv->stat_mu);
    codes[0]++; /* this reply */
    struct serve_buf o = {0};
    serve_engine_metrics(&srv->engine, &o, requests, names, N_ENDPOINTS, codes, code_values, SERVE_N_CODES);
    if (o.oom) {
        sbuf_free(&o);
        return respond_error(srv, c, 500, "out of memory", NULL, NULL);
    }
    enum MHD_Result ok = respond(srv, c, 200, "text/plain; version=0.0.4; charset=utf-8", o.p, o.len);
    sbuf_free(&o);
    return ok;
}

/* GET /: the chat page. Model output is only ever set as text (textContent) by its script, and
 * the policy below keeps the page from loading or sending anything anywhere but this server. */
static enum MHD_Result page(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url) {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(vkllm_web_chat_html_size, (void *)vkllm_web_chat_html, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                            "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                            "frame-ancestors 'none'");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    count_code(srv, 200);
    return ok;
}

/* --- routing ------------------------------------------------------------------------------- */

static int authorized(struct serve_server *srv, struct MHD_Connection *c) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7)) return 0;
    h += 7;
    size_t a = strlen(h), b = strlen(srv->api_key);
    unsigned diff = a != b;
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned char)(h[i] ^ srv->api_key[i]);
    return diff == 0;
}

/* llama-server's /apply-template: a chat request's prompt as the template renders it (tools
 * included), and the grammar a required tool call or a JSON schema would constrain it with. */
static enum MHD_Result apply_template_body(struct serve_server *srv, struct MHD_Connection *c, const cJSON *body) {
    struct serve_req *r = serve_req_new();
    if (!r) return respond_error(srv, c, 500, "out of memory", NULL, NULL);
    char err[512];
    const char *param = NULL;
    int st = serve_api_parse(srv, body, 1, r, err, sizeof err, &param);
    if (st) {
        enum MHD_Result ok = respond_error(srv, c, st, err, param, NULL);
        serve_req_unref(r);
        return ok;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "prompt", r->prompt);
    if (r->grammar) cJSON_AddStringToObject(o, "grammar", r->grammar);
    serve_req_unref(r);
    return respond_obj(srv, c, o);
}

/* The ids the library evaluates for r's prompt, as vkllm_gen_start takes them (generate.c's
 * prompt_tokens, through the public API): text tokenized without BOS, its special tokens parsed
 * as the request says (a chat's rendered template: yes); token ids as given; then BOS in front
 * when the model asks for it (or the prompt is empty), unless the ids start with it already.
 * Refused as the real request would be: ids outside the vocabulary, a prompt longer than a
 * slot's context. 0 and the ids appended to a, or 400/500 with err. */
static int prompt_ids(struct serve_server *srv, const struct serve_req *r, cJSON *a, char *err, size_t errn) {
    int32_t model_bos = -1, bos = -1;
    size_t n_model_bos = 0, n_bos = 0;
    /* an empty text gives [BOS] where the model puts one in front (add_bos -1), and with add_bos 1
     * the id wherever it has one (vkllm.h) */
    if (vkllm_tokenize(srv->model, "", 0, -1, 0, &model_bos, 1, &n_model_bos) ||
        vkllm_tokenize(srv->model, "", 0, 1, 0, &bos, 1, &n_bos))
        return snprintf(err, errn, "%s", vkllm_last_error()), 500;
    if (n_bos != 1) bos = -1;
    int want_bos = r->gp.add_bos < 0 ? n_model_bos == 1 : r->gp.add_bos;
    size_t len = r->gp.prompt_len, n = 0, cap = len + 8;
    int32_t *ids = NULL;
    if (r->gp.prompt_tokens) {
        n = r->gp.n_prompt_tokens;
        for (size_t i = 0; i < n; i++)
            if ((uint32_t)r->gp.prompt_tokens[i] >= srv->n_vocab)
                return snprintf(err, errn, "prompt token %zu: id %d is outside the vocabulary (%u tokens)", i,
                                (int)r->gp.prompt_tokens[i], srv->n_vocab),
                       400;
        if (!(ids = malloc(sizeof *ids * (n + 1)))) return snprintf(err, errn, "out of memory"), 500;
        memcpy(ids + 1, r->gp.prompt_tokens, sizeof *ids * n);
        if (n && ids[1] == bos) want_bos = 0; /* already there */
    } else {
        for (int pass = 0; pass < 2 && len; pass++) { /* the tokenizer is immutable: no lock (vkllm.h) */
            int32_t *more = realloc(ids, sizeof *ids * (cap + 1));
            if (!more) {
                free(ids);
                return snprintf(err, errn, "out of memory"), 500;
            }
            ids = more;
            if (vkllm_tokenize(srv->model, r->gp.prompt, len, 0, r->gp.parse_special, ids + 1, cap, &n)) {
                free(ids);
                return snprintf(err, errn, "%s", vkllm_last_error()), 500;
            }
            if (n <= cap) break;
            cap = n;
        }
        if (!ids && !(ids = malloc(sizeof *ids))) return snprintf(err, errn, "out of memory"), 500;
    }
    int32_t *p = ids + 1; /* ids[0] is room for BOS */
    if ((want_bos || n == 0) && bos >= 0) *--p = bos, n++;
    int st = 0;
    if (n == 0) st = 400, snprintf(err, errn, "empty prompt and the model has no BOS token to start from");
    else if (n > srv->n_ctx)
        st = 400, snprintf(err, errn, "the prompt does not fit in the context of %u tokens: it has %zu", srv->n_ctx, n);
    for (size_t i = 0; !st && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(p[i]));
    free(ids);
    return st;
}

/* POST /v1/completions/render, /v1/chat/completions/render: {"token_ids": [...]}, the ids the
 * same body at /v1/completions or /v1/chat/completions would evaluate (a router's precise prefix
 * matching hashes them); nothing runs on the model. A batch of prompts: an array of arrays, one
 * per prompt. Errors are the real endpoint's 400s. */
static enum MHD_Result render_body(struct serve_server *srv, struct MHD_Connection *c, const cJSON *body, int chat) {
    struct serve_req *r = serve_req_new();
    if (!r) return respond_error(srv, c, 500, "out of memory", NULL, NULL);
    char err[512];
    const char *param = NULL;
    int st = serve_api_parse(srv, body, chat, r, err, sizeof err, &param);
    cJSON *o = cJSON_CreateObject(), *all = cJSON_AddArrayToObject(o, "token_ids");
    int batch = !chat && r->n_prompts > 1;
    for (int i = 0; !st && i < (batch ? r->n_prompts : 1); i++) {
        cJSON *a = all;
        if (batch) cJSON_AddItemToArray(all, a = cJSON_CreateArray());
        if (i) r->prompt_index = i, st = serve_api_parse_prompt(srv, body, r, err, sizeof err, &param);
        if (!st && (st = prompt_ids(srv, r, a, err, sizeof err)) == 400) param = chat ? "messages" : "prompt";
    }
    serve_req_unref(r);
    if (st) {
        cJSON_Delete(o);
        return respond_error(srv, c, st, err, st == 400 ? param : NULL, NULL);
    }
    return respond_obj(srv, c, o);
}

static enum MHD_Result completions_render_body(struct serve_server *srv, struct MHD_Connection *c, const cJSON *body) {
    return render_body(srv, c, body, 0);
}

static enum MHD_Result chat_render_body(struct serve_server *srv, struct MHD_Connection *c, const cJSON *body) {
    return render_body(srv, c, body, 1);
}

/* DNS rebinding: a web page of evil.example whose name the attacker then points at 127.0.0.1 is,
 * to the browser, of the same origin as this server, and may read every reply; only the Host
 * header tells. Answered: IP addresses (a page cannot rebind a literal address), localhost and
 * *.localhost, the listening --host, and --allowed-hosts (a name, or ".example.com" for it and
 * its subdomains; "*" turns the check off), as Vite and Jupyter do. A request without Host
 * (HTTP/1.0) is not a browser's. */
static int host_allowed(const struct serve_server *srv, struct MHD_Connection *c, char *name, size_t cap) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!h || (srv->allowed_hosts && !strcmp(srv->allowed_hosts, "*"))) return 1;
    if (snprintf(name, cap, "%s", h) >= (int)cap) return 0; /* no name is that long */
    if (name[0] == '[') return strchr(name, ']') != NULL;   /* an IPv6 address */
    char *colon = strrchr(name, ':');
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) *colon = 0;
    size_t n = strlen(name);
    if (n && name[n - 1] == '.') name[--n] = 0; /* "localhost." is localhost */
    if (!n) return 0;
    for (size_t i = 0; i < n; i++) name[i] = (char)tolower((unsigned char)name[i]);
    struct in_addr a4;
    if (inet_pton(AF_INET, name, &a4) == 1 || !strcmp(name, "localhost") ||
        (n > 10 && !strcmp(name + n - 10, ".localhost")))
        return 1;
    if (srv->listen_host && !strcasecmp(name, srv->listen_host)) return 1;
    for (const char *p = srv->allowed_hosts; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && *p == ' ') p++, len--;
        while (len && p[len - 1] == ' ') len--;
        if (len == n && !strncasecmp(p, name, n)) return 1;
        if (len > 1 && *p == '.' &&
            ((len - 1 == n && !strncasecmp(p + 1, name, n)) || /* .example.com */
             (n > len && !strncasecmp(p, name + n - len, len))))
            return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* The JSON endpoints take application/json bodies only: a web page of any origin may POST
 * text/plain (or a form, or no Content-Type) without asking the server first (a CORS "simple"
 * request): it cannot read the reply, but the model would run for it. */
static int json_body(struct MHD_Connection *c, char *type, size_t cap) {
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    snprintf(type, cap, "%s", t ? t : "");
    if (!t) return 0;
    while (*t == ' ' || *t == '\t') t++;
    if (strncasecmp(t, "application/json", 16)) return 0;
    t += 16;
    while (*t == ' ' || *t == '\t') t++;
    return !*t || *t == ';';
}

static enum MHD_Result health(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url) {
    return respond_json(srv, c, 200, strdup("{\"status\":\"ok\"}"));
}

static enum MHD_Result slots(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url) {
    return respond_obj(srv, c, serve_engine_slots_json(&srv->engine));
}

/* The endpoints that take a JSON object and answer at once: the body parsed for fn. */
static enum MHD_Result with_object(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                   enum MHD_Result (*fn)(struct serve_server *, struct MHD_Connection *,
                                                         const cJSON *)) {
    const char *why;
    cJSON *body = parse_body(cn, &why);
    if (!cJSON_IsObject(body)) {
        if (body || !strcmp(why, "the request body is not valid JSON")) why = "the request body must be a JSON object";
        cJSON_Delete(body);
        return respond_error(srv, c, 400, why, NULL, NULL);
    }
    enum MHD_Result ok = fn(srv, c, body);
    cJSON_Delete(body);
    return ok;
}

static enum MHD_Result tokenize(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url) {
    return with_object(srv, c, cn, tokenize_body);
}

static enum MHD_Result detokenize(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                  const char *url) {
    return with_object(srv, c, cn, detokenize_body);
}

static enum MHD_Result apply_template(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                      const char *url) {
    return with_object(srv, c, cn, apply_template_body);
}

static enum MHD_Result completions_render(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                          const char *url) {
    return with_object(srv, c, cn, completions_render_body);
}

static enum MHD_Result chat_render(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn,
                                   const char *url) {
    return with_object(srv, c, cn, chat_render_body);
}

/* A browser's CORS preflight: 204, no key needed. */
static enum MHD_Result preflight(struct serve_server *srv, struct MHD_Connection *c) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    add_cors(srv, c, resp);
    MHD_add_response_header(resp, "Access-Control-Max-Age", "86400");
    enum MHD_Result ok = MHD_queue_response(c, 204, resp);
    MHD_destroy_response(resp);
    count_code(srv, 204);
    return ok;
}

static enum MHD_Result wrong_method(struct serve_server *srv, struct MHD_Connection *c, const struct endpoint *e) {
    char msg[64];
    snprintf(msg, sizeof msg, "%s takes %s", e->path, e->post ? "POST" : "GET");
    char *json = serve_api_error_json(msg, error_type(405), NULL, NULL);
    if (!json) return MHD_NO;
    enum MHD_Result ok =
        respond_allow(srv, c, 405, "application/json", json, strlen(json), e->post ? "POST" : "GET, HEAD");
    cJSON_free(json);
    return ok;
}

static enum MHD_Result not_json(struct serve_server *srv, struct MHD_Connection *c, const char *type) {
    char msg[256];
    snprintf(msg, sizeof msg, "the request body must be JSON with Content-Type: application/json (it was %s%.100s%s)",
             type[0] ? "'" : "", type[0] ? type : "not given", type[0] ? "'" : "");
    return respond_error(srv, c, 415, msg, NULL, "unsupported_media_type");
}

static int find_endpoint(const char *url) {
    for (int i = 0; i < EP_OTHER; i++)
        if (!strcmp(url, endpoints[i].path)) return i;
    if (!strncmp(url, "/v1/models/", 11) && url[11]) return EP_MODELS; /* /v1/models/{id} */
    return EP_OTHER;
}

/* The checks in order (Host, preflight, key, path, method, size, type), then the handler. */
static enum MHD_Result route(struct serve_server *srv, struct MHD_Connection *c, struct conn *cn, const char *url,
                             const char *method) {
    int ep = find_endpoint(url);
    const struct endpoint *e = &endpoints[ep];
    char name[256], type[128];
    if (e->auth != AUTH_ANY && !host_allowed(srv, c, name, sizeof name)) {
        char msg[640];
        snprintf(msg, sizeof msg,
                 "this server does not answer to the host name '%.200s' (a protection against DNS "
                 "rebinding); start it with --allowed-hosts %.200s to allow it",
                 name, name);
        return respond_error(srv, c, 403, msg, NULL, "host_not_allowed");
    }
    if (!strcmp(method, "OPTIONS")) return preflight(srv, c);
    pthread_mutex_lock(&srv->stat_mu);
    srv->requests[ep]++;
    pthread_mutex_unlock(&srv->stat_mu);
    if (srv->api_key && e->auth == AUTH_KEY && !authorized(srv, c))
        return respond_error(srv, c, 401, "a valid API key is required: Authorization: Bearer KEY", NULL,
                             "invalid_api_key");
    if (!e->fn) return respond_error(srv, c, 404, "no such endpoint", NULL, NULL);
    if (strcmp(method, e->post ? "POST" : "GET") && (e->post || strcmp(method, "HEAD"))) return wrong_method(srv, c, e);
    if (cn->too_large) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", srv->max_body);
        return respond_error(srv, c, 413, msg, NULL, "request_too_large");
    }
    if (e->post && !json_body(c, type, sizeof type)) return not_json(srv, c, type);
    return e->fn(srv, c, cn, url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    struct serve_server *srv = cls;
    struct conn *cn = *con_cls;
    if (cn && cn->w) return completion_reply(srv, c, cn); /* woken after being parked */
    if (!cn) { /* the headers are in; the body (if any) comes in the next calls */
        if (!(cn = calloc(1, sizeof *cn))) return MHD_NO;
        *con_cls = cn;
        cn->http11 = version && !strcmp(version, MHD_HTTP_VERSION_1_1);
        struct framing f = {0, 0, 0};
        MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
        if (f.n_length > 1 || f.bad_length || (f.n_length && f.chunked)) {
            cn->too_large = 1; /* the body, if any, is dropped */
            return respond_bad_framing(srv, c,
                                       f.n_length > 1 ? "more than one Content-Length header"
                                       : f.bad_length ? "Content-Length is not a plain decimal number"
                                                      : "both Content-Length and Transfer-Encoding");
        }
        /* a body a little over the limit is read and dropped (the connection stays usable); one
         * declared far larger is refused before it is read */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) / 4 > srv->max_body + 65536) {
            cn->too_large = 1;
            return route(srv, c, cn, url, method);
        }
        return MHD_YES;
    }
    if (*upload_size) { /* read the body up to the limit, drain the rest */
        if (cn->too_large || cn->body.len + *upload_size > srv->max_body) cn->too_large = 1;
        else sbuf_add(&cn->body, upload, *upload_size);
        if (cn->body.oom) cn->too_large = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    return route(srv, c, cn, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    struct serve_server *srv = cls;
    struct conn *cn = *con_cls;
    (void)c;
    (void)toe;
    if (!cn) return;
    if (cn->n_req) {
        watch_remove(srv, cn);
        for (int i = 0; i < cn->n_req; i++) {
            unwatch_req(cn->req[i]);
            serve_engine_cancel(&srv->engine, cn->req[i]); /* a no-op once the request is done */
            serve_req_unref(cn->req[i]);
        }
        waiter_unref(cn->w);
        pthread_mutex_lock(&srv->stat_mu);
        srv->inflight--;
        pthread_mutex_unlock(&srv->stat_mu);
    }
    sbuf_free(&cn->body);
    free(cn);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    fprintf(stderr, "vkllm: serve: http: ");
    vfprintf(stderr, fmt, ap);
}

/* RFC 9112 5.1: a header field name followed by whitespace before its colon ("Transfer-Encoding :
 * chunked") must get a 400: a proxy may read the field and this server not, which is how
 * requests are smuggled. libmicrohttpd refuses it (400, connection closed) at its default level
 * from 1.0 on (MHD_OPTION_CLIENT_DISCIPLINE_LVL 0); up to 0.9.77 (Debian 12 has 0.9.75) only at
 * MHD_OPTION_STRICT_FOR_CLIENT -1, which changes nothing else there (1 would require Host and
 * refuse spaces in URLs; 0, the default, takes "Transfer-Encoding " as another header's name). In
 * 1.0, STRICT_FOR_CLIENT -1 means the most lenient level, which accepts it: hence the two. */
#if MHD_VERSION >= 0x00097701
#define SERVE_MHD_STRICTNESS MHD_OPTION_CLIENT_DISCIPLINE_LVL, (int)0
#else
#define SERVE_MHD_STRICTNESS MHD_OPTION_STRICT_FOR_CLIENT, (int)-1
#endif

static int is_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

/* Connections cost a descriptor each, not a thread: allow as many as the process may open (the
 * soft limit raised to the hard one), less a reserve for the model, the driver and the logs; asked
 * (--max-connections, 0: no cap of its own) at most. */
static unsigned connection_limit(unsigned asked) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) return asked ? asked : 1000;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 1048576 ? 1048576 : rl.rlim_max;
        if (want > rl.rlim_cur) {
            struct rlimit up = {want, rl.rlim_max};
            if (!setrlimit(RLIMIT_NOFILE, &up)) rl.rlim_cur = want;
        }
    }
    unsigned room = rl.rlim_cur > 1048576 ? 1048576 - 128 : rl.rlim_cur > 256 ? (unsigned)rl.rlim_cur - 128 : 128;
    if (asked && asked <= room) return asked;
    if (asked)
        fprintf(stderr,
                "vkllm: serve: warning: --max-connections %u exceeds the %u file descriptors "
                "this process may open; using %u\n",
                asked, (unsigned)rl.rlim_cur, room);
    return room;
}

int serve_http_start(struct serve_server *srv, const char *host, int port) {
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc) {
        fprintf(stderr, "vkllm: serve: cannot resolve --host %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    unsigned limit = srv->max_connections = connection_limit(srv->max_connections);
    pthread_mutex_init(&srv->watch_mu, NULL);
    pthread_cond_init(&srv->watch_cond, NULL);
    srv->watch_init = 1;
    srv->watch_stop = 0;
    if (pthread_create(&srv->watcher, NULL, watch_main, srv)) {
        fprintf(stderr, "vkllm: serve: cannot start a thread\n");
        freeaddrinfo(ai);
        return -1;
    }
    srv->watching = 1;
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    srv->loopback_only = is_loopback(ai->ai_addr);
    srv->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
                                   mhd_log, NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED,
                                   on_completed, srv, MHD_OPTION_THREAD_POOL_SIZE,
                                   srv->http_threads ? srv->http_threads : 2u, MHD_OPTION_CONNECTION_LIMIT, limit,
                                   MHD_OPTION_CONNECTION_TIMEOUT, srv->timeout_s, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                   srv->max_client_connections, SERVE_MHD_STRICTNESS, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!srv->daemon) {
        fprintf(stderr, "vkllm: serve: cannot listen on %s:%d: %s\n", host, port,
                errno ? strerror(errno) : "libmicrohttpd refused");
        serve_http_stop(srv);
        return -1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : (uint16_t)port;
    return 0;
}

void serve_http_drain(struct serve_server *srv, double timeout_s) {
    double t0 = cli_now();
    for (;;) {
        pthread_mutex_lock(&srv->stat_mu);
        uint32_t n = srv->inflight;
        pthread_mutex_unlock(&srv->stat_mu);
        if (!n || cli_now() - t0 > timeout_s) return;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

void serve_http_stop(struct serve_server *srv) {
    if (srv->watching) { /* first: it may wake parked connections */
        pthread_mutex_lock(&srv->watch_mu);
        srv->watch_stop = 1;
        pthread_cond_signal(&srv->watch_cond);
        pthread_mutex_unlock(&srv->watch_mu);
        pthread_join(srv->watcher, NULL);
        srv->watching = 0;
    }
    if (srv->daemon) {
        MHD_stop_daemon(srv->daemon);
        srv->daemon = NULL;
    }
    if (srv->watch_init) {
        pthread_cond_destroy(&srv->watch_cond);
        pthread_mutex_destroy(&srv->watch_mu);
        srv->watch_init = 0;
    }
}
