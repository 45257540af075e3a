/* vocab.c - build a tokenizer from GGUF tokenizer.ggml.* metadata, with llama.cpp's defaults
 * and per-model settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STB_DS_IMPLEMENTATION /* the one definition in libvkllm (tokenizer/ owns it) */
#include <stb_ds.h>

#include "gguf.h"
#include "tok_impl.h"
#include "unicode.h"

/* GGUF token types (tokenizer.ggml.token_type). */
enum {
    TT_UNDEFINED = 0,
    TT_NORMAL = 1,
    TT_UNKNOWN = 2,
    TT_CONTROL = 3,
    TT_USER_DEFINED = 4,
    TT_UNUSED = 5,
    TT_BYTE = 6
};

static uint32_t attr_from_type(int64_t tt) {
    switch (tt) {
    case TT_NORMAL: return VKLLM__TOK_ATTR_NORMAL;
    case TT_UNKNOWN: return VKLLM__TOK_ATTR_UNKNOWN;
    case TT_CONTROL: return VKLLM__TOK_ATTR_CONTROL;
    case TT_USER_DEFINED: return VKLLM__TOK_ATTR_USER_DEFINED;
    case TT_UNUSED: return VKLLM__TOK_ATTR_UNUSED;
    case TT_BYTE: return VKLLM__TOK_ATTR_BYTE;
    default: return 0;
    }
}

int32_t vkllm__tok_find(const struct vkllm__tokenizer *t, const char *s, size_t n) {
    const struct vkllm__strmap_slot *sl = vkllm__strmap_get(&t->token_map, s, n);
    return sl ? sl->val : -1;
}

int32_t vkllm__token_find(const struct vkllm__tokenizer *t, const char *text, size_t len) {
    return vkllm__tok_find(t, text, len);
}

void vkllm__tokenizer_free(struct vkllm__tokenizer *t) {
    if (!t) return;
    vkllm__free(t->tokens);
    vkllm__free(t->text_pool);
    vkllm__free(t->piece_pool);
    vkllm__strmap_free(&t->token_map);
    vkllm__free(t->pre_name);
    vkllm__free(t->chat_template);
    vkllm__free(t->eog);
    vkllm__free(t->special_ids);
    vkllm__pairmap_free(&t->merges);
    vkllm__pretok_free(t->pretok);
    vkllm__free(t);
}

static const char *tok_text(const struct vkllm__tokenizer *t, int32_t id) { return t->text_pool + t->tokens[id].off; }

static char *dup_str(struct vkllm__str s) {
    char *p = vkllm__malloc(s.len + 1);
    if (!p) return NULL;
    memcpy(p, s.ptr, s.len);
    p[s.len] = 0;
    return p;
}

/* --- tokens, scores, types ------------------------------------------------------------------ */

