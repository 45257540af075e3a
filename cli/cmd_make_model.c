/* cmd_make_model.c - `vkllm make-model`: a thin wrapper over vkllm_make_model (tools/make_model.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* The signal that interrupted the write (vkllm_make_model_params.cancel), or 0. */
static volatile int interrupted;
static void on_signal(int sig) { interrupted = sig; }

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm make-model [--preset NAME] [options] -o FILE\n"
               "\n"
               "Write a random-weight Llama-family GGUF model with a synthetic SentencePiece vocabulary\n"
               "(<unk>, <s>, </s>, 256 byte tokens, generated pieces). Same options and seed give the\n"
               "same file, byte for byte. The file uses llama.cpp's key and tensor names.\n"
               "\n"
               "  -o, --output FILE   where to write (replaced atomically; a character device such as\n"
               "                      /dev/null, or a FIFO, is written to; a directory, block device\n"
               "                      or socket is refused)\n"
               "  --preset NAME       start from a named shape (below); later options override it\n"
               "  --arch A            llama | qwen2 (q/k/v biases) | qwen3 (q/k norms) | granite (Granite 3's\n"
               "                      multipliers: embedding 12, residual 0.22, attention 1/128, logit 8) |\n"
               "                      phi3 (fused q/k/v and gate/up, LongRoPE factors trained at ctx/2) |\n"
               "                      gemma2 | gemma3 (GELU, post-norms, window 4 on every other layer;\n"
               "                      gemma2: caps 3 and 5; gemma3: q/k norms) | qwen3moe (qwen3's attention,\n"
               "                      experts: --n-expert, --n-expert-used) | gpt-oss (q/k/v/o biases,\n"
               "                      attention sinks, window 4 on every other layer, YaRN x4 over ctx/4,\n"
               "                      experts with biases and the clamped SwiGLU, harmony's control tokens\n"
               "                      and chat template)                                        [llama]\n"
               "  --n-layer N         transformer blocks                                [2]\n"
               "  --n-embd N          embedding width                                   [64]\n"
               "  --n-ff N            feed-forward width                                [128]\n"
               "  --n-head N          query heads                                       [4]\n"
               "  --n-head-kv N       key/value heads (divides --n-head)                [2]\n"
               "  --head-dim N        per-head width, 0 = n-embd / n-head               [0]\n"
               "  --rope-dims N       dims of each head RoPE rotates, 0 = all (Phi-4-mini: 3/4) [0]\n"
               "  --vocab N           vocabulary size, at least 259                     [512]\n"
               "  --ctx N             context_length written in the file                [256]\n"
               "  --n-expert N        mixture of experts (llama: Mixtral's layout; qwen3moe, gpt-oss): N expert\n"
               "                      FFNs of --n-ff each instead of one dense FFN\n"
               "                      [0; qwen3moe and gpt-oss, which always have experts: 8]\n"
               "  --n-expert-used K   experts each token's router picks (1..64, <= N)\n"
               "                      [0; qwen3moe: 2, gpt-oss: 4]\n"
               "  --type T            matrix type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K\n"
               "                      q5_K q6_K iq4_nl iq4_xs mxfp4 [f32]. Norms and biases stay f32. Rows whose\n"
               "                      length is not a multiple of the type's block fall back (q2_K, q3_K,\n"
               "                      q4_K->q4_0, q5_K->q5_0, q6_K->q8_0, iq4_xs->iq4_nl, 32-blocks->f16),\n"
               "                      with a warning.\n"
               "                      Or one of llama.cpp's k-quant mixes, each matrix in the type llama.cpp's\n"
               "                      quantizer gives it, general.file_type its LLAMA_FTYPE (all: output.weight\n"
               "                      q6_K, and token_embd.weight too when tied; 'more' = the first and last\n"
               "                      eighth of the layers and every third between):\n"
               "                        q4_K_m  q4_K; attn_v and ffn_down q6_K in 'more' layers (about half)\n"
               "                        q4_K_s  q4_K; attn_v of layers 0-3 and ffn_down of the first 1/8 q5_K\n"
               "                        q5_K_m  q5_K; attn_v and ffn_down q6_K in 'more' layers\n"
               "                        q5_K_s  q5_K\n"
               "                        q3_K_m  q3_K; attn_v q5_K (layers 0-1) or q4_K, attn_output q4_K,\n"
               "                                ffn_down q5_K (first 1/16) or q4_K\n"
               "                        q3_K_l  q3_K; attn_v, attn_output and ffn_down q5_K\n"
               "                        q3_K_s  q3_K\n"
               "                      With 8 experts (llama.cpp's Mixtral rules) attn_v and attn_k are q8_0 and\n"
               "                      attn_output q5_K (q3/q4 mixes); routers stay f32; rows that do not fit\n"
               "                      fall back as llama.cpp's (q4_K->q5_0, q5_K->q5_1, q6_K->q8_0, q3_K->q4_0).\n"
               "                      (q6_K alone is llama.cpp's Q6_K file already; the whole table, phi3's\n"
               "                      attn_qkv and 80-layer files included: docs/models.md.)\n"
               "  --tied              no output.weight: logits reuse token_embd.weight\n"
               "  --untied            write output.weight (overrides a preset's --tied)\n"
               "  --optional-tensors  also write the tensors the architecture may have (llama: q/k/v/\n"
               "                      output biases), which llama.cpp and vkllm read when present\n"
               "  --rope-theta F      rope.freq_base                                    [10000]\n"
               "  --rms-eps F         attention.layer_norm_rms_epsilon                  [1e-5]\n"
               "  --seed N            random seed                                       [1]\n"
               "  --name S            general.name\n"
               "  -h, --help          this text\n"
               "\n"
               "presets:\n");
    const char *desc;
    for (uint32_t i = 0; vkllm_make_model_preset_name(i, &desc); i++)
        fprintf(f, "  %-20s %s\n", vkllm_make_model_preset_name(i, NULL), desc);
}

