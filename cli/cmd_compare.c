/* cmd_compare.c - `vkllm compare`: the same model and prompts on several devices, side by side.
 *
 * For every device (a Vulkan index, or `ref`, the scalar C reference):
 *   agreement  its logits against a baseline's (the reference, or the first device when the
 *              model is too large for the reference to be quick): the prompt evaluated in one
 *              prefill, then the baseline's greedy continuation fed one token at a time (decode
 *              steps, teacher-forced so that both see the same tokens). Per position: max and mean
 *              |logit difference|, KL(baseline || device) of the softmaxes, and whether the top-1
 *              token agrees.
 *   speed      prefill (pp) and decode (tg) tokens/s at each depth (tokens already in the KV cache),
 *              median of -r runs after a warm-up, and decode's effective weight bandwidth (weight
 *              bytes per token x tokens/s) against the device's peak (a built-in table of known
 *              GPUs, or --peak-gbps).
 *   memory     weights on the device, KV bytes per token, and the KV cache at each depth.
 *   kernels    one profiled decode step (GPU timestamps): per kernel, GPU ms and GB/s.
 * Output: a Markdown report, JSON, or one HTML file with SVG charts drawn here (no JS). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "profile.h"
#include "svg.h"

#define MAX_DEV 8
#define MAX_DEPTH 8
#define MAX_PROMPTS 16
#define REF -1     /* devices[] entry for the scalar reference */
#define SPLIT -100 /* devices[] entry SPLIT - k: layer split k ("0+1": one model over devices 0 and 1) */

struct opts {
    const char *path, *prompts, *format, *out;
    int dev[MAX_DEV], n_dev;
    int depth[MAX_DEPTH], n_depth;
    int n_prompt, n_gen, steps, reps, ubatch;
    double peak_gbps;
    int baseline;                    /* a devices[] entry: REF or a Vulkan index */
    struct cli_split split[MAX_DEV]; /* the layer splits of --devices (their --tensor-split, --split-mode: ts) */
    int n_split;
    struct cli_split ts;
};

/* The split options (cli_split) for device entry id: a split's devices and shares, else none. */
static void use_split(const struct opts *o, int id) {
    cli_split = (struct cli_split){0};
    if (id > SPLIT) return;
    cli_split = o->ts;
    cli_split.n = o->split[SPLIT - id].n;
    memcpy(cli_split.dev, o->split[SPLIT - id].dev, sizeof cli_split.dev);
}

struct agree {
    int n; /* positions compared */
    double max_abs, sum_abs, sum_kl, max_kl;
    int top1;      /* positions whose argmax agrees */
    int near_ties; /* of the others, those where the baseline's two best logits are closer
                      than twice the largest |difference| there: rounding alone swaps them */
};

struct dev_result {
    int id; /* REF or the Vulkan index */
    char name[320];
    struct vkllm_device_info dev;
    struct agree ag;
    int is_baseline;
    double pp[MAX_DEPTH], tg[MAX_DEPTH]; /* tokens/s (0: not measured) */
    uint64_t weight_bytes, kv_per_token, decode_bytes;
    struct profile prof;
    int has_prof;
    double peak; /* GB/s, 0 unknown */
    const char *peak_from;
    char error[256];
    char split[1024]; /* a layer split: each device's layers, memory and time in the speed runs */
};

/* The baseline's run of one prompt: its tokens (prompt + greedy continuation) and logits. */
struct base_run {
    int32_t *tok;
    uint32_t n_prompt, n; /* prompt tokens, all tokens */
    float *logits;        /* n x n_vocab: the logits after each token */
};

/* Memory bandwidth of known GPUs, GB/s (vendor spec sheets); the longest matching name wins. */
// clang-format off
static const struct {
    const char *name;
    double gbps;
} k_peaks[] = {
    {"H200", 4800},      {"H100 PCIe", 2000},   {"H100", 3350},        {"A100-PCIE-40GB", 1555}, {"A100", 2039},
    {"L40S", 864},       {"L40", 864},          {"L4", 300},           {"A10", 600},             {"T4", 320},
    {"RTX 4090", 1008},  {"RTX 4080", 717},     {"RTX 4070", 504},     {"RTX 3090", 936},        {"RTX 3080", 760},
    {"RTX 3070", 448},   {"RTX 3060", 360},     {"RX 7900 XTX", 960},  {"RX 7900 XT", 800},      {"RX 6900 XT", 512},
    {"RX 6800 XT", 512}, {"MI300X", 5300},      {"MI250X", 3277},      {"Arc A770", 560},        {"Arc A750", 512},
    {"Apple M1 Max", 400}, {"Apple M2 Max", 400}, {"Apple M1 Ultra", 800}, {"Apple M2 Ultra", 800}, {"Apple M1 Pro", 200},
    {"Apple M2 Pro", 200},
};
// clang-format on

