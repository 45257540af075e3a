/* grammar.c - see grammar.h.
 *
 * Compiled form. Every rule is a list of alternatives; an alternative is a run of elements in
 * one array, closed by E_END. An element is a character class (E_CLASS | class id) or a
 * reference to a rule (E_REF | rule id). Literals become one single-character class per
 * character; repetitions and groups become helper rules (X* is R ::= X R | "").
 *
 * Matching. A stack is a chain of positions: the top is the element expected next (always a
 * class once expanded), the ones below are where to continue after the rule above finishes.
 * Stacks are hash-consed nodes (position, parent): node 0 is the empty stack (the sentence is
 * complete). A state's stacks form a sorted set, interned too; set 0 is the empty set (dead).
 * Expanding a position: a class stays; a reference is replaced by each alternative of its rule
 * (the continuation pushed below, or not when the reference ends its alternative, which keeps
 * right recursion flat); the end of an alternative pops. */
#include "grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E_END 0u
#define E_REF 0x40000000u
#define E_CLASS 0x80000000u
#define E_ARG(e) ((e)&0x3fffffffu)

#define MAX_ELEMS (1u << 20) /* compiled size */
#define MAX_REPEAT 10000u    /* {m,n} bounds */
#define MAX_SET 4096u        /* stacks in one state: more is an ambiguous grammar */
#define MAX_NODES (1u << 21) /* matcher tables: beyond these the generation fails cleanly */
#define MAX_POOL (1u << 24)
#define MAX_SETS (1u << 20)
#define MAX_TRANS (1u << 22)
#define MASK_CACHE 32

/* --- growable arrays ------------------------------------------------------------------------ */

struct u32v {
    uint32_t *v;
    uint32_t n, cap;
};

static int u32v_push(struct u32v *a, uint32_t x) {
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 16;
        uint32_t *v = vkllm__realloc(a->v, sizeof *v * cap);
        if (!v) return 0;
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = x;
    return 1;
}

/* --- open-addressing hash of uint64 keys to uint32 values ------------------------------------ */

struct hmap {
    uint64_t *key; /* key + 1; 0: empty */
    uint32_t *val;
    uint32_t cap, n; /* cap a power of two */
};

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static int hmap_get(const struct hmap *h, uint64_t key, uint32_t *val) {
    if (!h->cap) return 0;
    for (uint32_t i = (uint32_t)mix64(key) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
        if (!h->key[i]) return 0;
        if (h->key[i] == key + 1) {
            *val = h->val[i];
            return 1;
        }
    }
}

static int hmap_put(struct hmap *h, uint64_t key, uint32_t val) {
    if ((h->n + 1) * 2 > h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 1024;
        uint64_t *k = vkllm__calloc(cap, sizeof *k);
        uint32_t *v = vkllm__malloc(sizeof *v * cap);
        if (!k || !v) {
            vkllm__free(k), vkllm__free(v);
            return 0;
        }
        for (uint32_t i = 0; i < h->cap; i++) {
            if (!h->key[i]) continue;
            uint32_t j = (uint32_t)mix64(h->key[i] - 1) & (cap - 1);
            while (k[j]) j = (j + 1) & (cap - 1);
            k[j] = h->key[i], v[j] = h->val[i];
        }
        vkllm__free(h->key), vkllm__free(h->val);
        h->key = k, h->val = v, h->cap = cap;
    }
    uint32_t i = (uint32_t)mix64(key) & (h->cap - 1);
    while (h->key[i] && h->key[i] != key + 1) i = (i + 1) & (h->cap - 1);
    if (!h->key[i]) h->n++;
    h->key[i] = key + 1, h->val[i] = val;
    return 1;
}

static void hmap_free(struct hmap *h) { vkllm__free(h->key), vkllm__free(h->val); }

/* --- the grammar --------------------------------------------------------------------------- */

struct mask_entry {
    uint64_t key; /* (set << 32 | utf8) + 1; 0: empty */
    uint32_t n_allowed;
    uint8_t *bits;
    uint16_t *dist; /* per allowed token: the fewest characters that finish after it (saturated) */
};

struct vkllm__grammar {
    /* compiled */
    uint32_t *elems, n_elems;
    uint32_t *alt_start, n_alts;    /* each alternative's first element */
    uint32_t *rule_alt, *rule_nalt; /* rule r: alternatives rule_alt[r] .. + rule_nalt[r] */
    uint32_t n_rules, root;
    uint32_t *class_off, *class_n; /* class c: ranges[class_off[c] ..] pairs, class_n[c] of them */
    uint8_t *class_neg;
    uint32_t *ranges, n_classes;
    /* matcher tables */
    uint32_t *rest;                      /* per element: the fewest characters from it to its alternative's end */
    struct u32v npos, npar;              /* stack nodes; node 0 is the empty stack */
    struct u32v ndist;                   /* per node: the fewest characters that finish its stack */
    struct hmap nodes;                   /* (pos, parent) -> node */
    struct u32v pool;                    /* set members */
    struct u32v set_off, set_len, sdist; /* sdist: the fewest characters that finish a sentence */
    struct hmap sets;                    /* hash of members -> first set with that hash (chained by set_next) */
    struct u32v set_next;
    struct hmap trans;   /* (set, code point) -> set */
    struct u32v scratch; /* expansion output */
    uint32_t start;      /* the set before any text */
    /* masks */
    struct mask_entry cache[MASK_CACHE];
    uint32_t cache_next;
    uint32_t *dfs; /* trie walk: (node, set, utf8) triples */
    size_t dfs_cap;
};

void vkllm__grammar_sizes(const struct vkllm__grammar *g, uint32_t *n_stacks, uint32_t *n_sets, uint32_t *n_trans) {
    *n_stacks = g->npos.n, *n_sets = g->set_off.n, *n_trans = g->trans.n;
}

static vkllm_status oom(void) { return vkllm__err(VKLLM_STATUS_OOM, "grammar: out of host memory"); }

