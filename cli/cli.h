/* cli.h - the vkllm command: one function per subcommand, shared helpers. The CLI is the only
 * code that prints to a terminal or exits. */
#ifndef CLI_H
#define CLI_H

#include <stdio.h>

#include "vkllm.h"

/* Each subcommand gets argv with argv[0] = the subcommand name; returns the process exit code. */
int cli_cmd_devices(int argc, char **argv);
int cli_cmd_selftest(int argc, char **argv);
int cli_cmd_pipelines(int argc, char **argv);  /* cli/cmd_pipelines.c */
int cli_cmd_logits(int argc, char **argv);     /* cli/cmd_logits.c */
int cli_cmd_bench(int argc, char **argv);      /* cli/cmd_bench.c */
int cli_cmd_compare(int argc, char **argv);    /* cli/cmd_compare.c */
int cli_cmd_run(int argc, char **argv);        /* cli/cmd_run.c */
int cli_cmd_chat(int argc, char **argv);       /* cli/cmd_chat.c */
int cli_cmd_serve(int argc, char **argv);      /* cli/cmd_serve.c */
int cli_cmd_info(int argc, char **argv);       /* cli/cmd_info.c */
int cli_cmd_make_model(int argc, char **argv); /* cli/cmd_make_model.c */
int cli_cmd_tokenize(int argc, char **argv);   /* cli/cmd_tokenize.c */
int cli_cmd_detokenize(int argc, char **argv); /* cli/cmd_tokenize.c */

/* Print "vkllm: <what>: <detail> (VKLLM_STATUS_X)" on stderr and return the exit code for s. */
int cli_fail(vkllm_status s, const char *what);

/* Exit code for a status: 0 OK, 2 bad usage/argument, 3 bad input file, 4 no Vulkan/device,
 * 5 out of (device) memory, 1 anything else. */
int cli_exit_code(vkllm_status s);

/* The last branch of every option loop: --help or -h prints usage on stdout (returns 0), anything
 * else is an unknown or incomplete option: one line and the usage on stderr (returns 2). The
 * caller returns what it returns. */
int cli_other_option(const char *cmd, const char *arg, void (*usage)(FILE *));

/* Parse a number argument of flag within [lo, hi]; prints a usage line and returns -1 if not. */
int cli_number(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out);

/* Sampling and length flags shared by run and chat (-n, --temp, --top-k, --top-p, --min-p,
 * --repeat-penalty, --repeat-last-n, --frequency-penalty, --presence-penalty, --seed,
 * --logit-bias). Returns 2 when flag a (with value v) was taken, 0 when it is not one of them,
 * -1 on a bad value (a line was printed). */
#define CLI_MAX_BIAS 64
struct cli_bias {
    int32_t tokens[CLI_MAX_BIAS];
    float values[CLI_MAX_BIAS];
    uint32_t n;
};
int cli_sampling_arg(const char *cmd, const char *a, const char *v, struct vkllm_generate_params *gp,
                     struct cli_bias *bias);
const char *cli_sampling_help(void);

/* --cache-type-k / --cache-type-v (-ctk / -ctv) T: f16 or q8_0 into sp (run, chat, serve). Returns
 * 2 when flag a (with value v) was taken, 0 when it is not one of them, -1 on a bad value (a line
 * was printed). cli_kv_types: a comma-separated list of them (bench's axis); -1 when bad. */
/* cli_kv_arg also takes the layer split's options (cli_split_arg), so that every command that
 * parses the KV types (serve too) takes them; CLI_KV_HELP lists both. */
int cli_kv_arg(const char *cmd, const char *a, const char *v, struct vkllm_session_params *sp);
int cli_kv_types(const char *list, int *out, int *n);
#define CLI_KV_HELP                                                                                          \
    "  -ctk, --cache-type-k T  KV cache type of K: f16 (default) or q8_0 (int8 and a scale per 32 values:\n" \
    "                        0.56x the bytes of f16; llama.cpp's flag)\n"                                    \
    "  -ctv, --cache-type-v T  ... of V\n" CLI_SPLIT_HELP

/* Several devices for one model, as llama.cpp's flags (docs/devices.md): --devices 0,1 (indices of
 * vkllm devices; one index twice opens it twice), --split-mode layer (the default with two or
 * more devices; none: the first device alone; row: not supported), --tensor-split 3,1 (each
 * device's share of the layers; default: by free device-local memory). Parsed into cli_split by
 * cli_split_arg (2 when flag a with value v was taken, 0 when not one of them, -1 on a bad value,
 * a line printed); cli_open then opens every device and loads the model across them. */
