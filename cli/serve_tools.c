/* serve_tools.c - OpenAI function calling on /v1/chat/completions: `tools` described to the model
 * in its chat template's own convention, earlier calls and their results rendered back, the
 * reply's calls parsed into `tool_calls`, and a grammar that makes the reply one call when
 * tool_choice asks for one ("required" or a named function).
 *
 * Styles, by chat template:
 *   hermes  (chatml, qwen: Qwen 2.5 / 3, Hermes 2 / 3) the tools as JSON lines inside <tools></tools> in the
 *           system message; a call is <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>; a result is a
 *           user turn <tool_response>\n...\n</tool_response>
 *   llama3  (llama3: Llama 3.1 / 3.2 / 3.3 JSON calling) the tools in the first user message with the
 *           instruction Meta's template writes; a call is {"name": ..., "parameters": {...}}; a result is
 *           an "ipython" turn
 *   mistral (mistral-v3, mistral-v3-tekken, mistral-v7, mistral-v7-tekken) [AVAILABLE_TOOLS] [...]
 *           [/AVAILABLE_TOOLS] before the last [INST]; calls are [TOOL_CALLS] [{"name": ..., "arguments":
 *           {...}, "id": ...}]; results are [TOOL_RESULTS] {"content": ..., "call_id": ...} [/TOOL_RESULTS]
 * Any other template answers `tools` with a 400 naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_schema.h"
#include "serve.h"

static int fail(char *err, size_t errn, const char **param, const char *p, const char *msg) {
    snprintf(err, errn, "%s", msg);
    *param = p;
    return 400;
}

static char *json_text(const cJSON *v) { return v ? cJSON_PrintUnformatted(v) : NULL; }

/* A JSON string as Python's json.dumps(ensure_ascii=False) writes it. */
static void py_json_string(const char *str, struct serve_buf *b) {
    sbuf_add(b, "\"", 1);
    for (const unsigned char *s = (const unsigned char *)str; s && *s; s++) {
        const char *e = *s == '"'    ? "\\\""
                        : *s == '\\' ? "\\\\"
                        : *s == '\n' ? "\\n"
                        : *s == '\r' ? "\\r"
                        : *s == '\t' ? "\\t"
                        : *s == '\b' ? "\\b"
                        : *s == '\f' ? "\\f"
                                     : NULL;
        if (e) sbuf_add(b, e, 2);
        else if (*s < 0x20) sbuf_printf(b, "\\u%04x", *s);
        else sbuf_add(b, (const char *)s, 1);
    }
    sbuf_add(b, "\"", 1);
}

/* v as the models' chat templates print JSON (Jinja's tojson, Python's json.dumps): ", " and ": "
 * between items (cJSON writes none), non-ASCII as it is; with indent > 0, json.dumps(indent=...)'s
 * layout (Llama 3.1's tools). Numbers as the shortest text that reads back the same. */
static void py_json(const cJSON *v, int indent, int depth, struct serve_buf *b) {
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        int obj = cJSON_IsObject(v), k = 0;
        sbuf_add(b, obj ? "{" : "[", 1);
        const cJSON *c;
        cJSON_ArrayForEach(c, v) {
            if (k++) sbuf_add(b, indent ? "," : ", ", indent ? 1 : 2);
            if (indent) sbuf_printf(b, "\n%*s", indent * (depth + 1), "");
            if (obj) py_json_string(c->string, b), sbuf_add(b, ": ", 2);
            py_json(c, indent, depth + 1, b);
        }
        if (indent && k) sbuf_printf(b, "\n%*s", indent * depth, "");
        sbuf_add(b, obj ? "}" : "]", 1);
    } else if (cJSON_IsString(v)) {
        py_json_string(v->valuestring, b);
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        char t[40];
        if (d > -1e15 && d < 1e15 && d == (double)(long long)d) snprintf(t, sizeof t, "%lld", (long long)d);
        else
            for (int prec = 15; prec <= 17; prec++) {
                snprintf(t, sizeof t, "%.*g", prec, d);
                if (strtod(t, NULL) == d) break;
            }
        sbuf_add(b, t, strlen(t));
    } else {
        const char *lit = cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false" : "null";
        sbuf_add(b, lit, strlen(lit));
    }
}