static vkllm_status too_big(const char *what) {
    return vkllm__err(VKLLM_STATUS_OOM, "grammar: the matcher holds too many %s (an ambiguous or very deep grammar)",
                      what);
}

/* Node for (pos, parent), made if new. 0 on failure (node 0 is never made here). */
static uint32_t node_get(struct vkllm__grammar *g, uint32_t pos, uint32_t parent) {
    uint64_t key = (uint64_t)pos << 32 | parent;
    uint32_t id;
    if (hmap_get(&g->nodes, key, &id)) return id;
    if (g->npos.n >= MAX_NODES) return 0;
    id = g->npos.n;
    uint64_t d = (uint64_t)g->rest[pos] + g->ndist.v[parent];
    if (!u32v_push(&g->npos, pos) || !u32v_push(&g->npar, parent) ||
        !u32v_push(&g->ndist, d > UINT32_MAX ? UINT32_MAX : (uint32_t)d) || !hmap_put(&g->nodes, key, id))
        return 0;
    return id;
}

/* Expand the stack `pos` over `parent` (pos never an E_END) into g->scratch: -1 on failure. */
static int expand(struct vkllm__grammar *g, uint32_t pos, uint32_t parent, int depth);

/* Continue after the element at pos: the next element of the alternative, or pop. */
static int expand_next(struct vkllm__grammar *g, uint32_t pos, uint32_t parent, int depth) {
    if (g->elems[pos + 1] != E_END) return expand(g, pos + 1, parent, depth);
    if (parent == 0) return u32v_push(&g->scratch, 0) ? 0 : -1;
    return expand(g, g->npos.v[parent], g->npar.v[parent], depth);
}

