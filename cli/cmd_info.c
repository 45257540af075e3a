/* cmd_info.c - `vkllm info -m FILE [--json] [--tensors]`: what a GGUF model file holds. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf.h"
#include "model.h"
#include "types.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkllm info -m FILE [--json] [--tensors]\n"
            "\n"
            "Describe a GGUF model: architecture, shapes, parameter count, file size, tensor types,\n"
            "tokenizer, context length, chat template. Files of other architectures (or vocab-only\n"
            "files) are described as far as their metadata goes and marked unsupported.\n"
            "\n"
            "  -m, --model FILE   the GGUF file\n"
            "  --json             one JSON object on stdout instead of text\n"
            "  --tensors          also list every tensor (name, type, shape)\n"
            "  -h, --help         this text\n");
}

/* What info reports, gathered once for both output forms. */
struct info {
    const struct vkllm__gguf *g;
    const struct vkllm__model_desc *d; /* NULL when the model is not loadable */
    char arch[64], name[128], tok_model[64];
    char error[512];                   /* why d is NULL */
    uint64_t n_params;
    uint64_t type_count[VKLLM__TYPE_COUNT_];
    uint64_t type_bytes[VKLLM__TYPE_COUNT_];
    int64_t n_tokens, bos, eos;        /* -1 when absent */
    int64_t n_ctx;                     /* -1 when absent */
    int has_template;
};

static void get_string(const struct vkllm__gguf *g, const char *key, char *out, size_t cap) {
    struct vkllm__str s;
    out[0] = 0;
    if (vkllm__gguf_get_str(g, key, &s) != VKLLM_STATUS_OK) return;
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    memcpy(out, s.ptr, n);
    out[n] = 0;
}

static int64_t get_int(const struct vkllm__gguf *g, const char *key) {
    uint64_t v;
    return vkllm__gguf_get_u64(g, key, &v) == VKLLM_STATUS_OK && v <= INT64_MAX ? (int64_t)v : -1;
}

static void gather(struct info *in) {
    const struct vkllm__gguf *g = in->g;
    char key[160];
    get_string(g, "general.architecture", in->arch, sizeof in->arch);
    get_string(g, "general.name", in->name, sizeof in->name);
    get_string(g, "tokenizer.ggml.model", in->tok_model, sizeof in->tok_model);
    const struct vkllm__gguf_kv *toks = vkllm__gguf_find(g, "tokenizer.ggml.tokens");
    in->n_tokens = toks && toks->type == VKLLM__GGUF_ARRAY ? (int64_t)toks->arr_n : -1;
    in->bos = get_int(g, "tokenizer.ggml.bos_token_id");
    in->eos = get_int(g, "tokenizer.ggml.eos_token_id");
    snprintf(key, sizeof key, "%s.context_length", in->arch);
    in->n_ctx = get_int(g, key);
    in->has_template = vkllm__gguf_find(g, "tokenizer.chat_template") != NULL;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct vkllm__gguf_tensor *t = &g->tensors[i];
        uint64_t n = 1;
        for (int k = 0; k < 4; k++) n *= t->ne[k];
        in->n_params += n;
        if (t->type < VKLLM__TYPE_COUNT_) {
            in->type_count[t->type]++;
            in->type_bytes[t->type] += t->nbytes;
        }
    }
}

static const char *tokenizer_kind(const char *model) {
    if (!strcmp(model, "llama")) return "SentencePiece";
    if (!strcmp(model, "gpt2")) return "byte-level BPE";
    if (!strcmp(model, "bert")) return "WordPiece";
    if (!strcmp(model, "t5")) return "Unigram";
    if (!*model) return "none";
    return "other";
}

static const char *scaling_name(enum vkllm__rope_scaling s) {
    return s == VKLLM__ROPE_SCALING_LINEAR ? "linear" : s == VKLLM__ROPE_SCALING_LLAMA3 ? "llama3" : "none";
}

static void human(double v, char *out, size_t cap) {
    const char *unit[] = {"", "K", "M", "B", "T"};
    int u = 0;
    while (v >= 1000.0 && u < 4) v /= 1000.0, u++;
    snprintf(out, cap, u ? "%.2f%s" : "%.0f%s", v, unit[u]);
}

