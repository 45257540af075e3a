/* test_kv_events.c - the KV pool's events (vkllm_kv_pool_set_events, issue 39 item 4) through the
 * library alone, on stories260K: a prompt's full blocks are stored in order, each with its
 * parent's key, their tokens the prompt's; a longer prompt on a small pool evicts them (removed,
 * each key once, only keys stored before); the keys stored and not removed are exactly the
 * pool's cached blocks (what a router would believe is what the pool holds); fn NULL stops the
 * events; the pool's end clears all. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define MAX_EV 256

struct ev {
    enum vkllm_kv_event_type type;
    uint64_t key, parent;
    int32_t tokens[VKLLM_KV_BLOCK];
    uint32_t n_tokens;
};

static struct ev evs[MAX_EV];
static int n_evs;

static void on_event(const struct vkllm_kv_event *e, void *ud) {
    ASSERT(ud == (void *)evs);
    ASSERT(n_evs < MAX_EV);
    struct ev *x = &evs[n_evs++];
    x->type = e->type, x->key = e->key, x->parent = e->parent, x->n_tokens = e->n_tokens;
    if (e->type == VKLLM_KV_EVENT_STORED) {
        ASSERT(e->tokens && e->n_tokens == VKLLM_KV_BLOCK && e->key != 0);
        memcpy(x->tokens, e->tokens, sizeof x->tokens);
    } else {
        ASSERT(!e->tokens && e->n_tokens == 0);
    }
}

/* Keys stored and not removed since (the router's view); 0 on an event out of order. */
static int live_keys(uint64_t *live, int *n_live) {
    *n_live = 0;
    for (int i = 0; i < n_evs; i++) {
        int at = -1;
        for (int j = 0; j < *n_live; j++)
            if (live[j] == evs[i].key) at = j;
        if (evs[i].type == VKLLM_KV_EVENT_STORED) {
            if (at >= 0) return 0; /* stored twice */
            live[(*n_live)++] = evs[i].key;
        } else if (evs[i].type == VKLLM_KV_EVENT_REMOVED) {
            if (at < 0) return 0; /* removed unstored */
            live[at] = live[--*n_live];
        } else {
            *n_live = 0;
        }
    }
    return 1;
}

/* 34 and 69 tokens (stories260K's 512-token vocabulary) */
static const char *prompt_a =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her mom.";
static const char *prompt_b = "Tom had a big red ball. He liked to throw it high in the sky and catch it. One day the "
                              "ball went over the fence and into the garden of an old man. Tom was sad.";

static uint32_t generate(vkllm_model_t m, vkllm_session_t s, const char *prompt, int32_t *ids, size_t cap) {
    size_t n = 0;
    ASSERT_OK(vkllm_tokenize(m, prompt, 0, -1, 0, ids, cap, &n));
    ASSERT(n <= cap);
    struct vkllm_generate_params p = vkllm_generate_params_default();
    p.prompt = prompt;
    p.n_predict = 2;
    struct vkllm_generate_stats st;
    ASSERT_OK(vkllm_session_truncate(s, 0));
    ASSERT_OK(vkllm_generate(s, &p, NULL, NULL, &st));
    ASSERT_EQ(st.n_prompt, n);
    ASSERT_OK(vkllm_session_truncate(s, 0)); /* its blocks released: cached, findable until evicted */
    return (uint32_t)n;
}