static vkllm_status load_tokens(struct vkllm__tokenizer *t, const struct vkllm__gguf *g) {
    const struct vkllm__gguf_kv *kv_tok, *kv_score = NULL, *kv_type = NULL;
    vkllm_status st = vkllm__gguf_get_arr(g, "tokenizer.ggml.tokens", VKLLM__GGUF_STRING, &kv_tok);
    if (st == VKLLM_STATUS_NOT_FOUND)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: no tokenizer.ggml.tokens", g->path);
    if (st != VKLLM_STATUS_OK) return st;
    if (kv_tok->arr_n == 0 || kv_tok->arr_n > INT32_MAX / 2)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: tokenizer.ggml.tokens has %llu entries", g->path,
                          (unsigned long long)kv_tok->arr_n);
    uint32_t n = (uint32_t)kv_tok->arr_n;

    st = vkllm__gguf_get_arr(g, "tokenizer.ggml.scores", VKLLM__GGUF_VTYPE_COUNT_, &kv_score);
    if (st == VKLLM_STATUS_NOT_FOUND) kv_score = NULL;
    else if (st != VKLLM_STATUS_OK) return st;
    else if (kv_score->arr_n < n || kv_score->arr_type == VKLLM__GGUF_STRING || kv_score->arr_type == VKLLM__GGUF_ARRAY)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: tokenizer.ggml.scores: %llu numbers for %u tokens", g->path,
                          (unsigned long long)kv_score->arr_n, n);
    st = vkllm__gguf_get_arr(g, "tokenizer.ggml.token_type", VKLLM__GGUF_VTYPE_COUNT_, &kv_type);
    if (st == VKLLM_STATUS_NOT_FOUND) kv_type = NULL;
    else if (st != VKLLM_STATUS_OK) return st;
    else if (kv_type->arr_n < n || kv_type->arr_type == VKLLM__GGUF_STRING || kv_type->arr_type == VKLLM__GGUF_ARRAY)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: tokenizer.ggml.token_type: %llu values for %u tokens", g->path,
                          (unsigned long long)kv_type->arr_n, n);

    struct vkllm__str *strs = NULL;
    if ((st = vkllm__gguf_arr_strings(kv_tok, &strs)) != VKLLM_STATUS_OK) return st;

    /* text pool: each text followed by a NUL; empty texts become "[EMPTY_i]" as in llama.cpp */
    size_t pool = 0;
    for (uint32_t i = 0; i < n; i++) pool += (strs[i].len ? strs[i].len : 24) + 1;
    t->n_vocab = n;
    t->tokens = vkllm__calloc(n, sizeof *t->tokens);
    t->text_pool = vkllm__malloc(pool);
    if (!t->tokens || !t->text_pool) {
        vkllm__free(strs);
        return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory (%u tokens)", n);
    }
    size_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct vkllm__tok_token *tk = &t->tokens[i];
        size_t len = strs[i].len;
        if (len) memcpy(t->text_pool + off, strs[i].ptr, len);
        else len = (size_t)snprintf(t->text_pool + off, 24, "[EMPTY_%u]", i);
        t->text_pool[off + len] = 0;
        tk->off = (uint32_t)off;
        tk->len = (uint32_t)len;
        off += len + 1;
        tk->score = kv_score ? (float)vkllm__gguf_arr_f64(kv_score, i) : 0.0f;
        tk->attr = kv_type ? attr_from_type(vkllm__gguf_arr_i64(kv_type, i)) : VKLLM__TOK_ATTR_NORMAL;
        if (len > t->max_token_len) t->max_token_len = len;
    }
    vkllm__free(strs);
    if (off > UINT32_MAX) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: vocabulary text too large", g->path);

    if ((st = vkllm__strmap_init(&t->token_map, n)) != VKLLM_STATUS_OK) return st;
    for (uint32_t i = 0; i < n && st == VKLLM_STATUS_OK; i++)
        st = vkllm__strmap_set(&t->token_map, tok_text(t, (int32_t)i), t->tokens[i].len, (int32_t)i, 0);
    return st;
}

/* --- BPE merges -------------------------------------------------------------------------------- */

static vkllm_status load_merges(struct vkllm__tokenizer *t, const struct vkllm__gguf *g) {
    const struct vkllm__gguf_kv *kv;
    vkllm_status st = vkllm__gguf_get_arr(g, "tokenizer.ggml.merges", VKLLM__GGUF_STRING, &kv);
    if (st == VKLLM_STATUS_NOT_FOUND)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: BPE vocabulary without tokenizer.ggml.merges", g->path);
    if (st != VKLLM_STATUS_OK) return st;
    if (kv->arr_n > INT32_MAX) return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: too many merges", g->path);
    struct vkllm__str *m = NULL;
    if ((st = vkllm__gguf_arr_strings(kv, &m)) != VKLLM_STATUS_OK) return st;
    st = vkllm__pairmap_init(&t->merges, kv->arr_n);
    struct vkllm__bytes cat = {0};
    for (uint64_t i = 0; i < kv->arr_n && st == VKLLM_STATUS_OK; i++) {
        /* "first second", split at the first space after position 0 */
        const char *s = m[i].ptr;
        size_t len = m[i].len, sp = 1;
        while (sp < len && s[sp] != ' ') sp++;
        if (sp >= len) continue;
        int32_t l = vkllm__tok_find(t, s, sp), r = vkllm__tok_find(t, s + sp + 1, len - sp - 1);
        if (l < 0 || r < 0) continue; /* can never apply: its parts are not tokens */
        cat.n = 0;
        if ((st = vkllm__bytes_put(&cat, s, sp)) != VKLLM_STATUS_OK) break;
        if ((st = vkllm__bytes_put(&cat, s + sp + 1, len - sp - 1)) != VKLLM_STATUS_OK) break;
        st = vkllm__pairmap_add(&t->merges, l, r, (int32_t)i, vkllm__tok_find(t, cat.p, cat.n));
    }
    vkllm__free(cat.p);
    vkllm__free(m);
    return st;
}

