/* test_json_schema.c - the JSON-schema-to-grammar converter (cli/json_schema.c) with the grammar
 * engine (runtime/gen/grammar.c): integer ranges checked against every integer of a window (and
 * far outside it), objects' optional properties in every subset, additional properties, arrays'
 * counts, string lengths, enums and consts, anyOf, recursive $ref; and refusals naming the
 * keyword. A text "matches" when the grammar takes all of it and it is a whole sentence. */
#include <cjson/cJSON.h>

#include "grammar.h"
#include "harness.h"
#include "json_schema.h"

static struct vkllm__grammar *compile(const char *schema_json) {
    cJSON *j = cJSON_Parse(schema_json);
    if (!j) FAILF("bad test schema %s", schema_json);
    char err[256];
    char *text = cli_schema_grammar(j, err, sizeof err);
    cJSON_Delete(j);
    if (!text) FAILF("schema %s refused: %s", schema_json, err);
    struct vkllm__grammar *g = NULL;
    if (vkllm__grammar_parse(text, strlen(text), &g))
        FAILF("grammar of %s: %s\n%s", schema_json, vkllm_last_error(), text);
    free(text);
    return g;
}

static int matches(struct vkllm__grammar *g, const char *s) {
    struct vkllm__gstate st;
    int ok = 0;
    ASSERT_OK(vkllm__grammar_start(g, &st));
    ASSERT_OK(vkllm__grammar_feed(g, &st, s, strlen(s), &ok));
    return ok && vkllm__grammar_accepting(g, st);
}

static void refused(const char *schema_json, const char *want) {
    cJSON *j = cJSON_Parse(schema_json);
    char err[256] = "";
    char *text = cli_schema_grammar(j, err, sizeof err);
    cJSON_Delete(j);
    if (text) FAILF("schema %s accepted:\n%s", schema_json, text);
    if (!strstr(err, want)) FAILF("schema %s: error '%s' lacks '%s'", schema_json, err, want);
}

/* Every integer in [-1100, 1100] matches exactly when lo <= x <= hi (has_lo/has_hi), and so do
 * a few far ones; no leading zeros. */
static void check_range(const char *schema_json, int has_lo, long long lo, int has_hi, long long hi) {
    struct vkllm__grammar *g = compile(schema_json);
    char buf[32];
    for (long long x = -1100; x <= 1100; x++) {
        snprintf(buf, sizeof buf, "%lld", x);
        int want = (!has_lo || x >= lo) && (!has_hi || x <= hi);
        if (matches(g, buf) != want) FAILF("%s: %s %s", schema_json, buf, want ? "refused" : "accepted");
    }
    static const long long far[] = {99999, 100000, 123456789, -99999, -100000, -987654321, 999999999999999LL};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(far); i++) {
        snprintf(buf, sizeof buf, "%lld", far[i]);
        int want = (!has_lo || far[i] >= lo) && (!has_hi || far[i] <= hi);
        if (matches(g, buf) != want) FAILF("%s: %s %s", schema_json, buf, want ? "refused" : "accepted");
    }
    ASSERT(!matches(g, "007") && !matches(g, "1.0") && !matches(g, ""));
    vkllm__grammar_free(g);
}

