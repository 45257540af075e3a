/* make_model.c - random-weight Llama-family GGUF files for tests and benchmarks (see model.h).
 *
 * Files carry llama.cpp's standard key and tensor names, so other GGUF readers load them. Weights
 * are deterministic from the seed: each tensor has its own random stream (seed, tensor index),
 * generated and encoded row by row while the writer streams the file. Scales keep activations
 * near unit size: matrices N(0, 1/fan_in), norms 1 +- 0.1, biases N(0, 0.1^2). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gguf_write.h"
#include "make_model.h"
#include "types.h"

// --- presets --------------------------------------------------------------------------------

struct preset {
    const char *name, *description;
    enum vkllm__arch arch;
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab, n_ctx;
    int tied;
    float theta, eps;
    uint32_t n_expert, n_expert_used; /* 0: a dense FFN */
};

static const struct preset presets[] = {
    {"tiny", "llama, 2 layers, 64 embd, 4 heads / 2 kv, 512 vocab (the default)", VKLLM__ARCH_LLAMA, 2, 64, 128, 4, 2,
     0, 512, 256, 0, 10000.0f, 1e-5f, 0, 0},
    {"tiny-mha", "llama without GQA, 2 layers, 64 embd, 4 heads", VKLLM__ARCH_LLAMA, 2, 64, 128, 4, 4, 0, 512, 256, 0,
     10000.0f, 1e-5f, 0, 0},
    {"tiny-qwen2", "qwen2 (q/k/v biases, NeoX RoPE), 2 layers, 64 embd, tied", VKLLM__ARCH_QWEN2, 2, 64, 128, 4, 2, 0,
     512, 256, 1, 1000000.0f, 1e-6f, 0, 0},
    {"tiny-qwen3", "qwen3 (q/k norms, NeoX RoPE, head dim 32 != embd/heads), 2 layers, 64 embd", VKLLM__ARCH_QWEN3, 2,
     64, 128, 4, 2, 32, 512, 256, 0, 1000000.0f, 1e-6f, 0, 0},
    {"tiny-granite",
     "granite (Granite 3's embedding, attention, residual and logit multipliers), 2 layers, "
     "64 embd",
     VKLLM__ARCH_GRANITE, 2, 64, 128, 4, 2, 0, 512, 256, 0, 10000.0f, 1e-5f, 0, 0},
    {"tiny-phi3", "phi3 (fused q/k/v and gate/up, NeoX RoPE with LongRoPE factors), 2 layers, 64 embd",
     VKLLM__ARCH_PHI3, 2, 64, 128, 4, 2, 0, 512, 256, 0, 10000.0f, 1e-5f, 0, 0},
    {"tiny-gemma2",
     "gemma2 (GELU, post-norms, sliding window 4 on every other layer, soft-capped scores 3 and "
     "logits 5), 2 layers, 64 embd, tied",
     VKLLM__ARCH_GEMMA2, 2, 64, 128, 4, 2, 0, 512, 256, 1, 10000.0f, 1e-6f, 0, 0},
    {"tiny-gemma3",
     "gemma3 (gemma2's block with q/k norms, window 4 on every other layer with RoPE base 10000, "
     "global base 1e6), 2 layers, 64 embd, tied",
     VKLLM__ARCH_GEMMA3, 2, 64, 128, 4, 2, 0, 512, 256, 1, 1000000.0f, 1e-6f, 0, 0},
    {"tiny-qwen3moe", "qwen3moe (qwen3's attention, 8 experts of 128, 2 per token), 2 layers, 64 embd, head dim 32",
     VKLLM__ARCH_QWEN3MOE, 2, 64, 128, 4, 2, 32, 512, 256, 0, 1000000.0f, 1e-6f, 8, 2},
    {"tiny-mixtral", "llama with 4 experts of 128, 2 per token (Mixtral's layout), 2 layers, 64 embd",
     VKLLM__ARCH_LLAMA, 2, 64, 128, 4, 2, 0, 512, 256, 0, 10000.0f, 1e-5f, 4, 2},
    {"tiny-gpt-oss",
     "gpt-oss (biases, attention sinks, window 4 on every other layer, YaRN x4, 8 experts of 128 "
     "with biases, 4 per token, clamped SwiGLU), 2 layers, 64 embd, head dim 32",
     VKLLM__ARCH_GPTOSS, 2, 64, 128, 4, 2, 32, 512, 256, 0, 150000.0f, 1e-5f, 8, 4},
    {"small", "llama, 4 layers, 256 embd, 768 ffn, 8 heads / 2 kv, 2048 vocab (K-quant friendly)", VKLLM__ARCH_LLAMA, 4,
     256, 768, 8, 2, 0, 2048, 512, 0, 10000.0f, 1e-5f, 0, 0},
    {"stories-260k-shape", "llama2.c stories260K: 5 layers, 64 embd, 172 ffn, 8 heads / 4 kv, 512 vocab",
     VKLLM__ARCH_LLAMA, 5, 64, 172, 8, 4, 0, 512, 512, 0, 10000.0f, 1e-5f, 0, 0},
    {"stories-15m-shape", "llama2.c stories15M: 6 layers, 288 embd, 768 ffn, 6 heads, 32000 vocab", VKLLM__ARCH_LLAMA,
     6, 288, 768, 6, 6, 0, 32000, 256, 0, 10000.0f, 1e-5f, 0, 0},
    {"tinyllama-1.1b", "TinyLlama 1.1B: 22 layers, 2048 embd, 5632 ffn, 32 heads / 4 kv, 32000 vocab",
     VKLLM__ARCH_LLAMA, 22, 2048, 5632, 32, 4, 0, 32000, 2048, 0, 10000.0f, 1e-5f, 0, 0},
    {"llama-3.2-1b-shape",
     "Llama 3.2 1B shape (no rope_freqs): 16 layers, 2048 embd, 8192 ffn, 32/8 heads, "
     "128256 vocab, tied",
     VKLLM__ARCH_LLAMA, 16, 2048, 8192, 32, 8, 0, 128256, 4096, 1, 500000.0f, 1e-5f, 0, 0},
    {"qwen2.5-0.5b-shape", "Qwen2.5 0.5B shape: 24 layers, 896 embd, 4864 ffn, 14/2 heads, 151936 vocab, tied",
     VKLLM__ARCH_QWEN2, 24, 896, 4864, 14, 2, 0, 151936, 4096, 1, 1000000.0f, 1e-6f, 0, 0},
    {"qwen3-30b-a3b-shape",
     "Qwen3-30B-A3B shape: 48 layers, 2048 embd, 128 experts of 768, 8 per token, 32/4 heads "
     "of 128, 151936 vocab",
     VKLLM__ARCH_QWEN3MOE, 48, 2048, 768, 32, 4, 128, 151936, 4096, 0, 1000000.0f, 1e-6f, 128, 8},
    {"gpt-oss-20b-shape",
     "gpt-oss-20b shape: 24 layers, 2880 embd, 32 experts of 2880, 4 per token, 64/8 heads of "
     "64, 201088 vocab",
     VKLLM__ARCH_GPTOSS, 24, 2880, 2880, 64, 8, 64, 201088, 4096, 0, 150000.0f, 1e-5f, 32, 4},
    {"qwen3-0.6b-shape",
     "Qwen3 0.6B shape: 28 layers, 1024 embd, 3072 ffn, 16/8 heads of 128, 151936 vocab, "
     "tied",
     VKLLM__ARCH_QWEN3, 28, 1024, 3072, 16, 8, 128, 151936, 4096, 1, 1000000.0f, 1e-6f, 0, 0},
};

