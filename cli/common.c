/* common.c - helpers shared by the subcommands: failure lines, exit codes, the log callback. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli.h"

int cli_exit_code(vkllm_status s) {
    switch (s) {
    case VKLLM_STATUS_OK: return 0;
    case VKLLM_STATUS_INVALID_ARGUMENT: return 2;
    case VKLLM_STATUS_BAD_FORMAT:
    case VKLLM_STATUS_NOT_FOUND:
    case VKLLM_STATUS_IO:
    case VKLLM_STATUS_UNSUPPORTED: return 3;
    case VKLLM_STATUS_NO_VULKAN:
    case VKLLM_STATUS_NO_DEVICE: return 4;
    case VKLLM_STATUS_OOM:
    case VKLLM_STATUS_DEVICE_OOM: return 5;
    default: return 1;
    }
}

int cli_fail(vkllm_status s, const char *what) {
    const char *detail = vkllm_last_error();
    if (!detail || !*detail) detail = vkllm_status_str(s);
    if (what && *what) fprintf(stderr, "vkllm: %s: %s (%s)\n", what, detail, vkllm_status_name(s));
    else fprintf(stderr, "vkllm: %s (%s)\n", detail, vkllm_status_name(s));
    return cli_exit_code(s);
}

static void log_stderr(vkllm_log_level level, const char *msg, void *ud) {
    int min = *(int *)ud;
    if ((int)level < min) return;
    static const char *names[] = {"debug", "info", "warning", "error"};
    fprintf(stderr, "vkllm: %s: %s\n", names[level], msg);
}

void cli_log_init(void) {
    static int min_level = VKLLM_LOG_WARN;
    const char *v = getenv("VKLLM_LOG");
    if (v) {
        if (!strcasecmp(v, "debug")) min_level = VKLLM_LOG_DEBUG;
        else if (!strcasecmp(v, "info")) min_level = VKLLM_LOG_INFO;
        else if (!strcasecmp(v, "warn")) min_level = VKLLM_LOG_WARN;
        else if (!strcasecmp(v, "error")) min_level = VKLLM_LOG_ERROR;
    }
    vkllm_log_set(log_stderr, &min_level);
}

int cli_other_option(const char *cmd, const char *arg, void (*usage)(FILE *)) {
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "vkllm: %s: unknown or incomplete option '%s'\n", cmd, arg);
    usage(stderr);
    return 2;
}

int cli_number(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (*end || errno || !(d >= lo && d <= hi)) {
        fprintf(stderr, "vkllm: %s: %s takes a number in [%g, %g], not '%s'\n", cmd, flag, lo, hi, v);
        return -1;
    }
    *out = d;
    return 0;
}

int cli_sampling_arg(const char *cmd, const char *a, const char *v, struct vkllm_generate_params *gp,
                     struct cli_bias *bias) {
    static const struct {
        const char *flag;
        double lo, hi;
    } nums[] = {
        {"-n", -1, 1e9},
        {"--temp", -1e3, 1e3},
        {"--top-k", -1, 1e9},
        {"--top-p", 0, 1},
        {"--min-p", 0, 1},
        {"--repeat-penalty", 0, 1e3},
        {"--repeat-last-n", -1, 1e9},
        {"--frequency-penalty", -1e3, 1e3},
        {"--presence-penalty", -1e3, 1e3},
    };
    if (!strcmp(a, "--seed")) { /* all 64 bits (a double would round the seed a run reports); -1: random */
        if (!v) return -1;
        if (!strcmp(v, "-1")) {
            gp->sampling.has_seed = 0;
            return 2;
        }
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (!*v || *end || errno || strspn(v, "0123456789") != strlen(v)) {
            fprintf(stderr, "vkllm: %s: --seed takes a whole number in [0, 2^64) or -1 (random), not '%s'\n", cmd, v);
            return -1;
        }
        gp->sampling.seed = (uint64_t)s, gp->sampling.has_seed = 1;
        return 2;
    }
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        if (strcmp(a, nums[k].flag)) continue;
        double d;
        if (!v) return -1;
        if (cli_number(cmd, a, v, nums[k].lo, nums[k].hi, &d)) return -1;
        if (k == 5 && d <= 0) { /* as the sampler: a factor, 1 = off */
            fprintf(stderr, "vkllm: %s: --repeat-penalty takes a number in (0, %g], not '%s'\n", cmd, nums[k].hi, v);
            return -1;
        }
        switch (k) {
        case 0: gp->n_predict = (int32_t)d; break;
        case 1: gp->sampling.temperature = (float)d; break;
        case 2: gp->sampling.top_k = (int32_t)d; break;
        case 3: gp->sampling.top_p = (float)d; break;
        case 4: gp->sampling.min_p = (float)d; break;
        case 5: gp->sampling.repeat_penalty = (float)d; break;
        case 6: gp->sampling.penalty_last_n = (int32_t)d; break;
        case 7: gp->sampling.frequency_penalty = (float)d; break;
        case 8: gp->sampling.presence_penalty = (float)d; break;
        }
        return 2;
    }
    if (!strcmp(a, "--samplers")) {
        if (!v) return -1;
        gp->sampling.order = v;
        return 2;
    }
    if (!strcmp(a, "--logit-bias")) {
        if (!v) return -1;
        char *end;
        long id = strtol(v, &end, 10);
        if (*end != ':' || id < 0 || bias->n == CLI_MAX_BIAS) {
            fprintf(stderr, "vkllm: %s: --logit-bias takes ID:VALUE (at most %d), not '%s'\n", cmd, CLI_MAX_BIAS, v);
            return -1;
        }
        const char *val = end + 1;
        float f = (!strcmp(val, "-inf") || !strcmp(val, "-infinity")) ? -INFINITY : strtof(val, &end);
        if (f != -INFINITY && *end) {
            fprintf(stderr, "vkllm: %s: --logit-bias value '%s' is not a number\n", cmd, val);
            return -1;
        }
        bias->tokens[bias->n] = (int32_t)id;
        bias->values[bias->n++] = f;
        gp->sampling.bias_tokens = bias->tokens;
        gp->sampling.bias_values = bias->values;
        gp->sampling.n_bias = bias->n;
        return 2;
    }
    return 0;
}