static double known_peak(const char *name) {
    size_t best = 0;
    double g = 0;
    for (size_t i = 0; i < sizeof k_peaks / sizeof k_peaks[0]; i++)
        if (strstr(name, k_peaks[i].name) && strlen(k_peaks[i].name) > best)
            best = strlen(k_peaks[i].name), g = k_peaks[i].gbps;
    return g;
}

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm compare -m FILE [--devices 0,1,ref] [-p N] [-n N] [--depths 0,512,2048]\n"
               "                     [--steps N] [--prompts FILE] [-r N] [--peak-gbps X] [-o md|json|html]\n"
               "                     [--out FILE]\n"
               "\n"
               "Runs the same model and prompts on every device and reports, side by side: whether they\n"
               "agree (logits against a baseline: max and mean |difference|, KL divergence, top-1\n"
               "agreement over greedy steps), prefill and decode speed at each depth with the effective\n"
               "weight bandwidth against the device's peak, KV-cache memory as the context grows, and the\n"
               "kernels of one decode step.\n"
               "\n"
               "  -m FILE          GGUF model\n"
               "  --devices LIST   Vulkan indices and/or `ref` (the scalar C reference; agreement only); 0+1: one\n"
               "                   model split by layers over devices 0 and 1 (with --tensor-split 3,1), reported\n"
               "                   with each device's layers, memory and time (docs/devices.md)\n"
               "                   (default: every usable device, and ref when the model has at most 300M\n"
               "                   parameters)\n"
               "  --baseline D     what agreement is measured against: `ref` or a device index (default:\n"
               "                   ref when listed, else the first device)\n"
               "  -p N             prompt tokens of the prefill test (default 512)\n"
               "  -n N             tokens of the decode test (default 64)\n"
               "  --depths LIST    tokens already in the KV cache for the speed tests (default 0,512,2048)\n"
               "  --steps N        greedy tokens compared after each prompt (default 32)\n"
               "  --prompts FILE   one prompt per line for the agreement test (default: a built-in one)\n"
               "  -r N             speed runs per test after a warm-up; the median counts (default 3)\n"
               "  --ubatch N       prefill micro-batch size (default 512)\n"
               "  --peak-gbps X    the devices' memory bandwidth, GB/s (default: a table of known GPUs)\n"
               "  -o FORMAT        md (default), json, or html (one file, SVG charts, no scripts)\n"
               "  --out FILE       write the report there instead of standard output\n");
}

static int parse_devices(const char *s, struct opts *o) {
    o->n_dev = 0;
    while (*s) {
        if (o->n_dev == MAX_DEV) return -1;
        if (!strncmp(s, "ref", 3)) {
            o->dev[o->n_dev++] = REF;
            s += 3;
        } else {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s || v < 0 || v > 1000) return -1;
            o->dev[o->n_dev++] = (int)v;
            s = end;
            if (*s == '+') { /* a layer split: 0+1 */
                struct cli_split *sp = &o->split[o->n_split];
                *sp = (struct cli_split){.n = 1, .dev = {(int)v}};
                while (*s == '+') {
                    v = strtol(s + 1, &end, 10);
                    if (end == s + 1 || v < 0 || v > 1000 || sp->n == VKLLM_MAX_DEVICES) return -1;
                    sp->dev[sp->n++] = (int)v;
                    s = end;
                }
                o->dev[o->n_dev - 1] = SPLIT - o->n_split++;
            }
        }
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return o->n_dev ? 0 : -1;
}

static int parse_depths(const char *s, struct opts *o) {
    o->n_depth = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 10000000 || o->n_depth == MAX_DEPTH) return -1;
        o->depth[o->n_depth++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return o->n_depth ? 0 : -1;
}

/* --- agreement ----------------------------------------------------------------------------- */

