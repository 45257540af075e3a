/* test_model_make.c - make-model round trips through the model description and the reference
 * forward pass (llama with and without GQA, qwen2, qwen3, tied embeddings; f32, f16, bf16, q8_0,
 * q4_0, q4_K, q6_K, fallbacks), determinism, hyper-parameter errors (missing key, wrong shape,
 * missing tensor, unsupported type), RoPE scaling from metadata. */
#include <stdarg.h>

#include "gguf.h"
#include "harness.h"
#include "gguf_write.h"
#include "make_model.h"
#include "ref_ops.h"
#include "ref.h"
#include "tokenizer.h"
#include "types.h"

static char g_dir[256];

/* A path in the test's temporary folder (8 rotating buffers, so a few can be held at once). */
static const char *tmp_path(const char *name) {
    static char paths[8][512];
    static unsigned next;
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/%s", g_dir, name);
    return path;
}

// --- round trips ----------------------------------------------------------------------------

struct config {
    const char *preset;
    uint32_t type;
    int tied; /* -1: the preset's */
};

/* Write, load, compare hyper-parameters, run 4 greedy steps: logits finite and spread. */
static void round_trip(const struct config *c) {
    struct vkllm__make_model_params p;
    vkllm__make_model_params_default(&p);
    ASSERT_OK(vkllm__make_model_preset(c->preset, &p));
    p.type = c->type;
    if (c->tied >= 0) p.tied = c->tied;
    p.seed = 42;
    char name[128];
    snprintf(name, sizeof name, "rt-%s-%s-%d.gguf", c->preset, vkllm__type_name(c->type), p.tied);
    const char *path = tmp_path(name);
    ASSERT_OK(vkllm__make_model(&p, path));

    struct vkllm__gguf *g;
    struct vkllm__model_desc *d;
    struct vkllm__ref *r;
    ASSERT_OK(vkllm__gguf_open(path, &g));
    ASSERT_OK(vkllm__model_desc_load(g, &d));
    const struct vkllm__hparams *hp = &d->hp;
    ASSERT_EQ(hp->arch, p.arch);
    ASSERT_EQ(hp->n_layer, p.n_layer);
    ASSERT_EQ(hp->n_embd, p.n_embd);
    ASSERT_EQ(hp->n_ff, p.n_ff);
    ASSERT_EQ(hp->n_head, p.n_head);
    ASSERT_EQ(hp->n_head_kv, p.n_head_kv);
    ASSERT_EQ(hp->head_dim, p.head_dim ? p.head_dim : p.n_embd / p.n_head);
    ASSERT_EQ(hp->n_vocab, p.n_vocab);
    ASSERT_EQ(hp->n_ctx_train, p.n_ctx);
    ASSERT_EQ(hp->tied_embd, p.tied);
    ASSERT_EQ(hp->rope.neox, p.arch != VKLLM__ARCH_LLAMA);
    ASSERT_NEAR(hp->rope.theta, p.rope_theta, 1e-3 * p.rope_theta);
    ASSERT_EQ(d->w.layers[0].bq != NULL, p.arch == VKLLM__ARCH_QWEN2 || p.arch == VKLLM__ARCH_GPTOSS);
    ASSERT_EQ(d->w.layers[0].q_norm != NULL,
              vkllm__tensor_wanted(&vkllm__layer_tensors[VKLLM__LT_q_norm], p.arch, 0) == 1);
    ASSERT_EQ(hp->n_expert, p.n_expert);
    ASSERT_EQ(hp->n_expert_used, p.n_expert_used);
    /* every tensor of the layer table the architecture needs, with its shape */
    for (uint32_t l = 0; l < hp->n_layer; l++)
        for (int i = 0; i < VKLLM__LT_COUNT_; i++) {
            const struct vkllm__tensor_spec *ts = &vkllm__layer_tensors[i];
            const struct vkllm__gguf_tensor *t = vkllm__layer_tensor(&d->w.layers[l], (enum vkllm__layer_tensor)i);
            /* phi3's fused attn_qkv and ffn_up are split into row views of the separate ones */
            int fused = hp->arch == VKLLM__ARCH_PHI3 && (i == VKLLM__LT_wqkv || i == VKLLM__LT_w_gate_up);
            int split = hp->arch == VKLLM__ARCH_PHI3 && (i == VKLLM__LT_wq || i == VKLLM__LT_wk || i == VKLLM__LT_wv ||
                                                         i == VKLLM__LT_w_gate || i == VKLLM__LT_w_up);
            /* gpt-oss's post_attention_norm is its FFN's norm: moved into ffn_norm */
            int moved = hp->arch == VKLLM__ARCH_GPTOSS && (i == VKLLM__LT_attn_post_norm || i == VKLLM__LT_ffn_norm);
            if (moved) {
                ASSERT_EQ(t != NULL, i == VKLLM__LT_ffn_norm);
                continue;
            }
            ASSERT_EQ(t != NULL, !fused && (split || vkllm__tensor_wanted(ts, hp->arch, hp->n_expert > 0) == 1));
            if (!t) continue;
            ASSERT_EQ(t->ne[0], vkllm__dim_size(hp, ts->cols));
            ASSERT_EQ(t->ne[1], ts->rows != VKLLM__DIM_NONE ? vkllm__dim_size(hp, ts->rows) : 1);
            ASSERT_EQ(t->ne[2], ts->kind == VKLLM__TENSOR_EXP ? hp->n_expert : 1);
        }
    ASSERT_EQ(d->w.output == d->w.token_embd, p.tied);
    /* The wanted type when its block divides the row, else a fallback. */
    const struct vkllm__type_traits *tr = vkllm__type_traits(p.type);
    if (p.n_embd % tr->block_size == 0) ASSERT_EQ(d->w.layers[0].wq->type, p.type);
    else ASSERT(d->w.layers[0].wq->type != p.type);
    ASSERT_EQ(d->w.layers[0].attn_norm->type, VKLLM__TYPE_F32);

    ASSERT_OK(vkllm__ref_init(d, 16, &r));
    uint32_t token = 1, prev_best = UINT32_MAX;
    float prev_max = 0;
    double prev_sd = 0; /* the spread too: gemma2's capped logits can repeat their top value */
    int changed = 0;
    for (uint32_t pos = 0; pos < 4; pos++) {
        const float *lg;
        ASSERT_OK(vkllm__ref_forward(r, token, pos, &lg));
        double mean = 0, sq = 0;
        for (uint32_t i = 0; i < hp->n_vocab; i++) {
            if (!isfinite(lg[i])) FAILF("%s: logit %u at pos %u is not finite", name, i, pos);
            mean += lg[i];
            sq += (double)lg[i] * lg[i];
        }
        mean /= hp->n_vocab;
        double sd = sqrt(sq / hp->n_vocab - mean * mean);
        if (!(sd > 0.1 && sd < 100)) FAILF("%s: degenerate logits at pos %u: sd %g", name, pos, sd);
        uint32_t best = vkllm__ref_argmax(lg, hp->n_vocab);
        if (pos > 0 && (best != prev_best || lg[best] != prev_max || sd != prev_sd)) changed = 1;
        prev_sd = sd;
        prev_best = best;
        prev_max = lg[best];
        /* greedy, except that a token that predicts itself is followed by the next id: attention over
         * copies of one token returns its value whatever the weights (gemma2's tied, capped logits) */
        token = best != token ? best : (token + 1) % hp->n_vocab;
    }
    if (!changed) FAILF("%s: logits do not depend on the input", name);
    printf("ok  %-20s %-5s tied=%d  last argmax %u\n", c->preset, vkllm__type_name(c->type), p.tied, prev_best);
    vkllm__ref_free(r);
    vkllm__model_desc_free(d);
    vkllm__gguf_close(g);
    unlink(path);
}

