/* json_schema.c - see json_schema.h. Each schema becomes a GBNF expression; objects, arrays and
 * $ref targets get rules of their own (r1, r2, ... and ref1, ...), the JSON primitives come from
 * a fixed block of rules appended at the end. */
#include "json_schema.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_COUNT 10000 /* repetition bounds the grammar takes */

#define K_BASE                                                                                           \
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"                                                            \
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"            \
    "string ::= \"\\\"\" char* \"\\\"\"\n"                                                               \
    "integer ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15})\n"                                                   \
    "number ::= integer (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?\n"                                 \
    "boolean ::= \"true\" | \"false\"\n"                                                                 \
    "null ::= \"null\"\n"                                                                                \
    "value ::= object | array | string | number | boolean | null\n"                                      \
    "object ::= \"{\" ws (string ws \":\" ws value ws (\",\" ws string ws \":\" ws value ws)*)? \"}\"\n" \
    "array ::= \"[\" ws (value ws (\",\" ws value ws)*)? \"]\"\n"

static const char k_base[] = K_BASE;

const char *cli_json_grammar(int object) { return object ? "root ::= object\n" K_BASE : "root ::= value\n" K_BASE; }

struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
};

static void put(struct sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || b->oom) {
        va_end(ap2);
        b->oom = 1;
        return;
    }
    if (b->n + (size_t)need + 1 > b->cap) {
        size_t cap = (b->n + (size_t)need + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            va_end(ap2);
            b->oom = 1;
            return;
        }
        b->s = s, b->cap = cap;
    }
    vsnprintf(b->s + b->n, (size_t)need + 1, fmt, ap2);
    va_end(ap2);
    b->n += (size_t)need;
}

struct ref {
    char *path;
    int id;
};

struct conv {
    const cJSON *root;
    const char *prefix; /* rule names: <prefix>r1, <prefix>ref1 */
    struct sbuf rules;
    char *err;
    size_t err_len;
    int failed;
    int n_rules;
    struct ref *refs;
    int n_refs;
};

static char *fail(struct conv *c, const char *fmt, ...) {
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->err_len, fmt, ap);
        va_end(ap);
        c->failed = 1;
    }
    return NULL;
}

static char *take(struct conv *c, struct sbuf *b) {
    if (b->oom) {
        free(b->s);
        return fail(c, "out of memory");
    }
    if (!b->s) return calloc(1, 1);
    return b->s;
}

/* GBNF literal for the bytes of s: "..." with quotes, backslashes and control bytes escaped. */
static void put_literal(struct sbuf *b, const char *s) {
    put(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') put(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) put(b, "\\x%02X", *p);
        else put(b, "%c", *p);
    }
    put(b, "\"");
}

/* A JSON value's text as a GBNF literal. */
static int put_json_literal(struct conv *c, struct sbuf *b, const cJSON *v) {
    char *text = cJSON_PrintUnformatted(v);
    if (!text) return fail(c, "out of memory"), -1;
    put_literal(b, text);
    cJSON_free(text);
    return 0;
}

static char *expr(struct conv *c, const cJSON *s, int depth);

static int is_annotation(const char *k) {
    static const char *const ann[] = {"title",    "description", "default",  "examples",  "format", "$schema",    "$id",
                                      "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",  "definitions"};
    for (size_t i = 0; i < sizeof ann / sizeof ann[0]; i++)
        if (!strcmp(k, ann[i])) return 1;
    return 0;
}

static int known(const char *k) {
    static const char *const kw[] = {"type",
                                     "properties",
                                     "required",
                                     "additionalProperties",
                                     "items",
                                     "prefixItems",
                                     "minItems",
                                     "maxItems",
                                     "minLength",
                                     "maxLength",
                                     "enum",
                                     "const",
                                     "anyOf",
                                     "oneOf",
                                     "allOf",
                                     "$ref",
                                     "minimum",
                                     "maximum",
                                     "exclusiveMinimum",
                                     "exclusiveMaximum"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (!strcmp(k, kw[i])) return 1;
    return is_annotation(k);
}

/* A non-negative integer keyword: its value, def when absent, -1 (after failing) when bad. */
static long count_kw(struct conv *c, const cJSON *s, const char *k, long def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, k);
    if (!v) return def;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != (double)(long)v->valuedouble)
        return fail(c, "'%s' must be a non-negative integer", k), -1;
    if (v->valuedouble > MAX_COUNT) return fail(c, "'%s' above %d is not supported", k, MAX_COUNT), -1;
    return (long)v->valuedouble;
}

