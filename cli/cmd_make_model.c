/* cmd_make_model.c - `vkllm make-model` (placeholder until the model-file work lands). */
#include <stdio.h>
#include "cli.h"
int vkllm_cmd_make_model(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "vkllm: make-model: not implemented yet\n");
    return 1;
}
