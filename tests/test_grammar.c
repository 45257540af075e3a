/* test_grammar.c - GBNF grammars (runtime/gen/grammar.c): syntax errors name their line and
 * column; sentences and non-sentences of hand-written grammars (literals, classes, negation,
 * '.', groups, every repetition, UTF-8, escapes, comments, multi-line rules); prefixes are
 * accepted and only sentences are accepting; the token mask equals feeding every token's bytes
 * one by one, tokens that end inside a character included; the tables stay bounded over a long
 * text. */
#include "grammar.h"
#include "harness.h"

static struct vkllm__grammar *compile(const char *text) {
    struct vkllm__grammar *g = NULL;
    vkllm_status st = vkllm__grammar_parse(text, strlen(text), &g);
    if (st) FAILF("grammar refused: %s\n%s", vkllm_last_error(), text);
    return g;
}

static void refused(const char *text, const char *want) {
    struct vkllm__grammar *g = NULL;
    vkllm_status st = vkllm__grammar_parse(text, strlen(text), &g);
    if (st != VKLLM_STATUS_INVALID_ARGUMENT) FAILF("grammar accepted (status %d): %s", (int)st, text);
    if (!strstr(vkllm_last_error(), want)) FAILF("error '%s' lacks '%s' for %s", vkllm_last_error(), want, text);
    ASSERT(g == NULL);
}

/* Feed s byte by byte: every prefix must stay alive (when want_ok), and the end be accepting
 * as want_ok says; a non-sentence must die or end non-accepting. */
static int matches(struct vkllm__grammar *g, const char *s) {
    struct vkllm__gstate st;
    ASSERT_OK(vkllm__grammar_start(g, &st));
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        int ok = 0;
        ASSERT_OK(vkllm__grammar_feed(g, &st, s + i, 1, &ok));
        if (!ok) return 0;
    }
    return vkllm__grammar_accepting(g, st);
}

static void yes(struct vkllm__grammar *g, const char *s) {
    if (!matches(g, s)) FAILF("'%s' should match", s);
    /* in one piece too */
    struct vkllm__gstate st;
    int ok = 0;
    ASSERT_OK(vkllm__grammar_start(g, &st));
    ASSERT_OK(vkllm__grammar_feed(g, &st, s, strlen(s), &ok));
    ASSERT(ok && vkllm__grammar_accepting(g, st));
}

static void no(struct vkllm__grammar *g, const char *s) {
    if (matches(g, s)) FAILF("'%s' should not match", s);
}

/* The mask from state st over pieces equals feeding each piece to a copy of st. */
static void check_mask(struct vkllm__grammar *g, struct vkllm__gstate st, const char *const *pieces, uint32_t n) {
    uint32_t at[64], total = 0;
    char buf[512];
    ASSERT(n < 64);
    for (uint32_t i = 0; i < n; i++) {
        at[i] = total;
        memcpy(buf + total, pieces[i], strlen(pieces[i]));
        total += (uint32_t)strlen(pieces[i]);
    }
    at[n] = total;
    struct vkllm__vocab_trie *t = NULL;
    ASSERT_OK(vkllm__vocab_trie_build(buf, at, n, &t));
    const uint8_t *bits;
    uint32_t n_allowed = 0, count = 0;
    ASSERT_OK(vkllm__grammar_mask(g, st, t, &bits, &n_allowed, NULL));
    for (uint32_t i = 0; i < n; i++) {
        struct vkllm__gstate c = st;
        int ok = 0;
        ASSERT_OK(vkllm__grammar_feed(g, &c, pieces[i], strlen(pieces[i]), &ok));
        ok = ok && pieces[i][0];
        int got = (bits[i / 8] >> (i % 8)) & 1;
        if (got != ok) FAILF("token %u '%s': mask %d, feeding %d", i, pieces[i], got, ok);
        count += (uint32_t)ok;
    }
    ASSERT_EQ(n_allowed, count);
    /* the cached mask is the same */
    const uint8_t *again;
    ASSERT_OK(vkllm__grammar_mask(g, st, t, &again, &n_allowed, NULL));
    ASSERT(again == bits && n_allowed == count);
    vkllm__vocab_trie_free(t);
}

static const char *k_json =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

