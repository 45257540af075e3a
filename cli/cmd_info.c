/* cmd_info.c - `vkllm info -m FILE [--json] [--tensors]`: what a GGUF model file holds. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm info -m FILE [--json] [--tensors]\n"
               "\n"
               "Describe a GGUF model: architecture, shapes, parameter count, file size, tensor types,\n"
               "tokenizer, context length, chat template. Files of other architectures (or vocab-only\n"
               "files) are described as far as their metadata goes and marked unsupported.\n"
               "\n"
               "  -m, --model FILE   the GGUF file\n"
               "  --json             one JSON object on stdout instead of text\n"
               "  --tensors          also list every tensor (name, type, shape, and what vkllm reads it as:\n"
               "                     a row of the layer table such as wq, or a global such as token_embd)\n"
               "  -h, --help         this text\n");
}

static const char *tokenizer_kind(const char *model) {
    if (!strcmp(model, "llama")) return "SentencePiece";
    if (!strcmp(model, "gpt2")) return "byte-level BPE";
    if (!strcmp(model, "bert")) return "WordPiece";
    if (!strcmp(model, "t5")) return "Unigram";
    if (!*model) return "none";
    return "other";
}

static void human(double v, char *out, size_t cap) {
    const char *unit[] = {"", "K", "M", "B", "T"};
    int u = 0;
    while (v >= 1000.0 && u < 4) v /= 1000.0, u++;
    snprintf(out, cap, u ? "%.2f%s" : "%.0f%s", v, unit[u]);
}

static void print_text(const char *path, vkllm_model_file_t f, const struct vkllm_file_info *in, int list_tensors) {
    char buf[32];
    printf("file:            %s\n", path);
    printf("size:            %llu bytes (%.1f MiB), GGUF v%u, %llu metadata keys\n", (unsigned long long)in->file_bytes,
           (double)in->file_bytes / (1024.0 * 1024.0), in->gguf_version, (unsigned long long)in->n_kv);
    printf("architecture:    %s%s%s%s\n", in->arch[0] ? in->arch : "(none)", in->name[0] ? " (" : "", in->name,
           in->name[0] ? ")" : "");
    printf("supported:       %s%s\n", in->supported ? "yes" : "no: ", in->supported ? "" : in->error);
    if (in->supported) {
        printf("layers:          %u\n", in->n_layer);
        printf("embedding:       %u (ffn %u)\n", in->n_embd, in->n_ff);
        printf("heads:           %u query, %u key/value (GQA %u), head dim %u\n", in->n_head, in->n_head_kv,
               in->n_head / in->n_head_kv, in->head_dim);
        printf("vocabulary:      %u%s\n", in->n_vocab, in->tied_embeddings ? " (tied embeddings)" : "");
        printf("rope:            theta %g, %u dims, %s pairs, scaling %s", (double)in->rope_theta, in->rope_dims,
               in->rope_neox ? "NeoX" : "normal", in->rope_scaling);
        if (strcmp(in->rope_scaling, "none")) printf(" x%g", (double)in->rope_factor);
        printf("\nrms eps:         %g\n", (double)in->rms_eps);
        if (in->n_expert)
            printf("experts:         %u per token of %u, ffn %u each\n", in->n_expert_used, in->n_expert, in->n_ff_exp);
        if (in->n_swa_layers)
            printf("sliding window:  %u positions on %u of %u layers\n", in->sliding_window, in->n_swa_layers,
                   in->n_layer);
        if (in->attn_softcap > 0 || in->final_softcap > 0)
            printf("soft-capping:    attention %g, logits %g\n", (double)in->attn_softcap, (double)in->final_softcap);
    }
    if (in->context_length >= 0) printf("context length:  %lld\n", (long long)in->context_length);
    human((double)in->n_params, buf, sizeof buf);
    printf("parameters:      %llu (%s)\n", (unsigned long long)in->n_params, buf);
    printf("tensors:         %llu:", (unsigned long long)in->n_tensors);
    for (uint32_t t = 0; t < in->n_types; t++)
        printf(" %s x%llu (%.1f MiB)", in->types[t].name, (unsigned long long)in->types[t].count,
               (double)in->types[t].bytes / (1024.0 * 1024.0));
    printf("\ntokenizer:       %s (%s), %lld tokens, bos %lld, eos %lld\n",
           in->tokenizer_model[0] ? in->tokenizer_model : "-", tokenizer_kind(in->tokenizer_model),
           (long long)in->n_tokens, (long long)in->bos, (long long)in->eos);
    printf("chat template:   %s\n", in->has_chat_template ? "yes" : "no");
    for (uint64_t i = 0; list_tensors && i < in->n_tensors; i++) {
        struct vkllm_tensor_info t;
        if (vkllm_model_file_tensor(f, i, &t)) continue;
        printf("  %-36s %-6s [", t.name, t.type);
        for (uint32_t k = 0; k < (t.n_dims ? t.n_dims : 1); k++)
            printf("%s%llu", k ? ", " : "", (unsigned long long)t.ne[k]);
        printf("]%s%s\n", t.role[0] ? "  " : "  (not read)", t.role);
    }
}

static void json_hparams(cJSON *o, const struct vkllm_file_info *in) {
    CLI_JSON_ADD(o, CLI_NUM("n_layer", in->n_layer), CLI_NUM("n_embd", in->n_embd), CLI_NUM("n_ff", in->n_ff),
                 CLI_NUM("n_head", in->n_head), CLI_NUM("n_head_kv", in->n_head_kv), CLI_NUM("head_dim", in->head_dim),
                 CLI_NUM("n_vocab", in->n_vocab), CLI_NUM("n_ctx_train", in->context_length),
                 CLI_NUM("rms_eps", in->rms_eps), CLI_BOOL("tied_embeddings", in->tied_embeddings));
    cJSON *r = cJSON_AddObjectToObject(o, "rope");
    CLI_JSON_ADD(r, CLI_NUM("theta", in->rope_theta), CLI_NUM("n_rot", in->rope_dims));
    cJSON_AddStringToObject(r, "pairs", in->rope_neox ? "neox" : "normal");
    cJSON_AddStringToObject(r, "scaling", in->rope_scaling);
    cJSON_AddNumberToObject(r, "factor", in->rope_factor);
    cJSON *ex = cJSON_AddObjectToObject(o, "experts");
    CLI_JSON_ADD(ex, CLI_NUM("count", in->n_expert), CLI_NUM("used", in->n_expert_used), CLI_NUM("n_ff", in->n_ff_exp));
    cJSON *sw = cJSON_AddObjectToObject(o, "sliding_window");
    CLI_JSON_ADD(sw, CLI_NUM("positions", in->sliding_window), CLI_NUM("layers", in->n_swa_layers));
    cJSON *sc = cJSON_AddObjectToObject(o, "softcap");
    CLI_JSON_ADD(sc, CLI_NUM("attention", in->attn_softcap), CLI_NUM("logits", in->final_softcap));
}

static int print_json(const char *path, vkllm_model_file_t f, const struct vkllm_file_info *in, int list_tensors) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", path);
    cJSON_AddNumberToObject(o, "file_size", (double)in->file_bytes);
    cJSON_AddNumberToObject(o, "gguf_version", in->gguf_version);
    cJSON_AddStringToObject(o, "architecture", in->arch);
    cJSON_AddStringToObject(o, "name", in->name);
    cJSON_AddBoolToObject(o, "supported", in->supported);
    if (!in->supported) cJSON_AddStringToObject(o, "error", in->error);
    else json_hparams(cJSON_AddObjectToObject(o, "hparams"), in);
    if (in->context_length >= 0) cJSON_AddNumberToObject(o, "context_length", (double)in->context_length);
    else cJSON_AddNullToObject(o, "context_length");
    cJSON_AddNumberToObject(o, "n_params", (double)in->n_params);
    cJSON_AddNumberToObject(o, "n_tensors", (double)in->n_tensors);
    cJSON *types = cJSON_AddObjectToObject(o, "tensor_types");
    for (uint32_t t = 0; t < in->n_types; t++)
        cJSON_AddNumberToObject(types, in->types[t].name, (double)in->types[t].count);
    cJSON *tok = cJSON_AddObjectToObject(o, "tokenizer");
    cJSON_AddStringToObject(tok, "model", in->tokenizer_model);
    cJSON_AddStringToObject(tok, "kind", tokenizer_kind(in->tokenizer_model));
    cJSON_AddNumberToObject(tok, "n_tokens", (double)in->n_tokens);
    cJSON_AddNumberToObject(tok, "bos_token_id", (double)in->bos);
    cJSON_AddNumberToObject(tok, "eos_token_id", (double)in->eos);
    cJSON_AddBoolToObject(o, "chat_template", in->has_chat_template);
    cJSON *arr = list_tensors ? cJSON_AddArrayToObject(o, "tensors") : NULL;
    for (uint64_t i = 0; arr && i < in->n_tensors; i++) {
        struct vkllm_tensor_info t;
        if (vkllm_model_file_tensor(f, i, &t)) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", t.name);
        cJSON_AddStringToObject(e, "type", t.type);
        cJSON *ne = cJSON_AddArrayToObject(e, "ne");
        for (uint32_t k = 0; k < (t.n_dims ? t.n_dims : 1); k++)
            cJSON_AddItemToArray(ne, cJSON_CreateNumber((double)t.ne[k]));
        if (t.role[0]) cJSON_AddStringToObject(e, "role", t.role);
        else cJSON_AddNullToObject(e, "role");
        cJSON_AddItemToArray(arr, e);
    }
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    if (!s) return cli_fail(VKLLM_STATUS_OOM, "info");
    printf("%s\n", s);
    free(s);
    return 0;
}

int cli_cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int json = 0, list_tensors = 0;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--tensors")) list_tensors = 1;
        else return cli_other_option("info", argv[i], usage);
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    vkllm_model_file_t f;
    vkllm_status st = vkllm_model_file_open(path, &f);
    if (st != VKLLM_STATUS_OK) return cli_fail(st, "info");
    static struct vkllm_file_info in;
    vkllm_model_file_info(f, &in);
    int rc = 0;
    if (json) rc = print_json(path, f, &in, list_tensors);
    else print_text(path, f, &in, list_tensors);
    vkllm_model_file_close(f);
    return rc;
}
