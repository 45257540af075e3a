/* cli.h - the vkllm command: one function per subcommand, shared helpers. The CLI is the only
 * code that prints to a terminal or exits. */
#ifndef VKLLM_CLI_H
#define VKLLM_CLI_H

#include "vkllm.h"

/* Each subcommand gets argv with argv[0] = the subcommand name; returns the process exit code. */
int vkllm_cmd_devices(int argc, char **argv);
int vkllm_cmd_selftest(int argc, char **argv);
int vkllm_cmd_logits(int argc, char **argv);      /* cli/cmd_logits.c */
int vkllm_cmd_bench(int argc, char **argv);       /* cli/cmd_bench.c */
int vkllm_cmd_run(int argc, char **argv);         /* cli/cmd_run.c */
int vkllm_cmd_chat(int argc, char **argv);        /* cli/cmd_chat.c */
int vkllm_cmd_serve(int argc, char **argv);       /* cli/cmd_serve.c */
int vkllm_cmd_info(int argc, char **argv);        /* cli/cmd_info.c */
int vkllm_cmd_make_model(int argc, char **argv);  /* cli/cmd_make_model.c */
int vkllm_cmd_tokenize(int argc, char **argv);    /* cli/cmd_tokenize.c */
int vkllm_cmd_detokenize(int argc, char **argv);  /* cli/cmd_tokenize.c */

/* Print "vkllm: <what>: <detail> (VKLLM_STATUS_X)" on stderr and return the exit code for s. */
int vkllm_cli_fail(vkllm_status s, const char *what);

/* Exit code for a status: 0 OK, 2 bad usage/argument, 3 bad input file, 4 no Vulkan/device,
 * 5 out of (device) memory, 1 anything else. */
int vkllm_cli_exit_code(vkllm_status s);

/* Parse a number argument of flag within [lo, hi]; prints a usage line and returns -1 if not. */
int vkllm_cli_number(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out);

/* Sampling and length flags shared by run and chat (-n, --temp, --top-k, --top-p, --min-p,
 * --repeat-penalty, --repeat-last-n, --frequency-penalty, --presence-penalty, --seed,
 * --logit-bias). Returns 2 when flag a (with value v) was taken, 0 when it is not one of them,
 * -1 on a bad value (a line was printed). */
#define VKLLM_CLI_MAX_BIAS 64
struct vkllm_cli_bias {
    int32_t tokens[VKLLM_CLI_MAX_BIAS];
    float values[VKLLM_CLI_MAX_BIAS];
    uint32_t n;
};
int vkllm_cli_sampling_arg(const char *cmd, const char *a, const char *v, struct vkllm_generate_params *gp,
                           struct vkllm_cli_bias *bias);
const char *vkllm_cli_sampling_help(void);

/* Model parameters for the CLI: a progress line on stderr while the weights load, when stderr
 * is a terminal. */
struct vkllm_model_params vkllm_cli_model_params(void);

/* The three handles every model command opens. vkllm_cli_open opens the device (index or -1),
 * loads the model (with progress on a terminal) and creates a session; on failure it prints one
 * line, frees what it opened and returns the exit code (0 on success). vkllm_cli_close frees
 * them and returns code, or 1 when code was 0 but the validation layer reported anything. */
struct vkllm_cli_handles {
    vkllm_ctx_t ctx;
    vkllm_model_t model;
    vkllm_session_t s;
};
int vkllm_cli_open(const char *path, int device, const struct vkllm_session_params *sp, struct vkllm_cli_handles *h);
int vkllm_cli_close(struct vkllm_cli_handles *h, int code);

/* Ctrl-C: while caught, SIGINT only sets vkllm_cli_interrupted (the streaming callbacks then
 * ask the generation to stop). */
#include <signal.h>
extern volatile sig_atomic_t vkllm_cli_interrupted;
void vkllm_cli_catch_sigint(int on);

/* Install the stderr log callback; level from VKLLM_LOG (debug, info, warn, error; default warn). */
void vkllm_cli_log_init(void);

#endif