// --- determinism ----------------------------------------------------------------------------

static void determinism(void) {
    struct vkllm__make_model_params p;
    vkllm__make_model_params_default(&p);
    p.type = VKLLM__TYPE_Q8_0;
    p.seed = 7;
    ASSERT_OK(vkllm__make_model(&p, tmp_path("det-a.gguf")));
    ASSERT_OK(vkllm__make_model(&p, tmp_path("det-b.gguf")));
    p.seed = 8;
    ASSERT_OK(vkllm__make_model(&p, tmp_path("det-c.gguf")));
    size_t na, nb, nc;
    char *a = vkllm_test_read_file(tmp_path("det-a.gguf"), &na);
    char *b = vkllm_test_read_file(tmp_path("det-b.gguf"), &nb);
    char *c = vkllm_test_read_file(tmp_path("det-c.gguf"), &nc);
    ASSERT_EQ(na, nb);
    ASSERT(memcmp(a, b, na) == 0);
    ASSERT_EQ(na, nc);
    ASSERT(memcmp(a, c, na) != 0);
    free(a), free(b), free(c);
    unlink(tmp_path("det-a.gguf")), unlink(tmp_path("det-b.gguf")), unlink(tmp_path("det-c.gguf"));
    printf("ok  determinism\n");
}

// --- rewriting a file with edits -----------------------------------------------------------