static uint32_t argmax(const float *x, uint32_t n) {
    uint32_t b = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* One position: the device's logits against the baseline's. */
static void agree_add(struct agree *a, const float *base, const float *dev, uint32_t n) {
    double mb = -INFINITY, md = -INFINITY, zb = 0, zd = 0, kl = 0, sum = 0, mx = 0;
    for (uint32_t i = 0; i < n; i++) {
        double d = fabs((double)base[i] - dev[i]);
        sum += d;
        mx = d > mx || isnan(d) ? d : mx;
        mb = base[i] > mb ? base[i] : mb;
        md = dev[i] > md ? dev[i] : md;
    }
    for (uint32_t i = 0; i < n; i++) zb += exp(base[i] - mb), zd += exp(dev[i] - md);
    for (uint32_t i = 0; i < n; i++) {
        double lpb = base[i] - mb - log(zb), lpd = dev[i] - md - log(zd);
        kl += exp(lpb) * (lpb - lpd);
    }
    if (kl < 0) kl = 0; /* rounding */
    a->n++;
    a->max_abs = mx > a->max_abs || isnan(mx) ? mx : a->max_abs;
    a->sum_abs += sum / n;
    a->sum_kl += kl;
    a->max_kl = kl > a->max_kl ? kl : a->max_kl;
    uint32_t b1 = argmax(base, n), d1 = argmax(dev, n);
    a->top1 += b1 == d1;
    if (b1 != d1) {
        double second = -INFINITY;
        for (uint32_t i = 0; i < n; i++)
            if (i != b1 && base[i] > second) second = base[i];
        a->near_ties += (double)base[b1] - second <= 2 * mx;
    }
}

/* The baseline's run of prompt ids: its logits after each prompt token and steps greedy tokens.
 * id REF: the reference, else a session of that device. */
static int base_run(const struct opts *o, int id, const int32_t *ids, uint32_t n_ids, uint32_t n_vocab,
                    struct base_run *b) {
    uint32_t n = n_ids + (uint32_t)o->steps;
    b->tok = malloc(sizeof *b->tok * n);
    b->logits = malloc(sizeof *b->logits * (size_t)n * n_vocab);
    if (!b->tok || !b->logits) return cli_fail(VKLLM_STATUS_OOM, "compare");
    memcpy(b->tok, ids, sizeof *ids * n_ids);
    b->n_prompt = n_ids, b->n = n;
    if (id == REF) {
        vkllm_ref_t r = NULL;
        vkllm_status st = vkllm_ref_init(o->path, n, 0, &r);
        for (uint32_t i = 0; !st && i < n; i++) {
            const float *lg;
            st = vkllm_ref_eval(r, b->tok[i], i, &lg);
            if (st) break;
            memcpy(b->logits + (size_t)i * n_vocab, lg, sizeof *lg * n_vocab);
            if (i + 1 < n && i + 1 >= n_ids) b->tok[i + 1] = (int32_t)argmax(lg, n_vocab);
        }
        vkllm_ref_free(r);
        return st ? cli_fail(st, "the reference forward pass") : 0;
    }
    struct vkllm_session_params sp = {.n_ctx = n, .n_ubatch = (uint32_t)o->ubatch};
    struct cli_handles h;
    use_split(o, id);
    int code = cli_open(o->path, id, &sp, &h);
    if (code) return code;
    vkllm_status st = vkllm_session_eval(h.s, ids, n_ids, 1);
    for (uint32_t i = 0; !st && i < n_ids; i++)
        memcpy(b->logits + (size_t)i * n_vocab, vkllm_session_logits(h.s, i), sizeof(float) * n_vocab);
    for (uint32_t i = n_ids; !st && i < n; i++) {
        b->tok[i] = (int32_t)argmax(b->logits + (size_t)(i - 1) * n_vocab, n_vocab);
        st = vkllm_session_eval(h.s, &b->tok[i], 1, 0);
        if (!st) memcpy(b->logits + (size_t)i * n_vocab, vkllm_session_logits(h.s, 0), sizeof(float) * n_vocab);
    }
    if (st) code = cli_fail(st, "the baseline's evaluation");
    return cli_close(&h, code);
}

/* The device's logits along the baseline's tokens: the prompt in one prefill, then the
 * continuation one decode step at a time. The reference steps one token at a time throughout. */
static vkllm_status agree_session(vkllm_session_t s, const struct base_run *b, uint32_t n_vocab, struct agree *a) {
    vkllm_status st = vkllm_session_truncate(s, 0);
    if (!st) st = vkllm_session_eval(s, b->tok, b->n_prompt, 1);
    for (uint32_t i = 0; !st && i < b->n_prompt; i++)
        agree_add(a, b->logits + (size_t)i * n_vocab, vkllm_session_logits(s, i), n_vocab);
    for (uint32_t i = b->n_prompt; !st && i < b->n; i++) {
        st = vkllm_session_eval(s, &b->tok[i], 1, 0);
        if (!st) agree_add(a, b->logits + (size_t)i * n_vocab, vkllm_session_logits(s, 0), n_vocab);
    }
    return st;
}

static vkllm_status agree_ref(const char *path, const struct base_run *b, uint32_t n_vocab, struct agree *a) {
    vkllm_ref_t r = NULL;
    vkllm_status st = vkllm_ref_init(path, b->n, 0, &r);
    for (uint32_t i = 0; !st && i < b->n; i++) {
        const float *lg;
        st = vkllm_ref_eval(r, b->tok[i], i, &lg);
        if (!st) agree_add(a, b->logits + (size_t)i * n_vocab, lg, n_vocab);
    }
    vkllm_ref_free(r);
    return st;
}

/* --- speed, memory, kernels ---------------------------------------------------------------- */

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cli_cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* pp and tg tokens/s at depth (median of reps after a warm-up). */
static vkllm_status speed_at(vkllm_session_t s, const struct opts *o, uint32_t n_vocab, int depth, double *pp,
                             double *tg) {
    int n = depth > o->n_prompt ? depth : o->n_prompt;
    int32_t *t = malloc(sizeof *t * (size_t)(n + 1));
    if (!t) return VKLLM_STATUS_OOM;
    double xs[2][64];
    vkllm_status st = vkllm_session_truncate(s, 0);
    if (!st && depth) {
        cli_fill_tokens(t, depth, n_vocab, 7);
        st = vkllm_session_eval(s, t, (uint32_t)depth, 0);
    }
    for (int k = 0; !st && k <= o->reps; k++) { /* k == 0: warm-up */
        if (o->n_prompt) {
            cli_fill_tokens(t, o->n_prompt, n_vocab, 11);
            st = vkllm_session_truncate(s, (uint32_t)depth);
            double t0 = cli_now();
            if (!st) st = vkllm_session_eval(s, t, (uint32_t)o->n_prompt, 0);
            if (k) xs[0][k - 1] = o->n_prompt / (cli_now() - t0);
        }
        if (!st && o->n_gen) {
            st = vkllm_session_truncate(s, (uint32_t)depth);
            int32_t tok = 3;
            double t0 = cli_now();
            for (int i = 0; !st && i < o->n_gen; i++) st = vkllm_session_eval(s, &tok, 1, 0);
            if (k) xs[1][k - 1] = o->n_gen / (cli_now() - t0);
        }
    }
    free(t);
    if (st) return st;
    *pp = o->n_prompt ? median(xs[0], o->reps) : 0;
    *tg = o->n_gen ? median(xs[1], o->reps) : 0;
    return st;
}

static int run_device(const struct opts *o, struct dev_result *d, struct base_run *runs, int n_runs, uint32_t n_vocab) {
    if (d->id == REF) {
        snprintf(d->name, sizeof d->name, "reference (scalar C, fp32)");
        for (int i = 0; i < n_runs && !d->is_baseline; i++) {
            vkllm_status st = agree_ref(o->path, &runs[i], n_vocab, &d->ag);
            if (st) return cli_fail(st, "the reference forward pass");
        }
        return 0;
    }
    int need = o->n_prompt > o->n_gen ? o->n_prompt : o->n_gen;
    int maxd = 0;
    for (int i = 0; i < o->n_depth; i++) maxd = o->depth[i] > maxd ? o->depth[i] : maxd;
    uint32_t n_ctx = (uint32_t)(maxd + need + 1);
    for (int i = 0; i < n_runs; i++) n_ctx = runs[i].n > n_ctx ? runs[i].n : n_ctx;
    struct vkllm_session_params sp = {.n_ctx = n_ctx, .n_ubatch = (uint32_t)o->ubatch};
    struct cli_handles h;
    use_split(o, d->id);
    int code = cli_open(o->path, d->id, &sp, &h);
    if (code) return code;
    const struct vkllm_device_info *di = vkllm_ctx_device(h.ctx);
    d->dev = *di;
    if (d->id <= SPLIT) { /* a layer split: its devices' indices */
        const struct cli_split *sp2 = &o->split[SPLIT - d->id];
        int len = snprintf(d->name, sizeof d->name, "%d", sp2->dev[0]);
        for (uint32_t k = 1; k < sp2->n && len < (int)sizeof d->name; k++)
            len += snprintf(d->name + len, sizeof d->name - (size_t)len, "+%d", sp2->dev[k]);
        if (len < (int)sizeof d->name)
            snprintf(d->name + len, sizeof d->name - (size_t)len, ": layer split, first %s, %.40s", di->name,
                     di->driver_info);
    } else
        snprintf(d->name, sizeof d->name, "%d: %s, %.40s", d->id, di->name, di->driver_info); /* the driver tells
                                                                                       two lavapipes apart */
    struct vkllm_model_info mi;
    vkllm_model_get_info(h.model, &mi);
    struct vkllm_session_memory sm;
    vkllm_session_memory(h.s, &sm);
    d->weight_bytes = mi.weight_bytes, d->kv_per_token = sm.kv_bytes_per_token,
    d->decode_bytes = mi.decode_bytes_per_token;
    d->peak = o->peak_gbps > 0 ? o->peak_gbps : known_peak(d->dev.name);
    d->peak_from = o->peak_gbps > 0 ? "--peak-gbps" : d->peak > 0 ? "table of known GPUs" : NULL;
    vkllm_status st = VKLLM_STATUS_OK;
    for (int i = 0; !st && i < n_runs && !d->is_baseline; i++) st = agree_session(h.s, &runs[i], n_vocab, &d->ag);
    if (st) code = cli_fail(st, "the agreement run");
    double ms0[VKLLM_MAX_DEVICES];
    for (uint32_t k = 0; k < VKLLM_MAX_DEVICES; k++) ms0[k] = vkllm_session_device_ms(h.s, k);
    for (int i = 0; !code && i < o->n_depth; i++) {
        st = speed_at(h.s, o, mi.n_vocab, o->depth[i], &d->pp[i], &d->tg[i]);
        if (st) code = cli_fail(st, "the speed run");
        else
            fprintf(stderr, "vkllm: compare: %s, depth %d: pp%d %.1f t/s, tg%d %.1f t/s\n", d->name, o->depth[i],
                    o->n_prompt, d->pp[i], o->n_gen, d->tg[i]);
    }
    if (!code && cli_devices_text(d->split, sizeof d->split, "- ", h.model, h.s, ms0, 0)) /* per device */
        fprintf(stderr, "vkllm: compare: %s, the speed runs by device:\n%s", d->name, d->split);
    if (!code) {
        d->prof.dev = d->dev, d->prof.mi = mi;
        st = cli_profile_run(h.s, 0, 1, o->depth[0], &d->prof);
        d->has_prof = !st;
        if (st)
            snprintf(d->error, sizeof d->error, "no kernel profile: %s",
                     d->prof.error ? d->prof.error : vkllm_status_str(st));
    }
    return cli_close(&h, code);
}

/* --- reports ------------------------------------------------------------------------------- */

static double eff_gbps(const struct dev_result *d, int i) { return d->tg[i] * (double)d->decode_bytes / 1e9; }

static void print_md(FILE *f, const struct opts *o, const struct dev_result *ds, int n, const char *base_name,
                     int n_pos_runs) {
    fprintf(f, "# vkllm compare: %s\n\nvkllm %s (%s)\n\n## Agreement with %s\n\n", o->path, vkllm_version(),
            vkllm_git_commit(), base_name);
    fprintf(f,
            "%d prompt(s), each evaluated in one prefill and then %d greedy tokens of the baseline fed one at a "
            "time. Near-ties: top-1 disagreements where the baseline's two best logits are closer than twice the "
            "largest |difference| at that position.\n\n",
            n_pos_runs, o->steps);
    fprintf(f,
            "| device | positions | max abs diff | mean abs diff | mean KL | max KL | top-1 agreement | near-ties |\n");
    fprintf(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < n; i++) {
        const struct dev_result *d = &ds[i];
        if (d->is_baseline) {
            fprintf(f, "| %s | baseline | | | | | | |\n", d->name);
            continue;
        }
        const struct agree *a = &d->ag;
        fprintf(f, "| %s | %d | %.3g | %.3g | %.3g | %.3g | %.1f%% | %d |\n", d->name, a->n, a->max_abs,
                a->n ? a->sum_abs / a->n : 0, a->n ? a->sum_kl / a->n : 0, a->max_kl, a->n ? 100.0 * a->top1 / a->n : 0,
                a->near_ties);
    }
    fprintf(f,
            "\n## Speed (tokens/s, median of %d)\n\n| device | depth | pp%d | tg%d | decode GB/s | of peak |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: |\n",
            o->reps, o->n_prompt, o->n_gen);
    for (int i = 0; i < n; i++) {
        const struct dev_result *d = &ds[i];
        if (d->id == REF) continue;
        for (int k = 0; k < o->n_depth; k++) {
            char peak[48] = "unknown";
            if (d->peak > 0) snprintf(peak, sizeof peak, "%.1f%% of %.0f", 100 * eff_gbps(d, k) / d->peak, d->peak);
            fprintf(f, "| %s | %d | %.1f | %.1f | %.2f | %s |\n", d->name, o->depth[k], d->pp[k], d->tg[k],
                    eff_gbps(d, k), peak);
        }
    }
    for (int i = 0; i < n; i++) /* layer splits: each device's part of the speed runs */
        if (ds[i].split[0])
            fprintf(f,
                    "\nLayer split %s, each device's part of the speed runs (its command buffers and the copy "
                    "of the residual stream to the next):\n\n%s",
                    ds[i].name, ds[i].split);
    fprintf(f, "\n## Memory\n\n| device | weights | KV per token |");
    for (int k = 0; k < o->n_depth; k++) fprintf(f, " KV at %d |", o->depth[k]);
    fprintf(f, "\n| --- | ---: | ---: |");
    for (int k = 0; k < o->n_depth; k++) fprintf(f, " ---: |");
    fprintf(f, "\n");
    for (int i = 0; i < n; i++) {
        const struct dev_result *d = &ds[i];
        if (d->id == REF) continue;
        fprintf(f, "| %s | %.2f MiB | %.1f KiB |", d->name, d->weight_bytes / 1048576.0, d->kv_per_token / 1024.0);
        for (int k = 0; k < o->n_depth; k++)
            fprintf(f, " %.2f MiB |", (double)d->kv_per_token * o->depth[k] / 1048576.0);
        fprintf(f, "\n");
    }
    for (int i = 0; i < n; i++) {
        const struct dev_result *d = &ds[i];
        if (d->id == REF) continue;
        if (!d->has_prof) {
            fprintf(f, "\n%s: %s\n", d->name, d->error);
            continue;
        }
        const struct profile *p = &d->prof;
        fprintf(f,
                "\n## Kernels of one decode step at depth %d: %s\n\n| kernel | calls | GPU ms | share | GB/s |"
                " of peak |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
                p->pos0, d->name);
        for (int k = 0; k < p->n_k; k++) {
            const struct kernel *kk = &p->k[k];
            char peak[32] = "";
            if (d->peak > 0) snprintf(peak, sizeof peak, "%.1f%%", 100 * cli_k_gbps(kk) / d->peak);
            fprintf(f, "| %s | %d | %.3f | %.1f%% | %.2f | %s |\n", kk->label, kk->calls, kk->ns * 1e-6,
                    p->sum_ms > 0 ? 100 * kk->ns * 1e-6 / p->sum_ms : 0, cli_k_gbps(kk), peak);
        }
        fprintf(f, "\nkernel sum %.3f ms, the step's wall clock %.3f ms\n", p->sum_ms, p->step_ms);
    }
}

static cJSON *report_json(const struct opts *o, const struct dev_result *ds, int n, const char *base_name) {
    cJSON *j = cJSON_CreateObject(), *devs = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "model", o->path);
    cJSON_AddStringToObject(j, "vkllm_version", vkllm_version());
    cJSON_AddStringToObject(j, "build_commit", vkllm_git_commit());
    cJSON_AddStringToObject(j, "baseline", base_name);
    cJSON_AddNumberToObject(j, "n_prompt", o->n_prompt);
    cJSON_AddNumberToObject(j, "n_gen", o->n_gen);
    cJSON_AddNumberToObject(j, "steps", o->steps);
    cJSON_AddItemToObject(j, "devices", devs);
    for (int i = 0; i < n; i++) {
        const struct dev_result *d = &ds[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(devs, x);
        cJSON_AddStringToObject(x, "device", d->name);
        if (d->id == REF) cJSON_AddStringToObject(x, "index", "ref");
        else if (d->id <= SPLIT) cJSON_AddStringToObject(x, "split", d->split); /* per device, as in md */
        else cJSON_AddNumberToObject(x, "index", d->id);
        cJSON_AddBoolToObject(x, "baseline", d->is_baseline);
        if (!d->is_baseline) {
            const struct agree *a = &d->ag;
            cJSON *ag = cJSON_AddObjectToObject(x, "agreement");
            cJSON_AddNumberToObject(ag, "positions", a->n);
            cJSON_AddNumberToObject(ag, "max_abs_diff", a->max_abs);
            cJSON_AddNumberToObject(ag, "mean_abs_diff", a->n ? a->sum_abs / a->n : 0);
            cJSON_AddNumberToObject(ag, "mean_kl", a->n ? a->sum_kl / a->n : 0);
            cJSON_AddNumberToObject(ag, "max_kl", a->max_kl);
            cJSON_AddNumberToObject(ag, "top1_agreement", a->n ? (double)a->top1 / a->n : 0);
            cJSON_AddNumberToObject(ag, "near_ties", a->near_ties);
            cJSON_AddNumberToObject(ag, "top1_agreement_beyond_ties",
                                    a->n ? (double)(a->top1 + a->near_ties) / a->n : 0);
        }
        if (d->id == REF) continue;
        cJSON *sp = cJSON_AddArrayToObject(x, "speed");
        for (int k = 0; k < o->n_depth; k++) {
            cJSON *s = cJSON_CreateObject();
            cJSON_AddNumberToObject(s, "depth", o->depth[k]);
            cJSON_AddNumberToObject(s, "pp_tps", d->pp[k]);
            cJSON_AddNumberToObject(s, "tg_tps", d->tg[k]);
            cJSON_AddNumberToObject(s, "decode_gbps", eff_gbps(d, k));
            cJSON_AddNumberToObject(s, "kv_bytes", (double)d->kv_per_token * o->depth[k]);
            cJSON_AddItemToArray(sp, s);
        }
        if (d->peak > 0) cJSON_AddNumberToObject(x, "peak_gbps", d->peak);
        else cJSON_AddNullToObject(x, "peak_gbps");
        cJSON_AddNumberToObject(x, "weight_bytes", (double)d->weight_bytes);
        cJSON_AddNumberToObject(x, "kv_bytes_per_token", (double)d->kv_per_token);
        cJSON_AddNumberToObject(x, "decode_bytes_per_token", (double)d->decode_bytes);
        cJSON *ks = cJSON_AddArrayToObject(x, "kernels");
        for (int k = 0; d->has_prof && k < d->prof.n_k; k++) {
            const struct kernel *kk = &d->prof.k[k];
            cJSON *kj = cJSON_CreateObject();
            cJSON_AddStringToObject(kj, "kernel", kk->label);
            cJSON_AddNumberToObject(kj, "calls", kk->calls);
            cJSON_AddNumberToObject(kj, "gpu_ms", kk->ns * 1e-6);
            cJSON_AddNumberToObject(kj, "gbps", cli_k_gbps(kk));
            cJSON_AddItemToArray(ks, kj);
        }
        if (d->error[0]) cJSON_AddStringToObject(x, "note", d->error);
    }
    return j;
}

/* One line per device over the depths; which: 0 tg, 1 pp, 2 KV cache (MiB). */
static void chart_depths(FILE *f, const struct opts *o, const struct dev_result *ds, int n, int which) {
    struct svg_series ss[MAX_DEV];
    double xs[MAX_DEPTH], ys[MAX_DEV][MAX_DEPTH];
    int m = 0;
    for (int k = 0; k < o->n_depth; k++) xs[k] = o->depth[k];
    for (int i = 0; i < n; i++) {
        const struct dev_result *d = &ds[i];
        if (d->id == REF) continue;
        for (int k = 0; k < o->n_depth; k++)
            ys[m][k] = which == 0 ? d->tg[k] : which == 1 ? d->pp[k] : d->kv_per_token * (double)o->depth[k] / 1048576;
        ss[m] = (struct svg_series){d->name, o->n_depth, xs, ys[m]};
        m++;
    }
    char title[96];
    if (which == 0) snprintf(title, sizeof title, "Decode (tg%d) tokens/s by context depth", o->n_gen);
    else if (which == 1) snprintf(title, sizeof title, "Prefill (pp%d) tokens/s by context depth", o->n_prompt);
    else snprintf(title, sizeof title, "KV cache by context length");
    svg_line_chart(f, title, which == 2 ? "context tokens" : "depth (tokens in the KV cache)",
                   which == 2 ? "MiB" : "tokens/s", ss, m);
}

/* Per kernel of the decode step, a bar of GB/s per device, each device's peak as a line. */
static void chart_kernels(FILE *f, const struct dev_result *ds, int n) {
    const char *labels[MAX_KERNELS];
    static double v[MAX_DEV][MAX_KERNELS];
    struct svg_bar_set sets[MAX_DEV];
    int nl = 0, m = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; ds[i].has_prof && k < ds[i].prof.n_k; k++) {
            int j = 0;
            while (j < nl && strcmp(labels[j], ds[i].prof.k[k].label)) j++;
            if (j == nl && nl < MAX_KERNELS) labels[nl++] = ds[i].prof.k[k].label;
        }
    for (int i = 0; i < n; i++) {
        const struct dev_result *d = &ds[i];
        if (!d->has_prof) continue;
        for (int j = 0; j < nl; j++) {
            v[m][j] = -1;
            for (int k = 0; k < d->prof.n_k; k++)
                if (!strcmp(d->prof.k[k].label, labels[j])) v[m][j] = cli_k_gbps(&d->prof.k[k]);
        }
        sets[m] = (struct svg_bar_set){d->name, v[m], d->peak};
        m++;
    }
    if (nl)
        svg_bar_chart(f, "Kernel bandwidth of one decode step (GB/s; dashed: each device's peak)", "GB/s", labels, nl,
                      sets, m);
}