/* --- special token ids and flags ---------------------------------------------------------------- */

static vkllm_status get_id(const struct vkllm__gguf *g, const char *key, uint32_t n, int32_t *id) {
    uint64_t v;
    vkllm_status st = vkllm__gguf_get_u64(g, key, &v);
    if (st == VKLLM_STATUS_NOT_FOUND) return VKLLM_STATUS_OK;
    if (st != VKLLM_STATUS_OK) return st;
    if (v == UINT32_MAX) { /* how converters write "no such token" */
        *id = -1;
        return VKLLM_STATUS_OK;
    }
    if (v >= n) {
        vkllm__log(VKLLM_LOG_WARN, "%s: %s = %llu is out of the vocabulary; using %d", g->path, key,
                   (unsigned long long)v, *id);
        return VKLLM_STATUS_OK;
    }
    *id = (int32_t)v;
    return VKLLM_STATUS_OK;
}

static vkllm_status get_flag(const struct vkllm__gguf *g, const char *key, int *flag) {
    int v;
    vkllm_status st = vkllm__gguf_get_bool(g, key, &v);
    if (st == VKLLM_STATUS_NOT_FOUND) return VKLLM_STATUS_OK;
    if (st != VKLLM_STATUS_OK) return st;
    *flag = v != 0;
    return VKLLM_STATUS_OK;
}

static vkllm_status load_special(struct vkllm__tokenizer *t, const struct vkllm__gguf *g) {
    static const struct {
        const char *key;
        size_t field;
    } ids[] = {
        {"tokenizer.ggml.bos_token_id", offsetof(struct vkllm__tokenizer, bos)},
        {"tokenizer.ggml.eos_token_id", offsetof(struct vkllm__tokenizer, eos)},
        {"tokenizer.ggml.eot_token_id", offsetof(struct vkllm__tokenizer, eot)},
        {"tokenizer.ggml.eom_token_id", offsetof(struct vkllm__tokenizer, eom)},
        {"tokenizer.ggml.unknown_token_id", offsetof(struct vkllm__tokenizer, unk)},
        {"tokenizer.ggml.seperator_token_id", offsetof(struct vkllm__tokenizer, sep)},
        {"tokenizer.ggml.separator_token_id", offsetof(struct vkllm__tokenizer, sep)},
        {"tokenizer.ggml.padding_token_id", offsetof(struct vkllm__tokenizer, pad)},
        {"tokenizer.ggml.mask_token_id", offsetof(struct vkllm__tokenizer, mask)},
    };
    int32_t *fields[VKLLM_ARRAY_LEN(ids)];
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(ids); i++) {
        fields[i] = (int32_t *)((char *)t + ids[i].field);
        /* a default id outside the vocabulary is no id (llama.cpp disables it) */
        if (*fields[i] >= (int32_t)t->n_vocab) *fields[i] = -1;
    }
    vkllm_status st = VKLLM_STATUS_OK;
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(ids) && st == VKLLM_STATUS_OK; i++)
        st = get_id(g, ids[i].key, t->n_vocab, fields[i]);
    if (st == VKLLM_STATUS_OK) st = get_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos);
    if (st == VKLLM_STATUS_OK) st = get_flag(g, "tokenizer.ggml.add_eos_token", &t->add_eos);
    if (st == VKLLM_STATUS_OK) st = get_flag(g, "tokenizer.ggml.add_sep_token", &t->add_sep);
    return st;
}

