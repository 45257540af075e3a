/* test_tool_scan.c - the streaming scanner of function calls (cli/serve_tools.c): for each style,
 * replies with content, one call, two calls, arguments holding braces and quotes inside strings,
 * and text that only looks like a call; fed whole and in pieces of every size from 1 to 9 bytes,
 * the content, the calls' names and their arguments (whitespace outside strings dropped) are the
 * same, and text that leaves the layout is reported (serve_tool_scan_ok 0). */
#include "harness.h"
#include "serve.h"

struct got {
    char content[512];
    char names[4][32];
    char args[4][256];
    int calls;
};
static void on_content(void *ud, const char *t, size_t n) { strncat(((struct got *)ud)->content, t, n); }
static void on_call(void *ud, int i, const char *name) {
    struct got *g = ud;
    ASSERT(i == g->calls && i < 4);
    snprintf(g->names[i], sizeof g->names[i], "%s", name);
    g->calls++;
}
static void on_args(void *ud, int i, const char *t, size_t n) {
    struct got *g = ud;
    ASSERT(i == g->calls - 1);
    strncat(g->args[i], t, n);
}

/* Scan text in pieces of `step` bytes (0: whole); returns ok. */
static int scan(int style, const char *text, size_t step, struct got *g) {
    memset(g, 0, sizeof *g);
    struct serve_tool_scan s;
    serve_tool_scan_init(&s, style);
    struct serve_tool_sink k = {on_content, on_call, on_args, g};
    size_t n = strlen(text);
    for (size_t have = step ? 0 : n; have < n; have += step) serve_tool_scan_run(&s, text, have, 0, &k);
    serve_tool_scan_run(&s, text, n, 1, &k);
    ASSERT(s.n_calls == g->calls || !serve_tool_scan_ok(&s));
    return serve_tool_scan_ok(&s);
}

static void expect(int style, const char *text, int ok, const char *content, int calls, const char *name0,
                   const char *args0, const char *name1, const char *args1) {
    for (size_t step = 0; step <= 9; step++) {
        struct got g;
        int got_ok = scan(style, text, step, &g);
        if (got_ok != ok) FAILF("style %d step %zu: ok %d for %s", style, step, got_ok, text);
        if (!ok) continue;
        if (strcmp(g.content, content) || g.calls != calls)
            FAILF("style %d step %zu: content '%s' (want '%s'), %d calls (want %d) for %s", style, step, g.content,
                  content, g.calls, calls, text);
        if (calls > 0 && (strcmp(g.names[0], name0) || strcmp(g.args[0], args0)))
            FAILF("style %d step %zu: call 0 %s %s (want %s %s)", style, step, g.names[0], g.args[0], name0, args0);
        if (calls > 1 && (strcmp(g.names[1], name1) || strcmp(g.args[1], args1)))
            FAILF("style %d step %zu: call 1 %s %s (want %s %s)", style, step, g.names[1], g.args[1], name1, args1);
    }
}

int main(void) {
    const int H = SERVE_TOOLS_HERMES, L = SERVE_TOOLS_LLAMA3, M = SERVE_TOOLS_MISTRAL;
    /* hermes */
    expect(H, "Just text, no call.", 1, "Just text, no call.", 0, NULL, NULL, NULL, NULL);
    expect(H, "a < b and <tool", 1, "a < b and <tool", 0, NULL, NULL, NULL, NULL);
    expect(
        H,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"n\": [1, 2]}}\n</tool_call>",
        1, "", 1, "get_weather", "{\"city\":\"Paris\",\"n\":[1,2]}", NULL, NULL);
    expect(H,
           "Let me look.\n\n<tool_call>\n{\"name\":\"f\",\"arguments\":{\"s\":\"a } \\\" { b\"}}\n</tool_call>\n"
           "<tool_call>{\"name\": \"g-2\", \"arguments\": {}}</tool_call>",
           1, "Let me look.", 2, "f", "{\"s\":\"a } \\\" { b\"}", "g-2", "{}");
    expect(H, "<tool_call>\n{\"arguments\": {}, \"name\": \"f\"}\n</tool_call>", 0, NULL, 0, NULL, NULL, NULL, NULL);
    expect(H, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1", 0, NULL, 0, NULL, NULL, NULL,
           NULL); /* cut off */
    /* llama3 */
    expect(L, "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}", 1, "", 1, "add", "{\"a\":1,\"b\":2}", NULL,
           NULL);
    expect(L, "<|python_tag|>{\"name\": \"add\", \"arguments\": {\"a\": \"x y\"}}", 1, "", 1, "add", "{\"a\":\"x y\"}",
           NULL, NULL);
    expect(L, "  The answer is 3.", 1, "  The answer is 3.", 0, NULL, NULL, NULL, NULL);
    expect(L, "{\"not\": \"a call\"}", 1, "{\"not\": \"a call\"}", 0, NULL, NULL, NULL, NULL);
    /* mistral */
    expect(
        M,
        "[{\"name\": \"a\", \"arguments\": {\"x\": {\"y\": []}}}, {\"name\": \"b\", \"arguments\": {}, \"id\": \"q1\"}]",
        1, "", 2, "a", "{\"x\":{\"y\":[]}}", "b", "{}"); /* the id the history writes after the arguments */
    expect(M, "[{\"name\": \"a\", \"arguments\": {}, \"extra\": 1}]", 0, NULL, 0, NULL, NULL, NULL, NULL);
    expect(M, "[{\"name\": \"a\", \"arguments\": {\"x\": {\"y\": []}}}, {\"name\": \"b\", \"arguments\": {}}]", 1, "",
           2, "a", "{\"x\":{\"y\":[]}}", "b", "{}");
    expect(M, "Sure: [1, 2]", 1, "Sure: [1, 2]", 0, NULL, NULL, NULL, NULL);
    printf("tool scan: ok\n");
    return 0;
}
