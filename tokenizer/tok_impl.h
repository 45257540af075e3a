/* tok_impl.h - what the tokenizer's source files share (not for use outside tokenizer/). */
#ifndef VKLLM_TOK_IMPL_H
#define VKLLM_TOK_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* --- growable byte / id buffers (OOM-safe) ------------------------------------------------ */

struct vkllm__bytes {
    char *p;
    size_t n, cap;
};
struct vkllm__ids {
    int32_t *p;
    size_t n, cap;
};

vkllm_status vkllm__bytes_reserve(struct vkllm__bytes *b, size_t extra);
vkllm_status vkllm__bytes_put(struct vkllm__bytes *b, const void *src, size_t n);
vkllm_status vkllm__ids_put(struct vkllm__ids *v, int32_t id);
vkllm_status vkllm__ids_put_n(struct vkllm__ids *v, const int32_t *ids, size_t n);

/* --- merge queue ----------------------------------------------------------------------------
 * Merge candidates ordered by (key, left), packed as key << 32 | left in one uint64 (key: BPE
 * rank; SPM score in reverse order, vkllm__float_order_desc). The candidates a word starts with
 * are kept as a sorted run read in order, later ones in a 4-ary heap, so a million-character
 * word does not push a million entries through the heap. A popped candidate is re-checked by
 * the caller against the current symbols (left's right neighbour must still make a merge of
 * that key), which is equivalent to llama.cpp's "texts unchanged" test. */
struct vkllm__mqueue {
    uint64_t *heap;
    size_t n, cap;
    uint64_t *run;
    size_t run_n, run_pos, run_cap;
};
static inline uint64_t vkllm__mq_entry(uint32_t key, int32_t left) { return ((uint64_t)key << 32) | (uint32_t)left; }
void vkllm__mq_reset(struct vkllm__mqueue *q);
vkllm_status vkllm__mq_seed(struct vkllm__mqueue *q, uint64_t e); /* initial candidates */
void vkllm__mq_seal(struct vkllm__mqueue *q);                     /* after the last seed */
vkllm_status vkllm__mq_push(struct vkllm__mqueue *q, uint64_t e);
int vkllm__mq_pop(struct vkllm__mqueue *q, uint64_t *e); /* 0 when empty */
void vkllm__mq_free(struct vkllm__mqueue *q);
/* A float as an unsigned integer in the opposite order (higher score first; -0 == +0). */
uint32_t vkllm__float_order_desc(float f);

/* --- byte-string -> int32 hash map (open addressing) --------------------------------------
 * Keys are (pointer, length) into storage that the owner keeps alive. */
struct vkllm__strmap_slot {
    uint32_t hash;
    uint32_t len;
    const char *key;
    int32_t val;
    int32_t aux; /* second value (word cache: count of ids) */
};
struct vkllm__strmap {
    struct vkllm__strmap_slot *slots; /* key == NULL: empty */
    size_t cap;                       /* power of two */
    size_t n;
};

uint32_t vkllm__hash_bytes(const void *p, size_t n);
vkllm_status vkllm__strmap_init(struct vkllm__strmap *m, size_t expected);
void vkllm__strmap_free(struct vkllm__strmap *m);
/* Insert or overwrite (key must outlive the map). */
vkllm_status vkllm__strmap_set(struct vkllm__strmap *m, const char *key, size_t len, int32_t val, int32_t aux);
/* Slot of key, or NULL. */
const struct vkllm__strmap_slot *vkllm__strmap_get(const struct vkllm__strmap *m, const char *key, size_t len);

/* --- u64 -> (rank, id) map for BPE merges ---------------------------------------------------- */
struct vkllm__pairmap_slot {
    uint64_t key; /* (left << 32 | right) + 1; 0: empty */
    int32_t rank;
    int32_t id; /* merged token, -1 when the merged text is not a token */
};
struct vkllm__pairmap {
    struct vkllm__pairmap_slot *slots;
    size_t cap;
    size_t n;
};

/* --- pre-tokenizer (pretok.c) ---------------------------------------------------------------- */
struct vkllm__pretok; /* compiled regex list */

/* Flags a pre-tokenizer name implies (llama.cpp's per-pre settings). */
struct vkllm__pretok_flags {
    int ignore_merges; /* a word that is a whole token is not merged */
    int clean_spaces;
    int add_bos; /* -1: leave alone, 0/1: set */
    int add_sep;
    int no_bos_token; /* BOS id cleared (chatglm) */
};

/* Compile the regex list for pre-tokenizer `name` (NULL or "" = "default"). UNSUPPORTED for an
 * unknown name. */
