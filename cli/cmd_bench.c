/* cmd_bench.c - `vkllm bench`: prefill (pp) and decode (tg) tokens per second, with the same
 * definitions as llama-bench so the numbers compare: pp = n_prompt tokens in one prefill at depth
 * n_depth; tg = n_gen tokens decoded one at a time (logits read back each step) at depth n_depth.
 * Each test runs once to warm up (pipelines are compiled at first use), then -r times. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

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
    const char *format; /* md, csv, json, jsonl */
    int greedy;         /* tg through the on-device argmax instead of reading logits */
};

struct result {
    struct vkllm_device_info dev; /* copied: the context is gone when rows are printed */
    struct vkllm_model_info mi;
    int n_prompt, n_gen, n_depth;
    double samples[64];
    int n_samples;
    double avg, stddev;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkllm bench -m FILE [-p N,..] [-n N,..] [-d N,..] [-r N] [--device N,..]\n"
            "                   [--ubatch N] [-o md|csv|json|jsonl] [--greedy]\n"
            "\n"
            "Prefill (pp) and decode (tg) tokens per second, defined as llama-bench defines them.\n"
            "\n"
            "  -m FILE          GGUF model\n"
            "  -p N,..          prompt lengths for prefill tests (default 512; 0 to skip)\n"
            "  -n N,..          token counts for decode tests (default 128; 0 to skip)\n"
            "  -d N,..          context depth: tokens already in the KV cache (default 0)\n"
            "  -r N             repetitions after one warm-up run (default 5)\n"
            "  --device N,..    Vulkan devices to run on (default: all usable ones)\n"
            "  --ubatch N       prefill micro-batch size (default 512)\n"
            "  -o FORMAT        md (default), csv, json or jsonl; json uses llama-bench's field names\n"
            "  --greedy         decode through the on-device argmax (reads back one id per token)\n"
            "\n"
            "Decode rows also report the effective weight bandwidth: weight bytes one decode step\n"
            "reads times tokens per second.\n");
}

static int parse_list(const char *s, int *out, int *n) {
    *n = 0;
    while (*s && *n < MAX_LIST) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1000000) return -1;
        out[(*n)++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return *n ? 0 : -1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Deterministic token ids (avoiding ids 0..2, often control tokens). */
static void fill_tokens(int32_t *t, int n, uint32_t n_vocab, uint32_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        t[i] = (int32_t)(3 + (seed >> 8) % (n_vocab > 3 ? n_vocab - 3 : 1));
    }
}