/* {lo,hi} in GBNF (hi < 0: unbounded). */
static void put_range(struct sbuf *b, long lo, long hi) {
    if (hi < 0) put(b, "{%ld,}", lo);
    else if (hi == lo) put(b, "{%ld}", lo);
    else put(b, "{%ld,%ld}", lo, hi);
}

/* A new rule named r<N> with body text (taken); returns its name. */
static char *new_rule(struct conv *c, char *body) {
    if (!body) return NULL;
    size_t cap = strlen(c->prefix) + 24;
    char *name = malloc(cap);
    if (!name) return free(body), fail(c, "out of memory");
    snprintf(name, cap, "%sr%d", c->prefix, ++c->n_rules);
    put(&c->rules, "%s ::= %s\n", name, body);
    free(body);
    return name;
}

static char *object_expr(struct conv *c, const cJSON *s, int depth) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *aps = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (props && !cJSON_IsObject(props)) return fail(c, "'properties' must be an object");
    if (req && !cJSON_IsArray(req)) return fail(c, "'required' must be an array of names");
    if (aps && !cJSON_IsBool(aps) && !cJSON_IsObject(aps))
        return fail(c, "'additionalProperties' must be a boolean or a schema");
    const cJSON *r;
    cJSON_ArrayForEach(r, req) if (!cJSON_IsString(r)) return fail(c, "'required' must be an array of names");
    /* members: required ones in order (the properties' order, then names only in required),
     * then the optional ones, then more (additional) properties */
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, props) n++;
    cJSON_ArrayForEach(r, req) if (!cJSON_GetObjectItemCaseSensitive(props, r->valuestring)) n++;
    char **kv = calloc((size_t)n + 2, sizeof *kv);
    int *is_req = calloc((size_t)n + 2, sizeof *is_req);
    int k = 0, n_req = 0;
    char *out = NULL;
    if (!kv || !is_req) {
        fail(c, "out of memory");
        goto done;
    }
    /* pass 0: required properties; 1: required names without a schema; 2: optional properties */
    for (int pass = 0; pass < 3; pass++) {
        const cJSON *list = pass == 1 ? req : props;
        cJSON_ArrayForEach(p, list) {
            const char *name = pass == 1 ? p->valuestring : p->string;
            int required = 0;
            cJSON_ArrayForEach(r, req) if (!strcmp(r->valuestring, name)) required = 1;
            if (pass == 1 && cJSON_GetObjectItemCaseSensitive(props, name)) continue;
            if (pass != 1 && required != (pass == 0)) continue;
            char *v = expr(c, pass == 1 ? NULL : p, depth + 1);
            if (!v) goto done;
            cJSON *key = cJSON_CreateString(name);
            struct sbuf b = {0};
            if (!key || put_json_literal(c, &b, key)) {
                cJSON_Delete(key), free(v), free(b.s);
                fail(c, "out of memory");
                goto done;
            }
            cJSON_Delete(key);
            put(&b, " ws \":\" ws %s ws", v);
            free(v);
            if (!(kv[k] = take(c, &b))) goto done;
            is_req[k] = pass != 2;
            n_req += is_req[k];
            k++;
        }
    }
    if ((aps && (cJSON_IsTrue(aps) || cJSON_IsObject(aps))) || (!props && !cJSON_IsFalse(aps))) {
        char *v = cJSON_IsObject(aps) ? expr(c, aps, depth + 1) : strdup("value");
        if (!v) goto done;
        struct sbuf b = {0};
        put(&b, "string ws \":\" ws %s ws (\",\" ws string ws \":\" ws %s ws)*", v, v);
        free(v);
        if (!(kv[k++] = take(c, &b))) goto done;
    }
    /* optional chain: opt_i ::= kv_i ("," ws opt_{i+1})? | opt_{i+1};  opt_last ::= kv_last */
    char *opt = NULL;
    for (int i = k - 1; i >= n_req; i--) {
        struct sbuf b = {0};
        if (!opt) put(&b, "%s", kv[i]);
        else put(&b, "%s (\",\" ws %s)? | %s", kv[i], opt, opt);
        free(opt);
        if (!(opt = new_rule(c, take(c, &b)))) goto done;
    }
    struct sbuf b = {0};
    put(&b, "\"{\" ws ");
    for (int i = 0; i < n_req; i++) put(&b, "%s%s ", i ? "\",\" ws " : "", kv[i]);
    if (opt) put(&b, n_req ? "(\",\" ws %s)? " : "(%s)? ", opt);
    put(&b, "\"}\"");
    free(opt);
    out = new_rule(c, take(c, &b));