int main(void) {
    const char *path = vkllm_test_model("stories260K.gguf");
    vkllm_ctx_t ctx;
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    cp.validate = 1;
    ASSERT_OK(vkllm_ctx_init(&cp, &ctx));
    vkllm_model_t m;
    ASSERT_OK(vkllm_model_load(ctx, path, NULL, &m));

    /* a pool of 6 blocks: prompt b's 5 and a's 2 do not fit together */
    struct vkllm_kv_pool_params pp = vkllm_kv_pool_params_default();
    pp.n_ctx = 6 * VKLLM_KV_BLOCK, pp.n_seq = 1;
    vkllm_kv_pool_t pool;
    ASSERT_OK(vkllm_kv_pool_init(m, &pp, &pool));
    struct vkllm_kv_pool_info info;
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT_EQ(info.n_blocks, 6);
    vkllm_kv_pool_set_events(NULL, on_event, evs); /* no pool: nothing */
    vkllm_kv_pool_set_events(pool, on_event, evs);
    struct vkllm_session_params sp = {.n_ctx = 6 * VKLLM_KV_BLOCK, .n_ubatch = 32, .pool = pool};
    vkllm_session_t s;
    ASSERT_OK(vkllm_session_init(m, &sp, &s));

    /* prompt a: its full blocks stored in order, chained, its tokens */
    int32_t a[96], b[96];
    uint32_t na = generate(m, s, prompt_a, a, 96), full_a = na / VKLLM_KV_BLOCK;
    ASSERT(full_a >= 2 && na + 2 <= 3 * VKLLM_KV_BLOCK);
    ASSERT(n_evs >= (int)full_a);
    for (uint32_t i = 0; i < full_a; i++) {
        ASSERT_EQ(evs[i].type, VKLLM_KV_EVENT_STORED);
        ASSERT(evs[i].parent == (i ? evs[i - 1].key : 0));
        ASSERT(!memcmp(evs[i].tokens, a + i * VKLLM_KV_BLOCK, sizeof evs[i].tokens));
    }
    for (int i = 0; i < n_evs; i++) ASSERT_EQ(evs[i].type, VKLLM_KV_EVENT_STORED);
    uint64_t live[MAX_EV];
    int n_live;
    ASSERT(live_keys(live, &n_live));
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT_EQ(n_live, info.n_cached);
    const int after_a = n_evs;

    /* the same prompt again: found, nothing new stored */
    ASSERT_EQ(generate(m, s, prompt_a, a, 96), na);
    ASSERT_EQ(n_evs, after_a);

    /* prompt b needs 5 blocks and finds none: a's are evicted (removed), b's stored */
    uint32_t nb = generate(m, s, prompt_b, b, 96);
    ASSERT(nb > 4 * VKLLM_KV_BLOCK && nb + 2 <= 5 * VKLLM_KV_BLOCK);
    int removed = 0, stored_b = 0;
    uint64_t last_b = 0;
    for (int i = after_a; i < n_evs; i++) {
        if (evs[i].type == VKLLM_KV_EVENT_REMOVED) {
            int was_a = 0;
            for (int j = 0; j < after_a; j++) was_a |= evs[j].key == evs[i].key;
            ASSERT(was_a);
            removed++;
        } else {
            ASSERT_EQ(evs[i].type, VKLLM_KV_EVENT_STORED);
            ASSERT(evs[i].parent == last_b);
            last_b = evs[i].key;
            ASSERT(!memcmp(evs[i].tokens, b + stored_b * VKLLM_KV_BLOCK, sizeof evs[i].tokens));
            stored_b++;
        }
    }
    ASSERT(removed >= 1);
    ASSERT_EQ(stored_b, nb / VKLLM_KV_BLOCK);
    ASSERT(live_keys(live, &n_live));
    vkllm_kv_pool_get_info(pool, &info);
    ASSERT_EQ(n_live, info.n_cached);
    ASSERT_EQ((uint64_t)removed, info.evicted_blocks);

    /* fn NULL: no more events */
    const int before_stop = n_evs;
    vkllm_kv_pool_set_events(pool, NULL, evs);
    generate(m, s, prompt_a, a, 96);
    ASSERT_EQ(n_evs, before_stop);
    vkllm_kv_pool_set_events(pool, on_event, evs);

    /* the pool's end: cleared, once, when its last session goes */
    vkllm_kv_pool_free(pool);
    ASSERT_EQ(n_evs, before_stop);
    vkllm_session_free(s);
    ASSERT_EQ(n_evs, before_stop + 1);
    ASSERT_EQ(evs[n_evs - 1].type, VKLLM_KV_EVENT_CLEARED);
    printf("kv events: prompt of %u tokens stored as %u chained blocks, one of %u evicted %d (removed), %d "
           "stored; the router's view equals the pool's cache\n",
           na, full_a, nb, removed, stored_b);
    vkllm_model_free(m);
    vkllm_ctx_free(ctx);
    return 0;
}
