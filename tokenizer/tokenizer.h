/* tokenizer.h - text <-> token ids for GGUF vocabularies, the way llama.cpp tokenizes.
 *
 * Models (tokenizer.ggml.model):
 *   "llama"  SentencePiece-style BPE: score-driven merges over the whole text, U+2581 for
 *            spaces, a space prefix, byte fallback to <0xNN> tokens.
 *   "gpt2"   byte-level BPE: the pre-tokenizer that tokenizer.ggml.pre names splits the text
 *            with its regular expressions (PCRE2, Unicode properties), then ranked merges over
 *            GPT-2's byte-to-unicode mapping.
 *   "bert"   WordPiece: lowercase, strip accents, split on whitespace and punctuation, longest
 *            match first.
 *
 * A tokenizer is immutable once built: any number of threads may tokenize and detokenize with
 * one tokenizer at the same time (each call keeps its own scratch). A streaming detokenizer
 * (struct vkllm__detok_stream) belongs to one thread.
 *
 * Token ids are int32_t; -1 means "none". Strings handed out are NOT NUL-terminated unless
 * said so.
 */
#ifndef VKLLM_TOKENIZER_H
#define VKLLM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

struct vkllm__gguf;
struct vkllm__tokenizer;

enum vkllm__tok_model {
    VKLLM__TOK_SPM = 0, /* "llama" */
    VKLLM__TOK_BPE = 1, /* "gpt2" */
    VKLLM__TOK_WPM = 2  /* "bert" */
};

/* Token attributes (llama.cpp's llama_token_attr bits), from tokenizer.ggml.token_type. */
enum {
    VKLLM__TOK_ATTR_UNKNOWN = 1 << 0,
    VKLLM__TOK_ATTR_UNUSED = 1 << 1,
    VKLLM__TOK_ATTR_NORMAL = 1 << 2,
    VKLLM__TOK_ATTR_CONTROL = 1 << 3,      /* <s>, <|im_start|>: only parsed when asked */
    VKLLM__TOK_ATTR_USER_DEFINED = 1 << 4, /* always matched in text, as HF added tokens */
    VKLLM__TOK_ATTR_BYTE = 1 << 5,         /* <0x0A> */
    VKLLM__TOK_ATTR_LSTRIP = 1 << 7,       /* eats whitespace on its left when matched */
    VKLLM__TOK_ATTR_RSTRIP = 1 << 8        /* eats whitespace on its right when matched */
};

/* What a tokenizer is (pointers stay valid while the tokenizer lives). */
struct vkllm__tokenizer_info {
    enum vkllm__tok_model model;
    const char *model_name; /* "llama", "gpt2", "bert" */
    const char *pre;        /* pre-tokenizer name, "default" when the file has none */
    uint32_t n_vocab;
    int32_t bos, eos, eot, eom, unk, sep, pad, mask; /* -1 when the vocabulary has none */
    int add_bos, add_eos, add_sep;                   /* what add_special adds */
    int add_space_prefix;                            /* SPM: text after BOS/special tokens gets a leading space */
    int clean_spaces;                                /* the model's clean_up_tokenization_spaces */
    const char *chat_template;                       /* NUL-terminated tokenizer.chat_template, or NULL */
    size_t max_piece_len;                            /* bytes of the longest piece (special tokens included) */
};

/* --- building ----------------------------------------------------------------------------- */

/* Build a tokenizer from a GGUF file's tokenizer.ggml.* metadata (the file may be closed
 * afterwards: everything is copied). Fails with VKLLM_STATUS_UNSUPPORTED for a tokenizer model
 * or pre-tokenizer vkllm does not implement (the message names it; an unknown pre value is
 * never replaced by a default), VKLLM_STATUS_BAD_FORMAT for missing or inconsistent arrays,
 * VKLLM_STATUS_OOM. */
vkllm_status vkllm__tokenizer_init_gguf(const struct vkllm__gguf *g, struct vkllm__tokenizer **out);

/* Free a tokenizer; NULL is a no-op. */
void vkllm__tokenizer_free(struct vkllm__tokenizer *t);

void vkllm__tokenizer_get_info(const struct vkllm__tokenizer *t, struct vkllm__tokenizer_info *out);

/* Attributes of token id (0 for an id out of range). */
uint32_t vkllm__token_attr(const struct vkllm__tokenizer *t, int32_t id);