static void apply_preset(const struct preset *s, struct vkllm__make_model_params *p) {
    p->arch = s->arch;
    p->n_layer = s->n_layer;
    p->n_embd = s->n_embd;
    p->n_ff = s->n_ff;
    p->n_head = s->n_head;
    p->n_head_kv = s->n_head_kv;
    p->head_dim = s->head_dim;
    p->n_vocab = s->n_vocab;
    p->n_ctx = s->n_ctx;
    p->tied = s->tied;
    p->rope_theta = s->theta;
    p->rms_eps = s->eps;
    p->n_expert = s->n_expert;
    p->n_expert_used = s->n_expert_used;
}

void vkllm__make_model_params_default(struct vkllm__make_model_params *p) {
    memset(p, 0, sizeof *p);
    apply_preset(&presets[0], p);
    p->type = VKLLM__TYPE_F32;
    p->seed = 1;
}

vkllm_status vkllm__make_model_preset(const char *name, struct vkllm__make_model_params *p) {
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(presets); i++) {
        if (strcmp(presets[i].name, name) == 0) {
            apply_preset(&presets[i], p);
            return VKLLM_STATUS_OK;
        }
    }
    return vkllm__err(VKLLM_STATUS_NOT_FOUND, "unknown preset '%s'", name);
}

const char *vkllm__make_model_preset_name(uint32_t i, const char **description) {
    if (i >= VKLLM_ARRAY_LEN(presets)) return NULL;
    if (description) *description = presets[i].description;
    return presets[i].name;
}

// --- random numbers -------------------------------------------------------------------------

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Approximately standard normal: the sum of four 16-bit uniforms (Irwin-Hall), rescaled. Cheap
 * enough for a billion weights, and bounded (|z| < 3.5), which quantizers like. */
static float randn(uint64_t *s) {
    uint64_t r = splitmix64(s);
    uint32_t sum =
        (uint32_t)(r & 0xFFFF) + (uint32_t)((r >> 16) & 0xFFFF) + (uint32_t)((r >> 32) & 0xFFFF) + (uint32_t)(r >> 48);
    return ((float)sum * (1.0f / 65536.0f) - 2.0f) * 1.7320508f; /* var of U(0,1) sum of 4: 1/3 */
}

// --- tensors --------------------------------------------------------------------------------

struct gen_tensor {
    char name[64];
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[3];             /* ne[0] row length, ne[1] rows, ne[2] experts (1: a plain matrix or vector) */
    uint64_t rows;              /* ne[1] * ne[2] */
    float mean, std;            /* values mean + std * N(0, 1) */
    uint64_t seed;              /* stream of this tensor */
    const volatile int *cancel; /* the params' */
};

/* Rows [r0, r1) of t, encoded into dst (row 0's bytes). Each draw advances the tensor's stream by
 * splitmix64's constant step, so row r starts at seed + r * ne[0] * step: rows can be made in any
 * order, by any thread, and the bytes are those of one sequential pass. */
struct fill_job {
    const struct gen_tensor *t;
    uint8_t *dst;
    uint64_t row_bytes, r0, r1;
    float *row;
};

static void *fill_rows(void *arg) {
    const struct fill_job *j = arg;
    const struct gen_tensor *t = j->t;
    uint64_t s = t->seed + j->r0 * t->ne[0] * 0x9E3779B97F4A7C15ull;
    for (uint64_t r = j->r0; r < j->r1; r++) {
        for (uint64_t i = 0; i < t->ne[0]; i++) j->row[i] = t->mean + t->std * randn(&s);
        uint8_t *out = j->dst + r * j->row_bytes;
        if (t->type == VKLLM__TYPE_F32) memcpy(out, j->row, (size_t)t->ne[0] * sizeof(float));
        else vkllm__quantize_row(t->type, j->row, out, t->ne[0]);
    }
    return NULL;
}

/* The writer's fill callback: the rows split over the machine's cores (quantizing a 1.1B model's
 * K-quants takes minutes on one), each encoded in place. */