/* py_json's text (malloc'd, NUL-terminated; NULL for v NULL or out of memory). */
static char *py_json_text(const cJSON *v, int indent) {
    if (!v) return NULL;
    struct serve_buf b = {0};
    py_json(v, indent, 0, &b);
    sbuf_add(&b, "", 0);
    if (b.oom) return sbuf_free(&b), NULL;
    return b.p;
}

int serve_tools_parse(struct serve_server *srv, const cJSON *body, struct serve_req *r, char *err, size_t errn,
                      const char **param) {
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
    if (cJSON_IsNull(tools)) tools = NULL;
    if (cJSON_IsNull(choice)) choice = NULL;
    if (tools && !cJSON_IsArray(tools)) return fail(err, errn, param, "tools", "'tools' must be an array of functions");
    /* the style from the chat template: earlier calls and tool results in the conversation are
     * rendered in it whether or not this request offers tools (an agent's final-answer turn sends
     * tool_choice "none", or no tools, after the calls) */
    const char *tmpl = NULL;
    if (vkllm_chat_template_resolve(srv->model, srv->chat_template, &tmpl)) tmpl = "none";
    if (!strcmp(tmpl, "chatml") || !strcmp(tmpl, "qwen")) r->history_style = SERVE_TOOLS_HERMES;
    else if (!strncmp(tmpl, "llama3", 6)) r->history_style = SERVE_TOOLS_LLAMA3;
    else if (!strncmp(tmpl, "mistral-v3", 10) || !strncmp(tmpl, "mistral-v7", 10))
        r->history_style = SERVE_TOOLS_MISTRAL;
    r->mistral_v3 = !strncmp(tmpl, "mistral-v3", 10);
    r->llama31 = !strcmp(tmpl, "llama3.1") || !strcmp(tmpl, "llama3.2");
    const char *forced = NULL; /* a function's name, or "" for any of them */
    if (choice) {
        if (cJSON_IsString(choice)) {
            if (!strcmp(choice->valuestring, "required")) forced = "";
            else if (strcmp(choice->valuestring, "auto") && strcmp(choice->valuestring, "none"))
                return fail(
                    err, errn, param, "tool_choice",
                    "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
            if (!strcmp(choice->valuestring, "none")) return 0; /* the model answers in text: tools not shown */
        } else {
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(choice, "function");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
            if (!cJSON_IsObject(choice) || !cJSON_IsString(name))
                return fail(
                    err, errn, param, "tool_choice",
                    "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
            forced = name->valuestring;
        }
    }
    if (!tools || !cJSON_GetArraySize(tools)) {
        if (forced)
            return fail(err, errn, param, "tool_choice", "'tool_choice' asks for a call but 'tools' lists none");
        return 0;
    }
    const cJSON *t;
    int found = forced == NULL || !*forced;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (!cJSON_IsObject(t) || !cJSON_IsString(type) || strcmp(type->valuestring, "function") ||
            !cJSON_IsObject(fn) || !cJSON_IsString(name) || !*name->valuestring)
            return fail(
                err, errn, param, "tools",
                "each tool must be {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}");
        for (const char *c = name->valuestring; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
                  *c == '-'))
                return fail(err, errn, param, "tools", "a function's name may hold only letters, digits, '_' and '-'");
        if (params && !cJSON_IsObject(params))
            return fail(err, errn, param, "tools", "a function's 'parameters' must be a JSON schema object");
        if (forced && *forced && !strcmp(forced, name->valuestring)) found = 1;
    }
    if (!found)
        return fail(err, errn, param, "tool_choice", "'tool_choice' names a function that 'tools' does not list");
    if (!(r->tool_style = r->history_style)) {
        char msg[256];
        snprintf(
            msg, sizeof msg,
            "'tools' is not supported with the '%s' chat template (chatml, qwen, llama3, llama3.1, llama3.2, mistral-v3 and mistral-v7 are)",
            tmpl);
        return fail(err, errn, param, "tools", msg);
    }
    if (!(r->tools = cJSON_Duplicate(tools, 1))) return fail(err, errn, param, "tools", "out of memory");
    if (!forced) return 0;
    /* a call is required: its grammar, one alternative per function allowed */
    const char *key = r->tool_style == SERVE_TOOLS_LLAMA3 ? "parameters" : "arguments";
    char why[256];
    struct serve_buf g = {0};
    sbuf_printf(&g, "root ::= %s\ncall ::= ",
                r->tool_style == SERVE_TOOLS_HERMES    ? "\"<tool_call>\\n\" call \"\\n</tool_call>\""
                : r->tool_style == SERVE_TOOLS_MISTRAL ? "\"[\" ws call ws \"]\""
                                                       : "call");
    int k = 0;
    cJSON_ArrayForEach(t, tools) {
        const char *name =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name")->valuestring;
        if (*forced && strcmp(forced, name)) continue;
        sbuf_printf(&g, "%sfn%d", k ? " | " : "", k);
        k++;
    }
    sbuf_add(&g, "\n", 1);
    k = 0;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const char *name = cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring;
        if (*forced && strcmp(forced, name)) continue;
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        cJSON *empty = params ? NULL : cJSON_Parse("{\"type\": \"object\", \"properties\": {}}");
        char rule[32];
        snprintf(rule, sizeof rule, "fn%d-args", k);
        char *rules = cli_schema_rules(params ? params : empty, rule, why, sizeof why);
        cJSON_Delete(empty);
        if (!rules) {
            char msg[400];
            snprintf(msg, sizeof msg, "function '%s': parameters: %s", name, why);
            sbuf_free(&g);
            return fail(err, errn, param, "tools", msg);
        }
        /* names hold no quote or backslash (checked above): a literal as they are */
        sbuf_printf(
            &g,
            "fn%d ::= \"{\" ws \"\\\"name\\\"\" ws \":\" ws \"\\\"%s\\\"\" ws \",\" ws \"\\\"%s\\\"\" ws \":\" ws fn%d-args ws \"}\"\n%s",
            k, name, key, k, rules);
        free(rules);
        k++;
    }
    sbuf_add(&g, cli_json_base_rules(), strlen(cli_json_base_rules()));
    if (g.oom) {
        sbuf_free(&g);
        return fail(err, errn, param, "tools", "out of memory");
    }
    if (vkllm_grammar_validate(g.p, 0)) {
        char msg[512];
        snprintf(msg, sizeof msg, "the tools' parameters cannot be made a grammar: %s", vkllm_last_error());
        sbuf_free(&g);
        return fail(err, errn, param, "tools", msg);
    }
    r->grammar = g.p; /* the caller points gp.grammar at it */
    return 0;
}