struct edit {
    const char *drop_key;      /* metadata key left out */
    const char *drop_tensor;   /* tensor left out */
    const char *swap_tensor;   /* tensor whose ne[0] and ne[1] are swapped (same bytes) */
    const char *retype_tensor; /* f32 tensor relabelled as i32 (same bytes, a type vkllm refuses) */
    const char *set_str_key, *set_str_val;
    const char *set_f32_key;
    float set_f32_val;
    const char *set_u32_key;
    uint32_t set_u32_val;
};

static vkllm_status copy_fill(void *user, void *dst, uint64_t nbytes) {
    const struct vkllm__gguf_tensor *t = user;
    ASSERT_EQ(nbytes, t->nbytes);
    memcpy(dst, t->data, nbytes);
    return VKLLM_STATUS_OK;
}

static void rewrite(const char *src, const char *dst, const struct edit *e) {
    struct vkllm__gguf *g;
    struct vkllm__gguf_writer *w;
    ASSERT_OK(vkllm__gguf_open(src, &g));
    ASSERT_OK(vkllm__gguf_writer_init(&w));
    for (uint64_t i = 0; i < g->n_kv; i++) {
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)g->kv[i].key.len, g->kv[i].key.ptr);
        if (e->drop_key && !strcmp(key, e->drop_key)) continue;
        ASSERT_OK(vkllm__gguf_writer_set_kv(w, key, &g->kv[i]));
    }
    if (e->set_str_key) ASSERT_OK(vkllm__gguf_writer_set_str(w, e->set_str_key, e->set_str_val));
    if (e->set_f32_key) ASSERT_OK(vkllm__gguf_writer_set_f32(w, e->set_f32_key, e->set_f32_val));
    if (e->set_u32_key) ASSERT_OK(vkllm__gguf_writer_set_u32(w, e->set_u32_key, e->set_u32_val));
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct vkllm__gguf_tensor *t = &g->tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (e->drop_tensor && !strcmp(name, e->drop_tensor)) continue;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        uint32_t type = t->type;
        if (e->swap_tensor && !strcmp(name, e->swap_tensor)) ne[0] = t->ne[1], ne[1] = t->ne[0];
        if (e->retype_tensor && !strcmp(name, e->retype_tensor)) type = VKLLM__TYPE_I32;
        ASSERT_OK(vkllm__gguf_writer_add_tensor(w, name, type, t->n_dims ? t->n_dims : 1, ne, copy_fill, (void *)t));
    }
    ASSERT_OK(vkllm__gguf_writer_write(w, dst));
    vkllm__gguf_writer_free(w);
    vkllm__gguf_close(g);
}

