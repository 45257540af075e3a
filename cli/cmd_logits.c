/* cmd_logits.c - `vkllm logits -m FILE --ids "1 2 3" [--top K] [--decode] [--json]`: feed token
 * ids (one prefill, or one at a time with --decode) and print the top logits at every position,
 * for checking numerics across devices. --device ref runs the scalar reference instead. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm logits -m FILE --ids \"ID ID ...\" [--top K] [--decode] [--json]\n"
               "                    [--device N|ref] [-c N] [--ubatch N]\n"
               "\n"
               "Feeds the token ids to the model and prints, for every position, the K highest logits.\n"
               "\n"
               "  -m FILE        GGUF model\n"
               "  --ids LIST     token ids separated by spaces or commas\n"
               "  --top K        logits per position (default 10)\n"
               "  --decode       feed the ids one at a time (decode steps) instead of one prefill\n"
               "  --json         a JSON list [{\"pos\": p, \"top\": [[id, logit], ...]}, ...], highest first\n"
               "  --device N     Vulkan device index; `ref` runs the scalar C reference forward pass\n"
               "  --devices LIST one model split by layers over these devices (--split-mode, --tensor-split\n"
               "                 as run's; docs/devices.md)\n"
               "  -c N           context size (default: the number of ids)\n"
               "  --ubatch N     prefill micro-batch size (default 256)\n");
}

struct pair {
    int32_t id;
    float logit;
};

static int cmp_pair(const void *a, const void *b) {
    const struct pair *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->id - y->id;
}

/* The K largest (stable by id on ties). */
static void top_k(const float *logits, uint32_t n_vocab, uint32_t k, struct pair *out) {
    struct pair *all = malloc(sizeof *all * n_vocab);
    if (!all) return;
    for (uint32_t i = 0; i < n_vocab; i++) all[i] = (struct pair){(int32_t)i, logits[i]};
    qsort(all, n_vocab, sizeof *all, cmp_pair);
    memcpy(out, all, sizeof *out * k);
    free(all);
}

static int parse_ids(const char *s, int32_t **ids, uint32_t *n) {
    uint32_t cap = 16, cnt = 0;
    int32_t *v = malloc(sizeof *v * cap);
    while (v && *s) {
        while (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (end == s || errno || x < 0 || x > INT32_MAX) {
            free(v);
            return -1;
        }
        if (cnt == cap) {
            cap *= 2;
            int32_t *nv = realloc(v, sizeof *v * cap);
            if (!nv) break;
            v = nv;
        }
        v[cnt++] = (int32_t)x;
        s = end;
    }
    *ids = v;
    *n = cnt;
    return v ? 0 : -1;
}

static void print_pos(cJSON *arr, uint32_t pos, const float *logits, uint32_t n_vocab, uint32_t k) {
    struct pair *top = calloc(k, sizeof *top);
    if (!top) return;
    top_k(logits, n_vocab, k, top);
    if (arr) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "pos", pos);
        cJSON *t = cJSON_AddArrayToObject(o, "top");
        for (uint32_t i = 0; i < k; i++) {
            cJSON *p = cJSON_CreateArray();
            cJSON_AddItemToArray(p, cJSON_CreateNumber(top[i].id));
            cJSON_AddItemToArray(p, cJSON_CreateNumber(top[i].logit));
            cJSON_AddItemToArray(t, p);
        }
        cJSON_AddItemToArray(arr, o);
    } else {
        printf("pos %u:", pos);
        for (uint32_t i = 0; i < k; i++) printf(" %d:%.4f", top[i].id, top[i].logit);
        printf("\n");
    }
    free(top);
}