/* Tokens llama.cpp recognizes by their text: end-of-turn/-generation and fill-in-the-middle
 * tokens are made control tokens (so they are not matched in plain text). */
static const char *const eot_texts[] = {"<|eot_id|>",
                                        "<|im_end|>",
                                        "<|end|>",
                                        "<end_of_turn>",
                                        "<|endoftext|>",
                                        "<|end_of_text|>",
                                        "<EOT>",
                                        "_<EOT>",
                                        "[EOT]",
                                        "<\xef\xbd\x9c"
                                        "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                        "<end_of_utterance>"};
static const char *const eog_texts[] = {"<|eot_id|>",    "<|im_end|>", "<|end|>",         "<|return|>",
                                        "<|call|>",      "<|flush|>",  "<|calls|>",       "<end_of_turn>",
                                        "<|endoftext|>", "<|eom_id|>", "<EOT>",           "_<EOT>",
                                        "[EOT]",         "[EOS]",      "<|end_of_text|>", "<end_of_utterance>"};
static const char *const fim_texts[] = {"<|fim_prefix|>",
                                        "<fim-prefix>",
                                        "<fim_prefix>",
                                        "<\xef\xbd\x9c"
                                        "fim\xe2\x96\x81"
                                        "begin\xef\xbd\x9c>",
                                        "<PRE>",
                                        "\xe2\x96\x81<PRE>",
                                        "<|code_prefix|>",
                                        "<|prefix|>",
                                        "<|fim_suffix|>",
                                        "<fim-suffix>",
                                        "<fim_suffix>",
                                        "<\xef\xbd\x9c"
                                        "fim\xe2\x96\x81hole\xef\xbd\x9c>",
                                        "<SUF>",
                                        "\xe2\x96\x81<SUF>",
                                        "<|code_suffix|>",
                                        "<|suffix|>",
                                        "<|fim_middle|>",
                                        "<fim-middle>",
                                        "<fim_middle>",
                                        "<\xef\xbd\x9c"
                                        "fim\xe2\x96\x81"
                                        "end\xef\xbd\x9c>",
                                        "<MID>",
                                        "\xe2\x96\x81<MID>",
                                        "<|code_middle|>",
                                        "<|middle|>",
                                        "<|fim_pad|>",
                                        "<fim-pad>",
                                        "<fim_pad>",
                                        "<PAD>",
                                        "[PAD]",
                                        "<|eom_id|>"};

static int32_t find_cstr(const struct vkllm__tokenizer *t, const char *s) { return vkllm__tok_find(t, s, strlen(s)); }

static void mark_control(struct vkllm__tokenizer *t, int32_t id) {
    if (id >= 0) t->tokens[id].attr |= VKLLM__TOK_ATTR_CONTROL;
}

static vkllm_status detect_special(struct vkllm__tokenizer *t, const struct vkllm__gguf *g) {
    if (t->eot < 0)
        for (size_t i = 0; i < VKLLM_ARRAY_LEN(eot_texts) && t->eot < 0; i++)
            if ((t->eot = find_cstr(t, eot_texts[i])) >= 0) mark_control(t, t->eot);
    if (t->eom < 0 && (t->eom = find_cstr(t, "<|eom_id|>")) >= 0) mark_control(t, t->eom);
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(fim_texts); i++) mark_control(t, find_cstr(t, fim_texts[i]));

    t->eog = vkllm__calloc(t->n_vocab, 1);
    if (!t->eog) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(eog_texts); i++) {
        int32_t id = find_cstr(t, eog_texts[i]);
        if (id >= 0) {
            t->eog[id] = 1;
            mark_control(t, id);
        }
    }
    /* harmony (gpt-oss): <|end|> closes a message inside the answer (the analysis channel before
     * the final one); only <|return|> and <|call|> end generation (llama.cpp's rule) */
    if (t->eos >= 0) t->eog[t->eos] = 1;
    if (t->eot >= 0) t->eog[t->eot] = 1;
    if (t->eom >= 0) t->eog[t->eom] = 1;
    int32_t end = find_cstr(t, "<|end|>");
    if (end >= 0 && end != t->eos && find_cstr(t, "<|return|>") >= 0 && find_cstr(t, "<|call|>") >= 0) t->eog[end] = 0;

    /* per-model attributes llama.cpp sets by name */
    struct vkllm__str name = {0}, arch = {0};
    char lname[128] = "";
    if (vkllm__gguf_get_str(g, "general.name", &name) == VKLLM_STATUS_OK) {
        size_t n = VKLLM_MIN(name.len, sizeof lname - 1);
        for (size_t i = 0; i < n; i++)
            lname[i] = (char)((name.ptr[i] >= 'A' && name.ptr[i] <= 'Z') ? name.ptr[i] + 32 : name.ptr[i]);
        lname[n] = 0;
    }
    (void)vkllm__gguf_get_str(g, "general.architecture", &arch);
    int jina = t->pre_name && (strstr(t->pre_name, "jina-v2-de") || strstr(t->pre_name, "jina-v2-es") ||
                               strstr(t->pre_name, "jina-v2-code"));
    if (arch.len && (vkllm__str_eq(arch, "nomic-bert-moe") || vkllm__str_eq(arch, "jina-bert-v3"))) jina = 1;
    if (jina) {
        int32_t id = find_cstr(t, "<mask>");
        if (id >= 0) t->tokens[id].attr |= VKLLM__TOK_ATTR_LSTRIP;
    } else if (strstr(lname, "phi-3") || strstr(lname, "phi3")) {
        for (uint32_t i = 0; i < t->n_vocab; i++)
            if (t->tokens[i].attr & (VKLLM__TOK_ATTR_CONTROL | VKLLM__TOK_ATTR_USER_DEFINED | VKLLM__TOK_ATTR_UNKNOWN))
                t->tokens[i].attr |= VKLLM__TOK_ATTR_RSTRIP;
        int32_t id = find_cstr(t, "</s>");
        if (id >= 0) t->tokens[id].attr |= VKLLM__TOK_ATTR_RSTRIP;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t i = 0; i < VKLLM_ARRAY_LEN(keep); i++)
            if ((id = find_cstr(t, keep[i])) >= 0) t->tokens[id].attr &= ~(uint32_t)VKLLM__TOK_ATTR_RSTRIP;
    }
    return VKLLM_STATUS_OK;
}

