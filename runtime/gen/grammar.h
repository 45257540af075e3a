/* grammar.h - grammar-constrained generation: a GBNF grammar (llama.cpp's format) compiled to a
 * matcher that says which tokens may come next.
 *
 * The format (llama.cpp's grammars/README.md):
 *   root   ::= "{" ws pair ("," ws pair)* "}"     # rule: alternatives separated by |
 *   pair   ::= [a-z]+ ":" ws [0-9]{1,3}           # "literal", [class], [^negated], ., rule
 *   ws     ::= [ \t\n]*                           # groups ( ), repetition * + ? {m} {m,} {m,n}
 * `root` is where matching starts. Literals and classes take \n \r \t \\ \" \] \[ \- \xHH \uHHHH
 * \UHHHHHHHH escapes and UTF-8 text; a rule name is letters, digits, '-' and '_'. A rule's
 * alternatives continue on the next line inside ( ) or after a trailing or leading '|'.
 * Left recursion (a rule that can reach itself without consuming a character) is refused, as
 * in llama.cpp: the matcher is a set of pushdown stacks, expanded eagerly.
 *
 * Matching works on Unicode code points; a token may end inside a multi-byte character (byte
 * tokens), which the state carries (the character is checked once complete; a partial one is
 * allowed when some class the grammar expects next can hold a character that starts so).
 *
 * States are small values interned in the grammar's tables: the stacks are hash-consed, a set of
 * stacks is interned, and each (set, code point) transition is memoized, so that stepping a
 * state over a character is one table look-up once seen. vkllm__grammar_mask walks a trie of the
 * vocabulary's token bytes once per state and prunes every subtree the grammar refuses at its
 * first character; masks of recent states are cached (inside a JSON string, say, the state
 * repeats for every token). A grammar belongs to one generation (not thread-safe). */
#ifndef VKLLM_GRAMMAR_H
#define VKLLM_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

struct vkllm__grammar;

/* Where the matcher is: a set of stacks (0: none, the text cannot continue) and a character
 * begun but not finished (0: none). Copy it to try bytes without committing them. */
struct vkllm__gstate {
    uint32_t set;
    uint32_t utf8;
};

/* Compile GBNF text (len bytes). INVALID_ARGUMENT with the line and column of the first problem:
 * syntax, an undefined rule, no `root`, left recursion, too large. */
vkllm_status vkllm__grammar_parse(const char *text, size_t len, struct vkllm__grammar **out);
void vkllm__grammar_free(struct vkllm__grammar *g);

/* The state before any text. */
vkllm_status vkllm__grammar_start(struct vkllm__grammar *g, struct vkllm__gstate *s);

/* Feed n bytes: *ok 1 when the text so far is still a prefix of a sentence of the grammar (s
 * advanced), 0 when it cannot be (s then unspecified: feed a copy to try). Non-OK status only
 * when the matcher runs out of memory or a state holds too many stacks (an ambiguous grammar). */
vkllm_status vkllm__grammar_feed(struct vkllm__grammar *g, struct vkllm__gstate *s, const char *bytes, size_t n,
                                 int *ok);

/* 1 when the text so far is a whole sentence (end of generation may come now). */
int vkllm__grammar_accepting(const struct vkllm__grammar *g, struct vkllm__gstate s);
/* 1 when nothing more can follow (the sentence is complete and cannot grow). */
int vkllm__grammar_finished(const struct vkllm__grammar *g, struct vkllm__gstate s);

/* A vocabulary as the mask sees it: token i's bytes are pieces[at[i] .. at[i+1]); an empty
 * piece (control and end-of-generation tokens) is never allowed by the trie. */
struct vkllm__vocab_trie;
vkllm_status vkllm__vocab_trie_build(const char *pieces, const uint32_t *at, uint32_t n_vocab,
                                     struct vkllm__vocab_trie **out);
void vkllm__vocab_trie_free(struct vkllm__vocab_trie *t);

/* The fewest characters that turn the text so far into a whole sentence (0 when accepting;
 * UINT32_MAX for a dead state). A budget: generation can still end well-formed within N more
 * tokens while this is at most N (each token carrying at least one character). */
uint32_t vkllm__grammar_distance(const struct vkllm__grammar *g, struct vkllm__gstate s);

/* The tokens whose bytes may follow state s: allowed[i / 8] bit i % 8 (n_vocab bits, set for
 * every token with a non-empty piece that fits), and for those tokens, dist[i]: the distance
 * after the token (saturated at 65535; dist may be NULL). End-of-generation is the caller's to
 * allow (vkllm__grammar_accepting). Both point into the grammar's cache: valid until the next
 * call on g. *n_allowed: how many bits are set. */
vkllm_status vkllm__grammar_mask(struct vkllm__grammar *g, struct vkllm__gstate s, const struct vkllm__vocab_trie *t,
                                 const uint8_t **allowed, uint32_t *n_allowed, const uint16_t **dist);

/* Tables' sizes, for tests and stats: stacks, sets, memoized transitions. */
void vkllm__grammar_sizes(const struct vkllm__grammar *g, uint32_t *n_stacks, uint32_t *n_sets, uint32_t *n_trans);

#endif /* VKLLM_GRAMMAR_H */