int main(void) {
    /* syntax and structure errors */
    refused("", "no 'root'");
    refused("rot ::= \"a\"", "no 'root'");
    refused("root ::= foo", "'foo' is used but never defined");
    refused("root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule defined twice");
    refused("root ::= \"abc", "line 1, column 10: unterminated literal");
    refused("root ::= [a-", "unterminated character class");
    refused("root ::= [z-a]", "out of order");
    refused("root ::= (\"a\"", "unclosed '('");
    refused("root ::= \"a\")", "unmatched ')'");
    refused("root ::= * \"a\"", "repetition without anything to repeat");
    refused("root ::= \"a\"{3,1}", "n < m");
    refused("root ::= \"a\"{99999}", "too large");
    refused("root ::= \"\\q\"", "unknown escape");
    refused("root = \"a\"", "expected '::='");
    refused("root ::= root \"a\" | \"b\"", "'root' is left-recursive");
    refused("root ::= x\nx ::= y? root\ny ::= \"a\"", "left-recursive");
    refused("root ::= (\"a\"?)*", "left-recursive"); /* a nullable body repeated */

    /* literals, alternatives, classes, groups */
    struct vkllm__grammar *g = compile("root ::= \"yes\" | \"no\" | \"maybe\"");
    yes(g, "yes"), yes(g, "no"), yes(g, "maybe");
    no(g, "ye"), no(g, "yess"), no(g, "n"), no(g, ""), no(g, "Yes");
    vkllm__grammar_free(g);

    g = compile("# a comment\nroot ::= [a-c]+ \"-\" [^a-c\\n]? . # trailing\n");
    yes(g, "a-xy"), yes(g, "abcab-\xc3\xa9"), yes(g, "c-dd");
    no(g, "-x"), no(g, "a-ax"), no(g, "a-\nx"), no(g, "a-"), no(g, "ad-xx");
    vkllm__grammar_free(g);

    /* repetitions: exact, ranges, open-ended, on literals and groups */
    g = compile("root ::= \"ab\"{2} x{1,3} (\"c\" | \"d\"){2,} \"e\"?\nx ::= [0-9]");
    yes(g, "abab1cc"), yes(g, "abab123dcd"), yes(g, "abab9ddde");
    no(g, "ab1cc"), no(g, "abab1234cc"), no(g, "abab1c"), no(g, "ababcc"), no(g, "abab1ccee");
    vkllm__grammar_free(g);

    /* multi-line alternatives: inside ( ), after a trailing | and before a leading | */
    g = compile("root ::= a |\n  b\n  | c\na ::= (\n  \"x\"\n  \"y\"\n)\nb ::= \"z\"\nc ::= \"\"");
    yes(g, "xy"), yes(g, "z"), yes(g, "");
    no(g, "x"), no(g, "zz");
    vkllm__grammar_free(g);

    /* UTF-8 and escapes: \u, \x, ranges beyond ASCII */
    g = compile("root ::= \"\\u00e9t\\xe9\" [\\u4e00-\\u9fff]+ \"\xe2\x9c\x93\"");
    yes(g, "\xc3\xa9t\xc3\xa9\xe4\xb8\xad\xe6\x96\x87\xe2\x9c\x93");
    no(g, "\xc3\xa9t\xc3\xa9"
          "a"
          "\xe2\x9c\x93");
    no(g, "\xc3\xa9t\xc3\xa9\xe4\xb8"
          "\xe2\x9c\x93"); /* a character cut short */
    no(g, "\xff");
    vkllm__grammar_free(g);

    /* right recursion and nesting */
    g = compile("root ::= \"(\" root \")\" | \"x\" root | \"\"");
    yes(g, ""), yes(g, "()"), yes(g, "x(x(()))"), yes(g, "xxxx");
    no(g, "(()"), no(g, ")"), no(g, "(x))");
    vkllm__grammar_free(g);

    /* JSON */
    g = compile(k_json);
    yes(g, "{}"), yes(g, "{\"a\": [1, 2.5e3, -0, true, null, {\"b\": \"\\u00e9\\n\"}]}");
    yes(g, "{\n  \"k\": \"\xc3\xa9\"\n}");
    no(g, "[]"), no(g, "{\"a\" 1}"), no(g, "{\"a\": 01}"), no(g, "{\"a\": \"\x01\"}"), no(g, "{,}");
    {
        struct vkllm__gstate st;
        int ok;
        ASSERT_OK(vkllm__grammar_start(g, &st));
        ASSERT(!vkllm__grammar_accepting(g, st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "{\"a\":1}", 7, &ok));
        ASSERT(ok && vkllm__grammar_accepting(g, st) && !vkllm__grammar_finished(g, st)); /* ws may follow */
        /* masks: at the start, inside a key, after a value, in a number, mid-character */
        static const char *const pieces[] = {
            "{",     "{\"", "{}",   " {",   "\"",   "a",        "ab\"",   "\":",  ":",        "1",   "12", ",",
            "}",     "}}",  "} ",   "\xc3", "\xa9", "\xc3\xa9", "\xa9\"", "\xe4", "\xe4\xb8", "x",   "\\", "\\n",
            "\\u00", "\n",  "\n  ", "",     "true", "tr",       "-",      "-0.",  "e5",       "\xff"};
        const uint32_t n = VKLLM_ARRAY_LEN(pieces);
        const char *const prefixes[] = {"",
                                        "{",
                                        "{\"",
                                        "{\"k",
                                        "{\"k\":",
                                        "{\"k\": 1",
                                        "{\"k\": 1.5",
                                        "{\"k\":\"",
                                        "{\"k\":\"\xc3",
                                        "{\"k\":\"\xe4",
                                        "{\"k\":\"\\",
                                        "{\"k\":\"\\u0",
                                        "{\"k\":1}",
                                        "{\"k\":[",
                                        "{\"k\":t"};
        for (size_t i = 0; i < VKLLM_ARRAY_LEN(prefixes); i++) {
            ASSERT_OK(vkllm__grammar_start(g, &st));
            ASSERT_OK(vkllm__grammar_feed(g, &st, prefixes[i], strlen(prefixes[i]), &ok));
            ASSERT(ok);
            check_mask(g, st, pieces, n);
        }
    }
    vkllm__grammar_free(g);

    /* a character begun: a 4-byte lead cannot start '{' (overlong), a 2-byte one can start U+00E9 */
    g = compile("root ::= \"{\" | \"\\u00e9\"");
    {
        struct vkllm__gstate st;
        int ok;
        ASSERT_OK(vkllm__grammar_start(g, &st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "\xf0", 1, &ok));
        ASSERT(!ok);
        ASSERT_OK(vkllm__grammar_start(g, &st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "\xe0", 1, &ok));
        ASSERT(!ok);
        ASSERT_OK(vkllm__grammar_start(g, &st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "\xc3", 1, &ok));
        ASSERT(ok && !vkllm__grammar_accepting(g, st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "\xa9", 1, &ok));
        ASSERT(ok && vkllm__grammar_finished(g, st));
        ASSERT_OK(vkllm__grammar_start(g, &st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "\xc1\xbb", 2, &ok)); /* overlong '{' */
        ASSERT(!ok);
    }
    vkllm__grammar_free(g);

    /* a finished sentence: nothing may follow */
    g = compile("root ::= \"ok\"");
    {
        struct vkllm__gstate st;
        int ok;
        ASSERT_OK(vkllm__grammar_start(g, &st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "ok", 2, &ok));
        ASSERT(ok && vkllm__grammar_finished(g, st));
        ASSERT_OK(vkllm__grammar_feed(g, &st, "k", 1, &ok));
        ASSERT(!ok);
    }
    vkllm__grammar_free(g);

    /* a long text: the matcher's tables stay small (states repeat) */
    g = compile("root ::= ([a-z]+ \" \")* \".\"");
    {
        struct vkllm__gstate st;
        int ok = 1;
        ASSERT_OK(vkllm__grammar_start(g, &st));
        for (int i = 0; i < 20000 && ok; i++) ASSERT_OK(vkllm__grammar_feed(g, &st, i % 7 == 6 ? " " : "q", 1, &ok));
        ASSERT(ok);
        ASSERT_OK(vkllm__grammar_feed(g, &st, " .", 2, &ok));
        ASSERT(ok && vkllm__grammar_finished(g, st));
        uint32_t stacks, sets, trans;
        vkllm__grammar_sizes(g, &stacks, &sets, &trans);
        if (stacks > 64 || sets > 64 || trans > 64)
            FAILF("tables grew: %u stacks, %u sets, %u transitions", stacks, sets, trans);
    }
    vkllm__grammar_free(g);

    ASSERT_EQ(vkllm__alloc_live(), 0);
    printf("grammar: ok\n");
    return 0;
}
