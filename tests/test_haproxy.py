#!/usr/bin/env python3
"""deploy/haproxy.cfg, as shipped, in front of two `vkllm serve` replicas (stories260K).

test_haproxy.py VKLLM

HAProxy is Debian 12's (2.6), fetched beside the system by scripts/fetch-debs.sh into the build
folder (haproxy-deb/, once) and run with LD_LIBRARY_PATH set to what it unpacked; VKLLM_HAPROXY
names another haproxy binary instead. SKIPPED with the reason where it cannot be fetched or run
(a FAIL when VKLLM_REQUIRE_TEST_MODELS=1, as in CI). Checks:
  - session affinity: four conversations (X-Session-Id) of three turns each, one after another;
    every turn of a conversation is answered by the same replica (each replica's /metrics
    counts), and from the second turn usage.prompt_tokens_details.cached_tokens covers the
    previous turn's prompt rounded down to a 16-token block;
  - the 503 retry: with one replica's slot busy and its queue full it answers 503 with
    Retry-After: 1; a request of a conversation that hashes to it still gets 200, from the
    other replica (the busy one counts one more rejection);
  - failover: the replica of one conversation is killed (SIGKILL) between requests; the next
    turn of every conversation, sent at once, gets 200 (none lost, before any health check
    could notice), and the moved conversation is cached again on the survivor from its next turn.
"""
import atexit, glob, json, os, signal, socket, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from serve_proc import Server, check, failures, finish, model, request, skip  # noqa: E402

VKLLM = sys.argv[1]
REPO = os.path.dirname(HERE)
MODEL = model()
BLOCK = 16  # the KV pool's block: cached_tokens counts whole blocks


# --- HAProxy: Debian 12's, beside the system ------------------------------------------------------

def find_haproxy():
    """(argv0, env) of a haproxy that runs, or skip() with why not."""
    if os.environ.get("VKLLM_HAPROXY"):
        return os.environ["VKLLM_HAPROXY"], dict(os.environ)
    dest = os.path.join(os.path.dirname(os.path.abspath(VKLLM)), "haproxy-deb")
    r = subprocess.run(["sh", os.path.join(REPO, "scripts", "fetch-debs.sh"), "bookworm", dest, "haproxy",
                        "liblua5.3-0", "libopentracing-c-wrapper0", "libopentracing1"], capture_output=True, text=True)
    if r.returncode != 0:
        skip("cannot fetch Debian 12's haproxy with scripts/fetch-debs.sh: " + (r.stderr.strip() or r.stdout.strip())[-400:])
    exe = os.path.join(dest, "root", "usr", "sbin", "haproxy")
    libs = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(dest, "root", "usr", "lib", "**", "*.so*"), recursive=True)})
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(libs + [os.environ.get("LD_LIBRARY_PATH", "")]).rstrip(":"))
    return exe, env


HAPROXY, HAPROXY_ENV = find_haproxy()
try:
    v = subprocess.run([HAPROXY, "-v"], capture_output=True, text=True, env=HAPROXY_ENV, timeout=30)
    ok = v.returncode == 0 and "HAProxy version" in v.stdout
    why = (v.stdout + v.stderr).strip()[-400:]
except OSError as e:
    ok, why = False, str(e)
if not ok:
    skip("haproxy (%s) does not run here: %s" % (HAPROXY, why))
print(v.stdout.splitlines()[0], flush=True)

# --- the replicas and the proxy ---------------------------------------------------------------------

procs = []


class Replica(Server):
    def __init__(self):
        # one slot, one queue place: a second request waits, a third gets 503
        super().__init__(VKLLM, MODEL, "--parallel", "1", "--queue", "1", "-c", "1024")
        procs.append(self.p)

    def completions(self):
        return self.metrics().get('vkllm_requests_total{endpoint="/v1/completions"}', 0)


def stop_all():
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(30)


atexit.register(stop_all)  # whatever ends the test, no replica or proxy is left behind

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


