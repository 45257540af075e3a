/* serve_api.c - the OpenAI API's JSON: request fields -> a serve_req (every wrong type or value
 * named in a 400), plain replies, SSE chunks, error bodies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_schema.h"
#include "serve.h"

/* --- request fields ------------------------------------------------------------------------ */

struct parse {
    char *err;
    size_t errn;
    const char **param;
};

static int bad(struct parse *p, const char *param, const char *fmt, const char *what) {
    snprintf(p->err, p->errn, fmt, what);
    *p->param = param;
    return 400;
}

/* A field that is absent or null counts as not given. */
static const cJSON *field(const cJSON *body, const char *name) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(body, name);
    return f && !cJSON_IsNull(f) ? f : NULL;
}

/* A number field within [lo, hi] (an integer when integer is set). 1 when given, 0 when not,
 * -1 (and the 400 in p) when wrong. */
static int number(struct parse *p, const cJSON *body, const char *name, double lo, double hi, int integer,
                  double *out) {
    const cJSON *f = field(body, name);
    if (!f) return 0;
    char msg[256];
    if (!cJSON_IsNumber(f)) {
        snprintf(msg, sizeof msg, "'%s' must be %s", name, integer ? "an integer" : "a number");
        bad(p, name, "%s", msg);
        return -1;
    }
    double v = f->valuedouble;
    if (integer && v != floor(v)) {
        snprintf(msg, sizeof msg, "'%s' must be an integer, not %g", name, v);
        bad(p, name, "%s", msg);
        return -1;
    }
    if (!(v >= lo && v <= hi)) {
        snprintf(msg, sizeof msg, "'%s' must be in [%g, %g], not %g", name, lo, hi, v);
        bad(p, name, "%s", msg);
        return -1;
    }
    *out = v;
    return 1;
}

static int boolean(struct parse *p, const cJSON *body, const char *name, int *out) {
    const cJSON *f = field(body, name);
    if (!f) return 0;
    if (!cJSON_IsBool(f)) {
        char msg[128];
        snprintf(msg, sizeof msg, "'%s' must be a boolean", name);
        bad(p, name, "%s", msg);
        return -1;
    }
    *out = cJSON_IsTrue(f);
    return 1;
}

/* The text of a chat message's content: a string, or an array of {"type":"text","text":...}
 * parts (joined), or null/absent (""). */
static int message_content(struct parse *p, const cJSON *m, struct serve_buf *out) {
    const cJSON *c = field(m, "content");
    if (!c) return 0;
    if (cJSON_IsString(c)) {
        sbuf_add(out, c->valuestring, strlen(c->valuestring));
        return 0;
    }
    if (!cJSON_IsArray(c))
        return bad(p, "messages", "%s", "a message's 'content' must be a string or an array of parts");
    const cJSON *part;
    cJSON_ArrayForEach(part, c) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text))
            return bad(p, "messages", "%s",
                       "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported");
        sbuf_add(out, text->valuestring, strlen(text->valuestring));
    }
    return 0;
}

/* messages -> the prompt, rendered with the chat template. */
static int chat_prompt(struct serve_server *srv, struct parse *p, const cJSON *body, struct serve_req *r) {
    const cJSON *msgs = field(body, "messages");
    if (!msgs) return bad(p, "messages", "%s", "'messages' is required");
    int n = cJSON_IsArray(msgs) ? cJSON_GetArraySize(msgs) : -1;
    if (n <= 0) return bad(p, "messages", "%s", "'messages' must be a non-empty array of messages");
    if (!srv->has_chat_template)
        return bad(
            p, "messages", "%s",
            "the model has no chat template: start the server with --chat-template NAME, or use /v1/completions");
    const int cap = n + 1;
    struct vkllm_chat_message *cm = calloc((size_t)cap, sizeof *cm); /* + the tools' own message */
    struct serve_buf *texts = calloc((size_t)n + 1, sizeof *texts);
    int status = 0, i = 0;
    if (!cm || !texts) {
        status = bad(p, "messages", "%s", "out of memory");
        goto done;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            status = bad(p, "messages", "%s", "each message must be an object with a string 'role'");
            goto done;
        }
        static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
        size_t k = 0;
        while (k < sizeof roles / sizeof roles[0] && strcmp(roles[k], role->valuestring)) k++;
        if (k == sizeof roles / sizeof roles[0]) {
            status = bad(p, "messages", "%s", "a message's 'role' must be system, developer, user, assistant or tool");
            goto done;
        }
        const char *rs = k == 1 ? "system" : roles[k]; /* OpenAI's developer role is the system prompt */
        if ((status = message_content(p, m, &texts[i]))) goto done;
        sbuf_add(&texts[i], "", 0);
        if (serve_tools_message(r, m, &rs, &texts[i]) || texts[i].oom) {
            status = bad(p, "messages", "%s", "out of memory");
            goto done;
        }
        cm[i].role = rs;
        cm[i].content = texts[i].p ? texts[i].p : "";
        i++;
    }
    if (serve_tools_inject(r, cm, texts, &n)) {
        status = bad(p, "messages", "%s", "out of memory");
        goto done;
    }
    char *out = NULL; /* the tokenizer is immutable: no lock (vkllm.h) */
    vkllm_status st = vkllm_chat_format(srv->model, srv->chat_template, cm, (size_t)n, 1, &out);
    char msg[400];
    if (st) snprintf(msg, sizeof msg, "%s", vkllm_last_error());
    if (st) {
        status = bad(p, "messages", "cannot apply the chat template: %s", msg);
        goto done;
    }
    r->prompt = strdup(out);
    vkllm_free(out);
    if (!r->prompt) status = bad(p, "messages", "%s", "out of memory");
    r->gp.parse_special = 1;
done:
    for (int k = 0; texts && k < cap; k++) sbuf_free(&texts[k]);
    free(texts);
    free(cm);
    return status;
}