done:
    for (int i = 0; kv && i < n + 2; i++) free(kv[i]);
    free(kv), free(is_req);
    return out;
}

/* open, then each schema of list as an expression (sep between them, after each one), close. */
static char *join(struct conv *c, const cJSON *list, const char *open, const char *sep, const char *after,
                  const char *close, int depth) {
    struct sbuf b = {0};
    put(&b, "%s", open);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, list) {
        char *v = expr(c, it, depth + 1);
        if (!v) return free(b.s), NULL;
        put(&b, "%s%s%s", i++ ? sep : "", v, after);
        free(v);
    }
    put(&b, "%s", close);
    return take(c, &b);
}

static char *array_expr(struct conv *c, const cJSON *s, int depth) {
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
    long lo = count_kw(c, s, "minItems", 0), hi = count_kw(c, s, "maxItems", -1);
    if (lo < 0 || (hi < 0 && c->failed)) return NULL;
    if (hi >= 0 && hi < lo) return fail(c, "'maxItems' is below 'minItems'");
    struct sbuf b = {0};
    if (prefix) { /* a tuple: exactly these items */
        if (!cJSON_IsArray(prefix)) return fail(c, "'prefixItems' must be an array of schemas");
        if (items && !cJSON_IsFalse(items)) return fail(c, "'prefixItems' with more 'items' is not supported");
        int n = cJSON_GetArraySize(prefix);
        if (lo > n || (hi >= 0 && hi < n))
            return fail(c, "'prefixItems' with 'minItems'/'maxItems' that cut it is not supported");
        return new_rule(c, join(c, prefix, "\"[\" ws ", "\",\" ws ", " ws ", "\"]\"", depth));
    }
    if (items && cJSON_IsFalse(items)) hi = 0;
    if (hi == 0) return lo ? fail(c, "an array that must have items but may have none") : strdup("\"[\" ws \"]\"");
    char *v = items && !cJSON_IsFalse(items) ? expr(c, items, depth + 1) : strdup("value");
    if (!v) return c->failed ? NULL : fail(c, "out of memory");
    put(&b, "\"[\" ws %s", lo ? "" : "(");
    put(&b, "%s ws (\",\" ws %s ws)", v, v);
    put_range(&b, lo ? lo - 1 : 0, hi < 0 ? -1 : hi - 1);
    put(&b, "%s \"]\"", lo ? "" : ")?");
    free(v);
    return new_rule(c, take(c, &b));
}

static char *string_expr(struct conv *c, const cJSON *s) {
    long lo = count_kw(c, s, "minLength", 0), hi = count_kw(c, s, "maxLength", -1);
    if (lo < 0 || (hi < 0 && c->failed)) return NULL;
    if (hi >= 0 && hi < lo) return fail(c, "'maxLength' is below 'minLength'");
    if (lo == 0 && hi < 0) return strdup("string");
    struct sbuf b = {0};
    put(&b, "\"\\\"\" char");
    put_range(&b, lo, hi);
    put(&b, " \"\\\"\"");
    return take(c, &b);
}

/* --- integer ranges ---------------------------------------------------------------------------
 * The decimal strings (no leading zeros) of the integers in a range, as alternatives of digit
 * classes: same-length bounds split at their first differing digit (lo's tail up to 9s, the
 * digits between with any tail, hi's tail from 0s), more digits for longer numbers. */

#define RANGE_MAX 1e15 /* bounds beyond this are refused: the integer rule writes at most 16 digits */

