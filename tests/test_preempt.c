/* test_preempt.c - generations on a KV pool too small for all of them at once (issue 39 item 2),
 * through the library alone: vkllm_gen_step preempts the youngest when the pool runs dry and
 * recomputes it later, so every reply is whole and equal to the same request alone (greedy and
 * seeded), none stops KV_FULL; a new generation waits (KV_FULL from vkllm_gen_start) while a
 * preempted one does; the prefix lookups count each started prompt once. stories260K. */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "harness.h"
#include "kv_cache.h"

#define N_REQ 6

struct text {
    char buf[4096];
    size_t len;
};

static int on_text(const char *t, size_t n, void *ud) {
    struct text *x = ud;
    ASSERT(x->len + n < sizeof x->buf);
    memcpy(x->buf + x->len, t, n);
    x->len += n;
    x->buf[x->len] = 0;
    return 0;
}

static const char *prompts[N_REQ] = {
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.",
    "Tom had a big red ball. He liked to throw it high in the sky and catch it.",
    "The cat sat on the mat and looked at the big dog. The dog was sleeping.",
    "One day, a little bird flew into the garden. It was looking for food.",
    "Sam and his mom went to the park. They saw a tall tree with many apples.",
    "There was a small boat on the lake. A frog sat on the boat and sang a song.",
};

static struct vkllm_generate_params params(int i) {
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.prompt = prompts[i];
    p.n_predict = 64;
    p.sampling.temperature = i % 3 == 2 ? 0.9f : 0; /* two seeded requests: the draws carry on */
    p.sampling.seed = 42 + (uint32_t)i;
    p.sampling.has_seed = 1;
    return p;
}

int main(void) {
    const char *path = vkllm_test_model("stories260K.gguf");
    vkllm_ctx_t ctx;
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    cp.validate = 1;
    ASSERT_OK(vkllm_ctx_init(&cp, &ctx));
    vkllm_model_t m;
    ASSERT_OK(vkllm_model_load(ctx, path, NULL, &m));

    /* each request alone, on a cache of its own */
    static struct text alone[N_REQ], together[N_REQ];
    enum vkllm_stop_reason why[N_REQ];
    struct vkllm_session_params own = {.n_ctx = 256, .n_ubatch = 32};
    vkllm_session_t fresh;
    ASSERT_OK(vkllm_session_init(m, &own, &fresh));
    uint32_t n_prompt = 0;
    for (int i = 0; i < N_REQ; i++) {
        struct vkllm_generate_params p = params(i);
        struct vkllm_generate_stats st;
        ASSERT_OK(vkllm_session_truncate(fresh, 0));
        ASSERT_OK(vkllm_generate(fresh, &p, on_text, &alone[i], &st));
        why[i] = st.stop_reason;
        ASSERT(why[i] == VKLLM_STOP_MAX_TOKENS || why[i] == VKLLM_STOP_EOS);
        n_prompt += st.n_prompt;
    }
    vkllm_session_free(fresh);

    /* together on a pool of 14 blocks (224 positions): each request takes up to 6 */
    struct vkllm_kv_pool_params pp = vkllm_kv_pool_params_default();
    pp.n_ctx = 224, pp.n_seq = 1;
    vkllm_kv_pool_t pool;
    ASSERT_OK(vkllm_kv_pool_init(m, &pp, &pool));
    struct vkllm_kv_pool_info info;
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT_EQ(info.n_blocks, 14);
    struct vkllm_session_params sp = {.n_ctx = 256, .n_ubatch = 32, .pool = pool};
    vkllm_session_t s[N_REQ];
    vkllm_gen_t g[N_REQ];
    uint32_t started = 0, refused = 0, max_waiting = 0;
    enum vkllm_stop_reason got[N_REQ];
    int freed[N_REQ] = {0};
    for (int i = 0; i < N_REQ; i++) ASSERT_OK(vkllm_session_init(m, &sp, &s[i]));
    for (int step = 0; step < 4000; step++) {
        /* start the next request when the pool takes it (KV_FULL: not yet), as the server does */
        if (started < N_REQ) {
            struct vkllm_generate_params p = params((int)started);
            vkllm_status st = vkllm_gen_start(s[started], &p, on_text, &together[started], &g[started]);
            if (st == VKLLM_STATUS_OK) {
                started++;
            } else {
                ASSERT_EQ(st, VKLLM_STATUS_KV_FULL);
                refused++;
            }
        }
        uint32_t running, waiting;
        uint64_t preempted;
        vkllm__kv_pool_gens_get(pool->p, &running, &waiting, &preempted);
        if (waiting > max_waiting) max_waiting = waiting;
        /* a finished one's session gives its blocks back (the server's idle slots, reclaimed) */
        vkllm_gen_t live[N_REQ];
        uint32_t n_live = 0;
        for (uint32_t i = 0; i < started; i++) {
            if (!freed[i] && vkllm_gen_done(g[i])) {
                got[i] = vkllm_gen_stop_reason(g[i]);
                vkllm_gen_free(g[i]);
                ASSERT_OK(vkllm_session_truncate(s[i], 0));
                freed[i] = 1;
            }
            if (!freed[i]) live[n_live++] = g[i];
        }
        if (started == N_REQ && !n_live) break;
        if (n_live) ASSERT_OK(vkllm_gen_step(live, n_live));
    }
    ASSERT_EQ(started, N_REQ);
    uint32_t running, waiting;
    uint64_t preempted;
    vkllm__kv_pool_gens_get(pool->p, &running, &waiting, &preempted);
    ASSERT(preempted > 0 && running == 0 && waiting == 0); /* the pool ran dry; nobody left counted */
    for (int i = 0; i < N_REQ; i++) {
        ASSERT(freed[i]);
        if (got[i] != why[i] || strcmp(together[i].buf, alone[i].buf))
            FAILF("request %d (%s): %s \"%s\"; alone %s \"%s\"", i, i % 3 == 2 ? "seeded" : "greedy",
                  vkllm_stop_reason_str(got[i]), together[i].buf, vkllm_stop_reason_str(why[i]), alone[i].buf);
    }
    vkllm_kv_pool_get_info(pool, &info);
    /* each started prompt looked up once, however often its start was refused */
    ASSERT_EQ(info.queried_tokens, n_prompt);
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT(info.n_held == 0 && info.n_free + info.n_cached == info.n_blocks);
    printf("preempt: %d requests of 64 tokens on a pool of %u blocks: %llu preemptions (at most %u waiting at once), "
           "%u starts refused while the pool was short, every reply whole and equal to the request alone\n",
           N_REQ, info.n_blocks, (unsigned long long)preempted, max_waiting, refused);
    for (int i = 0; i < N_REQ; i++) vkllm_session_free(s[i]);
    vkllm_kv_pool_free(pool);
    vkllm_model_free(m);
    vkllm_ctx_free(ctx);
    return 0;
}