/* Special tokens matched in text: control, user-defined and unknown, longest first (ties by
 * id, so the order is deterministic). */
struct len_id {
    uint32_t len;
    int32_t id;
};

static int cmp_len_id(const void *a, const void *b) {
    const struct len_id *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static vkllm_status build_special(struct vkllm__tokenizer *t) {
    const uint32_t mask = VKLLM__TOK_ATTR_CONTROL | VKLLM__TOK_ATTR_USER_DEFINED | VKLLM__TOK_ATTR_UNKNOWN;
    size_t n = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) n += (t->tokens[i].attr & mask) != 0;
    struct len_id *tmp = vkllm__malloc((n ? n : 1) * sizeof *tmp);
    t->special_ids = vkllm__malloc((n ? n : 1) * sizeof *t->special_ids);
    if (!tmp || !t->special_ids) {
        vkllm__free(tmp);
        return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
    }
    for (uint32_t i = 0; i < t->n_vocab; i++)
        if (t->tokens[i].attr & mask) tmp[t->n_special++] = (struct len_id){t->tokens[i].len, (int32_t)i};
    qsort(tmp, t->n_special, sizeof *tmp, cmp_len_id);
    for (size_t i = 0; i < t->n_special; i++) t->special_ids[i] = tmp[i].id;
    vkllm__free(tmp);
    return VKLLM_STATUS_OK;
}