static vkllm_status fill_tensor(void *user, void *dst, uint64_t nbytes) {
    const struct gen_tensor *t = user;
    if (t->cancel && *t->cancel) /* the writer removes its temporary file */
        return vkllm__err(VKLLM_STATUS_CANCELLED, "make-model: interrupted before tensor %s", t->name);
    uint64_t row_bytes;
    vkllm_status st = vkllm__row_size(t->type, t->ne[0], &row_bytes);
    if (st != VKLLM_STATUS_OK) return st;
    if (row_bytes * t->rows != nbytes)
        return vkllm__err(VKLLM_STATUS_INTERNAL, "make-model: %s: %llu bytes asked, %llu expected", t->name,
                          (unsigned long long)nbytes, (unsigned long long)(row_bytes * t->rows));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t n = VKLLM_MIN((uint64_t)(cores > 0 ? VKLLM_MIN(cores, 32) : 1), t->rows);
    if (t->ne[0] * t->rows < (1u << 20)) n = 1; /* small tensors: threads cost more than they save */
    struct fill_job jobs[32];
    pthread_t th[32];
    int started[32] = {0};
    float *rows = vkllm__malloc((size_t)(n * t->ne[0]) * sizeof(float));
    if (!rows) return vkllm__err(VKLLM_STATUS_OOM, "make-model: row buffers");
    for (uint64_t i = 0; i < n; i++) {
        jobs[i] = (struct fill_job){t, dst, row_bytes, t->rows * i / n, t->rows * (i + 1) / n, rows + i * t->ne[0]};
        if (i + 1 < n) started[i] = pthread_create(&th[i], NULL, fill_rows, &jobs[i]) == 0;
        if (!started[i]) fill_rows(&jobs[i]); /* the last share, or where no thread could start */
    }
    for (uint64_t i = 0; i < n; i++)
        if (started[i]) pthread_join(th[i], NULL);
    vkllm__free(rows);
    return VKLLM_STATUS_OK;
}

/* The type for rows of n elements: the wanted one when its block divides n, else the nearest
 * 32-element relative (q2_K, q3_K, q4_K -> q4_0, q5_K -> q5_0, q6_K -> q8_0), else f16. */
static uint32_t fit_type(uint32_t want, uint64_t n) {
    uint32_t t = want;
    for (;;) {
        const struct vkllm__type_traits *tr = vkllm__type_traits(t);
        if (!tr || n % tr->block_size == 0) return t;
        if (tr->block_size == 256)
            t = t == VKLLM__TYPE_Q5_K                            ? VKLLM__TYPE_Q5_0
                : t == VKLLM__TYPE_Q6_K                          ? VKLLM__TYPE_Q8_0
                : t == VKLLM__TYPE_Q3_K || t == VKLLM__TYPE_Q2_K ? VKLLM__TYPE_Q4_0
                : t == VKLLM__TYPE_IQ4_XS                        ? VKLLM__TYPE_IQ4_NL
                                                                 : VKLLM__TYPE_Q4_0;
        else t = VKLLM__TYPE_F16;
    }
}

// --- llama.cpp's k-quant mixes ----------------------------------------------------------------

/* llama.cpp's llama_ftype values of the mixes (llama.h), and their base types. */
enum { FT_Q3_K_S = 11, FT_Q3_K_M, FT_Q3_K_L, FT_Q4_K_S, FT_Q4_K_M, FT_Q5_K_S, FT_Q5_K_M };
static const struct {
    const char *name;
    uint32_t ftype, base;
} mixes[] = {
    {"q3_K_s", FT_Q3_K_S, VKLLM__TYPE_Q3_K}, {"q3_K_m", FT_Q3_K_M, VKLLM__TYPE_Q3_K},
    {"q3_K_l", FT_Q3_K_L, VKLLM__TYPE_Q3_K}, {"q4_K_s", FT_Q4_K_S, VKLLM__TYPE_Q4_K},
    {"q4_K_m", FT_Q4_K_M, VKLLM__TYPE_Q4_K}, {"q5_K_s", FT_Q5_K_S, VKLLM__TYPE_Q5_K},
    {"q5_K_m", FT_Q5_K_M, VKLLM__TYPE_Q5_K},
};

uint32_t vkllm__make_model_mix(const char *s, uint32_t *base_type) {
    for (size_t i = 0; s && i < VKLLM_ARRAY_LEN(mixes); i++)
        if (!strcasecmp(mixes[i].name, s)) {
            if (base_type) *base_type = mixes[i].base;
            return mixes[i].ftype;
        }
    return 0;
}

const char *vkllm__make_model_mix_name(uint32_t i) { return i < VKLLM_ARRAY_LEN(mixes) ? mixes[i].name : NULL; }

static const char *mix_name(uint32_t ftype) {
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(mixes); i++)
        if (mixes[i].ftype == ftype) return mixes[i].name;
    return "?";
}

/* llama.cpp's use_more_bits: the first and last eighth of the layers and every third one between. */
static int more_bits(uint32_t i, uint32_t n) { return i < n / 8 || i >= 7 * n / 8 || (int)(i - n / 8) % 3 == 2; }

/* The type llama.cpp's quantizer (src/llama-quant.cpp, llama_tensor_get_type_impl) gives matrix name
 * (a global, or blk.N.<suffix>) of a file of mix ftype whose other matrices are base, before the
 * fallback for rows that do not fit the block: the branches that reach the k-quant mixes and the
 * tensors make-model writes. Its per-kind counters (i_attention_wv, i_ffn_down) run over the
 * tensors sorted by layer (llama_model_loader's weight_name_comparer), one per layer here, so they
 * are the layer. tied: the file has no output.weight (the embedding is quantized as the output is). */
