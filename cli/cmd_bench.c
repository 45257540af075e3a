/* cmd_bench.c - `vkllm bench`: prefill (pp) and decode (tg) tokens per second, with the same
 * definitions as llama-bench so the numbers compare: pp = n_prompt tokens in one prefill at depth
 * n_depth; tg = n_gen tokens decoded one at a time (logits read back each step) at depth n_depth.
 * Each test runs once to warm up (pipelines are compiled at first use), then -r times.
 *
 * --profile: one decode step and one prefill micro-batch recorded with a GPU timestamp after
 * every dispatch (vkllm_session_set_profile), summed per kernel label with the bytes and flops
 * each dispatch declares (struct vkllm_dispatch_profile), beside the wall clock of the same step
 * and of unprofiled ones. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "profile.h"
#include "svg.h"

#define MAX_LIST 16
#define MAXI(a, b) ((a) > (b) ? (a) : (b))

struct opts {
    const char *path;
    int devices[MAX_LIST];
    int n_devices; /* 0: all */
    int pp[MAX_LIST], n_pp;
    int tg[MAX_LIST], n_tg;
    int depth[MAX_LIST], n_depth;
    int reps;
    int ubatch;
    int ctk[2], n_ctk, ctv[2], n_ctv; /* KV cache types (enum vkllm_kv_type), each an axis */
    const char *format;               /* md, csv, json, jsonl */
    int greedy;                       /* tg through the on-device argmax instead of reading logits */
    int profile;                      /* --profile */
    double peak_gbps;                 /* --peak-gbps (0: not given) */
};

struct result {
    struct vkllm_device_info dev; /* copied: the context is gone when rows are printed */
    struct vkllm_model_info mi;
    int n_prompt, n_gen, n_depth;
    double samples[64];
    int n_samples;
    double avg, stddev;
    char time[32];                     /* test_time: when the test started, ISO 8601 UTC */
    uint64_t kv_per_token;             /* KV cache bytes one more position of context costs */
    uint64_t kv_bytes;                 /* the session's KV cache, allocated */
    struct vkllm_memory_breakdown mem; /* the context's memory by use after the test */
    int type_k, type_v;                /* enum vkllm_kv_type */
};

static const char *kv_name(int t) { return t == VKLLM_KV_Q8_0 ? "q8_0" : "f16"; }

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkllm bench -m FILE [-p N,..] [-n N,..] [-d N,..] [-r N] [--device N,..]\n"
            "                   [--ubatch N] [-o md|csv|json|jsonl|svg|html] [--greedy] [--profile [--peak-gbps X]]\n"
            "\n"
            "Prefill (pp) and decode (tg) tokens per second, defined as llama-bench defines them.\n"
            "\n"
            "  -m FILE          GGUF model\n"
            "  -p N,..          prompt lengths for prefill tests (default 512; 0 to skip)\n"
            "  -n N,..          token counts for decode tests (default 128; 0 to skip)\n"
            "  -d N,..          context depth: tokens already in the KV cache (default 0)\n"
            "  -r N             repetitions after one warm-up run (default 5)\n"
            "  --device N,..    Vulkan devices to run on (default: all usable ones)\n"
            "  --devices N,..   one model split by layers over these devices (with --split-mode, --tensor-split\n"
            "                   as run's): each row is the split, and a line per device gives its layers, memory\n"
            "                   and share of the time (docs/devices.md)\n"
            "  --split-mode M, --tensor-split LIST  see vkllm run --help\n"
            "  --ubatch N       prefill micro-batch size (default 512)\n"
            "  -ctk, --cache-type-k LIST  KV cache type of K: f16, q8_0 or both as an axis (default f16)\n"
            "  -ctv, --cache-type-v LIST  ... of V\n"
            "  -o FORMAT        md (default), csv, json or jsonl (json uses llama-bench's field names), or\n"
            "                   charts drawn by vkllm: svg (one document) or html (one page, no scripts):\n"
            "                   tokens/s by depth, KV cache by context, and with --profile each kernel's\n"
            "                   GB/s (against --peak-gbps)\n"
            "  --greedy         decode through the on-device argmax (reads back one id per token)\n"
            "  --profile        also time every kernel (GPU timestamps) of one decode step at the first\n"
            "                   depth and of one prefill micro-batch (the first -p, at most --ubatch\n"
            "                   tokens): calls, GPU ms, share, bytes, GB/s, GFLOP/s per kernel, their sum\n"
            "                   against the step's wall clock, and decode's effective weight bandwidth\n"
            "  --peak-gbps X    the device's memory bandwidth in GB/s, to put that bandwidth against\n"
            "                   (Vulkan reports none)\n"
            "\n"
            "Decode rows also report the effective weight bandwidth: weight bytes one decode step\n"
            "reads times tokens per second.\n");
}