/* Integers of k digits from lo to hi (both k-digit strings, lo <= hi). */
static void put_same_len(struct sbuf *b, const char *lo, const char *hi, int k) {
    if (k == 0) return;
    if (lo[0] == hi[0]) {
        put(b, "\"%c\" ", lo[0]);
        put_same_len(b, lo + 1, hi + 1, k - 1);
        return;
    }
    char nines[24], zeros[24];
    memset(nines, '9', (size_t)k), memset(zeros, '0', (size_t)k);
    nines[k] = zeros[k] = 0;
    put(b, "(\"%c\" ", lo[0]);
    put_same_len(b, lo + 1, nines, k - 1);
    if (lo[0] + 1 <= hi[0] - 1) {
        put(b, "| [%c-%c] ", lo[0] + 1, hi[0] - 1);
        if (k > 1) put(b, "[0-9]{%d} ", k - 1);
    }
    put(b, "| \"%c\" ", hi[0]);
    put_same_len(b, zeros, hi + 1, k - 1);
    put(b, ") ");
}

/* Integers a .. b (0 <= a; b < 0: unbounded), as "( alt | alt ... )". */
static void put_nonneg_range(struct sbuf *b, long long a, long long hi) {
    char lo_s[24], hi_s[24];
    int la = snprintf(lo_s, sizeof lo_s, "%lld", a);
    int lb = hi >= 0 ? snprintf(hi_s, sizeof hi_s, "%lld", hi) : la;
    put(b, "(");
    for (int len = la; len <= lb; len++) {
        char from[24], to[24];
        if (len == la) memcpy(from, lo_s, (size_t)la + 1);
        else from[0] = '1', memset(from + 1, '0', (size_t)len - 1), from[len] = 0;
        if (hi >= 0 && len == lb) memcpy(to, hi_s, (size_t)lb + 1);
        else memset(to, '9', (size_t)len), to[len] = 0;
        put(b, "%s", len > la ? " | " : "");
        put_same_len(b, from, to, len);
    }
    if (hi < 0 && la < 16) put(b, " | [1-9] [0-9]{%d,15}", la);
    put(b, ")");
}

/* An integer with minimum / maximum / exclusiveMinimum / exclusiveMaximum. */
static char *integer_expr(struct conv *c, const cJSON *s) {
    static const char *const kws[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    int has_lo = 0, has_hi = 0;
    double lo = 0, hi = 0;
    for (int i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, kws[i]);
        if (!v) continue;
        if (!cJSON_IsNumber(v)) return fail(c, "'%s' must be a number", kws[i]);
        if (fabs(v->valuedouble) > RANGE_MAX) return fail(c, "'%s' beyond 1e15 is not supported", kws[i]);
        double x = i < 2 ? (i == 0 ? ceil(v->valuedouble) : floor(v->valuedouble) + 1)
                         : (i == 2 ? floor(v->valuedouble) : ceil(v->valuedouble) - 1);
        if (i < 2) lo = has_lo ? fmax(lo, x) : x, has_lo = 1;
        else hi = has_hi ? fmin(hi, x) : x, has_hi = 1;
    }
    if (!has_lo && !has_hi) return strdup("integer");
    if (has_lo && has_hi && lo > hi) return fail(c, "no integer lies between the schema's minimum and maximum");
    struct sbuf b = {0};
    int alts = 0;
    put(&b, "(");
    if (!has_lo || lo < 0) { /* negatives: "-" then |x| from max(1, -hi) up to -lo */
        long long a = has_hi && hi < 0 ? (long long)-hi : 1, z = has_lo ? (long long)-lo : -1;
        put(&b, "\"-\" ");
        put_nonneg_range(&b, a, z);
        alts++;
    }
    if (!has_hi || hi >= 0) {
        put(&b, "%s", alts ? " | " : "");
        put_nonneg_range(&b, has_lo && lo > 0 ? (long long)lo : 0, has_hi ? (long long)hi : -1);
    }
    put(&b, ")");
    return take(c, &b);
}

