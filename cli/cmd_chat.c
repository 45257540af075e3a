/* cmd_chat.c - `vkllm chat -m FILE`: an interactive conversation with the model's chat template.
 * The conversation stays in the KV cache between turns: each turn feeds only the text the
 * template adds (the new user message and the assistant opening), not the history again.
 * /reset forgets the conversation, /stats prints the last reply's statistics, /quit (or EOF)
 * ends. Ctrl-C stops a reply, not the program. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm chat -m FILE [--chat-template NAME] [--system TEXT] [options]\n"
               "\n"
               "An interactive conversation using the model's chat template. Type a message and press\n"
               "Enter. Commands: /reset (start over), /stats (statistics of the last reply), /quit.\n"
               "Ctrl-C stops the current reply; Ctrl-D or /quit ends the program.\n"
               "\n"
               "  -m FILE                GGUF model\n"
               "  --chat-template NAME   use this template instead of the model's (names below)\n"
               "  --system TEXT          a system message at the start of the conversation\n"
               "  -c N                   context size in tokens (default: the model's, at most 4096)\n"
               "  --device N             Vulkan device index\n");
    fputs(CLI_KV_HELP, f);
    fputs(cli_sampling_help(), f);
    fprintf(f, "templates: %s\n", vkllm_chat_template_names());
}

struct reply {
    char *text;
    size_t len, cap;
};

static int on_text(const char *text, size_t len, void *ud) {
    struct reply *r = ud;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    if (r->len + len + 1 > r->cap) {
        size_t cap = (r->len + len + 1) * 2;
        char *nb = realloc(r->text, cap);
        if (!nb) return 1;
        r->text = nb;
        r->cap = cap;
    }
    memcpy(r->text + r->len, text, len);
    r->len += len;
    r->text[r->len] = 0;
    return cli_interrupted ? 1 : 0;
}

struct conversation {
    struct vkllm_chat_message *msgs;
    char **owned; /* message texts we allocated */
    size_t n, cap;
    char *fed; /* the text already in the KV cache (template rendering + replies) */
};

static int conv_add(struct conversation *c, const char *role, const char *content) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct vkllm_chat_message *nm = realloc(c->msgs, cap * sizeof *nm);
        char **no = realloc(c->owned, cap * sizeof *no);
        if (nm) c->msgs = nm;
        if (no) c->owned = no;
        if (!nm || !no) return -1;
        c->cap = cap;
    }
    char *copy = strdup(content);
    if (!copy) return -1;
    c->owned[c->n] = copy;
    c->msgs[c->n++] = (struct vkllm_chat_message){role, copy};
    return 0;
}

static void conv_reset(struct conversation *c, size_t keep) {
    while (c->n > keep) free(c->owned[--c->n]);
    free(c->fed);
    c->fed = NULL;
}

/* One turn: render the conversation, feed what is new since last time, stream the reply. */
static vkllm_status turn(vkllm_session_t s, vkllm_model_t model, const char *tmpl, struct conversation *c,
                         struct vkllm_generate_params gp, struct vkllm_generate_stats *stats) {
    char *full = NULL;
    vkllm_status st = vkllm_chat_format(model, tmpl, c->msgs, c->n, 1, &full);
    if (st) return st;
    size_t fed_len = c->fed ? strlen(c->fed) : 0;
    int continuing = c->fed && vkllm_session_n_past(s) > 0 && !strncmp(full, c->fed, fed_len);
    gp.prompt = continuing ? full + fed_len : full;
    gp.keep_history = continuing;
    gp.parse_special = 1;
    struct reply r = {0};
    struct vkllm_generate_stats now; /* the last reply's stay in *stats when this one is refused */
    cli_interrupted = 0;
    st = vkllm_generate(s, &gp, on_text, &r, &now);
    printf("\n");
    if (!st) *stats = now;
    if (st == VKLLM_STATUS_CONTEXT_FULL) {
        fprintf(stderr, "vkllm: the conversation no longer fits in the context; /reset to start over\n");
    } else if (!st) {
        size_t fl = strlen(full);
        char *nf = malloc(fl + r.len + 1);
        if (nf) {
            memcpy(nf, full, fl);
            memcpy(nf + fl, r.text ? r.text : "", r.len);
            nf[fl + r.len] = 0;
        }
        free(c->fed);
        c->fed = nf;
        if (conv_add(c, "assistant", r.text ? r.text : "")) st = VKLLM_STATUS_OOM;
    }
    free(r.text);
    vkllm_free(full);
    return st;
}