int main(void) {
    /* integer ranges */
    check_range("{\"type\": \"integer\"}", 0, 0, 0, 0);
    check_range("{\"type\": \"integer\", \"minimum\": 0}", 1, 0, 0, 0);
    check_range("{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100}", 1, 1, 1, 100);
    check_range("{\"type\": \"integer\", \"minimum\": 17, \"maximum\": 1003}", 1, 17, 1, 1003);
    check_range("{\"type\": \"integer\", \"minimum\": -250, \"maximum\": 31}", 1, -250, 1, 31);
    check_range("{\"type\": \"integer\", \"minimum\": -999, \"maximum\": -10}", 1, -999, 1, -10);
    check_range("{\"type\": \"integer\", \"maximum\": -7}", 0, 0, 1, -7);
    check_range("{\"type\": \"integer\", \"maximum\": 250}", 0, 0, 1, 250);
    check_range("{\"type\": \"integer\", \"minimum\": 905}", 1, 905, 0, 0);
    check_range("{\"type\": \"integer\", \"minimum\": -58}", 1, -58, 0, 0);
    check_range("{\"type\": \"integer\", \"exclusiveMinimum\": 9, \"exclusiveMaximum\": 100}", 1, 10, 1, 99);
    check_range("{\"type\": \"integer\", \"minimum\": 2.5, \"maximum\": 7.5}", 1, 3, 1, 7);
    check_range("{\"type\": \"integer\", \"minimum\": 0, \"maximum\": 0}", 1, 0, 1, 0);
    refused("{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 4}", "no integer");
    refused("{\"type\": \"number\", \"minimum\": 0}", "'minimum' on a number");
    refused("{\"type\": \"integer\", \"maximum\": 1e300}", "beyond 1e15");

    /* objects: required in order, optional ones in order and each present or not */
    struct vkllm__grammar *g =
        compile("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, "
                "\"b\": {\"type\": \"boolean\"}, \"c\": {\"type\": \"null\"}}, \"required\": [\"b\"]}");
    static const char *const objs_yes[] = {"{\"b\":true}", "{\"b\": false, \"a\": 1}", "{\"b\":true,\"c\":null}",
                                           "{\"b\":true,\"a\":-5,\"c\":null}", "{ \"b\" : true }"};
    static const char *const objs_no[] = {
        "{}",        "{\"a\":1}",    "{\"a\":1,\"b\":true}", "{\"b\":true,\"c\":null,\"a\":1}", "{\"b\":true,\"d\":1}",
        "{\"b\":1}", "{\"b\":true,}"};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(objs_yes); i++) ASSERT(matches(g, objs_yes[i]));
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(objs_no); i++)
        if (matches(g, objs_no[i])) FAILF("object %s accepted", objs_no[i]);
    vkllm__grammar_free(g);
    /* every property optional: the empty object and any in-order subset */
    g = compile("{\"type\": \"object\", \"properties\": {\"x\": {\"const\": 1}, \"y\": {\"const\": 2}}, "
                "\"additionalProperties\": false}");
    ASSERT(matches(g, "{}") && matches(g, "{\"x\":1}") && matches(g, "{\"y\":2}") && matches(g, "{\"x\":1,\"y\":2}"));
    ASSERT(!matches(g, "{\"y\":2,\"x\":1}") && !matches(g, "{\"x\":2}") && !matches(g, "{,}"));
    vkllm__grammar_free(g);
    /* additional properties under a schema; an object that lists none takes any */
    g = compile("{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"integer\"}}, \"required\": [\"id\"], "
                "\"additionalProperties\": {\"type\": \"string\"}}");
    ASSERT(matches(g, "{\"id\":1}") && matches(g, "{\"id\":1,\"k\":\"v\",\"z\":\"w\"}"));
    ASSERT(!matches(g, "{\"id\":1,\"k\":2}"));
    vkllm__grammar_free(g);
    g = compile("{\"type\": \"object\"}");
    ASSERT(matches(g, "{}") && matches(g, "{\"a\":[1,{\"b\":null}]}") && !matches(g, "[]"));
    vkllm__grammar_free(g);

    /* arrays, strings, enums, anyOf, type lists */
    g = compile("{\"type\": \"array\", \"items\": {\"enum\": [\"r\", 2, null]}, \"minItems\": 1, \"maxItems\": 3}");
    ASSERT(matches(g, "[\"r\"]") && matches(g, "[2, null, \"r\"]") && !matches(g, "[]") && !matches(g, "[2,2,2,2]"));
    ASSERT(!matches(g, "[3]"));
    vkllm__grammar_free(g);
    g = compile("{\"type\": [\"string\", \"null\"], \"minLength\": 2, \"maxLength\": 3}");
    ASSERT(matches(g, "\"ab\"") && matches(g, "\"a\\nb\"") && matches(g, "null") && !matches(g, "\"a\"") &&
           !matches(g, "\"abcd\""));
    vkllm__grammar_free(g);
    g = compile("{\"anyOf\": [{\"type\": \"integer\", \"minimum\": 10}, {\"type\": \"boolean\"}]}");
    ASSERT(matches(g, "10") && matches(g, "true") && !matches(g, "9") && !matches(g, "\"x\""));
    vkllm__grammar_free(g);
    /* a recursive $ref */
    g = compile("{\"$defs\": {\"t\": {\"type\": \"object\", \"properties\": {\"kids\": {\"type\": \"array\", "
                "\"items\": {\"$ref\": \"#/$defs/t\"}}}, \"required\": [\"kids\"]}}, \"$ref\": \"#/$defs/t\"}");
    ASSERT(matches(g, "{\"kids\":[]}") && matches(g, "{\"kids\":[{\"kids\":[]},{\"kids\":[{\"kids\":[]}]}]}"));
    ASSERT(!matches(g, "{\"kids\":[{}]}"));
    vkllm__grammar_free(g);

    /* what cannot be honoured is refused, naming it */
    refused("{\"type\": \"string\", \"pattern\": \"^a\"}", "'pattern'");
    refused("{\"type\": \"array\", \"uniqueItems\": true}", "'uniqueItems'");
    refused("{\"allOf\": [{\"type\": \"integer\"}, {\"minimum\": 1}]}", "allOf");
    refused("{\"$ref\": \"#/$defs/missing\"}", "not found");
    refused("{\"type\": \"strin\"}", "unknown type");
    refused("false", "accepts nothing");
    refused("{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 2}", "below");
    printf("json schema: ok\n");
    return 0;
}