const char *cli_sampling_help(void) {
    return "sampling (defaults as llama.cpp):\n"
           "  -n N                   tokens to generate at most (default: until EOS or a full context)\n"
           "  --temp T               temperature; 0 = greedy (default 0.8)\n"
           "  --top-k N              0 = off (default 40)\n"
           "  --top-p P              1 = off (default 0.95)\n"
           "  --min-p P              0 = off (default 0.05)\n"
           "  --repeat-penalty F     1 = off (default 1.0)\n"
           "  --repeat-last-n N      tokens the penalties look back over (default 64, -1 = all)\n"
           "  --frequency-penalty F  0 = off\n"
           "  --presence-penalty F   0 = off\n"
           "  --seed N               fixed seed, 0 .. 2^64-1 (default, or -1: picked and reported)\n"
           "  --logit-bias ID:V      add V to token ID's logit (-inf bans it); may be repeated\n"
           "  --samplers LIST        stage order after bias and penalties, e.g. top_k;top_p;min_p;temperature\n"
           "                         (the default); stages left out do not run\n";
}

static void progress_bar(float f, void *ud) {
    int *last = ud;
    int pct = (int)(f * 100.0f + 0.5f);
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\rloading model: %3d%%%s", pct, pct >= 100 ? "\r                    \r" : "");
    fflush(stderr);
}

struct vkllm_model_params cli_model_params(void) {
    static int last = -1;
    struct vkllm_model_params p = vkllm_model_params_default();
    if (isatty(2)) {
        p.progress = progress_bar;
        p.progress_user_data = &last;
    }
    return p;
}

struct cli_split cli_split;

/* A comma-separated list of at most VKLLM_MAX_DEVICES numbers in [lo, hi]; -1 when bad. */
static int number_list(const char *v, double lo, double hi, double *out, uint32_t *n) {
    *n = 0;
    for (const char *p = v;;) {
        char *end;
        errno = 0;
        double d = strtod(p, &end);
        if (end == p || errno || !(d >= lo && d <= hi) || *n == VKLLM_MAX_DEVICES || (*end && *end != ',')) return -1;
        out[(*n)++] = d;
        if (!*end) return 0;
        p = end + 1;
    }
}