/* 1 when id ends generation (EOS, EOT, EOM and the end-of-turn tokens llama.cpp recognizes by
 * text: <|im_end|>, <|eot_id|>, <end_of_turn>, <|endoftext|>, ...). */
int vkllm__token_is_eog(const struct vkllm__tokenizer *t, int32_t id);

/* The vocabulary text of token id (byte-level BPE tokens in their GPT-2 mapped form); NULL for
 * an id out of range. */
const char *vkllm__token_text(const struct vkllm__tokenizer *t, int32_t id, size_t *len);

/* Id of the token whose vocabulary text is exactly text[0..len), or -1. */
int32_t vkllm__token_find(const struct vkllm__tokenizer *t, const char *text, size_t len);

/* --- text -> ids -------------------------------------------------------------------------- */

/* Tokenize text[0..len) (any bytes: invalid UTF-8 is handled as llama.cpp does, byte-level BPE
 * sees U+FFFD for each invalid byte, SentencePiece falls back to byte tokens).
 * add_special: add BOS / EOS / SEP as the model asks (tokenizer.ggml.add_bos_token ...).
 * parse_special: text such as "<|im_start|>" becomes its control token; without it only
 * user-defined tokens are matched and control-token text is tokenized as plain text.
 * On success *ids (free with vkllm__free; NULL when *n is 0) holds *n ids. */
vkllm_status vkllm__tokenize(const struct vkllm__tokenizer *t, const char *text, size_t len, int add_special,
                             int parse_special, int32_t **ids, size_t *n);

/* --- ids -> text -------------------------------------------------------------------------- */

/* The bytes token id stands for: byte tokens give their byte, SentencePiece U+2581 gives a
 * space, byte-level BPE text is mapped back to bytes. Control and unknown tokens give their
 * text when special is set and nothing otherwise. A piece may be part of a UTF-8 sequence.
 * VKLLM_STATUS_INVALID_ARGUMENT for an id out of range. */
vkllm_status vkllm__token_piece(const struct vkllm__tokenizer *t, int32_t id, int special, const char **piece,
                                size_t *len);

enum {
    VKLLM__DETOK_SPECIAL = 1 << 0,     /* render control/unknown tokens as their text */
    VKLLM__DETOK_KEEP_SPACE = 1 << 1,  /* keep SentencePiece's leading space */
    VKLLM__DETOK_CLEAN_SPACES = 1 << 2 /* apply the model's clean_up_tokenization_spaces */
};

/* Concatenate the pieces of ids[0..n) into *out (NUL-terminated, free with vkllm__free; *len
 * excludes the NUL). Without KEEP_SPACE, a SentencePiece model's space prefix is removed from
 * the first piece that has text, so decode(encode(s)) == s. The bytes are exact: a text that
 * is not valid UTF-8 comes back as it was encoded (byte tokens). */
vkllm_status vkllm__detokenize(const struct vkllm__tokenizer *t, const int32_t *ids, size_t n, unsigned flags,
                               char **out, size_t *len);

/* Streaming detokenizer: feed ids one at a time, get only complete UTF-8 back; a character
 * split across tokens is held until its last byte arrives. Invalid bytes (which no later token
 * can complete) come out as U+FFFD, so everything emitted is valid UTF-8. */
struct vkllm__detok_stream {
    const struct vkllm__tokenizer *tok;
    unsigned flags;     /* VKLLM__DETOK_SPECIAL, VKLLM__DETOK_KEEP_SPACE */
    int started;        /* a piece with text was seen (the leading space is gone) */
    uint8_t pending[4]; /* incomplete UTF-8 sequence carried to the next token */
    size_t n_pending;
    char *buf; /* output of the last call */
    size_t cap;
};

void vkllm__detok_stream_init(struct vkllm__detok_stream *s, const struct vkllm__tokenizer *t, unsigned flags);
/* Feed one id; *text and *len get the newly complete text (valid until the next call; may be
 * empty). VKLLM_STATUS_INVALID_ARGUMENT for an id out of range, VKLLM_STATUS_OOM. */
