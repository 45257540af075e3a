/* bench_grammar.c - the cost of grammar-constrained sampling per token (a benchmark, not a test:
 * it reports numbers).
 *
 *   bench_grammar GGUF...
 * For each file's vocabulary: the vocabulary trie's build time, then a JSON reply under a JSON
 * schema's grammar (the text tokenized with that vocabulary) replayed token by token: the mask
 * of every step (ms; the first pass meets each matcher state for the first time, the second finds
 * its masks cached) and the feed of the chosen token. Beside a decode step this is the whole
 * overhead of a grammar (the sampler's own work on the masked logits is the same as without). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf.h"
#include "grammar.h"
#include "tokenizer.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + 1e-6 * (double)ts.tv_nsec;
}

/* The grammar json_schema.c writes for {name: string, age: integer, tags: [string]}, required (and
 * leading whitespace: a SentencePiece vocabulary tokenizes the reply alone with a leading space). */
static const char k_grammar[] =
    "root ::= ws \"{\" ws \"\\\"name\\\"\" ws \":\" ws string ws \",\" ws \"\\\"age\\\"\" ws \":\" ws integer ws \",\" ws "
    "\"\\\"tags\\\"\" ws \":\" ws tags ws \"}\"\n"
    "tags ::= \"[\" ws (string ws (\",\" ws string ws)*)? \"]\"\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "integer ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15})\n";

static const char k_reply[] =
    "{\"name\": \"The quick brown fox jumps over the lazy dog near the river bank\", \"age\": 42, "
    "\"tags\": [\"animals\", \"fast\", \"story\", \"a longer tag with words\"]}";

static void bench(const char *path) {
    struct vkllm__gguf *gg = NULL;
    struct vkllm__tokenizer *t = NULL;
    if (vkllm__gguf_open(path, &gg) || vkllm__tokenizer_init_gguf(gg, &t)) {
        printf("%s: cannot load: %s\n", path, vkllm_last_error());
        vkllm__gguf_close(gg);
        return;
    }
    vkllm__gguf_close(gg);
    struct vkllm__tokenizer_info info;
    vkllm__tokenizer_get_info(t, &info);
    const uint32_t n = info.n_vocab;
    uint32_t *at = malloc(sizeof *at * (n + 1));
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *p;
        size_t len = 0;
        if (vkllm__token_is_eog(t, (int32_t)i) || vkllm__token_piece(t, (int32_t)i, 0, &p, &len)) len = 0;
        total += len;
    }
    char *pieces = malloc(total + 1);
    total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *p;
        size_t len = 0;
        if (vkllm__token_is_eog(t, (int32_t)i) || vkllm__token_piece(t, (int32_t)i, 0, &p, &len)) len = 0;
        at[i] = (uint32_t)total;
        memcpy(pieces + total, p, len);
        total += len;
    }
    at[n] = (uint32_t)total;
    double t0 = now_ms();
    struct vkllm__vocab_trie *trie = NULL;
    if (vkllm__vocab_trie_build(pieces, at, n, &trie)) {
        printf("%s: trie: %s\n", path, vkllm_last_error());
        return;
    }
    double t_trie = now_ms() - t0;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (vkllm__tokenize(t, k_reply, strlen(k_reply), 0, 0, &ids, &n_ids)) {
        printf("%s: tokenize: %s\n", path, vkllm_last_error());
        return;
    }
    struct vkllm__grammar *g = NULL;
    if (vkllm__grammar_parse(k_grammar, strlen(k_grammar), &g)) {
        printf("grammar: %s\n", vkllm_last_error());
        return;
    }
    double sum[2] = {0, 0}, worst[2] = {0, 0}, feed = 0;
    uint32_t refused = 0;
    for (int pass = 0; pass < 2; pass++) {
        struct vkllm__gstate st;
        vkllm__grammar_start(g, &st);
        for (size_t k = 0; k < n_ids; k++) {
            const uint8_t *bits;
            uint32_t allowed;
            double a = now_ms();
            vkllm__grammar_mask(g, st, trie, &bits, &allowed, NULL);
            double b = now_ms() - a;
            sum[pass] += b;
            worst[pass] = b > worst[pass] ? b : worst[pass];
            refused += !((bits[ids[k] >> 3] >> (ids[k] & 7)) & 1);
            const char *p;
            size_t len;
            int ok;
            vkllm__token_piece(t, ids[k], 0, &p, &len);
            a = now_ms();
            vkllm__grammar_feed(g, &st, p, len, &ok);
            feed += now_ms() - a;
        }
    }
    uint32_t stacks, sets, trans;
    vkllm__grammar_sizes(g, &stacks, &sets, &trans);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("%-28s vocab %6u  trie %6.1f ms  %3zu tokens: mask mean %.3f ms (max %.2f) first pass, %.4f ms cached; "
           "feed %.4f ms; %u stacks %u states%s\n",
           name, n, t_trie, n_ids, sum[0] / (double)n_ids, worst[0], sum[1] / (double)n_ids,
           feed / (2.0 * (double)n_ids), stacks, sets, refused ? "  (a reply token was refused: BUG)" : "");
    vkllm__grammar_free(g);
    vkllm__vocab_trie_free(trie);
    vkllm__free(ids);
    free(pieces), free(at);
    vkllm__tokenizer_free(t);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_grammar GGUF...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) bench(argv[i]);
    return 0;
}
