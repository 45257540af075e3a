/* common.c - helpers shared by the subcommands: failure lines, exit codes, the log callback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

int vkllm_cli_exit_code(vkllm_status s) {
    switch (s) {
    case VKLLM_STATUS_OK: return 0;
    case VKLLM_STATUS_INVALID_ARGUMENT: return 2;
    case VKLLM_STATUS_BAD_FORMAT:
    case VKLLM_STATUS_NOT_FOUND:
    case VKLLM_STATUS_IO:
    case VKLLM_STATUS_UNSUPPORTED: return 3;
    case VKLLM_STATUS_NO_VULKAN:
    case VKLLM_STATUS_NO_DEVICE: return 4;
    case VKLLM_STATUS_OOM:
    case VKLLM_STATUS_DEVICE_OOM: return 5;
    default: return 1;
    }
}

int vkllm_cli_fail(vkllm_status s, const char *what) {
    const char *detail = vkllm_last_error();
    if (!detail || !*detail) detail = vkllm_status_str(s);
    if (what && *what)
        fprintf(stderr, "vkllm: %s: %s (%s)\n", what, detail, vkllm_status_name(s));
    else
        fprintf(stderr, "vkllm: %s (%s)\n", detail, vkllm_status_name(s));
    return vkllm_cli_exit_code(s);
}

static void log_stderr(vkllm_log_level level, const char *msg, void *ud) {
    int min = *(int *)ud;
    if ((int)level < min) return;
    static const char *names[] = {"debug", "info", "warning", "error"};
    fprintf(stderr, "vkllm: %s: %s\n", names[level], msg);
}

void vkllm_cli_log_init(void) {
    static int min_level = VKLLM_LOG_WARN;
    const char *v = getenv("VKLLM_LOG");
    if (v) {
        if (!strcasecmp(v, "debug")) min_level = VKLLM_LOG_DEBUG;
        else if (!strcasecmp(v, "info")) min_level = VKLLM_LOG_INFO;
        else if (!strcasecmp(v, "warn")) min_level = VKLLM_LOG_WARN;
        else if (!strcasecmp(v, "error")) min_level = VKLLM_LOG_ERROR;
    }
    vkllm_log_set(log_stderr, &min_level);
}