/* A prompt of token ids (an array of integers), into r->prompt_ids. */
static int token_prompt(struct parse *p, const cJSON *a, struct serve_req *r) {
    int n = cJSON_GetArraySize(a);
    r->prompt_ids = malloc(sizeof *r->prompt_ids * (size_t)(n ? n : 1));
    r->prompt = strdup(""); /* no text */
    if (!r->prompt_ids || !r->prompt) return bad(p, "prompt", "%s", "out of memory");
    const cJSON *t;
    cJSON_ArrayForEach(t, a) {
        if (!cJSON_IsNumber(t) || t->valuedouble != (double)(int32_t)t->valuedouble || t->valuedouble < 0)
            return bad(p, "prompt", "%s", "a token-id prompt must hold non-negative integers");
        r->prompt_ids[r->n_prompt_ids++] = (int32_t)t->valuedouble;
    }
    r->gp.prompt_tokens = r->prompt_ids;
    r->gp.n_prompt_tokens = r->n_prompt_ids;
    return 0;
}

/* A string, an array of token ids, or a batch: an array of strings and arrays of token ids
 * (r->n_prompts of them; r gets the one at r->prompt_index). */
static int completion_prompt(struct parse *p, const cJSON *body, struct serve_req *r) {
    const cJSON *f = field(body, "prompt");
    if (!f) return bad(p, "prompt", "%s", "'prompt' is required");
    r->n_prompts = 1;
    if (cJSON_IsArray(f) && cJSON_GetArraySize(f) > 0 &&
        (cJSON_IsString(cJSON_GetArrayItem(f, 0)) || cJSON_IsArray(cJSON_GetArrayItem(f, 0)))) {
        r->n_prompts = cJSON_GetArraySize(f); /* a batch */
        const cJSON *e;
        cJSON_ArrayForEach(e, f) if (!cJSON_IsString(e) && !cJSON_IsArray(e)) return bad(
            p, "prompt", "%s", "a batch of prompts must hold strings and arrays of token ids");
        if (r->n_prompts * r->n > SERVE_MAX_N)
            return bad(p, "prompt", "%s", "at most 16 choices per request (prompts in the batch times n)");
        f = cJSON_GetArrayItem(f, r->prompt_index);
    }
    if (cJSON_IsArray(f) && (cJSON_GetArraySize(f) == 0 || cJSON_IsNumber(cJSON_GetArrayItem(f, 0))))
        return token_prompt(p, f, r);
    if (!cJSON_IsString(f))
        return bad(p, "prompt", "%s",
                   "'prompt' must be a string, an array of token ids, or a batch (an array of those)");
    r->prompt = strdup(f->valuestring);
    return r->prompt ? 0 : bad(p, "prompt", "%s", "out of memory");
}

static int stop_strings(struct parse *p, const cJSON *body, struct serve_req *r) {
    const cJSON *f = field(body, "stop");
    if (!f) return 0;
    const cJSON *one = f;
    int n = cJSON_IsString(f) ? 1 : cJSON_IsArray(f) ? cJSON_GetArraySize(f) : -1;
    if (n < 0) return bad(p, "stop", "%s", "'stop' must be a string or an array of strings");
    if (n > SERVE_MAX_STOP) return bad(p, "stop", "'stop' takes at most %s strings", "16");
    for (int i = 0; i < n; i++) {
        const cJSON *s = cJSON_IsString(f) ? one : cJSON_GetArrayItem(f, i);
        if (!cJSON_IsString(s) || !*s->valuestring) return bad(p, "stop", "%s", "'stop' must hold non-empty strings");
        if (!(r->stops[i] = strdup(s->valuestring))) return bad(p, "stop", "%s", "out of memory");
    }
    r->gp.stop = (const char *const *)r->stops;
    r->gp.n_stop = (uint32_t)n;
    return 0;
}

static int logit_bias(struct serve_server *srv, struct parse *p, const cJSON *body, struct serve_req *r) {
    const cJSON *f = field(body, "logit_bias");
    if (!f) return 0;
    if (!cJSON_IsObject(f)) return bad(p, "logit_bias", "%s", "'logit_bias' must be an object of token id -> bias");
    int n = cJSON_GetArraySize(f);
    if (n > 1024) return bad(p, "logit_bias", "%s", "'logit_bias' takes at most 1024 tokens");
    if (!n) return 0;
    r->bias_tokens = calloc((size_t)n, sizeof *r->bias_tokens);
    r->bias_values = calloc((size_t)n, sizeof *r->bias_values);
    if (!r->bias_tokens || !r->bias_values) return bad(p, "logit_bias", "%s", "out of memory");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f) {
        char *end;
        long id = strtol(e->string, &end, 10);
        if (!*e->string || *end || id < 0 || id >= (long)srv->n_vocab)
            return bad(p, "logit_bias", "'logit_bias' keys must be token ids of the vocabulary, not '%s'", e->string);
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= -100 && e->valuedouble <= 100))
            return bad(p, "logit_bias", "'logit_bias' values must be numbers in [-100, 100] (token %s)", e->string);
        r->bias_tokens[i] = (int32_t)id;
        r->bias_values[i++] = (float)e->valuedouble;
    }
    r->gp.sampling.bias_tokens = r->bias_tokens;
    r->gp.sampling.bias_values = r->bias_values;
    r->gp.sampling.n_bias = (uint32_t)n;
    return 0;
}