static int parse_list(const char *s, int *out, int *n) {
    *n = 0;
    while (*s) {
        if (*n == MAX_LIST) return -1; /* more values than a run takes: refused, not cut short */
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1000000) return -1;
        out[(*n)++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return *n ? 0 : -1;
}

/* One timed run: the cache filled to depth (once per depth, as llama-bench keeps the filled state:
 * *filled is the depth the cache's first positions hold, -1 none; a later run cuts back to it),
 * then the test itself. Returns tokens per second. */
static vkllm_status run_once(vkllm_session_t s, uint32_t n_vocab, int n_prompt, int n_gen, int depth, int greedy,
                             int *filled, double *tps) {
    int32_t *toks = malloc(sizeof *toks * (size_t)(MAXI(MAXI(n_prompt, depth), 1) + 1));
    if (!toks) return VKLLM_STATUS_OOM;
    vkllm_status st;
    if (*filled == depth && vkllm_session_n_past(s) >= (uint32_t)depth) st = vkllm_session_truncate(s, (uint32_t)depth);
    else {
        *filled = -1;
        st = vkllm_session_truncate(s, 0);
        if (!st && depth > 0) {
            cli_fill_tokens(toks, depth, n_vocab, 7);
            st = vkllm_session_eval(s, toks, (uint32_t)depth, 0);
        }
        if (!st) *filled = depth;
    }
    double t0 = cli_now();
    if (!st && n_prompt > 0) {
        cli_fill_tokens(toks, n_prompt, n_vocab, 11);
        st = vkllm_session_eval(s, toks, (uint32_t)n_prompt, 0);
    } else if (!st) {
        int32_t tok = 3;
        for (int i = 0; i < n_gen && !st; i++) {
            if (greedy) st = vkllm_session_decode_greedy(s, tok, &tok);
            else st = vkllm_session_eval(s, &tok, 1, 0);
        }
    }
    double t = cli_now() - t0;
    free(toks);
    *tps = (n_prompt > 0 ? n_prompt : n_gen) / t;
    return st;
}

static void stats(struct result *r) {
    double s = 0, ss = 0;
    for (int i = 0; i < r->n_samples; i++) s += r->samples[i];
    r->avg = s / r->n_samples;
    for (int i = 0; i < r->n_samples; i++) ss += (r->samples[i] - r->avg) * (r->samples[i] - r->avg);
    r->stddev = r->n_samples > 1 ? sqrt(ss / (r->n_samples - 1)) : 0;
}

static const char *test_name(const struct result *r, char *buf, size_t n) {
    if (r->n_prompt) snprintf(buf, n, "pp%d", r->n_prompt);
    else snprintf(buf, n, "tg%d", r->n_gen);
    if (r->n_depth) snprintf(buf + strlen(buf), n - strlen(buf), " @ d%d", r->n_depth);
    return buf;
}

/* The context's memory by use, as {"device": {"weights": bytes, ...}, "host": {...}}: every
 * buffer counted once, "empty" the blocks' bytes no buffer holds. */

static double bandwidth_gbps(const struct result *r) {
    return r->n_gen ? r->avg * (double)r->mi.decode_bytes_per_token / 1e9 : 0;
}

static cJSON *row_json(const struct result *r, const struct opts *o) {
    char api[32];
    snprintf(api, sizeof api, "%u.%u.%u", r->dev.api_version >> 22, (r->dev.api_version >> 12) & 0x3ff,
             r->dev.api_version & 0xfff);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "build_commit", vkllm_git_commit());
    cJSON_AddStringToObject(j, "vkllm_version", vkllm_version());
    cJSON_AddStringToObject(j, "backends", "Vulkan");
    cJSON_AddStringToObject(j, "gpu_info", r->dev.name);
    cJSON_AddStringToObject(j, "gpu_vendor", r->dev.vendor);
    cJSON_AddStringToObject(j, "gpu_driver", r->dev.driver_info);
    cJSON_AddStringToObject(j, "vulkan_api_version", api);
    cJSON_AddStringToObject(j, "model_filename", o->path);
    cJSON_AddStringToObject(j, "model_type", r->mi.name[0] ? r->mi.name : r->mi.arch);
    cJSON_AddNumberToObject(j, "model_size", (double)r->mi.file_bytes);
    cJSON_AddNumberToObject(j, "model_n_params", (double)r->mi.n_params);
    cJSON_AddStringToObject(j, "tensor_types", r->mi.type_summary);
    cJSON_AddNumberToObject(j, "n_batch", o->ubatch);
    cJSON_AddNumberToObject(j, "n_ubatch", o->ubatch);
    cJSON_AddStringToObject(j, "type_k", kv_name(r->type_k));
    cJSON_AddStringToObject(j, "type_v", kv_name(r->type_v));
    cJSON_AddNumberToObject(j, "kv_bytes", (double)r->kv_bytes);
    cJSON_AddNumberToObject(j, "kv_bytes_per_token", (double)r->kv_per_token);
    cJSON_AddNumberToObject(j, "n_prompt", r->n_prompt);
    cJSON_AddNumberToObject(j, "n_gen", r->n_gen);
    cJSON_AddNumberToObject(j, "n_depth", r->n_depth);
    cJSON_AddNumberToObject(j, "avg_ts", r->avg);
    cJSON_AddNumberToObject(j, "stddev_ts", r->stddev);
    cJSON_AddStringToObject(j, "test_time", r->time);
    /* llama-bench's nanoseconds per run: tokens / (tokens/s) */
    double tokens = r->n_prompt + r->n_gen, ns[64], avg_ns = 0, var_ns = 0;
    for (int i = 0; i < r->n_samples; i++) avg_ns += (ns[i] = tokens / r->samples[i] * 1e9) / r->n_samples;
    for (int i = 0; i < r->n_samples; i++) var_ns += (ns[i] - avg_ns) * (ns[i] - avg_ns);
    cJSON_AddNumberToObject(j, "avg_ns", avg_ns);
    cJSON_AddNumberToObject(j, "stddev_ns", r->n_samples > 1 ? sqrt(var_ns / (r->n_samples - 1)) : 0);
    cJSON *s = cJSON_AddArrayToObject(j, "samples_ns");
    for (int i = 0; i < r->n_samples; i++) cJSON_AddItemToArray(s, cJSON_CreateNumber(ns[i]));
    s = cJSON_AddArrayToObject(j, "samples_ts");
    for (int i = 0; i < r->n_samples; i++) cJSON_AddItemToArray(s, cJSON_CreateNumber(r->samples[i]));
    cJSON_AddItemToObject(j, "memory", cli_memory_json(&r->mem));
    if (r->n_gen) {
        cJSON_AddNumberToObject(j, "decode_bytes_per_token", (double)r->mi.decode_bytes_per_token);
        cJSON_AddNumberToObject(j, "effective_gbps", bandwidth_gbps(r));
    }
    return j;
}