static int expand(struct vkllm__grammar *g, uint32_t pos, uint32_t parent, int depth) {
    if (depth > 10000) return -1; /* left recursion is refused at parse: cannot happen */
    uint32_t e = g->elems[pos];
    if (e & E_CLASS) {
        uint32_t id = node_get(g, pos, parent);
        return id && u32v_push(&g->scratch, id) ? 0 : -1;
    }
    uint32_t r = E_ARG(e), cont_parent = parent;
    int tail = g->elems[pos + 1] == E_END;
    if (!tail && !(cont_parent = node_get(g, pos + 1, parent))) return -1;
    for (uint32_t a = 0; a < g->rule_nalt[r]; a++) {
        uint32_t s = g->alt_start[g->rule_alt[r] + a];
        int rc;
        if (g->elems[s] != E_END) rc = expand(g, s, cont_parent, depth + 1);
        else if (tail)
            rc = parent ? expand(g, g->npos.v[parent], g->npar.v[parent], depth + 1)
                        : (u32v_push(&g->scratch, 0) ? 0 : -1);
        else rc = expand(g, pos + 1, parent, depth + 1);
        if (rc) return rc;
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Intern g->scratch[from ..] as a set (sorted, unique); scratch is cut back to from. */
static vkllm_status intern_set(struct vkllm__grammar *g, uint32_t from, uint32_t *out) {
    uint32_t *m = g->scratch.v + from, n = g->scratch.n - from;
    if (n == 0) {
        g->scratch.n = from;
        *out = 0;
        return VKLLM_STATUS_OK;
    }
    qsort(m, n, sizeof *m, cmp_u32);
    uint32_t k = 1;
    for (uint32_t i = 1; i < n; i++)
        if (m[i] != m[k - 1]) m[k++] = m[i];
    n = k;
    if (n > MAX_SET) return too_big("stacks in one state");
    uint64_t h = 0x9e3779b97f4a7c15ULL * n;
    for (uint32_t i = 0; i < n; i++) h = mix64(h ^ m[i]);
    uint32_t id;
    if (hmap_get(&g->sets, h, &id)) {
        for (; id != UINT32_MAX; id = g->set_next.v[id])
            if (g->set_len.v[id] == n && !memcmp(g->pool.v + g->set_off.v[id], m, sizeof *m * n)) {
                g->scratch.n = from;
                *out = id;
                return VKLLM_STATUS_OK;
            }
        if (!hmap_get(&g->sets, h, &id)) id = UINT32_MAX;
    } else {
        id = UINT32_MAX;
    }
    if (g->set_off.n >= MAX_SETS) return too_big("states");
    if (g->pool.n + n > MAX_POOL) return too_big("stacks in its states");
    uint32_t sid = g->set_off.n, dist = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) dist = VKLLM_MIN(dist, g->ndist.v[m[i]]);
    if (!u32v_push(&g->set_off, g->pool.n) || !u32v_push(&g->set_len, n) || !u32v_push(&g->set_next, id) ||
        !u32v_push(&g->sdist, dist))
        return oom();
    for (uint32_t i = 0; i < n; i++)
        if (!u32v_push(&g->pool, g->scratch.v[from + i]))
            return oom(); /* scratch may not move: pool is another array */
    if (!hmap_put(&g->sets, h, sid)) return oom();
    g->scratch.n = from;
    *out = sid;
    return VKLLM_STATUS_OK;
}

static int class_has(const struct vkllm__grammar *g, uint32_t c, uint32_t cp) {
    const uint32_t *r = g->ranges + g->class_off[c];
    int in = 0;
    for (uint32_t i = 0; i < g->class_n[c] && !in; i++) in = cp >= r[2 * i] && cp <= r[2 * i + 1];
    return in != g->class_neg[c];
}

/* Can class c hold some code point in [lo, hi]? */
static int class_meets(const struct vkllm__grammar *g, uint32_t c, uint32_t lo, uint32_t hi) {
    const uint32_t *r = g->ranges + g->class_off[c];
    for (uint32_t i = 0; i < g->class_n[c]; i++) {
        int meets = r[2 * i] <= hi && r[2 * i + 1] >= lo;
        if (!g->class_neg[c] && meets) return 1;
        if (g->class_neg[c] && r[2 * i] <= lo && r[2 * i + 1] >= hi) return 0;
    }
    return g->class_neg[c];
}

/* The set after code point cp from set s (0: refused). */
static vkllm_status step(struct vkllm__grammar *g, uint32_t s, uint32_t cp, uint32_t *out) {
    if (s == 0) {
        *out = 0;
        return VKLLM_STATUS_OK;
    }
    uint64_t key = (uint64_t)s << 32 | cp;
    if (hmap_get(&g->trans, key, out)) return VKLLM_STATUS_OK;
    uint32_t from = g->scratch.n;
    for (uint32_t i = 0; i < g->set_len.v[s]; i++) {
        uint32_t node = g->pool.v[g->set_off.v[s] + i];
        if (node == 0) continue;
        uint32_t pos = g->npos.v[node];
        if (!class_has(g, E_ARG(g->elems[pos]), cp)) continue;
        if (expand_next(g, pos, g->npar.v[node], 0)) {
            g->scratch.n = from;
            return g->npos.n >= MAX_NODES ? too_big("stacks") : oom();
        }
    }
    vkllm_status st = intern_set(g, from, out);
    if (st) {
        g->scratch.n = from;
        return st;
    }
    if (g->trans.n >= MAX_TRANS) return too_big("transitions");
    return hmap_put(&g->trans, key, *out) ? VKLLM_STATUS_OK : oom();
}

/* UTF-8 carried between bytes: bits 0-1 the continuation bytes still needed, bits 2-4 the
 * sequence's length, the rest the bits read so far. */
#define U8_NEED(u) ((u)&3u)
#define U8_LEN(u) (((u) >> 2) & 7u)
#define U8_ACC(u) ((u) >> 5)
#define U8(acc, len, need) ((uint32_t)(acc) << 5 | (uint32_t)(len) << 2 | (uint32_t)(need))

static const uint32_t k_u8_min[5] = {0, 0, 0x80, 0x800, 0x10000}; /* the least code point of each length */

/* One byte from (set, utf8): 0 with the new state, or refused (*set 0). */
static vkllm_status step_byte(struct vkllm__grammar *g, uint32_t *set, uint32_t *utf8, uint8_t b) {
    uint32_t u = *utf8, cp;
    if (U8_NEED(u) == 0) {
        if (b < 0x80) cp = b;
        else if (b >= 0xc2 && b <= 0xdf) u = U8(b & 0x1f, 2, 1);
        else if (b >= 0xe0 && b <= 0xef) u = U8(b & 0x0f, 3, 2);
        else if (b >= 0xf0 && b <= 0xf4) u = U8(b & 0x07, 4, 3);
        else return *set = 0, VKLLM_STATUS_OK;
        if (b >= 0x80) {
            *utf8 = u;
            return VKLLM_STATUS_OK;
        }
    } else {
        if ((b & 0xc0) != 0x80) return *set = 0, VKLLM_STATUS_OK;
        uint32_t acc = U8_ACC(u) << 6 | (b & 0x3f), need = U8_NEED(u) - 1;
        if (need) {
            *utf8 = U8(acc, U8_LEN(u), need);
            return VKLLM_STATUS_OK;
        }
        cp = acc;
        if (cp < k_u8_min[U8_LEN(u)] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return *set = 0, VKLLM_STATUS_OK; /* overlong, beyond Unicode, a surrogate */
    }
    *utf8 = 0;
    return step(g, *set, cp, set);
}

/* A character begun in utf8: can some stack of set take a character that starts so? */
static int partial_ok(const struct vkllm__grammar *g, uint32_t set, uint32_t utf8) {
    uint32_t need = U8_NEED(utf8), lo = U8_ACC(utf8) << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
    if (lo < k_u8_min[U8_LEN(utf8)]) lo = k_u8_min[U8_LEN(utf8)];
    if (hi > 0x10ffff) hi = 0x10ffff;
    if (lo > hi) return 0;
    for (uint32_t i = 0; i < g->set_len.v[set]; i++) {
        uint32_t node = g->pool.v[g->set_off.v[set] + i];
        if (node && class_meets(g, E_ARG(g->elems[g->npos.v[node]]), lo, hi)) return 1;
    }
    return 0;
}

vkllm_status vkllm__grammar_start(struct vkllm__grammar *g, struct vkllm__gstate *s) {
    s->set = g->start, s->utf8 = 0;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__grammar_feed(struct vkllm__grammar *g, struct vkllm__gstate *s, const char *bytes, size_t n,
                                 int *ok) {
    for (size_t i = 0; i < n && s->set; i++) {
        vkllm_status st = step_byte(g, &s->set, &s->utf8, (uint8_t)bytes[i]);
        if (st) return st;
    }
    *ok = s->set != 0 && (U8_NEED(s->utf8) == 0 || partial_ok(g, s->set, s->utf8));
    return VKLLM_STATUS_OK;
}

int vkllm__grammar_accepting(const struct vkllm__grammar *g, struct vkllm__gstate s) {
    return s.set && U8_NEED(s.utf8) == 0 && g->pool.v[g->set_off.v[s.set]] == 0; /* sorted: node 0 first */
}

int vkllm__grammar_finished(const struct vkllm__grammar *g, struct vkllm__gstate s) {
    return vkllm__grammar_accepting(g, s) && g->set_len.v[s.set] == 1;
}

uint32_t vkllm__grammar_distance(const struct vkllm__grammar *g, struct vkllm__gstate s) {
    return s.set ? g->sdist.v[s.set] : UINT32_MAX;
}

/* --- the vocabulary trie ------------------------------------------------------------------ */

struct vkllm__vocab_trie {
    uint32_t n_vocab, n_nodes;
    uint32_t *child, *sibling; /* first child, next sibling (0: none; node 0 is the root) */
    uint8_t *byte;
    int32_t *tok, *tok_next; /* first token ending at a node, next token ending at the same node */
};

void vkllm__vocab_trie_free(struct vkllm__vocab_trie *t) {
    if (!t) return;
    vkllm__free(t->child), vkllm__free(t->sibling), vkllm__free(t->byte), vkllm__free(t->tok);
    vkllm__free(t->tok_next), vkllm__free(t);
}

vkllm_status vkllm__vocab_trie_build(const char *pieces, const uint32_t *at, uint32_t n_vocab,
                                     struct vkllm__vocab_trie **out) {
    struct vkllm__vocab_trie *t = vkllm__calloc(1, sizeof *t);
    uint32_t cap = (at[n_vocab] - at[0]) + 1; /* at most one node per byte, plus the root */
    uint32_t root[256];
    memset(root, 0, sizeof root);
    if (!t || !(t->child = vkllm__calloc(cap, sizeof *t->child)) ||
        !(t->sibling = vkllm__calloc(cap, sizeof *t->sibling)) || !(t->byte = vkllm__calloc(cap, 1)) ||
        !(t->tok = vkllm__malloc(sizeof *t->tok * cap)) ||
        !(t->tok_next = vkllm__malloc(sizeof *t->tok_next * n_vocab))) {
        vkllm__vocab_trie_free(t);
        return oom();
    }
    t->n_vocab = n_vocab, t->n_nodes = 1;
    t->tok[0] = -1;
    for (uint32_t i = 0; i < n_vocab; i++) {
        uint32_t len = at[i + 1] - at[i], cur = 0;
        t->tok_next[i] = -1;
        if (!len) continue;
        for (uint32_t k = 0; k < len; k++) {
            uint8_t b = (uint8_t)pieces[at[i] + k];
            uint32_t c = 0;
            if (cur == 0) c = root[b];
            else
                for (c = t->child[cur]; c && t->byte[c] != b; c = t->sibling[c]) {}
            if (!c) {
                c = t->n_nodes++;
                t->byte[c] = b, t->tok[c] = -1;
                t->sibling[c] = t->child[cur], t->child[cur] = c;
                if (cur == 0) root[b] = c;
            }
            cur = c;
        }
        t->tok_next[i] = t->tok[cur], t->tok[cur] = (int32_t)i;
    }
    *out = t;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__grammar_mask(struct vkllm__grammar *g, struct vkllm__gstate s, const struct vkllm__vocab_trie *t,
                                 const uint8_t **allowed, uint32_t *n_allowed, const uint16_t **dist) {
    uint64_t key = ((uint64_t)s.set << 32 | s.utf8) + 1;
    for (uint32_t i = 0; i < MASK_CACHE; i++)
        if (g->cache[i].key == key) {
            *allowed = g->cache[i].bits, *n_allowed = g->cache[i].n_allowed;
            if (dist) *dist = g->cache[i].dist;
            return VKLLM_STATUS_OK;
        }
    struct mask_entry *e = &g->cache[g->cache_next];
    g->cache_next = (g->cache_next + 1) % MASK_CACHE;
    size_t nbytes = (t->n_vocab + 7) / 8;
    if (!e->bits && !(e->bits = vkllm__malloc(nbytes ? nbytes : 1))) return oom();
    if (!e->dist && !(e->dist = vkllm__malloc(sizeof *e->dist * (t->n_vocab ? t->n_vocab : 1)))) return oom();
    e->key = 0;
    memset(e->bits, 0, nbytes);
    uint32_t count = 0;
    if (s.set) {
        /* depth-first over the trie: a subtree is entered only while the grammar takes its bytes */
        size_t sp = 0;
        if (g->dfs_cap < (size_t)3 * t->n_nodes) {
            vkllm__free(g->dfs);
            if (!(g->dfs = vkllm__malloc(sizeof *g->dfs * 3 * (size_t)t->n_nodes))) return g->dfs_cap = 0, oom();
            g->dfs_cap = (size_t)3 * t->n_nodes;
        }
        for (uint32_t c = t->child[0]; c; c = t->sibling[c])
            g->dfs[sp++] = c, g->dfs[sp++] = s.set, g->dfs[sp++] = s.utf8;
        while (sp) {
            uint32_t utf8 = g->dfs[--sp], set = g->dfs[--sp], node = g->dfs[--sp];
            vkllm_status st = step_byte(g, &set, &utf8, t->byte[node]);
            if (st) return st;
            if (!set) continue;
            if (t->tok[node] >= 0 && (U8_NEED(utf8) == 0 || partial_ok(g, set, utf8))) {
                uint16_t d = (uint16_t)VKLLM_MIN(g->sdist.v[set], UINT16_MAX);
                for (int32_t k = t->tok[node]; k >= 0; k = t->tok_next[k])
                    e->bits[k >> 3] |= (uint8_t)(1u << (k & 7)), e->dist[k] = d, count++;
            }
            for (uint32_t c = t->child[node]; c; c = t->sibling[c])
                g->dfs[sp++] = c, g->dfs[sp++] = set, g->dfs[sp++] = utf8;
        }
    }
    e->key = key, e->n_allowed = count;
    *allowed = e->bits, *n_allowed = count;
    if (dist) *dist = e->dist;
    return VKLLM_STATUS_OK;
}

/* --- parsing ------------------------------------------------------------------------------- */

struct prule {
    char *name;
    int defined;
    uint32_t first_alt, n_alts; /* into the alternative list, once defined (contiguous) */
};

struct parser {
    const char *s, *end, *p;
    struct prule *rules;
    uint32_t n_rules, cap_rules;
    /* alternatives under construction are built in `seq` stacks; finished ones go to alts */
    struct u32v elems;     /* finished alternatives' elements, each closed by E_END */
    struct u32v alt_start; /* of finished alternatives */
    struct u32v alt_rule;  /* the rule each finished alternative belongs to */
    struct u32v ranges, class_off, class_n;
    struct u32v class_neg;
    const char *err_at;
    char err[160];
};

static int perr(struct parser *P, const char *at, const char *msg) {
    if (!P->err_at) {
        P->err_at = at;
        snprintf(P->err, sizeof P->err, "%s", msg);
    }
    return -1;
}

static int is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skip spaces, tabs and comments; newlines too when nl. */
static void skip(struct parser *P, int nl) {
    while (P->p < P->end) {
        char c = *P->p;
        if (c == ' ' || c == '\t' || (nl && (c == '\n' || c == '\r'))) P->p++;
        else if (c == '#')
            while (P->p < P->end && *P->p != '\n') P->p++;
        else break;
    }
}

static int rule_id(struct parser *P, const char *name, size_t len, uint32_t *id) {
    for (uint32_t i = 0; i < P->n_rules; i++)
        if (P->rules[i].name && strlen(P->rules[i].name) == len && !memcmp(P->rules[i].name, name, len)) {
            *id = i;
            return 0;
        }
    if (P->n_rules == P->cap_rules) {
        uint32_t cap = P->cap_rules ? P->cap_rules * 2 : 16;
        struct prule *r = vkllm__realloc(P->rules, sizeof *r * cap);
        if (!r) return -1;
        P->rules = r, P->cap_rules = cap;
    }
    struct prule *r = &P->rules[P->n_rules];
    memset(r, 0, sizeof *r);
    if (name) {
        if (!(r->name = vkllm__malloc(len + 1))) return -1;
        memcpy(r->name, name, len), r->name[len] = 0;
    }
    *id = P->n_rules++;
    return 0;
}

/* One character of a literal or class at P->p (escape or UTF-8): -1 on error. */
static int64_t read_char(struct parser *P) {
    const uint8_t *q = (const uint8_t *)P->p;
    if (P->p >= P->end) return perr(P, P->p, "unexpected end of text");
    if (*q == '\\') {
        if (P->p + 1 >= P->end) return perr(P, P->p, "unfinished escape");
        char c = P->p[1];
        P->p += 2;
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
        if (digits) {
            uint32_t v = 0;
            for (int i = 0; i < digits; i++, P->p++) {
                char h = P->p < P->end ? *P->p : 0;
                int d = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
                if (d < 0) return perr(P, P->p, "bad hexadecimal escape");
                v = v * 16 + (uint32_t)d;
            }
            if (v > 0x10ffff) return perr(P, P->p, "escape beyond U+10FFFF");
            return v;
        }
        switch (c) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '0': return 0;
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '\'': return (uint8_t)c;
        default: return perr(P, P->p - 2, "unknown escape");
        }
    }
    uint32_t cp, n;
    if (*q < 0x80) cp = *q, n = 1;
    else if ((*q & 0xe0) == 0xc0) cp = *q & 0x1f, n = 2;
    else if ((*q & 0xf0) == 0xe0) cp = *q & 0x0f, n = 3;
    else if ((*q & 0xf8) == 0xf0) cp = *q & 0x07, n = 4;
    else return perr(P, P->p, "invalid UTF-8");
    if (P->p + n > P->end) return perr(P, P->p, "invalid UTF-8");
    for (uint32_t i = 1; i < n; i++) {
        if ((q[i] & 0xc0) != 0x80) return perr(P, P->p, "invalid UTF-8");
        cp = cp << 6 | (q[i] & 0x3f);
    }
    P->p += n;
    return cp;
}

static int add_class(struct parser *P, int neg, const uint32_t *r, uint32_t n, uint32_t *elem) {
    uint32_t id = P->class_off.n;
    if (!u32v_push(&P->class_off, P->ranges.n) || !u32v_push(&P->class_n, n) ||
        !u32v_push(&P->class_neg, (uint32_t)neg))
        return -1;
    for (uint32_t i = 0; i < 2 * n; i++)
        if (!u32v_push(&P->ranges, r[i])) return -1;
    *elem = E_CLASS | id;
    return 0;
}

/* Close alternative seq (elements) as one of rule r's. Alternatives of a rule are gathered in
 * order and made contiguous when the grammar is assembled. */
static int add_alt(struct parser *P, uint32_t r, const struct u32v *seq) {
    if (P->elems.n + seq->n + 1 > MAX_ELEMS) return perr(P, P->p, "grammar too large");
    if (!u32v_push(&P->alt_start, P->elems.n) || !u32v_push(&P->alt_rule, r)) return -1;
    for (uint32_t i = 0; i < seq->n; i++)
        if (!u32v_push(&P->elems, seq->v[i])) return -1;
    return u32v_push(&P->elems, E_END) ? 0 : -1;
}

/* A helper rule with the given alternatives (each a list of elements). */
static int helper(struct parser *P, uint32_t *rid, const struct u32v *a, const struct u32v *b) {
    if (rule_id(P, NULL, 0, rid)) return -1;
    P->rules[*rid].defined = 1;
    if (add_alt(P, *rid, a)) return -1;
    return b ? add_alt(P, *rid, b) : 0;
}

static int parse_alternates(struct parser *P, uint32_t rule, int nested);

/* Append X repeated {lo, hi} (hi UINT32_MAX: unbounded) to seq, X being one element. */
static int repeat(struct parser *P, struct u32v *seq, uint32_t x, uint32_t lo, uint32_t hi) {
    for (uint32_t i = 0; i < lo; i++)
        if (!u32v_push(seq, x)) return -1;
    struct u32v a = {0}, empty = {0};
    int rc = 0;
    uint32_t rid;
    if (hi == UINT32_MAX) { /* R ::= X R | "" */
        if (rule_id(P, NULL, 0, &rid)) return -1;
        P->rules[rid].defined = 1;
        rc = !u32v_push(&a, x) || !u32v_push(&a, E_REF | rid) || add_alt(P, rid, &a) || add_alt(P, rid, &empty) ||
                     !u32v_push(seq, E_REF | rid)
                 ? -1
                 : 0;
    } else if (hi > lo) { /* R1 ::= X | "";  Rk ::= X R(k-1) | "" */
        uint32_t prev = UINT32_MAX;
        for (uint32_t i = lo; i < hi && !rc; i++) {
            a.n = 0;
            rc =
                !u32v_push(&a, x) || (prev != UINT32_MAX && !u32v_push(&a, E_REF | prev)) || helper(P, &rid, &a, &empty)
                    ? -1
                    : 0;
            prev = rid;
        }
        if (!rc && !u32v_push(seq, E_REF | prev)) rc = -1;
    }
    vkllm__free(a.v);
    return rc;
}

static int parse_uint(struct parser *P, uint32_t *v) {
    if (P->p >= P->end || *P->p < '0' || *P->p > '9') return perr(P, P->p, "expected a number");
    uint64_t x = 0;
    while (P->p < P->end && *P->p >= '0' && *P->p <= '9') {
        x = x * 10 + (uint64_t)(*P->p++ - '0');
        if (x > MAX_REPEAT) return perr(P, P->p, "repetition count too large (at most 10000)");
    }
    *v = (uint32_t)x;
    return 0;
}

/* One sequence into seq; stops before '|', ')', the end of the line (top level) or the text. */
static int parse_sequence(struct parser *P, struct u32v *seq, int nested) {
    uint32_t last = UINT32_MAX; /* where the last symbol's elements start */
    for (;;) {
        skip(P, nested);
        if (P->p >= P->end) return 0;
        const char *at = P->p;
        char c = *P->p;
        if (c == '"') {
            P->p++;
            last = seq->n;
            while (P->p < P->end && *P->p != '"') {
                int64_t cp = read_char(P);
                uint32_t r[2] = {(uint32_t)cp, (uint32_t)cp}, e;
                if (cp < 0 || add_class(P, 0, r, 1, &e) || !u32v_push(seq, e)) return -1;
            }
            if (P->p >= P->end) return perr(P, at, "unterminated literal");
            P->p++;
            if (seq->n == last) last = UINT32_MAX; /* "" matches nothing: nothing to repeat */
        } else if (c == '[') {
            P->p++;
            int neg = P->p < P->end && *P->p == '^';
            if (neg) P->p++;
            struct u32v r = {0};
            while (P->p < P->end && *P->p != ']') {
                int64_t lo = read_char(P), hi = lo;
                if (lo >= 0 && P->p + 1 < P->end && *P->p == '-' && P->p[1] != ']') {
                    P->p++;
                    hi = read_char(P);
                }
                if (lo < 0 || hi < 0) return vkllm__free(r.v), -1;
                if (hi < lo) return vkllm__free(r.v), perr(P, at, "character range out of order");
                if (!u32v_push(&r, (uint32_t)lo) || !u32v_push(&r, (uint32_t)hi)) return vkllm__free(r.v), -1;
            }
            if (P->p >= P->end) return vkllm__free(r.v), perr(P, at, "unterminated character class");
            P->p++;
            uint32_t e;
            int rc = add_class(P, neg, r.v, r.n / 2, &e);
            vkllm__free(r.v);
            last = seq->n;
            if (rc || !u32v_push(seq, e)) return -1;
        } else if (c == '.') {
            P->p++;
            uint32_t e;
            last = seq->n;
            if (add_class(P, 1, NULL, 0, &e) || !u32v_push(seq, e)) return -1;
        } else if (c == '(') {
            P->p++;
            uint32_t rid;
            if (rule_id(P, NULL, 0, &rid)) return -1;
            P->rules[rid].defined = 1;
            skip(P, 1);
            if (parse_alternates(P, rid, 1)) return -1;
            skip(P, 1);
            if (P->p >= P->end || *P->p != ')') return perr(P, at, "unclosed '('");
            P->p++;
            last = seq->n;
            if (!u32v_push(seq, E_REF | rid)) return -1;
        } else if (is_name_char(c)) {
            const char *n0 = P->p;
            while (P->p < P->end && is_name_char(*P->p)) P->p++;
            uint32_t rid;
            if (rule_id(P, n0, (size_t)(P->p - n0), &rid)) return -1;
            last = seq->n;
            if (!u32v_push(seq, E_REF | rid)) return -1;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (last == UINT32_MAX) return perr(P, at, "repetition without anything to repeat");
            uint32_t lo = 0, hi = UINT32_MAX;
            P->p++;
            if (c == '+') lo = 1;
            else if (c == '?') hi = 1;
            else if (c == '{') {
                skip(P, 0);
                if (parse_uint(P, &lo)) return -1;
                skip(P, 0);
                hi = lo;
                if (P->p < P->end && *P->p == ',') {
                    P->p++;
                    skip(P, 0);
                    hi = UINT32_MAX;
                    if (P->p < P->end && *P->p != '}' && parse_uint(P, &hi)) return -1;
                    skip(P, 0);
                }
                if (P->p >= P->end || *P->p != '}') return perr(P, at, "expected '}'");
                P->p++;
                if (hi < lo) return perr(P, at, "repetition {m,n} with n < m");
            }
            /* the symbol: one element, or its elements (a literal) as a helper rule */
            uint32_t x = seq->v[last];
            if (seq->n - last > 1) {
                struct u32v lit = {seq->v + last, seq->n - last, 0};
                uint32_t rid;
                if (helper(P, &rid, &lit, NULL)) return -1;
                x = E_REF | rid;
            }
            seq->n = last;
            if (repeat(P, seq, x, lo, hi)) return -1;
            if ((uint64_t)P->elems.n + seq->n > MAX_ELEMS) return perr(P, at, "grammar too large");
            last = UINT32_MAX;
        } else {
            return 0;
        }
    }
}

static int parse_alternates(struct parser *P, uint32_t rule, int nested) {
    struct u32v seq = {0};
    for (;;) {
        seq.n = 0;
        if (parse_sequence(P, &seq, nested) || add_alt(P, rule, &seq)) return vkllm__free(seq.v), -1;
        skip(P, nested);
        if (!nested) { /* a '|' that starts the next line continues the rule */
            const char *save = P->p;
            skip(P, 1);
            if (P->p < P->end && *P->p == '|' && save != P->p) save = P->p;
            P->p = save;
        }
        if (P->p < P->end && *P->p == '|') {
            P->p++;
            skip(P, 1);
            continue;
        }
        vkllm__free(seq.v);
        return 0;
    }
}

static void parser_free(struct parser *P) {
    for (uint32_t i = 0; i < P->n_rules; i++) vkllm__free(P->rules[i].name);
    vkllm__free(P->rules), vkllm__free(P->elems.v), vkllm__free(P->alt_start.v), vkllm__free(P->alt_rule.v);
    vkllm__free(P->ranges.v), vkllm__free(P->class_off.v), vkllm__free(P->class_n.v), vkllm__free(P->class_neg.v);
}

void vkllm__grammar_free(struct vkllm__grammar *g) {
    if (!g) return;
    vkllm__free(g->elems), vkllm__free(g->alt_start), vkllm__free(g->rule_alt), vkllm__free(g->rule_nalt);
    vkllm__free(g->class_off), vkllm__free(g->class_n), vkllm__free(g->class_neg), vkllm__free(g->ranges);
    vkllm__free(g->npos.v), vkllm__free(g->npar.v), hmap_free(&g->nodes), vkllm__free(g->pool.v);
    vkllm__free(g->set_off.v), vkllm__free(g->set_len.v), hmap_free(&g->sets), vkllm__free(g->set_next.v);
    hmap_free(&g->trans), vkllm__free(g->scratch.v), vkllm__free(g->dfs);
    for (uint32_t i = 0; i < MASK_CACHE; i++) vkllm__free(g->cache[i].bits), vkllm__free(g->cache[i].dist);
    vkllm__free(g->rest), vkllm__free(g->ndist.v), vkllm__free(g->sdist.v);
    vkllm__free(g);
}

/* Left recursion: rule r reaches itself through leftmost references, past nullable prefixes. */
static int nullable_alt(const struct vkllm__grammar *g, uint32_t a, const uint8_t *nullable) {
    for (uint32_t p = g->alt_start[a]; g->elems[p] != E_END; p++)
        if ((g->elems[p] & E_CLASS) || !nullable[E_ARG(g->elems[p])]) return 0;
    return 1;
}

static int left_cycle(const struct vkllm__grammar *g, const uint8_t *nullable, uint8_t *color, uint32_t r,
                      uint32_t *culprit) {
    color[r] = 1;
    for (uint32_t a = g->rule_alt[r]; a < g->rule_alt[r] + g->rule_nalt[r]; a++)
        for (uint32_t p = g->alt_start[a]; g->elems[p] != E_END && !(g->elems[p] & E_CLASS); p++) {
            uint32_t q = E_ARG(g->elems[p]);
            if (color[q] == 1) return *culprit = q, 1;
            if (!color[q] && left_cycle(g, nullable, color, q, culprit)) return 1;
            if (!nullable[q]) break;
        }
    color[r] = 2;
    return 0;
}

static vkllm_status syntax_error(const struct parser *P) {
    uint32_t line = 1, col = 1;
    for (const char *q = P->s; q < P->err_at && q < P->end; q++) {
        if (*q == '\n') line++, col = 1;
        else col++;
    }
    return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "grammar: line %u, column %u: %s", line, col, P->err);
}

vkllm_status vkllm__grammar_parse(const char *text, size_t len, struct vkllm__grammar **out) {
    struct parser P;
    memset(&P, 0, sizeof P);
    P.s = P.p = text, P.end = text + len;
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm__grammar *g = NULL;
    uint8_t *nullable = NULL, *color = NULL;
    for (;;) {
        skip(&P, 1);
        if (P.p >= P.end) break;
        const char *n0 = P.p;
        while (P.p < P.end && is_name_char(*P.p)) P.p++;
        if (P.p == n0) {
            perr(&P, n0, "expected a rule name");
            break;
        }
        uint32_t rid;
        if (rule_id(&P, n0, (size_t)(P.p - n0), &rid)) goto fail_oom;
        skip(&P, 0);
        if (P.end - P.p < 3 || memcmp(P.p, "::=", 3)) {
            perr(&P, P.p, "expected '::='");
            break;
        }
        if (P.rules[rid].defined) {
            perr(&P, n0, "rule defined twice");
            break;
        }
        P.rules[rid].defined = 1;
        P.p += 3;
        skip(&P, 1);
        if (parse_alternates(&P, rid, 0)) {
            if (!P.err_at) goto fail_oom;
            break;
        }
        skip(&P, 0);
        if (P.p < P.end && *P.p != '\n' && *P.p != '\r') {
            perr(&P, P.p, *P.p == ')' ? "unmatched ')'" : "unexpected character");
            break;
        }
    }
    if (P.err_at) goto fail_syntax;
    uint32_t root = UINT32_MAX;
    for (uint32_t i = 0; i < P.n_rules; i++) {
        if (!P.rules[i].defined) {
            snprintf(P.err, sizeof P.err, "rule '%s' is used but never defined", P.rules[i].name);
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "grammar: %s", P.err);
            goto done;
        }
        if (P.rules[i].name && !strcmp(P.rules[i].name, "root")) root = i;
    }
    if (root == UINT32_MAX) {
        st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "grammar: no 'root' rule");
        goto done;
    }
    /* assemble: alternatives grouped by rule, in order */
    if (!(g = vkllm__calloc(1, sizeof *g))) goto fail_oom;
    g->n_rules = P.n_rules, g->root = root, g->n_elems = P.elems.n, g->n_alts = P.alt_start.n;
    g->n_classes = P.class_off.n;
    if (!(g->elems = vkllm__malloc(sizeof *g->elems * (P.elems.n + 1))) ||
        !(g->alt_start = vkllm__malloc(sizeof *g->alt_start * (P.alt_start.n + 1))) ||
        !(g->rule_alt = vkllm__calloc(P.n_rules, sizeof *g->rule_alt)) ||
        !(g->rule_nalt = vkllm__calloc(P.n_rules, sizeof *g->rule_nalt)) ||
        !(g->class_off = vkllm__malloc(sizeof *g->class_off * (P.class_off.n + 1))) ||
        !(g->class_n = vkllm__malloc(sizeof *g->class_n * (P.class_off.n + 1))) ||
        !(g->class_neg = vkllm__malloc(P.class_off.n + 1)) ||
        !(g->ranges = vkllm__malloc(sizeof *g->ranges * (P.ranges.n + 1))))
        goto fail_oom;
    memcpy(g->elems, P.elems.v, sizeof *g->elems * P.elems.n);
    for (uint32_t a = 0; a < P.alt_start.n; a++) g->rule_nalt[P.alt_rule.v[a]]++;
    for (uint32_t r = 0, at = 0; r < P.n_rules; r++) g->rule_alt[r] = at, at += g->rule_nalt[r];
    {
        uint32_t *fill = vkllm__calloc(P.n_rules ? P.n_rules : 1, sizeof *fill);
        if (!fill) goto fail_oom;
        for (uint32_t a = 0; a < P.alt_start.n; a++) {
            uint32_t r = P.alt_rule.v[a];
            g->alt_start[g->rule_alt[r] + fill[r]++] = P.alt_start.v[a];
        }
        vkllm__free(fill);
    }
    for (uint32_t c = 0; c < P.class_off.n; c++)
        g->class_off[c] = P.class_off.v[c], g->class_n[c] = P.class_n.v[c], g->class_neg[c] = (uint8_t)P.class_neg.v[c];
    if (P.ranges.n) memcpy(g->ranges, P.ranges.v, sizeof *g->ranges * P.ranges.n);
    /* nullable rules (fixpoint), then left recursion */
    if (!(nullable = vkllm__calloc(P.n_rules, 1)) || !(color = vkllm__calloc(P.n_rules, 1))) goto fail_oom;
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t r = 0; r < P.n_rules; r++)
            for (uint32_t a = g->rule_alt[r]; !nullable[r] && a < g->rule_alt[r] + g->rule_nalt[r]; a++)
                if (nullable_alt(g, a, nullable)) nullable[r] = 1, changed = 1;
    }
    for (uint32_t r = 0; r < P.n_rules; r++) {
        uint32_t culprit;
        if (!color[r] && left_cycle(g, nullable, color, r, &culprit)) {
            /* name the named rule on the cycle (helper rules have none) */
            const char *name = P.rules[culprit].name;
            for (uint32_t q = 0; !name && q < P.n_rules; q++)
                if (color[q] == 1 && P.rules[q].name) name = P.rules[q].name;
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                            "grammar: rule '%s' is left-recursive (it can reach itself before reading a character)",
                            name ? name : "?");
            goto done;
        }
    }
    /* the fewest characters of each rule (fixpoint; a rule that never ends keeps UINT32_MAX), then
     * from each element to the end of its alternative */
    {
        uint32_t *minlen = vkllm__malloc(sizeof *minlen * (P.n_rules ? P.n_rules : 1));
        if (!minlen || !(g->rest = vkllm__malloc(sizeof *g->rest * (P.elems.n + 1)))) {
            vkllm__free(minlen);
            goto fail_oom;
        }
        for (uint32_t r = 0; r < P.n_rules; r++) minlen[r] = UINT32_MAX;
        for (int changed = 1; changed;) {
            changed = 0;
            for (uint32_t r = 0; r < P.n_rules; r++)
                for (uint32_t a = g->rule_alt[r]; a < g->rule_alt[r] + g->rule_nalt[r]; a++) {
                    uint64_t chars = 0;
                    for (uint32_t q = g->alt_start[a]; g->elems[q] != E_END && chars < UINT32_MAX; q++)
                        chars += (g->elems[q] & E_CLASS) ? 1 : minlen[E_ARG(g->elems[q])];
                    if (chars < minlen[r]) minlen[r] = (uint32_t)chars, changed = 1;
                }
        }
        for (uint32_t q = P.elems.n; q-- > 0;) {
            uint32_t e = g->elems[q];
            uint64_t chars = e == E_END ? 0 : (uint64_t)((e & E_CLASS) ? 1 : minlen[E_ARG(e)]) + g->rest[q + 1];
            g->rest[q] = chars > UINT32_MAX ? UINT32_MAX : (uint32_t)chars;
        }
        vkllm__free(minlen);
    }
    /* matcher: node 0 = the empty stack, set 0 = the empty set, then the start */
    if (!u32v_push(&g->npos, UINT32_MAX) || !u32v_push(&g->npar, 0) || !u32v_push(&g->ndist, 0) ||
        !u32v_push(&g->set_off, 0) || !u32v_push(&g->set_len, 0) || !u32v_push(&g->set_next, UINT32_MAX) ||
        !u32v_push(&g->sdist, UINT32_MAX))
        goto fail_oom;
    {
        uint32_t from = g->scratch.n;
        for (uint32_t a = g->rule_alt[root]; a < g->rule_alt[root] + g->rule_nalt[root]; a++) {
            uint32_t s = g->alt_start[a];
            int rc = g->elems[s] == E_END ? !u32v_push(&g->scratch, 0) : expand(g, s, 0, 0);
            if (rc) goto fail_oom;
        }
        if ((st = intern_set(g, from, &g->start))) goto done;
    }
    *out = g;
    g = NULL;
    goto done;
fail_syntax:
    st = syntax_error(&P);
    goto done;
fail_oom:
    st = P.err_at ? syntax_error(&P) : oom();
done:
    vkllm__free(nullable), vkllm__free(color);
    vkllm__grammar_free(g);
    parser_free(&P);
    return st;
}

vkllm_status vkllm_grammar_validate(const char *gbnf, size_t len) {
    if (!gbnf) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_grammar_validate: NULL grammar");
    struct vkllm__grammar *g = NULL;
    vkllm_status st = vkllm__grammar_parse(gbnf, len ? len : strlen(gbnf), &g);
    vkllm__grammar_free(g);
    return st;
}
