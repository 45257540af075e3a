/* cmd_serve.c - `vkllm serve -m FILE`: an OpenAI-compatible HTTP server (see serve.h for its
 * parts, docs/serve.md for the API). This file parses the options, opens the model and one
 * session per slot, starts the engine and the HTTP daemon, and shuts both down on SIGINT or
 * SIGTERM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "os.h"
#include "serve.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkllm serve -m FILE [options]\n"
            "\n"
            "Serves the model over HTTP with the OpenAI API: POST /v1/completions and\n"
            "/v1/chat/completions (plain, or streamed as Server-Sent Events with \"stream\": true),\n"
            "POST /v1/embeddings, GET /v1/models, /health, /metrics (Prometheus), /props, /slots,\n"
            "POST /tokenize and /detokenize, /v1/completions/render and /v1/chat/completions/render\n"
            "(the token ids a request would evaluate), and a chat page at / for a browser.\n"
            "Up to --parallel requests are decoded together (continuous batching); more wait in a\n"
            "queue, and beyond it get 503. SIGINT or SIGTERM stops the server: requests still running\n"
            "end with an error, everything is freed, the exit code is 0.\n"
            "\n"
            "  -m FILE               GGUF model\n"
            "  --host ADDR           address to listen on (default 127.0.0.1)\n"
            "  --port N              TCP port (default 8080; 0 = any free one, printed at start)\n"
            "  --parallel N          slots: requests decoded at once (default 4)\n"
            "  -c N                  context per slot in tokens (default: the model's, at most 4096)\n"
            "  --kv-cache-mb N       the KV cache pool the slots share, in MiB: blocks of 16 positions,\n"
            "                        taken as requests' tokens arrive and given back when they end\n"
            "                        (default 0: -c x --parallel positions). A request waits in the\n"
            "                        queue until the pool has blocks for its prompt; when running ones\n"
            "                        run out, the youngest is preempted (its blocks given back) and\n"
            "                        recomputed later, its reply unchanged. Full blocks stay cached for\n"
            "                        later prompts that start the same way (docs/kv-cache.md)\n"
            "  --kv-events ENDPOINT  publish the KV pool's blocks as they are cached and evicted, as\n"
            "                        vLLM's KV events (ZeroMQ PUB, msgpack), for a router that routes by\n"
            "                        prefix (llm-d): tcp://*:5557 binds, tcp://HOST:PORT connects to a\n"
            "                        subscriber that binds (docs/deploy.md)%s\n"
            "  --kv-events-topic T   the events' topic (default kv@HOSTNAME@MODEL, MODEL as --alias)\n"
            "  --queue N             requests that may wait for a slot before 503 (default 64)\n"
            "  --api-key KEY         require Authorization: Bearer KEY on every endpoint but /health\n"
            "                        (or set VKLLM_API_KEY); without one on an address other than\n"
            "                        loopback, anyone who reaches the port can use the model (a warning\n"
            "                        says so at start)\n"
            "  --chat-template NAME  chat template for /v1/chat/completions (default: the model's, or\n"
            "                        chatml with a warning when it has none); one of: %s\n"
            "  --alias NAME          model id in /v1/models and replies (default: the file name)\n"
            "  --max-body BYTES      largest request body, else 413 (default 1048576)\n"
            "  --device N            Vulkan device index (see `vkllm devices`)\n"
            "  --ubatch N            prefill micro-batch size (default 256)\n"
            "  --prefill-chunk N     a prompt is evaluated N tokens at a time between the running\n"
            "                        requests' decode steps, so none of them waits for a whole long\n"
            "                        prompt (default 128; 0: a whole prompt at once)\n"
            "  --timeout S           close a connection that sends or reads nothing for S seconds\n"
            "                        (default 60; a request waiting for its reply is not idle; 0: never)\n"
            "  --max-connections N   open connections at most; more are refused (default: as many as\n"
            "                        the process may open file descriptors, less 128)\n"
            "  --http-threads N      threads serving the connections (default 2; they never wait for\n"
            "                        the model)\n"
            "  --max-client-connections N  open connections per client address at most (default 0: no\n"
            "                        cap, as clients behind one NAT or proxy share an address)\n" CLI_KV_HELP
            "  --pooling mean|cls|last  embeddings' pooling (default: what the model file says,\n"
            "                        <arch>.pooling_type; mean when it says nothing)\n"
            "  --cors-origin ORIGINS web pages of these origins may call the API from a browser: \"*\" or\n"
            "                        a comma-separated list (default: none; the chat page at / is the\n"
            "                        server's own origin and needs none)\n"
            "  --allowed-hosts NAMES host names the server answers to besides IP addresses, localhost\n"
            "                        and --host: a comma-separated list (\".example.com\": it and its\n"
            "                        subdomains; \"*\": any). Others get 403: a web page could otherwise\n"
            "                        point its own name at this server (DNS rebinding) and read replies\n"
            "\n"
            "POST bodies must be JSON with Content-Type: application/json (else 415).\n"
            "Requests take OpenAI's fields (max_tokens, temperature, top_p, seed, stop, ...) plus\n"
            "top_k and min_p; absent sampling fields take llama.cpp's defaults (temperature 0.8,\n"
            "top_k 40, top_p 0.95, min_p 0.05). See docs/serve.md.\n",
            serve_kv_events_available() ? "" : "; not in this build (no libzmq and msgpack-c)",
            vkllm_chat_template_names());
}

struct serve_opts {
    const char *path, *host, *api_key, *tmpl, *alias, *cors, *pooling, *allowed_hosts, *kv_events, *kv_topic;
    double port, parallel, n_ctx, queue, max_body, device, ubatch, prefill_chunk;
    double timeout, max_connections, http_threads, max_client_connections, kv_cache_mb;
    int type_k, type_v;
};

/* 0 parsed, 1 --help printed, 2 bad usage (a line was printed). */
static int parse_args(int argc, char **argv, struct serve_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NUM(flag, lo, hi, dst)                                   \
    if (!strcmp(a, flag) && v) {                                 \
        if (cli_number("serve", flag, v, lo, hi, dst)) return 2; \
        i++;                                                     \
        continue;                                                \
    }
        NUM("--port", 0, 65535, &o->port)
        NUM("--parallel", 1, 256, &o->parallel)
        NUM("-c", 1, 1e7, &o->n_ctx)
        NUM("--queue", 0, 1e6, &o->queue)
        NUM("--max-body", 1, 1e10, &o->max_body)
        NUM("--device", 0, 1e4, &o->device)
        NUM("--ubatch", 1, 1e5, &o->ubatch)
        NUM("--prefill-chunk", 0, 1e7, &o->prefill_chunk)
        NUM("--timeout", 0, 1e6, &o->timeout)
        NUM("--max-connections", 0, 1e7, &o->max_connections)
        NUM("--http-threads", 1, 64, &o->http_threads)
        NUM("--kv-cache-mb", 0, 1e9, &o->kv_cache_mb) {
            struct vkllm_session_params kv = {.n_ctx = 0, .n_ubatch = 0, .type_k = o->type_k, .type_v = o->type_v};
            int taken = cli_kv_arg("serve", a, v, &kv);
            if (taken < 0) return 2;
            if (taken) {
                o->type_k = kv.type_k, o->type_v = kv.type_v;
                i++;
                continue;
            }
        }
        NUM("--max-client-connections", 0, 1e7, &o->max_client_connections)
#undef NUM
        if (!strcmp(a, "-m") && v) o->path = argv[++i];
        else if (!strcmp(a, "--host") && v) o->host = argv[++i];
        else if (!strcmp(a, "--api-key") && v) o->api_key = argv[++i];
        else if (!strcmp(a, "--chat-template") && v) o->tmpl = argv[++i];
        else if (!strcmp(a, "--alias") && v) o->alias = argv[++i];
        else if (!strcmp(a, "--cors-origin") && v) o->cors = argv[++i];
        else if (!strcmp(a, "--allowed-hosts") && v) o->allowed_hosts = argv[++i];
        else if (!strcmp(a, "--kv-events") && v) o->kv_events = argv[++i];
        else if (!strcmp(a, "--kv-events-topic") && v) o->kv_topic = argv[++i];
        else if (!strcmp(a, "--pooling") && v) {
            int pl;
            if (serve_pooling(argv[++i], &pl)) {
                fprintf(stderr, "vkllm: serve: --pooling takes mean, cls or last\n");
                return 2;
            }
            o->pooling = argv[i];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "vkllm: serve: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o->path) {
        fprintf(stderr, "vkllm: serve: -m FILE is required\n");
        usage(stderr);
        return 2;
    }
    if (o->api_key && !*o->api_key) {
        fprintf(stderr, "vkllm: serve: --api-key must not be empty\n");
        return 2;
    }
    if (o->kv_events && !serve_kv_events_available()) {
        fprintf(stderr, "vkllm: serve: --kv-events: %s\n", SERVE_KV_EVENTS_MISSING);
        return 2;
    }
    if (o->kv_topic && !o->kv_events) {
        fprintf(stderr, "vkllm: serve: --kv-events-topic needs --kv-events\n");
        return 2;
    }
    return 0;
}