static int parse_u32(const char *s, uint32_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v > UINT32_MAX || s[0] == '-') return 0;
    *out = (uint32_t)v;
    return 1;
}

/* A short name into a fixed field; 0 when it does not fit. */
static int copy_name(char *dst, size_t cap, const char *src) { return snprintf(dst, cap, "%s", src) < (int)cap; }

/* One option with its value (NULL for flags); 0 when it is not understood. */
static int apply(struct vkllm_make_model_params *p, const char *opt, const char *val, const char **out) {
    uint32_t *u32 = NULL;
    if (!strcmp(opt, "-o") || !strcmp(opt, "--output")) return (*out = val) != NULL;
    if (!strcmp(opt, "--tied")) return (p->tied = 1);
    if (!strcmp(opt, "--untied")) return (p->tied = 0) == 0;
    if (!strcmp(opt, "--optional-tensors")) return (p->optional_tensors = 1);
    if (!val) return 0;
    if (!strcmp(opt, "--n-layer")) u32 = &p->n_layer;
    else if (!strcmp(opt, "--n-embd")) u32 = &p->n_embd;
    else if (!strcmp(opt, "--n-ff")) u32 = &p->n_ff;
    else if (!strcmp(opt, "--n-head")) u32 = &p->n_head;
    else if (!strcmp(opt, "--n-head-kv")) u32 = &p->n_head_kv;
    else if (!strcmp(opt, "--head-dim")) u32 = &p->head_dim;
    else if (!strcmp(opt, "--rope-dims")) u32 = &p->n_rot;
    else if (!strcmp(opt, "--vocab")) u32 = &p->n_vocab;
    else if (!strcmp(opt, "--ctx")) u32 = &p->n_ctx;
    else if (!strcmp(opt, "--n-expert")) u32 = &p->n_expert;
    else if (!strcmp(opt, "--n-expert-used")) u32 = &p->n_expert_used;
    if (u32) return parse_u32(val, u32);
    if (!strcmp(opt, "--arch")) return copy_name(p->arch, sizeof p->arch, val);
    if (!strcmp(opt, "--type")) return copy_name(p->type, sizeof p->type, val);
    if (!strcmp(opt, "--seed")) {
        char *end;
        errno = 0;
        p->seed = strtoull(val, &end, 0);
        return *val && !*end && !errno && (*val >= '0' && *val <= '9'); /* strtoull takes "-5" as 2^64 - 5 */
    }
    if (!strcmp(opt, "--rope-theta")) return (p->rope_theta = strtof(val, NULL)) > 0.0f;
    if (!strcmp(opt, "--rms-eps")) return (p->rms_eps = strtof(val, NULL)) > 0.0f;
    if (!strcmp(opt, "--name")) return snprintf(p->name, sizeof p->name, "%s", val) >= 0;
    return 0;
}