static const char *human_bytes(uint64_t b, char *buf, size_t n) {
    if (b >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", b / 1073741824.0);
    else snprintf(buf, n, "%.2f MiB", b / 1048576.0);
    return buf;
}

/* Small byte counts (a KV position): B, KiB or MiB. */
static const char *small_bytes(uint64_t b, char *buf, size_t n) {
    if (b < 1024) snprintf(buf, n, "%llu B", (unsigned long long)b);
    else if (b < (1ull << 20)) snprintf(buf, n, "%.1f KiB", b / 1024.0);
    else snprintf(buf, n, "%.2f MiB", b / 1048576.0);
    return buf;
}

static const char *human_count(uint64_t c, char *buf, size_t n) {
    if (c >= 1000000000ull) snprintf(buf, n, "%.2f B", c / 1e9);
    else if (c >= 1000000ull) snprintf(buf, n, "%.2f M", c / 1e6);
    else snprintf(buf, n, "%.2f K", c / 1e3);
    return buf;
}

/* --- profile output ------------------------------------------------------------------------- */

static double tokens_per_s(const struct profile *p) {
    return p->step_ms_plain > 0 ? p->n_tokens * 1e3 / p->step_ms_plain : 0;
}

/* decode: weight bytes the matvec kernels read per token times tokens/s of an unprofiled step */
static double weight_gbps(const struct profile *p) { return (double)p->matvec_weight_bytes * tokens_per_s(p) / 1e9; }

static const char *profile_name(const struct profile *p, char *buf, size_t n) {
    if (p->decode) snprintf(buf, n, "decode step at depth %d", p->pos0);
    else snprintf(buf, n, "prefill micro-batch of %d tokens at depth %d", p->n_tokens, p->pos0);
    return buf;
}

static void print_profile_md(const struct profile *p, const struct opts *o) {
    char name[96];
    printf("\n%s, %s: %d dispatches, %d behind a barrier\n\n", p->dev.name, profile_name(p, name, sizeof name),
           p->n_dispatch, p->n_barriers);
    printf(
        "| kernel | calls | GPU ms | share | MB read | MB written | GB/s | GFLOP | GFLOP/s | barriers | variants |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (int i = 0; i < p->n_k; i++) {
        const struct kernel *k = &p->k[i];
        printf("| %s | %d | %.3f | %.1f%% |", k->label, k->calls, k->ns * 1e-6,
               p->sum_ms > 0 ? 100 * k->ns * 1e-6 / p->sum_ms : 0);
        if (k->no_cost == k->calls) printf(" n/a | n/a | n/a | n/a | n/a |");
        else
            printf(" %.3f | %.3f | %.2f | %.4f | %.2f |", k->cost.bytes_read / 1e6, k->cost.bytes_written / 1e6,
                   cli_k_gbps(k), k->cost.flops / 1e9, cli_k_gflops(k));
        printf(" %d |", k->barriers);
        for (int v = 0; v < k->n_shaders && v < MAX_SHADERS; v++) printf("%s%s", v ? ", " : " ", k->shaders[v]);
        printf("%s |\n", k->n_shaders > MAX_SHADERS ? ", ..." : "");
    }
    printf("\nkernel sum %.3f ms; wall clock of the same step %.3f ms (sum/step %.3f), of an unprofiled step %.3f ms",
           p->sum_ms, p->step_ms, p->step_ms > 0 ? p->sum_ms / p->step_ms : 0, p->step_ms_plain);
    if (p->n_plain > 1) printf(" (median of %d)", p->n_plain);
    printf("\n");
    for (int i = 0; i < p->n_k; i++)
        if (p->k[i].no_cost)
            printf("%s: %d of %d calls declare no cost (bytes and flops not counted)\n", p->k[i].label, p->k[i].no_cost,
                   p->k[i].calls);
    if (!p->decode) return;
    printf("weights read by the matvec kernels: %.2f MB per token (the model's matrices as the device holds them: "
           "%.2f MB); x %.3f tokens/s "
           "(unprofiled) = %.2f GB/s effective weight bandwidth",
           p->matvec_weight_bytes / 1e6, p->mi.decode_bytes_per_token / 1e6, tokens_per_s(p), weight_gbps(p));
    if (o->peak_gbps > 0)
        printf(", %.1f%% of %.1f GB/s (--peak-gbps)\n", 100 * weight_gbps(p) / o->peak_gbps, o->peak_gbps);
    else printf("; no peak to compare with (--peak-gbps not given, the device reports none)\n");
}

static cJSON *profile_json(const struct profile *p, const struct opts *o) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "profile", p->decode ? "decode" : "prefill");
    cJSON_AddStringToObject(j, "build_commit", vkllm_git_commit());
    cJSON_AddStringToObject(j, "vkllm_version", vkllm_version());
    cJSON_AddStringToObject(j, "gpu_info", p->dev.name);
    cJSON_AddStringToObject(j, "model_filename", o->path);
    cJSON_AddNumberToObject(j, "n_tokens", p->n_tokens);
    cJSON_AddNumberToObject(j, "n_depth", p->pos0);
    cJSON_AddNumberToObject(j, "n_dispatch", p->n_dispatch);
    cJSON_AddNumberToObject(j, "n_barriers", p->n_barriers);
    cJSON_AddNumberToObject(j, "kernel_sum_ms", p->sum_ms);
    cJSON_AddNumberToObject(j, "step_ms", p->step_ms);
    cJSON_AddNumberToObject(j, "step_ms_unprofiled", p->step_ms_plain);
    cJSON_AddNumberToObject(j, "sum_over_step", p->step_ms > 0 ? p->sum_ms / p->step_ms : 0);
    cJSON *arr = cJSON_AddArrayToObject(j, "kernels");
    for (int i = 0; i < p->n_k; i++) {
        const struct kernel *k = &p->k[i];
        cJSON *kj = cJSON_CreateObject();
        cJSON_AddStringToObject(kj, "kernel", k->label);
        cJSON_AddNumberToObject(kj, "calls", k->calls);
        cJSON_AddNumberToObject(kj, "gpu_ms", k->ns * 1e-6);
        cJSON_AddNumberToObject(kj, "share", p->sum_ms > 0 ? k->ns * 1e-6 / p->sum_ms : 0);
        cJSON_AddNumberToObject(kj, "calls_without_cost", k->no_cost);
        cJSON_AddNumberToObject(kj, "bytes_read", (double)k->cost.bytes_read);
        cJSON_AddNumberToObject(kj, "bytes_written", (double)k->cost.bytes_written);
        cJSON_AddNumberToObject(kj, "weight_bytes", (double)k->cost.weight_bytes);
        cJSON_AddNumberToObject(kj, "flops", (double)k->cost.flops);
        cJSON_AddNumberToObject(kj, "gbps", cli_k_gbps(k));
        cJSON_AddNumberToObject(kj, "gflops", cli_k_gflops(k));
        cJSON_AddNumberToObject(kj, "barriers", k->barriers);
        cJSON *sh = cJSON_AddArrayToObject(kj, "shaders");
        for (int v = 0; v < k->n_shaders && v < MAX_SHADERS; v++)
            cJSON_AddItemToArray(sh, cJSON_CreateString(k->shaders[v]));
        cJSON_AddItemToArray(arr, kj);
    }
    if (p->decode) {
        cJSON_AddNumberToObject(j, "matvec_weight_bytes", (double)p->matvec_weight_bytes);
        cJSON_AddNumberToObject(j, "decode_bytes_per_token", (double)p->mi.decode_bytes_per_token);
        cJSON_AddNumberToObject(j, "tokens_per_s", tokens_per_s(p));
        cJSON_AddNumberToObject(j, "effective_weight_gbps", weight_gbps(p));
        if (o->peak_gbps > 0) {
            cJSON_AddNumberToObject(j, "peak_gbps", o->peak_gbps);
            cJSON_AddStringToObject(j, "peak_source", "--peak-gbps");
            cJSON_AddNumberToObject(j, "peak_share", weight_gbps(p) / o->peak_gbps);
        } else {
            cJSON_AddNullToObject(j, "peak_gbps");
            cJSON_AddNullToObject(j, "peak_share");
        }
    }
    return j;
}

