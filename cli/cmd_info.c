/* cmd_info.c - `vkllm info` (placeholder until the model-file work lands). */
#include <stdio.h>
#include "cli.h"
int vkllm_cmd_info(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "vkllm: info: not implemented yet\n");
    return 1;
}