static uint32_t mix_type(const struct vkllm__make_model_params *p, uint32_t ftype, uint32_t base, const char *name,
                         uint64_t cols, int tied) {
    const uint32_t n = p->n_layer;
    uint32_t il = 0;
    const char *sfx = name;
    if (sscanf(name, "blk.%u.", &il) == 1) sfx = strchr(name + 4, '.') + 1;
    const struct vkllm__type_traits *bt = vkllm__type_traits(base);
    const int e8 = p->n_expert == 8; /* llama.cpp's rules for the 8-expert models (Mixtral) */
    /* its LLM_TYPE_70B: 80 layers of llama (with GQA) or qwen2 */
    const int is70b =
        n == 80 && ((p->arch == VKLLM__ARCH_LLAMA && p->n_head != p->n_head_kv) || p->arch == VKLLM__ARCH_QWEN2);
    if (!strcmp(name, "output.weight") || (tied && !strcmp(name, "token_embd.weight")))
        return cols % bt->block_size ? VKLLM__TYPE_Q8_0 : VKLLM__TYPE_Q6_K;
    if (!strcmp(name, "token_embd.weight")) return base;
    if (!strcmp(sfx, "ffn_gate_inp.weight")) return VKLLM__TYPE_F32; /* routers are never quantized */
    uint32_t t = base;
    if (!strcmp(sfx, "attn_v.weight") || !strcmp(sfx, "attn_qkv.weight")) {
        if (ftype == FT_Q3_K_M) t = il < 2 ? VKLLM__TYPE_Q5_K : VKLLM__TYPE_Q4_K;
        else if (ftype == FT_Q3_K_L) t = VKLLM__TYPE_Q5_K;
        else if ((ftype == FT_Q4_K_M || ftype == FT_Q5_K_M) && more_bits(il, n)) t = VKLLM__TYPE_Q6_K;
        else if (ftype == FT_Q4_K_S && il < 4) t = VKLLM__TYPE_Q5_K;
        if (is70b && (t == VKLLM__TYPE_Q3_K || t == VKLLM__TYPE_Q4_K)) t = VKLLM__TYPE_Q5_K;
        if (e8) t = VKLLM__TYPE_Q8_0;
    } else if (!strcmp(sfx, "attn_k.weight")) {
        if (e8) t = VKLLM__TYPE_Q8_0;
    } else if (strstr(sfx, "ffn_down")) { /* ffn_down and ffn_down_exps */
        if (ftype == FT_Q3_K_M) t = il < n / 16 ? VKLLM__TYPE_Q5_K : VKLLM__TYPE_Q4_K;
        else if (ftype == FT_Q3_K_L) t = VKLLM__TYPE_Q5_K;
        else if ((ftype == FT_Q4_K_M || ftype == FT_Q5_K_M) && more_bits(il, n)) t = VKLLM__TYPE_Q6_K;
        else if (ftype == FT_Q4_K_S && il < n / 8) t = VKLLM__TYPE_Q5_K;
    } else if (!strcmp(sfx, "attn_output.weight")) {
        if (e8) {
            if (ftype != FT_Q3_K_L && ftype != FT_Q5_K_S && ftype != FT_Q5_K_M) t = VKLLM__TYPE_Q5_K;
        } else if (ftype == FT_Q3_K_M) t = VKLLM__TYPE_Q4_K;
        else if (ftype == FT_Q3_K_L) t = VKLLM__TYPE_Q5_K;
    }
    return t;
}

/* llama.cpp's tensor_type_fallback: a 256-block type whose block does not divide the rows becomes
 * the 32-block type it names, and one that still does not fit f16. */
static uint32_t mix_fit(uint32_t t, uint64_t cols) {
    const struct vkllm__type_traits *tr = vkllm__type_traits(t);
    if (!tr || cols % tr->block_size == 0) return t;
    if (tr->block_size != 256) return VKLLM__TYPE_F16; /* q8_0 (an 8-expert file's attn_v) */
    t = t == VKLLM__TYPE_Q4_K   ? VKLLM__TYPE_Q5_0
        : t == VKLLM__TYPE_Q5_K ? VKLLM__TYPE_Q5_1
        : t == VKLLM__TYPE_Q6_K ? VKLLM__TYPE_Q8_0
                                : VKLLM__TYPE_Q4_0; /* q2_K, q3_K */
    return cols % vkllm__type_traits(t)->block_size ? VKLLM__TYPE_F16 : t;
}

struct tensor_list {
    struct gen_tensor *v;
    uint32_t n, cap;
    uint64_t seed;
    uint32_t want_type;
    const struct vkllm__make_model_params *p; /* for a mix (p->mix) */
    const volatile int *cancel;
};

/* Append a tensor: a matrix (rows > 0, not f32only) in the wanted type, or the mix's type for it
 * (or its fallback, logged for layer 0 and globals only), or f32 values (a vector, or rows of them). */
static void add4(struct tensor_list *tl, const char *name, uint64_t cols, uint64_t rows, uint64_t experts, float mean,
                 float std, int f32only) {
    struct gen_tensor *t = &tl->v[tl->n];
    const struct vkllm__make_model_params *p = tl->p;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = experts ? 3 : rows ? 2 : 1;
    t->ne[0] = cols;
    t->ne[1] = rows ? rows : 1;
    t->ne[2] = experts ? experts : 1;
    t->rows = t->ne[1] * t->ne[2];
    int matrix = rows && !f32only;
    uint32_t want = matrix && p->mix
                        ? mix_type(p, p->mix, tl->want_type, name, cols, p->tied || p->arch == VKLLM__ARCH_GEMMA2)
                        : tl->want_type;
    t->type = !matrix ? VKLLM__TYPE_F32 : p->mix ? mix_fit(want, cols) : fit_type(want, cols);
    int layer0 = strncmp(name, "blk.0.", 6) == 0;
    if (matrix && t->type != want && (layer0 || strncmp(name, "blk.", 4) != 0))
        vkllm__log(VKLLM_LOG_WARN, "make-model: %s%s: rows of %llu are not a multiple of %s's block; using %s",
                   layer0 ? "blk.*." : "", layer0 ? name + 6 : name, (unsigned long long)cols, vkllm__type_name(want),
                   vkllm__type_name(t->type));
    t->mean = mean;
    t->std = std;
    uint64_t s = tl->seed ^ (0xD1B54A32D192ED03ull * (tl->n + 1));
    t->seed = splitmix64(&s);
    t->cancel = tl->cancel;
    tl->n++;
}

static void add(struct tensor_list *tl, const char *name, uint64_t cols, uint64_t rows, float mean, float std) {
    add4(tl, name, cols, rows, 0, mean, std, 0);
}

static float inv_sqrt(uint64_t n) { return 1.0f / sqrtf((float)n); }

/* The shapes make-model's tensors take (the dimensions of the layer table). */
static struct vkllm__hparams shape_of(const struct vkllm__make_model_params *p) {
    struct vkllm__hparams hp = {.arch = p->arch,
                                .n_layer = p->n_layer,
                                .n_embd = p->n_embd,
                                .n_ff = p->n_ff,
                                .n_head = p->n_head,
                                .n_head_kv = p->n_head_kv,
                                .n_vocab = p->n_vocab};
    hp.head_dim = p->head_dim ? p->head_dim : p->n_embd / p->n_head;
    hp.n_embd_q = p->n_head * hp.head_dim;
    hp.n_embd_kv = p->n_head_kv * hp.head_dim;
    hp.n_expert = p->n_expert, hp.n_expert_used = p->n_expert_used, hp.n_ff_exp = p->n_ff;
    return hp;
}