/* One earlier call of an assistant message, rendered as the model writes it. */
static void put_call(const struct serve_req *r, const cJSON *call, int i, struct serve_buf *out) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");
    cJSON *parsed = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;    /* OpenAI sends a JSON string */
    char *a = py_json_text(parsed ? parsed : cJSON_IsObject(args) ? args : NULL, 0); /* as the templates' tojson */
    const char *n = cJSON_IsString(name) ? name->valuestring : "";
    const char *av = a ? a : "{}";
    switch (r->history_style) {
    case SERVE_TOOLS_HERMES:
        sbuf_printf(out, "%s<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", i ? "\n" : "", n, av);
        break;
    case SERVE_TOOLS_LLAMA3: sbuf_printf(out, "%s{\"name\": \"%s\", \"parameters\": %s}", i ? "\n" : "", n, av); break;
    default:
        sbuf_printf(out, "%s{\"name\": \"%s\", \"arguments\": %s%s%s%s}",
                    i               ? ", "
                    : r->mistral_v3 ? "[TOOL_CALLS] ["
                                    : "[TOOL_CALLS][",
                    n, av, cJSON_IsString(id) ? ", \"id\": \"" : "", cJSON_IsString(id) ? id->valuestring : "",
                    cJSON_IsString(id) ? "\"" : "");
    }
    cJSON_Delete(parsed);
    free(a);
}