/* JSON output: j goes into arr (json), or out as one line when arr is NULL (jsonl). */
static void put_json(cJSON *j, cJSON *arr) {
    if (arr) {
        cJSON_AddItemToArray(arr, j);
        return;
    }
    char *s = cJSON_PrintUnformatted(j);
    if (s) printf("%s\n", s);
    cJSON_free(s);
    cJSON_Delete(j);
}

static void print_profiles_csv(const struct profile *ps, int n) {
    printf("\nprofile,device,n_tokens,n_depth,kernel,calls,gpu_ms,share,bytes_read,bytes_written,weight_bytes,flops,"
           "gbps,gflops,kernel_sum_ms,step_ms,step_ms_unprofiled\n");
    for (int i = 0; i < n; i++) {
        const struct profile *p = &ps[i];
        for (int j = 0; j < p->n_k; j++) {
            const struct kernel *k = &p->k[j];
            printf("%s,\"%s\",%d,%d,%s,%d,%.6f,%.6f,%llu,%llu,%llu,%llu,%.4f,%.4f,%.6f,%.6f,%.6f\n",
                   p->decode ? "decode" : "prefill", p->dev.name, p->n_tokens, p->pos0, k->label, k->calls,
                   k->ns * 1e-6, p->sum_ms > 0 ? k->ns * 1e-6 / p->sum_ms : 0, (unsigned long long)k->cost.bytes_read,
                   (unsigned long long)k->cost.bytes_written, (unsigned long long)k->cost.weight_bytes,
                   (unsigned long long)k->cost.flops, cli_k_gbps(k), cli_k_gflops(k), p->sum_ms, p->step_ms,
                   p->step_ms_plain);
        }
    }
}