/* Does the chat template work? 0 yes, 1 the model has none and none was named (chat requests
 * then get a clear 400), 2 the named one is unknown (printed). */
static int check_template(vkllm_model_t model, const char *tmpl) {
    char *probe = NULL;
    struct vkllm_chat_message hello = {"user", "hello"};
    vkllm_status st = vkllm_chat_format(model, tmpl, &hello, 1, 1, &probe);
    vkllm_free(probe);
    if (!st) return 0;
    if (st == VKLLM_STATUS_NOT_FOUND && !tmpl) return 1;
    cli_fail(st, "chat template");
    return 2;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Serve until SIGINT or SIGTERM (blocked in every thread; this one waits for them). */
static int serve(struct serve_server *srv, const struct serve_opts *o, vkllm_session_t *slots, uint32_t n_slots,
                 struct serve_kv_events *kv_events) {
    if (serve_engine_start(&srv->engine, srv->model, srv->engine.pool, slots, n_slots, (uint32_t)o->queue,
                           (uint32_t)o->prefill_chunk, kv_events)) {
        fprintf(stderr, "vkllm: serve: cannot start the engine thread\n");
        return 1;
    }
    int code = 0;
    if (serve_http_start(srv, o->host, (int)o->port)) {
        code = 1;
    } else {
        if (!srv->api_key && !srv->loopback_only)
            fprintf(stderr,
                    "vkllm: serve: WARNING: NO API KEY on %s, which is not a loopback address: anyone who can reach\n"
                    "vkllm: serve: WARNING: port %u can run the model and read its replies. Set --api-key KEY (or\n"
                    "vkllm: serve: WARNING: VKLLM_API_KEY), or listen on 127.0.0.1 (--host).\n",
                    o->host, srv->port);
        fprintf(stderr, "vkllm: serve: listening on http://%s%s%s:%u (%u slots of %u tokens, model %s)\n",
                strchr(o->host, ':') ? "[" : "", o->host, strchr(o->host, ':') ? "]" : "", srv->port, n_slots,
                srv->n_ctx, srv->model_id);
        /* Not MHD_quiesce_daemon: in libmicrohttpd 0.9.75 with epoll it races the daemon's own
         * thread, which also takes the listening socket out of the epoll set once quiesced, and
         * one of them aborts ("Failed to remove listen FD from epoll set": once in a clean
         * clone's make test). Connections made while stopping are answered 503 by the engine. */
        fprintf(stderr, "vkllm: serve: %s: shutting down\n", cli_os_stop_wait());
    }
    serve_engine_stop(&srv->engine); /* running and queued requests end with 503 */
    serve_http_drain(srv, 10);       /* their replies (503, or an error event) go out */
    serve_http_stop(srv);            /* close every connection */
    serve_engine_free(&srv->engine);
    return code;
}

int cli_cmd_serve(int argc, char **argv) {
    struct serve_opts o = {.host = "127.0.0.1",
                           .port = 8080,
                           .parallel = 4,
                           .queue = 64,
                           .max_body = 1048576,
                           .device = -1,
                           .prefill_chunk = 128,
                           .timeout = 60,
                           .http_threads = 2};
    int code = parse_args(argc, argv, &o);
    if (code) return code == 1 ? 0 : code;
    if (!o.api_key) o.api_key = getenv("VKLLM_API_KEY");
    if (o.api_key && !*o.api_key) o.api_key = NULL;

    /* SIGINT and SIGTERM (Windows: Ctrl-C) go to cli_os_stop_wait alone: routed before any thread
     * exists (the Vulkan driver starts some), so every thread inherits the mask (cli/os.h). */
    cli_os_stop_init();

    struct vkllm_session_params sp = {
        .n_ctx = (uint32_t)o.n_ctx, .n_ubatch = (uint32_t)o.ubatch, .type_k = o.type_k, .type_v = o.type_v};
    struct cli_handles h;
    if ((code = cli_open(o.path, (int)o.device, &sp, &h))) return code;
    uint32_t n_slots = (uint32_t)o.parallel;
    vkllm_session_t *slots = calloc(n_slots, sizeof *slots);
    struct serve_server *srv = calloc(1, sizeof *srv);
    vkllm_kv_pool_t pool = NULL;
    struct serve_kv_events *kv_events = NULL;
    if (!slots || !srv) {
        fprintf(stderr, "vkllm: serve: out of memory\n");
        code = 5;
        goto done;
    }
    /* one pool of KV blocks for all slots: the session cli_open made (with a cache of its
     * own) makes way for the slots' sessions on the pool */
    sp.n_ctx = vkllm_session_n_ctx(h.s);
    vkllm_session_free(h.s);
    h.s = NULL;
    struct vkllm_kv_pool_params pp = {.bytes = (uint64_t)(o.kv_cache_mb * 1048576.0),
                                      .n_ctx = sp.n_ctx,
                                      .n_seq = n_slots,
                                      .type_k = sp.type_k,
                                      .type_v = sp.type_v};
    vkllm_status pst = vkllm_kv_pool_init(h.model, &pp, &pool);
    if (pst) {
        code = cli_fail(pst, "cannot allocate the KV cache pool (a smaller --kv-cache-mb, -c or --parallel?)");
        goto done;
    }
    sp.pool = pool;
    for (uint32_t i = 0; i < n_slots; i++) {
        vkllm_status st = vkllm_session_init(h.model, &sp, &slots[i]);
        if (st) {
            code = cli_fail(st, "cannot create a session for every slot (fewer --parallel or a smaller -c?)");
            goto done;
        }
    }
    int t = check_template(h.model, o.tmpl), fallback = 0;
    if (t == 2) {
        code = 2;
        goto done;
    }
    if (t == 1) { /* as llama-server: most UIs only speak chat */
        fprintf(stderr, "vkllm: serve: warning: the model has no chat template: /v1/chat/completions uses chatml "
                        "(--chat-template NAME to choose another)\n");
        o.tmpl = "chatml";
        fallback = 1;
        t = check_template(h.model, o.tmpl);
        if (t) {
            code = 2;
            goto done;
        }
    }
    pthread_mutex_init(&srv->stat_mu, NULL);
    srv->model = h.model;
    srv->model_id = o.alias ? o.alias : base_name(o.path);
    srv->chat_template = o.tmpl;
    srv->has_chat_template = t == 0;
    srv->template_fallback = fallback;
    srv->api_key = o.api_key;
    srv->max_body = (size_t)o.max_body;
    srv->timeout_s = (unsigned)o.timeout;
    srv->max_connections = (unsigned)o.max_connections;
    srv->http_threads = (unsigned)o.http_threads;
    srv->max_client_connections = (unsigned)o.max_client_connections;
    srv->cors_origin = o.cors;
    srv->allowed_hosts = o.allowed_hosts;
    srv->listen_host = o.host;
    srv->n_ctx = sp.n_ctx;
    srv->engine.pool = pool;
    struct vkllm_kv_pool_info pinfo;
    vkllm_kv_pool_get_info(pool, &pinfo);
    srv->kv_bytes = pinfo.bytes;
    for (uint32_t i = 0; i < n_slots; i++) { /* holding no block yet: what each has is its rings */
        struct vkllm_session_memory sm;
        vkllm_session_memory(slots[i], &sm);
        srv->kv_bytes += sm.kv_bytes_rings;
    }
    srv->n_vocab = vkllm_model_n_vocab(h.model);
    struct vkllm_model_info mi;
    vkllm_model_get_info(h.model, &mi);
    srv->n_embd = mi.n_embd;
    srv->pooling = mi.pooling;
    if (o.pooling) serve_pooling(o.pooling, &srv->pooling);
    srv->created = (long long)time(NULL);
    if (o.kv_events) { /* before any request: the router hears of every block */
        char topic[512];
        serve_kv_events_default_topic(topic, sizeof topic, srv->model_id);
        if (serve_kv_events_start(pool, o.kv_events, o.kv_topic ? o.kv_topic : topic, &kv_events)) {
            code = 1;
            pthread_mutex_destroy(&srv->stat_mu);
            goto done;
        }
    }
    code = serve(srv, &o, slots, n_slots, kv_events);
    pthread_mutex_destroy(&srv->stat_mu);
done:
    for (uint32_t i = 0; slots && i < n_slots; i++) vkllm_session_free(slots[i]);
    vkllm_kv_pool_free(pool);        /* after its sessions */
    serve_kv_events_stop(kv_events); /* after the pool: its last event (all blocks cleared) goes too */
    free(slots);
    free(srv);
    return cli_close(&h, code);
}