int serve_tools_message(const struct serve_req *r, const cJSON *m, const char **role, struct serve_buf *text) {
    if (!r->history_style) return 0;
    if (!strcmp(*role, "tool")) {
        struct serve_buf b = {0};
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "tool_call_id");
        switch (r->history_style) {
        case SERVE_TOOLS_HERMES:
            *role = "user";
            sbuf_printf(&b, "<tool_response>\n%s\n</tool_response>", text->p ? text->p : "");
            break;
        case SERVE_TOOLS_LLAMA3:
            *role = "ipython";
            sbuf_add(&b, text->p ? text->p : "", text->p ? strlen(text->p) : 0);
            break;
        default: /* Mistral's template: the content as it is (a result is JSON text), then the call's id */
            sbuf_printf(&b, "{\"content\": %s", text->p ? text->p : "");
            if (cJSON_IsString(id)) sbuf_printf(&b, ", \"call_id\": "), py_json_string(id->valuestring, &b);
            sbuf_add(&b, "}", 1);
        }
        sbuf_add(&b, "", 0);
        sbuf_free(text);
        *text = b;
        return b.oom ? -1 : 0;
    }
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (strcmp(*role, "assistant") || !cJSON_IsArray(calls) || !cJSON_GetArraySize(calls)) return 0;
    if (text->len) sbuf_add(text, "\n", 1);
    const cJSON *c;
    int i = 0;
    cJSON_ArrayForEach(c, calls) put_call(r, c, i++, text);
    if (r->history_style == SERVE_TOOLS_MISTRAL) sbuf_add(text, "]", 1);
    sbuf_add(text, "", 0);
    return text->oom ? -1 : 0;
}

