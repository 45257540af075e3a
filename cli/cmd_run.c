/* cmd_run.c - `vkllm run -m FILE -p PROMPT`: stream a completion to stdout as it is generated
 * (the prompt is not echoed); statistics on stderr. Ctrl-C stops the generation cleanly. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json_schema.h"

#define MAX_STOP 16

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm run -m FILE [-p PROMPT | -f FILE] [options]\n"
               "\n"
               "Streams the model's continuation of the prompt to stdout (the prompt is not echoed);\n"
               "statistics go to stderr. Without -p or -f the prompt is read from stdin. An empty\n"
               "prompt starts from BOS. Ctrl-C stops the generation and still prints the statistics.\n"
               "\n"
               "  -m FILE                GGUF model\n"
               "  -p TEXT                prompt\n"
               "  -f FILE                read the prompt from a file\n"
               "  -c N                   context size in tokens (default: the model's, at most 4096)\n"
               "  --device N             Vulkan device index (see `vkllm devices`)\n"
               "  --ubatch N             prefill micro-batch size (default 256)\n"
               "  --stop TEXT            stop when TEXT appears (not printed); may be repeated\n"
               "  --stats text|json      statistics format on stderr (default text)\n"
               "  --no-bos               do not add BOS even if the model asks for it\n"
               "  --parse-special        special-token text in the prompt becomes its token\n"
               "  --json-object          JSON mode: the output is one JSON object (each token drawn among those\n"
               "                         that keep it valid JSON); generation stops when it closes\n"
               "  --grammar TEXT         constrain the output to a GBNF grammar (llama.cpp's format; rule root)\n"
               "  --grammar-file FILE    ... read from a file\n"
               "  -j, --json-schema JSON constrain the output to JSON valid under this JSON schema (objects,\n"
               "                         arrays, strings, numbers, enums, anyOf, $ref, ...; a keyword it\n"
               "                         cannot honour is an error)\n"
               "  --json-schema-file FILE  ... read from a file\n"
               "  --show-probs N         after the text, each generated token's probability and the N most\n"
               "                         likely tokens at that step (the model's distribution: temperature 1,\n"
               "                         before penalties and truncation; N <= 20)\n");
    fputs(CLI_KV_HELP, f);
    fputs(cli_sampling_help(), f);
}

static int on_text(const char *text, size_t len, void *ud) {
    (void)ud;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return cli_interrupted ? 1 : 0;
}

/* A token's text, quoted, with newlines and control bytes escaped, into buf. */
static const char *token_text(vkllm_model_t m, int32_t id, char *buf, size_t n) {
    char *t = NULL;
    size_t o = 0;
    if (vkllm_detokenize(m, &id, 1, 1, &t)) {
        snprintf(buf, n, "#%d", (int)id);
        return buf;
    }
    buf[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)t; *p && o + 6 < n; p++) {
        if (*p == '\n') o += (size_t)snprintf(buf + o, n - o, "\\n");
        else if (*p == '"' || *p == '\\') o += (size_t)snprintf(buf + o, n - o, "\\%c", *p);
        else if (*p < 0x20) o += (size_t)snprintf(buf + o, n - o, "\\x%02x", *p);
        else buf[o++] = (char)*p;
    }
    snprintf(buf + o, n - o, "\"");
    vkllm_free(t);
    return buf;
}

/* --show-probs: every generated token (and the end-of-text one) with its probability and the
 * most likely tokens at its step. */
static void print_probs(vkllm_model_t m, vkllm_gen_t g) {
    uint32_t n = vkllm_gen_n_generated(g) + 1;
    fprintf(
        stderr,
        "\n--\nprobabilities (the model's distribution at each step: temperature 1, before penalties and truncation)\n");
    for (uint32_t i = 0; i < n; i++) {
        struct vkllm_token_probs p;
        if (vkllm_gen_token_probs(g, i, &p)) break; /* no end-of-text token */
        char a[64];
        fprintf(stderr, "%4u %-18s %6.2f%%  |", i + 1, token_text(m, p.id, a, sizeof a), 100 * exp(p.logprob));
        for (uint32_t j = 0; j < p.n_top; j++)
            fprintf(stderr, " %s %.2f%%", token_text(m, p.top[j].id, a, sizeof a), 100 * exp(p.top[j].logprob));
        fprintf(stderr, "\n");
    }
}

/* All of f (NUL-terminated, malloc'd); NULL with errno set when it cannot be read (a directory:
 * EISDIR) or memory runs out. */