/* The scalar reference path (--device ref): KV cache in f32, as the reference has it. */
static int run_ref(const char *path, const int32_t *ids, uint32_t n, uint32_t k, uint32_t n_ctx, cJSON *arr) {
    vkllm_ref_t r = NULL;
    vkllm_status st = vkllm_ref_init(path, n_ctx > n ? n_ctx : n, 0, &r);
    uint32_t n_vocab = st ? 0 : vkllm_ref_n_vocab(r);
    for (uint32_t i = 0; !st && i < n; i++) {
        const float *logits;
        st = vkllm_ref_eval(r, ids[i], i, &logits);
        if (!st) print_pos(arr, i, logits, n_vocab, k < n_vocab ? k : n_vocab);
    }
    vkllm_ref_free(r);
    return st ? cli_fail(st, path) : 0;
}

static int run_gpu(const char *path, int device, const int32_t *ids, uint32_t n, uint32_t k, int decode, uint32_t n_ctx,
                   uint32_t n_ubatch, cJSON *arr) {
    struct vkllm_session_params sp = {.n_ctx = n_ctx ? n_ctx : n, .n_ubatch = n_ubatch};
    struct cli_handles h;
    int code = cli_open(path, device, &sp, &h);
    if (code) return code;
    vkllm_session_t s = h.s;
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm_model_info info;
    vkllm_model_get_info(h.model, &info);
    if (k > info.n_vocab) k = info.n_vocab;
    if (decode) {
        for (uint32_t i = 0; i < n && !st; i++) {
            st = vkllm_session_eval(s, &ids[i], 1, 0);
            if (!st) print_pos(arr, i, vkllm_session_logits(s, 0), info.n_vocab, k);
        }
    } else {
        st = vkllm_session_eval(s, ids, n, 1);
        for (uint32_t i = 0; i < n && !st; i++) print_pos(arr, i, vkllm_session_logits(s, i), info.n_vocab, k);
    }
    if (st) code = cli_fail(st, "evaluation failed");
    return cli_close(&h, code);
}

int cli_cmd_logits(int argc, char **argv) {
    const char *path = NULL, *ids_str = NULL;
    int json = 0, decode = 0, device = -1, ref = 0;
    long top = 10, n_ctx = 0, n_ubatch = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc, r;
        if (!strcmp(a, "-m") && has) path = argv[++i];
        else if (!strcmp(a, "--ids") && has) ids_str = argv[++i];
        else if (!strcmp(a, "--top") && has) top = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "-c") && has) n_ctx = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--ubatch") && has) n_ubatch = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--decode")) decode = 1;
        else if ((r = cli_split_arg("logits", a, has ? argv[i + 1] : NULL)) != 0) { /* --devices, ... */
            if (r < 0) return 2;
            i++;
        } else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--device") && has) {
            const char *d = argv[++i];
            if (!strcmp(d, "ref")) ref = 1;
            else {
                char *end;
                long v = strtol(d, &end, 10);
                if (*end || v < 0) {
                    fprintf(stderr, "vkllm: logits: --device takes an index or 'ref', not '%s'\n", d);
                    return 2;
                }
                device = (int)v;
            }
        } else {
            return cli_other_option("logits", a, usage);
        }
    }
    if (!path || !ids_str) {
        fprintf(stderr, "vkllm: logits: -m FILE and --ids are required\n");
        usage(stderr);
        return 2;
    }
    if (top < 1 || n_ctx < 0 || n_ubatch < 0) {
        fprintf(stderr, "vkllm: logits: --top, -c and --ubatch take positive numbers\n");
        return 2;
    }
    int32_t *ids = NULL;
    uint32_t n = 0;
    if (parse_ids(ids_str, &ids, &n) || n == 0) {
        fprintf(stderr, "vkllm: logits: --ids must be a list of non-negative token ids\n");
        free(ids);
        return 2;
    }
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    int code = ref ? run_ref(path, ids, n, (uint32_t)top, (uint32_t)n_ctx, arr)
                   : run_gpu(path, device, ids, n, (uint32_t)top, decode, (uint32_t)n_ctx, (uint32_t)n_ubatch, arr);
    if (arr) {
        if (!code) {
            char *s = cJSON_PrintUnformatted(arr);
            if (s) printf("%s\n", s);
            cJSON_free(s);
        }
        cJSON_Delete(arr);
    }
    free(ids);
    return code;
}