vkllm_status vkllm__detok_stream_push(struct vkllm__detok_stream *s, int32_t id, const char **text, size_t *len);
/* End of stream: what is still held comes out as U+FFFD (one per incomplete sequence). */
vkllm_status vkllm__detok_stream_flush(struct vkllm__detok_stream *s, const char **text, size_t *len);
void vkllm__detok_stream_free(struct vkllm__detok_stream *s);

/* --- chat templates ------------------------------------------------------------------------ */

/* Built-in renderings of the common chat formats (as llama.cpp's llm_chat_apply_template):
 * a model's Jinja tokenizer.chat_template is recognized by distinctive text, not executed. */
enum vkllm__chat_tmpl {
    VKLLM__CHAT_CHATML = 0,
    VKLLM__CHAT_LLAMA2,
    VKLLM__CHAT_LLAMA2_SYS,
    VKLLM__CHAT_LLAMA2_SYS_BOS,
    VKLLM__CHAT_LLAMA2_SYS_STRIP,
    VKLLM__CHAT_MISTRAL_V1,
    VKLLM__CHAT_MISTRAL_V3,
    VKLLM__CHAT_MISTRAL_V3_TEKKEN,
    VKLLM__CHAT_MISTRAL_V7,
    VKLLM__CHAT_MISTRAL_V7_TEKKEN,
    VKLLM__CHAT_PHI3,
    VKLLM__CHAT_PHI4,
    VKLLM__CHAT_FALCON3,
    VKLLM__CHAT_ZEPHYR,
    VKLLM__CHAT_MONARCH,
    VKLLM__CHAT_GEMMA,
    VKLLM__CHAT_ORION,
    VKLLM__CHAT_OPENCHAT,
    VKLLM__CHAT_VICUNA,
    VKLLM__CHAT_VICUNA_ORCA,
    VKLLM__CHAT_DEEPSEEK,
    VKLLM__CHAT_DEEPSEEK2,
    VKLLM__CHAT_DEEPSEEK3,
    VKLLM__CHAT_COMMAND_R,
    VKLLM__CHAT_LLAMA3,
    VKLLM__CHAT_GRANITE,
    VKLLM__CHAT_LLAMA4,
    VKLLM__CHAT_QWEN,    /* ChatML as the Qwen family writes it */
    VKLLM__CHAT_GPT_OSS, /* OpenAI's harmony format (gpt-oss) */
    VKLLM__CHAT_LLAMA31, /* llama3 with Meta's 3.1 / 3.3 system header (knowledge cutoff, date) */
    VKLLM__CHAT_LLAMA32, /* ... and 3.2's, whose date is today's */
    VKLLM__CHAT_COUNT_
};

struct vkllm__chat_msg {
    const char *role;    /* "system", "user", "assistant", ... (NUL-terminated) */
    const char *content; /* NUL-terminated */
};

/* Name of a template ("chatml", "llama3", "mistral-v7", ...); NULL for an invalid value. */
const char *vkllm__chat_template_name(enum vkllm__chat_tmpl id);

/* All names, comma-separated (static storage). */
const char *vkllm__chat_template_names(void);

/* A template by NAME (--chat-template NAME). VKLLM_STATUS_INVALID_ARGUMENT (message lists the
 * known names) when there is none of that name. */
vkllm_status vkllm__chat_template_by_name(const char *name, enum vkllm__chat_tmpl *out);

/* Recognize a Jinja chat template (or a bare template name) by its text.
 * VKLLM_STATUS_UNSUPPORTED (message lists the known names) when nothing matches. */
vkllm_status vkllm__chat_template_detect(const char *tmpl_text, enum vkllm__chat_tmpl *out);

/* The template to use for a model: force_name when not NULL, otherwise detected from the
 * model's tokenizer.chat_template; VKLLM_STATUS_NOT_FOUND when the model has none. */
vkllm_status vkllm__chat_template_for(const struct vkllm__tokenizer *t, const char *force_name,
                                      enum vkllm__chat_tmpl *out);

/* Render msgs[0..n) with template id; add_generation_prompt appends the opening of an
 * assistant turn. *out is NUL-terminated (free with vkllm__free); BOS is not included (the
 * tokenizer adds it). The result is meant to be tokenized with parse_special. */
vkllm_status vkllm__chat_apply(enum vkllm__chat_tmpl id, const struct vkllm__chat_msg *msgs, size_t n,
                               int add_generation_prompt, char **out, size_t *len);

#endif /* VKLLM_TOKENIZER_H */