static void print_html(FILE *f, const struct opts *o, const struct dev_result *ds, int n, const char *base_name,
                       int n_runs) {
    svg_html_begin(f, "vkllm compare");
    fprintf(f, "<p>");
    svg_text(f, o->path);
    fprintf(f, " &middot; vkllm %s (%s)</p>\n", vkllm_version(), vkllm_git_commit());
    for (int which = 0; which < 3; which++) chart_depths(f, o, ds, n, which);
    chart_kernels(f, ds, n);
    /* the tables: the Markdown report, as text */
    fprintf(f, "<h2>Report</h2>\n<pre>");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
        print_md(m, o, ds, n, base_name, n_runs);
        fclose(m);
        svg_text(f, buf);
    }
    free(buf);
    fprintf(f, "</pre>\n");
    svg_html_end(f);
}

static vkllm_status file_info(const char *path, struct vkllm_file_info *out) {
    vkllm_model_file_t f = NULL;
    vkllm_status st = vkllm_model_file_open(path, &f);
    if (!st) vkllm_model_file_info(f, out);
    vkllm_model_file_close(f);
    return st;
}

/* --- the command --------------------------------------------------------------------------- */

static int tokenize_prompts(const struct opts *o, int32_t **ids, uint32_t *n_ids, int *n_prompts) {
    vkllm_tokenizer_t tk = NULL;
    vkllm_status st = vkllm_tokenizer_load(o->path, &tk);
    if (st) return cli_fail(st, "the model's tokenizer");
    char *lines[MAX_PROMPTS];
    int n = 0;
    if (o->prompts) {
        FILE *f = fopen(o->prompts, "r");
        if (!f) {
            vkllm_tokenizer_free(tk);
            fprintf(stderr, "vkllm: compare: cannot open --prompts %s\n", o->prompts);
            return 1;
        }
        char line[8192];
        while (n < MAX_PROMPTS && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = 0;
            if (*line) lines[n++] = strdup(line);
        }
        fclose(f);
    } else {
        lines[n++] = strdup("Once upon a time, in a small village by the sea, there lived a girl who");
    }
    int code = n ? 0 : 2;
    if (!n) fprintf(stderr, "vkllm: compare: --prompts %s holds no prompt\n", o->prompts);
    for (int i = 0; i < n && !code; i++) {
        size_t cap = strlen(lines[i] ? lines[i] : "") + 8, got = 0;
        ids[i] = lines[i] ? malloc(sizeof **ids * cap) : NULL;
        st =
            ids[i] ? vkllm_tokenizer_encode(tk, lines[i], strlen(lines[i]), 1, 0, ids[i], cap, &got) : VKLLM_STATUS_OOM;
        if (st) code = cli_fail(st, "tokenizing a prompt");
        n_ids[i] = (uint32_t)got;
    }
    for (int i = 0; i < n; i++) free(lines[i]);
    vkllm_tokenizer_free(tk);
    *n_prompts = n;
    return code;
}