static char *typed_expr(struct conv *c, const cJSON *s, const char *type, int depth) {
    if (!strcmp(type, "object")) return object_expr(c, s, depth);
    if (!strcmp(type, "array")) return array_expr(c, s, depth);
    if (!strcmp(type, "string")) return string_expr(c, s);
    static const char *const bounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    if (!strcmp(type, "integer")) return integer_expr(c, s);
    if (!strcmp(type, "number"))
        for (size_t i = 0; i < 4; i++)
            if (cJSON_GetObjectItemCaseSensitive(s, bounds[i]))
                return fail(c, "'%s' on a number is not supported (on an integer it is)", bounds[i]);
    if (!strcmp(type, "number") || !strcmp(type, "boolean") || !strcmp(type, "null")) return strdup(type);
    return fail(c, "unknown type '%s'", type);
}

/* The schema a JSON pointer ("#", "#/$defs/a", "#/properties/x/items") names in the root. */
static const cJSON *resolve(const cJSON *root, const char *ref) {
    if (ref[0] != '#') return NULL;
    const cJSON *at = root;
    for (const char *p = ref + 1; *p;) {
        if (*p != '/') return NULL;
        p++;
        char key[256];
        size_t n = 0;
        for (; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '~' && (p[1] == '0' || p[1] == '1')) ch = p[1] == '0' ? '~' : '/', p++;
            if (n + 1 >= sizeof key) return NULL;
            key[n++] = ch;
        }
        key[n] = 0;
        if (cJSON_IsArray(at)) {
            char *end;
            long i = strtol(key, &end, 10);
            if (*end || !*key) return NULL;
            at = cJSON_GetArrayItem(at, (int)i);
        } else {
            at = cJSON_GetObjectItemCaseSensitive(at, key);
        }
        if (!at) return NULL;
    }
    return at;
}

static char *ref_name(struct conv *c, int id) {
    size_t cap = strlen(c->prefix) + 24;
    char *name = malloc(cap);
    if (name) snprintf(name, cap, "%sref%d", c->prefix, id);
    return name ? name : fail(c, "out of memory");
}

static char *ref_expr(struct conv *c, const char *path, int depth) {
    for (int i = 0; i < c->n_refs; i++)
        if (!strcmp(c->refs[i].path, path)) return ref_name(c, c->refs[i].id);
    const cJSON *target = resolve(c->root, path);
    if (!target) return fail(c, "'$ref' %s: not found in this schema (only local references are supported)", path);
    struct ref *refs = realloc(c->refs, sizeof *refs * (size_t)(c->n_refs + 1));
    if (!refs) return fail(c, "out of memory");
    c->refs = refs;
    int id = c->n_refs + 1;
    if (!(refs[c->n_refs].path = strdup(path))) return fail(c, "out of memory");
    refs[c->n_refs++].id = id;
    char *body = expr(c, target, depth + 1);
    if (!body) return NULL;
    put(&c->rules, "%sref%d ::= %s\n", c->prefix, id, body);
    free(body);
    return ref_name(c, id);
}

/* Alternatives: "(" a " | " b ... ")". */
static char *alternatives(struct conv *c, const cJSON *list, const char *kw, int depth) {
    if (!cJSON_IsArray(list) || !cJSON_GetArraySize(list)) return fail(c, "'%s' must be a non-empty array", kw);
    return join(c, list, "(", " | ", "", ")", depth);
}

