/* tokenize.c - the tokenize / detokenize entry points: special tokens are cut out of the text
 * first (llama.cpp's tokenizer_st_partition), then each text fragment goes to the model. */
#include <string.h>

#include "tok_impl.h"
#include "unicode.h"

/* --- special-token partition ----------------------------------------------------------------- */

struct frag {
    int32_t id; /* >= 0: a token; -1: text[off..off+len) */
    size_t off, len;
};

struct frags {
    struct frag *p;
    size_t n, cap;
};

static vkllm_status frags_put(struct frags *f, struct frag x) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct frag *p = vkllm__realloc(f->p, cap * sizeof *p);
        if (!p) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
        f->p = p;
        f->cap = cap;
    }
    f->p[f->n++] = x;
    return VKLLM_STATUS_OK;
}

static int ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* Which candidate special tokens occur in the text at all (one pass, bucketed by first byte),
 * so that the llama.cpp-order splitting below only runs for those. */
static vkllm_status present_specials(const struct vkllm__tokenizer *t, const char *text, size_t len, int parse_special,
                                     int32_t **out, size_t *n_out) {
    const uint32_t skip = parse_special ? 0 : (VKLLM__TOK_ATTR_CONTROL | VKLLM__TOK_ATTR_UNKNOWN);
    *out = NULL;
    *n_out = 0;
    size_t head[257] = {0};
    size_t n = 0;
    for (size_t i = 0; i < t->n_special; i++) {
        int32_t id = t->special_ids[i];
        if (t->tokens[id].attr & skip) continue;
        head[(uint8_t)t->text_pool[t->tokens[id].off] + 1]++;
        n++;
    }
    if (!n) return VKLLM_STATUS_OK;
    for (int b = 0; b < 256; b++) head[b + 1] += head[b];
    int32_t *bucket = vkllm__malloc(n * sizeof *bucket);
    uint8_t *seen = vkllm__calloc(n, 1);
    size_t *fill = vkllm__malloc(257 * sizeof *fill);
    if (!bucket || !seen || !fill) {
        vkllm__free(bucket), vkllm__free(seen), vkllm__free(fill);
        return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
    }
    memcpy(fill, head, 257 * sizeof *fill);
    for (size_t i = 0; i < t->n_special; i++) { /* keeps the longest-first order per bucket */
        int32_t id = t->special_ids[i];
        if (t->tokens[id].attr & skip) continue;
        bucket[fill[(uint8_t)t->text_pool[t->tokens[id].off]]++] = id;
    }
    size_t found = 0;
    for (size_t p = 0; p < len; p++) {
        uint8_t c = (uint8_t)text[p];
        for (size_t k = head[c]; k < head[c + 1]; k++) {
            const struct vkllm__tok_token *tk = &t->tokens[bucket[k]];
            if (!seen[k] && tk->len <= len - p && memcmp(text + p, t->text_pool + tk->off, tk->len) == 0) {
                seen[k] = 1;
                found++;
            }
        }
    }
    /* back to the global longest-first order */
    int32_t *res = vkllm__malloc((found ? found : 1) * sizeof *res);
    if (!res) {
        vkllm__free(bucket), vkllm__free(seen), vkllm__free(fill);
        return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
    }
    memcpy(fill, head, 257 * sizeof *fill);
    for (size_t i = 0; i < t->n_special && *n_out < found; i++) {
        int32_t id = t->special_ids[i];
        if (t->tokens[id].attr & skip) continue;
        if (seen[fill[(uint8_t)t->text_pool[t->tokens[id].off]]++]) res[(*n_out)++] = id;
    }
    vkllm__free(bucket), vkllm__free(seen), vkllm__free(fill);
    *out = res;
    return VKLLM_STATUS_OK;
}

/* Cut every occurrence of token id out of the text fragments (left to right within each), with
 * its lstrip/rstrip attributes; frags is rebuilt into tmp and swapped. */