int serve_tools_inject(const struct serve_req *r, struct vkllm_chat_message *cm, struct serve_buf *texts, int *n) {
    if (!r->tool_style) return 0;
    struct serve_buf b = {0};
    const cJSON *t;
    int at = -1;
    if (r->tool_style == SERVE_TOOLS_HERMES) { /* Qwen 2.5's wording, in the system message */
        at = *n && !strcmp(cm[0].role, "system") ? 0 : -1;
        if (at == 0 && *cm[0].content) sbuf_printf(&b, "%s\n\n", cm[0].content);
        sbuf_printf(&b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
        cJSON_ArrayForEach(t, r->tools) { /* as Qwen's template prints them: tojson */
            char *s = py_json_text(t, 0);
            sbuf_printf(&b, "\n%s", s ? s : "");
            free(s);
        }
        sbuf_printf(&b, "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                        "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                        "\"arguments\": <args-json-object>}\n</tool_call>");
    } else if (r->tool_style == SERVE_TOOLS_LLAMA3) { /* Meta's wording, in the first user message */
        for (int i = 0; i < *n && at < 0; i++)
            if (!strcmp(cm[i].role, "user")) at = i;
        if (at < 0) return 0;
        sbuf_printf(&b,
                    "Given the following functions, please respond with a JSON for a function call with its proper "
                    "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                    "\"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n");
        cJSON_ArrayForEach(t, r->tools) { /* as Meta's template prints them: json.dumps(indent=4) */
            char *s = py_json_text(t, 4);
            sbuf_printf(&b, "%s\n\n", s ? s : "");
            free(s);
        }
        sbuf_printf(&b, "%s", cm[at].content);
        if (r->llama31) { /* 3.1+: "Environment: ipython" heads the system turn (an "environment" message first) */
            memmove(cm + 1, cm, sizeof *cm * (size_t)*n);
            memmove(texts + 1, texts, sizeof *texts * (size_t)*n);
            (*n)++, at++;
            memset(&texts[0], 0, sizeof texts[0]);
            cm[0].role = "environment";
            cm[0].content = "ipython";
        }
    } else { /* Mistral: the list before the last user message */
        char *s = py_json_text(r->tools, 0);
        sbuf_printf(&b, "%s", s ? s : "[]");
        free(s);
    }
    sbuf_add(&b, "", 0);
    if (b.oom) return sbuf_free(&b), -1;
    if (r->tool_style == SERVE_TOOLS_MISTRAL || at < 0) { /* a new message */
        int pos = 0;
        if (r->tool_style == SERVE_TOOLS_MISTRAL) {
            for (int i = 0; i < *n; i++)
                if (!strcmp(cm[i].role, "user")) pos = i;
            /* v3: before a system message that opens that [INST] (it is rendered inside it, and
             * the tools cannot be: they came out as an assistant reply); v7 has [SYSTEM_PROMPT] */
            while (r->mistral_v3 && pos > 0 && !strcmp(cm[pos - 1].role, "system")) pos--;
        }
        memmove(cm + pos + 1, cm + pos, sizeof *cm * (size_t)(*n - pos));
        memmove(texts + pos + 1, texts + pos, sizeof *texts * (size_t)(*n - pos));
        (*n)++;
        texts[pos] = b;
        cm[pos].role = r->tool_style == SERVE_TOOLS_MISTRAL ? "available_tools" : "system";
        cm[pos].content = b.p;
        return 0;
    }
    sbuf_free(&texts[at]);
    texts[at] = b;
    cm[at].content = b.p;
    return 0;
}

/* A call object {"name": ..., "arguments"/"parameters": {...} or a JSON string} into OpenAI's
 * {"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}; NULL if not one. */
static cJSON *to_call(const struct serve_req *r, const cJSON *c, int i) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(c, "arguments");
    if (!args) args = cJSON_GetObjectItemCaseSensitive(c, "parameters");
    if (!cJSON_IsObject(c) || !cJSON_IsString(name) || !args) return NULL;
    char *a = cJSON_IsString(args) ? strdup(args->valuestring) : json_text(args);
    if (!a) return NULL;
    cJSON *o = cJSON_CreateObject(), *fn = cJSON_CreateObject();
    char id[96];
    snprintf(id, sizeof id, "call_%s_%d", strchr(r->id, '-') ? strchr(r->id, '-') + 1 : r->id, i);
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "type", "function");
    cJSON_AddStringToObject(fn, "name", name->valuestring);
    cJSON_AddStringToObject(fn, "arguments", a);
    cJSON_AddItemToObject(o, "function", fn);
    free(a);
    return o;
}

static const char *skip_ws(const char *s) {
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') s++;
    return s;
}

