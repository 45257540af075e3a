/* test_gen.c - step-wise generation (vkllm_gen_*) and the batched decode under it: a sequence's
 * logits and text do not depend on what else is decoded with it, requests can join a running
 * batch, cancel and refusals leave sessions usable; tokenize/detokenize. Also the public API the
 * CLI is built on: tuning per context, model files without a device, the tokenizer handle, the
 * reference forward pass, make-model and profiles. Random models (no files needed) and
 * stories260K. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "harness.h"
#include "make_model.h"
#include "tokenizer.h"
#include "types.h"
#include "vectors.h"

static char tmpdir[256];
static vkllm_ctx_t ctx;

static void log_cb(vkllm_log_level level, const char *msg, void *ud) {
    (void)ud;
    if (level <= VKLLM_LOG_WARN) fprintf(stderr, "[vkllm] %s\n", msg);
}

// --- collecting text ---------------------------------------------------------------------------

struct text {
    char buf[8192];
    size_t len;
    int stop_after; /* > 0: ask to stop after this many callbacks */
    int calls;
};

static int on_text(const char *t, size_t n, void *ud) {
    struct text *x = ud;
    ASSERT(x->len + n < sizeof x->buf);
    memcpy(x->buf + x->len, t, n);
    x->len += n;
    x->buf[x->len] = 0;
    return x->stop_after > 0 && ++x->calls >= x->stop_after;
}

// --- requests ------------------------------------------------------------------------------------

struct req {
    const char *prompt;
    int32_t n_predict;
    float temp; /* 0: greedy */
    const char *stop;
    int join_at; /* the batch step at which it starts */
};

static struct vkllm_generate_params params_of(const struct req *r, const char **stop) {
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.prompt = r->prompt;
    p.n_predict = r->n_predict;
    p.sampling.temperature = r->temp;
    p.sampling.seed = 1234;
    p.sampling.has_seed = 1;
    if (r->stop) {
        *stop = r->stop;
        p.stop = stop;
        p.n_stop = 1;
    }
    return p;
}

/* Each request alone (vkllm_generate on a fresh session), then all of them through one running
 * batch that they join at different steps: the texts, token counts and stop reasons must be
 * equal. Alone, each request has a session of its own, as in the batch: on one session the
 * prompt cache would reuse the previous request's BOS and prefill one token fewer, and how a
 * prompt is split into prefill passes may change its logits (the GPU paths: up to 8 tokens
 * through the decode kernel, x in int8 where matvec_x8 runs, from 9 on through the tiled one,
 * x in f16; "hello there" is 9 tokens here, 8 after a cached BOS), which is not what this checks. */
static void check_batch(vkllm_model_t model, const struct req *rs, uint32_t n, const char *what) {
    enum { MAXR = 8 };
    ASSERT(n <= MAXR);
    vkllm_session_t s[MAXR];
    struct vkllm_session_params sp = {.n_ctx = 96, .n_ubatch = 16};
    for (uint32_t i = 0; i < n; i++) ASSERT_OK(vkllm_session_init(model, &sp, &s[i]));
    struct text alone[MAXR], batched[MAXR];
    struct vkllm_generate_stats st_alone[MAXR];
    memset(alone, 0, sizeof alone);
    memset(batched, 0, sizeof batched);
    for (uint32_t i = 0; i < n; i++) {
        const char *stop[1];
        struct vkllm_generate_params p = params_of(&rs[i], stop);
        vkllm_session_t one;
        ASSERT_OK(vkllm_session_init(model, &sp, &one));
        ASSERT_OK(vkllm_generate(one, &p, on_text, &alone[i], &st_alone[i]));
        vkllm_session_free(one);
    }
    vkllm_gen_t g[MAXR] = {0};
    uint32_t started = 0, steps = 0;
    for (;;) {
        for (uint32_t i = 0; i < n; i++)
            if (!g[i] && rs[i].join_at <= (int)steps) {
                const char *stop[1];
                struct vkllm_generate_params p = params_of(&rs[i], stop);
                ASSERT_OK(vkllm_gen_start(s[i], &p, on_text, &batched[i], &g[i]));
                started++;
            }
        int running = 0;
        for (uint32_t i = 0; i < n; i++) running |= g[i] && !vkllm_gen_done(g[i]);
        if (!running && started == n) break;
        vkllm_gen_t live[MAXR];
        uint32_t nl = 0;
        for (uint32_t i = 0; i < n; i++)
            if (g[i]) live[nl++] = g[i]; /* started ones (finished ones are skipped by the step) */
        ASSERT_OK(vkllm_gen_step(live, nl));
        steps++;
        ASSERT(steps < 500);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct vkllm_generate_stats st;
        vkllm_gen_stats(g[i], &st);
        if (strcmp(alone[i].buf, batched[i].buf) || st.n_generated != st_alone[i].n_generated ||
            st.stop_reason != st_alone[i].stop_reason)
            FAILF("%s: request %u differs in a batch:\nalone  (%u tokens, %s): \"%s\"\nbatched (%u tokens, %s): \"%s\"",
                  what, i, st_alone[i].n_generated, vkllm_stop_reason_str(st_alone[i].stop_reason), alone[i].buf,
                  st.n_generated, vkllm_stop_reason_str(st.stop_reason), batched[i].buf);
        ASSERT(st.n_generated > 0);
        vkllm_gen_free(g[i]);
        vkllm_session_free(s[i]);
    }
    printf("%s: %u requests joining a running batch give the texts they give alone (%u steps)\n", what, n, steps);
}

/* The batched decode's logits are bit-identical to one-at-a-time decode steps. */
static void check_logits(vkllm_model_t model, const char *what) {
    enum { N = 5, STEPS = 4 };
    const uint32_t V = vkllm_model_n_vocab(model);
    vkllm_session_t a[N], b[N];
    struct vkllm_session_params sp = {.n_ctx = 64, .n_ubatch = 8};
    int32_t tok[N];
    for (uint32_t i = 0; i < N; i++) {
        ASSERT_OK(vkllm_session_init(model, &sp, &a[i]));
        ASSERT_OK(vkllm_session_init(model, &sp, &b[i]));
        int32_t prompt[12];
        for (uint32_t j = 0; j < 3 + 2 * i; j++) prompt[j] = (int32_t)((j * 37 + i * 101 + 5) % V);
        ASSERT_OK(vkllm_session_eval(a[i], prompt, 3 + 2 * i, 0));
        ASSERT_OK(vkllm_session_eval(b[i], prompt, 3 + 2 * i, 0));
        tok[i] = (int32_t)((i * 13 + 1) % V);
    }
    for (int step = 0; step < STEPS; step++) {
        uint32_t n = step == 2 ? 3 : N; /* a smaller batch in between: re-recorded, then back */
        ASSERT_OK(vkllm__session_decode_batch(a, tok, n));
        for (uint32_t i = 0; i < n; i++) {
            ASSERT_OK(vkllm_session_eval(b[i], &tok[i], 1, 0));
            ASSERT_EQ(vkllm_session_n_past(a[i]), vkllm_session_n_past(b[i]));
            if (memcmp(vkllm_session_logits(a[i], 0), vkllm_session_logits(b[i], 0), sizeof(float) * V))
                FAILF("%s: step %d, sequence %u of %u: batched logits differ from the lone step", what, step, i, n);
            tok[i] = (int32_t)((tok[i] * 7 + 3) % V);
        }
    }
    /* misuse is refused */
    vkllm_session_t dup[2] = {a[0], a[0]};
    ASSERT_STATUS(vkllm__session_decode_batch(dup, tok, 2), VKLLM_STATUS_INVALID_ARGUMENT);
    int32_t bad[2] = {0, (int32_t)V};
    ASSERT_STATUS(vkllm__session_decode_batch(a, bad, 2), VKLLM_STATUS_INVALID_ARGUMENT);
    for (uint32_t i = 0; i < N; i++) {
        vkllm_session_free(a[i]);
        vkllm_session_free(b[i]);
    }
    printf("%s: batched decode logits are bit-identical to lone decode steps\n", what);
}