int cli_split_arg(const char *cmd, const char *a, const char *v) {
    double d[VKLLM_MAX_DEVICES];
    uint32_t n;
    if (!strcmp(a, "--devices")) {
        if (!v || number_list(v, 0, 1e4, d, &n) || n < 1) {
            fprintf(stderr, "vkllm: %s: --devices takes device indices, e.g. 0,1 (at most %d)\n", cmd,
                    VKLLM_MAX_DEVICES);
            return -1;
        }
        for (uint32_t i = 0; i < n; i++) cli_split.dev[i] = (int)d[i];
        cli_split.n = n;
        return 2;
    }
    if (!strcmp(a, "--tensor-split") || !strcmp(a, "-ts")) {
        if (!v || number_list(v, 0, 1e9, d, &n)) {
            fprintf(stderr, "vkllm: %s: --tensor-split takes shares >= 0, e.g. 3,1 (at most %d)\n", cmd,
                    VKLLM_MAX_DEVICES);
            return -1;
        }
        for (uint32_t i = 0; i < n; i++) cli_split.share[i] = (float)d[i];
        cli_split.n_share = n;
        return 2;
    }
    if (!strcmp(a, "--split-mode") || !strcmp(a, "-sm")) {
        if (v && (!strcmp(v, "layer") || !strcmp(v, "none"))) {
            cli_split.none = !strcmp(v, "none");
            return 2;
        }
        fprintf(stderr, "vkllm: %s: --split-mode takes layer or none%s\n", cmd,
                v && !strcmp(v, "row") ? " (row, llama.cpp's tensor split, is not supported)" : "");
        return -1;
    }
    return 0;
}

int cli_open(const char *path, int device, const struct vkllm_session_params *sp, struct cli_handles *h) {
    memset(h, 0, sizeof *h);
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    cp.device = cli_split.n ? cli_split.dev[0] : device;
    struct vkllm_model_params mp = cli_model_params();
    const uint32_t n_dev = cli_split.n ? cli_split.n : 1;
    if (cli_split.n_share && cli_split.n_share != n_dev) {
        fprintf(stderr, "vkllm: --tensor-split gives %u shares for %u devices\n", cli_split.n_share, n_dev);
        return 2;
    }
    vkllm_status st = vkllm_ctx_init(&cp, &h->ctx);
    if (st) return cli_close(h, cli_fail(st, "cannot open the Vulkan device"));
    if (cli_split.n > 1 && !cli_split.none) { /* a layer split: every device its context */
        mp.n_devices = cli_split.n;
        mp.devices[0] = h->ctx;
        for (uint32_t i = 1; i < cli_split.n; i++) {
            cp.device = cli_split.dev[i];
            if ((st = vkllm_ctx_init(&cp, &h->more[i]))) {
                char what[64];
                snprintf(what, sizeof what, "cannot open device %d of --devices", cli_split.dev[i]);
                return cli_close(h, cli_fail(st, what));
            }
            mp.devices[i] = h->more[i];
        }
        for (uint32_t i = 0; i < cli_split.n_share; i++) mp.tensor_split[i] = cli_split.share[i];
    }
    if ((st = vkllm_model_load(h->ctx, path, &mp, &h->model)))
        return cli_close(h, cli_fail(st, "cannot load the model"));
    if ((st = vkllm_session_init(h->model, sp, &h->s))) return cli_close(h, cli_fail(st, "cannot create a session"));
    return 0;
}

int cli_close(struct cli_handles *h, int code) {
    vkllm_session_free(h->s);
    vkllm_model_free(h->model);
    uint64_t n = h->ctx ? vkllm_ctx_validation_messages(h->ctx) : 0;
    for (int i = 0; i < VKLLM_MAX_DEVICES; i++) n += h->more[i] ? vkllm_ctx_validation_messages(h->more[i]) : 0;
    if (n && !code) {
        fprintf(stderr, "vkllm: %llu Vulkan validation message(s) were reported\n", (unsigned long long)n);
        code = 1;
    }
    for (int i = 0; i < VKLLM_MAX_DEVICES; i++) vkllm_ctx_free(h->more[i]);
    vkllm_ctx_free(h->ctx);
    memset(h, 0, sizeof *h);
    return code;
}