/* -o svg / html: tokens/s by depth (a line per device and test), the KV cache by context, and
 * with --profile each kernel's GB/s (a bar per device, its peak dashed when known). */
#define MAX_SERIES 32
static void print_charts(FILE *f, const struct result *rs, int n, const struct profile *ps, int n_ps,
                         const struct opts *o) {
    static double xs[MAX_SERIES][MAX_LIST], ys[MAX_SERIES][MAX_LIST];
    static char names[MAX_SERIES][300];
    for (int kind = 0; kind < 3; kind++) { /* tg, pp, KV */
        struct svg_series ss[MAX_SERIES];
        int m = 0;
        for (int i = 0; i < n; i++) {
            const struct result *r = &rs[i];
            if ((kind == 0 && !r->n_gen) || (kind == 1 && !r->n_prompt)) continue;
            char key[300];
            snprintf(key, sizeof key, "%s %s%d", r->dev.name,
                     kind == 2  ? ""
                     : r->n_gen ? "tg"
                                : "pp",
                     kind == 2  ? 0
                     : r->n_gen ? r->n_gen
                                : r->n_prompt);
            if (kind == 2) snprintf(key, sizeof key, "%s", r->dev.name);
            int j = 0;
            while (j < m && strcmp(names[j], key)) j++;
            if (j == m) {
                if (m == MAX_SERIES) continue;
                snprintf(names[m], sizeof names[m], "%s", key);
                ss[m] = (struct svg_series){names[m], 0, xs[m], ys[m]};
                m++;
            }
            int dup = 0; /* KV: one point per depth */
            for (int k = 0; k < ss[j].n; k++) dup |= xs[j][k] == r->n_depth;
            if (dup || ss[j].n == MAX_LIST) continue;
            xs[j][ss[j].n] = r->n_depth;
            ys[j][ss[j].n++] = kind == 2 ? (double)r->kv_per_token * r->n_depth / 1048576 : r->avg;
        }
        if (!m) continue;
        svg_line_chart(f,
                       kind == 0   ? "Decode tokens/s by context depth"
                       : kind == 1 ? "Prefill tokens/s by context depth"
                                   : "KV cache by context length",
                       kind == 2 ? "context tokens" : "depth (tokens in the KV cache)", kind == 2 ? "MiB" : "tokens/s",
                       ss, m);
    }
    for (int decode = 1; decode >= 0; decode--) {
        const char *labels[MAX_KERNELS];
        static double v[MAX_SERIES][MAX_KERNELS];
        struct svg_bar_set sets[MAX_SERIES];
        int nl = 0, m = 0;
        for (int i = 0; i < n_ps; i++)
            for (int k = 0; ps[i].decode == decode && k < ps[i].n_k; k++) {
                int j = 0;
                while (j < nl && strcmp(labels[j], ps[i].k[k].label)) j++;
                if (j == nl && nl < MAX_KERNELS) labels[nl++] = ps[i].k[k].label;
            }
        for (int i = 0; i < n_ps && m < MAX_SERIES; i++) {
            if (ps[i].decode != decode) continue;
            for (int j = 0; j < nl; j++) {
                v[m][j] = -1;
                for (int k = 0; k < ps[i].n_k; k++)
                    if (!strcmp(ps[i].k[k].label, labels[j])) v[m][j] = cli_k_gbps(&ps[i].k[k]);
            }
            sets[m] = (struct svg_bar_set){ps[i].dev.name, v[m], o->peak_gbps};
            m++;
        }
        if (nl)
            svg_bar_chart(f,
                          decode ? "Kernel bandwidth of one decode step (GB/s)"
                                 : "Kernel bandwidth of one prefill micro-batch (GB/s)",
                          "GB/s", labels, nl, sets, m);
    }
}

