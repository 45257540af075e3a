/* cmd_tokenize.c - `vkllm tokenize` / `vkllm detokenize` (placeholder until the tokenizer lands). */
#include <stdio.h>
#include "cli.h"
int vkllm_cmd_tokenize(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "vkllm: tokenize: not implemented yet\n");
    return 1;
}
int vkllm_cmd_detokenize(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "vkllm: detokenize: not implemented yet\n");
    return 1;
}