cJSON *serve_tools_extract(const struct serve_req *r, const char *text, char **content) {
    *content = NULL;
    if (!r->tool_style) return NULL;
    cJSON *calls = cJSON_CreateArray();
    const char *end = NULL;
    if (r->tool_style == SERVE_TOOLS_HERMES) {
        const char *at = strstr(text, "<tool_call>");
        if (!at) goto none;
        size_t lead = (size_t)(at - text);
        while (lead && strchr(" \n\t\r", text[lead - 1])) lead--;
        for (int i = 0; at; i++) {
            const char *js = at + strlen("<tool_call>");
            const char *close = strstr(js, "</tool_call>");
            cJSON *c = cJSON_ParseWithLengthOpts(js, close ? (size_t)(close - js) : strlen(js), &end, 0);
            cJSON *call = to_call(r, c, i);
            cJSON_Delete(c);
            const char *stop = close ? close : js + strlen(js);
            if (!call || !end || skip_ws(end) < stop) { /* only whitespace may follow the JSON */
                cJSON_Delete(call);
                goto none;
            }
            cJSON_AddItemToArray(calls, call);
            at = close ? strstr(close, "<tool_call>") : NULL;
        }
        if (lead && (*content = malloc(lead + 1))) memcpy(*content, text, lead), (*content)[lead] = 0;
        return calls;
    }
    const char *s = skip_ws(text);
    if (r->tool_style == SERVE_TOOLS_LLAMA3 && !strncmp(s, "<|python_tag|>", 14)) s = skip_ws(s + 14);
    if (r->tool_style == SERVE_TOOLS_MISTRAL && !strncmp(s, "[TOOL_CALLS]", 12)) s = skip_ws(s + 12);
    cJSON *j = cJSON_ParseWithOpts(s, &end, 0);
    if (!j || *skip_ws(end)) {
        cJSON_Delete(j);
        goto none;
    }
    if (cJSON_IsObject(j)) {
        cJSON *call = to_call(r, j, 0);
        if (call) cJSON_AddItemToArray(calls, call);
    } else if (cJSON_IsArray(j)) {
        const cJSON *c;
        int i = 0;
        cJSON_ArrayForEach(c, j) {
            cJSON *call = to_call(r, c, i++);
            if (!call) {
                cJSON_Delete(j);
                goto none;
            }
            cJSON_AddItemToArray(calls, call);
        }
    }
    cJSON_Delete(j);
    if (cJSON_GetArraySize(calls)) return calls;
none:
    cJSON_Delete(calls);
    return NULL;
}

/* --- the calls as they stream ----------------------------------------------------------------
 * An incremental scanner over the reply's text: content (text before any call, whitespace before
 * a call dropped), then for each call its name once the header up to the arguments has come, then
 * the arguments' JSON as it comes (whitespace outside strings dropped), until they close. The
 * plain reply runs the same scanner over the whole text, so both give the same calls. Text that
 * does not fit a style's call layout stops the scanner (SCAN_FAIL): the caller then takes what
 * serve_tools_extract makes of the whole text. */

enum { SCAN_CONTENT, SCAN_TEXT, SCAN_HEADER, SCAN_ARGS, SCAN_AFTER, SCAN_DONE, SCAN_FAIL };

/* Match result: the whole step matched (*p advanced), more text is needed, or it cannot. */
enum { M_OK, M_MORE, M_NO };

static void m_ws(const char *t, size_t n, size_t *p) {
    while (*p < n && strchr(" \t\r\n", t[*p])) (*p)++;
}

static int m_lit(const char *t, size_t n, size_t *p, const char *lit) {
    size_t k = strlen(lit), have = n - *p < k ? n - *p : k;
    if (memcmp(t + *p, lit, have)) return M_NO;
    if (have < k) return M_MORE;
    *p += k;
    return M_OK;
}

/* A JSON string of name characters (what serve_tools_parse allows) into name. */
static int m_name(const char *t, size_t n, size_t *p, char *name, size_t cap) {
    size_t q = *p;
    if (q >= n) return M_MORE;
    if (t[q++] != '"') return M_NO;
    size_t k = 0;
    for (; q < n && t[q] != '"'; q++) {
        char c = t[q];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-') ||
            k + 1 >= cap)
            return M_NO;
        name[k++] = c;
    }
    if (q >= n) return M_MORE;
    name[k] = 0;
    *p = q + 1;
    return M_OK;
}

