"""`vkllm serve --kv-events` on stories260K, read as the llm-d router reads vLLM's KV events
(issue 39 item 4): a ZeroMQ SUB socket, frames decoded with msgpack.

test_kv_events.py VKLLM

  - bound (tcp://*:*: any free port, which the server prints; the subscriber connects): three
    frames per batch, the topic kv@<host name>@<model id>, sequence numbers 0, 1, ... (8 bytes,
    big-endian), a payload [ts, [events], data_parallel_rank] with events tagged BlockStored /
    BlockRemoved / AllBlocksCleared laid out as vLLM's;
  - the BlockStored events' token ids, followed from the block whose parent is None through
    each block's parent hash, rebuild the prompt's token ids (POST /v1/completions/render) block by
    block, and a block's hashes are never stored twice without a removal between;
  - on a pool of a few blocks (--kv-cache-mb) later prompts evict earlier ones: BlockRemoved
    names hashes stored before, at least as many as vkllm_kv_cache_evicted_blocks_total, and the
    block size equals vkllm_kv_cache_block_size;
  - SIGTERM: AllBlocksCleared is the last batch;
  - connected (--kv-events tcp://127.0.0.1:PORT to a SUB that binds, as llm-d's indexer does, with
    --kv-events-topic): the events arrive under that topic.

SKIPPED (exit 77) without the model, without python3-zmq and python3-msgpack, or with a vkllm
built without libzmq and msgpack-c; a failure instead with VKLLM_REQUIRE_TEST_MODELS=1 (CI)."""
import json, os, re, socket, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_proc import Server, check, finish, model, skip  # noqa: E402

try:
    import msgpack, zmq
except ImportError:
    # Debian's python3-zmq and python3-msgpack live in its dist-packages, which another python3 of
    # the same version (pyenv's, a venv's) does not search
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import msgpack, zmq
    except ImportError:
        skip("python3-zmq and python3-msgpack are not installed (scripts/install-deps.sh --tests)")

VKLLM = sys.argv[1]
MODEL = model("stories260K.gguf")
helptext = subprocess.run([VKLLM, "serve", "--help"], capture_output=True, text=True).stdout
if "--kv-events" not in helptext or "not in this build" in helptext:
    skip("this vkllm was built without libzmq and msgpack-c (libzmq3-dev, libmsgpack-dev)")

PROMPTS = ["Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her mom.",
           "Tom had a big red ball. He liked to throw it high in the sky and catch it. One day the ball went over "
           "the fence.",
           "The cat sat on the mat and looked at the big dog. The dog was sleeping under a tree in the garden.",
           "One day, a little bird flew into the garden. It was looking for food for its babies in the nest."]
BLOCK = 16


def settle(sub):
    """Let the subscription reach the publisher, which drops what it publishes before. A SUB socket
    handles its new connection only inside calls on it (as the router's polling loop makes): poll."""
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        check(not sub.poll(50), "no event before any request")


def receive(sub, quiet=1.0, until=None):
    """Multipart messages until none came for `quiet` seconds (or `until` is true of the last)."""
    out, deadline = [], time.monotonic() + quiet
    while time.monotonic() < deadline:
        if sub.poll(50):
            out.append(sub.recv_multipart())
            deadline = time.monotonic() + quiet
            if until and until(out[-1]):
                break
    return out


def decode(frames, topic, batches, seqs):
    """One message as the router decodes it: (ts, events) appended to batches."""
    if not check(len(frames) == 3, "three frames, got %d" % len(frames)):
        return
    t, seq, payload = frames
    check(t.decode() == topic, "topic %r, expected %r" % (t, topic))
    check(len(t.decode().split("@")) == 3, "the topic splits into kv, pod and model at '@': %r" % t)
    check(len(seq) == 8, "an 8-byte sequence number: %r" % seq)
    seqs.append(int.from_bytes(seq, "big"))
    b = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    if not check(isinstance(b, list) and len(b) >= 2 and isinstance(b[0], float) and isinstance(b[1], list),
                 "payload [ts, [events], ...]: %r" % (b,)):
        return
    check(abs(b[0] - time.time()) < 600, "ts is seconds since the epoch: %r" % b[0])
    check(len(b) < 3 or b[2] in (0, None), "data_parallel_rank 0 or None: %r" % (b[2:],))
    for e in b[1]:
        check(isinstance(e, list) and e and isinstance(e[0], str), "a tagged event: %r" % (e,))
        if e[0] == "BlockStored":
            check(len(e) >= 6 and all(isinstance(h, int) for h in e[1]) and (e[2] is None or isinstance(e[2], int))
                  and len(e[3]) == len(e[1]) * e[4] and e[5] is None and (len(e) < 7 or e[6] == "GPU"),
                  "BlockStored [tag, hashes, parent, token_ids, block_size, lora_id, medium, ...]: %r" % (e,))
        elif e[0] == "BlockRemoved":
            check(len(e) >= 2 and all(isinstance(h, int) for h in e[1]) and (len(e) < 3 or e[2] == "GPU"),
                  "BlockRemoved [tag, hashes, medium]: %r" % (e,))
        else:
            check(e == ["AllBlocksCleared"], "AllBlocksCleared alone: %r" % (e,))
    batches.append(b[1])


