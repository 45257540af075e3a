#!/usr/bin/env python3
"""`vkllm serve`'s KV pool on stories260K: the prefix cache across conversations, and preemption
under memory pressure (issue 39 items 1 and 2).

  test_prefix_cache.py VKLLM          three conversations of four turns each, interleaved on
                                      --parallel 2: from its second turn each turn finds at least its
                                      previous prompt (whole blocks) cached, and every text equals the
                                      conversation run alone; then X, Y, X again. Then the pressure
                                      test, scaled down: --parallel 8 --kv-cache-mb 1, 40 requests of
                                      long shared-prefix prompts, every reply complete and equal to
                                      the reply alone; the pool's metrics stay within the pool and
                                      count each prompt once, vkllm_requests_preempted_total each
                                      preemption.
  test_prefix_cache.py VKLLM full     the pressure test with 200 requests.
"""
import json, os, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_proc  # noqa: E402
from serve_proc import check, failures  # noqa: E402

VKLLM = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "main"
MODEL = serve_proc.model()
BLOCK = 16


class Server(serve_proc.Server):
    def __init__(self, *args, env=None):
        super().__init__(VKLLM, MODEL, *args, env=env)

    def post(self, path, body):
        st, _, out = serve_proc.request(self.port, "POST", path, body, timeout=600)
        return st, json.loads(out) if out else None


def complete(srv, prompt, max_tokens, retry=False):
    """A greedy completion: (text, finish_reason, usage); 503s retried when asked."""
    while True:
        st, j = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
        if st == 503 and retry:
            time.sleep(0.05)
            continue
        if not check(st == 200, "completion: HTTP %s %s" % (st, j)):
            return None, None, {}
        return j["choices"][0]["text"], j["choices"][0]["finish_reason"], j["usage"]


# --- conversations ---------------------------------------------------------------------------

OPENINGS = ["Once upon a time, there was a little girl named Lily. She loved to play with her red ball in the "
            "park near her house. One sunny day,",
            "Tom had a big brown dog called Max. Every morning they walked to the river and looked at the fish. "
            "One morning, Max saw",
            "The old king lived in a castle on a hill. He had a golden crown and a long white beard. The king "
            "was sad because"]
TURNS = [" Then she said,", " After that, they went home and", " The next day,"]


def conversation(srv, k, log=None):
    """Conversation k's four turns on srv, each prompt the one before plus its reply and a new line;
    returns the replies. With log, (k, turn, prompt tokens, cached tokens) per turn."""
    prompt, replies = OPENINGS[k], []
    for t in range(4):
        text, _, u = complete(srv, prompt, 24)
        replies.append(text)
        if log is not None:
            log.append((k, t, u.get("prompt_tokens", 0), u.get("prompt_tokens_details", {}).get("cached_tokens", -1)))
        prompt = prompt + (text or "") + (TURNS[t] if t < 3 else "")
    return replies