volatile sig_atomic_t cli_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    cli_interrupted = 1;
}

void cli_catch_sigint(int on) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on ? on_sigint : SIG_DFL; /* no SA_RESTART: a blocking read returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_json_add(struct cJSON *o, const struct cli_json_field *f, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (f[i].is_bool) cJSON_AddBoolToObject(o, f[i].key, f[i].value != 0);
        else cJSON_AddNumberToObject(o, f[i].key, f[i].value);
    }
}

static void stats_json(const struct vkllm_generate_stats *s) {
    cJSON *o = cJSON_CreateObject();
    CLI_JSON_ADD(o, CLI_NUM("n_prompt", s->n_prompt), CLI_NUM("n_prompt_cached", s->n_prompt_cached),
                 CLI_NUM("n_generated", s->n_generated), CLI_NUM("ttft_ms", s->ttft_ms),
                 CLI_NUM("prefill_ms", s->prefill_ms), CLI_NUM("prefill_tps", s->prefill_tps),
                 CLI_NUM("itl_mean_ms", s->itl_mean_ms), CLI_NUM("itl_p50_ms", s->itl_p50_ms),
                 CLI_NUM("itl_p90_ms", s->itl_p90_ms), CLI_NUM("itl_max_ms", s->itl_max_ms),
                 CLI_NUM("decode_tps", s->decode_tps), CLI_NUM("total_ms", s->total_ms),
                 CLI_NUM("kv_bytes_used", s->kv_bytes_used), CLI_NUM("kv_bytes_allocated", s->kv_bytes_allocated),
                 CLI_NUM("kv_bytes_per_token", s->kv_bytes_per_token), CLI_NUM("kv_bytes_cached", s->kv_bytes_cached),
                 CLI_NUM("device_bytes", s->device_bytes));
    char seed[24]; /* all 64 bits: a double would round it */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)s->seed);
    cJSON_AddRawToObject(o, "seed", seed);
    cJSON_AddStringToObject(o, "stop_reason", vkllm_stop_reason_str(s->stop_reason));
    char *t = cJSON_PrintUnformatted(o);
    if (t) fprintf(stderr, "%s\n", t);
    cJSON_free(t);
    cJSON_Delete(o);
}

void cli_print_stats(const struct vkllm_generate_stats *s, enum cli_stats_style style) {
    if (style == CLI_STATS_JSON) {
        stats_json(s);
        return;
    }
    if (style == CLI_STATS_LINE) {
        fprintf(stderr,
                "[%s; prompt %u tokens, reply %u tokens; %u prompt tokens cached; ttft %.1f ms; prefill %.1f t/s; "
                "decode %.2f t/s; itl p50 %.1f ms p90 %.1f ms; KV %.2f of %.2f MiB, %.2f MiB cached, %.2f KiB per "
                "token]\n",
                vkllm_stop_reason_str(s->stop_reason), s->n_prompt, s->n_generated, s->n_prompt_cached, s->ttft_ms,
                s->prefill_tps, s->decode_tps, s->itl_p50_ms, s->itl_p90_ms, s->kv_bytes_used / 1048576.0,
                s->kv_bytes_allocated / 1048576.0, s->kv_bytes_cached / 1048576.0, s->kv_bytes_per_token / 1024.0);
        return;
    }
    fprintf(stderr, "\n--\n");
    fprintf(stderr, "stop: %s; prompt %u tokens (%u of them cached), generated %u tokens, seed %llu\n",
            vkllm_stop_reason_str(s->stop_reason), s->n_prompt, s->n_prompt_cached, s->n_generated,
            (unsigned long long)s->seed);
    fprintf(stderr, "time to first token %.1f ms; prefill %.1f ms (%.1f tokens/s)\n", s->ttft_ms, s->prefill_ms,
            s->prefill_tps);
    fprintf(stderr, "inter-token latency mean %.1f ms, p50 %.1f, p90 %.1f, max %.1f; decode %.2f tokens/s\n",
            s->itl_mean_ms, s->itl_p50_ms, s->itl_p90_ms, s->itl_max_ms, s->decode_tps);
    fprintf(stderr,
            "total %.1f ms; KV cache %.2f of %.2f MiB in use (%.2f KiB per token, %.2f MiB of it reused from the "
            "cache; %.2f MiB of released blocks cached); device memory %.2f MiB\n",
            s->total_ms, s->kv_bytes_used / 1048576.0, s->kv_bytes_allocated / 1048576.0,
            s->kv_bytes_per_token / 1024.0, (double)s->n_prompt_cached * s->kv_bytes_per_token / 1048576.0,
            s->kv_bytes_cached / 1048576.0, s->device_bytes / 1048576.0);
}