int cli_cmd_compare(int argc, char **argv) {
    struct opts o = {
        .format = "md", .n_prompt = 512, .n_gen = 64, .steps = 32, .reps = 3, .ubatch = 512, .baseline = -2};
    o.depth[0] = 0, o.depth[1] = 512, o.depth[2] = 2048, o.n_depth = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        int bad = 0;
        if (!strcmp(a, "-m") && v) o.path = argv[++i];
        else if (!strcmp(a, "--devices") && v) bad = parse_devices(argv[++i], &o);
        else if (!strcmp(a, "--baseline") && v) {
            i++;
            if (!strcmp(v, "ref")) o.baseline = REF;
            else if (cli_number("compare", a, v, 0, 1000, &x)) return 2;
            else o.baseline = (int)x;
        } else if (!strcmp(a, "--depths") && v) bad = parse_depths(argv[++i], &o);
        else if (!strcmp(a, "--prompts") && v) o.prompts = argv[++i];
        else if (!strcmp(a, "-o") && v) o.format = argv[++i];
        else if (!strcmp(a, "--out") && v) o.out = argv[++i];
// clang-format off
#define NUM(flag, lo, hi, dst)                                                  \
    else if (!strcmp(a, flag) && v) {                                           \
        if (cli_number("compare", flag, argv[++i], lo, hi, &x)) return 2;       \
        dst = (int)x;                                                           \
    }
        NUM("-p", 0, 1e6, o.n_prompt) NUM("-n", 0, 1e6, o.n_gen) NUM("--steps", 0, 1e5, o.steps)
        NUM("-r", 1, 64, o.reps) NUM("--ubatch", 1, 1e5, o.ubatch)
#undef NUM
            // clang-format on
            else if (!strcmp(a, "--peak-gbps") && v) {
            if (cli_number("compare", a, argv[++i], 1e-6, 1e9, &o.peak_gbps)) return 2;
        }
        else return cli_other_option("compare", a, usage);
        if (bad) {
            fprintf(stderr, "vkllm: compare: '%s' takes a comma-separated list (devices: indices or ref)\n", a);
            return 2;
        }
    }
    if (!o.path || (strcmp(o.format, "md") && strcmp(o.format, "json") && strcmp(o.format, "html"))) {
        fprintf(stderr, "vkllm: compare: -m FILE is required; -o takes md, json or html\n");
        usage(stderr);
        return 2;
    }
    if (!o.n_dev) { /* every usable device, and the reference for models it runs quickly */
        struct vkllm_device_info *devs;
        uint32_t n;
        vkllm_status st = vkllm_devices_list(&devs, &n);
        if (st) return cli_fail(st, "cannot list Vulkan devices");
        for (uint32_t i = 0; i < n && o.n_dev < MAX_DEV - 1; i++)
            if (devs[i].usable) o.dev[o.n_dev++] = (int)i;
        vkllm_devices_free(devs);
        struct vkllm_file_info fi;
        if (!file_info(o.path, &fi) && fi.n_params <= 300000000ull) o.dev[o.n_dev++] = REF;
        if (!o.n_dev) return cli_fail(VKLLM_STATUS_NO_DEVICE, "no usable Vulkan device");
    }
    if (o.baseline == -2) { /* ref when listed, else the first device */
        o.baseline = o.dev[0];
        for (int i = 0; i < o.n_dev; i++)
            if (o.dev[i] == REF) o.baseline = REF;
    }
    int32_t *ids[MAX_PROMPTS] = {0};
    uint32_t n_ids[MAX_PROMPTS] = {0};
    int n_prompts = 0;
    int code = tokenize_prompts(&o, ids, n_ids, &n_prompts);
    static struct dev_result ds[MAX_DEV];
    struct base_run runs[MAX_PROMPTS];
    memset(runs, 0, sizeof runs);
    uint32_t n_vocab = 0;
    char base_name[160] = "";
    if (!code) {
        struct vkllm_file_info fi;
        vkllm_status st = file_info(o.path, &fi);
        if (st) code = cli_fail(st, o.path);
        else n_vocab = fi.n_vocab;
    }
    for (int i = 0; !code && i < n_prompts; i++) code = base_run(&o, o.baseline, ids[i], n_ids[i], n_vocab, &runs[i]);
    if (o.baseline == REF) snprintf(base_name, sizeof base_name, "the scalar C reference (fp32)");
    else snprintf(base_name, sizeof base_name, "device %d", o.baseline);
    for (int i = 0; !code && i < o.n_dev; i++) {
        memset(&ds[i], 0, sizeof ds[i]);
        ds[i].id = o.dev[i];
        ds[i].is_baseline = o.dev[i] == o.baseline;
        code = run_device(&o, &ds[i], runs, n_prompts, n_vocab);
    }
    if (!code) {
        FILE *f = o.out ? fopen(o.out, "w") : stdout;
        if (!f) {
            fprintf(stderr, "vkllm: compare: cannot write --out %s\n", o.out);
            code = 1;
        } else {
            if (!strcmp(o.format, "md")) print_md(f, &o, ds, o.n_dev, base_name, n_prompts);
            else if (!strcmp(o.format, "html")) print_html(f, &o, ds, o.n_dev, base_name, n_prompts);
            else {
                cJSON *j = report_json(&o, ds, o.n_dev, base_name);
                char *s = cJSON_Print(j);
                if (s) fprintf(f, "%s\n", s);
                cJSON_free(s);
                cJSON_Delete(j);
            }
            if (f != stdout && fclose(f)) {
                fprintf(stderr, "vkllm: compare: writing %s failed\n", o.out);
                code = 1;
            }
        }
    }
    for (int i = 0; i < n_prompts; i++) free(ids[i]), free(runs[i].tok), free(runs[i].logits);
    return code;
}