/* max_tokens, the sampling fields, n, stream. */
static int scalars(struct parse *p, const cJSON *body, int chat, struct serve_req *r) {
    struct vkllm_sampling_params *sp = &r->gp.sampling;
    double d;
    int k;
    r->gp.n_predict = chat ? -1 : 16; /* OpenAI's defaults: a chat reply runs to its end */
    if ((k = number(p, body, "max_tokens", 1, 1e9, 1, &d)) < 0) return 400;
    if (k) r->gp.n_predict = (int32_t)d;
    if (chat && (k = number(p, body, "max_completion_tokens", 1, 1e9, 1, &d)) < 0) return 400;
    if (chat && k) r->gp.n_predict = (int32_t)d;
    if ((k = number(p, body, "temperature", 0, 2, 0, &d)) < 0) return 400;
    if (k) sp->temperature = (float)d;
    if ((k = number(p, body, "top_p", 0, 1, 0, &d)) < 0) return 400;
    if (k) sp->top_p = (float)d;
    if ((k = number(p, body, "top_k", 0, 1e9, 1, &d)) < 0) return 400;
    if (k) sp->top_k = (int32_t)d;
    if ((k = number(p, body, "min_p", 0, 1, 0, &d)) < 0) return 400;
    if (k) sp->min_p = (float)d;
    if ((k = number(p, body, "presence_penalty", -2, 2, 0, &d)) < 0) return 400;
    if (k) sp->presence_penalty = (float)d;
    if ((k = number(p, body, "frequency_penalty", -2, 2, 0, &d)) < 0) return 400;
    if (k) sp->frequency_penalty = (float)d;
    if ((k = number(p, body, "seed", -9.2233720368547758e18, 1.8446744073709552e19, 1, &d)) < 0) return 400;
    /* -1: a random seed (llama.cpp's servers and their front-ends send -1 for that) */
    if (k && d != -1)
        sp->seed = d < 0                        ? (uint64_t)(int64_t)d
                   : d >= 1.8446744073709552e19 ? UINT64_MAX
                                                : (uint64_t)d,
        sp->has_seed = 1;
    r->n = 1;
    if ((k = number(p, body, "n", 1, SERVE_MAX_N, 1, &d)) < 0) return 400;
    if (k) r->n = (int)d;
    if (boolean(p, body, "stream", &r->stream) < 0) return 400;
    /* logprobs: completions take a count of alternatives (0..20), chat a flag and top_logprobs */
    r->gp.n_probs = -1;
    if (chat) {
        int want = 0;
        if (boolean(p, body, "logprobs", &want) < 0) return 400;
        if ((k = number(p, body, "top_logprobs", 0, VKLLM_MAX_TOP_PROBS, 1, &d)) < 0) return 400;
        if (k && !want) return bad(p, "top_logprobs", "%s", "'top_logprobs' needs 'logprobs': true");
        if (want) r->gp.n_probs = k ? (int32_t)d : 0;
    } else {
        if ((k = number(p, body, "logprobs", 0, VKLLM_MAX_TOP_PROBS, 1, &d)) < 0) return 400;
        if (k) r->gp.n_probs = (int32_t)d;
    }
    /* llama-server's field: false evaluates the whole prompt even where a slot's cache holds it */
    if (boolean(p, body, "cache_prompt", &r->gp.cache_prompt) < 0) return 400;
    const cJSON *so = field(body, "stream_options");
    if (so) {
        if (!cJSON_IsObject(so)) return bad(p, "stream_options", "%s", "'stream_options' must be an object");
        if (boolean(p, so, "include_usage", &r->include_usage) < 0) {
            *p->param = "stream_options";
            return 400;
        }
    }
    const cJSON *model = field(body, "model");
    if (model && !cJSON_IsString(model)) return bad(p, "model", "%s", "'model' must be a string");
    return 0;
}

/* What is not implemented yet is refused with a clear 400, never silently ignored: a JSON-mode or
 * agent client must not get free text with a 200. */