int cli_kv_types(const char *list, int *out, int *n) {
    *n = 0;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int t = len == 3 && !strncmp(p, "f16", 3)    ? VKLLM_KV_F16
                : len == 4 && !strncmp(p, "q8_0", 4) ? VKLLM_KV_Q8_0
                                                     : -1;
        if (t < 0 || *n == 2) return -1;
        out[(*n)++] = t;
        if (!e) break;
        p = e + 1;
    }
    return *n ? 0 : -1;
}

int cli_kv_arg(const char *cmd, const char *a, const char *v, struct vkllm_session_params *sp) {
    int k = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k"), vv = !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v");
    if (!k && !vv) return cli_split_arg(cmd, a, v);
    int t[2], n;
    if (!v || cli_kv_types(v, t, &n) || n != 1) {
        fprintf(stderr, "vkllm: %s: %s takes f16 or q8_0\n", cmd, a);
        return -1;
    }
    if (k) sp->type_k = t[0];
    else sp->type_v = t[0];
    return 2;
}

cJSON *cli_memory_json(const struct vkllm_memory_breakdown *m) {
    cJSON *o = cJSON_CreateObject();
    const uint64_t *side[2] = {m->device, m->host};
    for (int h = 0; h < 2; h++) {
        cJSON *d = cJSON_AddObjectToObject(o, h ? "host" : "device");
        uint64_t total = 0;
        for (int u = 0; u < VKLLM_MEMORY_USE_COUNT; u++) {
            cJSON_AddNumberToObject(d, vkllm_memory_use_name((enum vkllm_memory_use)u), (double)side[h][u]);
            total += side[h][u];
        }
        cJSON_AddNumberToObject(d, "total", (double)total);
    }
    return o;
}

size_t cli_devices_text(char *buf, size_t cap, const char *prefix, vkllm_model_t model, vkllm_session_t s,
                        const double *ms0, uint64_t tokens) {
    uint32_t n = vkllm_model_n_devices(model);
    double ms[VKLLM_MAX_DEVICES], all = 0;
    size_t len = 0;
    if (cap) buf[0] = 0;
    for (uint32_t i = 0; n > 1 && i < n; i++) all += ms[i] = vkllm_session_device_ms(s, i) - (ms0 ? ms0[i] : 0.0);
    for (uint32_t i = 0; n > 1 && i < n && len < cap; i++) {
        vkllm_ctx_t ctx;
        uint32_t l0, l1;
        if (vkllm_model_device(model, i, &ctx, &l0, &l1)) continue;
        len += (size_t)snprintf(buf + len, cap - len,
                                "%sdevice %u (%s): layers %u-%u, %.1f MiB device memory, %.1f ms (%.0f%%)", prefix, i,
                                vkllm_ctx_device(ctx)->name, l0, l1 - 1, vkllm_ctx_device_memory_used(ctx) / 1048576.0,
                                ms[i], all > 0 ? 100.0 * ms[i] / all : 0.0);
        if (tokens && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, ", %.3f ms per token", ms[i] / (double)tokens);
        if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "\n");
    }
    return len < cap ? len : cap ? cap - 1 : 0;
}

void cli_print_devices(FILE *out, const char *prefix, vkllm_model_t model, vkllm_session_t s, const double *ms0,
                       uint64_t tokens) {
    char buf[2048];
    cli_devices_text(buf, sizeof buf, prefix, model, s, ms0, tokens);
    fputs(buf, out);
}