/* Every tensor of the file, in file order: token_embd, each layer's tensors of the layer table
 * that the architecture requires (with optional_tensors, also those it may have; model/tensors.h,
 * in table order), output_norm, output. */
static void build_tensors(const struct vkllm__make_model_params *p, struct tensor_list *tl) {
    const struct vkllm__hparams hp = shape_of(p);
    char name[64];
    /* Tied: the embedding is also the output projection; keep its logits O(few). */
    add(tl, "token_embd.weight", p->n_embd, p->n_vocab, 0.0f, p->tied ? powf((float)p->n_embd, -0.25f) : 1.0f);
    for (uint32_t l = 0; l < p->n_layer; l++)
        for (size_t i = 0; i < VKLLM__LT_COUNT_; i++) {
            const struct vkllm__tensor_spec *t = &vkllm__layer_tensors[i];
            int wanted = vkllm__tensor_wanted(t, p->arch, p->n_expert > 0);
            if (wanted < 0 || (wanted == 0 && !p->optional_tensors)) continue;
            uint64_t cols = vkllm__dim_size(&hp, t->cols), rows = vkllm__dim_size(&hp, t->rows);
            snprintf(name, sizeof name, "blk.%u.%s", l, t->suffix);
            if (t->kind == VKLLM__TENSOR_EXP) add4(tl, name, cols, rows, p->n_expert, 0.0f, inv_sqrt(cols), 0);
            else if (t->init == VKLLM__INIT_MAT) add(tl, name, cols, rows, 0.0f, inv_sqrt(cols));
            else
                add4(tl, name, cols, rows, 0, t->init == VKLLM__INIT_NORM ? 1.0f : 0.0f,
                     t->init == VKLLM__INIT_SINK ? 1.0f : 0.1f, 1); /* f32 vectors (rows: expert biases) */
        }
    if (p->arch == VKLLM__ARCH_PHI3) { /* LongRoPE as Phi-3.5 / Phi-4-mini: short factors near 1, long ones near 4 */
        uint32_t half = (p->n_rot ? p->n_rot : hp.head_dim) / 2;
        add(tl, "rope_factors_short.weight", half, 0, 1.0f, 0.05f);
        add(tl, "rope_factors_long.weight", half, 0, 4.0f, 0.5f);
    }
    add(tl, "output_norm.weight", p->n_embd, 0, 1.0f, 0.1f);
    if (!p->tied && p->arch != VKLLM__ARCH_GEMMA2) /* gemma2 always reuses the embedding */
        add(tl, "output.weight", p->n_embd, p->n_vocab, 0.0f, inv_sqrt(p->n_embd));
}

// --- vocabulary -----------------------------------------------------------------------------

/* A SentencePiece-style vocabulary: <unk>, <s>, </s>, <0x00>..<0xFF>, then "▁", letters and
 * "▁"+letters, punctuation, then all letter strings of length 2, 3, ... with and without "▁",
 * scored so that shorter (earlier) pieces merge first. Strings live in one arena. */
struct vocab {
    char **tokens;
    float *scores;
    int32_t *types;
    char *arena;
};

#define SP "\xE2\x96\x81" /* U+2581, SentencePiece's space */

/* The control tokens an architecture's chat format needs, written as the last ids of the vocabulary:
 * Phi-3's (llama.cpp's vocab code looks up <|endoftext|> in any file named phi3) and harmony's
 * (gpt-oss). NULL-terminated; NULL for none. */
static const char *const *arch_specials(enum vkllm__arch a) {
    static const char *const phi3[] = {"<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>", NULL};
    static const char *const harmony[] = {"<|start|>",   "<|message|>", "<|end|>",       "<|return|>",
                                          "<|channel|>", "<|call|>",    "<|constrain|>", NULL};
    return a == VKLLM__ARCH_PHI3 ? phi3 : a == VKLLM__ARCH_GPTOSS ? harmony : NULL;
}

static vkllm_status make_vocab(uint32_t n, const char *const *specials, struct vocab *v) {
    static const char extra[] = "0123456789.,!?'-:;()";
    memset(v, 0, sizeof *v);
    v->tokens = vkllm__calloc(n, sizeof *v->tokens);
    v->scores = vkllm__calloc(n, sizeof *v->scores);
    v->types = vkllm__calloc(n, sizeof *v->types);
    v->arena = vkllm__malloc((size_t)n * 16);
    if (!v->tokens || !v->scores || !v->types || !v->arena)
        return vkllm__err(VKLLM_STATUS_OOM, "make-model: vocabulary");
    char *a = v->arena;
    uint32_t i = 0;
#define PUT(type_, ...)                                                         \
    (v->tokens[i] = a, a += sprintf(a, __VA_ARGS__) + 1, v->types[i] = (type_), \
     v->scores[i] = (type_) == 1 ? -(float)(i - 259) : 0.0f, i++)
    PUT(2, "<unk>");
    PUT(3, "<s>");
    PUT(3, "</s>");
    for (unsigned b = 0; b < 256 && i < n; b++) PUT(6, "<0x%02X>", b);
    if (i < n) PUT(1, SP);
    for (char c = 'a'; c <= 'z' && i < n; c++) {
        PUT(1, "%c", c);
        if (i < n) PUT(1, SP "%c", c);
    }
    for (const char *c = extra; *c && i < n; c++) PUT(1, "%c", *c);
    /* Letter strings of length len, enumerated in base 26 (len <= 6 covers 600M pieces). */
    for (uint32_t len = 2; i < n && len <= 6; len++) {
        uint64_t count = 1;
        for (uint32_t k = 0; k < len; k++) count *= 26;
        for (uint64_t x = 0; x < count && i < n; x++) {
            char s[8];
            uint64_t y = x;
            for (int k = (int)len - 1; k >= 0; k--, y /= 26) s[k] = (char)('a' + y % 26);
            s[len] = 0;
            PUT(1, "%s", s);
            if (i < n) PUT(1, SP "%s", s);
        }
    }
#undef PUT
    uint32_t ns = 0;
    while (specials && specials[ns]) ns++;
    if (ns && n >= 259 + ns) /* the last ns ids (tokens point into static storage) */
        for (uint32_t k = 0; k < ns; k++)
            v->tokens[n - ns + k] = (char *)specials[k], v->types[n - ns + k] = 3, v->scores[n - ns + k] = 0.0f;
    return VKLLM_STATUS_OK;
}