/* One timed run: fill the cache to depth, then the test itself. Returns tokens per second. */
static vkllm_status run_once(vkllm_session_t s, uint32_t n_vocab, int n_prompt, int n_gen, int depth, int greedy,
                             double *tps) {
    vkllm_status st = vkllm_session_truncate(s, 0);
    int32_t *toks = malloc(sizeof *toks * (size_t)(MAXI(MAXI(n_prompt, depth), 1) + 1));
    if (!toks) return VKLLM_STATUS_OOM;
    if (!st && depth > 0) {
        fill_tokens(toks, depth, n_vocab, 7);
        st = vkllm_session_eval(s, toks, (uint32_t)depth, 0);
    }
    double t0 = now_s();
    if (!st && n_prompt > 0) {
        fill_tokens(toks, n_prompt, n_vocab, 11);
        st = vkllm_session_eval(s, toks, (uint32_t)n_prompt, 0);
    } else if (!st) {
        int32_t tok = 3;
        for (int i = 0; i < n_gen && !st; i++) {
            if (greedy) st = vkllm_session_decode_greedy(s, tok, &tok);
            else st = vkllm_session_eval(s, &tok, 1, 0);
        }
    }
    double t = now_s() - t0;
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
    cJSON_AddNumberToObject(j, "n_ubatch", o->ubatch);
    cJSON_AddStringToObject(j, "type_k", "f16");
    cJSON_AddStringToObject(j, "type_v", "f16");
    cJSON_AddNumberToObject(j, "n_prompt", r->n_prompt);
    cJSON_AddNumberToObject(j, "n_gen", r->n_gen);
    cJSON_AddNumberToObject(j, "n_depth", r->n_depth);
    cJSON_AddNumberToObject(j, "avg_ts", r->avg);
    cJSON_AddNumberToObject(j, "stddev_ts", r->stddev);
    cJSON *s = cJSON_AddArrayToObject(j, "samples_ts");
    for (int i = 0; i < r->n_samples; i++) cJSON_AddItemToArray(s, cJSON_CreateNumber(r->samples[i]));
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

static const char *human_count(uint64_t c, char *buf, size_t n) {
    if (c >= 1000000000ull) snprintf(buf, n, "%.2f B", c / 1e9);
    else if (c >= 1000000ull) snprintf(buf, n, "%.2f M", c / 1e6);
    else snprintf(buf, n, "%.2f K", c / 1e3);
    return buf;
}

static void print_results(const struct result *rs, int n, const struct opts *o) {
    char name[64], size[32], params[32];
    if (!strcmp(o->format, "md")) {
        printf("| device | model | size | params | types | test | t/s | GB/s (weights) |\n");
        printf("| --- | --- | ---: | ---: | --- | --- | ---: | ---: |\n");
        for (int i = 0; i < n; i++) {
            const struct result *r = &rs[i];
            char bw[32] = "";
            if (r->n_gen) snprintf(bw, sizeof bw, "%.2f", bandwidth_gbps(r));
            printf("| %s | %s | %s | %s | %s | %s | %.2f ± %.2f | %s |\n", r->dev.name,
                   r->mi.name[0] ? r->mi.name : r->mi.arch, human_bytes(r->mi.file_bytes, size, sizeof size),
                   human_count(r->mi.n_params, params, sizeof params),
                   r->mi.type_summary, test_name(r, name, sizeof name), r->avg, r->stddev, bw);
        }
        printf("\nvkllm %s (%s), ubatch %d, KV f16, %d repetitions after a warm-up\n", vkllm_version(),
               vkllm_git_commit(), o->ubatch, o->reps);
    } else if (!strcmp(o->format, "csv")) {
        printf("device,vendor,driver,model,model_size,model_n_params,tensor_types,n_ubatch,n_prompt,n_gen,n_depth,"
               "avg_ts,stddev_ts,effective_gbps,vkllm_version,build_commit\n");
        for (int i = 0; i < n; i++) {
            const struct result *r = &rs[i];
            printf("\"%s\",\"%s\",\"%s\",\"%s\",%llu,%llu,\"%s\",%d,%d,%d,%d,%.4f,%.4f,%.4f,%s,%s\n", r->dev.name,
                   r->dev.vendor, r->dev.driver_info, r->mi.name[0] ? r->mi.name : r->mi.arch,
                   (unsigned long long)r->mi.file_bytes, (unsigned long long)r->mi.n_params, r->mi.type_summary,
                   o->ubatch, r->n_prompt, r->n_gen, r->n_depth, r->avg, r->stddev, bandwidth_gbps(r), vkllm_version(),
                   vkllm_git_commit());
        }
    } else {
        int lines = !strcmp(o->format, "jsonl");
        cJSON *arr = lines ? NULL : cJSON_CreateArray();
        for (int i = 0; i < n; i++) {
            cJSON *j = row_json(&rs[i], o);
            if (lines) {
                char *s = cJSON_PrintUnformatted(j);
                if (s) printf("%s\n", s);
                cJSON_free(s);
                cJSON_Delete(j);
            } else {
                cJSON_AddItemToArray(arr, j);
            }
        }
        if (arr) {
            char *s = cJSON_Print(arr);
            if (s) printf("%s\n", s);
            cJSON_free(s);
            cJSON_Delete(arr);
        }
    }
}

static int bench_device(const struct opts *o, int dev, struct result *rs, int *n_rs, int cap) {
    int need = 1;
    for (int d = 0; d < o->n_depth; d++)
        for (int i = 0; i < o->n_pp; i++) need = MAXI(need, o->depth[d] + o->pp[i]);
    for (int d = 0; d < o->n_depth; d++)
        for (int i = 0; i < o->n_tg; i++) need = MAXI(need, o->depth[d] + o->tg[i]);
    struct vkllm_session_params sp = {(uint32_t)need, (uint32_t)o->ubatch};
    struct vkllm_cli_handles h;
    int code = vkllm_cli_open(o->path, dev, &sp, &h);
    if (code) return code;
    vkllm_session_t s = h.s;
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm_model_info mi;
    vkllm_model_get_info(h.model, &mi);
    const struct vkllm_device_info *info = vkllm_ctx_device(h.ctx);
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
                double tps;
                st = run_once(s, mi.n_vocab, np, ng, o->depth[d], o->greedy, &tps); /* warm-up */
                for (int k = 0; !st && k < o->reps && k < 64; k++) {
                    st = run_once(s, mi.n_vocab, np, ng, o->depth[d], o->greedy, &tps);
                    r->samples[r->n_samples++] = tps;
                }
                if (st) code = vkllm_cli_fail(st, "benchmark run failed");
                else stats(r);
                if (!code) fprintf(stderr, "vkllm: bench: %s %s: %.2f t/s\n", info->name,
                                   r->n_prompt ? "pp" : "tg", r->avg);
            }
        }
    }
    return vkllm_cli_close(&h, code);
}

int vkllm_cmd_bench(int argc, char **argv) {
    struct opts o = {.reps = 5, .ubatch = 512, .format = "md"};
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
        else if (!strcmp(a, "--greedy")) o.greedy = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "vkllm: bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "vkllm: bench: '%s' takes a comma-separated list of non-negative numbers\n", a);
            return 2;
        }
    }
    if (!o.path) {
        fprintf(stderr, "vkllm: bench: -m FILE is required\n");
        usage(stderr);
        return 2;
    }
    if (o.reps < 1 || o.reps > 64 || o.ubatch < 1 ||
        (strcmp(o.format, "md") && strcmp(o.format, "csv") && strcmp(o.format, "json") && strcmp(o.format, "jsonl"))) {
        fprintf(stderr, "vkllm: bench: -r takes 1..64, --ubatch a positive number, -o md|csv|json|jsonl\n");
        return 2;
    }
    if (o.n_devices == 0) { /* all usable devices */
        struct vkllm_device_info *devs;
        uint32_t n;
        vkllm_status st = vkllm_devices_list(&devs, &n);
        if (st) return vkllm_cli_fail(st, "cannot list Vulkan devices");
        for (uint32_t i = 0; i < n && o.n_devices < MAX_LIST; i++)
            if (devs[i].has_compute_queue && devs[i].api_version >= (1u << 22 | 2u << 12)) o.devices[o.n_devices++] = (int)i;
        vkllm_devices_free(devs);
        if (o.n_devices == 0) return vkllm_cli_fail(VKLLM_STATUS_NO_DEVICE, "no usable Vulkan device");
    }
    static struct result rs[256];
    int n_rs = 0;
    for (int d = 0; d < o.n_devices; d++) {
        int code = bench_device(&o, o.devices[d], rs, &n_rs, 256);
        if (code) return code;
    }
    print_results(rs, n_rs, &o);
    return 0;
}
