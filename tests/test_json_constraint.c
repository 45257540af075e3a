/* test_json_constraint.c - the JSON-mode recognizer (runtime/gen/json_constraint.c) on
 * hand-written documents: every prefix of a valid object is accepted and only the whole is
 * complete; each invalid document is refused at the byte where it goes wrong; feeding in
 * pieces of any size gives what feeding byte by byte gives; nesting and whitespace limits. */
#include "harness.h"
#include "json_constraint.h"

/* Feed s one byte at a time: the index of the first refused byte, or -1 when all were
 * accepted; *complete: whether it is complete at the end (or just before the refusal). */
static long first_refused(const char *s, int *complete) {
    struct vkllm__json j;
    vkllm__json_init(&j);
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (complete) *complete = vkllm__json_complete(&j);
        if (vkllm__json_feed(&j, s + i, 1)) return (long)i;
    }
    if (complete) *complete = vkllm__json_complete(&j);
    return -1;
}

static void valid(const char *s) {
    int complete = 0;
    long at = first_refused(s, &complete);
    if (at >= 0) FAILF("valid %s refused at byte %ld", s, at);
    if (!complete) FAILF("valid %s not complete", s);
    /* no proper prefix is complete, save trailing whitespace */
    size_t n = strlen(s), end = n;
    while (end && strchr(" \t\r\n", s[end - 1])) end--;
    struct vkllm__json j;
    vkllm__json_init(&j);
    for (size_t i = 0; i + 1 < end; i++) {
        ASSERT(!vkllm__json_feed(&j, s + i, 1));
        if (vkllm__json_complete(&j)) FAILF("%s complete after %zu bytes", s, i + 1);
    }
    /* pieces of every size agree with bytes */
    for (size_t k = 2; k <= 7; k++) {
        vkllm__json_init(&j);
        for (size_t i = 0; i < n; i += k)
            if (vkllm__json_feed(&j, s + i, n - i < k ? n - i : k)) FAILF("%s refused in pieces of %zu", s, k);
        ASSERT(vkllm__json_complete(&j));
    }
}

/* s is refused first at byte at. */
static void invalid(const char *s, long at) {
    long got = first_refused(s, NULL);
    if (got != at) FAILF("invalid %s: refused at byte %ld, want %ld", s, got, at);
    struct vkllm__json j; /* whole: refused too */
    vkllm__json_init(&j);
    ASSERT(vkllm__json_feed(&j, s, strlen(s)) == -1);
}

int main(void) {
    valid("{}");
    valid(" {}");
    valid("{}\n");
    valid("{\"a\":1}");
    valid("{ \"a\" : 1 , \"b\" : [ ] , \"c\" : { } }");
    valid(
        "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\\u00e9\\n\\\"\\\\\\/\\b\\f\\r\\t\",\"d\":-0.5e+3,\"e\":true,\"f\":false}");
    valid("{\"n\":[0,-0,10,1.25,1e9,1E-9,-12.5e0,0.0]}");
    valid("{\"\\u0041\\uABCD\":\"caf\xc3\xa9 \xe2\x82\xac\"}");
    valid("{\"a\":[[[[[]]]]],\"b\":[{}]}");
    valid("{\n  \"k\": [\n    1\n  ]\n}");

    invalid("[]", 0); /* the top level is an object */
    invalid("\"x\"", 0);
    invalid("  {}", 1); /* one space before it at most */
    invalid("{\"a\":01}", 6);
    invalid("{\"a\":-01}", 7);
    invalid("{\"a\":1.}", 7);
    invalid("{\"a\":.5}", 5);
    invalid("{\"a\":-}", 6);
    invalid("{\"a\":1e}", 7);
    invalid("{\"a\":1e+}", 8);
    invalid("{\"a\" 1}", 5);
    invalid("{'a':1}", 1);
    invalid("{\"a\":tru}", 8);
    invalid("{\"a\":nul,}", 8);
    invalid("{\"a\":\"\x01\"}", 6); /* control characters must be escaped */
    invalid("{\"a\":\"\\q\"}", 7);
    invalid("{\"a\":\"\\u12G4\"}", 10);
    invalid("{\"a\":1,}", 7);
    invalid("{,}", 1);
    invalid("{\"a\"}", 4);
    invalid("{\"a\":[1 2]}", 8);
    invalid("{\"a\":[1,]}", 8);
    invalid("{\"a\":[}", 6);
    invalid("{\"a\":{]}", 6);
    invalid("{\"a\":1}}", 7);
    invalid("{\"a\":1} x", 8);
    invalid("{1:2}", 1);
    invalid("{\"a\":+1}", 5);

    /* whitespace between tokens: nothing, one space, or a newline and up to 20 spaces or tabs;
     * inside strings it is text */
    char buf[256];
    snprintf(buf, sizeof buf, "{\n%*s}", VKLLM__JSON_MAX_INDENT, "");
    valid(buf);
    snprintf(buf, sizeof buf, "{\n%*s}", VKLLM__JSON_MAX_INDENT + 1, "");
    invalid(buf, 2 + VKLLM__JSON_MAX_INDENT);
    valid("{\n\t\t\"a\": [\n 1,\n 2\n]\n}");
    invalid("{  }", 2);
    invalid("{ \n}", 2);
    invalid("{\n\n}", 2);
    invalid("{\t}", 1);
    invalid("{\r\n}", 1);
    invalid("\n{}", 0);
    snprintf(buf, sizeof buf, "{\"%*s\":\"a    b\"}", 100, "");
    valid(buf);
    invalid("{\"a\":\"\n\"}", 6); /* a raw newline in a string is a control character */

    /* nesting: VKLLM__JSON_MAX_DEPTH containers, not one more */
    char deep[2 * VKLLM__JSON_MAX_DEPTH + 16];
    size_t k = 0;
    deep[k++] = '{', deep[k++] = '"', deep[k++] = 'a', deep[k++] = '"', deep[k++] = ':';
    for (int d = 1; d < VKLLM__JSON_MAX_DEPTH; d++) deep[k++] = '[';
    for (int d = 1; d < VKLLM__JSON_MAX_DEPTH; d++) deep[k++] = ']';
    deep[k++] = '}', deep[k] = 0;
    valid(deep);
    k = 5;
    for (int d = 0; d < VKLLM__JSON_MAX_DEPTH; d++) deep[k++] = '[';
    deep[k] = 0;
    invalid(deep, 5 + VKLLM__JSON_MAX_DEPTH - 1);

    /* a copy tries bytes without touching the original */
    struct vkllm__json j, try;
    vkllm__json_init(&j);
    ASSERT(!vkllm__json_feed(&j, "{\"a\":", 5));
    try = j;
    ASSERT(vkllm__json_feed(&try, "}", 1) == -1);
    try = j;
    ASSERT(!vkllm__json_feed(&try, "[1]}", 4) && vkllm__json_complete(&try));
    ASSERT(!vkllm__json_complete(&j) && !vkllm__json_feed(&j, "2}", 2) && vkllm__json_complete(&j));
    printf("json constraint: all cases passed\n");
    return 0;
}