static int unsupported(struct parse *p, const cJSON *body, int chat) {
    const cJSON *f;
    if ((f = field(body, "response_format"))) {
        const cJSON *t = cJSON_IsObject(f) ? field(f, "type") : NULL;
        if (!cJSON_IsString(t)) return bad(p, "response_format", "%s", "'response_format' must be {\"type\": ...}");
        if (strcmp(t->valuestring, "text") && strcmp(t->valuestring, "json_object") &&
            strcmp(t->valuestring, "json_schema"))
            return bad(p, "response_format",
                       "'response_format' type '%s' is not supported (\"text\", "
                       "\"json_object\" and \"json_schema\" are)",
                       t->valuestring);
    }
    static const char *const never[] = {"functions", "function_call"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (field(body, never[i]))
            return bad(p, never[i],
                       "'%s' is not supported yet (grammars, JSON schemas and function calling are "
                       "not implemented)",
                       never[i]);
    if (!chat && (f = field(body, "tools")) && !(cJSON_IsArray(f) && cJSON_GetArraySize(f) == 0))
        return bad(p, "tools", "%s", "'tools' needs /v1/chat/completions (function calling is a chat feature)");
    if (!chat && (f = field(body, "tool_choice")) && !(cJSON_IsString(f) && !strcmp(f->valuestring, "none")))
        return bad(p, "tool_choice", "%s", "'tool_choice' needs /v1/chat/completions");
    double d;
    int k;
    if ((k = number(p, body, "best_of", 1, 1, 1, &d)) < 0)
        return bad(p, "best_of", "%s", "only best_of = 1 is supported");
    if (!chat && (f = field(body, "suffix")) && !(cJSON_IsString(f) && !*f->valuestring))
        return bad(p, "suffix", "%s", "'suffix' (fill in the middle) is not supported yet");
    return 0;
}

/* A JSON schema into r->grammar (400 naming param when it cannot be honoured). */
static int schema_grammar(struct parse *p, const cJSON *schema, const char *param, struct serve_req *r) {
    char why[256], msg[400];
    if (!cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return bad(p, param, "'%s' must be a JSON schema (an object)", param);
    if (!(r->grammar = cli_schema_grammar(schema, why, sizeof why))) {
        snprintf(msg, sizeof msg, "'%s': %s", param, why);
        return bad(p, param, "%s", msg);
    }
    return 0;
}

/* Structured output: llama-server's grammar and json_schema fields, OpenAI's response_format
 * json_object and json_schema (and llama-server's json_object with a schema). One at most. */
static int structured(struct parse *p, const cJSON *body, struct serve_req *r) {
    const cJSON *gr = field(body, "grammar"), *js = field(body, "json_schema"), *rf = field(body, "response_format");
    const char *type = rf ? field(rf, "type")->valuestring : "text";
    int given = (gr != NULL) + (js != NULL) + (strcmp(type, "text") != 0);
    if (given > 1)
        return bad(p, gr ? "grammar" : "json_schema", "%s",
                   "only one of 'grammar', 'json_schema' and a 'response_format' other than text may be given");
    if (given && r->grammar)
        return bad(p, "tool_choice", "%s",
                   "a required tool call cannot be combined with 'grammar', 'json_schema' or 'response_format'");
    int st = 0;
    if (gr) {
        if (!cJSON_IsString(gr)) return bad(p, "grammar", "%s", "'grammar' must be a string (GBNF)");
        if (!(r->grammar = strdup(gr->valuestring))) return bad(p, "grammar", "%s", "out of memory");
    } else if (js) {
        st = schema_grammar(p, js, "json_schema", r);
    } else if (!strcmp(type, "json_schema")) {
        const cJSON *w = field(rf, "json_schema");
        if (!cJSON_IsObject(w) || !field(w, "schema"))
            return bad(p, "response_format", "%s",
                       "'response_format' json_schema needs {\"json_schema\": {\"schema\": {...}}}");
        st = schema_grammar(p, field(w, "schema"), "response_format", r);
    } else if (!strcmp(type, "json_object")) {
        if (field(rf, "schema")) st = schema_grammar(p, field(rf, "schema"), "response_format", r);
        else r->gp.json_object = 1;
    }
    if (st || !r->grammar) return st;
    if (given && vkllm_grammar_validate(r->grammar, 0)) { /* a required tool call's was checked when made */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", vkllm_last_error());
        return bad(p, gr ? "grammar" : js ? "json_schema" : "response_format", "%s", msg);
    }
    r->gp.grammar = r->grammar;
    return 0;
}

/* completions' echo: the reply starts with the prompt's text (a token-id prompt: its text). */
static int echo(struct serve_server *srv, struct parse *p, const cJSON *body, struct serve_req *r) {
    int on = 0;
    if (boolean(p, body, "echo", &on) < 0) return 400;
    if (!on) return 0;
    if (r->gp.n_probs >= 0)
        return bad(p, "echo", "%s", "'echo' with 'logprobs' is not supported (the prompt's logprobs are not computed)");
    char *text = NULL;
    if (r->n_prompt_ids) {
        if (vkllm_detokenize(srv->model, r->prompt_ids, r->n_prompt_ids, 0, &text))
            return bad(p, "prompt", "%s", "the token-id prompt cannot be turned into text for 'echo'");
        r->echo = serve_utf8_valid(text);
        vkllm_free(text);
    } else {
        r->echo = serve_utf8_valid(r->prompt);
    }
    return r->echo ? 0 : bad(p, "echo", "%s", "out of memory");
}

int serve_api_parse(struct serve_server *srv, const cJSON *body, int chat, struct serve_req *r, char *err, size_t errn,
                    const char **param) {
    struct parse p = {err, errn, param};
    *param = NULL;
    if (!cJSON_IsObject(body)) return bad(&p, NULL, "%s", "the request body must be a JSON object");
    r->chat = chat;
    int st = unsupported(&p, body, chat);
    if (!st) st = scalars(&p, body, chat, r);
    if (!st) st = stop_strings(&p, body, r);
    if (!st) st = logit_bias(srv, &p, body, r);
    if (!st && chat) st = serve_tools_parse(srv, body, r, err, errn, param);
    if (!st) st = chat ? chat_prompt(srv, &p, body, r) : completion_prompt(&p, body, r);
    if (!st && !chat) st = echo(srv, &p, body, r);
    if (!st) st = structured(&p, body, r);
    if (st) return st;
    r->gp.prompt = r->prompt;
    r->gp.prompt_len = strlen(r->prompt);
    return 0;
}

int serve_api_parse_prompt(struct serve_server *srv, const cJSON *body, struct serve_req *r, char *err, size_t errn,
                           const char **param) {
    struct parse p = {err, errn, param};
    *param = NULL;
    free(r->prompt), free(r->prompt_ids), free(r->echo);
    r->prompt = r->echo = NULL, r->prompt_ids = NULL, r->n_prompt_ids = 0;
    r->gp.prompt_tokens = NULL, r->gp.n_prompt_tokens = 0;
    int st = completion_prompt(&p, body, r);
    if (!st) st = echo(srv, &p, body, r);
    if (st) return st;
    r->gp.prompt = r->prompt;
    r->gp.prompt_len = strlen(r->prompt);
    return 0;
}

/* --- embeddings ---------------------------------------------------------------------------- */

int serve_pooling(const char *name, int *out) {
    static const char *const names[] = {"mean", "last", "cls"}; /* enum vkllm_pooling's order */
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, names[i])) return *out = i, 0;
    return -1;
}

/* One input: a string (tokenized as the model asks, BOS included) or an array of token ids. */
static int embed_input(struct serve_server *srv, struct parse *p, const cJSON *in, struct serve_req *r) {
    if (cJSON_IsArray(in)) {
        int st = token_prompt(p, in, r);
        if (st) {
            *p->param = "input";
            return st;
        }
        for (uint32_t i = 0; i < r->n_prompt_ids; i++)
            if ((uint32_t)r->prompt_ids[i] >= srv->n_vocab)
                return bad(p, "input", "%s", "'input' token ids must be in the vocabulary");
    } else {
        if (!*in->valuestring) return bad(p, "input", "%s", "'input' must not be an empty string");
        size_t len = strlen(in->valuestring), cap = len + 8, got = 0;
        if (!(r->prompt_ids = malloc(sizeof *r->prompt_ids * cap))) return bad(p, "input", "%s", "out of memory");
        if (vkllm_tokenize(srv->model, in->valuestring, len, 1, 0, r->prompt_ids, cap, &got) || got > cap)
            return bad(p, "input", "%s", "the input cannot be tokenized");
        r->n_prompt_ids = (uint32_t)got;
    }
    if (!r->n_prompt_ids) return bad(p, "input", "%s", "'input' must not be empty");
    return 0;
}