static void print_text(const struct info *in, int list_tensors) {
    const struct vkllm__gguf *g = in->g;
    char buf[32];
    printf("file:            %s\n", g->path);
    printf("size:            %llu bytes (%.1f MiB), GGUF v%u, %llu metadata keys\n", (unsigned long long)g->size,
           (double)g->size / (1024.0 * 1024.0), g->version, (unsigned long long)g->n_kv);
    printf("architecture:    %s%s%s%s\n", in->arch[0] ? in->arch : "(none)", in->name[0] ? " (" : "", in->name,
           in->name[0] ? ")" : "");
    printf("supported:       %s%s\n", in->d ? "yes" : "no: ", in->d ? "" : in->error);
    if (in->d) {
        const struct vkllm__hparams *hp = &in->d->hp;
        printf("layers:          %u\n", hp->n_layer);
        printf("embedding:       %u (ffn %u)\n", hp->n_embd, hp->n_ff);
        printf("heads:           %u query, %u key/value (GQA %u), head dim %u\n", hp->n_head, hp->n_head_kv,
               hp->n_head / hp->n_head_kv, hp->head_dim);
        printf("vocabulary:      %u%s\n", hp->n_vocab, hp->tied_embd ? " (tied embeddings)" : "");
        printf("rope:            theta %g, %u dims, %s pairs, scaling %s", (double)hp->rope.theta, hp->rope.n_rot,
               hp->rope.neox ? "NeoX" : "normal", scaling_name(hp->rope.scaling));
        if (hp->rope.scaling != VKLLM__ROPE_SCALING_NONE) printf(" x%g", (double)hp->rope.factor);
        printf("\nrms eps:         %g\n", (double)hp->rms_eps);
    }
    if (in->n_ctx >= 0) printf("context length:  %lld\n", (long long)in->n_ctx);
    human((double)in->n_params, buf, sizeof buf);
    printf("parameters:      %llu (%s)\n", (unsigned long long)in->n_params, buf);
    printf("tensors:         %llu:", (unsigned long long)g->n_tensors);
    for (uint32_t t = 0; t < VKLLM__TYPE_COUNT_; t++)
        if (in->type_count[t])
            printf(" %s x%llu (%.1f MiB)", vkllm__type_name(t), (unsigned long long)in->type_count[t],
                   (double)in->type_bytes[t] / (1024.0 * 1024.0));
    printf("\ntokenizer:       %s (%s), %lld tokens, bos %lld, eos %lld\n", in->tok_model[0] ? in->tok_model : "-",
           tokenizer_kind(in->tok_model), (long long)in->n_tokens, (long long)in->bos, (long long)in->eos);
    printf("chat template:   %s\n", in->has_template ? "yes" : "no");
    if (!list_tensors) return;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct vkllm__gguf_tensor *t = &g->tensors[i];
        printf("  %-36.*s %-6s [", (int)t->name.len, t->name.ptr, vkllm__type_name(t->type));
        for (uint32_t k = 0; k < (t->n_dims ? t->n_dims : 1); k++)
            printf("%s%llu", k ? ", " : "", (unsigned long long)t->ne[k]);
        printf("]\n");
    }
}

static void json_hparams(cJSON *o, const struct vkllm__hparams *hp) {
    cJSON_AddNumberToObject(o, "n_layer", hp->n_layer);
    cJSON_AddNumberToObject(o, "n_embd", hp->n_embd);
    cJSON_AddNumberToObject(o, "n_ff", hp->n_ff);
    cJSON_AddNumberToObject(o, "n_head", hp->n_head);
    cJSON_AddNumberToObject(o, "n_head_kv", hp->n_head_kv);
    cJSON_AddNumberToObject(o, "head_dim", hp->head_dim);
    cJSON_AddNumberToObject(o, "n_vocab", hp->n_vocab);
    cJSON_AddNumberToObject(o, "n_ctx_train", hp->n_ctx_train);
    cJSON_AddNumberToObject(o, "rms_eps", hp->rms_eps);
    cJSON_AddBoolToObject(o, "tied_embeddings", hp->tied_embd);
    cJSON *r = cJSON_AddObjectToObject(o, "rope");
    cJSON_AddNumberToObject(r, "theta", hp->rope.theta);
    cJSON_AddNumberToObject(r, "n_rot", hp->rope.n_rot);
    cJSON_AddStringToObject(r, "pairs", hp->rope.neox ? "neox" : "normal");
    cJSON_AddStringToObject(r, "scaling", scaling_name(hp->rope.scaling));
    cJSON_AddNumberToObject(r, "factor", hp->rope.factor);
}