static void free_vocab(struct vocab *v) {
    vkllm__free(v->tokens);
    vkllm__free(v->scores);
    vkllm__free(v->types);
    vkllm__free(v->arena);
}

// --- metadata -------------------------------------------------------------------------------

/* llama.cpp's llama_ftype for a file whose matrices are mostly of type t. */
static uint32_t file_type(uint32_t t) {
    switch (t) {
    case VKLLM__TYPE_F32: return 0;
    case VKLLM__TYPE_F16: return 1;
    case VKLLM__TYPE_Q4_0: return 2;
    case VKLLM__TYPE_Q4_1: return 3;
    case VKLLM__TYPE_Q8_0: return 7;
    case VKLLM__TYPE_Q5_0: return 8;
    case VKLLM__TYPE_Q5_1: return 9;
    case VKLLM__TYPE_Q2_K: return 10;
    case VKLLM__TYPE_Q3_K: return 11; /* Q3_K_S: all q3_K */
    case VKLLM__TYPE_Q4_K: return 14; /* Q4_K_S: all q4_K */
    case VKLLM__TYPE_Q5_K: return 16; /* Q5_K_S */
    case VKLLM__TYPE_Q6_K: return 18;
    case VKLLM__TYPE_IQ4_NL: return 25;
    case VKLLM__TYPE_IQ4_XS: return 30;
    case VKLLM__TYPE_MXFP4: return 38; /* MXFP4_MOE */
    case VKLLM__TYPE_BF16: return 32;
    default: return 0;
    }
}

static vkllm_status set_hparams(struct vkllm__gguf_writer *w, const struct vkllm__make_model_params *p) {
    const char *arch = vkllm__arch_name(p->arch);
    uint32_t hd = p->head_dim ? p->head_dim : p->n_embd / p->n_head;
    char key[96], name[96];
    vkllm_status st;
    if (p->name[0]) snprintf(name, sizeof name, "%s", p->name);
    else
        snprintf(name, sizeof name, "vkllm-random-%s-L%u-E%u-%s", arch, p->n_layer, p->n_embd,
                 p->mix ? mix_name(p->mix) : vkllm__type_name(p->type));
#define K(suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), key)
    if ((st = vkllm__gguf_writer_set_str(w, "general.architecture", arch))) return st;
    if ((st = vkllm__gguf_writer_set_str(w, "general.name", name))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, "general.file_type", p->mix ? p->mix : file_type(p->type)))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, "general.quantization_version", 2))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("block_count"), p->n_layer))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("context_length"), p->n_ctx))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("embedding_length"), p->n_embd))) return st;
    /* gpt-oss files give only the experts' width (as llama.cpp's converter writes them) */
    if (p->arch != VKLLM__ARCH_GPTOSS && (st = vkllm__gguf_writer_set_u32(w, K("feed_forward_length"), p->n_ff)))
        return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("attention.head_count"), p->n_head))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("attention.head_count_kv"), p->n_head_kv))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("attention.key_length"), hd))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("attention.value_length"), hd))) return st;
    if ((st = vkllm__gguf_writer_set_f32(w, K("attention.layer_norm_rms_epsilon"), p->rms_eps))) return st;
    if ((st = vkllm__gguf_writer_set_f32(w, K("rope.freq_base"), p->rope_theta))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("rope.dimension_count"), p->n_rot ? p->n_rot : hd))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, K("vocab_size"), p->n_vocab))) return st;
    if (p->arch == VKLLM__ARCH_GRANITE) { /* Granite 3.x's multipliers */
        if ((st = vkllm__gguf_writer_set_f32(w, K("embedding_scale"), 12.0f))) return st;
        if ((st = vkllm__gguf_writer_set_f32(w, K("residual_scale"), 0.22f))) return st;
        if ((st = vkllm__gguf_writer_set_f32(w, K("attention.scale"), 0.0078125f))) return st;
        if ((st = vkllm__gguf_writer_set_f32(w, K("logit_scale"), 8.0f))) return st;
    }
    if (p->n_expert) { /* mixture of experts: every expert as wide as n_ff */
        if ((st = vkllm__gguf_writer_set_u32(w, K("expert_count"), p->n_expert))) return st;
        if ((st = vkllm__gguf_writer_set_u32(w, K("expert_used_count"), p->n_expert_used))) return st;
        if ((p->arch == VKLLM__ARCH_QWEN3MOE || p->arch == VKLLM__ARCH_GPTOSS) &&
            (st = vkllm__gguf_writer_set_u32(w, K("expert_feed_forward_length"), p->n_ff)))
            return st;
    }
    if (p->arch == VKLLM__ARCH_GEMMA2 || p->arch == VKLLM__ARCH_GEMMA3) {
        /* a window of 4 on every other layer (layers 0, 2, ...: llama.cpp's pattern 2), small enough
         * for short prompts to reach past it; gemma2's caps small enough to bend random scores */
        if ((st = vkllm__gguf_writer_set_u32(w, K("attention.sliding_window"), 4))) return st;
        if ((st = vkllm__gguf_writer_set_u32(w, K("attention.sliding_window_pattern"), 2))) return st;
        if (p->arch == VKLLM__ARCH_GEMMA3 && (st = vkllm__gguf_writer_set_f32(w, K("rope.freq_base_swa"), 10000.0f)))
            return st;
        if (p->arch == VKLLM__ARCH_GEMMA2 && ((st = vkllm__gguf_writer_set_f32(w, K("attn_logit_softcapping"), 3.0f)) ||
                                              (st = vkllm__gguf_writer_set_f32(w, K("final_logit_softcapping"), 5.0f))))
            return st;
    }
    if (p->arch == VKLLM__ARCH_GPTOSS) {
        /* gpt-oss-20b's layout at this size: a window (4, small enough for short prompts to reach past
         * it) on every other layer (llama.cpp's default pattern 2: layers 0, 2, ...), YaRN trained at a
         * quarter of the context (the real files: factor 32 over 4096) */
        uint32_t orig = p->n_ctx / 4 ? p->n_ctx / 4 : 1;
        if ((st = vkllm__gguf_writer_set_u32(w, K("attention.sliding_window"), 4))) return st;
        if ((st = vkllm__gguf_writer_set_str(w, K("rope.scaling.type"), "yarn"))) return st;
        if ((st = vkllm__gguf_writer_set_f32(w, K("rope.scaling.factor"), (float)p->n_ctx / (float)orig))) return st;
        if ((st = vkllm__gguf_writer_set_u32(w, K("rope.scaling.original_context_length"), orig))) return st;
    }
    if (p->arch == VKLLM__ARCH_PHI3) { /* LongRoPE: trained at half the context, attention factor as the converter's */
        uint32_t orig = p->n_ctx / 2 ? p->n_ctx / 2 : 1;
        double scale = (double)p->n_ctx / orig;
        float attn = orig > 1 && scale > 1 ? (float)sqrt(1.0 + log(scale) / log((double)orig)) : 1.0f;
        if ((st = vkllm__gguf_writer_set_u32(w, K("rope.scaling.original_context_length"), orig))) return st;
        if ((st = vkllm__gguf_writer_set_f32(w, K("rope.scaling.attn_factor"), attn))) return st;
    }