int serve_api_parse_embeddings(struct serve_server *srv, const cJSON *body, struct serve_req **reqs, int *n_req,
                               char *err, size_t errn, const char **param) {
    struct parse p = {err, errn, param};
    *param = NULL;
    *n_req = 0;
    if (!cJSON_IsObject(body)) return bad(&p, NULL, "%s", "the request body must be a JSON object");
    const cJSON *in = field(body, "input"), *f;
    if (!in) return bad(&p, "input", "%s", "'input' is required");
    /* one input (a string or token ids), or an array of them */
    int batch = cJSON_IsArray(in) && cJSON_GetArraySize(in) > 0 && !cJSON_IsNumber(cJSON_GetArrayItem(in, 0));
    int n = batch ? cJSON_GetArraySize(in) : 1;
    if (!batch && !cJSON_IsString(in) && !cJSON_IsArray(in))
        return bad(&p, "input", "%s", "'input' must be a string, an array of token ids, or an array of those");
    if (n > SERVE_MAX_N) return bad(&p, "input", "%s", "at most 16 inputs per request");
    int pooling = srv->pooling;         /* --pooling, else what the model file says (mean when nothing) */
    if ((f = field(body, "pooling"))) { /* vkllm's: mean, cls or last */
        if (!cJSON_IsString(f) || serve_pooling(f->valuestring, &pooling))
            return bad(&p, "pooling", "%s", "'pooling' must be \"mean\", \"cls\" or \"last\"");
    }
    int b64 = 0;
    if ((f = field(body, "encoding_format"))) {
        if (!cJSON_IsString(f) || (strcmp(f->valuestring, "float") && strcmp(f->valuestring, "base64")))
            return bad(&p, "encoding_format", "%s", "'encoding_format' must be \"float\" or \"base64\"");
        b64 = !strcmp(f->valuestring, "base64");
    }
    double d;
    int k = number(&p, body, "dimensions", 1, 1e9, 1, &d);
    if (k < 0) return 400;
    if (k && (uint32_t)d != srv->n_embd)
        return bad(&p, "dimensions", "%s", "'dimensions' must be the model's embedding size (no truncation)");
    const cJSON *model = field(body, "model");
    if (model && !cJSON_IsString(model)) return bad(&p, "model", "%s", "'model' must be a string");
    for (int i = 0; i < n; i++) {
        const cJSON *e = batch ? cJSON_GetArrayItem(in, i) : in;
        if (!cJSON_IsString(e) && !cJSON_IsArray(e))
            return bad(&p, "input", "%s", "'input' must hold strings or arrays of token ids");
        struct serve_req *r = serve_req_new();
        if (!r) return bad(&p, NULL, "%s", "out of memory");
        reqs[(*n_req)++] = r;
        r->embed = 1, r->pooling = pooling, r->n_embd = srv->n_embd, r->index = i, r->n = 1;
        r->b64 = b64;
        int st = embed_input(srv, &p, e, r);
        if (st) return st;
    }
    return 0;
}

static char *base64_floats(const float *v, uint32_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = (size_t)n * 4, o = 0;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out) return NULL;
    const unsigned char *b = (const unsigned char *)v; /* little-endian float32, as OpenAI's */
    for (size_t i = 0; i < len; i += 3) {
        unsigned x = (unsigned)b[i] << 16 | (i + 1 < len ? (unsigned)b[i + 1] << 8 : 0) | (i + 2 < len ? b[i + 2] : 0);
        out[o++] = tab[x >> 18 & 63], out[o++] = tab[x >> 12 & 63];
        out[o++] = i + 1 < len ? tab[x >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? tab[x & 63] : '=';
    }
    out[o] = 0;
    return out;
}

char *serve_api_embeddings_json(struct serve_server *srv, struct serve_req *const *rs, int n) {
    cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddItemToObject(o, "data", data);
    double tokens = 0;
    for (int i = 0; i < n; i++) {
        const struct serve_req *r = rs[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "object", "embedding");
        cJSON_AddNumberToObject(e, "index", r->index);
        if (r->b64) {
            char *s = base64_floats(r->embedding, r->n_embd);
            cJSON_AddStringToObject(e, "embedding", s ? s : "");
            free(s);
        } else {
            cJSON *a = cJSON_AddArrayToObject(e, "embedding");
            for (uint32_t j = 0; j < r->n_embd; j++) cJSON_AddItemToArray(a, cJSON_CreateNumber(r->embedding[j]));
        }
        cJSON_AddItemToArray(data, e);
        tokens += r->stats.n_prompt;
    }
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", tokens);
    cJSON_AddNumberToObject(u, "total_tokens", tokens);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* --- replies ------------------------------------------------------------------------------- */

char *serve_api_error_json(const char *message, const char *type, const char *param, const char *code) {
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    /* a message may quote the request (a model name, a key), or cut a quote short mid-character */
    char *valid = serve_utf8_valid(message);
    cJSON_AddStringToObject(e, "message", valid ? valid : "(out of memory)");
    free(valid);
    cJSON_AddStringToObject(e, "type", type);
    if (param) cJSON_AddStringToObject(e, "param", param);
    else cJSON_AddNullToObject(e, "param");
    if (code) cJSON_AddStringToObject(e, "code", code);
    else cJSON_AddNullToObject(e, "code");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static cJSON *head(struct serve_server *srv, struct serve_req *r, const char *object) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON_AddStringToObject(o, "system_fingerprint", "vkllm");
    return o;
}

/* The usage of the choices of one request: each prompt counted once (as OpenAI does), the
 * completions summed. */
static void add_usage(cJSON *o, struct serve_req *const *rs, int n) {
    double gen = 0, prompt = 0, cached = 0;
    for (int i = 0; i < n; i++) {
        gen += rs[i]->stats.n_generated;
        if (rs[i]->index % rs[i]->n == 0) /* each prompt of a batch once */
            prompt += rs[i]->stats.n_prompt, cached += rs[i]->stats.n_prompt_cached;
    }
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", gen);
    cJSON_AddNumberToObject(u, "total_tokens", prompt + gen);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details"); /* OpenAI: the prompt's cached part */
    cJSON_AddNumberToObject(d, "cached_tokens", cached);
}

/* llama.cpp's timings object. predicted_* covers the tokens after the prompt's forward pass. */
static void add_timings(cJSON *o, const struct serve_req *r) {
    const struct vkllm_generate_stats *s = &r->stats;
    cJSON *t = cJSON_AddObjectToObject(o, "timings");
    double predicted_ms = s->total_ms - s->prefill_ms;
    if (predicted_ms < 0) predicted_ms = 0;
    cJSON_AddNumberToObject(t, "prompt_n", s->n_prompt - s->n_prompt_cached); /* evaluated (llama-server) */
    cJSON_AddNumberToObject(t, "cache_n", s->n_prompt_cached);                /* reused from the KV cache */
    cJSON_AddNumberToObject(t, "prompt_ms", s->prefill_ms);
    cJSON_AddNumberToObject(t, "prompt_per_second", s->prefill_tps);
    cJSON_AddNumberToObject(t, "predicted_n", s->n_generated);
    cJSON_AddNumberToObject(t, "predicted_ms", predicted_ms);
    cJSON_AddNumberToObject(t, "predicted_per_second", predicted_ms > 0 ? s->n_generated * 1e3 / predicted_ms : 0);
    cJSON_AddNumberToObject(t, "ttft_ms", r->ttft_ms);
}

/* s[0..n) as valid UTF-8 (malloc'ed, NUL-terminated): every byte that does not start a
 * well-formed sequence (a lone byte of a byte-fallback token, an overlong form, a surrogate)
 * becomes U+FFFD, as a JSON string must hold Unicode text; so does a NUL byte (a byte token's
 * 0x00), which would end the C string that cJSON takes and silently drop the rest. NULL when out
 * of memory. */
/* The length of the well-formed UTF-8 sequence (not NUL) at p[i], n bytes in all; 0: none. */
static size_t utf8_seq(const unsigned char *p, size_t i, size_t n) {
    unsigned c = p[i];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    int ok = len > 0 && i + len <= n && c != 0;
    for (size_t k = 1; ok && k < len; k++) {
        ok = (p[i + k] & 0xc0) == 0x80;
        cp = cp << 6 | (p[i + k] & 0x3f);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= min_cp[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
    return ok ? len : 0;
}

int serve_utf8_is_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0, len; i < n; i += len)
        if (!(len = utf8_seq(p, i, n))) return 0;
    return 1;
}

char *serve_utf8_valid_n(const char *s, size_t n) {
    size_t o = 0;
    char *out = malloc(3 * n + 1);
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq(p, i, n);
        if (len) {
            memcpy(out + o, p + i, len);
            o += len, i += len;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3); /* U+FFFD */
            o += 3, i++;
        }
    }
    out[o] = 0;
    return out;
}