/* A call's header up to its arguments: { "name": "NAME", "arguments" (or "parameters"): */
static int m_header(const struct serve_tool_scan *s, const char *t, size_t n, size_t *p, char *name, size_t cap) {
    size_t q = *p;
    int r;
    m_ws(t, n, &q);
    if (s->style == SERVE_TOOLS_LLAMA3 && (r = m_lit(t, n, &q, "<|python_tag|>")) == M_MORE) return M_MORE;
    m_ws(t, n, &q);
    if (s->style == SERVE_TOOLS_MISTRAL && s->n_calls == 0) {
        if ((r = m_lit(t, n, &q, "[")) != M_OK) return r;
        m_ws(t, n, &q);
    }
    if ((r = m_lit(t, n, &q, "{")) != M_OK) return r;
    m_ws(t, n, &q);
    if ((r = m_lit(t, n, &q, "\"name\"")) != M_OK) return r;
    m_ws(t, n, &q);
    if ((r = m_lit(t, n, &q, ":")) != M_OK) return r;
    m_ws(t, n, &q);
    if ((r = m_name(t, n, &q, name, cap)) != M_OK) return r;
    m_ws(t, n, &q);
    if ((r = m_lit(t, n, &q, ",")) != M_OK) return r;
    m_ws(t, n, &q);
    const char *key = s->style == SERVE_TOOLS_LLAMA3 ? "\"parameters\"" : "\"arguments\"";
    if ((r = m_lit(t, n, &q, key)) == M_NO && s->style == SERVE_TOOLS_LLAMA3) r = m_lit(t, n, &q, "\"arguments\"");
    if (r != M_OK) return r;
    m_ws(t, n, &q);
    if ((r = m_lit(t, n, &q, ":")) != M_OK) return r;
    m_ws(t, n, &q);
    if (q >= n) return M_MORE;
    if (t[q] != '{') return M_NO; /* arguments are an object */
    *p = q;
    return M_OK;
}

/* After a call's arguments: its closing, and then the next call or the end. */
static int m_after(struct serve_tool_scan *s, const char *t, size_t n, size_t *p, int final) {
    size_t q = *p;
    int r;
    m_ws(t, n, &q);
    if (q < n && t[q] == ',') { /* Mistral's history writes the call's id after its arguments */
        char id[64];
        q++;
        m_ws(t, n, &q);
        if ((r = m_lit(t, n, &q, "\"id\"")) != M_OK) return r;
        m_ws(t, n, &q);
        if ((r = m_lit(t, n, &q, ":")) != M_OK) return r;
        m_ws(t, n, &q);
        if ((r = m_name(t, n, &q, id, sizeof id)) != M_OK) return r;
        m_ws(t, n, &q);
    }
    if ((r = m_lit(t, n, &q, "}")) != M_OK) return r;
    m_ws(t, n, &q);
    if (s->style == SERVE_TOOLS_HERMES) {
        if ((r = m_lit(t, n, &q, "</tool_call>")) != M_OK) return r;
        m_ws(t, n, &q);
        if (q == n) return *p = q, final ? (s->phase = SCAN_DONE, M_OK) : M_MORE;
        if ((r = m_lit(t, n, &q, "<tool_call>")) != M_OK) return r;
        s->phase = SCAN_HEADER;
    } else if (s->style == SERVE_TOOLS_MISTRAL) {
        if (q == n) return M_MORE;
        if (t[q] == ']') {
            q++;
            m_ws(t, n, &q);
            if (q != n) return M_NO;
            s->phase = SCAN_DONE;
        } else {
            if ((r = m_lit(t, n, &q, ",")) != M_OK) return r;
            s->phase = SCAN_HEADER;
        }
    } else {
        if (q != n) return M_NO;
        if (!final) return M_MORE;
        s->phase = SCAN_DONE;
    }
    *p = q;
    return M_OK;
}

/* How many bytes at the end of t[0..n) may start marker (a prefix of it), or are whitespace that
 * a call would drop: held back until the next text says. */
static size_t held_tail(const char *t, size_t n, const char *marker) {
    size_t k = strlen(marker), best = 0;
    for (size_t i = 1; i < k && i <= n; i++)
        if (!memcmp(t + n - i, marker, i)) best = i;
    size_t w = n - best;
    while (w > 0 && strchr(" \t\r\n", t[w - 1])) w--;
    return n - w;
}

void serve_tool_scan_init(struct serve_tool_scan *s, int style) {
    memset(s, 0, sizeof *s);
    s->style = style;
}

