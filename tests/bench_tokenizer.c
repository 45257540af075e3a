/* bench_tokenizer.c - tokenizer throughput (a benchmark, not a test: it reports numbers).
 *
 *   bench_tokenizer [MODELS_DIR]
 * Encodes 1 MiB of English-like text (deterministic: words drawn from a fixed list with
 * punctuation, newlines and digits) with each vocabulary found in MODELS_DIR (default
 * ../shared/models or $VKLLM_TEST_MODELS) and prints MB/s, then the time for 1 MiB of one
 * repeated character (the merge loops must not be quadratic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf.h"
#include "tokenizer.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine may be shared */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *english(size_t n) {
    static const char *const words[] = {"the",
                                        "of",
                                        "and",
                                        "to",
                                        "in",
                                        "a",
                                        "is",
                                        "that",
                                        "for",
                                        "it",
                                        "as",
                                        "was",
                                        "with",
                                        "be",
                                        "by",
                                        "on",
                                        "not",
                                        "he",
                                        "I",
                                        "this",
                                        "are",
                                        "or",
                                        "his",
                                        "from",
                                        "at",
                                        "which",
                                        "but",
                                        "have",
                                        "an",
                                        "had",
                                        "they",
                                        "you",
                                        "were",
                                        "their",
                                        "one",
                                        "all",
                                        "we",
                                        "can",
                                        "her",
                                        "has",
                                        "there",
                                        "been",
                                        "if",
                                        "more",
                                        "when",
                                        "will",
                                        "would",
                                        "who",
                                        "so",
                                        "no",
                                        "tokenizer",
                                        "inference",
                                        "Vulkan",
                                        "shader",
                                        "memory",
                                        "throughput",
                                        "latency",
                                        "model",
                                        "language",
                                        "sentence",
                                        "beautiful",
                                        "understanding",
                                        "government",
                                        "information",
                                        "development",
                                        "experience",
                                        "international",
                                        "relationship",
                                        "performance",
                                        "don't",
                                        "it's",
                                        "Hello",
                                        "World",
                                        "London",
                                        "Monday",
                                        "quickly",
                                        "jumped",
                                        "over",
                                        "lazy",
                                        "dog"};
    char *s = malloc(n + 64);
    size_t o = 0;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    while (o < n) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const char *w = words[x % (sizeof words / sizeof *words)];
        o += (size_t)sprintf(s + o, "%s", w);
        unsigned r = (unsigned)(x >> 32) % 100;
        if (r < 6) s[o++] = ',';
        else if (r < 10) s[o++] = '.';
        else if (r < 11) o += (size_t)sprintf(s + o, " %u", (unsigned)(x >> 40) % 10000);
        s[o++] = r == 12 ? '\n' : ' ';
    }
    s[n] = 0;
    return s;
}

static void bench(const char *dir, const char *name, const char *text, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (access(path, R_OK) != 0) {
        printf("%-32s (missing)\n", name);
        return;
    }
    struct vkllm__gguf *g = NULL;
    struct vkllm__tokenizer *t = NULL;
    if (vkllm__gguf_open(path, &g) != VKLLM_STATUS_OK || vkllm__tokenizer_init_gguf(g, &t) != VKLLM_STATUS_OK) {
        printf("%-32s cannot load: %s\n", name, vkllm_last_error());
        vkllm__gguf_close(g);
        return;
    }
    vkllm__gguf_close(g);
    struct vkllm__tokenizer_info info;
    vkllm__tokenizer_get_info(t, &info);
    int32_t *ids = NULL;
    size_t n = 0;
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_s();
        if (vkllm__tokenize(t, text, len, 0, 0, &ids, &n) != VKLLM_STATUS_OK) {
            printf("%-32s tokenize failed: %s\n", name, vkllm_last_error());
            break;
        }
        double dt = now_s() - t0;
        if (dt < best) best = dt;
        vkllm__free(ids);
    }
    char *rep = malloc(1 << 20);
    memset(rep, 'a', 1 << 20);
    double t0 = now_s();
    (void)vkllm__tokenize(t, rep, 1 << 20, 0, 0, &ids, &n);
    double dt_rep = now_s() - t0;
    vkllm__free(ids);
    memset(rep, ' ', 1 << 20);
    t0 = now_s();
    (void)vkllm__tokenize(t, rep, 1 << 20, 0, 0, &ids, &n);
    double dt_sp = now_s() - t0;
    vkllm__free(ids);
    free(rep);
    printf("%-32s %-5s vocab %6u  english: %7.2f MB/s   1 MiB 'a': %6.3f s   1 MiB ' ': %6.3f s\n", name,
           info.model_name, info.n_vocab, (double)len / 1e6 / best, dt_rep, dt_sp);
    vkllm__tokenizer_free(t);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : getenv("VKLLM_TEST_MODELS");
    if (!dir) dir = "../shared/models";
    size_t len = 1 << 20;
    char *text = english(len);
    static const char *const vocabs[] = {
        "ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf",  "ggml-vocab-phi-3.gguf",   "ggml-vocab-mpt.gguf",
        "ggml-vocab-starcoder.gguf", "ggml-vocab-refact.gguf", "ggml-vocab-bert-bge.gguf"};
    for (size_t i = 0; i < sizeof vocabs / sizeof *vocabs; i++) bench(dir, vocabs[i], text, len);
    free(text);
    return 0;
}