char *serve_utf8_valid(const char *s) { return serve_utf8_valid_n(s, strlen(s)); }

/* --- logprobs ------------------------------------------------------------------------------ */

/* Token id's text (special tokens rendered) as valid UTF-8, and its raw bytes (OpenAI's
 * "bytes") when bytes is not NULL. NULL when out of memory or the id is bad. */
static char *token_str(struct serve_server *srv, int32_t id, cJSON **bytes) {
    /* a token's text as it reads inside the reply: the tokenizer drops a leading space only at
     * the start of a text, so take the second copy of the token after a first one (by length: a
     * byte token's text may be a NUL) */
    vkllm_tokenizer_t tok = NULL;
    char *one = NULL, *two = NULL;
    size_t n1 = 0, n2 = 0;
    int32_t ids[2] = {id, id};
    if (vkllm_model_tokenizer(srv->model, &tok) || vkllm_tokenizer_decode(tok, ids, 1, 1, &one, &n1)) return NULL;
    if (vkllm_tokenizer_decode(tok, ids, 2, 1, &two, &n2)) {
        vkllm_free(one);
        return NULL;
    }
    size_t skip = n1 <= n2 ? n1 : n2;
    vkllm_free(one);
    if (bytes) {
        *bytes = cJSON_CreateArray();
        for (size_t i = skip; i < n2; i++) cJSON_AddItemToArray(*bytes, cJSON_CreateNumber((unsigned char)two[i]));
    }
    char *s = serve_utf8_valid_n(two + skip, n2 - skip);
    vkllm_free(two);
    return s;
}

/* The logprobs of lp[0..n) into choice c: chat's {"content": [{token, logprob, bytes,
 * top_logprobs}]}, or the completions' {tokens, token_logprobs, top_logprobs, text_offset}
 * (offsets from *offset, advanced). null when logprobs were not asked for. */
static void add_logprobs(struct serve_server *srv, struct serve_req *r, cJSON *c, const struct vkllm_token_probs *lp,
                         uint32_t n, size_t *offset) {
    if (r->gp.n_probs < 0) {
        cJSON_AddNullToObject(c, "logprobs");
        return;
    }
    cJSON *o = cJSON_AddObjectToObject(c, "logprobs");
    if (r->chat) {
        cJSON *content = cJSON_AddArrayToObject(o, "content");
        for (uint32_t i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject(), *bytes = NULL;
            char *t = token_str(srv, lp[i].id, &bytes);
            cJSON_AddStringToObject(e, "token", t ? t : "");
            free(t);
            cJSON_AddNumberToObject(e, "logprob", lp[i].logprob);
            cJSON_AddItemToObject(e, "bytes", bytes ? bytes : cJSON_CreateArray());
            cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
            for (uint32_t k = 0; k < lp[i].n_top; k++) {
                cJSON *a = cJSON_CreateObject(), *ab = NULL;
                char *at = token_str(srv, lp[i].top[k].id, &ab);
                cJSON_AddStringToObject(a, "token", at ? at : "");
                free(at);
                cJSON_AddNumberToObject(a, "logprob", lp[i].top[k].logprob);
                cJSON_AddItemToObject(a, "bytes", ab ? ab : cJSON_CreateArray());
                cJSON_AddItemToArray(top, a);
            }
            cJSON_AddItemToArray(content, e);
        }
        return;
    }
    cJSON *tokens = cJSON_AddArrayToObject(o, "tokens"), *tl = cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs"), *off = cJSON_AddArrayToObject(o, "text_offset");
    for (uint32_t i = 0; i < n; i++) {
        char *t = token_str(srv, lp[i].id, NULL);
        cJSON_AddItemToArray(tokens, cJSON_CreateString(t ? t : ""));
        cJSON_AddItemToArray(tl, cJSON_CreateNumber(lp[i].logprob));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)*offset));
        *offset += t ? strlen(t) : 0;
        free(t);
        cJSON *alts = cJSON_CreateObject();
        for (uint32_t k = 0; k < lp[i].n_top; k++) {
            char *at = token_str(srv, lp[i].top[k].id, NULL);
            if (at && !cJSON_GetObjectItemCaseSensitive(alts, at))
                cJSON_AddNumberToObject(alts, at, lp[i].top[k].logprob);
            free(at);
        }
        cJSON_AddItemToArray(top, alts);
    }
}