static void check_misc(vkllm_model_t model) {
    vkllm_session_t s;
    struct vkllm_session_params sp = {.n_ctx = 32, .n_ubatch = 8};
    ASSERT_OK(vkllm_session_init(model, &sp, &s));
    /* a prompt longer than the context: refused, nothing evaluated, the session as it was */
    ASSERT_OK(vkllm_session_eval(s, (const int32_t[]){1, 2, 3}, 3, 0));
    char longp[4096];
    memset(longp, 0, sizeof longp);
    for (int i = 0; i < 200; i++) strcat(longp, "a b ");
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.prompt = longp;
    vkllm_gen_t g = NULL;
    ASSERT_STATUS(vkllm_gen_start(s, &p, NULL, NULL, &g), VKLLM_STATUS_CONTEXT_FULL);
    ASSERT(g == NULL);
    ASSERT_EQ(vkllm_session_n_past(s), 3);
    /* a bad sampling parameter is refused the same way */
    p.prompt = "a b";
    p.sampling.temperature = 0.0f / 0.0f;
    ASSERT_STATUS(vkllm_gen_start(s, &p, NULL, NULL, &g), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(vkllm_session_n_past(s), 3);
    /* cancel: stops at once, the text so far stays out, the session can start again */
    p = vkllm_generate_params_default();
    p.prompt = "a b c";
    p.n_predict = 20;
    p.sampling.temperature = 0;
    struct text t = {0};
    ASSERT_OK(vkllm_gen_start(s, &p, on_text, &t, &g));
    ASSERT_OK(vkllm_gen_step(&g, 1));
    ASSERT(!vkllm_gen_done(g));
    vkllm_gen_cancel(g);
    ASSERT(vkllm_gen_done(g));
    ASSERT_EQ(vkllm_gen_stop_reason(g), VKLLM_STOP_CANCELLED);
    ASSERT_OK(vkllm_gen_step(&g, 1)); /* done gens are skipped */
    struct vkllm_generate_stats st;
    vkllm_gen_stats(g, &st);
    ASSERT_EQ(st.n_generated, 2);
    ASSERT_EQ(st.stop_reason, VKLLM_STOP_CANCELLED);
    vkllm_gen_free(g);
    /* the callback's stop */
    struct text t2 = {.stop_after = 2};
    ASSERT_OK(vkllm_gen_start(s, &p, on_text, &t2, &g));
    while (!vkllm_gen_done(g)) ASSERT_OK(vkllm_gen_step(&g, 1));
    ASSERT_EQ(vkllm_gen_stop_reason(g), VKLLM_STOP_CANCELLED);
    vkllm_gen_free(g);
    /* n_predict bounds it; the context too */
    p.n_predict = -1;
    ASSERT_OK(vkllm_gen_start(s, &p, NULL, NULL, &g));
    while (!vkllm_gen_done(g)) ASSERT_OK(vkllm_gen_step(&g, 1));
    ASSERT(vkllm_gen_stop_reason(g) == VKLLM_STOP_CONTEXT_FULL || vkllm_gen_stop_reason(g) == VKLLM_STOP_EOS);
    ASSERT(vkllm_session_n_past(s) <= 32);
    vkllm_gen_free(g);
    ASSERT_STATUS(vkllm_gen_step(NULL, 1), VKLLM_STATUS_INVALID_ARGUMENT);
    /* n_predict 0: the prompt goes into the cache, nothing is generated */
    p.n_predict = 0;
    struct text t0 = {0};
    ASSERT_OK(vkllm_gen_start(s, &p, on_text, &t0, &g));
    ASSERT(vkllm_gen_done(g));
    ASSERT_EQ(vkllm_gen_stop_reason(g), VKLLM_STOP_MAX_TOKENS);
    ASSERT_EQ(vkllm_gen_n_generated(g), 0);
    ASSERT_EQ(t0.len, 0);
    ASSERT(vkllm_session_n_past(s) > 0);
    vkllm_gen_stats(g, &st);
    double total = st.total_ms;
    vkllm_gen_stats(g, &st);
    ASSERT(st.total_ms == total); /* final once done */
    vkllm_gen_free(g);
    /* EOS as the very first token (a bias forces it): no text, stop reason EOS */
    struct vkllm__tokenizer_info ti;
    vkllm__tokenizer_get_info(model->tok, &ti);
    ASSERT(ti.eos >= 0);
    float big = 100.0f;
    p.n_predict = 5;
    p.sampling.bias_tokens = &ti.eos;
    p.sampling.bias_values = &big;
    p.sampling.n_bias = 1;
    struct text t1 = {0};
    ASSERT_OK(vkllm_gen_start(s, &p, on_text, &t1, &g));
    ASSERT(vkllm_gen_done(g));
    ASSERT_EQ(vkllm_gen_stop_reason(g), VKLLM_STOP_EOS);
    ASSERT_EQ(vkllm_gen_n_generated(g), 0);
    ASSERT_EQ(t1.len, 0);
    vkllm_gen_free(g);
    vkllm_session_free(s);
}

static void check_tokens(vkllm_model_t model, const char *text) {
    int32_t ids[256];
    size_t n = 0, n0 = 0;
    ASSERT_OK(vkllm_tokenize(model, text, 0, 0, 0, NULL, 0, &n0)); /* just the count */
    ASSERT_OK(vkllm_tokenize(model, text, 0, 0, 0, ids, 256, &n));
    ASSERT(n > 0 && n == n0 && n < 256);
    char *back = NULL;
    ASSERT_OK(vkllm_detokenize(model, ids, n, 0, &back));
    if (strcmp(back, text)) FAILF("detokenize(tokenize(\"%s\")) = \"%s\"", text, back);
    vkllm_free(back);
    size_t nb = 0;
    ASSERT_OK(vkllm_tokenize(model, text, 0, 1, 0, ids, 256, &nb));
    ASSERT_EQ(nb, n + 1);
    int32_t bad = (int32_t)vkllm_model_n_vocab(model);
    ASSERT_STATUS(vkllm_detokenize(model, &bad, 1, 0, &back), VKLLM_STATUS_INVALID_ARGUMENT);
}

static vkllm_model_t make_random(uint32_t type, enum vkllm__arch arch, const char *name) {
    struct vkllm__make_model_params p;
    vkllm__make_model_params_default(&p);
    p.arch = arch;
    p.n_layer = 2;
    p.n_embd = 128;
    p.n_ff = 320;
    p.n_head = 4;
    p.n_head_kv = 2;
    p.n_vocab = 600;
    p.n_ctx = 128;
    p.type = type;
    p.seed = 11;
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", tmpdir, name);
    ASSERT_OK(vkllm__make_model(&p, path));
    vkllm_model_t m;
    ASSERT_OK(vkllm_model_load(ctx, path, NULL, &m));
    return m;
}

/* Knob `name`'s value on c. */
static long knob(vkllm_ctx_t c, const char *name) {
    struct vkllm_tuning_knob k;
    for (size_t i = 0; vkllm_tuning_knob(i, &k); i++)
        if (!strcmp(k.name, name)) return vkllm_ctx_tuning_value(c, i);
    FAILF("no tuning knob %s", name);
}

/* A decode product through the storage-buffer kernels: matvec.comp's (matvec, matvec_glu) or
 * matvec_x8.comp's (x quantized in the workgroup: matvec[_glu]_x8[dp]; or once per step by
 * quantize_x8: matvec[_glu]_xq8[dp]), not the texel path's (matvec_tb). */
static int storage_matvec_label(const char *l) {
    static const char *const known[] = {"matvec",         "matvec_glu",      "matvec_x8",  "matvec_x8dp",
                                        "matvec_glu_x8",  "matvec_glu_x8dp", "matvec_xq8", "matvec_xq8dp",
                                        "matvec_glu_xq8", "matvec_glu_xq8dp"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(l, known[i])) return 1;
    return 0;
}

/* The public API without the generation loop, on a make-model file written through it. */
static void check_public_api(void) {
    struct vkllm_make_model_params mp = vkllm_make_model_params_default();
    ASSERT_OK(vkllm_make_model_preset("tiny-qwen2", &mp));
    snprintf(mp.type, sizeof mp.type, "q8_0");
    mp.n_layer = 3;
    char path[512];
    snprintf(path, sizeof path, "%s/api.gguf", tmpdir);
    ASSERT_OK(vkllm_make_model(&mp, path));
    struct vkllm_make_model_params bad = mp;
    snprintf(bad.type, sizeof bad.type, "iq2_xs"); /* a type vkllm does not compute with */
    ASSERT_STATUS(vkllm_make_model(&bad, path), VKLLM_STATUS_INVALID_ARGUMENT);
    snprintf(bad.arch, sizeof bad.arch, "gpt9");
    ASSERT_STATUS(vkllm_make_model(&bad, path), VKLLM_STATUS_INVALID_ARGUMENT);

    /* the file, without a device: every layer tensor has the role the layer table gives it */
    vkllm_model_file_t f;
    ASSERT_OK(vkllm_model_file_open(path, &f));
    static struct vkllm_file_info fi;
    vkllm_model_file_info(f, &fi);
    ASSERT(fi.supported && !strcmp(fi.arch, "qwen2") && fi.n_layer == 3 && fi.rope_neox);
    int wq = 0, bias = 0, unread = 0;
    for (uint64_t i = 0; i < fi.n_tensors; i++) {
        struct vkllm_tensor_info t;
        ASSERT_OK(vkllm_model_file_tensor(f, i, &t));
        wq += !strcmp(t.role, "wq"), bias += !strcmp(t.role, "bq") || !strcmp(t.role, "bk") || !strcmp(t.role, "bv");
        unread += !t.role[0];
    }
    ASSERT(wq == 3 && bias == 9 && unread == 0);
    ASSERT_STATUS(vkllm_model_file_tensor(f, fi.n_tensors, &(struct vkllm_tensor_info){0}),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm_model_file_close(f);

    /* tuning per context: set at init over the environment, and by name afterwards */
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    cp.validate = 1;
    cp.tuning = "matvec_texel=0, VKLLM_ATTN_TEXEL=0,matmul=tiled";
    vkllm_ctx_t c2;
    ASSERT_OK(vkllm_ctx_init(&cp, &c2));
    ASSERT(knob(c2, "matvec_texel") == 0 && knob(c2, "attn_texel") == 0 && knob(c2, "matmul") == 0);
    ASSERT_STATUS(vkllm_ctx_tune(c2, "matvec_wg", "many"), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_ctx_tune(c2, "no_such_knob", "1"), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(vkllm_ctx_tune(c2, "VKLLM_MATVEC_NT", "8"));
    ASSERT(knob(c2, "matvec_nt") == 8);
    ASSERT_OK(vkllm_ctx_tune(c2, "matvec_nt", NULL));
    ASSERT(knob(c2, "matvec_nt") == 0);
    /* the knobs are followed: without the texel path no matrix is repacked (CPU devices repack
     * them by default), and the greedy tokens agree with the reference forward pass */
    vkllm_model_t m2, m1;
    ASSERT_OK(vkllm_model_load(c2, path, NULL, &m2));
    ASSERT_OK(vkllm_model_load(ctx, path, NULL, &m1));
    struct vkllm_model_info i1, i2;
    vkllm_model_get_info(m1, &i1), vkllm_model_get_info(m2, &i2);
    if (vkllm_ctx_device(ctx)->type == VKLLM_DEVICE_CPU && knob(ctx, "matvec_texel") != 0)
        ASSERT(i1.weight_bytes > i2.weight_bytes);
    vkllm_session_t s2;
    ASSERT_OK(vkllm_session_init(m2, NULL, &s2));
    vkllm_ref_t r;
    ASSERT_OK(vkllm_ref_init(path, 16, 1, &r));
    ASSERT_EQ(vkllm_ref_n_vocab(r), i2.n_vocab);
    int32_t tok = 1;
    ASSERT_OK(vkllm_session_set_profile(s2, 1));
    for (uint32_t pos = 0; pos < 6; pos++) {
        const float *want;
        ASSERT_OK(vkllm_ref_eval(r, tok, pos, &want));
        ASSERT_OK(vkllm_session_eval(s2, &tok, 1, 0));
        const float *got = vkllm_session_logits(s2, 0);
        uint32_t a = 0, b = 0;
        for (uint32_t i = 1; i < i2.n_vocab; i++) a = want[i] > want[a] ? i : a, b = got[i] > got[b] ? i : b;
        ASSERT_EQ(a, b);
        tok = (int32_t)a;
    }
    /* the profile of the last decode step: the kernels the tuning chose, with their costs */
    uint32_t nd = vkllm_session_profile_count(s2);
    int storage_matvec = 0;
    for (uint32_t i = 0; i < nd; i++) {
        struct vkllm_dispatch_profile d;
        ASSERT_OK(vkllm_session_profile_get(s2, i, &d));
        ASSERT(d.label && d.kernel && d.ns >= 0);
        storage_matvec += storage_matvec_label(d.label) && d.weight_bytes > 0;
        ASSERT(strcmp(d.label, "matvec_tb") && strcmp(d.label, "attn_tb"));
    }
    /* 3 layers: q/k/v stacked, gate/up with SiLU (4 products per layer), or 7 where they could not be */
    if (vkllm_ctx_device(c2)->timestamps) ASSERT(nd > 0 && storage_matvec >= 4 * 3 + 1);
    vkllm_ref_free(r);
    vkllm_session_free(s2);
    vkllm_model_free(m1);
    vkllm_model_free(m2);
    ASSERT_EQ(vkllm_ctx_validation_messages(c2), 0);
    vkllm_ctx_free(c2);
    cp.tuning = "matmul=sideways";
    ASSERT_STATUS(vkllm_ctx_init(&cp, &c2), VKLLM_STATUS_INVALID_ARGUMENT);

    /* the tokenizer handle, from the file and from a model; thread-safe by being immutable */
    vkllm_tokenizer_t t;
    ASSERT_OK(vkllm_tokenizer_load(path, &t));
    int32_t ids[64];
    size_t n = 0;
    ASSERT_OK(vkllm_tokenizer_encode(t, "abc def", 0, -1, 0, ids, 64, &n));
    ASSERT(n >= 2 && ids[0] == 1); /* BOS as the file asks */
    char *back;
    size_t len;
    ASSERT_OK(vkllm_tokenizer_decode(t, ids, n, 0, &back, &len));
    ASSERT_STREQ(back, "abc def");
    ASSERT_EQ(len, 7);
    vkllm_free(back);
    const char *piece;
    ASSERT_OK(vkllm_tokenizer_piece(t, 3 + 'a', 0, &piece, &len)); /* the byte token <0x61> */
    ASSERT(len == 1 && piece[0] == 'a');
    ASSERT_EQ(vkllm_tokenizer_n_vocab(t), mp.n_vocab);
    vkllm_tokenizer_free(t);
    ASSERT_STATUS(vkllm_tokenizer_load("/nonexistent.gguf", &t), VKLLM_STATUS_NOT_FOUND);
    printf("public API: make-model, model file, tuning, reference, profile, tokenizer\n");
}

/* A generation that starts over keeps what the session's KV cache holds of its prompt: the same
 * prompt again evaluates only its last token, a longer one only what is new; the text is what a
 * fresh session gives. cache_prompt 0 evaluates everything. */
static void check_prompt_cache(vkllm_model_t m) {
    const char *base = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
    char longer[256];
    snprintf(longer, sizeof longer, "%s One day she saw a big dog.", base);
    vkllm_session_t s, fresh;
    ASSERT_OK(vkllm_session_init(m, NULL, &s));
    ASSERT_OK(vkllm_session_init(m, NULL, &fresh));
    ASSERT_EQ(vkllm_session_cached_prefix(s, NULL, 0), 0);
    struct {
        const char *prompt;
        int cache;
    } runs[] = {{base, 1}, {base, 1}, {longer, 1}, {longer, 0}};
    uint32_t n_base = 0;
    for (int i = 0; i < 4; i++) {
        struct vkllm_generate_params p = vkllm_generate_params_default();
        p.prompt = runs[i].prompt;
        p.n_predict = 24;
        p.sampling.temperature = 0;
        p.cache_prompt = runs[i].cache;
        static struct text a, b;
        memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
        struct vkllm_generate_stats sa, sb;
        ASSERT_OK(vkllm_generate(s, &p, on_text, &a, &sa));
        ASSERT_OK(vkllm_generate(fresh, &p, on_text, &b, &sb)); /* fresh: nothing to reuse */
        ASSERT_OK(vkllm_session_truncate(fresh, 0));
        if (strcmp(a.buf, b.buf)) FAILF("run %d: with the cached prompt \"%s\", fresh \"%s\"", i, a.buf, b.buf);
        ASSERT_EQ(sa.n_prompt, sb.n_prompt);
        if (i == 0) n_base = sa.n_prompt;
        if (i == 0) ASSERT(sa.n_prompt_cached <= 1);                /* the cache held nothing of it (BOS at most) */
        if (i == 1) ASSERT_EQ(sa.n_prompt_cached, sa.n_prompt - 1); /* all but the token evaluated for logits */
        if (i == 2) ASSERT(sa.n_prompt_cached + 2 >= n_base && sa.n_prompt_cached < sa.n_prompt);
        if (i == 3) ASSERT_EQ(sa.n_prompt_cached, 0);
        printf("prompt cache: run %d: %u of %u prompt tokens reused\n", i, sa.n_prompt_cached, sa.n_prompt);
    }
    vkllm_session_free(s);
    vkllm_session_free(fresh);
}

/* params.share: a session copies the longest prefix of its prompt another session holds, on the
 * device, and then generates exactly what it generates alone; a window model's rings are copied
 * whole (and not at all once the source has overwritten the window). */
static void check_share(vkllm_model_t m, const struct vkllm_session_params *sp, const char *what) {
    const char *prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park";
    vkllm_session_t a, b, c, fresh;
    ASSERT_OK(vkllm_session_init(m, sp, &a));
    ASSERT_OK(vkllm_session_init(m, sp, &b));
    ASSERT_OK(vkllm_session_init(m, sp, &c));
    ASSERT_OK(vkllm_session_init(m, sp, &fresh));
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.prompt = prompt;
    p.sampling.temperature = 0;
    struct vkllm_generate_stats st, st2;
    static struct text ta, tb;
    p.n_predict = 1; /* a holds the prompt (a window's ring not yet overwritten) */
    memset(&ta, 0, sizeof ta);
    ASSERT_OK(vkllm_generate(a, &p, on_text, &ta, &st));
    p.n_predict = 16;
    memset(&ta, 0, sizeof ta);
    ASSERT_OK(vkllm_generate(fresh, &p, on_text, &ta, &st)); /* alone */
    ASSERT_EQ(st.n_prompt_shared, 0);
    vkllm_session_t others[] = {fresh, a, b}; /* fresh has generated past the prompt: a has the most */
    p.share = others;
    p.n_share = 3;
    memset(&tb, 0, sizeof tb);
    ASSERT_OK(vkllm_generate(b, &p, on_text, &tb, &st2));
    if (strcmp(ta.buf, tb.buf)) FAILF("%s: with a shared prefix \"%s\", alone \"%s\"", what, tb.buf, ta.buf);
    ASSERT(st2.n_prompt_shared == st.n_prompt - 1 && st2.n_prompt_cached == st2.n_prompt_shared);
    /* a longer prompt shares what it has in common (with a: b and fresh generated past the prompt,
     * which a window's ring does not survive) */
    char longer[256];
    snprintf(longer, sizeof longer, "%s with her dog.", prompt);
    p.prompt = longer;
    memset(&tb, 0, sizeof tb);
    ASSERT_OK(vkllm_generate(c, &p, on_text, &tb, &st2));
    p.share = NULL, p.n_share = 0;
    memset(&ta, 0, sizeof ta);
    ASSERT_OK(vkllm_session_truncate(fresh, 0));
    ASSERT_OK(vkllm_generate(fresh, &p, on_text, &ta, &st));
    if (strcmp(ta.buf, tb.buf))
        FAILF("%s: longer prompt with a shared prefix \"%s\", alone \"%s\"", what, tb.buf, ta.buf);
    ASSERT(st2.n_prompt_shared > 0 && st2.n_prompt_shared < st2.n_prompt);
    printf("%s: shared prefixes: %u of %u prompt tokens copied from another session\n", what, st2.n_prompt_shared,
           st2.n_prompt);
    vkllm_session_free(a), vkllm_session_free(b), vkllm_session_free(c), vkllm_session_free(fresh);
}

/* A KV pool shared by sessions (issue 15): requests decoded together take their blocks in turn,
 * so each one's blocks are scattered through the pool, and their greedy text is what each gives
 * alone on a cache of its own. Blocks go back when a session is truncated; its full blocks stay
 * cached, and a later prompt that starts the same way (another session) takes them instead of
 * evaluating them, with the same text. A pool too small for a request: KV_FULL with nothing
 * evaluated, or, mid-generation, the request stops as when its context is full while the others
 * go on. */
static void check_pool(vkllm_model_t m) {
    const char *prompts[3] = {"Once upon a time, there was a little girl named Lily. She loved to play outside",
                              "Tom had a red ball", "The cat sat on the mat and looked at the big"};
    struct vkllm_kv_pool_params pp = vkllm_kv_pool_params_default();
    pp.n_ctx = 128, pp.n_seq = 3;
    vkllm_kv_pool_t pool;
    ASSERT_OK(vkllm_kv_pool_init(m, &pp, &pool));
    struct vkllm_kv_pool_info info;
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT_EQ(info.n_blocks, 3 * 128 / VKLLM_KV_BLOCK);
    ASSERT(info.n_held == 0 && info.n_cached == 0 && info.bytes == info.n_blocks * info.block_bytes);
    struct vkllm_session_params sp = {.n_ctx = 128, .n_ubatch = 16, .pool = pool}, own = {.n_ctx = 128, .n_ubatch = 16};
    vkllm_session_t s[3], fresh;
    for (int i = 0; i < 3; i++) ASSERT_OK(vkllm_session_init(m, &sp, &s[i]));
    ASSERT_OK(vkllm_session_init(m, &own, &fresh));
    static struct text alone[3], together[3];
    vkllm_gen_t g[3];
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.sampling.temperature = 0;
    p.n_predict = 40;
    for (int i = 0; i < 3; i++) {
        memset(&together[i], 0, sizeof together[i]);
        p.prompt = prompts[i];
        ASSERT_OK(vkllm_gen_start(s[i], &p, on_text, &together[i], &g[i]));
    }
    for (int k = 0; k < 60 && !(vkllm_gen_done(g[0]) && vkllm_gen_done(g[1]) && vkllm_gen_done(g[2])); k++)
        ASSERT_OK(vkllm_gen_step(g, 3));
    vkllm_kv_pool_get_info(pool, &info);
    uint32_t held = 0;
    for (int i = 0; i < 3; i++) held += (vkllm_session_n_past(s[i]) + VKLLM_KV_BLOCK - 1) / VKLLM_KV_BLOCK;
    ASSERT_EQ(info.n_held, held); /* blocks for the tokens held, not the contexts */
    for (int i = 0; i < 3; i++) {
        vkllm_gen_free(g[i]);
        memset(&alone[i], 0, sizeof alone[i]);
        p.prompt = prompts[i];
        ASSERT_OK(vkllm_session_truncate(fresh, 0));
        ASSERT_OK(vkllm_generate(fresh, &p, on_text, &alone[i], NULL));
        if (strcmp(alone[i].buf, together[i].buf))
            FAILF("pool: request %d decoded with others \"%s\", alone \"%s\"", i, together[i].buf, alone[i].buf);
    }
    /* given back: nothing held; the full blocks cached */
    for (int i = 0; i < 3; i++) ASSERT_OK(vkllm_session_truncate(s[i], 0));
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT_EQ(info.n_held, 0);
    ASSERT(info.n_cached >= held - 3 && info.n_cached + info.n_free == info.n_blocks);
    /* another session starts with request 0's prompt and more: the cached blocks are taken */
    static char longer[sizeof together[0].buf + 128];
    snprintf(longer, sizeof longer, "%s%s", prompts[0], together[0].buf);
    p.prompt = longer;
    p.n_predict = 16;
    struct vkllm_generate_stats st;
    struct text a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    ASSERT_OK(vkllm_generate(s[2], &p, on_text, &a, &st));
    ASSERT(st.n_prompt_cached >= VKLLM_KV_BLOCK && st.n_prompt_cached % VKLLM_KV_BLOCK == 0 &&
           st.n_prompt_cached + VKLLM_KV_BLOCK >= st.n_prompt - 1);
    ASSERT_OK(vkllm_session_truncate(fresh, 0));
    ASSERT_OK(vkllm_generate(fresh, &p, on_text, &b, NULL));
    if (strcmp(a.buf, b.buf)) FAILF("pool: from cached blocks \"%s\", evaluated \"%s\"", a.buf, b.buf);
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT(info.hit_tokens >= st.n_prompt_cached && info.queried_tokens >= info.hit_tokens);
    printf("pool: %u of %u prompt tokens taken from cached blocks; %u blocks held, %u cached\n", st.n_prompt_cached,
           st.n_prompt, info.n_held, info.n_cached);
    /* the block table's upload fails (a lost device) where s[1] would take those blocks: it takes
     * none and evaluates the whole prompt, with the same text */
    struct text c;
    memset(&c, 0, sizeof c);
    vkllm__fault_inject(VKLLM__FAULT_UPLOAD, 1);
    ASSERT_OK(vkllm_generate(s[1], &p, on_text, &c, &st));
    ASSERT_EQ(vkllm__fault_pending(VKLLM__FAULT_UPLOAD), 0);
    ASSERT_EQ(st.n_prompt_cached, 0);
    if (strcmp(c.buf, b.buf)) FAILF("pool: after a failed lookup \"%s\", evaluated \"%s\"", c.buf, b.buf);
    /* and where s[0] would copy s[2]'s prefix (blocks shared): the request fails with the device's
     * status, s[0] holding nothing; the next one succeeds with the same text */
    ASSERT_OK(vkllm_session_truncate(s[1], 0));
    ASSERT_OK(vkllm_session_truncate(s[0], 0));
    const vkllm_session_t others[1] = {s[2]};
    p.share = others, p.n_share = 1;
    memset(&c, 0, sizeof c);
    vkllm__fault_inject(VKLLM__FAULT_UPLOAD, 1);
    ASSERT_STATUS(vkllm_generate(s[0], &p, on_text, &c, &st), VKLLM_STATUS_DEVICE_LOST);
    ASSERT_EQ(vkllm__fault_pending(VKLLM__FAULT_UPLOAD), 0);
    ASSERT_EQ(vkllm_session_n_past(s[0]), 0);
    memset(&c, 0, sizeof c);
    ASSERT_OK(vkllm_generate(s[0], &p, on_text, &c, &st));
    ASSERT(st.n_prompt_shared > 0);
    if (strcmp(c.buf, b.buf)) FAILF("pool: copied after a failed copy \"%s\", evaluated \"%s\"", c.buf, b.buf);
    p.share = NULL, p.n_share = 0;
    for (int i = 0; i < 3; i++) vkllm_session_free(s[i]);
    vkllm_kv_pool_free(pool);

    /* bit for bit: two sessions on one pool evaluating in turns (16 tokens, then one at a time),
     * so each one's blocks alternate through the pool, give the logits a session on a cache of its
     * own gives, at every step */
    {
        ASSERT_OK(vkllm_kv_pool_init(m, &pp, &pool));
        sp.pool = pool;
        vkllm_session_t x, y;
        ASSERT_OK(vkllm_session_init(m, &sp, &x));
        ASSERT_OK(vkllm_session_init(m, &sp, &y));
        ASSERT_OK(vkllm_session_truncate(fresh, 0));
        const uint32_t V = vkllm_model_n_vocab(m);
        int32_t seq[70];
        for (int i = 0; i < 70; i++) seq[i] = 1 + (i * 37) % 200;
        uint32_t pos = 0, diff = 0;
        while (pos < 70) {
            uint32_t n = pos < 32 ? 16 : 1;
            ASSERT_OK(vkllm_session_eval(y, seq, n, 0)); /* y takes the next block first */
            ASSERT_OK(vkllm_session_eval(x, seq + pos, n, 0));
            ASSERT_OK(vkllm_session_eval(fresh, seq + pos, n, 0));
            diff += memcmp(vkllm_session_logits(x, 0), vkllm_session_logits(fresh, 0), sizeof(float) * V) != 0;
            ASSERT_OK(vkllm_session_truncate(y, 0));
            pos += n;
        }
        if (diff) FAILF("pool: %u of the steps' logits differ from a cache of its own", diff);
        vkllm_session_free(x), vkllm_session_free(y);
        vkllm_kv_pool_free(pool);
        pp.n_seq = 3;
    }

    /* a pool of 4 blocks (64 positions) */
    pp.bytes = 4 * info.block_bytes;
    ASSERT_OK(vkllm_kv_pool_init(m, &pp, &pool));
    sp.pool = pool;
    for (int i = 0; i < 2; i++) ASSERT_OK(vkllm_session_init(m, &sp, &s[i]));
    int32_t toks[80];
    for (int i = 0; i < 80; i++) toks[i] = 1 + i % 50;
    ASSERT_STATUS(vkllm_session_eval(s[0], toks, 80, 0), VKLLM_STATUS_KV_FULL); /* nothing evaluated */
    ASSERT_EQ(vkllm_session_n_past(s[0]), 0);
    ASSERT_OK(vkllm_session_eval(s[0], toks, 40, 0));                           /* 3 blocks */
    ASSERT_STATUS(vkllm_session_eval(s[1], toks, 20, 0), VKLLM_STATUS_KV_FULL); /* 2 more: 1 left */
    /* mid-generation: s[1]'s prompt fits in the last block, its 17th token does not; s[0] goes on */
    p.prompt = prompts[1];
    p.n_predict = 30;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    ASSERT_OK(vkllm_gen_start(s[1], &p, on_text, &b, &g[1]));
    for (int k = 0; k < 40 && !vkllm_gen_done(g[1]); k++) ASSERT_OK(vkllm_gen_step(&g[1], 1));
    ASSERT_EQ(vkllm_gen_stop_reason(g[1]), VKLLM_STOP_KV_FULL); /* the pool, not its context */
    ASSERT_EQ(vkllm_session_n_past(s[1]), VKLLM_KV_BLOCK);
    vkllm_gen_free(g[1]);
    if (strncmp(b.buf, together[1].buf, b.len))
        FAILF("pool: cut short \"%s\", not a start of \"%s\"", b.buf, together[1].buf);
    ASSERT_OK(vkllm_session_eval(s[0], toks + 40, 8, 0)); /* within its third block */
    /* eviction: both give their blocks back (all 4 full, so cached: s[1]'s first, then s[0]'s
     * from its last); 20 other tokens on s[1] take the 2 least recently released (s[1]'s and
     * s[0]'s third), and a prompt of s[0]'s first 49 tokens then finds its first 2 blocks still
     * cached, not its third */
    ASSERT_OK(vkllm_session_truncate(s[1], 0));
    ASSERT_OK(vkllm_session_truncate(s[0], 0));
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT(info.n_cached == 4 && info.n_free == 0 && info.n_held == 0 && info.evicted_blocks == 0);
    int32_t other[20];
    for (int i = 0; i < 20; i++) other[i] = 60 + i;
    ASSERT_OK(vkllm_session_eval(s[1], other, 20, 0));
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT(info.evicted_blocks == 2 && info.n_cached == 2 && info.n_held == 2);
    ASSERT_OK(vkllm_session_truncate(s[1], 0)); /* its full block cached, the other free */
    struct vkllm_generate_params q = vkllm_generate_params_default();
    q.prompt_tokens = toks; /* toks[0] is BOS */
    q.n_prompt_tokens = 49;
    q.n_predict = 8;
    q.sampling.temperature = 0;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    ASSERT_OK(vkllm_generate(s[0], &q, on_text, &a, &st));
    ASSERT_EQ(st.n_prompt_cached, 2 * VKLLM_KV_BLOCK);
    ASSERT_OK(vkllm_session_truncate(fresh, 0));
    ASSERT_OK(vkllm_generate(fresh, &q, on_text, &b, NULL));
    if (strcmp(a.buf, b.buf)) FAILF("pool: after evictions \"%s\", evaluated \"%s\"", a.buf, b.buf);
    for (int i = 0; i < 2; i++) vkllm_session_free(s[i]);
    vkllm_kv_pool_free(pool);
    vkllm_session_free(fresh);
}

/* n_probs: each generated token's log-probability and the top 5 under the model's distribution,
 * against the scalar reference's logits at the same positions; greedy picks the first of them. */
static void check_token_probs(vkllm_model_t m, const char *path) {
    vkllm_session_t s;
    ASSERT_OK(vkllm_session_init(m, NULL, &s));
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.prompt = "";
    p.n_predict = 12;
    p.sampling.temperature = 0;
    p.n_probs = 5;
    vkllm_gen_t g;
    ASSERT_OK(vkllm_gen_start(s, &p, NULL, NULL, &g));
    while (!vkllm_gen_done(g)) ASSERT_OK(vkllm_gen_step(&g, 1));
    uint32_t n = vkllm_gen_n_generated(g);
    ASSERT(n > 0);
    vkllm_ref_t r;
    ASSERT_OK(vkllm_ref_init(path, 64, 1, &r));
    uint32_t V = vkllm_ref_n_vocab(r);
    int32_t tok = 1; /* BOS */
    double worst = 0;
    for (uint32_t i = 0; i < n; i++) {
        const float *ref;
        ASSERT_OK(vkllm_ref_eval(r, tok, i, &ref));
        double mx = -INFINITY, sum = 0;
        for (uint32_t j = 0; j < V; j++) mx = ref[j] > mx ? ref[j] : mx;
        for (uint32_t j = 0; j < V; j++) sum += exp(ref[j] - mx);
        double lse = mx + log(sum);
        struct vkllm_token_probs tp;
        ASSERT_OK(vkllm_gen_token_probs(g, i, &tp));
        ASSERT(tp.n_top == 5 && tp.top[0].id == tp.id && tp.top[0].logprob == tp.logprob);
        double total = 0;
        for (uint32_t k = 0; k < tp.n_top; k++) {
            ASSERT(k == 0 || tp.top[k].logprob <= tp.top[k - 1].logprob);
            double e = fabs(tp.top[k].logprob - (ref[tp.top[k].id] - lse));
            worst = e > worst ? e : worst;
            total += exp(tp.top[k].logprob);
        }
        ASSERT(total <= 1.0 + 1e-5);
        tok = tp.id;
    }
    struct vkllm_token_probs tp;
    ASSERT_STATUS(vkllm_gen_token_probs(g, n + 1, &tp), VKLLM_STATUS_INVALID_ARGUMENT);
    printf("token probabilities: %u tokens, top 5 within %.2e of the reference's log-softmax\n", n, worst);
    ASSERT(worst < 2e-3);
    vkllm_ref_free(r);
    vkllm_gen_free(g);
    p.n_probs = -1; /* off: asking is an error */
    ASSERT_OK(vkllm_gen_start(s, &p, NULL, NULL, &g));
    ASSERT_STATUS(vkllm_gen_token_probs(g, 0, &tp), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm_gen_free(g);
    vkllm_session_free(s);
}

/* Grammars through the public API: a grammar that allows everything changes nothing (greedy);
 * the output is a sentence of the grammar; it closes within n_predict when it can, and when it
 * cannot it stops at n_predict; bad grammars and grammar + json_object are refused. */
static void gen_text(vkllm_session_t s, const struct vkllm_generate_params *p, struct text *t,
                     struct vkllm_generate_stats *st) {
    memset(t, 0, sizeof *t);
    ASSERT_OK(vkllm_generate(s, p, on_text, t, st));
}

/* One gen per session: while a gen owns a session, the session's own calls and a second gen are
 * refused and the gen's text is what it is alone; a session freed under a gen ends the gen with an
 * error (no use of freed memory); continuing the history with an empty prompt is refused with
 * the reason; NULL handles and out-pointers are refused, not dereferenced. */
static void check_ownership(vkllm_model_t m) {
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.prompt = "Once upon a time";
    p.n_predict = 24;
    p.sampling.temperature = 0;
    vkllm_session_t s;
    ASSERT_OK(vkllm_session_init(m, NULL, &s));
    struct text alone, t;
    gen_text(s, &p, &alone, NULL);
    vkllm_gen_t g, g2;
    memset(&t, 0, sizeof t);
    ASSERT_OK(vkllm_gen_start(s, &p, on_text, &t, &g));
    for (int i = 0; i < 5; i++) ASSERT_OK(vkllm_gen_step(&g, 1));
    ASSERT_STATUS(vkllm_gen_start(s, &p, on_text, &t, &g2), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_generate(s, &p, NULL, NULL, NULL), VKLLM_STATUS_INVALID_ARGUMENT);
    int32_t tok = 1, next;
    float emb[512];
    ASSERT_STATUS(vkllm_session_eval(s, &tok, 1, 0), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_session_truncate(s, 0), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_session_decode_greedy(s, tok, &next), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_session_embed(s, &tok, 1, VKLLM_POOLING_MEAN, 1, emb), VKLLM_STATUS_INVALID_ARGUMENT);
    while (!vkllm_gen_done(g)) ASSERT_OK(vkllm_gen_step(&g, 1));
    ASSERT_OK(vkllm_gen_status(g));
    ASSERT_STREQ(t.buf, alone.buf);
    vkllm_gen_free(g);
    ASSERT_OK(vkllm_session_eval(s, &tok, 1, 0)); /* free again */
    /* the session freed under a running gen: the gen ends with an error, its calls stay safe */
    ASSERT_OK(vkllm_gen_start(s, &p, on_text, &t, &g));
    ASSERT_OK(vkllm_gen_step(&g, 1));
    vkllm_session_free(s);
    ASSERT(vkllm_gen_done(g));
    ASSERT_STATUS(vkllm_gen_status(g), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(vkllm_gen_step(&g, 1)); /* skipped: done */
    struct vkllm_generate_stats st;
    vkllm_gen_stats(g, &st);
    ASSERT_EQ(st.kv_bytes_used, 0);
    vkllm_gen_free(g);
    /* keep_history with an empty prompt: refused, saying why (was: "the model has no BOS token") */
    ASSERT_OK(vkllm_session_init(m, NULL, &s));
    struct text a;
    p.n_predict = 12;
    gen_text(s, &p, &a, NULL);
    p.prompt = "";
    p.keep_history = 1;
    ASSERT_STATUS(vkllm_generate(s, &p, NULL, NULL, NULL), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(vkllm_last_error(), "nothing new to evaluate"));
    /* share: a count without the array */
    p.keep_history = 0;
    p.n_share = 2;
    ASSERT_STATUS(vkllm_generate(s, &p, NULL, NULL, NULL), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm_session_free(s);
    /* NULL handles and out-pointers */
    struct vkllm_session_memory mem;
    struct vkllm_model_info mi;
    struct vkllm_kv_pool_info pi;
    struct vkllm_file_info fi;
    ASSERT_EQ(vkllm_session_n_past(NULL), 0);
    ASSERT_EQ(vkllm_session_n_ctx(NULL), 0);
    ASSERT_STATUS(vkllm_session_truncate(NULL, 0), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm_session_memory(NULL, &mem);
    ASSERT_EQ(mem.kv_bytes_allocated, 0);
    vkllm_session_memory(NULL, NULL);
    vkllm_model_get_info(NULL, &mi);
    vkllm_model_get_info(m, NULL);
    vkllm_kv_pool_get_info(NULL, &pi);
    vkllm_model_file_info(NULL, &fi);
    ASSERT_EQ(fi.n_tensors, 0);
    ASSERT(vkllm_ctx_device(NULL) == NULL);
    ASSERT_EQ(vkllm_ctx_validation_messages(NULL), 0);
    ASSERT_EQ(vkllm_ctx_device_memory_used(NULL), 0);
    ASSERT_EQ(vkllm_ctx_tuning_value(NULL, 0), 0);
    struct vkllm_make_model_params mp;
    ASSERT_STATUS(vkllm_make_model_preset(NULL, &mp), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_make_model_preset("tiny", NULL), VKLLM_STATUS_INVALID_ARGUMENT);
    printf("one gen per session; empty-prompt continuation and NULL handles refused\n");
}

/* The header's promises on bad input: refusals leave the session as it was (a bad id in a later
 * micro-batch, a context overflow before the logits are sized, embed's checks); NULL sessions
 * and params are refused; n_predict INT32_MAX runs to the end of the context; top_k 1 is greedy
 * only where the order runs top_k. (Two fixes are not observable here: vkllm_generate freed an
 * unset handle after such a refusal, and n_predict INT32_MAX asked for a 16 GiB array, which
 * this machine's overcommit grants untouched.) */
static void check_contracts(vkllm_model_t m) {
    struct vkllm_kv_pool_params pp = vkllm_kv_pool_params_default();
    pp.n_ctx = 64;
    vkllm_kv_pool_t pool;
    ASSERT_OK(vkllm_kv_pool_init(m, &pp, &pool));
    struct vkllm_session_params sp = {.n_ctx = 64, .n_ubatch = 4, .pool = pool};
    vkllm_session_t s;
    ASSERT_OK(vkllm_session_init(m, &sp, &s));
    int32_t toks[24];
    for (int i = 0; i < 24; i++) toks[i] = 1 + (i * 37) % 500;
    ASSERT_OK(vkllm_session_eval(s, toks, 3, 0));
    struct vkllm_kv_pool_info before, after;
    vkllm_kv_pool_get_info(pool, &before);
    toks[18] = 100000; /* the fifth micro-batch's, in the cache's second block */
    ASSERT_STATUS(vkllm_session_eval(s, toks, 20, 1), VKLLM_STATUS_INVALID_ARGUMENT);
    vkllm_kv_pool_get_info(pool, &after);
    ASSERT_EQ(vkllm_session_n_past(s), 3);
    ASSERT_EQ(after.n_held, before.n_held); /* no block reserved for the refused positions */
    ASSERT_STATUS(vkllm_session_eval(s, toks, 4000000000u, 1), VKLLM_STATUS_CONTEXT_FULL); /* not OOM */
    float emb[512];
    ASSERT_STATUS(vkllm_session_embed(s, toks, 20, VKLLM_POOLING_MEAN, 1, emb), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_session_embed(s, toks, 65, VKLLM_POOLING_MEAN, 1, emb), VKLLM_STATUS_CONTEXT_FULL);
    ASSERT_STATUS(vkllm_session_embed(s, toks, 0, VKLLM_POOLING_MEAN, 1, emb), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(vkllm_session_n_past(s), 3); /* all refused before the session was touched */
    toks[18] = 11;
    struct vkllm_generate_params p = vkllm_generate_params_default();
    struct vkllm_generate_stats st;
    ASSERT_STATUS(vkllm_generate(NULL, &p, NULL, NULL, &st), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm_generate(s, NULL, NULL, NULL, &st), VKLLM_STATUS_INVALID_ARGUMENT);
    p.prompt = "Once upon a time";
    p.n_predict = INT32_MAX;
    p.sampling.temperature = 0;
    struct text t;
    gen_text(s, &p, &t, &st);
    ASSERT(st.stop_reason == VKLLM_STOP_CONTEXT_FULL || st.stop_reason == VKLLM_STOP_EOS);
    /* top_k 1 outside the order changes nothing: the same text as top_k 40, alone on the device
     * path or not (it took the device argmax) */
    p.n_predict = 30;
    p.sampling.temperature = 1.0f;
    p.sampling.seed = 7, p.sampling.has_seed = 1;
    p.sampling.order = "temperature";
    struct text k1, k40;
    p.sampling.top_k = 1;
    gen_text(s, &p, &k1, NULL);
    p.sampling.top_k = 40;
    gen_text(s, &p, &k40, NULL);
    ASSERT_STREQ(k1.buf, k40.buf);
    vkllm_session_free(s);
    vkllm_kv_pool_free(pool);
    printf("contracts: refusals leave sessions as they were; n_predict bounded; top_k outside the order\n");
}

static void check_grammar(vkllm_model_t m) {
    ASSERT_OK(vkllm_grammar_validate("root ::= [a-z]+", 0));
    ASSERT_STATUS(vkllm_grammar_validate("root ::= [a-z", 0), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(vkllm_last_error(), "line 1"));
    vkllm_session_t s;
    ASSERT_OK(vkllm_session_init(m, NULL, &s));
    struct vkllm_generate_params p = vkllm_generate_params_default();
    struct vkllm_generate_stats st;
    struct text free_text, t;
    p.prompt = "Once upon a time";
    p.n_predict = 60;
    p.sampling.temperature = 0;
    gen_text(s, &p, &free_text, &st);
    p.grammar = "root ::= .*";
    gen_text(s, &p, &t, &st);
    if (strcmp(t.buf, free_text.buf)) FAILF("grammar .* changed the greedy text:\n%s\nwant\n%s", t.buf, free_text.buf);
    /* a sentence of the grammar, stopping by itself */
    p.grammar = "root ::= \" \" word (\" \" word){2,4} \".\"\nword ::= [a-z]+";
    gen_text(s, &p, &t, &st);
    int words = 0;
    for (const char *c = t.buf; *c; c++) words += *c == ' ';
    ASSERT(st.stop_reason == VKLLM_STOP_EOS && words >= 3 && words <= 5 && t.buf[t.len - 1] == '.');
    for (const char *c = t.buf; *c; c++) ASSERT((*c >= 'a' && *c <= 'z') || *c == ' ' || *c == '.');
    /* closing within the budget: the shortest finish is 2 characters */
    p.grammar = "root ::= \"(\" [a-z ]* \")\"";
    p.sampling.temperature = 0.9f;
    p.sampling.has_seed = 1;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        p.sampling.seed = seed;
        p.n_predict = (int32_t)(2 + seed % 3);
        gen_text(s, &p, &t, &st);
        if (st.stop_reason != VKLLM_STOP_EOS || t.buf[0] != '(' || t.buf[t.len - 1] != ')' ||
            st.n_generated > (uint32_t)p.n_predict)
            FAILF("seed %llu n_predict %d: '%s' did not close in time (%s)", (unsigned long long)seed, p.n_predict,
                  t.buf, vkllm_stop_reason_str(st.stop_reason));
    }
    p.n_predict = 1; /* too short to finish: as far as it goes */
    gen_text(s, &p, &t, &st);
    ASSERT(st.stop_reason == VKLLM_STOP_MAX_TOKENS && !strcmp(t.buf, "("));
    p.json_object = 1;
    vkllm_gen_t g = NULL;
    ASSERT_STATUS(vkllm_gen_start(s, &p, NULL, NULL, &g), VKLLM_STATUS_INVALID_ARGUMENT);
    p.json_object = 0;
    p.grammar = "root ::= x";
    ASSERT_STATUS(vkllm_gen_start(s, &p, NULL, NULL, &g), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(vkllm_last_error(), "'x' is used but never defined"));
    vkllm_session_free(s);
    printf("grammar: free grammar = free text, sentences, closing within n_predict: ok\n");
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all";
    int stories = !strcmp(which, "stories") || !strcmp(which, "all");
    int random = !strcmp(which, "random") || !strcmp(which, "all");
    if (stories) vkllm_test_model("stories260K.gguf"); /* SKIPPED before any work when absent */
    vkllm_log_set(log_cb, NULL);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vkllm-test-gen-XXXXXX");
    ASSERT(mkdtemp(tmpdir));
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    cp.validate = 1;
    ASSERT_OK(vkllm_ctx_init(&cp, &ctx));
    const uint64_t before = vkllm_ctx_device_memory_used(ctx);

    if (random) {
        static const struct req rs[] = {
            {"a b c d", 14, 0, NULL, 0}, {"hello there", 10, 0, NULL, 0},
            {"x", 12, 0.9f, NULL, 2},    {"one two three four five", 9, 0, NULL, 3},
            {"zz", 16, 0.7f, NULL, 5},
        };
        check_public_api();
        vkllm_model_t m = make_random(VKLLM__TYPE_Q8_0, VKLLM__ARCH_LLAMA, "llama-q8_0");
        check_logits(m, "llama q8_0");
        check_batch(m, rs, 5, "llama q8_0");
        check_misc(m);
        vkllm_model_free(m);
        m = make_random(VKLLM__TYPE_F16, VKLLM__ARCH_QWEN2, "qwen2-f16");
        check_logits(m, "qwen2 f16");
        vkllm_model_free(m);
        m = make_random(VKLLM__TYPE_Q4_K, VKLLM__ARCH_LLAMA, "llama-q4_K");
        check_logits(m, "llama q4_K");
        vkllm_model_free(m);
        m = make_random(VKLLM__TYPE_F16, VKLLM__ARCH_GEMMA2, "gemma2-f16");
        struct vkllm_session_params ring = {.n_ctx = 96,
                                            .n_ubatch = 8}; /* window 4 + 8 rows: rings much shorter than the prompt */
        check_share(m, &ring, "gemma2 f16 (window rings)");
        struct vkllm_session_params ring_q8 = {
            .n_ctx = 96, .n_ubatch = 8, .type_k = VKLLM_KV_Q8_0, .type_v = VKLLM_KV_Q8_0};
        check_share(m, &ring_q8, "gemma2 f16, q8_0 K/V (window rings)");
        vkllm_model_free(m);
    }
    if (stories) {
        vkllm_model_t m;
        ASSERT_OK(vkllm_model_load(ctx, vkllm_test_model("stories260K.gguf"), NULL, &m));
        check_tokens(m, "Once upon a time, there was a little girl named Lily.");
        /* the 200 greedy tokens from BOS, in a batch with two other requests */
        struct req rs[] = {
            {"", 200, 0, NULL, 0},
            {"Tom had a red ball", 60, 0, NULL, 1},
            {"The cat", 40, 0.8f, "dog", 4},
        };
        check_batch(m, rs, 3, "stories260K");
        check_prompt_cache(m);
        check_token_probs(m, vkllm_test_model("stories260K.gguf"));
        check_grammar(m);
        check_ownership(m);
        check_contracts(m);
        check_share(m, NULL, "stories260K");
        check_pool(m);
        vkllm_session_t s;
        ASSERT_OK(vkllm_session_init(m, NULL, &s));
        struct text t = {0};
        struct vkllm_generate_params p = vkllm_generate_params_default();
        p.prompt = "";
        p.n_predict = 200;
        p.sampling.temperature = 0;
        vkllm_gen_t g;
        ASSERT_OK(vkllm_gen_start(s, &p, on_text, &t, &g));
        while (!vkllm_gen_done(g)) ASSERT_OK(vkllm_gen_step(&g, 1));
        char *want = vkllm_test_stories_expected();
        if (strncmp(want, t.buf, strlen(t.buf)) || strlen(t.buf) + 2 < strlen(want))
            FAILF("stories260K via vkllm_gen: \"%s\"\nwant \"%s\"", t.buf, want);
        free(want);
        vkllm_gen_free(g);
        vkllm_session_free(s);
        vkllm_model_free(m);
        printf("stories260K: the 200-token text through vkllm_gen_*\n");
    }

    ASSERT_EQ(vkllm_ctx_device_memory_used(ctx), before);
    uint64_t vmsg = vkllm_ctx_validation_messages(ctx);
    vkllm_ctx_free(ctx);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", tmpdir);
    if (vmsg) FAILF("%llu validation message(s)", (unsigned long long)vmsg);
    printf("ok\n");
    return 0;
}