static vkllm_status cut_token(const struct vkllm__tokenizer *t, const char *text, int32_t id, struct frags *f,
                              struct frags *tmp) {
    const struct vkllm__tok_token *tk = &t->tokens[id];
    const char *tok = t->text_pool + tk->off;
    vkllm_status st = VKLLM_STATUS_OK;
    tmp->n = 0;
    for (size_t i = 0; i < f->n && st == VKLLM_STATUS_OK; i++) {
        struct frag x = f->p[i];
        if (x.id >= 0) {
            st = frags_put(tmp, x);
            continue;
        }
        size_t off = x.off, len = x.len;
        while (len && st == VKLLM_STATUS_OK) {
            const char *m = memmem(text + off, len, tok, tk->len);
            if (!m) break;
            size_t mo = (size_t)(m - text), left = mo - off;
            if (tk->attr & VKLLM__TOK_ATTR_LSTRIP)
                while (left && ascii_space(text[off + left - 1])) left--;
            if (left) st = frags_put(tmp, (struct frag){-1, off, left});
            if (st == VKLLM_STATUS_OK) st = frags_put(tmp, (struct frag){id, 0, 0});
            size_t end = mo + tk->len;
            len -= end - off;
            off = end;
            if (tk->attr & VKLLM__TOK_ATTR_RSTRIP)
                while (len && ascii_space(text[off])) off++, len--;
        }
        if (len && st == VKLLM_STATUS_OK) st = frags_put(tmp, (struct frag){-1, off, len});
    }
    struct frags sw = *f;
    *f = *tmp;
    *tmp = sw;
    return st;
}

static vkllm_status partition(const struct vkllm__tokenizer *t, const char *text, size_t len, int parse_special,
                              struct frags *f) {
    vkllm_status st = frags_put(f, (struct frag){-1, 0, len});
    int32_t *ids = NULL;
    size_t n = 0;
    if (st == VKLLM_STATUS_OK) st = present_specials(t, text, len, parse_special, &ids, &n);
    struct frags tmp = {0};
    for (size_t i = 0; i < n && st == VKLLM_STATUS_OK; i++) st = cut_token(t, text, ids[i], f, &tmp);
    vkllm__free(tmp.p);
    vkllm__free(ids);
    return st;
}

/* --- fragments to ids --------------------------------------------------------------------------- */

/* SentencePiece: optional leading space, then ' ' -> U+2581. */
static vkllm_status spm_fragment(const struct vkllm__tokenizer *t, const char *s, size_t n, int prefix,
                                 struct vkllm__bytes *buf, struct vkllm__ids *out, struct vkllm__wcache *cache) {
    buf->n = 0;
    vkllm_status st = vkllm__bytes_reserve(buf, 3 * n + 4);
    if (st != VKLLM_STATUS_OK) return st;
    char *d = buf->p;
    if (prefix) memcpy(d, "\xe2\x96\x81", 3), d += 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(d, "\xe2\x96\x81", 3), d += 3;
        else *d++ = s[i];
    }
    buf->n = (size_t)(d - buf->p);
    return vkllm__spm_encode(t, buf->p, buf->n, out, cache);
}

/* Byte-level BPE sees U+FFFD for each byte that is not part of valid UTF-8 (as llama.cpp). */
static vkllm_status bpe_fragment(const struct vkllm__tokenizer *t, const char *s, size_t n, struct vkllm__bytes *buf,
                                 struct vkllm__ids *out, struct vkllm__wcache *cache) {
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        size_t k = vkllm__utf8_decode((const uint8_t *)s + i, n - i, &cp);
        if (!k) break;
        i += k;
    }
    if (i == n) return vkllm__bpe_encode(t, s, n, out, cache);
    buf->n = 0;
    vkllm_status st = VKLLM_STATUS_OK;
    for (i = 0; i < n && st == VKLLM_STATUS_OK;) {
        size_t k = vkllm__utf8_decode((const uint8_t *)s + i, n - i, &cp);
        if (k) st = vkllm__bytes_put(buf, s + i, k), i += k;
        else st = vkllm__bytes_put(buf, "\xef\xbf\xbd", 3), i++;
    }
    if (st != VKLLM_STATUS_OK) return st;
    return vkllm__bpe_encode(t, buf->p, buf->n, out, cache);
}