t0 = time.monotonic()
reps = [Replica(), Replica()]
PROXY = free_port()
env = dict(HAPROXY_ENV, VKLLM_LISTEN="127.0.0.1:%d" % PROXY, VKLLM_REPLICA1="127.0.0.1:%d" % reps[0].port,
           VKLLM_REPLICA2="127.0.0.1:%d" % reps[1].port)
cfg = os.path.join(REPO, "deploy", "haproxy.cfg")
chk = subprocess.run([HAPROXY, "-c", "-f", cfg], capture_output=True, text=True, env=env)
check(chk.returncode == 0 and "WARNING" not in chk.stdout + chk.stderr,
      "haproxy -c accepts deploy/haproxy.cfg without warnings: %s" % (chk.stdout + chk.stderr)[-1000:])
hap = subprocess.Popen([HAPROXY, "-db", "-f", cfg], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
procs.append(hap)
hap_lines = []
threading.Thread(target=lambda: [hap_lines.append(l) for l in hap.stdout], daemon=True).start()
for _ in range(200):  # until it listens and both replicas pass a health check
    try:
        if request(PROXY, "GET", "/v1/models", timeout=5)[0] == 200:
            break
    except OSError:
        pass
    time.sleep(0.05)
time.sleep(1.2)  # inter 1s: each replica checked once


def turn(session, prompt, what):
    """One greedy completion through the proxy: (status, prompt_tokens, cached_tokens, text, replica index)."""
    before = [r.completions() if r.p.poll() is None else 0 for r in reps]
    st, resp, out = request(PROXY, "POST", "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0},
                            {"X-Session-Id": session})
    after = [r.completions() if r.p.poll() is None else 0 for r in reps]
    served = [i for i in range(2) if after[i] > before[i]]
    if not check(st == 200, "%s: 200 through the proxy, got %s %s" % (what, st, out[:300])):
        return st, 0, 0, "", served
    j = json.loads(out)
    u = j["usage"]
    return st, u["prompt_tokens"], u.get("prompt_tokens_details", {}).get("cached_tokens", 0), j["choices"][0]["text"], served


STARTS = {"alice": "Once upon a time, there was a little girl named Lily. She loved to play in the park with",
          "bob": "Tom had a big red ball. One day he took it to the beach and threw it into the",
          "carol": "The cat sat on the mat and looked at the bird in the tree. The bird sang a",
          "dave": "Sam and his mom went to the store to buy some milk. On the way they saw a"}
convo = {s: STARTS[s] for s in STARTS}
home = {}


def next_turn(s, what):
    st, n, cached, text, served = turn(s, convo[s], what)
    convo[s] += text + " Then"
    return st, n, cached, served


# --- 1. session affinity --------------------------------------------------------------------------
for s in STARTS:
    prev = None
    for k in range(3):
        st, n, cached, served = next_turn(s, "%s turn %d" % (s, k + 1))
        check(len(served) == 1, "%s turn %d: answered by one replica: %s" % (s, k + 1, served))
        if served:
            home.setdefault(s, served[0])
            check(served[0] == home[s], "%s turn %d: the same replica as turn 1 (r%d), got r%d" % (s, k + 1, home[s] + 1, served[0] + 1))
        if prev is not None:
            check(cached >= prev // BLOCK * BLOCK and cached > 0,
                  "%s turn %d: cached_tokens %d covers the previous prompt's %d tokens (whole blocks)" % (s, k + 1, cached, prev))
        print("affinity: %s turn %d on r%s: prompt %d, cached %d" % (s, k + 1, served[0] + 1 if served else "?", n, cached), flush=True)
        prev = n
print("affinity: sessions per replica: %s" % {("r%d" % (i + 1)): [s for s in home if home[s] == i] for i in range(2)}, flush=True)

# --- 2. a busy replica's 503 is retried on the other ---------------------------------------------
victim = home.get("alice", 0)
busy, other = reps[victim], reps[1 - victim]
hold = {"prompt": "Once", "max_tokens": 1000, "temperature": 0, "logit_bias": {"2": -100}, "stream": True}  # 2: EOS
socks = []
for i in range(2):  # the slot's request, then the queue's
    data = json.dumps(hold).encode()
    s = socket.create_connection(("127.0.0.1", busy.port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    socks.append(s)
    if i == 0:
        got = b""
        while b"data: " not in got:
            more = s.recv(4096)
            if not more:
                break
            got += more
deadline, steady = time.monotonic() + 20, 0
while time.monotonic() < deadline and steady < 3:  # three reads in a row: one running, one waiting
    m = busy.metrics()
    steady = steady + 1 if m.get("vkllm_slots_busy") == 1 and m.get("vkllm_queue_length") == 1 else 0
    time.sleep(0.05)
check(m.get("vkllm_slots_busy") == 1 and m.get("vkllm_queue_length") == 1, "the busy replica: slot busy, queue full (%s, %s)" %
      (m.get("vkllm_slots_busy"), m.get("vkllm_queue_length")))
st, resp, out = request(busy.port, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
check(st == 503 and resp.getheader("Retry-After") == "1", "directly, the busy replica answers 503 with Retry-After: 1: %s %s" %
      (st, resp.getheader("Retry-After")))
rejected = busy.metrics().get("vkllm_requests_rejected_total", 0)
other_before = other.completions()
st, n, cached, text, served = turn("alice", convo["alice"], "alice while r%d is busy" % (victim + 1))
check(st == 200 and other.completions() == other_before + 1,
      "a request hashed to the busy replica is retried on the other: %s, other's count %s -> %s" % (st, other_before, other.completions()))
check(busy.metrics().get("vkllm_requests_rejected_total", 0) == rejected + 1,
      "the busy replica answered it 503 once (rejected %s -> %s)" % (rejected, busy.metrics().get("vkllm_requests_rejected_total")))
for s in socks:
    s.close()
deadline = time.monotonic() + 30
while time.monotonic() < deadline and busy.metrics().get("vkllm_slots_busy") != 0:
    time.sleep(0.05)
print("503 retry: alice's request went to r%d while r%d was busy" % (2 - victim, victim + 1), flush=True)

# --- 3. a replica killed between requests: nothing lost -------------------------------------------
busy.p.send_signal(signal.SIGKILL)
busy.p.wait(30)
# one after another, as the turns of conversations come: alice's two first (the survivor then
# holds her new prefix), then every other conversation's next turn
results = {s: next_turn(s, "%s after r%d died" % (s, victim + 1)) for s in ["alice"]}
st, n, cached, served = next_turn("alice", "alice on the survivor")
results["alice again"] = (st, n, cached, served)
prev = results["alice"][1]
check(st == 200 and cached >= prev // BLOCK * BLOCK and cached > 0,
      "alice, moved to r%d, is cached there from her next turn: cached %d of the previous %d" % (2 - victim, cached, prev))
for s in STARTS:
    if s != "alice":
        results[s] = next_turn(s, "%s after r%d died" % (s, victim + 1))
lost = [s for s in results if results[s][0] != 200]
check(not lost, "every request got 200 after r%d died: lost %s" % (victim + 1, lost))
check(all(r[3] == [1 - victim] for r in results.values()), "all answered by the survivor r%d: %s" %
      (2 - victim, {s: r[3] for s, r in results.items()}))
moved = [s for s in STARTS if home.get(s) == victim]
print("failover: %d requests after the kill, %d lost; moved %s; alice's next turn cached %d of %d" %
      (len(results), len(lost), moved, cached, prev), flush=True)

hap.send_signal(signal.SIGTERM)
try:
    hap.wait(10)
except subprocess.TimeoutExpired:
    hap.kill()
other.stop("the surviving replica")
stop_all()
if failures:
    print("haproxy's output:\n" + "".join(hap_lines)[-3000:])
finish("ok: affinity, 503 retry, failover through deploy/haproxy.cfg (%.1f s)" % (time.monotonic() - t0))