int cli_cmd_chat(int argc, char **argv) {
    const char *path = NULL, *tmpl = NULL, *system_msg = NULL;
    int device = -1;
    double n_ctx = 0;
    struct vkllm_generate_params gp = vkllm_generate_params_default();
    struct cli_bias bias = {0};
    struct vkllm_session_params sp = {.n_ctx = 0, .n_ubatch = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int taken = cli_sampling_arg("chat", a, v, &gp, &bias);
        if (!taken) taken = cli_kv_arg("chat", a, v, &sp);
        double d;
        if (taken < 0) return 2;
        if (taken) i++;
        else if (!strcmp(a, "-m") && v) path = argv[++i];
        else if (!strcmp(a, "--chat-template") && v) tmpl = argv[++i];
        else if (!strcmp(a, "--system") && v) system_msg = argv[++i];
        else if (!strcmp(a, "-c") && v) {
            if (cli_number("chat", a, argv[++i], 1, 1e7, &n_ctx)) return 2;
        } else if (!strcmp(a, "--device") && v) {
            if (cli_number("chat", a, argv[++i], 0, 1e4, &d)) return 2;
            device = (int)d;
        } else {
            return cli_other_option("chat", a, usage);
        }
    }
    if (!path) {
        fprintf(stderr, "vkllm: chat: -m FILE is required\n");
        return 2;
    }
    struct conversation c = {0};
    char *line = NULL;
    size_t line_cap = 0;
    sp.n_ctx = (uint32_t)n_ctx;
    struct cli_handles h;
    int code = cli_open(path, device, &sp, &h);
    if (code) return code;
    vkllm_model_t model = h.model;
    vkllm_session_t s = h.s;
    vkllm_status st;
    if (system_msg && conv_add(&c, "system", system_msg)) {
        code = cli_fail(VKLLM_STATUS_OOM, "chat");
        goto done;
    }
    /* Check the template before the first turn, so that an unknown one is reported at once. */
    char *probe = NULL;
    struct vkllm_chat_message hello = {"user", "hello"};
    if ((st = vkllm_chat_format(model, tmpl, &hello, 1, 1, &probe))) {
        code = cli_fail(st, "chat template");
        goto done;
    }
    vkllm_free(probe);
    size_t base = c.n;
    struct vkllm_generate_stats stats = {0};
    int interactive = isatty(0);
    cli_catch_sigint(1); /* Ctrl-C at the prompt interrupts the read (EINTR) */
    for (;;) {
        if (interactive) {
            fprintf(stderr, "> ");
            fflush(stderr);
        }
        cli_interrupted = 0;
        errno = 0;
        ssize_t n = getline(&line, &line_cap, stdin);
        if (n < 0) {
            if (errno == EINTR) {
                clearerr(stdin);
                fprintf(stderr, "\n");
                continue;
            }
            break; /* EOF */
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) break;
        if (!strcmp(line, "/reset")) {
            conv_reset(&c, base);
            vkllm_session_truncate(s, 0);
            fprintf(stderr, "[conversation reset]\n");
            continue;
        }
        if (!strcmp(line, "/stats")) {
            cli_print_stats(&stats, CLI_STATS_LINE);
            continue;
        }
        if (conv_add(&c, "user", line)) {
            code = cli_fail(VKLLM_STATUS_OOM, "chat");
            break;
        }
        st = turn(s, model, tmpl, &c, gp, &stats);
        if (st == VKLLM_STATUS_CONTEXT_FULL) {
            c.n--; /* the message that did not fit */
            free(c.owned[c.n]);
            continue;
        }
        if (st) {
            code = cli_fail(st, "generation failed");
            break;
        }
        if (stats.stop_reason == VKLLM_STOP_CANCELLED) fprintf(stderr, "[reply stopped]\n");
        if (stats.stop_reason == VKLLM_STOP_CONTEXT_FULL || stats.stop_reason == VKLLM_STOP_KV_FULL)
            fprintf(stderr, "[reply cut off: the %s is full (%u positions); /reset to start over]\n",
                    stats.stop_reason == VKLLM_STOP_KV_FULL ? "KV cache pool" : "context", vkllm_session_n_ctx(s));
    }
    cli_catch_sigint(0);
    fflush(stdout);
    if (!code) cli_print_devices(stderr, "vkllm: chat: ", model, s, NULL, 0); /* a layer split: each device's part */
done:
    conv_reset(&c, 0);
    free(c.msgs);
    free(c.owned);
    free(line);
    return cli_close(&h, code);
}