static void add_choice(struct serve_server *srv, cJSON *o, struct serve_req *r);

/* A choice object of r (its index) in o's "choices" array (made here at first). */
static cJSON *choice(cJSON *o, const struct serve_req *r) {
    cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "choices"), *c = cJSON_CreateObject();
    if (!a) a = cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToArray(a, c);
    cJSON_AddNumberToObject(c, "index", r->index);
    return c;
}

char *serve_api_reply_json(struct serve_server *srv, struct serve_req *const *rs, int n) {
    cJSON *o = head(srv, rs[0], rs[0]->chat ? "chat.completion" : "text_completion");
    for (int i = 0; i < n; i++) add_choice(srv, o, rs[i]);
    add_usage(o, rs, n);
    add_timings(o, rs[0]);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* A call object of OpenAI's tool_calls: id, type, function {name, arguments}. */
static cJSON *call_obj(const struct serve_req *r, int index, const char *name, const char *args) {
    cJSON *o = cJSON_CreateObject(), *fn = cJSON_CreateObject();
    char id[96];
    snprintf(id, sizeof id, "call_%s_%d", strchr(r->id, '-') ? strchr(r->id, '-') + 1 : r->id, index);
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "type", "function");
    cJSON_AddStringToObject(fn, "name", name);
    if (args) cJSON_AddStringToObject(fn, "arguments", args);
    cJSON_AddItemToObject(o, "function", fn);
    return o;
}

/* The plain reply's calls: the streaming scanner over the whole text (so a stream and a plain
 * reply give the same calls), or serve_tools_extract where the text leaves the style's layout. */
struct plain_sink {
    const struct serve_req *r;
    struct serve_buf content;
    cJSON *calls;
    struct serve_buf args[SERVE_MAX_N];
};
static void plain_content(void *ud, const char *t, size_t n) { sbuf_add(&((struct plain_sink *)ud)->content, t, n); }
static void plain_call(void *ud, int i, const char *name) {
    struct plain_sink *k = ud;
    if (i < SERVE_MAX_N) cJSON_AddItemToArray(k->calls, call_obj(k->r, i, name, NULL));
}
static void plain_args(void *ud, int i, const char *t, size_t n) {
    struct plain_sink *k = ud;
    if (i < SERVE_MAX_N) sbuf_add(&k->args[i], t, n);
}

static cJSON *plain_calls(const struct serve_req *r, const char *text, char **content) {
    *content = NULL;
    if (!r->tool_style) return NULL;
    struct plain_sink k = {r, {0}, cJSON_CreateArray(), {{0}}};
    struct serve_tool_sink sink = {plain_content, plain_call, plain_args, &k};
    struct serve_tool_scan sc;
    serve_tool_scan_init(&sc, r->tool_style);
    serve_tool_scan_run(&sc, text, strlen(text), 1, &sink);
    cJSON *calls = NULL;
    if (!serve_tool_scan_ok(&sc) || sc.n_calls > SERVE_MAX_N) {
        calls = serve_tools_extract(r, text, content);
    } else if (sc.n_calls > 0) {
        calls = k.calls, k.calls = NULL;
        int i = 0;
        cJSON *c;
        cJSON_ArrayForEach(c, calls) {
            cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(c, "function"), "arguments",
                                    k.args[i].p ? k.args[i].p : "{}");
            i++;
        }
        if (k.content.len) *content = strdup(k.content.p);
    }
    cJSON_Delete(k.calls);
    sbuf_free(&k.content);
    for (int i = 0; i < SERVE_MAX_N; i++) sbuf_free(&k.args[i]);
    return calls;
}

/* One whole choice of a plain reply. */
static void add_choice(struct serve_server *srv, cJSON *o, struct serve_req *r) {
    cJSON *c = choice(o, r);
    const char *text = r->text.p ? r->text.p : "";
    const char *finish = r->finish_reason;
    if (r->chat) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        char *content = NULL;
        cJSON *calls = plain_calls(r, text, &content);
        if (calls) { /* OpenAI: content null unless the model wrote text before its calls */
            if (content) cJSON_AddStringToObject(m, "content", content);
            else cJSON_AddNullToObject(m, "content");
            cJSON_AddItemToObject(m, "tool_calls", calls);
            if (finish && !strcmp(finish, "stop")) finish = "tool_calls";
        } else {
            cJSON_AddStringToObject(m, "content", text);
        }
        free(content);
    } else if (r->echo) {
        struct serve_buf b = {0};
        sbuf_add(&b, r->echo, strlen(r->echo));
        sbuf_add(&b, text, strlen(text) + 1);
        cJSON_AddStringToObject(c, "text", b.oom ? text : b.p);
        sbuf_free(&b);
    } else {
        cJSON_AddStringToObject(c, "text", text);
    }
    size_t offset = 0;
    add_logprobs(srv, r, c, r->probs, r->n_probs, &offset);
    cJSON_AddStringToObject(c, "finish_reason", finish);
}

/* One SSE event of the JSON text s (freed here; NULL: out of memory). */
static void emit_text(char *s, struct serve_buf *out) {
    if (!s) {
        out->oom = 1;
        return;
    }
    sbuf_add(out, "data: ", 6);
    sbuf_add(out, s, strlen(s));
    sbuf_add(out, "\n\n", 2);
    cJSON_free(s);
}

static void emit(cJSON *o, struct serve_buf *out) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    emit_text(s, out);
}

/* A chunk with one choice: the delta (chat) or text, and finish_reason (NULL: null). */
static cJSON *chunk(struct serve_server *srv, struct serve_req *r, const char *text, size_t len, int role,
                    const char *finish, const struct vkllm_token_probs *lp, uint32_t n_lp) {
    cJSON *o = head(srv, r, r->chat ? "chat.completion.chunk" : "text_completion");
    cJSON *c = choice(o, r);
    char *t = NULL;
    if (text) {
        t = malloc(len + 1);
        if (t) {
            memcpy(t, text, len);
            t[len] = 0;
        }
    }
    if (r->chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (role) cJSON_AddStringToObject(d, "role", "assistant");
        if (t) cJSON_AddStringToObject(d, "content", t);
    } else {
        cJSON_AddStringToObject(c, "text", t ? t : "");
    }
    free(t);
    if (r->gp.n_probs >= 0 && (n_lp || !r->chat)) add_logprobs(srv, r, c, lp, n_lp, &r->text_offset);
    else cJSON_AddNullToObject(c, "logprobs");
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    if (r->include_usage) cJSON_AddNullToObject(o, "usage"); /* as OpenAI: only the last chunk has it */
    return o;
}