int serve_tool_scan_run(struct serve_tool_scan *s, const char *t, size_t n, int final,
                        const struct serve_tool_sink *k) {
    for (;;) {
        size_t p = s->pos;
        switch (s->phase) {
        case SCAN_CONTENT:
            if (s->style == SERVE_TOOLS_HERMES) {
                const char *at = NULL;
                for (size_t i = p; i + 11 <= n && !at; i++)
                    if (!memcmp(t + i, "<tool_call>", 11)) at = t + i;
                if (at) {
                    size_t end = (size_t)(at - t);
                    while (end > p && strchr(" \t\r\n", t[end - 1])) end--;
                    if (end > p) k->content(k->ud, t + p, end - p);
                    s->pos = (size_t)(at - t) + 11;
                    s->phase = SCAN_HEADER;
                    continue;
                }
                size_t safe = final ? n : n - held_tail(t + p, n - p, "<tool_call>");
                if (safe > p) k->content(k->ud, t + p, safe - p);
                s->pos = safe;
                return s->phase;
            }
            m_ws(t, n, &p);
            if (p == n) {
                if (final && n > s->pos) k->content(k->ud, t + s->pos, n - s->pos);
                if (final) s->pos = n;
                return s->phase;
            }
            s->phase = t[p] == (s->style == SERVE_TOOLS_MISTRAL ? '[' : '{') || t[p] == '<' ? SCAN_HEADER : SCAN_TEXT;
            if (s->phase == SCAN_HEADER) s->pos = p;
            continue;
        case SCAN_TEXT:
            if (n > p) k->content(k->ud, t + p, n - p);
            s->pos = n;
            return s->phase;
        case SCAN_HEADER: {
            int r = m_header(s, t, n, &p, s->name, sizeof s->name);
            if (r == M_MORE && !final) return s->phase;
            if (r != M_OK) {
                s->phase = s->n_calls == 0 && s->style != SERVE_TOOLS_HERMES ? SCAN_TEXT : SCAN_FAIL;
                if (s->phase == SCAN_TEXT) continue; /* llama3 / mistral: it was text after all */
                return s->phase;
            }
            k->call(k->ud, s->n_calls, s->name);
            s->pos = p;
            s->depth = s->in_str = s->esc = 0;
            s->phase = SCAN_ARGS;
            continue;
        }
        case SCAN_ARGS: {
            size_t i = p;
            char out[256];
            size_t o = 0;
            for (; i < n && s->phase == SCAN_ARGS; i++) {
                char c = t[i];
                int keep = 1;
                if (s->in_str) {
                    if (s->esc) s->esc = 0;
                    else if (c == '\\') s->esc = 1;
                    else if (c == '"') s->in_str = 0;
                } else if (c == '"') {
                    s->in_str = 1;
                } else if (c == '{' || c == '[') {
                    s->depth++;
                } else if (c == '}' || c == ']') {
                    if (--s->depth == 0) s->phase = SCAN_AFTER, s->n_calls++;
                } else if (strchr(" \t\r\n", c)) {
                    keep = 0; /* whitespace outside strings */
                }
                if (keep) out[o++] = c;
                if (o == sizeof out) k->args(k->ud, s->n_calls - (s->phase != SCAN_ARGS), out, o), o = 0;
            }
            if (o) k->args(k->ud, s->n_calls - (s->phase != SCAN_ARGS), out, o);
            s->pos = i;
            if (s->phase == SCAN_ARGS) {
                if (final) s->phase = SCAN_FAIL; /* cut off inside the arguments */
                return s->phase;
            }
            continue;
        }
        case SCAN_AFTER: {
            int r = m_after(s, t, n, &p, final);
            if (r == M_MORE && !final) return s->phase;
            if (r != M_OK) return s->phase = SCAN_FAIL;
            s->pos = p;
            if (s->phase == SCAN_AFTER) return s->phase;
            continue;
        }
        default: return s->phase; /* SCAN_DONE, SCAN_FAIL */
        }
    }
}

int serve_tool_scan_ok(const struct serve_tool_scan *s) { return s->phase != SCAN_FAIL; }