static void print_results(const struct result *rs, int n, const struct profile *ps, int n_ps, const struct opts *o) {
    char name[64], size[32], params[32];
    if (!strcmp(o->format, "html")) {
        svg_html_begin(stdout, "vkllm bench");
        printf("<p>");
        svg_text(stdout, n ? (rs[0].mi.name[0] ? rs[0].mi.name : rs[0].mi.arch) : "");
        printf(" &middot; vkllm %s (%s)</p>\n", vkllm_version(), vkllm_git_commit());
        print_charts(stdout, rs, n, ps, n_ps, o);
        printf("<pre>");
        for (int i = 0; i < n; i++) {
            char line[512];
            snprintf(line, sizeof line, "%s %s: %.2f ± %.2f t/s\n", rs[i].dev.name,
                     test_name(&rs[i], name, sizeof name), rs[i].avg, rs[i].stddev);
            svg_text(stdout, line);
        }
        printf("</pre>\n");
        svg_html_end(stdout);
    } else if (!strcmp(o->format, "svg")) { /* the charts stacked in one SVG document */
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m) return;
        print_charts(m, rs, n, ps, n_ps, o);
        fclose(m);
        int charts = 0;
        for (const char *q = buf; q && (q = strstr(q, "<svg ")); q++) charts++;
        printf("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", SVG_CHART_W,
               SVG_CHART_H * charts);
        int k = 0;
        for (char *q = buf; q && *q;) {
            char *next = strstr(q + 1, "<svg ");
            printf("<g transform=\"translate(0,%d)\">\n%.*s</g>\n", SVG_CHART_H * k++,
                   next ? (int)(next - q) : (int)strlen(q), q);
            q = next;
        }
        printf("</svg>\n");
        free(buf);
    } else if (!strcmp(o->format, "md")) {
        printf("| device | model | size | params | types | KV (per token) | test | t/s | GB/s (weights) |\n");
        printf("| --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: |\n");
        for (int i = 0; i < n; i++) {
            const struct result *r = &rs[i];
            char bw[32] = "";
            if (r->n_gen) snprintf(bw, sizeof bw, "%.2f", bandwidth_gbps(r));
            char kvs[32];
            printf("| %s | %s | %s | %s | %s | %s/%s %s | %s | %.2f ± %.2f | %s |\n", r->dev.name,
                   r->mi.name[0] ? r->mi.name : r->mi.arch, human_bytes(r->mi.file_bytes, size, sizeof size),
                   human_count(r->mi.n_params, params, sizeof params), r->mi.type_summary, kv_name(r->type_k),
                   kv_name(r->type_v), small_bytes(r->kv_per_token, kvs, sizeof kvs), test_name(r, name, sizeof name),
                   r->avg, r->stddev, bw);
        }
        printf("\nvkllm %s (%s), ubatch %d, %d repetitions after a warm-up\n", vkllm_version(), vkllm_git_commit(),
               o->ubatch, o->reps);
        for (int i = 0; i < n; i++) {
            const struct vkllm_device_info *d = &rs[i].dev;
            if (i > 0 && !strcmp(d->name, rs[i - 1].dev.name)) continue;
            printf("%s: vendor %s, driver %s %s (version 0x%08x), Vulkan %u.%u.%u\n", d->name, d->vendor,
                   d->driver_name, d->driver_info, d->driver_version, d->api_version >> 22,
                   (d->api_version >> 12) & 0x3ff, d->api_version & 0xfff);
        }
        for (int i = 0; i < n_ps; i++) print_profile_md(&ps[i], o);
    } else if (!strcmp(o->format, "csv")) {
        printf("device,vendor,driver,driver_version,vulkan_api_version,model,model_size,model_n_params,tensor_types,"
               "n_ubatch,type_k,type_v,n_prompt,n_gen,n_depth,avg_ts,stddev_ts,effective_gbps,vkllm_version,"
               "build_commit,test_time\n");
        for (int i = 0; i < n; i++) {
            const struct result *r = &rs[i];
            printf("\"%s\",\"%s\",\"%s %s\",%u,%u.%u.%u,\"%s\",%llu,%llu,\"%s\",%d,%s,%s,%d,%d,%d,%.4f,%.4f,%.4f,"
                   "%s,%s,%s\n",
                   r->dev.name, r->dev.vendor, r->dev.driver_name, r->dev.driver_info, r->dev.driver_version,
                   r->dev.api_version >> 22, (r->dev.api_version >> 12) & 0x3ff, r->dev.api_version & 0xfff,
                   r->mi.name[0] ? r->mi.name : r->mi.arch, (unsigned long long)r->mi.file_bytes,
                   (unsigned long long)r->mi.n_params, r->mi.type_summary, o->ubatch, kv_name(r->type_k),
                   kv_name(r->type_v), r->n_prompt, r->n_gen, r->n_depth, r->avg, r->stddev, bandwidth_gbps(r),
                   vkllm_version(), vkllm_git_commit(), r->time);
        }
        if (n_ps) print_profiles_csv(ps, n_ps);
    } else {
        int lines = !strcmp(o->format, "jsonl");
        cJSON *arr = lines ? NULL : cJSON_CreateArray();
        for (int i = 0; i < n; i++) put_json(row_json(&rs[i], o), arr);
        for (int i = 0; i < n_ps; i++) put_json(profile_json(&ps[i], o), arr);
        if (arr) {
            char *s = cJSON_Print(arr);
            if (s) printf("%s\n", s);
            cJSON_free(s);
            cJSON_Delete(arr);
        }
    }
}