#undef K
    return VKLLM_STATUS_OK;
}

/* A chat template for the architectures whose format needs one to be recognized (gpt-oss: harmony). */
static const char *arch_chat_template(enum vkllm__arch a) {
    if (a != VKLLM__ARCH_GPTOSS) return NULL;
    return "{%- for m in messages -%}<|start|>{{ m.role }}<|message|>{{ m.content }}"
           "{%- if m.role == 'assistant' -%}<|return|>{%- else -%}<|end|>{%- endif -%}{%- endfor -%}"
           "{%- if add_generation_prompt -%}<|start|>assistant<|channel|>final<|message|>{%- endif -%}";
}

static vkllm_status set_tokenizer(struct vkllm__gguf_writer *w, const struct vocab *v, uint32_t n, enum vkllm__arch a) {
    vkllm_status st;
    const char *tmpl = arch_chat_template(a);
    if (tmpl && (st = vkllm__gguf_writer_set_str(w, "tokenizer.chat_template", tmpl))) return st;
    if ((st = vkllm__gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"))) return st;
    if ((st = vkllm__gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tokens, n))) return st;
    if ((st = vkllm__gguf_writer_set_arr(w, "tokenizer.ggml.scores", VKLLM__GGUF_F32, v->scores, n))) return st;
    if ((st = vkllm__gguf_writer_set_arr(w, "tokenizer.ggml.token_type", VKLLM__GGUF_I32, v->types, n))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2))) return st;
    if ((st = vkllm__gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0))) return st;
    if ((st = vkllm__gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1))) return st;
    return vkllm__gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", 0);
}

// --- entry point ----------------------------------------------------------------------------

static vkllm_status check_params(const struct vkllm__make_model_params *p) {
    if ((unsigned)p->arch >= VKLLM__ARCH_COUNT_)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: invalid architecture");
    if (!p->n_layer || !p->n_embd || !p->n_ff || !p->n_head || !p->n_head_kv || !p->n_ctx)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: every dimension must be at least 1");
    int moe_arch = p->arch == VKLLM__ARCH_QWEN3MOE || p->arch == VKLLM__ARCH_GPTOSS;
    if ((p->n_expert || moe_arch) && p->arch != VKLLM__ARCH_LLAMA && !moe_arch)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "make-model: experts are for llama (Mixtral), qwen3moe and gpt-oss");
    if ((p->n_expert || moe_arch) &&
        (p->n_expert > 256 || !p->n_expert_used || p->n_expert_used > p->n_expert || p->n_expert_used > 64))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: %u of %u experts per token (1..64 of 1..256)",
                          p->n_expert_used, p->n_expert);
    if (p->n_layer > 1024 || p->n_embd > 65536 || p->n_ff > 262144 || p->n_head > 1024 || p->n_vocab > 1000000 ||
        p->head_dim > 1024)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: shape too large");
    if (p->n_head % p->n_head_kv)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: n_head %u is not a multiple of n_head_kv %u",
                          p->n_head, p->n_head_kv);
    if (!p->head_dim && p->n_embd % p->n_head)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: n_embd %u is not a multiple of n_head %u",
                          p->n_embd, p->n_head);
    uint32_t hd = p->head_dim ? p->head_dim : p->n_embd / p->n_head;
    if (hd % 2) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: the head dimension %u must be even", hd);
    if (p->n_rot % 2 || p->n_rot > hd)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "make-model: rope dims %u must be even and at most the head "
                          "dimension %u",
                          p->n_rot, hd);
    if (p->n_vocab < 259)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "make-model: vocab %u < 259 (<unk>, <s>, </s> and 256 byte tokens)", p->n_vocab);
    if (!(p->rope_theta > 0.0f) || !(p->rms_eps > 0.0f))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "make-model: rope theta and rms eps must be positive");
    uint32_t base = 0;
    if (p->mix && (vkllm__make_model_mix(mix_name(p->mix), &base) != p->mix || base != p->type))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                          "make-model: mix %u with matrices of %s is not one of the "
                          "k-quant mixes",
                          p->mix, vkllm__type_name(p->type));
    vkllm_status st = vkllm__type_check(p->type, NULL);
    if (st != VKLLM_STATUS_OK) {
        vkllm__err_prefix("make-model: ");
        return st;
    }
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__make_model(const struct vkllm__make_model_params *params, const char *path) {
    /* the architectures whose files always have experts: 8 of them unless asked otherwise, 2 per
     * token (qwen3moe) or 4 (gpt-oss) */
    struct vkllm__make_model_params q = *params;
    const struct vkllm__make_model_params *p = &q;
    if (q.arch == VKLLM__ARCH_QWEN3MOE || q.arch == VKLLM__ARCH_GPTOSS) {
        if (!q.n_expert) q.n_expert = 8;
        if (!q.n_expert_used) q.n_expert_used = VKLLM_MIN(q.n_expert, q.arch == VKLLM__ARCH_GPTOSS ? 4u : 2u);
    }
    vkllm_status st = check_params(p);
    if (st != VKLLM_STATUS_OK) return st;
    struct tensor_list tl = {0};
    struct vocab v;
    struct vkllm__gguf_writer *w = NULL;
    tl.cap = 8 + p->n_layer * VKLLM__LT_COUNT_;
    tl.seed = p->seed;
    tl.want_type = p->type;
    tl.p = p;
    tl.cancel = p->cancel;
    tl.v = vkllm__calloc(tl.cap, sizeof *tl.v);
    VKLLM_TRY(st, make_vocab(p->n_vocab, arch_specials(p->arch), &v), done);
    if (!tl.v) {
        st = vkllm__err(VKLLM_STATUS_OOM, "make-model: tensor list");
        goto done;
    }
    build_tensors(p, &tl);
    VKLLM_TRY(st, vkllm__gguf_writer_init(&w), done);
    VKLLM_TRY(st, set_hparams(w, p), done);
    VKLLM_TRY(st, set_tokenizer(w, &v, p->n_vocab, p->arch), done);
    for (uint32_t i = 0; i < tl.n; i++)
        VKLLM_TRY(st,
                  vkllm__gguf_writer_add_tensor(w, tl.v[i].name, tl.v[i].type, tl.v[i].n_dims, tl.v[i].ne, fill_tensor,
                                                &tl.v[i]),
                  done);
    VKLLM_TRY(st, vkllm__gguf_writer_write(w, path), done);
done:
    vkllm__gguf_writer_free(w);
    free_vocab(&v);
    vkllm__free(tl.v);
    return st;
}

