/* main.c - `vkllm <command> ...`: the table of subcommands, --help and --version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"run", cli_cmd_run, "stream a completion of a prompt (-p), statistics on stderr"},
    {"chat", cli_cmd_chat, "interactive conversation with the model's chat template"},
    {"serve", cli_cmd_serve, "OpenAI-compatible HTTP server, streaming with Server-Sent Events"},
    {"devices", cli_cmd_devices, "list Vulkan devices and what they support (--json)"},
    {"selftest", cli_cmd_selftest, "check every shader on a device against the C reference"},
    {"pipelines", cli_cmd_pipelines, "build every pipeline, no memory used: registers, spills, occupancy"},
    {"info", cli_cmd_info, "describe a GGUF model: architecture, shapes, types (--json)"},
    {"make-model", cli_cmd_make_model, "write a random-weight Llama-shaped GGUF model"},
    {"bench", cli_cmd_bench, "prefill and decode tokens per second (llama-bench definitions)"},
    {"compare", cli_cmd_compare, "devices side by side: logit agreement, speed by depth, KV memory, kernels"},
    {"logits", cli_cmd_logits, "top logits at every position of a token sequence (--json)"},
    {"tokenize", cli_cmd_tokenize, "text -> token ids with the model's own vocabulary"},
    {"detokenize", cli_cmd_detokenize, "token ids -> text"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm <command> [options]\n"
               "\n"
               "vkllm runs Llama-family GGUF models on any Vulkan device.\n"
               "\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "`vkllm <command> --help` describes a command's options.\n"
               "\n"
               "environment:\n"
               "  VKLLM_DEVICE=N      device index to use (see `vkllm devices`); --device N overrides\n"
               "  VKLLM_VALIDATE=1    enable the Khronos validation layer and log its messages\n"
               "  VKLLM_LOG=LEVEL     debug, info, warn (default) or error\n"
               "\n"
               "  --help, -h          this text\n"
               "  --version           version and git commit\n");
}

int main(int argc, char **argv) {
    cli_log_init();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("vkllm %s (commit %s)\n", vkllm_version(), vkllm_git_commit());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "vkllm: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
