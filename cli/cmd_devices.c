/* cmd_devices.c - `vkllm devices [--json]` (placeholder). */
#include <stdio.h>
#include "cli.h"
int vkllm_cmd_devices(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "vkllm: devices: not implemented yet\n");
    return 1;
}