vkllm_status vkllm__pretok_init(const char *name, struct vkllm__pretok **out, struct vkllm__pretok_flags *flags);
void vkllm__pretok_free(struct vkllm__pretok *p);
/* Split valid UTF-8 text[0..len) into words: *offs receives pairs (start, end) of byte offsets,
 * *n_words of them (free with vkllm__free). */
vkllm_status vkllm__pretok_split(const struct vkllm__pretok *p, const char *text, size_t len, size_t **offs,
                                 size_t *n_words);
/* Split with an explicit regex list (tests). */
vkllm_status vkllm__pretok_init_regexes(const char *const *regexes, size_t n, struct vkllm__pretok **out);

/* --- the tokenizer ------------------------------------------------------------------------ */
struct vkllm__tok_token {
    uint32_t off, len;             /* text in tok->text_pool */
    uint32_t piece_off, piece_len; /* decoded piece (special rendering) in tok->piece_pool */
    float score;
    uint32_t attr;
};

struct vkllm__tokenizer {
    enum vkllm__tok_model model;
    char model_name[16];
    char *pre_name;
    uint32_t n_vocab;
    struct vkllm__tok_token *tokens; /* (n_vocab,) */
    char *text_pool;
    char *piece_pool;
    struct vkllm__strmap token_map; /* text -> id (the last id wins for duplicate texts) */
    size_t max_token_len;           /* bytes */
    size_t max_piece_len;

    int32_t bos, eos, eot, eom, unk, sep, pad, mask;
    int add_bos, add_eos, add_sep, add_space_prefix, clean_spaces, ignore_merges;
    char *chat_template;

    int32_t byte_id[256]; /* SPM: <0xNN> (or the 1-byte token); BPE: the mapped char; -1 */
    uint8_t *eog;         /* (n_vocab,) 1 for end-of-generation tokens */

    /* special tokens matched in text, longest first */
    int32_t *special_ids;
    size_t n_special;

    /* BPE */
    struct vkllm__pairmap merges;
    struct vkllm__pretok *pretok;

    /* SPM: no token joins a non-U+2581 character with a following U+2581, so the text can be
     * cut before each such U+2581 and the pieces merged independently (same result, faster). */
    int spm_split_ok;
};

/* GPT-2 byte <-> unicode mapping. */
uint32_t vkllm__gpt2_byte_to_cp(uint8_t b);
/* -1 when cp is not the image of a byte. */
int vkllm__gpt2_cp_to_byte(uint32_t cp);

int32_t vkllm__tok_find(const struct vkllm__tokenizer *t, const char *s, size_t n);

/* Per-call cache word -> ids (keys are private copies; ids live in `ids`). */
struct vkllm__wcache {
    struct vkllm__strmap map; /* val: offset in ids, aux: count */
    struct vkllm__ids ids;
};
vkllm_status vkllm__wcache_init(struct vkllm__wcache *c);
void vkllm__wcache_free(struct vkllm__wcache *c);
/* Append the cached ids of word to out; 1 when found, 0 when not, <0 (negated status) on OOM. */
int vkllm__wcache_lookup(struct vkllm__wcache *c, const char *w, size_t n, struct vkllm__ids *out);
/* Remember out->p[from..out->n) as the ids of word (silently skipped when full or long). */
vkllm_status vkllm__wcache_store(struct vkllm__wcache *c, const char *w, size_t n, const struct vkllm__ids *out,
                                 size_t from);

/* Model sessions: tokenize one raw-text fragment, appending to out. */
vkllm_status vkllm__spm_encode(const struct vkllm__tokenizer *t, const char *text, size_t len, struct vkllm__ids *out,
                               struct vkllm__wcache *cache);
vkllm_status vkllm__bpe_encode(const struct vkllm__tokenizer *t, const char *text, size_t len, struct vkllm__ids *out,
                               struct vkllm__wcache *cache);
vkllm_status vkllm__wpm_encode(const struct vkllm__tokenizer *t, const char *text, size_t len, struct vkllm__ids *out);

/* BPE merge table. */
vkllm_status vkllm__pairmap_init(struct vkllm__pairmap *m, size_t expected);
void vkllm__pairmap_free(struct vkllm__pairmap *m);
/* Insert when absent (the first merge of a pair keeps its rank). */
vkllm_status vkllm__pairmap_add(struct vkllm__pairmap *m, int32_t l, int32_t r, int32_t rank, int32_t id);
const struct vkllm__pairmap_slot *vkllm__pairmap_get(const struct vkllm__pairmap *m, int32_t l, int32_t r);

#endif