/* Load the edited file: status want and a message containing every given word. */
static void expect_load(const char *src, const struct edit *e, vkllm_status want, ...) {
    const char *path = tmp_path("edited.gguf");
    rewrite(src, path, e);
    struct vkllm__gguf *g;
    struct vkllm__model_desc *d = NULL;
    ASSERT_OK(vkllm__gguf_open(path, &g));
    vkllm_status st = vkllm__model_desc_load(g, &d);
    if (st != want) FAILF("got %s, want %s (%s)", vkllm_status_name(st), vkllm_status_name(want), vkllm_last_error());
    va_list ap;
    va_start(ap, want);
    for (const char *word; (word = va_arg(ap, const char *));)
        if (!strstr(vkllm_last_error(), word)) FAILF("message '%s' lacks '%s'", vkllm_last_error(), word);
    va_end(ap);
    if (want != VKLLM_STATUS_OK) printf("ok  %s: %s\n", vkllm_status_name(st), vkllm_last_error());
    vkllm__model_desc_free(d);
    vkllm__gguf_close(g);
    unlink(path);
}

static void errors(void) {
    struct vkllm__make_model_params p;
    vkllm__make_model_params_default(&p);
    char src[512];
    snprintf(src, sizeof src, "%s", tmp_path("err-src.gguf"));
    ASSERT_OK(vkllm__make_model(&p, src));
    struct edit e;
#define EDIT(...) (memset(&e, 0, sizeof e), e = (struct edit){__VA_ARGS__}, &e)
    expect_load(src, EDIT(.drop_key = "llama.embedding_length"), VKLLM_STATUS_BAD_FORMAT,
                "missing metadata key llama.embedding_length", (char *)NULL);
    expect_load(src, EDIT(.drop_key = "llama.attention.layer_norm_rms_epsilon"), VKLLM_STATUS_BAD_FORMAT,
                "llama.attention.layer_norm_rms_epsilon", (char *)NULL);
    expect_load(src, EDIT(.drop_key = "general.architecture"), VKLLM_STATUS_BAD_FORMAT, "general.architecture",
                (char *)NULL);
    expect_load(src, EDIT(.swap_tensor = "blk.1.attn_k.weight"), VKLLM_STATUS_BAD_FORMAT, "blk.1.attn_k.weight",
                "shape", (char *)NULL);
    expect_load(src, EDIT(.drop_tensor = "blk.1.ffn_up.weight"), VKLLM_STATUS_BAD_FORMAT,
                "missing tensor blk.1.ffn_up.weight", (char *)NULL);
    expect_load(src, EDIT(.retype_tensor = "blk.0.attn_q.weight"), VKLLM_STATUS_UNSUPPORTED, "blk.0.attn_q.weight",
                "i32", (char *)NULL);
    expect_load(src, EDIT(.set_u32_key = "llama.attention.head_count_kv", .set_u32_val = 3), VKLLM_STATUS_BAD_FORMAT,
                "head_count", (char *)NULL);
    expect_load(src, EDIT(.set_str_key = "general.architecture", .set_str_val = "gpt2"), VKLLM_STATUS_UNSUPPORTED,
                "gpt2", (char *)NULL);
    expect_load(src, EDIT(.set_str_key = "llama.rope.scaling.type", .set_str_val = "longrope"),
                VKLLM_STATUS_UNSUPPORTED, "longrope", (char *)NULL);
    expect_load(src, EDIT(.set_u32_key = "llama.rope.dimension_count", .set_u32_val = 64), VKLLM_STATUS_BAD_FORMAT,
                "rope.dimension_count", (char *)NULL);
    unlink(src);

    /* A qwen2 file without a bias, a qwen3 file without a q/k norm. */
    ASSERT_OK(vkllm__make_model_preset("tiny-qwen2", &p));
    ASSERT_OK(vkllm__make_model(&p, src));
    expect_load(src, EDIT(.drop_tensor = "blk.0.attn_v.bias"), VKLLM_STATUS_BAD_FORMAT, "blk.0.attn_v.bias",
                (char *)NULL);
    ASSERT_OK(vkllm__make_model_preset("tiny-qwen3", &p));
    ASSERT_OK(vkllm__make_model(&p, src));
    expect_load(src, EDIT(.drop_tensor = "blk.1.attn_k_norm.weight"), VKLLM_STATUS_BAD_FORMAT,
                "blk.1.attn_k_norm.weight", (char *)NULL);
    /* gpt-oss without its sinks, an expert bias, or the window it must give */
    ASSERT_OK(vkllm__make_model_preset("tiny-gpt-oss", &p));
    ASSERT_OK(vkllm__make_model(&p, src));
    expect_load(src, EDIT(.drop_tensor = "blk.1.attn_sinks.weight"), VKLLM_STATUS_BAD_FORMAT, "blk.1.attn_sinks.weight",
                (char *)NULL);
    expect_load(src, EDIT(.drop_tensor = "blk.0.ffn_down_exps.bias"), VKLLM_STATUS_BAD_FORMAT,
                "blk.0.ffn_down_exps.bias", (char *)NULL);
    expect_load(src, EDIT(.swap_tensor = "blk.0.ffn_up_exps.bias"), VKLLM_STATUS_BAD_FORMAT, "blk.0.ffn_up_exps.bias",
                "shape", (char *)NULL);
    expect_load(src, EDIT(.retype_tensor = "blk.0.ffn_gate_exps.bias"), VKLLM_STATUS_UNSUPPORTED,
                "blk.0.ffn_gate_exps.bias", (char *)NULL);
    expect_load(src, EDIT(.drop_key = "gpt-oss.attention.sliding_window"), VKLLM_STATUS_BAD_FORMAT,
                "gpt-oss.attention.sliding_window", (char *)NULL);
    expect_load(src, EDIT(.drop_key = "gpt-oss.expert_feed_forward_length"), VKLLM_STATUS_BAD_FORMAT,
                "gpt-oss.expert_feed_forward_length", (char *)NULL);
    unlink(src);
#undef EDIT

    /* Bad generator parameters. */
    vkllm__make_model_params_default(&p);
    p.n_vocab = 100;
    ASSERT_STATUS(vkllm__make_model(&p, src), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm__make_model_params_default(&p);
    p.n_head_kv = 3;
    ASSERT_STATUS(vkllm__make_model(&p, src), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm__make_model_params_default(&p);
    p.type = VKLLM__TYPE_IQ2_XXS;
    ASSERT_STATUS(vkllm__make_model(&p, src), VKLLM_STATUS_UNSUPPORTED);
    struct vkllm__make_model_params q = p;
    ASSERT_STATUS(vkllm__make_model_preset("no-such-preset", &q), VKLLM_STATUS_NOT_FOUND);
    ASSERT(access(src, F_OK) != 0);
}

// --- RoPE from metadata --------------------------------------------------------------------

static void load_rope(const char *src, const struct edit *e, float *inv_freq, struct vkllm__hparams *hp) {
    const char *path = tmp_path("rope.gguf");
    rewrite(src, path, e);
    struct vkllm__gguf *g;
    struct vkllm__model_desc *d;
    ASSERT_OK(vkllm__gguf_open(path, &g));
    ASSERT_OK(vkllm__model_desc_load(g, &d));
    vkllm__rope_freqs(&d->hp, d->hp.n_ctx_train, inv_freq);
    *hp = d->hp;
    hp->rope.freq_factors = NULL;
    vkllm__model_desc_free(d);
    vkllm__gguf_close(g);
    unlink(path);
}

static void rope(void) {
    struct vkllm__make_model_params p;
    vkllm__make_model_params_default(&p);
    p.n_embd = 256;
    p.n_head = 2;
    p.n_head_kv = 1;
    p.rope_theta = 500000.0f;
    p.n_ctx = 8192;
    char src[512];
    snprintf(src, sizeof src, "%s", tmp_path("rope-src.gguf"));
    ASSERT_OK(vkllm__make_model(&p, src));
    float base[64], lin[64], l3[64];
    struct vkllm__hparams hp;
    struct edit e = {0};
    load_rope(src, &e, base, &hp);
    ASSERT_EQ(hp.rope.n_rot, 128);
    ASSERT_EQ(hp.rope.scaling, VKLLM__ROPE_SCALING_NONE);
    ASSERT_NEAR(base[0], 1.0, 1e-7);
    ASSERT_NEAR(base[1], pow(500000.0, -2.0 / 128), 1e-7);
    ASSERT_NEAR(base[63], pow(500000.0, -126.0 / 128), 1e-9);

    e = (struct edit){.set_str_key = "llama.rope.scaling.type",
                      .set_str_val = "linear",
                      .set_f32_key = "llama.rope.scaling.factor",
                      .set_f32_val = 4.0f};
    load_rope(src, &e, lin, &hp);
    ASSERT_EQ(hp.rope.scaling, VKLLM__ROPE_SCALING_LINEAR);
    for (int i = 0; i < 64; i++) ASSERT_NEAR(lin[i], base[i] / 4, 1e-6 * base[i]);

    /* Llama 3.1's rule (factor 8, low 1, high 4, original context 8192): the fastest frequencies
     * keep their value, the slowest are divided by 8, the middle blend. */
    e = (struct edit){.set_str_key = "llama.rope.scaling.type",
                      .set_str_val = "llama3",
                      .set_f32_key = "llama.rope.scaling.factor",
                      .set_f32_val = 8.0f};
    load_rope(src, &e, l3, &hp);
    ASSERT_EQ(hp.rope.scaling, VKLLM__ROPE_SCALING_LLAMA3);
    int kept = 0, divided = 0, blended = 0;
    for (int i = 0; i < 64; i++) {
        double ratio = base[i] / l3[i];
        double wavelen = 2 * M_PI / base[i];
        if (wavelen < 8192.0 / 4) {
            ASSERT_NEAR(ratio, 1.0, 1e-5);
            kept++;
        } else if (wavelen > 8192.0 / 1) {
            ASSERT_NEAR(ratio, 8.0, 1e-4);
            divided++;
        } else {
            ASSERT(ratio > 1.0 && ratio < 8.0);
            blended++;
        }
    }
    ASSERT(kept > 0 && divided > 0 && blended > 0);

    /* YaRN x4 over the original 8192 positions (beta_fast 32, beta_slow 1): the pairs that turn
     * more than 32 times over 8192 positions keep their frequency, those that turn less than once
     * are divided by 4, a linear ramp between; cos and sin scaled by 1 + 0.1 ln 4, which the
     * attention scale takes squared */
    float yarn[64];
    e = (struct edit){.set_str_key = "llama.rope.scaling.type",
                      .set_str_val = "yarn",
                      .set_f32_key = "llama.rope.scaling.factor",
                      .set_f32_val = 4.0f};
    load_rope(src, &e, yarn, &hp);
    ASSERT_EQ(hp.rope.scaling, VKLLM__ROPE_SCALING_YARN);
    double lo = floor(128 * log(8192 / (32 * 2 * M_PI)) / (2 * log(500000.0)));
    double hi = ceil(128 * log(8192 / (2 * M_PI)) / (2 * log(500000.0)));
    int ykept = 0, ydiv = 0, yblend = 0;
    for (int i = 0; i < 64; i++) {
        double ratio = base[i] / yarn[i], mix = 1 - fmin(1, fmax(0, (i - lo) / (hi - lo)));
        ASSERT_NEAR(ratio, 1.0 / (0.25 * (1 - mix) + mix), 1e-5 * ratio);
        if (i <= lo) {
            ASSERT_NEAR(ratio, 1.0, 1e-6);
            ykept++;
        } else if (i >= hi) {
            ASSERT_NEAR(ratio, 4.0, 1e-5);
            ydiv++;
        } else {
            yblend++;
        }
    }
    ASSERT(ykept > 0 && ydiv > 0 && yblend > 0);
    ASSERT_NEAR(hp.rope.mscale, 1 + 0.1 * log(4.0), 1e-6);
    ASSERT_EQ(hp.attn_scale, 0.0f); /* the magnitude is the rope kernel's, not folded into attention */
    unlink(src);
    printf("ok  rope: none, linear x4, llama3 (%d kept, %d blended, %d divided), yarn x4 (%d, %d, %d)\n", kept, blended,
           divided, ykept, yblend, ydiv);
}

/* gpt-oss's file speaks harmony: its chat template is recognized, and only <|return|> and <|call|>
 * (and eos) end generation, not <|end|>, which closes the analysis message inside an answer. */
static void harmony(void) {
    struct vkllm__make_model_params p;
    vkllm__make_model_params_default(&p); /* a preset sets the shape only */
    ASSERT_OK(vkllm__make_model_preset("tiny-gpt-oss", &p));
    p.type = VKLLM__TYPE_F32;
    const char *path = tmp_path("harmony.gguf");
    ASSERT_OK(vkllm__make_model(&p, path));
    struct vkllm__gguf *g;
    struct vkllm__tokenizer *t;
    ASSERT_OK(vkllm__gguf_open(path, &g));
    ASSERT_OK(vkllm__tokenizer_init_gguf(g, &t));
    struct vkllm__str tmpl;
    ASSERT_OK(vkllm__gguf_get_str(g, "tokenizer.chat_template", &tmpl));
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s", (int)tmpl.len, tmpl.ptr);
    enum vkllm__chat_tmpl id;
    ASSERT_OK(vkllm__chat_template_detect(buf, &id));
    ASSERT_STREQ(vkllm__chat_template_name(id), "gpt-oss");
    static const struct {
        const char *text;
        int eog;
    } toks[] = {{"<|return|>", 1}, {"<|call|>", 1}, {"<|end|>", 0}, {"<|start|>", 0}, {"</s>", 1}};
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        ASSERT_OK(vkllm__tokenize(t, toks[i].text, strlen(toks[i].text), 0, 1, &ids, &n));
        ASSERT_EQ(n, 1);
        if (vkllm__token_is_eog(t, ids[0]) != toks[i].eog)
            FAILF("%s: end of generation %d, want %d", toks[i].text, vkllm__token_is_eog(t, ids[0]), toks[i].eog);
        vkllm__free(ids);
    }
    vkllm__tokenizer_free(t);
    vkllm__gguf_close(g);
    unlink(path);
    printf("ok  gpt-oss: harmony template, <|return|> and <|call|> end generation, <|end|> does not\n");
}

int main(void) {
    const char *t = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/vkllm-test-model-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_dir)) FAILF("mkdtemp %s", g_dir);
    static const struct config configs[] = {
        {"tiny", VKLLM__TYPE_F32, -1},        /* llama, GQA */
        {"tiny-mha", VKLLM__TYPE_F16, -1},    /* llama, no GQA */
        {"tiny", VKLLM__TYPE_BF16, 1},        /* tied */
        {"tiny-qwen2", VKLLM__TYPE_Q8_0, -1}, /* biases, tied */
        {"tiny-qwen3", VKLLM__TYPE_Q4_0, -1}, /* q/k norms, head_dim != n_embd/n_head */
        {"tiny-qwen3", VKLLM__TYPE_F16, 1},   /* tied */
        {"small", VKLLM__TYPE_Q4_K, -1},
        {"small", VKLLM__TYPE_Q6_K, 1},
        {"small", VKLLM__TYPE_Q5_K, -1},
        {"tiny", VKLLM__TYPE_Q4_K, -1},               /* rows of 64: falls back to q4_0 */
        {"stories-260k-shape", VKLLM__TYPE_Q8_0, -1}, /* ffn_down rows of 172: f16 */
        {"tiny-phi3", VKLLM__TYPE_Q8_0, -1},          /* fused q/k/v and gate/up, LongRoPE factors */
        {"tiny-gemma2", VKLLM__TYPE_F16, -1},         /* post-norms, windows, caps; no output.weight */
        {"tiny-gemma3", VKLLM__TYPE_Q8_0, -1},        /* q/k norms, windows */
        {"tiny-qwen3moe", VKLLM__TYPE_Q4_0, -1},      /* 3D expert tensors, no dense FFN */
        {"tiny-mixtral", VKLLM__TYPE_F32, -1},        /* llama with experts */
        {"tiny-gpt-oss", VKLLM__TYPE_MXFP4, -1},      /* sinks, expert biases (2D f32), no feed_forward_length */
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) round_trip(&configs[i]);
    determinism();
    harmony();
    errors();
    rope();
    rmdir(g_dir);
    return 0;
}