def bound():
    # a pool of 6 blocks: four prompts of 3-4 blocks each, on one slot, evict the first ones; bound
    # to any free port (ZeroMQ's '*'), which the server prints
    srv = Server(VKLLM, MODEL, "--parallel", "1", "--kv-cache-mb", "0.06", "--kv-events", "tcp://*:*")
    topic = "kv@%s@stories260K.gguf" % socket.gethostname()
    at = [re.search(r"KV events: bound to tcp://\*:\* \(tcp://[^)]*:(\d+)\), topic (\S+)$", l) for l in srv.lines]
    at = [x for x in at if x]
    if not check(at and at[0].group(2) == topic, "the server says where it publishes: %s" % "".join(srv.lines)):
        srv.stop("kv events server")
        return
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
    sub.connect("tcp://127.0.0.1:%s" % at[0].group(1))
    settle(sub)
    m0 = srv.metrics()
    ids = []
    for p in PROMPTS:
        st, _, body = srv.request("POST", "/v1/completions/render", {"prompt": p})
        ids.append(json.loads(body)["token_ids"])
        st2, _, _ = srv.request("POST", "/v1/completions", {"prompt": p, "max_tokens": 3, "temperature": 0})
        check(st == 200 and st2 == 200, "render and completion 200: %s %s" % (st, st2))
    frames = receive(sub)
    m = srv.metrics()
    srv.stop("kv events server")
    frames += receive(sub, 2.0, until=lambda f: b"AllBlocksCleared" in f[2])
    batches, seqs = [], []
    for f in frames:
        decode(f, topic, batches, seqs)
    check(seqs == list(range(len(seqs))) and seqs, "sequence numbers 0, 1, ...: %s" % seqs)
    check(batches and batches[-1] == [["AllBlocksCleared"]], "the last batch clears all: %r" % (batches[-1:],))

    # the router's view: hash -> (parent, tokens), and which hashes are cached
    blocks, live, removed, stored = {}, set(), [], 0
    for b in batches:
        for e in b:
            if e[0] == "BlockStored":
                parent = e[2]
                check(e[4] == m["vkllm_kv_cache_block_size"] == BLOCK, "block_size %s = the gauge" % e[4])
                for i, h in enumerate(e[1]):
                    check(h not in live, "hash %x stored twice without a removal" % h)
                    blocks[h] = (parent, e[3][i * e[4]:(i + 1) * e[4]])
                    live.add(h)
                    parent = h
                    stored += 1
            elif e[0] == "BlockRemoved":
                for h in e[1]:
                    check(h in live, "removed hash %x was stored" % h)
                    live.discard(h)
                    removed.append(h)
            else:
                live.clear()
    # every prompt rebuilt: its full blocks, from the root down the parent hashes
    for k, want in enumerate(ids):
        n = len(want) // BLOCK
        chain = [h for h, (parent, toks) in blocks.items() if parent is None and toks == want[:BLOCK]]
        got = []
        while chain and len(got) < n * BLOCK:
            got += blocks[chain[-1]][1]
            nxt = [h for h, (parent, toks) in blocks.items() if parent == chain[-1] and toks == want[len(got):len(got) + BLOCK]]
            chain += nxt[:1]
            if not nxt:
                break
        check(got[:n * BLOCK] == want[:n * BLOCK],
              "prompt %d: the stored token ids rebuild its %d full blocks (%d tokens): %s vs %s" % (k, n, len(want), got, want))
    evicted = m["vkllm_kv_cache_evicted_blocks_total"] - m0["vkllm_kv_cache_evicted_blocks_total"]
    check(evicted > 0 and len(removed) >= evicted,
          "a pool of %d blocks evicts: %d removed, %d evicted" % (m["vkllm_kv_cache_blocks_total"], len(removed), evicted))
    print("bound: %d batches, %d blocks stored, %d removed (%d evicted), prompts of %s tokens rebuilt, cleared at the end"
          % (len(batches), stored, len(removed), evicted, [len(x) for x in ids]), flush=True)
    sub.close(0)
    ctx.term()


def connected():
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
    port = sub.bind_to_random_port("tcp://127.0.0.1")
    srv = Server(VKLLM, MODEL, "--parallel", "1", "--kv-events", "tcp://127.0.0.1:%d" % port,
                 "--kv-events-topic", "kv@pod-b@stories")
    settle(sub)
    st, _, _ = srv.request("POST", "/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 3, "temperature": 0})
    frames = receive(sub)
    srv.stop("kv events server (connected)")
    batches, seqs = [], []
    for f in frames:
        decode(f, "kv@pod-b@stories", batches, seqs)
    check(st == 200 and any(e[0] == "BlockStored" for b in batches for e in b),
          "connected to a SUB that binds: BlockStored under --kv-events-topic: %s" % batches)
    print("connected: %d batches under kv@pod-b@stories" % len(batches), flush=True)
    sub.close(0)
    ctx.term()


bound()
connected()
finish("OK")