void serve_api_sse_start(struct serve_server *srv, struct serve_req *r, struct serve_buf *out) {
    if (r->chat) emit(chunk(srv, r, "", 0, 1, NULL, NULL, 0), out);
    else if (r->echo) emit(chunk(srv, r, r->echo, strlen(r->echo), 0, NULL, NULL, 0), out);
}

/* Streamed with tools: the scanner's content as content deltas, a call's start as a tool_calls
 * delta with its id, type, name and empty arguments, then the arguments as they come (OpenAI's
 * shape). */
struct stream_sink {
    struct serve_server *srv;
    struct serve_req *r;
    struct serve_buf *out;
    const char *base;
};
static cJSON *tool_delta(struct stream_sink *k, cJSON **entry, int index) {
    cJSON *o = chunk(k->srv, k->r, NULL, 0, 0, NULL, NULL, 0);
    cJSON *d = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0),
                                                "delta");
    cJSON *a = cJSON_AddArrayToObject(d, "tool_calls");
    *entry = cJSON_CreateObject();
    cJSON_AddNumberToObject(*entry, "index", index);
    cJSON_AddItemToArray(a, *entry);
    return o;
}
static void stream_content(void *ud, const char *t, size_t n) {
    struct stream_sink *k = ud;
    emit(chunk(k->srv, k->r, t, n, 0, NULL, NULL, 0), k->out);
    k->r->tool_content_end = (size_t)(t - k->base) + n;
}
static void stream_call(void *ud, int i, const char *name) {
    struct stream_sink *k = ud;
    cJSON *e, *o = tool_delta(k, &e, i), *c = call_obj(k->r, i, name, "");
    cJSON *it;
    cJSON_ArrayForEach(it, c) cJSON_AddItemToObject(e, it->string, cJSON_Duplicate(it, 1));
    cJSON_Delete(c);
    emit(o, k->out);
}
static void stream_args(void *ud, int i, const char *t, size_t n) {
    struct stream_sink *k = ud;
    char *s = malloc(n + 1);
    if (!s) return;
    memcpy(s, t, n), s[n] = 0;
    cJSON *e, *o = tool_delta(k, &e, i), *fn = cJSON_AddObjectToObject(e, "function");
    cJSON_AddStringToObject(fn, "arguments", s);
    free(s);
    emit(o, k->out);
}

static void stream_scan(struct serve_server *srv, struct serve_req *r, int final, struct serve_buf *out) {
    if (!r->scan && (r->scan = malloc(sizeof *r->scan))) serve_tool_scan_init(r->scan, r->tool_style);
    if (!r->scan || !serve_tool_scan_ok(r->scan)) return;
    struct stream_sink k = {srv, r, out, r->held.p ? r->held.p : ""};
    struct serve_tool_sink sink = {stream_content, stream_call, stream_args, &k};
    serve_tool_scan_run(r->scan, k.base, r->held.len, final, &sink);
}

void serve_api_sse_text(struct serve_server *srv, struct serve_req *r, const char *text, size_t len,
                        const struct vkllm_token_probs *lp, uint32_t n_lp, struct serve_buf *out) {
    if (r->tool_style) { /* with tools the text may be a call: scanned as it comes */
        sbuf_add(&r->held, text, len);
        if (n_lp) emit(chunk(srv, r, NULL, 0, 0, NULL, lp, n_lp), out);
        stream_scan(srv, r, 0, out);
        return;
    }
    emit(chunk(srv, r, text, len, 0, NULL, lp, n_lp), out);
}

void serve_api_sse_end(struct serve_server *srv, struct serve_req *r, const struct vkllm_token_probs *lp, uint32_t n_lp,
                       struct serve_buf *out) {
    const char *finish = r->finish_reason;
    if (r->tool_style) {
        stream_scan(srv, r, 1, out);
        int calls = r->scan ? r->scan->n_calls : 0;
        if (r->scan && !serve_tool_scan_ok(r->scan) && calls == 0) {
            /* it left the layout before any call: the rest (as serve_tools_extract reads the whole) */
            char *content = NULL;
            cJSON *found = serve_tools_extract(r, r->held.p ? r->held.p : "", &content);
            int i = 0;
            cJSON *call;
            cJSON_ArrayForEach(call, found) {
                struct stream_sink k = {srv, r, out, ""};
                cJSON *e, *o = tool_delta(&k, &e, i++), *it;
                cJSON_ArrayForEach(it, call) cJSON_AddItemToObject(e, it->string, cJSON_Duplicate(it, 1));
                emit(o, out);
            }
            calls = i;
            if (!found && r->held.len > r->tool_content_end)
                emit(
                    chunk(srv, r, r->held.p + r->tool_content_end, r->held.len - r->tool_content_end, 0, NULL, NULL, 0),
                    out);
            cJSON_Delete(found);
            free(content);
        }
        if (calls && finish && !strcmp(finish, "stop")) finish = "tool_calls";
    }
    cJSON *f = chunk(srv, r, NULL, 0, 0, finish, lp, n_lp);
    add_timings(f, r);
    emit(f, out);
}

void serve_api_sse_done(struct serve_server *srv, struct serve_req *const *rs, int n, struct serve_buf *out) {
    if (rs[0]->include_usage) {
        cJSON *u = head(srv, rs[0], rs[0]->chat ? "chat.completion.chunk" : "text_completion");
        cJSON_AddArrayToObject(u, "choices");
        add_usage(u, rs, n);
        emit(u, out);
    }
    sbuf_add(out, "data: [DONE]\n\n", 14);
}

void serve_api_sse_error(struct serve_req *r, struct serve_buf *out) {
    emit_text(serve_api_error_json(r->err, "server_error", NULL, NULL), out);
}