struct cli_split {
    uint32_t n;                     /* devices listed (0: --device or the default, alone) */
    int dev[VKLLM_MAX_DEVICES];     /* their indices */
    float share[VKLLM_MAX_DEVICES]; /* --tensor-split (all 0: by free memory) */
    uint32_t n_share;
    int none; /* --split-mode none */
};
extern struct cli_split cli_split;
int cli_split_arg(const char *cmd, const char *a, const char *v);
#define CLI_SPLIT_HELP                                                                                        \
    "  --devices LIST          split the model's layers over these devices (e.g. 0,1; an index twice opens\n" \
    "                        it twice): each takes a contiguous range of layers and their KV cache\n"         \
    "  --split-mode M          layer (the default with --devices) or none (the first device alone)\n"         \
    "  --tensor-split LIST     each device's share of the layers (e.g. 3,1); default: by free device memory\n"

/* Model parameters for the CLI: a progress line on stderr while the weights load, when stderr
 * is a terminal. */
struct vkllm_model_params cli_model_params(void);

/* The three handles every model command opens. cli_open opens the device (index or -1),
 * loads the model (with progress on a terminal) and creates a session; on failure it prints one
 * line, frees what it opened and returns the exit code (0 on success). cli_close frees
 * them and returns code, or 1 when code was 0 but the validation layer reported anything. */
struct cli_handles {
    vkllm_ctx_t ctx;
    vkllm_model_t model;
    vkllm_session_t s;
    vkllm_ctx_t more[VKLLM_MAX_DEVICES]; /* a layer split's other devices (cli_split), or NULL */
};
int cli_open(const char *path, int device, const struct vkllm_session_params *sp, struct cli_handles *h);
int cli_close(struct cli_handles *h, int code);

/* A layer split's per-device lines (prefix before each): its layers, memory, and the session's
 * time on it (vkllm_session_device_ms) since ms0 (NULL: since the session began), its share of
 * all devices' time and, with tokens, per token. Nothing without a split. */
void cli_print_devices(FILE *out, const char *prefix, vkllm_model_t model, vkllm_session_t s, const double *ms0,
                       uint64_t tokens);
/* The same lines into buf (cap bytes, cut short there); returns their length. */
size_t cli_devices_text(char *buf, size_t cap, const char *prefix, vkllm_model_t model, vkllm_session_t s,
                        const double *ms0, uint64_t tokens);

/* Ctrl-C: while caught, SIGINT only sets cli_interrupted (the streaming callbacks then
 * ask the generation to stop). */
#include <signal.h>
extern volatile sig_atomic_t cli_interrupted;
void cli_catch_sigint(int on);

/* Numbers and booleans into a JSON object, from a table (the CLI's JSON writers list fields
 * instead of calling cJSON once per field). */
struct cJSON;
struct cli_json_field {
    const char *key;
    double value;
    int is_bool;
};
#define CLI_NUM(k, v) \
    { k, (double)(v), 0 }
#define CLI_BOOL(k, v) \
    { k, (double)!!(v), 1 }
void cli_json_add(struct cJSON *o, const struct cli_json_field *f, size_t n);
/* Device memory by use as JSON: {"device": {use: bytes, ..., "total": n}, "host": {...}} (run and
 * bench --stats / -o json). */
struct cJSON *cli_memory_json(const struct vkllm_memory_breakdown *m);
#define CLI_JSON_ADD(o, ...)                              \
    do {                                                  \
        const struct cli_json_field f_[] = {__VA_ARGS__}; \
        cli_json_add(o, f_, sizeof f_ / sizeof f_[0]);    \
    } while (0)

/* The monotonic clock in seconds (the CLI's one clock). */
double cli_now(void);

/* A generation's metrics on stderr: run's block of lines, chat's one line, or one JSON line. */
enum cli_stats_style { CLI_STATS_TEXT, CLI_STATS_LINE, CLI_STATS_JSON };
void cli_print_stats(const struct vkllm_generate_stats *s, enum cli_stats_style style);

/* Install the stderr log callback; level from VKLLM_LOG (debug, info, warn, error; default warn). */
void cli_log_init(void);

#endif