vkllm_status vkllm__tokenize(const struct vkllm__tokenizer *t, const char *text, size_t len, int add_special,
                             int parse_special, int32_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    if (!text && len) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tokenize: NULL text");
    struct vkllm__ids out = {0};
    struct frags f = {0};
    struct vkllm__bytes buf = {0};
    struct vkllm__wcache cache;
    vkllm_status st = vkllm__wcache_init(&cache);
    int bos = add_special && t->add_bos && t->bos >= 0;
    if (st == VKLLM_STATUS_OK && bos) st = vkllm__ids_put(&out, t->bos);
    if (st == VKLLM_STATUS_OK && len) st = partition(t, text, len, parse_special, &f);
    int prev_special = 1; /* SPM: prefix a space at the start and after special tokens */
    for (size_t i = 0; i < f.n && st == VKLLM_STATUS_OK; i++) {
        const struct frag *x = &f.p[i];
        if (x->id >= 0) {
            st = vkllm__ids_put(&out, x->id);
            prev_special = 1;
            continue;
        }
        if (t->model == VKLLM__TOK_SPM)
            st = spm_fragment(t, text + x->off, x->len, t->add_space_prefix && prev_special, &buf, &out, &cache);
        else if (t->model == VKLLM__TOK_BPE) st = bpe_fragment(t, text + x->off, x->len, &buf, &out, &cache);
        else st = vkllm__wpm_encode(t, text + x->off, x->len, &out);
        prev_special = 0;
    }
    if (st == VKLLM_STATUS_OK && add_special && t->add_eos && t->eos >= 0) st = vkllm__ids_put(&out, t->eos);
    if (st == VKLLM_STATUS_OK && add_special && t->add_sep && t->sep >= 0) st = vkllm__ids_put(&out, t->sep);
    vkllm__wcache_free(&cache);
    vkllm__free(f.p);
    vkllm__free(buf.p);
    if (st != VKLLM_STATUS_OK) {
        vkllm__free(out.p);
        return st;
    }
    *ids = out.p;
    *n = out.n;
    return VKLLM_STATUS_OK;
}

/* --- ids to text -------------------------------------------------------------------------------- */

/* llama.cpp's clean_up_tokenization_spaces: " ?" " !" " ." " ," lose the space; " ' " becomes
 * "'"; " 's" " 'm" " 're" " 've" lose the space. In place; returns the new length. */
static size_t clean_spaces(char *s, size_t n) {
    size_t total = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
        s[total++] = x;
    }
    n = total;
    total = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
            total--;
            s[++i] = 0;
        }
        s[total++] = x;
    }
    n = total;
    total = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            char x1 = s[i + 1];
            if (x1 == 's' || x1 == 'm') total--;
            else if (i + 2 < n && ((x1 == 'r' && s[i + 2] == 'e') || (x1 == 'v' && s[i + 2] == 'e'))) total--;
        }
        s[total++] = x;
    }
    return total;
}

vkllm_status vkllm__detokenize(const struct vkllm__tokenizer *t, const int32_t *ids, size_t n, unsigned flags,
                               char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    struct vkllm__bytes b = {0};
    vkllm_status st = vkllm__bytes_put(&b, "", 0);
    /* only SentencePiece adds the prefix space when tokenizing, so only it loses one here */
    int strip = t->model == VKLLM__TOK_SPM && t->add_space_prefix && !(flags & VKLLM__DETOK_KEEP_SPACE);
    for (size_t i = 0; i < n && st == VKLLM_STATUS_OK; i++) {
        const char *p;
        size_t pn;
        if ((st = vkllm__token_piece(t, ids[i], (flags & VKLLM__DETOK_SPECIAL) != 0, &p, &pn)) != VKLLM_STATUS_OK)
            break;
        if (!pn) continue;
        if (strip && p[0] == ' ') p++, pn--;
        strip = 0;
        st = vkllm__bytes_put(&b, p, pn);
    }
    if (st != VKLLM_STATUS_OK) {
        vkllm__free(b.p);
        return st;
    }
    if ((flags & VKLLM__DETOK_CLEAN_SPACES) && t->clean_spaces) {
        b.n = clean_spaces(b.p, b.n);
        b.p[b.n] = 0;
    }
    *out = b.p;
    *len = b.n;
    return VKLLM_STATUS_OK;
}

/* --- streaming ------------------------------------------------------------------------------------ */

void vkllm__detok_stream_init(struct vkllm__detok_stream *s, const struct vkllm__tokenizer *t, unsigned flags) {
    memset(s, 0, sizeof *s);
    s->tok = t;
    s->flags = flags;
}

void vkllm__detok_stream_free(struct vkllm__detok_stream *s) {
    vkllm__free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}