/* --- pieces ------------------------------------------------------------------------------------- */

/* The bytes a token stands for when rendered with special = true (llama.cpp token_to_piece). */
static vkllm_status piece_of(const struct vkllm__tokenizer *t, int32_t id, struct vkllm__bytes *b) {
    const struct vkllm__tok_token *tk = &t->tokens[id];
    const char *s = tok_text(t, id);
    const uint32_t verbatim = VKLLM__TOK_ATTR_CONTROL | VKLLM__TOK_ATTR_UNKNOWN | VKLLM__TOK_ATTR_USER_DEFINED;
    if (tk->attr & verbatim) return vkllm__bytes_put(b, s, tk->len);
    if (t->model == VKLLM__TOK_BPE) {
        if (!(tk->attr & VKLLM__TOK_ATTR_NORMAL)) return VKLLM_STATUS_OK;
        vkllm_status st = VKLLM_STATUS_OK;
        for (size_t i = 0; i < tk->len && st == VKLLM_STATUS_OK;) {
            uint32_t cp;
            size_t k = vkllm__utf8_decode((const uint8_t *)s + i, tk->len - i, &cp);
            int byte = k ? vkllm__gpt2_cp_to_byte(cp) : -1;
            if (byte >= 0) {
                char c = (char)byte;
                st = vkllm__bytes_put(b, &c, 1);
            } else { /* not a mapped byte: keep the text as it is */
                if (!k) k = 1;
                st = vkllm__bytes_put(b, s + i, k);
            }
            i += k;
        }
        return st;
    }
    if (tk->attr & VKLLM__TOK_ATTR_NORMAL) { /* SPM / WPM: U+2581 -> ' ' */
        vkllm_status st = VKLLM_STATUS_OK;
        for (size_t i = 0; i < tk->len && st == VKLLM_STATUS_OK;) {
            if (i + 3 <= tk->len && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
                st = vkllm__bytes_put(b, " ", 1);
                i += 3;
            } else {
                st = vkllm__bytes_put(b, s + i, 1);
                i++;
            }
        }
        return st;
    }
    if (tk->attr & VKLLM__TOK_ATTR_BYTE) { /* "<0xNN>" */
        unsigned v;
        char c;
        if (tk->len == 6 && sscanf(s, "<0x%2X>", &v) == 1) {
            c = (char)v;
            return vkllm__bytes_put(b, &c, 1);
        }
        return vkllm__bytes_put(b, s, tk->len);
    }
    return VKLLM_STATUS_OK; /* unused / undefined tokens render as nothing */
}

static vkllm_status build_pieces(struct vkllm__tokenizer *t) {
    struct vkllm__bytes b = {0};
    vkllm_status st = VKLLM_STATUS_OK;
    for (uint32_t i = 0; i < t->n_vocab && st == VKLLM_STATUS_OK; i++) {
        size_t start = b.n;
        st = piece_of(t, (int32_t)i, &b);
        if (b.n > UINT32_MAX) st = vkllm__err(VKLLM_STATUS_BAD_FORMAT, "tokenizer: pieces too large");
        t->tokens[i].piece_off = (uint32_t)start;
        t->tokens[i].piece_len = (uint32_t)(b.n - start);
        if (b.n - start > t->max_piece_len) t->max_piece_len = b.n - start;
    }
    if (st == VKLLM_STATUS_OK && !b.p) st = vkllm__bytes_put(&b, "", 0);
    if (st != VKLLM_STATUS_OK) {
        vkllm__free(b.p);
        return st;
    }
    t->piece_pool = b.p;
    return VKLLM_STATUS_OK;
}