def interleaved():
    solo = Server("--parallel", "1")
    alone = [conversation(solo, k) for k in range(3)]
    solo.stop("solo server")
    srv = Server("--parallel", "2")
    log, outs, threads = [], [None] * 3, []
    lock = threading.Lock()

    def run(k):
        mine = []
        outs[k] = conversation(srv, k, mine)
        with lock:
            log.extend(mine)
    for k in range(3):
        threads.append(threading.Thread(target=run, args=(k,)))
        threads[-1].start()
    for t in threads:
        t.join()
    for k in range(3):
        check(outs[k] == alone[k], "conversation %d: the text equals the conversation alone: %s vs %s" % (k, outs[k], alone[k]))
        turns = sorted(x for x in log if x[0] == k)
        for (_, t, n_prev, _), (_, _, n, cached) in zip(turns, turns[1:]):
            check(cached >= n_prev // BLOCK * BLOCK and cached < n,
                  "conversation %d turn %d: %d of %d prompt tokens cached, the previous prompt was %d" % (k, t + 2, cached, n, n_prev))
    print("interleaved: 3 conversations x 4 turns on 2 slots; (conversation, turn, prompt, cached): %s" % sorted(log), flush=True)
    srv.stop("interleaved server")
    # the case: X, then Y, then X again (and X extended) on --parallel 4
    srv = Server("--parallel", "4")
    # X, then Y, then X again (and X extended) on one server: X's blocks are still found
    x, y = OPENINGS[0] * 2, OPENINGS[1] * 2
    got = []
    for p in (x, y, x, y, x + " The end."):
        got.append(complete(srv, p, 8)[2])
    n_x = got[0]["prompt_tokens"]
    c = [u["prompt_tokens_details"]["cached_tokens"] for u in got]
    check(c[2] >= (n_x - 1) // BLOCK * BLOCK and c[3] >= (got[1]["prompt_tokens"] - 1) // BLOCK * BLOCK and
          c[4] >= n_x // BLOCK * BLOCK, "X, Y, X, Y, X extended: cached %s (X is %d tokens)" % (c, n_x))
    m = srv.metrics()
    check(m["vkllm_prefix_cache_hits_tokens_total"] > 0, "prefix cache hits counted: %s" % m["vkllm_prefix_cache_hits_tokens_total"])
    print("X, Y, X, Y, X extended: cached %s of %s" % (c, [u["prompt_tokens"] for u in got]), flush=True)
    srv.stop("X Y X server")


# --- pressure --------------------------------------------------------------------------------

PREFIX = ("Once upon a time, in a small town by the sea, there lived a kind old man who made toys for the children. "
          "Every day he sat in his shop and carved little boats, dogs and birds out of wood. ") * 3
ENDINGS = ["One day a girl named Lily came in and asked for a red boat.",
           "One day a boy named Tom came in with a broken kite.",
           "One day a cat walked into the shop and sat on the table.",
           "One day it rained so hard that the shop was full of water.",
           "One day the man found a small golden key under his chair.",
           "One day a bird flew in through the window and sang a song.",
           "One day two friends came to buy a big wooden horse.",
           "One day the mayor of the town came to see the toys.",
           "One day a little dog barked at the door until he opened it.",
           "One day the sun did not come up and the town was dark."]


def pressure(n_req):
    prompts = [PREFIX + e * 4 for e in ENDINGS]
    solo = Server("--parallel", "1")
    alone = [complete(solo, p, 80)[:2] for p in prompts]
    solo.stop("solo server")
    srv = Server("--parallel", "8", "--kv-cache-mb", "1", env={"VKLLM_LOG": "debug"})  # logs each preemption
    pool = srv.metrics()["vkllm_kv_cache_pool_bytes"]
    results, lock, nxt, peak = [], threading.Lock(), [0], [0.0]

    def client():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n_req:
                return
            text, fin, u = complete(srv, prompts[i % len(prompts)], 80, retry=True)
            with lock:
                results.append((i, text, fin, u))
    threads = [threading.Thread(target=client) for _ in range(16)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        m = srv.metrics()
        peak[0] = max(peak[0], m["vkllm_kv_cache_retained_bytes"])
        check(m["vkllm_kv_cache_retained_bytes"] <= pool, "retained %d bytes of a %d-byte pool" % (m["vkllm_kv_cache_retained_bytes"], pool))
        time.sleep(0.1)
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    cut = [r for r in results if r[2] == "length" and r[3].get("completion_tokens", 0) < 80]
    differ = [r for r in results if (r[1], r[2]) != alone[r[0] % len(prompts)]]
    check(len(results) == n_req, "pressure: %d of %d replies" % (len(results), n_req))
    check(not cut, "pressure: %d replies cut short: %s" % (len(cut), [(r[0], r[3]) for r in cut[:3]]))
    check(not differ, "pressure: %d replies differ from the reply alone: %s" % (len(differ), [(r[0], r[1], alone[r[0] % 10]) for r in differ[:2]]))
    time.sleep(0.3)
    m = srv.metrics()
    prompt_tokens = sum(r[3].get("prompt_tokens", 0) for r in results)
    check(m["vkllm_prefix_cache_queries_tokens_total"] == prompt_tokens,
          "pressure: prefix lookups count each prompt once: %d tokens counted, %d prompt tokens" %
          (m["vkllm_prefix_cache_queries_tokens_total"], prompt_tokens))
    check(m["vkllm_kv_cache_retained_bytes"] <= pool and peak[0] <= pool, "pressure: retained bytes within the pool")
    preempted = sum("preempted at" in l for l in srv.lines)
    resumed = sum(" resumed: " in l for l in srv.lines)
    check(preempted > 0 and resumed == preempted, "pressure: the pool ran dry: %d preemptions, %d resumed" % (preempted, resumed))
    waits = m.get("vkllm_kv_cache_waits_total", -1)
    check(0 <= waits <= n_req, "pressure: vkllm_kv_cache_waits_total %s counts requests, at most the %d sent" % (waits, n_req))
    check(m.get("vkllm_requests_preempted_total") == preempted,
          "pressure: vkllm_requests_preempted_total %s = the %d preemptions logged" % (m.get("vkllm_requests_preempted_total"), preempted))
    print("pressure: %d requests on 8 slots, a %d-byte pool: %d cut, %d differ, %.1f s; preempted %s; retained peak %d; "
          "prefix lookups %d tokens (prompts %d), hits %d; waited for blocks %d" %
          (n_req, pool, len(cut), len(differ), wall, preempted, peak[0],
           m["vkllm_prefix_cache_queries_tokens_total"], prompt_tokens, m["vkllm_prefix_cache_hits_tokens_total"], waits), flush=True)
    srv.stop("pressure server")


if MODE == "full":
    pressure(200)
else:
    interleaved()
    pressure(40)
if failures:
    print("%d FAILED" % len(failures))
    sys.exit(1)
print("OK")