static int is_flag(const char *opt) {
    return !strcmp(opt, "--tied") || !strcmp(opt, "--untied") || !strcmp(opt, "--optional-tensors");
}

int cli_cmd_make_model(int argc, char **argv) {
    struct vkllm_make_model_params p = vkllm_make_model_params_default();
    const char *out = NULL;
    /* The preset first, wherever it is, so that the other options override it. */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--preset") && i + 1 < argc &&
            vkllm_make_model_preset(argv[i + 1], &p) != VKLLM_STATUS_OK) {
            fprintf(stderr, "vkllm: make-model: unknown preset '%s' (see --help)\n", argv[i + 1]);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *val = !is_flag(argv[i]) && i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--preset") && val) {
            i++;
            continue;
        }
        if (!apply(&p, argv[i], val, &out)) {
            fprintf(stderr, "vkllm: make-model: bad or incomplete option '%s'%s%s\n\n", argv[i], val ? " " : "",
                    val ? val : "");
            usage(stderr);
            return 2;
        }
        if (val) i++;
    }
    if (!out) {
        fprintf(stderr, "vkllm: make-model: -o FILE is required\n\n");
        usage(stderr);
        return 2;
    }
    /* SIGINT / SIGTERM stop the write before the next tensor, and the temporary file goes */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    p.cancel = &interrupted;
    vkllm_status st = vkllm_make_model(&p, out);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (st == VKLLM_STATUS_CANCELLED && interrupted) {
        fprintf(stderr, "vkllm: make-model: interrupted; %s was not written\n", out);
        return 128 + interrupted; /* as the shell reports a process the signal ended */
    }
    if (st != VKLLM_STATUS_OK) { /* the library's messages name make-model themselves */
        const char *e = vkllm_last_error();
        return cli_fail(st, e && !strncmp(e, "make-model: ", 12) ? NULL : "make-model");
    }
    char experts[48] = "";
    vkllm_model_file_t mf; /* the experts as written (qwen3moe and gpt-oss get 8 when none were asked for) */
    struct stat sb;        /* (a file: a FIFO or device cannot be read back) */
    if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && vkllm_model_file_open(out, &mf) == VKLLM_STATUS_OK) {
        struct vkllm_file_info fi;
        vkllm_model_file_info(mf, &fi);
        p.n_expert = fi.n_expert, p.n_expert_used = fi.n_expert_used;
        vkllm_model_file_close(mf);
    }
    if (p.n_expert) snprintf(experts, sizeof experts, ", %u of %u experts", p.n_expert_used, p.n_expert);
    fprintf(stderr, "vkllm: wrote %s (%s, %u layer%s, %u embd, %u ffn%s, %u/%u heads, vocab %u, %s%s, seed %llu)\n",
            out, p.arch, p.n_layer, p.n_layer == 1 ? "" : "s", p.n_embd, p.n_ff, experts, p.n_head, p.n_head_kv,
            p.n_vocab, p.type, p.tied ? ", tied" : "", (unsigned long long)p.seed);
    return 0;
}