/* Byte fallback tokens and, for SPM, whether the text may be cut before each U+2581. */
static void build_bytes(struct vkllm__tokenizer *t) {
    for (int c = 0; c < 256; c++) {
        char buf[8];
        int32_t id = -1;
        if (t->model == VKLLM__TOK_BPE) {
            size_t n = vkllm__utf8_encode(vkllm__gpt2_byte_to_cp((uint8_t)c), buf);
            id = vkllm__tok_find(t, buf, n);
        } else {
            snprintf(buf, sizeof buf, "<0x%02X>", c);
            id = vkllm__tok_find(t, buf, 6);
            if (id < 0) {
                buf[0] = (char)c;
                id = vkllm__tok_find(t, buf, 1);
            }
        }
        t->byte_id[c] = id;
    }
    t->spm_split_ok = 1;
    for (uint32_t i = 0; i < t->n_vocab && t->spm_split_ok; i++) {
        const char *s = tok_text(t, (int32_t)i);
        size_t n = t->tokens[i].len;
        for (size_t p = 1; p + 3 <= n; p++) {
            if (memcmp(s + p, "\xe2\x96\x81", 3) != 0) continue;
            if (p < 3 || memcmp(s + p - 3, "\xe2\x96\x81", 3) != 0) {
                t->spm_split_ok = 0;
                break;
            }
        }
    }
}

/* --- init ------------------------------------------------------------------------------------------ */

static vkllm_status init_model(struct vkllm__tokenizer *t, const struct vkllm__gguf *g) {
    struct vkllm__str model;
    vkllm_status st = vkllm__gguf_get_str(g, "tokenizer.ggml.model", &model);
    if (st == VKLLM_STATUS_NOT_FOUND)
        return vkllm__err(VKLLM_STATUS_BAD_FORMAT, "%s: no tokenizer.ggml.model", g->path);
    if (st != VKLLM_STATUS_OK) return st;
    t->bos = t->eos = t->eot = t->eom = t->unk = t->sep = t->pad = t->mask = -1;
    if (vkllm__str_eq(model, "llama")) {
        t->model = VKLLM__TOK_SPM;
        t->bos = 1, t->eos = 2, t->unk = 0;
        t->add_space_prefix = 1, t->add_bos = 1;
    } else if (vkllm__str_eq(model, "gpt2")) {
        t->model = VKLLM__TOK_BPE;
        t->bos = 11, t->eos = 11;
        t->clean_spaces = 1;
    } else if (vkllm__str_eq(model, "bert")) {
        t->model = VKLLM__TOK_WPM;
        t->bos = 101, t->unk = 100, t->sep = 102, t->pad = 0, t->mask = 103;
        t->add_bos = 1, t->add_sep = 1, t->clean_spaces = 1;
    } else {
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "%s: tokenizer model '%.*s' is not supported "
                          "(vkllm has llama, gpt2 and bert)",
                          g->path, (int)VKLLM_MIN(model.len, 64), model.ptr);
    }
    snprintf(t->model_name, sizeof t->model_name, "%.*s", (int)model.len, model.ptr);

    struct vkllm__str pre = {"", 0};
    st = vkllm__gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    if (st != VKLLM_STATUS_OK && st != VKLLM_STATUS_NOT_FOUND) return st;
    if (st == VKLLM_STATUS_NOT_FOUND && t->model == VKLLM__TOK_BPE)
        vkllm__log(VKLLM_LOG_WARN,
                   "%s: no tokenizer.ggml.pre: using the 'default' pre-tokenizer "
                   "(as llama.cpp; the file should be regenerated)",
                   g->path);
    if (!pre.len) pre = (struct vkllm__str){"default", 7};
    if (!(t->pre_name = dup_str(pre))) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
    if (strlen(t->pre_name) != pre.len)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "%s: unknown pre-tokenizer type (NUL in name)", g->path);

    if (t->model == VKLLM__TOK_BPE) {
        struct vkllm__pretok_flags f;
        if ((st = vkllm__pretok_init(t->pre_name, &t->pretok, &f)) != VKLLM_STATUS_OK) {
            vkllm__err_prefix("%s: ", g->path);
            return st;
        }
        t->ignore_merges = f.ignore_merges;
        t->clean_spaces = f.clean_spaces;
        if (f.add_bos >= 0) t->add_bos = f.add_bos;
        if (f.add_sep) t->add_sep = 1;
        if (f.no_bos_token) t->bos = -1;
    }
    return get_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix);
}