/* Tokens in the profiled prefill micro-batch: the first -p that is not 0 (else 512), at most
 * --ubatch; at least 2 (one token would be a decode step). */
static int profile_pp(const struct opts *o) {
    int n = 512;
    for (int i = o->n_pp - 1; i >= 0; i--)
        if (o->pp[i]) n = o->pp[i];
    n = n < o->ubatch ? n : o->ubatch;
    return n < 2 ? 2 : n;
}

static int bench_device(const struct opts *o, int dev, int type_k, int type_v, struct result *rs, int *n_rs, int cap,
                        struct profile *ps, int *n_ps) {
    int need = 1;
    if (o->profile) need = MAXI(need, o->depth[0] + profile_pp(o));
    for (int d = 0; d < o->n_depth; d++)
        for (int i = 0; i < o->n_pp; i++) need = MAXI(need, o->depth[d] + o->pp[i]);
    for (int d = 0; d < o->n_depth; d++)
        for (int i = 0; i < o->n_tg; i++) need = MAXI(need, o->depth[d] + o->tg[i]);
    struct vkllm_session_params sp = {
        .n_ctx = (uint32_t)need, .n_ubatch = (uint32_t)o->ubatch, .type_k = type_k, .type_v = type_v};
    struct cli_handles h;
    int code = cli_open(o->path, dev, &sp, &h);
    if (code) return code;
    vkllm_session_t s = h.s;
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm_model_info mi;
    vkllm_model_get_info(h.model, &mi);
    const struct vkllm_device_info *info = vkllm_ctx_device(h.ctx);
    int filled = -1; /* the depth the cache holds (run_once) */
    for (int d = 0; d < o->n_depth && !code; d++) {
        for (int kind = 0; kind < 2 && !code; kind++) {
            int cnt = kind == 0 ? o->n_pp : o->n_tg;
            for (int i = 0; i < cnt && !code; i++) {
                int np = kind == 0 ? o->pp[i] : 0, ng = kind == 1 ? o->tg[i] : 0;
                if (np == 0 && ng == 0) continue;
                if (*n_rs == cap) break;
                struct result *r = &rs[(*n_rs)++];
                memset(r, 0, sizeof *r);
                r->dev = *info;
                r->mi = mi;
                r->n_prompt = np, r->n_gen = ng, r->n_depth = o->depth[d];
                struct vkllm_session_memory sm;
                vkllm_session_memory(s, &sm);
                r->kv_per_token = sm.kv_bytes_per_token;
                r->kv_bytes = sm.kv_bytes_allocated;
                r->type_k = type_k, r->type_v = type_v;
                time_t now = time(NULL);
                struct tm tm;
                if (gmtime_r(&now, &tm)) strftime(r->time, sizeof r->time, "%Y-%m-%dT%H:%M:%SZ", &tm);
                double tps, ms0[VKLLM_MAX_DEVICES];
                st = run_once(s, mi.n_vocab, np, ng, o->depth[d], o->greedy, &filled, &tps); /* warm-up */
                for (uint32_t k = 0; k < VKLLM_MAX_DEVICES; k++) ms0[k] = vkllm_session_device_ms(s, k);
                for (int k = 0; !st && k < o->reps && k < 64; k++) {
                    st = run_once(s, mi.n_vocab, np, ng, o->depth[d], o->greedy, &filled, &tps);
                    r->samples[r->n_samples++] = tps;
                }
                if (!st && vkllm_model_n_devices(h.model) > 1) { /* a layer split: each device's time */
                    fprintf(stderr, "vkllm: bench: %s of %d tokens, %d runs, per device:\n", r->n_prompt ? "pp" : "tg",
                            np + ng, r->n_samples);
                    cli_print_devices(stderr, "vkllm: bench:   ", h.model, s, ms0, (uint64_t)(np + ng) * r->n_samples);
                }
                if (st) code = cli_fail(st, "benchmark run failed");
                else stats(r);
                vkllm_ctx_memory_breakdown(h.ctx, &r->mem); /* a split: the first device's */
                if (!code)
                    fprintf(stderr, "vkllm: bench: %s %s: %.2f t/s\n", info->name, r->n_prompt ? "pp" : "tg", r->avg);
                if (!code) { /* what the device holds, by use */
                    fprintf(stderr, "vkllm: bench: device memory (MiB):");
                    for (int u = 0; u < VKLLM_MEMORY_USE_COUNT; u++)
                        if (r->mem.device[u])
                            fprintf(stderr, " %s %.1f", vkllm_memory_use_name((enum vkllm_memory_use)u),
                                    r->mem.device[u] / 1048576.0);
                    fprintf(stderr, "\n");
                }
            }
        }
    }
    for (int kind = 0; o->profile && kind < 2 && !code; kind++) { /* decode step, then prefill micro-batch */
        struct profile *p = &ps[(*n_ps)++];
        memset(p, 0, sizeof *p);
        p->dev = *info;
        p->mi = mi;
        st = cli_profile_run(s, o->greedy, kind == 0 ? 1 : profile_pp(o), o->depth[0], p);
        if (st && p->error) {
            fprintf(stderr, "vkllm: bench: profile run failed: %s\n", p->error);
            code = cli_exit_code(st);
        } else if (st) {
            code = cli_fail(st, "profile run failed");
        } else
            fprintf(stderr, "vkllm: bench: %s profile: kernel sum %.3f ms, step %.3f ms\n",
                    kind == 0 ? "decode" : "prefill", p->sum_ms, p->step_ms);
    }
    return cli_close(&h, code);
}