static vkllm_status stream_reserve(struct vkllm__detok_stream *s, size_t n) {
    if (s->cap >= n) return VKLLM_STATUS_OK;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n) cap *= 2;
    char *p = vkllm__realloc(s->buf, cap);
    if (!p) return vkllm__err(VKLLM_STATUS_OOM, "detokenizer: out of memory");
    s->buf = p;
    s->cap = cap;
    return VKLLM_STATUS_OK;
}

/* Bytes a complete sequence starting with lead byte c needs, 0 when c cannot start one. */
static size_t seq_need(uint8_t c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* 1 when b[0..n) (shorter than its sequence) can still become a valid sequence. */
static int prefix_ok(const uint8_t *b, size_t n) {
    for (size_t k = 1; k < n; k++)
        if ((b[k] & 0xC0) != 0x80) return 0;
    if (n >= 2) {
        if (b[0] == 0xE0 && b[1] < 0xA0) return 0; /* overlong */
        if (b[0] == 0xED && b[1] > 0x9F) return 0; /* surrogate */
        if (b[0] == 0xF0 && b[1] < 0x90) return 0; /* overlong */
        if (b[0] == 0xF4 && b[1] > 0x8F) return 0; /* above U+10FFFF */
    }
    return 1;
}

vkllm_status vkllm__detok_stream_push(struct vkllm__detok_stream *s, int32_t id, const char **text, size_t *len) {
    *text = "";
    *len = 0;
    const char *p;
    size_t pn;
    vkllm_status st = vkllm__token_piece(s->tok, id, (s->flags & VKLLM__DETOK_SPECIAL) != 0, &p, &pn);
    if (st != VKLLM_STATUS_OK) return st;
    if (!pn) return VKLLM_STATUS_OK;
    if (!s->started && s->tok->model == VKLLM__TOK_SPM && s->tok->add_space_prefix &&
        !(s->flags & VKLLM__DETOK_KEEP_SPACE) && p[0] == ' ')
        p++, pn--;
    s->started = 1;
    /* worst case every byte becomes U+FFFD (3 bytes) */
    if ((st = stream_reserve(s, 3 * (pn + s->n_pending) + 1)) != VKLLM_STATUS_OK) return st;
    uint8_t in[4];
    size_t o = 0, np = s->n_pending;
    memcpy(in, s->pending, np);
    s->n_pending = 0;
    size_t i = 0, total = np + pn;
#define BYTE_AT(k) ((k) < np ? in[k] : (uint8_t)p[(k)-np])
    while (i < total) {
        uint8_t c = BYTE_AT(i);
        size_t need = seq_need(c);
        if (!need) {
            memcpy(s->buf + o, "\xef\xbf\xbd", 3), o += 3, i++;
            continue;
        }
        if (i + need > total) { /* keep a prefix that the next token may complete */
            uint8_t tmp[4];
            size_t have = total - i;
            for (size_t k = 0; k < have; k++) tmp[k] = BYTE_AT(i + k);
            if (prefix_ok(tmp, have)) {
                memcpy(s->pending, tmp, have);
                s->n_pending = have;
                break;
            }
            memcpy(s->buf + o, "\xef\xbf\xbd", 3), o += 3, i++;
            continue;
        }
        uint8_t seq[4];
        for (size_t k = 0; k < need; k++) seq[k] = BYTE_AT(i + k);
        uint32_t cp;
        if (vkllm__utf8_decode(seq, need, &cp) == need) {
            memcpy(s->buf + o, seq, need), o += need, i += need;
        } else {
            memcpy(s->buf + o, "\xef\xbf\xbd", 3), o += 3, i++;
        }
    }
#undef BYTE_AT
    s->buf[o] = 0;
    *text = s->buf;
    *len = o;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__detok_stream_flush(struct vkllm__detok_stream *s, const char **text, size_t *len) {
    *text = "";
    *len = 0;
    if (!s->n_pending) return VKLLM_STATUS_OK;
    vkllm_status st = stream_reserve(s, 4);
    if (st != VKLLM_STATUS_OK) return st;
    memcpy(s->buf, "\xef\xbf\xbd", 4);
    s->n_pending = 0;
    *text = s->buf;
    *len = 3;
    return VKLLM_STATUS_OK;
}