vkllm_status vkllm__tokenizer_init_gguf(const struct vkllm__gguf *g, struct vkllm__tokenizer **out) {
    *out = NULL;
    struct vkllm__tokenizer *t = vkllm__calloc(1, sizeof *t);
    if (!t) return vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
    vkllm_status st = init_model(t, g);
    if (st == VKLLM_STATUS_OK) st = load_tokens(t, g);
    if (st == VKLLM_STATUS_OK && t->model == VKLLM__TOK_BPE) st = load_merges(t, g);
    if (st == VKLLM_STATUS_OK) st = load_special(t, g);
    if (st == VKLLM_STATUS_OK) st = detect_special(t, g);
    if (st == VKLLM_STATUS_OK) st = build_special(t);
    if (st == VKLLM_STATUS_OK) st = build_pieces(t);
    if (st == VKLLM_STATUS_OK) {
        struct vkllm__str tmpl;
        vkllm_status s2 = vkllm__gguf_get_str(g, "tokenizer.chat_template", &tmpl);
        if (s2 == VKLLM_STATUS_OK && !(t->chat_template = dup_str(tmpl)))
            st = vkllm__err(VKLLM_STATUS_OOM, "tokenizer: out of memory");
    }
    if (st != VKLLM_STATUS_OK) {
        vkllm__tokenizer_free(t);
        return st;
    }
    build_bytes(t);
    *out = t;
    return VKLLM_STATUS_OK;
}

/* --- queries ----------------------------------------------------------------------------------------- */

void vkllm__tokenizer_get_info(const struct vkllm__tokenizer *t, struct vkllm__tokenizer_info *o) {
    memset(o, 0, sizeof *o);
    o->model = t->model;
    o->model_name = t->model_name;
    o->pre = t->pre_name;
    o->n_vocab = t->n_vocab;
    o->bos = t->bos, o->eos = t->eos, o->eot = t->eot, o->eom = t->eom;
    o->unk = t->unk, o->sep = t->sep, o->pad = t->pad, o->mask = t->mask;
    o->add_bos = t->add_bos, o->add_eos = t->add_eos, o->add_sep = t->add_sep;
    o->add_space_prefix = t->add_space_prefix;
    o->clean_spaces = t->clean_spaces;
    o->chat_template = t->chat_template;
    o->max_piece_len = t->max_piece_len;
}

uint32_t vkllm__token_attr(const struct vkllm__tokenizer *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->n_vocab ? t->tokens[id].attr : 0;
}

int vkllm__token_is_eog(const struct vkllm__tokenizer *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->n_vocab && t->eog[id];
}

const char *vkllm__token_text(const struct vkllm__tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || (uint32_t)id >= t->n_vocab) return NULL;
    if (len) *len = t->tokens[id].len;
    return tok_text(t, id);
}

vkllm_status vkllm__token_piece(const struct vkllm__tokenizer *t, int32_t id, int special, const char **piece,
                                size_t *len) {
    if (id < 0 || (uint32_t)id >= t->n_vocab)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "token id %d is out of the vocabulary (0..%u)", id,
                          t->n_vocab - 1);
    const struct vkllm__tok_token *tk = &t->tokens[id];
    *piece = t->piece_pool + tk->piece_off;
    *len = tk->piece_len;
    if (!special && (tk->attr & (VKLLM__TOK_ATTR_CONTROL | VKLLM__TOK_ATTR_UNKNOWN))) *len = 0;
    return VKLLM_STATUS_OK;
}