static char *expr(struct conv *c, const cJSON *s, int depth) {
    if (c->failed) return NULL;
    if (depth > MAX_DEPTH) return fail(c, "the schema nests deeper than %d", MAX_DEPTH);
    if (!s || cJSON_IsTrue(s)) return strdup("value");
    if (cJSON_IsFalse(s)) return fail(c, "the schema false accepts nothing");
    if (!cJSON_IsObject(s)) return fail(c, "a schema must be an object or a boolean");
    const cJSON *kw;
    int validating = 0;
    cJSON_ArrayForEach(kw, s) {
        if (!known(kw->string)) return fail(c, "JSON schema keyword '%s' is not supported", kw->string);
        validating += !is_annotation(kw->string);
    }
    const cJSON *v;
    /* the combinators and literals stand alone (with annotations) */
    static const char *const alone[] = {"$ref", "const", "enum", "anyOf", "oneOf", "allOf"};
    for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++) {
        if (!(v = cJSON_GetObjectItemCaseSensitive(s, alone[i]))) continue;
        /* "type" beside enum/const only restates it */
        int extra = validating - 1 - (i >= 1 && i <= 2 && cJSON_GetObjectItemCaseSensitive(s, "type") != NULL);
        if (extra) return fail(c, "'%s' together with other keywords is not supported", alone[i]);
        if (i == 0) {
            if (!cJSON_IsString(v)) return fail(c, "'$ref' must be a string");
            return ref_expr(c, v->valuestring, depth);
        }
        if (i == 1) {
            struct sbuf b = {0};
            return put_json_literal(c, &b, v) ? (free(b.s), NULL) : take(c, &b);
        }
        if (i == 2) {
            if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v)) return fail(c, "'enum' must be a non-empty array");
            struct sbuf b = {0};
            put(&b, "(");
            const cJSON *e;
            int k = 0;
            cJSON_ArrayForEach(e, v) {
                if (k++) put(&b, " | ");
                if (put_json_literal(c, &b, e)) return free(b.s), NULL;
            }
            put(&b, ")");
            return take(c, &b);
        }
        if (i == 5 && cJSON_GetArraySize(v) != 1) return fail(c, "'allOf' with more than one schema is not supported");
        return alternatives(c, v, alone[i], depth);
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (cJSON_IsString(type)) return typed_expr(c, s, type->valuestring, depth);
    if (cJSON_IsArray(type)) {
        if (!cJSON_GetArraySize(type)) return fail(c, "'type' must not be an empty array");
        struct sbuf b = {0};
        put(&b, "(");
        const cJSON *t;
        int k = 0;
        cJSON_ArrayForEach(t, type) {
            if (!cJSON_IsString(t)) return free(b.s), fail(c, "'type' must be a name or an array of names");
            char *e = typed_expr(c, s, t->valuestring, depth);
            if (!e) return free(b.s), NULL;
            put(&b, "%s%s", k++ ? " | " : "", e);
            free(e);
        }
        put(&b, ")");
        return take(c, &b);
    }
    if (type) return fail(c, "'type' must be a name or an array of names");
    /* no type: what the keywords imply, or any value */
    static const char *const obj_kw[] = {"properties", "required", "additionalProperties"};
    for (size_t i = 0; i < 3; i++)
        if (cJSON_GetObjectItemCaseSensitive(s, obj_kw[i])) return object_expr(c, s, depth);
    if (cJSON_GetObjectItemCaseSensitive(s, "items") || cJSON_GetObjectItemCaseSensitive(s, "prefixItems"))
        return array_expr(c, s, depth);
    if (cJSON_GetObjectItemCaseSensitive(s, "minLength") || cJSON_GetObjectItemCaseSensitive(s, "maxLength"))
        return string_expr(c, s);
    if (validating) return fail(c, "'minItems'/'maxItems' without an array type is not supported");
    return strdup("value");
}

/* name ::= the schema's expression, its helper rules named name-r1, ..., and the primitives
 * when base is set. */
static char *convert(const cJSON *schema, const char *name, int base, char *err, size_t err_len) {
    struct conv c = {0};
    char prefix[80];
    snprintf(prefix, sizeof prefix, "%s-", name);
    c.root = schema, c.err = err, c.err_len = err_len, c.prefix = strcmp(name, "root") ? prefix : "";
    char *top = expr(&c, schema, 0);
    if (!top && !c.failed) fail(&c, "out of memory");
    char *out = NULL;
    if (top) {
        struct sbuf b = {0};
        put(&b, "%s ::= %s\n%s%s", name, top, c.rules.s ? c.rules.s : "", base ? k_base : "");
        out = take(&c, &b);
    }
    free(top);
    free(c.rules.s);
    for (int i = 0; i < c.n_refs; i++) free(c.refs[i].path);
    free(c.refs);
    return out;
}

char *cli_schema_grammar(const cJSON *schema, char *err, size_t err_len) {
    return convert(schema, "root", 1, err, err_len);
}

char *cli_schema_rules(const cJSON *schema, const char *name, char *err, size_t err_len) {
    return convert(schema, name, 0, err, err_len);
}

const char *cli_json_base_rules(void) { return k_base; }