static char *read_all(FILE *f, size_t *n) {
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + len, 1, cap - len - 1, f);
        len += r;
        if (r == 0) break;
        if (len + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
        }
    }
    if (b && ferror(f)) {
        int e = errno ? errno : EIO;
        free(b);
        errno = e;
        return NULL;
    }
    if (!b) errno = ENOMEM;
    else b[len] = 0;
    *n = len;
    return b;
}

/* --grammar-file, --json-schema, --json-schema-file: the grammar text into *out (malloc'd);
 * --grammar is used as it is. Prints a line and returns -1 on failure. */
static int load_grammar(const char *grammar, const char *grammar_file, const char *schema, const char *schema_file,
                        char **out) {
    (void)grammar;
    const char *file = grammar_file ? grammar_file : schema_file;
    char *text = NULL;
    size_t n = 0;
    if (file) {
        FILE *f = fopen(file, "rb");
        if (!f) {
            fprintf(stderr, "vkllm: run: cannot open %s: %s\n", file, strerror(errno));
            return -1;
        }
        text = read_all(f, &n);
        fclose(f);
        if (!text) {
            fprintf(stderr, "vkllm: run: cannot read %s: %s\n", file, strerror(errno));
            return -1;
        }
        if (grammar_file) return *out = text, 0;
        schema = text;
    }
    if (!schema) return 0;
    cJSON *j = cJSON_Parse(schema);
    char err[256];
    if (!j) {
        fprintf(stderr, "vkllm: run: the JSON schema is not valid JSON\n");
        free(text);
        return -1;
    }
    *out = cli_schema_grammar(j, err, sizeof err);
    cJSON_Delete(j);
    free(text);
    if (!*out) {
        fprintf(stderr, "vkllm: run: JSON schema: %s\n", err);
        return -1;
    }
    return 0;
}

/* The context's memory by use, as {"device": {"weights": bytes, ...}, "host": {...}}: every
 * buffer counted once, "empty" the blocks' bytes no buffer holds. */