int cli_cmd_bench(int argc, char **argv) {
    struct opts o = {.reps = 5, .ubatch = 512, .format = "md", .n_ctk = 1, .n_ctv = 1};
    o.pp[0] = 512, o.n_pp = 1;
    o.tg[0] = 128, o.n_tg = 1;
    o.depth[0] = 0, o.n_depth = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        int bad = 0;
        if (!strcmp(a, "-m") && has) o.path = argv[++i];
        else if (!strcmp(a, "-p") && has) bad = parse_list(argv[++i], o.pp, &o.n_pp);
        else if (!strcmp(a, "-n") && has) bad = parse_list(argv[++i], o.tg, &o.n_tg);
        else if (!strcmp(a, "-d") && has) bad = parse_list(argv[++i], o.depth, &o.n_depth);
        else if (!strcmp(a, "--device") && has) bad = parse_list(argv[++i], o.devices, &o.n_devices);
        else if (!strcmp(a, "-r") && has) o.reps = atoi(argv[++i]);
        else if (!strcmp(a, "--ubatch") && has) o.ubatch = atoi(argv[++i]);
        else if (!strcmp(a, "-o") && has) o.format = argv[++i];
        else if ((bad = cli_split_arg("bench", a, has ? argv[i + 1] : NULL)) != 0) {
            if (bad < 0) return 2;
            bad = 0, i++;
        } else if ((!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "-ctv") ||
                    !strcmp(a, "--cache-type-v")) &&
                   has) {
            int v = a[strlen(a) - 1] == 'v';
            if (cli_kv_types(argv[++i], v ? o.ctv : o.ctk, v ? &o.n_ctv : &o.n_ctk)) {
                fprintf(stderr, "vkllm: bench: %s takes f16, q8_0 or both (f16,q8_0)\n", a);
                return 2;
            }
        } else if (!strcmp(a, "--greedy")) o.greedy = 1;
        else if (!strcmp(a, "--profile")) o.profile = 1;
        else if (!strcmp(a, "--peak-gbps") && has) {
            if (cli_number("bench", a, argv[++i], 1e-6, 1e9, &o.peak_gbps)) return 2;
        } else return cli_other_option("bench", a, usage);
        if (bad) {
            fprintf(stderr, "vkllm: bench: '%s' takes a comma-separated list of at most %d numbers in [0, 1000000]\n",
                    a, MAX_LIST);
            return 2;
        }
    }
    if (!o.path) {
        fprintf(stderr, "vkllm: bench: -m FILE is required\n");
        usage(stderr);
        return 2;
    }
    if (o.reps < 1 || o.reps > 64 || o.ubatch < 1 ||
        (strcmp(o.format, "md") && strcmp(o.format, "csv") && strcmp(o.format, "json") && strcmp(o.format, "jsonl") &&
         strcmp(o.format, "svg") && strcmp(o.format, "html"))) {
        fprintf(stderr, "vkllm: bench: -r takes 1..64, --ubatch a positive number, -o md|csv|json|jsonl|svg|html\n");
        return 2;
    }
    if (cli_split.n > 1 && !cli_split.none) /* one model over several devices: the split is the device */
        o.devices[0] = cli_split.dev[0], o.n_devices = 1;
    if (o.n_devices == 0) { /* all usable devices */
        struct vkllm_device_info *devs;
        uint32_t n;
        vkllm_status st = vkllm_devices_list(&devs, &n);
        if (st) return cli_fail(st, "cannot list Vulkan devices");
        for (uint32_t i = 0; i < n && o.n_devices < MAX_LIST; i++)
            if (devs[i].usable) o.devices[o.n_devices++] = (int)i;
        vkllm_devices_free(devs);
        if (o.n_devices == 0) return cli_fail(VKLLM_STATUS_NO_DEVICE, "no usable Vulkan device");
    }
    static struct result rs[256];
    static struct profile ps[2 * MAX_LIST * 4];
    int n_rs = 0, n_ps = 0;
    for (int d = 0; d < o.n_devices; d++)
        for (int a = 0; a < o.n_ctk; a++)
            for (int b = 0; b < o.n_ctv; b++) {
                int code = bench_device(&o, o.devices[d], o.ctk[a], o.ctv[b], rs, &n_rs, 256, ps, &n_ps);
                if (code) return code;
            }
    print_results(rs, n_rs, ps, n_ps, &o);
    return 0;
}