// --- the public API (vkllm.h): names instead of ids ----------------------------------------

static void to_public(const struct vkllm__make_model_params *p, struct vkllm_make_model_params *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->arch, sizeof o->arch, "%s", vkllm__arch_name(p->arch));
    o->n_layer = p->n_layer, o->n_embd = p->n_embd, o->n_ff = p->n_ff, o->n_head = p->n_head;
    o->n_head_kv = p->n_head_kv, o->head_dim = p->head_dim, o->n_vocab = p->n_vocab, o->n_ctx = p->n_ctx;
    snprintf(o->type, sizeof o->type, "%s", p->mix ? mix_name(p->mix) : vkllm__type_name(p->type));
    o->tied = p->tied, o->seed = p->seed, o->rope_theta = p->rope_theta, o->rms_eps = p->rms_eps;
    o->optional_tensors = p->optional_tensors;
    o->n_expert = p->n_expert, o->n_expert_used = p->n_expert_used;
    o->n_rot = p->n_rot;
    o->cancel = p->cancel;
    snprintf(o->name, sizeof o->name, "%s", p->name);
}

/* The type whose name is s (case-insensitive: q4_K or q4_k), among those vkllm computes with. */
static vkllm_status type_of(const char *s, uint32_t *out) {
    for (uint32_t t = 0; t < VKLLM__TYPE_COUNT_; t++) {
        const struct vkllm__type_traits *tr = vkllm__type_traits(t);
        if (tr && tr->compute && !strcasecmp(tr->name, s)) {
            *out = t;
            return VKLLM_STATUS_OK;
        }
    }
    return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT,
                      "make-model: unknown tensor type '%s' (f32 f16 bf16 q8_0 q4_0 "
                      "q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs mxfp4, or a mix: q3_K_s q3_K_m q3_K_l "
                      "q4_K_s q4_K_m q5_K_s q5_K_m)",
                      s);
}

static vkllm_status from_public(const struct vkllm_make_model_params *o, struct vkllm__make_model_params *p) {
    memset(p, 0, sizeof *p);
    if (vkllm__arch_from_name(o->arch, &p->arch))
        return vkllm__err(
            VKLLM_STATUS_INVALID_ARGUMENT,
            "make-model: unknown architecture '%s' (llama qwen2 qwen3 granite phi3 gemma2 gemma3 qwen3moe gpt-oss)",
            o->arch);
    p->mix = vkllm__make_model_mix(o->type, &p->type);
    vkllm_status st = p->mix ? VKLLM_STATUS_OK : type_of(o->type, &p->type);
    if (st) return st;
    p->n_layer = o->n_layer, p->n_embd = o->n_embd, p->n_ff = o->n_ff, p->n_head = o->n_head;
    p->n_head_kv = o->n_head_kv, p->head_dim = o->head_dim, p->n_vocab = o->n_vocab, p->n_ctx = o->n_ctx;
    p->tied = o->tied, p->seed = o->seed, p->rope_theta = o->rope_theta, p->rms_eps = o->rms_eps;
    p->optional_tensors = o->optional_tensors;
    p->n_expert = o->n_expert, p->n_expert_used = o->n_expert_used;
    p->n_rot = o->n_rot;
    p->cancel = o->cancel;
    snprintf(p->name, sizeof p->name, "%s", o->name);
    return VKLLM_STATUS_OK;
}

struct vkllm_make_model_params vkllm_make_model_params_default(void) {
    struct vkllm__make_model_params p;
    struct vkllm_make_model_params o;
    vkllm__make_model_params_default(&p);
    to_public(&p, &o);
    return o;
}

vkllm_status vkllm_make_model_preset(const char *name, struct vkllm_make_model_params *o) {
    if (!name || !o) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_make_model_preset: NULL argument");
    struct vkllm__make_model_params p;
    vkllm_status st = from_public(o, &p);
    if (st) return st;
    if ((st = vkllm__make_model_preset(name, &p))) return st;
    to_public(&p, o);
    return VKLLM_STATUS_OK;
}

const char *vkllm_make_model_preset_name(uint32_t i, const char **description) {
    return vkllm__make_model_preset_name(i, description);
}

vkllm_status vkllm_make_model(const struct vkllm_make_model_params *o, const char *path) {
    struct vkllm__make_model_params p;
    if (!o || !path) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_make_model: NULL argument");
    vkllm_status st = from_public(o, &p);
    return st ? st : vkllm__make_model(&p, path);
}