int cli_cmd_run(int argc, char **argv) {
    const char *path = NULL, *prompt = NULL, *prompt_file = NULL;
    const char *grammar = NULL, *grammar_file = NULL, *schema = NULL, *schema_file = NULL;
    const char *stops[MAX_STOP];
    uint32_t n_stop = 0;
    int device = -1, json = 0, show_probs = -1;
    double n_ctx = 0, n_ubatch = 0;
    struct vkllm_generate_params gp = vkllm_generate_params_default();
    struct cli_bias bias = {0};
    struct vkllm_session_params sp = {.n_ctx = 0, .n_ubatch = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        int taken = cli_sampling_arg("run", a, v, &gp, &bias);
        if (!taken) taken = cli_kv_arg("run", a, v, &sp);
        if (taken < 0) return 2;
        if (taken) {
            i++;
            continue;
        }
#define NUM(flag, lo, hi, dst)                                \
    if (!strcmp(a, flag) && v) {                              \
        if (cli_number("run", flag, v, lo, hi, &d)) return 2; \
        dst;                                                  \
        i++;                                                  \
        continue;                                             \
    }
        NUM("-c", 1, 1e7, n_ctx = d)
        NUM("--ubatch", 1, 1e5, n_ubatch = d)
        NUM("--device", 0, 1e4, device = (int)d)
        NUM("--show-probs", 0, VKLLM_MAX_TOP_PROBS, show_probs = (int)d)
#undef NUM
        if (!strcmp(a, "-m") && v) path = argv[++i];
        else if (!strcmp(a, "-p") && v) prompt = argv[++i];
        else if (!strcmp(a, "-f") && v) prompt_file = argv[++i];
        else if (!strcmp(a, "--grammar") && v) grammar = argv[++i], grammar_file = NULL, schema = schema_file = NULL;
        else if (!strcmp(a, "--grammar-file") && v) grammar_file = argv[++i], grammar = schema = schema_file = NULL;
        else if ((!strcmp(a, "-j") || !strcmp(a, "--json-schema")) && v)
            schema = argv[++i], grammar = grammar_file = schema_file = NULL;
        else if (!strcmp(a, "--json-schema-file") && v) schema_file = argv[++i], grammar = grammar_file = schema = NULL;
        else if (!strcmp(a, "--stop") && v) {
            if (n_stop == MAX_STOP) {
                fprintf(stderr, "vkllm: run: at most %d --stop strings\n", MAX_STOP);
                return 2;
            }
            stops[n_stop++] = argv[++i];
        } else if (!strcmp(a, "--stats") && v) {
            const char *f = argv[++i];
            if (strcmp(f, "json") && strcmp(f, "text")) {
                fprintf(stderr, "vkllm: run: --stats takes text or json\n");
                return 2;
            }
            json = !strcmp(f, "json");
        } else if (!strcmp(a, "--json-object")) gp.json_object = 1;
        else if (!strcmp(a, "--no-bos")) gp.add_bos = 0;
        else if (!strcmp(a, "--parse-special")) gp.parse_special = 1;
        else return cli_other_option("run", a, usage);
    }
    if (!path) {
        fprintf(stderr, "vkllm: run: -m FILE is required\n");
        usage(stderr);
        return 2;
    }
    if (prompt && prompt_file) {
        fprintf(stderr, "vkllm: run: -p and -f both give the prompt: use one\n");
        return 2;
    }
    char *owned = NULL;
    size_t plen = 0;
    if (prompt_file || (!prompt && !isatty(0))) {
        FILE *f = prompt_file ? fopen(prompt_file, "rb") : stdin;
        if (!f) {
            fprintf(stderr, "vkllm: run: cannot open %s: %s\n", prompt_file, strerror(errno));
            return 3;
        }
        owned = read_all(f, &plen);
        int e = errno;
        if (prompt_file) fclose(f);
        if (!owned) {
            fprintf(stderr, "vkllm: run: cannot read %s: %s\n", prompt_file ? prompt_file : "the prompt from stdin",
                    strerror(e));
            return e == ENOMEM ? 5 : 3;
        }
        prompt = owned;
    } else if (prompt) {
        plen = strlen(prompt);
    } else {
        prompt = "";
    }
    char *owned_grammar = NULL;
    if (load_grammar(grammar, grammar_file, schema, schema_file, &owned_grammar)) {
        free(owned);
        return 2;
    }
    gp.grammar = owned_grammar ? owned_grammar : grammar;
    if (gp.grammar && gp.json_object) {
        fprintf(stderr, "vkllm: run: --json-object cannot be combined with a grammar or a JSON schema\n");
        free(owned), free(owned_grammar);
        return 2;
    }
    gp.prompt = prompt;
    gp.prompt_len = plen;
    gp.stop = stops;
    gp.n_stop = n_stop;

    sp.n_ctx = (uint32_t)n_ctx, sp.n_ubatch = (uint32_t)n_ubatch;
    struct cli_handles h;
    int code = cli_open(path, device, &sp, &h);
    if (code) {
        free(owned), free(owned_grammar);
        return code;
    }
    cli_catch_sigint(1);
    struct vkllm_generate_stats stats;
    vkllm_status st;
    vkllm_gen_t g = NULL;
    gp.n_probs = show_probs;
    if (show_probs >= 0) { /* step by step, to read the probabilities at the end */
        st = vkllm_gen_start(h.s, &gp, on_text, NULL, &g);
        while (!st && !vkllm_gen_done(g)) st = vkllm_gen_step(&g, 1);
        if (!st) st = vkllm_gen_status(g);
        if (g) vkllm_gen_stats(g, &stats);
    } else {
        st = vkllm_generate(h.s, &gp, on_text, NULL, &stats);
    }
    cli_catch_sigint(0);
    printf("\n");
    fflush(stdout);
    if (st) code = cli_fail(st, "generation failed");
    else {
        if (g) print_probs(h.model, g);
        struct vkllm_memory_breakdown mb;
        vkllm_ctx_memory_breakdown(h.ctx, &mb);
        if (json) { /* a line of its own, before the stats' (the last line) */
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, "memory", cli_memory_json(&mb));
            char *t = cJSON_PrintUnformatted(o);
            if (t) fprintf(stderr, "%s\n", t);
            cJSON_free(t);
            cJSON_Delete(o);
        }
        cli_print_stats(&stats, json ? CLI_STATS_JSON : CLI_STATS_TEXT);
        if (!json) {
            fprintf(stderr, "device memory by use (MiB):");
            for (int u = 0; u < VKLLM_MEMORY_USE_COUNT; u++)
                if (mb.device[u])
                    fprintf(stderr, " %s %.1f", vkllm_memory_use_name((enum vkllm_memory_use)u),
                            mb.device[u] / 1048576.0);
            fprintf(stderr, "\n");
            cli_print_devices(stderr, "", h.model, h.s, NULL, 0); /* a layer split: each device's part */
        }
    }
    vkllm_gen_free(g);
    code = cli_close(&h, code);
    free(owned), free(owned_grammar);
    return code;
}