static int print_json(const struct info *in, int list_tensors) {
    const struct vkllm__gguf *g = in->g;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", g->path);
    cJSON_AddNumberToObject(o, "file_size", (double)g->size);
    cJSON_AddNumberToObject(o, "gguf_version", g->version);
    cJSON_AddStringToObject(o, "architecture", in->arch);
    cJSON_AddStringToObject(o, "name", in->name);
    cJSON_AddBoolToObject(o, "supported", in->d != NULL);
    if (!in->d) cJSON_AddStringToObject(o, "error", in->error);
    else json_hparams(cJSON_AddObjectToObject(o, "hparams"), &in->d->hp);
    if (in->n_ctx >= 0) cJSON_AddNumberToObject(o, "context_length", (double)in->n_ctx);
    else cJSON_AddNullToObject(o, "context_length");
    cJSON_AddNumberToObject(o, "n_params", (double)in->n_params);
    cJSON_AddNumberToObject(o, "n_tensors", (double)g->n_tensors);
    cJSON *types = cJSON_AddObjectToObject(o, "tensor_types");
    for (uint32_t t = 0; t < VKLLM__TYPE_COUNT_; t++)
        if (in->type_count[t]) cJSON_AddNumberToObject(types, vkllm__type_name(t), (double)in->type_count[t]);
    cJSON *tok = cJSON_AddObjectToObject(o, "tokenizer");
    cJSON_AddStringToObject(tok, "model", in->tok_model);
    cJSON_AddStringToObject(tok, "kind", tokenizer_kind(in->tok_model));
    cJSON_AddNumberToObject(tok, "n_tokens", (double)in->n_tokens);
    cJSON_AddNumberToObject(tok, "bos_token_id", (double)in->bos);
    cJSON_AddNumberToObject(tok, "eos_token_id", (double)in->eos);
    cJSON_AddBoolToObject(o, "chat_template", in->has_template);
    if (list_tensors) {
        cJSON *arr = cJSON_AddArrayToObject(o, "tensors");
        for (uint64_t i = 0; i < g->n_tensors; i++) {
            const struct vkllm__gguf_tensor *t = &g->tensors[i];
            cJSON *e = cJSON_CreateObject();
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            cJSON_AddStringToObject(e, "name", name);
            cJSON_AddStringToObject(e, "type", vkllm__type_name(t->type));
            cJSON *ne = cJSON_AddArrayToObject(e, "ne");
            for (uint32_t k = 0; k < (t->n_dims ? t->n_dims : 1); k++)
                cJSON_AddItemToArray(ne, cJSON_CreateNumber((double)t->ne[k]));
            cJSON_AddItemToArray(arr, e);
        }
    }
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    if (!s) return vkllm_cli_fail(VKLLM_STATUS_OOM, "info");
    printf("%s\n", s);
    free(s);
    return 0;
}

int vkllm_cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int json = 0, list_tensors = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--tensors")) {
            list_tensors = 1;
        } else {
            fprintf(stderr, "vkllm info: unknown or incomplete option '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    struct vkllm__gguf *g;
    vkllm_status st = vkllm__gguf_open(path, &g);
    if (st != VKLLM_STATUS_OK) return vkllm_cli_fail(st, "info");
    static struct info in;
    memset(&in, 0, sizeof in);
    in.g = g;
    struct vkllm__model_desc *d = NULL;
    if (vkllm__model_desc_load(g, &d) != VKLLM_STATUS_OK)
        snprintf(in.error, sizeof in.error, "%s", vkllm_last_error());
    in.d = d;
    gather(&in);
    int rc = 0;
    if (json) rc = print_json(&in, list_tensors);
    else print_text(&in, list_tensors);
    vkllm__model_desc_free(d);
    vkllm__gguf_close(g);
    return rc;
}
