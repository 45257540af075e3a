#!/usr/bin/env python3
"""`vkllm serve` on stories260K, spoken to over HTTP on a loopback port (python3 stdlib only).

  test_serve.py VKLLM            plain and streaming replies of both endpoints (exact SSE framing),
                                 greedy text equal to `vkllm run`, request validation, API key,
                                 body limit, a prompt longer than the context, /v1/models,
                                 /tokenize + /detokenize, /metrics, disconnects freeing their slot,
                                 503 on a full queue, SIGTERM, and the load test (16 streaming
                                 clients x 4 requests, each equal to the same request alone).
  test_serve.py VKLLM servers    the checks that start servers of their own: chunked prefill under a
                                 running stream, the shared KV pool (32 slots), API keys, admission,
                                 each chat template's tools, client caps, split devices, exposure,
                                 SIGTERM during a long prefill.
  test_serve.py VKLLM openai     the official `openai` npm package (tests/openai-client) streams a
                                 chat completion and a completion, unmodified.
  test_serve.py VKLLM web        the chat page at / in headless chromium (tests/web-client/chat.mjs);
                                 leaves a screenshot, web-chat.png, in the working directory.
"""
import http.client, json, os, re, signal, socket, subprocess, sys, threading, time

VKLLM = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "main"
HERE = os.path.dirname(os.path.abspath(__file__))
REQUIRE = os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1"
models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
MODEL = os.path.join(models, "stories260K.gguf")


def skip(why):
    if REQUIRE:
        print("FAIL:", why, "(VKLLM_REQUIRE_TEST_MODELS=1)"); sys.exit(1)
    print("SKIPPED:", why); sys.exit(77)


if not os.path.exists(MODEL):
    skip("missing " + MODEL)

failures = []


def check(c, what):
    if not c:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return c


# --- the server ---------------------------------------------------------------------------------

servers = []


class Server:
    def __init__(self, *args):
        servers.append(self)
        self.p = subprocess.Popen([VKLLM, "serve", "-m", MODEL, "--port", "0"] + list(args),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = []
        ready = threading.Event()

        def drain():
            for line in self.p.stderr:
                self.lines.append(line)
                if "listening on" in line:
                    ready.set()
            ready.set()
        threading.Thread(target=drain, daemon=True).start()
        ready.wait(120)
        m = [re.search(r"listening on http://[^ ]*:(\d+)", l) for l in self.lines]
        m = [x for x in m if x]
        if not m:
            self.p.kill()
            print("".join(self.lines))
            raise SystemExit("FAIL: the server did not start")
        self.port = int(m[0].group(1))
        self.auth = {}

    def conn(self, timeout=300):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def stop(self, what, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        try:
            rc = self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "timeout"
        time.sleep(0.1)
        check(rc == 0, "%s: SIGTERM/SIGINT exits 0 (validation layer silent), got %s: %s" % (what, rc, "".join(self.lines)[-2000:]))
        check(any("shutting down" in l for l in self.lines), what + ": says it shuts down")


def request(srv, method, path, body=None, headers=None, raw=None):
    c = srv.conn()
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    try:
        j = json.loads(out)
    except ValueError:
        j = None
    return r.status, r, j, out


def stream(srv, path, body, headers=None, on_event=None):
    """POST a streaming request; returns (status, content type, events with arrival times, raw body)."""
    c = srv.conn()
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    t0 = time.monotonic()
    c.request("POST", path, body=json.dumps(body), headers=h)
    r = c.getresponse()
    if r.status != 200:
        out = r.read()
        c.close()
        return r.status, r.getheader("Content-Type"), [], out
    raw, events, buf = b"", [], b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        now = time.monotonic() - t0
        raw += chunk
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            events.append((now, ev.decode()))
            if on_event:
                on_event(ev.decode())
    c.close()
    return 200, r.getheader("Content-Type"), events, raw


def open_stream(srv, body, n_events=3, headers=None):
    """A streaming completion on a raw socket, read until n_events events have come; returns the
    socket (to be closed: a client that leaves) and what it read."""
    data = json.dumps(dict(body, stream=True)).encode()
    s = socket.create_connection(("127.0.0.1", srv.port))
    h = "".join("%s: %s\r\n" % kv for kv in (headers or {}).items()).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + h
              + b"Content-Length: %d\r\n\r\n" % len(data) + data)
    got = b""
    while got.count(b"data: ") < n_events:
        more = s.recv(4096)
        if not more:
            break
        got += more
    return s, got


def parse_events(events, raw):
    """Check the exact framing; returns the JSON objects and whether [DONE] ended it."""
    ok = raw.endswith(b"data: [DONE]\n\n") and all(e.startswith("data: ") and "\n" not in e for _, e in events)
    objs = [json.loads(e[6:]) for _, e in events if e != "data: [DONE]"]
    return ok, objs


def metrics(srv):
    st, r, _, out = request(srv, "GET", "/metrics", headers=srv.auth)
    vals = {}
    for line in out.decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            vals[k] = float(v)
    return st, r.getheader("Content-Type"), vals, out.decode()


def wait_metric(srv, key, pred, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = metrics(srv)[2].get(key)
        if v is not None and pred(v):
            return time.monotonic() - t0
        time.sleep(0.02)
    return None


def counts(u):
    """usage without prompt_tokens_details: the cached part depends on what ran before"""
    return {k: v for k, v in (u or {}).items() if k != "prompt_tokens_details"}


def text_of(objs, chat):
    if chat:
        return "".join(o["choices"][0]["delta"].get("content", "") for o in objs if o.get("choices"))
    return "".join(o["choices"][0]["text"] for o in objs if o.get("choices"))


# --- the openai npm package -----------------------------------------------------------------------

def openai_mode():
    client = os.path.join(HERE, "openai-client")
    if not os.path.exists(os.path.join(client, "node_modules", "openai", "package.json")):
        skip("the openai npm package is not installed: scripts/install-deps.sh runs npm ci in tests/openai-client")
    try:
        subprocess.run(["node", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        skip("node is not installed (scripts/install-deps.sh)")
    srv = Server("--chat-template", "chatml", "--api-key", "sk-test", "--parallel", "2", "-c", "1024")
    r = subprocess.run(["node", os.path.join(client, "stream.mjs"), "http://127.0.0.1:%d/v1" % srv.port, "sk-test"],
                       capture_output=True, text=True, timeout=300)
    print(r.stderr, end="")
    if check(r.returncode == 0, "the openai client ran: %s %s" % (r.stdout, r.stderr)):
        res = json.loads(r.stdout)
        print("openai client:", json.dumps(res)[:600])
        # the same requests, plain, through http.client
        auth = {"Authorization": "Bearer sk-test"}
        _, _, chat, _ = request(srv, "POST", "/v1/chat/completions", res["chat_request"], auth)
        _, _, comp, _ = request(srv, "POST", "/v1/completions", res["completion_request"], auth)
        check(res["chat_text"] == chat["choices"][0]["message"]["content"] and res["chat_text"],
              "openai chat stream text equals the plain reply: %r vs %r" % (res["chat_text"], chat))
        check(res["chat_finish"] == chat["choices"][0]["finish_reason"] == "length", "chat finish_reason")
        check(counts(res["chat_usage"]) == counts(chat["usage"]), "chat usage chunk: %s vs %s" % (res["chat_usage"], chat["usage"]))
        check(res["chat_role"] == "assistant", "chat role delta")
        check(res["completion_text"] == comp["choices"][0]["text"] and res["completion_text"],
              "openai completion stream text equals the plain reply: %r vs %r" % (res["completion_text"], comp))
        check(res["completion_finish"] == "length", "completion finish_reason")
        check(res["chunks"] > 3, "several chunks streamed")
        check(res["models"] == ["stories260K.gguf"], "models.list: %s" % res["models"])
        check(res["bad_key_status"] == 401, "a wrong key raises 401 in the client: %s" % res["bad_key_status"])
        check(res["schema_finish"] == "stop" and valid_json(res["schema_text"], res["schema"]),
              "openai json_schema: text valid under the schema: %r" % res["schema_text"])
        m = res["tool_message"]
        params = res["tools"][0]["function"]["parameters"]
        calls = m.get("tool_calls") or []
        check(res["tool_finish"] == "tool_calls" and len(calls) == 1 and calls[0]["type"] == "function"
              and calls[0]["function"]["name"] == "get_weather" and calls[0]["id"]
              and valid_json(calls[0]["function"]["arguments"], params),
              "openai tool_choice required: one get_weather call with valid arguments: %s" % m)
        sc = res["stream_calls"].get("0", {})
        check(res["stream_tool_finish"] == "tool_calls" and sc.get("name") == "get_weather" and sc.get("id")
              and valid_json(sc.get("arguments", ""), params), "openai streamed tool call: %s" % res["stream_calls"])
    srv.stop("openai server", signal.SIGINT)


def web_mode():
    """The chat page at / in Debian's chromium, headless, driven by puppeteer-core
    (tests/web-client/chat.mjs): streamed text, metrics, the KV-cache bar, stop, token
    probabilities, regenerate, safe Markdown, localStorage, the API key, no console errors."""
    import shutil
    client = os.path.join(HERE, "web-client")
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        skip("chromium is not installed (scripts/install-deps.sh installs Debian's)")
    if not os.path.exists(os.path.join(client, "node_modules", "puppeteer-core", "package.json")):
        skip("puppeteer-core is not installed: scripts/install-deps.sh runs npm ci in tests/web-client")
    srv = Server("--parallel", "2", "-c", "2048")  # stories260K has no chat template: the page says so
    keyed = Server("--api-key", "sekret", "--parallel", "1", "-c", "512")
    shot = os.path.abspath("web-chat.png")
    env = dict(os.environ, CHROMIUM=chromium)
    try:
        r = subprocess.run(["node", os.path.join(client, "chat.mjs"), "http://127.0.0.1:%d/" % srv.port,
                            "http://127.0.0.1:%d/" % keyed.port, "sekret", shot],
                           capture_output=True, text=True, timeout=300, env=env)
        print(r.stdout + r.stderr, end="")
        check(r.returncode == 0, "the browser checks passed (exit %d)" % r.returncode)
    except subprocess.TimeoutExpired as ex:
        print(ex.stdout or "", ex.stderr or "")
        check(False, "the browser checks finished within 300 s")
    srv.stop("web server")
    keyed.stop("keyed web server")


# --- the main test --------------------------------------------------------------------------------

def basics(srv):
    st, _, j, _ = request(srv, "GET", "/health")
    check(st == 200 and j == {"status": "ok"}, "/health: %s %s" % (st, j))
    st, _, j, _ = request(srv, "GET", "/v1/models")
    check(st == 200 and j["object"] == "list" and j["data"][0]["id"] == "stories260K.gguf"
          and j["data"][0]["object"] == "model", "/v1/models: %s" % j)
    st, _, j, _ = request(srv, "GET", "/nope")
    check(st == 404 and "error" in j, "unknown path: 404 %s" % st)
    st, _, j, _ = request(srv, "GET", "/v1/completions")
    check(st == 405 and "error" in j, "GET /v1/completions: 405 %s" % st)
    st, _, j, _ = request(srv, "GET", "/v1/models/stories260K.gguf")
    check(st == 200 and j["id"] == "stories260K.gguf" and j["object"] == "model", "/v1/models/{id}: %s %s" % (st, j))
    st, _, j, _ = request(srv, "GET", "/v1/models/gpt-4")
    check(st == 404 and j["error"]["code"] == "model_not_found", "/v1/models/{unknown id}: 404 %s %s" % (st, j))
    st, _, j, _ = request(srv, "GET", "/props")
    check(st == 200 and j["total_slots"] == 4 and j["default_generation_settings"]["n_ctx"] == 1024
          and j["default_generation_settings"]["params"]["top_k"] == 40
          and j["chat_template_source"] == "option", "/props: %s %s" % (st, j))
    st, _, j, _ = request(srv, "GET", "/slots")
    check(st == 200 and [x["id"] for x in j] == [0, 1, 2, 3] and all(x["n_ctx"] == 1024 and not x["is_processing"]
          and x["request"] is None and x["kv_bytes_allocated"] == 0 for x in j), "/slots (idle, no KV blocks yet): %s %s" % (st, j))
    st, r, _, page = request(srv, "GET", "/")
    check(st == 200 and r.getheader("Content-Type").startswith("text/html") and b"v1/chat/completions" in page
          and "default-src 'none'" in (r.getheader("Content-Security-Policy") or ""), "GET /: the chat page %s" % st)
    # CORS (--cors-origin http://example.com,http://b.test here): listed origins only, and a
    # browser's preflight answered without a key
    st, r, _, _ = request(srv, "OPTIONS", "/v1/chat/completions",
                          headers={"Origin": "http://example.com", "Access-Control-Request-Method": "POST"})
    check(st == 204 and r.getheader("Access-Control-Allow-Origin") == "http://example.com" and
          "POST" in (r.getheader("Access-Control-Allow-Methods") or "") and
          "Authorization" in (r.getheader("Access-Control-Allow-Headers") or ""), "CORS preflight: %s" % st)
    st, r, _, _ = request(srv, "GET", "/health", headers={"Origin": "http://b.test"})
    check(r.getheader("Access-Control-Allow-Origin") == "http://b.test", "CORS header on replies to a listed origin")
    st, r, _, _ = request(srv, "OPTIONS", "/v1/completions", headers={"Origin": "http://evil.test"})
    check(st == 204 and r.getheader("Access-Control-Allow-Origin") is None, "an unlisted origin: no CORS header")


def completions(srv):
    prompt = "Once upon a time"
    want = subprocess.run([VKLLM, "run", "-m", MODEL, "--temp", "0", "-n", "24", "-p", prompt],
                          capture_output=True, text=True).stdout
    check(want.endswith("\n"), "vkllm run ends its text with a newline")
    want = want[:-1]
    body = {"model": "whatever", "prompt": prompt, "max_tokens": 24, "temperature": 0}
    st, r, j, _ = request(srv, "POST", "/v1/completions", body)
    check(st == 200 and r.getheader("Content-Type") == "application/json", "completion: %s" % st)
    c = j["choices"][0]
    check(j["object"] == "text_completion" and j["id"].startswith("cmpl-") and j["model"] == "stories260K.gguf",
          "completion object: %s" % j)
    check(c["text"] == want, "greedy completion equals `vkllm run`: %r vs %r" % (c["text"], want))
    check(c["finish_reason"] == "length" and c["index"] == 0, "finish_reason length: %s" % c)
    st2, _, tok, _ = request(srv, "POST", "/tokenize", {"content": prompt, "add_special": True})
    u = j["usage"]
    # the same prompt as token ids: with or without BOS, plain or in an array of one; the same text
    st3, _, plain_ids, _ = request(srv, "POST", "/tokenize", {"content": prompt})
    for ids in (plain_ids["tokens"], tok["tokens"], [plain_ids["tokens"]]):
        st4, _, j4, _ = request(srv, "POST", "/v1/completions", dict(body, prompt=ids))
        check(st4 == 200 and j4["choices"][0]["text"] == want and j4["usage"]["prompt_tokens"] == len(tok["tokens"]),
              "token-id prompt %s: the text prompt's reply: %s %s" % (ids, st4, j4))
    for bad_prompt in ([1, 10 ** 6], [1, "a"], [-1], [[1, 2], [3, "x"]]):
        st4, _, j4, _ = request(srv, "POST", "/v1/completions", dict(body, prompt=bad_prompt))
        check(st4 == 400 and j4["error"]["message"], "prompt %s: 400 %s %s" % (bad_prompt, st4, j4))
    check(counts(u) == {"prompt_tokens": len(tok["tokens"]), "completion_tokens": 24, "total_tokens": len(tok["tokens"]) + 24}
          and 0 <= u["prompt_tokens_details"]["cached_tokens"] < len(tok["tokens"]), "usage: %s (prompt %s)" % (u, tok))
    t = j["timings"]
    check(t["prompt_n"] + t["cache_n"] == u["prompt_tokens"] and t["predicted_n"] == 24 and
          u["prompt_tokens_details"]["cached_tokens"] == t["cache_n"], "timings counts: %s" % t)
    check(all(t[k] > 0 for k in ("prompt_ms", "predicted_ms", "predicted_per_second", "ttft_ms")), "timings: %s" % t)

    # streamed: the same text, one event per piece as it is produced
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    st, ctype, events, raw = stream(srv, "/v1/completions", body)
    ok, objs = parse_events(events, raw)
    check(st == 200 and ctype.startswith("text/event-stream"), "stream content type: %s" % ctype)
    check(ok, "SSE framing: data: {json}\\n\\n ... data: [DONE]\\n\\n: %r" % raw[-300:])
    check(all(o["object"] == "text_completion" and o["id"] == objs[0]["id"] for o in objs), "chunk objects")
    check(text_of(objs, False) == want, "streamed text equals the plain one: %r" % text_of(objs, False))
    fins = [o["choices"][0]["finish_reason"] for o in objs if o["choices"]]
    check(fins[-1] == "length" and all(f is None for f in fins[:-1]), "only the final chunk has finish_reason: %s" % fins)
    check(objs[-1]["choices"] == [] and counts(objs[-1]["usage"]) == counts(u), "usage chunk last: %s" % objs[-1])
    check(all("usage" in o and o["usage"] is None for o in objs[:-1]), "the other chunks have usage null (as OpenAI)")
    check(len(objs) == 24 + 2, "one event per token, then the final and the usage chunk: %d" % len(objs))

    # without include_usage: no usage chunk
    del body["stream_options"]
    st, _, events, raw = stream(srv, "/v1/completions", body)
    ok, objs = parse_events(events, raw)
    check(ok and all(o.get("usage") is None for o in objs), "no usage chunk unless asked")

    # stop strings (string or list), not emitted; EOS
    cut = want.index("Lily")
    for stop in ("Lily", ["zzz", "Lily"]):
        st, _, j, _ = request(srv, "POST", "/v1/completions", dict(prompt=prompt, max_tokens=24, temperature=0, stop=stop))
        check(j["choices"][0]["text"] == want[:cut] and j["choices"][0]["finish_reason"] == "stop",
              "stop %r: %s" % (stop, j["choices"][0]))
    st, _, events, raw = stream(srv, "/v1/completions", dict(prompt=prompt, max_tokens=24, temperature=0, stop="Lily", stream=True))
    ok, objs = parse_events(events, raw)
    check(ok and text_of(objs, False) == want[:cut] and objs[-1]["choices"][0]["finish_reason"] == "stop",
          "streamed stop string: %r" % text_of(objs, False))
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(prompt=prompt, max_tokens=24, temperature=0, logit_bias={"2": 100}))
    check(j["choices"][0] == {"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}
          and j["usage"]["completion_tokens"] == 0, "EOS by logit_bias: %s" % j)

    # seeds reproduce; the sampling fields are taken
    b = dict(prompt=prompt, max_tokens=16, temperature=0.9, top_p=0.9, top_k=20, min_p=0.01, seed=1234,
             presence_penalty=0.5, frequency_penalty=0.5)
    a1 = request(srv, "POST", "/v1/completions", b)[2]["choices"][0]["text"]
    a2 = request(srv, "POST", "/v1/completions", b)[2]["choices"][0]["text"]
    check(a1 == a2 and a1, "a seed reproduces: %r %r" % (a1, a2))
    # unknown fields are ignored
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(prompt=prompt, max_tokens=2, foo={"bar": 1}, user="x"))
    check(st == 200 and j["usage"]["completion_tokens"] == 2, "unknown fields ignored: %s" % st)
    return want


def chat(srv):
    msgs = [{"role": "system", "content": "You are a storyteller."}, {"role": "user", "content": "Tell me a story."}]
    body = {"messages": msgs, "max_tokens": 16, "temperature": 0}
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", body)
    c = j["choices"][0]
    check(st == 200 and j["object"] == "chat.completion" and j["id"].startswith("chatcmpl-"), "chat: %s %s" % (st, j))
    check(c["message"]["role"] == "assistant" and c["message"]["content"] and c["finish_reason"] == "length",
          "chat message: %s" % c)
    check(j["usage"]["completion_tokens"] == 16 and j["usage"]["prompt_tokens"] > 10, "chat usage: %s" % j["usage"])
    parts = [msgs[0], {"role": "user", "content": [{"type": "text", "text": "Tell me "}, {"type": "text", "text": "a story."}]}]
    st, _, j2, _ = request(srv, "POST", "/v1/chat/completions", dict(body, messages=parts))
    check(j2["choices"][0]["message"]["content"] == c["message"]["content"], "content parts equal the string")

    body.update(stream=True, stream_options={"include_usage": True})
    st, ctype, events, raw = stream(srv, "/v1/chat/completions", body)
    ok, objs = parse_events(events, raw)
    check(st == 200 and ok, "chat SSE framing: %r" % raw[-300:])
    check(all(o["object"] == "chat.completion.chunk" for o in objs), "chat chunk objects")
    check(objs[0]["choices"][0]["delta"].get("role") == "assistant", "first chunk opens the assistant's turn: %s" % objs[0])
    check(text_of(objs, True) == c["message"]["content"], "streamed chat text equals the plain one")
    check(objs[-2]["choices"][0]["delta"] == {} and objs[-2]["choices"][0]["finish_reason"] == "length",
          "final chat chunk: %s" % objs[-2])
    check(objs[-1]["choices"] == [] and counts(objs[-1]["usage"]) == counts(j["usage"]), "chat usage chunk: %s" % objs[-1])


def twice(srv, body, what):
    """The same completion twice: the times, the replies, the prompt's tokens, the second's cached ones."""
    times, outs = [], []
    for _ in range(2):
        t0 = time.monotonic()
        st, _, j, _ = request(srv, "POST", "/v1/completions", body)
        times.append(time.monotonic() - t0)
        outs.append(j)
    n = outs[0]["usage"]["prompt_tokens"]
    c2 = outs[1]["usage"]["prompt_tokens_details"]["cached_tokens"]
    print("%s: %d-token prompt, %.1f ms fresh, %.1f ms again (%d cached, %.0f%%)" %
          (what, n, times[0] * 1e3, times[1] * 1e3, c2, 100 * times[1] / times[0]), flush=True)
    return times, outs, n, c2


def prefix_reuse(srv):
    """A slot's KV cache keeps the prompt it saw: the same prompt again evaluates only its last
    token, a chat's next turn only what is new; the text stays what a fresh run gives."""
    story = ("Once upon a time there was a little girl named Lily. She liked to play in the park with her "
             "friends. One day she saw a big red ball under a tree. ") * 10
    body = {"prompt": story, "max_tokens": 8, "temperature": 0}
    times, outs, n, c2 = twice(srv, body, "prefix reuse")
    check(n > 300 and c2 == n - 1 and outs[1]["timings"]["prompt_n"] == 1 and outs[1]["timings"]["cache_n"] == n - 1,
          "the same prompt again: all but its last token reused (%s of %s)" % (c2, n))
    check(outs[0]["choices"][0]["text"] == outs[1]["choices"][0]["text"], "the same greedy text with the cached prompt")
    check(times[1] < 0.5 * times[0], "the cached prompt answers faster: %.1f vs %.1f ms" % (times[1] * 1e3, times[0] * 1e3))
    # a chat: each turn reuses the turns before it
    msgs = [{"role": "system", "content": "You are a storyteller."}, {"role": "user", "content": story[:300]}]
    prev = 0
    for turn in range(3):
        st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": msgs, "max_tokens": 8, "temperature": 0})
        u = j["usage"]
        cached = u["prompt_tokens_details"]["cached_tokens"]
        if turn:
            check(prev - 4 <= cached < u["prompt_tokens"],
                  "chat turn %d: the earlier turns' %d tokens come from the cache (%d cached of %d)" %
                  (turn + 1, prev, cached, u["prompt_tokens"]))
        prev = u["prompt_tokens"]
        msgs += [j["choices"][0]["message"], {"role": "user", "content": "And then? " * (turn + 1)}]
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(body, cache_prompt=False))
    check(j["usage"]["prompt_tokens_details"]["cached_tokens"] == 0 and j["choices"][0]["text"] == outs[0]["choices"][0]["text"],
          "cache_prompt false: everything evaluated again, the same text")


def logprobs(srv):
    """logprobs: the completions shape (tokens, token_logprobs, top_logprobs, text_offset) and the
    chat one (content: token, logprob, bytes, top_logprobs), plain and streamed, one entry per
    generated token; greedy picks the most likely one; asking changes nothing in the text."""
    base = {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0}
    st, _, plain, _ = request(srv, "POST", "/v1/completions", base)
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(base, logprobs=2))
    c = j["choices"][0]
    lp = c["logprobs"]
    n = j["usage"]["completion_tokens"]
    check(st == 200 and c["text"] == plain["choices"][0]["text"] and plain["choices"][0]["logprobs"] is None,
          "logprobs do not change the text, and are null unless asked for")
    check(len(lp["tokens"]) == n and "".join(lp["tokens"]) == c["text"], "completions logprobs: one token each, their text is the reply: %s" % lp["tokens"])
    check(lp["text_offset"] == [sum(len(t) for t in lp["tokens"][:i]) for i in range(n)], "text_offset: %s" % lp["text_offset"])
    check(all(len(t) == 2 and max(t.values()) == t[tok] == v and v <= 0
              for t, tok, v in zip(lp["top_logprobs"], lp["tokens"], lp["token_logprobs"])),
          "greedy: each token is the most likely of its 2 alternatives: %s" % lp["top_logprobs"][:3])
    events = stream(srv, "/v1/completions", dict(base, logprobs=2, stream=True))[2]
    objs = [json.loads(e[6:]) for _, e in events if e.startswith("data: {")]
    toks = [t for o in objs for t in (o["choices"][0]["logprobs"] or {}).get("tokens", [])]
    offs = [t for o in objs for t in (o["choices"][0]["logprobs"] or {}).get("text_offset", [])]
    check(toks == lp["tokens"] and offs == lp["text_offset"], "streamed logprobs add up to the plain ones: %s" % toks)
    chunks = [o["choices"][0] for o in objs if o["choices"][0]["text"]]
    check(all("".join(c["logprobs"]["tokens"]) == c["text"] for c in chunks),
          "each streamed chunk carries the logprobs of its own tokens: %s" % [(c["text"], c["logprobs"]["tokens"]) for c in chunks][:6])
    # a stop string of two whole tokens (7 and 8): while it may be starting, its text is held back,
    # and so are its tokens' logprobs; the stop string's own never come
    stop = "".join(lp["tokens"][6:8])
    if len(lp["tokens"]) >= 8 and c["text"].find(stop) == lp["text_offset"][6]:
        events = stream(srv, "/v1/completions", dict(base, logprobs=2, stream=True, stop=[stop]))[2]
        objs = [json.loads(e[6:]) for _, e in events if e.startswith("data: {")]
        chunks = [o["choices"][0] for o in objs if o["choices"][0]["text"]]
        toks = [t for o in objs for t in (o["choices"][0]["logprobs"] or {}).get("tokens", [])]
        check(all("".join(ch["logprobs"]["tokens"]) == ch["text"] for ch in chunks) and toks == lp["tokens"][:6],
              "with a stop string, each chunk still carries the logprobs of its own text: %s" %
              [(ch["text"], ch["logprobs"]["tokens"]) for ch in chunks][:8])
    else:
        check(False, "the stop-string logprobs check needs 8 tokens and a first occurrence at token 7: %s" % lp["tokens"])
    # a stop string that starts inside token 7: the reply keeps token 7's first character, and its
    # logprobs token 7 too (part of its text is in the reply): every character has its token's
    cut = lp["text_offset"][6] + 1
    stop = c["text"][cut:lp["text_offset"][7] + len(lp["tokens"][7])]
    if len(lp["tokens"][6]) >= 2 and c["text"].find(stop) == cut:
        for streamed in (False, True):
            body = dict(base, logprobs=2, stop=[stop], stream=streamed)
            if streamed:
                objs = [json.loads(e[6:]) for _, e in stream(srv, "/v1/completions", body)[2] if e.startswith("data: {")]
            else:
                objs = [request(srv, "POST", "/v1/completions", body)[2]]
            text = "".join(o["choices"][0]["text"] for o in objs)
            toks = [t for o in objs for t in (o["choices"][0]["logprobs"] or {}).get("tokens", [])]
            check(text == c["text"][:cut] and toks == lp["tokens"][:7],
                  "a stop string cutting a token (%s): the text up to it, the cut token's logprobs too: %r %s" %
                  ("streamed" if streamed else "plain", text, toks))
    else:
        check(False, "the cut-token check needs a token 7 of 2 characters and no earlier stop: %s" % lp["tokens"])
    # the first token's last character held back (a stop string may start there), the reply ending
    # with that token (max_tokens 1): its logprobs come with the chunk that releases the character,
    # as for any later token (they came with the first part while the prompt was short)
    one = dict(base, prompt="Once upon a time,", max_tokens=1, logprobs=1)
    tok = request(srv, "POST", "/v1/completions", one)[2]["choices"][0]["logprobs"]["tokens"]
    if len(tok) == 1 and len(tok[0]) >= 2:
        events = stream(srv, "/v1/completions", dict(one, stream=True, stop=[tok[0][-1] + "\u00a7"]))[2]
        objs = [json.loads(e[6:])["choices"][0] for _, e in events if e.startswith("data: {")]
        got = [(o["text"], o["logprobs"]["tokens"]) for o in objs]
        check(got == [(tok[0][:-1], []), (tok[0][-1], tok), ("", [])],
              "a held first token: its logprobs with the chunk that completes its text: %s" % got)
    else:
        check(False, "the held-first-token check needs a first token of 2 characters: %s" % tok)
    msgs = [{"role": "user", "content": "Tell me a story."}]
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions",
                          {"messages": msgs, "max_tokens": 8, "temperature": 0, "logprobs": True, "top_logprobs": 3})
    content = j["choices"][0]["logprobs"]["content"]
    check(st == 200 and len(content) == j["usage"]["completion_tokens"] and
          "".join(e["token"] for e in content) == j["choices"][0]["message"]["content"] and
          all(bytes(e["bytes"]).decode("utf-8", "replace") == e["token"] and len(e["top_logprobs"]) == 3 and
              e["top_logprobs"][0]["token"] == e["token"] and e["top_logprobs"][0]["logprob"] == e["logprob"] for e in content),
          "chat logprobs: content entries with bytes and 3 alternatives: %s" % content[:2])
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": msgs, "max_tokens": 2, "logprobs": True})
    check(st == 200 and all(e["top_logprobs"] == [] for e in j["choices"][0]["logprobs"]["content"]),
          "chat logprobs without top_logprobs: no alternatives")
    for body in ({"messages": msgs, "top_logprobs": 2}, {"messages": msgs, "logprobs": True, "top_logprobs": 21},
                 {"messages": msgs, "logprobs": "yes"}):
        st, _, j, _ = request(srv, "POST", "/v1/chat/completions", body)
        check(st == 400, "chat %s: 400 %s" % (body, st))
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(base, logprobs=21))
    check(st == 400 and j["error"]["param"] == "logprobs", "completions logprobs 21: 400")


def stalls():
    """While a stream runs, a long prompt arrives: evaluated in chunks between the stream's decode
    steps (--prefill-chunk), the stream's longest gap is a chunk's time, not the whole prompt's;
    the long request's text and its time to first token stay close to an unchunked run's."""
    story = ("Once upon a time there was a little girl named Lily. She liked to play in the park with her "
             "friends. One day she saw a big red ball under a tree. ") * 38
    res = {}
    for chunk in (0, 64):
        srv = Server("--parallel", "2", "-c", "2048", "--prefill-chunk", str(chunk))
        gaps, long_req = [], {}

        def streamer():
            _, _, events, _ = stream(srv, "/v1/completions",
                                     {"prompt": "Once upon a time", "max_tokens": 300, "temperature": 0, "stream": True})
            gaps.extend((b, b - a) for (a, _), (b, _) in zip(events, events[1:]))

        t = threading.Thread(target=streamer)
        t0 = time.monotonic()
        t.start()
        time.sleep(0.3)
        t1 = time.monotonic() - t0
        st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": story, "max_tokens": 8, "temperature": 0})
        t2 = time.monotonic() - t0
        t.join()
        srv.stop("stall server")
        during = [g for (at, g) in gaps if t1 <= at <= t2 + 0.05]
        res[chunk] = (max(during or [0]), t2 - t1, j["choices"][0]["text"] if st == 200 else None, j["usage"]["prompt_tokens"] if st == 200 else 0)
        print("prefill chunk %d: a %d-token prompt took %.0f ms; the running stream's longest gap meanwhile %.0f ms" %
              (chunk, res[chunk][3], res[chunk][1] * 1e3, res[chunk][0] * 1e3), flush=True)
    check(res[0][3] > 1500 and res[0][2] is not None and res[0][2] == res[64][2], "the chunked long prompt gives the same text")
    check(res[64][0] < 0.5 * res[0][0], "chunked prefill: the stream's longest gap %.0f ms, %.0f ms unchunked" %
          (res[64][0] * 1e3, res[0][0] * 1e3))
    check(res[64][1] < 3 * res[0][1], "chunked prefill: the long request within 3x of its unchunked time (%.0f vs %.0f ms)" %
          (res[64][1] * 1e3, res[0][1] * 1e3))


def choices(srv):
    """n > 1: n choices, each what the same request alone gives with seed + i; streamed with their
    indexes interleaved, one usage chunk (the prompt counted once); the prompt evaluated once and
    its KV cache copied to the other choices; a client that leaves an n = 3 stream frees all three
    slots."""
    body = {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0.9, "seed": 42}
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(body, n=3))
    alone = [request(srv, "POST", "/v1/completions", dict(body, seed=42 + i))[2] for i in range(3)]
    check(st == 200 and [c["index"] for c in j["choices"]] == [0, 1, 2] and
          [c["text"] for c in j["choices"]] == [a["choices"][0]["text"] for a in alone],
          "n=3: choice i equals the request alone with seed 42+i: %s vs %s" % (j, [a["choices"][0]["text"] for a in alone]))
    check(len({c["text"] for c in j["choices"]}) > 1, "n=3 samples differ: %s" % [c["text"] for c in j["choices"]])
    check(j["usage"]["completion_tokens"] == sum(a["usage"]["completion_tokens"] for a in alone) and
          j["usage"]["prompt_tokens"] == alone[0]["usage"]["prompt_tokens"], "usage: the prompt once, completions summed %s" % j["usage"])
    st, _, events, raw = stream(srv, "/v1/completions", dict(body, n=3, stream=True, stream_options={"include_usage": True}))
    ok, objs = parse_events(events, raw)
    per = ["", "", ""]
    fins = {}
    for o in objs:
        for c in o.get("choices") or []:
            per[c["index"]] += c["text"]
            if c["finish_reason"]:
                fins[c["index"]] = c["finish_reason"]
    usage = [o for o in objs if o.get("usage")]
    check(ok and per == [c["text"] for c in j["choices"]] and sorted(fins) == [0, 1, 2] and len(usage) == 1 and
          counts(usage[0]["usage"]) == counts(j["usage"]), "n=3 streamed: per-index text, 3 final chunks, one usage chunk: %s %s" % (per, usage))
    # a batch of prompts (strings and token ids), n per prompt: choice p*n+j is prompt p alone with seed 42+j
    ids = request(srv, "POST", "/tokenize", {"content": "The dog"})[2]["tokens"]
    batch = ["Once upon a time", ids, "Lily"]
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(body, prompt=batch, n=2))
    want = [request(srv, "POST", "/v1/completions", dict(body, prompt=p, seed=42 + k))[2] for p in batch for k in range(2)]
    check(st == 200 and [c["index"] for c in j["choices"]] == list(range(6)) and
          [c["text"] for c in j["choices"]] == [w["choices"][0]["text"] for w in want],
          "a batch of 3 prompts x n=2: each choice equals its prompt alone: %s" % j)
    check(j["usage"]["prompt_tokens"] == sum(w["usage"]["prompt_tokens"] for w in want[::2]) and
          j["usage"]["completion_tokens"] == sum(w["usage"]["completion_tokens"] for w in want),
          "batch usage: each prompt once, completions summed: %s" % j["usage"])
    # the prompt's KV cache is evaluated once and copied to the other choices' slots (a long prompt:
    # the siblings wait for its chunked prefill, then copy it), and each choice is still exactly
    # the request alone
    long_prompt = " ".join(["The little dog ran to the park and played with a ball."] * 30)
    lb = {"prompt": long_prompt, "max_tokens": 8, "temperature": 0.9, "seed": 7}
    m0 = metrics(srv)[2]
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(lb, n=3))
    shared = metrics(srv)[2]["vkllm_prompt_shared_tokens_total"] - m0["vkllm_prompt_shared_tokens_total"]
    n_prompt = j["usage"]["prompt_tokens"] if st == 200 else 0
    alone = [request(srv, "POST", "/v1/completions", dict(lb, seed=7 + i))[2]["choices"][0]["text"] for i in range(3)]
    check(st == 200 and n_prompt > 500 and shared == 2 * (n_prompt - 1) and [c["text"] for c in j["choices"]] == alone,
          "n=3, a %d-token prompt: evaluated once, %d tokens copied to the 2 other slots; choices = alone: %s vs %s"
          % (n_prompt, shared, [c["text"] for c in j["choices"]], alone))
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(body, prompt=["a"] * 9, n=2))
    check(st == 400 and j["error"]["param"] == "prompt", "more than 16 choices: 400 %s" % j)
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(body, prompt=["a", 5]))
    check(st == 400 and j["error"]["param"] == "prompt", "a batch holding a number: 400 %s" % j)
    cb = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "temperature": 0, "n": 2}
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", cb)
    check(st == 200 and len(j["choices"]) == 2 and j["choices"][0]["message"] == j["choices"][1]["message"],
          "chat n=2, greedy: two equal choices %s" % j)
    m0 = metrics(srv)[2]
    key = 'vkllm_requests_finished_total{reason="cancelled"}'
    s, got = open_stream(srv, {"prompt": "Once", "max_tokens": 1000, "temperature": 0, "n": 3}, n_events=4)
    check(wait_metric(srv, "vkllm_slots_busy", lambda v: v == 3, 5) is not None, "n=3 runs in three slots")
    s.close()
    took = wait_metric(srv, "vkllm_slots_busy", lambda v: v == 0, 5)
    check(took is not None and took < 1 and metrics(srv)[2][key] == m0[key] + 3,
          "a client leaving an n=3 stream frees all three slots (%s s)" % took)


def json_mode(srv):
    """response_format json_object: the reply is one JSON object. stories260K never closes one by
    itself within a few hundred tokens, so ',' is banned and '"' gets a bias: after one member
    only '}' fits, generation stops with "stop", and the text parses. Without the bias the reply runs to its
    length, and is still the start of an object (no whitespace flood: runs of at most 16)."""
    rf = {"type": "json_object"}
    comma = request(srv, "POST", "/tokenize", {"content": ","})[2]["tokens"][-1]
    quote = request(srv, "POST", "/tokenize", {"content": '"'})[2]["tokens"][-1]
    bias = {str(comma): -100, str(quote): 8}  # one member, strings that end: then only '}' fits
    for stream_it in (False, True):
        for seed in (1, 2, 3):
            body = {"prompt": "Once upon a time", "max_tokens": 400, "seed": seed, "response_format": rf,
                    "logit_bias": bias}
            if stream_it:
                st, _, events, raw = stream(srv, "/v1/completions", dict(body, stream=True))
                ok, objs = parse_events(events, raw)
                text, fin = text_of(objs, False), objs[-1]["choices"][0]["finish_reason"]
            else:
                st, _, j, _ = request(srv, "POST", "/v1/completions", body)
                text, fin = j["choices"][0]["text"], j["choices"][0]["finish_reason"]
            try:
                obj = json.loads(text)
            except ValueError:
                obj = None
            check(st == 200 and fin == "stop" and isinstance(obj, dict),
                  "json_object (stream %s, seed %d): a JSON object, finish stop: %s %r" % (stream_it, seed, fin, text[:200]))
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "JSON please"}],
                          "max_tokens": 400, "seed": 5, "response_format": rf, "logit_bias": bias})
    content = j["choices"][0]["message"]["content"]
    try:
        ok = isinstance(json.loads(content), dict)
    except ValueError:
        ok = False
    check(st == 200 and ok and j["choices"][0]["finish_reason"] == "stop", "chat json_object: %r" % content[:200])
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 40, "seed": 1,
                                                          "response_format": rf})
    t = j["choices"][0]["text"]
    check(st == 200 and j["choices"][0]["finish_reason"] == "length" and t.lstrip()[:1] == "{" and len(t) - len(t.lstrip()) <= 1
          and not re.search(r"[ \t\r\n]{17}", t.split('"')[0]), "json_object without the bias: the start of an object %r" % t[:200])


def valid_json(text, schema):
    """text parses as JSON and validates against schema (python3-jsonschema)."""
    import jsonschema
    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (ValueError, jsonschema.ValidationError) as e:
        print("  invalid:", str(e)[:200])
        return False


SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False},
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 5},
    {"type": "string", "enum": ["red", "green", "blue"]},
    {"type": "object", "properties": {"color": {"enum": ["red", "green", None, 3]}, "n": {"type": "number"}}, "required": ["color"]},
    {"type": "object", "properties": {"title": {"type": "string", "maxLength": 20},
                                      "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3}},
     "required": ["title", "tags"]},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["b"]},
    {"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "null"}}, "required": ["x"]}]},
    {"type": ["string", "null"], "maxLength": 10},
    {"$defs": {"pt": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                      "required": ["x", "y"], "additionalProperties": False}},
     "type": "object", "properties": {"from": {"$ref": "#/$defs/pt"}, "to": {"$ref": "#/$defs/pt"}}, "required": ["from", "to"]},
    {"definitions": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                               "next": {"anyOf": [{"$ref": "#/definitions/node"}, {"type": "null"}]}},
                              "required": ["v", "next"]}},
     "$ref": "#/definitions/node"},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date", "description": "a day"},
                                      "count": {"type": "integer"}}, "required": ["when", "count"]},
    {"type": "array", "prefixItems": [{"type": "string", "maxLength": 5}, {"type": "integer"}, {"type": "boolean"}], "items": False},
    {"const": {"fixed": [1, 2, 3]}},
    {"type": "object", "properties": {"k": {"type": "string", "minLength": 2, "maxLength": 4}}, "required": ["k"]},
    {"type": "object", "additionalProperties": {"type": "integer"}, "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    {"type": "boolean"},
    {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string", "maxLength": 10}, "qty": {"type": "integer"}},
        "required": ["name", "qty"]}, "minItems": 1, "maxItems": 2}}, "required": ["items"]},
    {"oneOf": [{"type": "string", "maxLength": 6}, {"type": "boolean"}]},
    {"type": "object", "properties": {"x": {"type": "number"}, "note": {"type": ["string", "null"]}},
     "required": ["x", "note"], "additionalProperties": False},
]
PROMPTS = ["Once upon a time", "Lily wanted", "The dog", "Tom and his mom", "One day", "The sun was", "Sam said", "A big tree",
           "The cat", "In the park", "Mia had", "The little bird", "Ben liked", "At night", "The car", "Anna saw", "A girl",
           "The boy", "Spot ran", "It was"]


def structured(srv):
    """Structured output on a model that never saw JSON: 20 schemas x prompts through
    response_format json_schema each give text that validates (the grammar also closes the JSON
    within max_tokens: 60 here, several replies need all of it); streamed and plain agree;
    llama-server's json_schema and grammar fields; what a schema or grammar cannot honour is a 400."""
    for i, (schema, prompt) in enumerate(zip(SCHEMAS, PROMPTS)):
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 60, "seed": i,
                "response_format": {"type": "json_schema", "json_schema": {"name": "s%d" % i, "schema": schema}}}
        st, _, j, _ = request(srv, "POST", "/v1/chat/completions", body)
        text = j["choices"][0]["message"]["content"] if st == 200 else None
        check(st == 200 and j["choices"][0]["finish_reason"] == "stop" and valid_json(text, schema),
              "json_schema %d: valid JSON under the schema: %s %r" % (i, st, text if text is not None else j))
        if i % 5 == 0:  # streamed: the same text
            st, _, events, raw = stream(srv, "/v1/chat/completions", dict(body, stream=True))
            ok, objs = parse_events(events, raw)
            check(ok and text_of(objs, True) == text, "json_schema %d streamed equals plain: %r" % (i, raw[-300:]))
    # llama-server's fields on /v1/completions
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 40, "seed": 1,
                                                          "json_schema": {"type": "array", "items": {"type": "boolean"}}})
    check(st == 200 and valid_json(j["choices"][0]["text"], {"type": "array", "items": {"type": "boolean"}}),
          "json_schema field: %s" % j)
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 40, "temperature": 0,
                                                          "grammar": 'root ::= ("yes" | "no") ", " [a-z]+ "."'})
    t = j["choices"][0]["text"] if st == 200 else ""
    check(st == 200 and re.fullmatch(r"(yes|no), [a-z]+\.", t) and j["choices"][0]["finish_reason"] == "stop",
          "grammar field: %s" % j)
    # never silence: refused with the reason
    for extra, param, what in [({"grammar": "root ::= x"}, "grammar", "never defined"),
                               ({"grammar": "root ::= root \"a\""}, "grammar", "left-recursive"),
                               ({"grammar": 5}, "grammar", "string"),
                               ({"json_schema": {"type": "string", "pattern": "a+"}}, "json_schema", "'pattern'"),
                               ({"json_schema": {"type": "number", "minimum": 3}}, "json_schema", "'minimum'"),
                               ({"json_schema": {"$ref": "http://x/y"}}, "json_schema", "$ref"),
                               ({"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "str"}}}},
                                "response_format", "unknown type"),
                               ({"response_format": {"type": "json_object"}, "grammar": "root ::= \"a\""}, "grammar", "only one")]:
        st, _, j, _ = request(srv, "POST", "/v1/completions", dict({"prompt": "x", "max_tokens": 2}, **extra))
        e = (j or {}).get("error", {})
        check(st == 400 and e.get("param") == param and what in e.get("message", ""),
              "%s: 400 naming %s (%s): %s" % (extra, param, what, j))


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string", "maxLength": 20},
                                               "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}}},
         {"type": "function", "function": {"name": "add", "parameters": {
             "type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "maximum": 100},
                                              "b": {"type": "integer", "exclusiveMinimum": -10, "maximum": 0}},
             "required": ["a", "b"], "additionalProperties": False}}}]


def tools(srv):
    """Function calling (chatml = the hermes style): tool_choice required and named give a
    tool_calls entry whose arguments validate against the function's parameters, plain and
    streamed; auto and none; earlier calls and results rendered back (/apply-template);
    templates without a tool convention refuse tools with a 400."""
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    for seed in range(4):
        for choice in ("required", {"type": "function", "function": {"name": "add"}}):
            body = {"messages": msgs, "tools": TOOLS, "tool_choice": choice, "seed": seed, "max_tokens": 80}
            st, _, j, _ = request(srv, "POST", "/v1/chat/completions", body)
            c = j["choices"][0] if st == 200 else {}
            calls = c.get("message", {}).get("tool_calls") or []
            want = None if choice == "required" else "add"
            ok = st == 200 and c["finish_reason"] == "tool_calls" and len(calls) == 1 and c["message"]["content"] is None
            ok = ok and calls[0]["type"] == "function" and calls[0]["id"].startswith("call_")
            name = calls[0]["function"]["name"] if calls else None
            ok = ok and name in params and (want is None or name == want)
            check(ok and valid_json(calls[0]["function"]["arguments"], params[name]),
                  "tool_choice %s seed %d: one valid call: %s" % (choice, seed, j))
            if seed == 0:  # streamed: the same call, its arguments in pieces as they are generated
                st, _, events, raw = stream(srv, "/v1/chat/completions", dict(body, stream=True))
                ok, objs = parse_events(events, raw)
                deltas = [t for o in objs for t in o["choices"][0]["delta"].get("tool_calls", [])] if ok else []
                fin = objs[-1]["choices"][0]["finish_reason"] if ok and objs else None
                first = deltas[0] if deltas else {}
                args = "".join(d.get("function", {}).get("arguments", "") for d in deltas)
                check(len(deltas) > 2 and all(d["index"] == 0 for d in deltas) and fin == "tool_calls"
                      and first.get("id", "").startswith("call_") and first.get("type") == "function"
                      and first["function"]["name"] == calls[0]["function"]["name"]
                      and all("id" not in d for d in deltas[1:]) and args == calls[0]["function"]["arguments"]
                      and not any(o["choices"][0]["delta"].get("content") for o in objs),
                      "streamed tool call %s: %d deltas, arguments %r vs %r" % (choice, len(deltas), args, calls))
    # auto: free text or a call; none: tools not shown, plain text
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": msgs, "tools": TOOLS, "max_tokens": 16, "seed": 1})
    check(st == 200 and j["choices"][0]["finish_reason"] in ("length", "stop", "tool_calls"), "tool_choice auto: %s" % j)
    p_none = request(srv, "POST", "/apply-template", {"messages": msgs, "tools": TOOLS, "tool_choice": "none"})[2]["prompt"]
    p_auto = request(srv, "POST", "/apply-template", {"messages": msgs, "tools": TOOLS})[2]["prompt"]
    # as Qwen's template prints them (tojson: ", " and ": " between items)
    check("<tools>" not in p_none and "<tools>" in p_auto and
          '\n{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city", ' in p_auto,
          "tools in the system message (auto), not with none: %r" % p_auto[:300])
    # a conversation with an earlier call and its result
    conv = msgs + [{"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}]},
                   {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees"}]
    st, _, j, _ = request(srv, "POST", "/apply-template", {"messages": conv, "tools": TOOLS})
    p = j.get("prompt", "")
    check(st == 200 and '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>' in p
          and "<|im_start|>user\n<tool_response>\n18 degrees\n</tool_response><|im_end|>" in p, "calls rendered back: %r" % p)
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": conv, "tools": TOOLS, "max_tokens": 8})
    check(st == 200, "a conversation with tool results answers: %s" % st)
    for extra, param in [({"tools": [{"type": "function"}]}, "tools"), ({"tools": "x"}, "tools"),
                         ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
                         ({"tool_choice": "required"}, "tool_choice"), ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
                         ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
                             "x": {"type": "string", "pattern": "a"}}}}}], "tool_choice": "required"}, "tools"),
                         ({"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}}, "tool_choice"),
                         ({"messages": [{"role": "robot", "content": "hi"}]}, "messages")]:
        st, _, j, _ = request(srv, "POST", "/v1/chat/completions", dict({"messages": msgs, "max_tokens": 2}, **extra))
        check(st == 400 and j["error"]["param"] == param, "%s: 400 on %s: %s" % (list(extra), param, j))
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "x", "tools": TOOLS})
    check(st == 400 and j["error"]["param"] == "tools", "tools on /v1/completions: 400 %s" % j)


def split_devices():
    """--devices 0,0 --tensor-split 1,4 (the device opened twice): /metrics has each device's time
    (vkllm_device_seconds_total, as bench shows per device); a one-device server has none."""
    srv = Server("--devices", "0,0", "--tensor-split", "1,4", "-c", "256", "--parallel", "2")
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0})
    m = metrics(srv)[2]
    dev = {k: v for k, v in m.items() if k.startswith("vkllm_device_seconds_total")}
    check(st == 200 and j["usage"]["completion_tokens"] == 8 and sorted(dev) ==
          ['vkllm_device_seconds_total{device="0",layers="0-0"}', 'vkllm_device_seconds_total{device="1",layers="1-4"}']
          and all(v > 0 for v in dev.values()), "a layer split's /metrics: each device's seconds %s" % dev)
    srv.stop("split server")


def client_cap():
    """--max-client-connections 3: a fourth connection from the same address is closed at once;
    when one of the three closes, the address is served again. Also --pooling and a q8_0 KV cache."""
    srv = Server("--max-client-connections", "3", "-c", "256", "--pooling", "last", "-ctk", "q8_0", "-ctv", "q8_0")
    idle = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(3)]
    time.sleep(0.3)
    extra = socket.create_connection(("127.0.0.1", srv.port))
    extra.settimeout(5)
    try:
        extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        got = extra.recv(100)
    except OSError:
        got = b""
    extra.close()
    check(got == b"", "a fourth connection from one address is refused: %r" % got[:60])
    idle.pop().close()
    time.sleep(0.3)
    st, _, j, _ = request(srv, "GET", "/health")
    check(st == 200, "with one closed, the address is served again: %s" % st)
    for c in idle:
        c.close()
    idle = []
    time.sleep(0.3)
    # --pooling last: the default for requests that name none
    a = request(srv, "POST", "/v1/embeddings", {"input": "Once upon a time"})[2]
    b = request(srv, "POST", "/v1/embeddings", {"input": "Once upon a time", "pooling": "last"})[2]
    c = request(srv, "POST", "/v1/embeddings", {"input": "Once upon a time", "pooling": "mean"})[2]
    check(a["data"][0]["embedding"] == b["data"][0]["embedding"] != c["data"][0]["embedding"], "--pooling last is the default")
    # -ctk/-ctv q8_0: the KV pool (4 slots of 256 positions) takes 36 bytes per 32 values (f16: 64)
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0})
    pool = metrics(srv)[2]["vkllm_kv_cache_pool_bytes"]
    check(pool == 4 * 256 * 5 * 2 * 36 and st == 200 and j["choices"][0]["text"],
          "q8_0 K/V: a pool of %d bytes (want %d), %s" % (pool, 4 * 256 * 5 * 2 * 36, j))
    for c in idle:
        c.close()
    srv.stop("client-cap server")


def tools_templates():
    """Each tool style renders its own convention, and a required call parses back: llama3's JSON
    with "parameters", mistral's [TOOL_CALLS] list; a template with no convention refuses tools."""
    params = TOOLS[0]["function"]["parameters"]
    msgs = [{"role": "user", "content": "Weather in Rome?"}]
    for tmpl, marker in (("llama3", "Given the following functions"), ("mistral-v7", "[AVAILABLE_TOOLS]"),
                         ("llama3.1", "<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n"
                                      "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>")):
        srv = Server("--chat-template", tmpl, "-c", "2048")
        p = request(srv, "POST", "/apply-template", {"messages": msgs, "tools": TOOLS})[2]["prompt"]
        check(marker in p and "get_weather" in p, "%s: tools rendered: %r" % (tmpl, p[:300]))
        if tmpl == "llama3":  # as Meta's template prints them: json.dumps(indent=4), arrays too
            check('{\n    "type": "function",\n    "function": {\n        "name": "get_weather",' in p and
                  '"required": [\n                "city",\n                "unit"\n            ]' in p and
                  'its value}.Do not use variables.\n\n' in p, "llama3: tools as json.dumps(indent=4): %r" % p[:900])
        st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": msgs, "tools": TOOLS, "seed": 2, "max_tokens": 80,
                                                                   "tool_choice": {"type": "function", "function": {"name": "get_weather"}}})
        calls = j["choices"][0]["message"].get("tool_calls") or [] if st == 200 else []
        check(len(calls) == 1 and calls[0]["function"]["name"] == "get_weather"
              and valid_json(calls[0]["function"]["arguments"], params), "%s: a required call parses: %s" % (tmpl, j))
        srv.stop(tmpl + " server")
    # mistral-v3: the tools go before the [INST] that a system prompt opens (they came out as an
    # assistant reply after it), calls follow [/INST] at once, results carry the content as it is
    srv = Server("--chat-template", "mistral-v3", "-c", "2048")
    hist = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Rome?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call00001", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
            {"role": "tool", "tool_call_id": "call00001", "content": '{"temp": 22}'}]
    p = request(srv, "POST", "/apply-template", {"messages": hist, "tools": TOOLS})[2]["prompt"]
    check(p.startswith('[AVAILABLE_TOOLS] [{"type": "function", "function": {"name": "get_weather"') and
          '[/AVAILABLE_TOOLS][INST] Be brief.\n\nWeather in Rome?[/INST][TOOL_CALLS] [{"name": "get_weather", '
          '"arguments": {"city": "Rome"}, "id": "call00001"}]</s>[TOOL_RESULTS] {"content": {"temp": 22}, '
          '"call_id": "call00001"}[/TOOL_RESULTS]' in p, "mistral-v3 with a system prompt and tools: %r" % p[-400:])
    srv.stop("mistral-v3 server")
    srv = Server("--chat-template", "gemma", "-c", "256")
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": msgs, "tools": TOOLS})
    check(st == 400 and "gemma" in j["error"]["message"], "gemma has no tool convention: 400 %s" % j)
    srv.stop("gemma server")


def embeddings(srv):
    """/v1/embeddings: OpenAI's shape, unit vectors of the model's width, the same text the same
    vector alone or in a batch, its token ids the same as its text, base64 the same floats, mean and
    last pooling different, and clear 400s."""
    import base64, math, struct
    st, _, j, _ = request(srv, "POST", "/v1/embeddings", {"input": "Once upon a time", "model": "x"})
    e = j["data"][0]["embedding"] if st == 200 else []
    check(st == 200 and j["object"] == "list" and j["data"][0]["object"] == "embedding" and j["data"][0]["index"] == 0
          and len(e) == 64 and abs(sum(x * x for x in e) - 1) < 1e-4 and j["usage"]["prompt_tokens"] > 1,
          "/v1/embeddings: one unit vector of n_embd floats: %s" % str(j)[:300])
    st, _, jb, _ = request(srv, "POST", "/v1/embeddings", {"input": ["The dog", "Once upon a time", "The dog ran"]})
    vs = [d["embedding"] for d in sorted(jb["data"], key=lambda d: d["index"])]
    check(st == 200 and len(vs) == 3 and max(abs(a - b) for a, b in zip(vs[1], e)) < 1e-6,
          "a batch of 3: the same text gives the same vector as alone")
    cos = sum(a * b for a, b in zip(vs[0], vs[2]))
    check(0 < cos < 0.99999 and jb["usage"]["prompt_tokens"] == sum(
        request(srv, "POST", "/tokenize", {"content": t, "add_special": True})[2]["tokens"].__len__()
        for t in ("The dog", "Once upon a time", "The dog ran")), "different texts, different vectors (cos %.4f); usage" % cos)
    ids = request(srv, "POST", "/tokenize", {"content": "Once upon a time", "add_special": True})[2]["tokens"]
    st, _, ji, _ = request(srv, "POST", "/v1/embeddings", {"input": ids})
    check(st == 200 and max(abs(a - b) for a, b in zip(ji["data"][0]["embedding"], e)) < 1e-6, "token ids: the text's vector")
    st, _, j64, _ = request(srv, "POST", "/v1/embeddings", {"input": "Once upon a time", "encoding_format": "base64"})
    raw = base64.b64decode(j64["data"][0]["embedding"])
    check(st == 200 and list(struct.unpack("<%df" % (len(raw) // 4), raw)) == [struct.unpack("<f", struct.pack("<f", x))[0] for x in e],
          "base64: the same float32 values, little-endian")
    st, _, jl, _ = request(srv, "POST", "/v1/embeddings", {"input": "Once upon a time", "pooling": "last"})
    check(st == 200 and max(abs(a - b) for a, b in zip(jl["data"][0]["embedding"], e)) > 1e-3, "last pooling differs from mean")
    # cls: the first token's state, BOS's for any text in a causal model
    jc = [request(srv, "POST", "/v1/embeddings", {"input": t, "pooling": "cls"})[2] for t in ("Once upon a time", "The dog")]
    check(all("data" in x for x in jc) and max(abs(a - b) for a, b in zip(jc[0]["data"][0]["embedding"], jc[1]["data"][0]["embedding"])) < 1e-6
          and max(abs(a - b) for a, b in zip(jc[0]["data"][0]["embedding"], e)) > 1e-3, "cls pooling: the first token's state")
    for body, param in (({}, "input"), ({"input": ""}, "input"), ({"input": 5}, "input"), ({"input": ["a"] * 17}, "input"),
                        ({"input": [10 ** 6]}, "input"), ({"input": "x", "encoding_format": "hex"}, "encoding_format"),
                        ({"input": "x", "dimensions": 32}, "dimensions"), ({"input": "x", "pooling": "max"}, "pooling"),
                        ({"input": "Once " * 1200}, "input")):
        st, _, jj, _ = request(srv, "POST", "/v1/embeddings", body)
        check(st == 400 and jj["error"]["param"] == param, "embeddings %s: 400 (%s) %s" % (str(body)[:60], param, jj))
    st, _, jj, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})
    check(st == 200, "completions still work after embeddings on the same slots")


def validation(srv):
    base = {"prompt": "Once", "max_tokens": 4}
    cases = [("temperature", "hot"), ("temperature", -1), ("temperature", 3), ("max_tokens", 1.5), ("max_tokens", -3), ("max_tokens", 0),
             ("max_tokens", "8"), ("top_p", 2), ("top_k", -1), ("top_k", 2.5), ("min_p", "x"), ("stop", 5), ("stop", [""]),
             ("stop", ["a"] * 17), ("n", 0), ("n", 17), ("n", 1.5), ("logit_bias", {"abc": 1}), ("logit_bias", {"1": "x"}),
             ("logit_bias", {"999999": 1}), ("logit_bias", [1]), ("stream", "yes"), ("seed", "x"), ("seed", 0.5),
             ("presence_penalty", 3), ("frequency_penalty", "x"), ("prompt", 5), ("prompt", ["a", 3]), ("prompt", [["a"]]),
             ("stream_options", 1), ("model", 3),
             # not honoured: refused, never silently ignored
             ("response_format", {"type": "json_schema", "json_schema": {}}), ("response_format", {"type": "yaml"}),
             ("response_format", "json"), ("grammar", "root ::= x"), ("json_schema", {"type": "string", "pattern": "x"}),
             ("tools", [{"type": "function", "function": {"name": "f"}}]), ("tool_choice", "auto"),
             ("functions", [{"name": "f"}]), ("best_of", 2), ("suffix", "The end."), ("echo", "yes")]
    for field, value in cases:
        st, _, j, _ = request(srv, "POST", "/v1/completions", dict(base, **{field: value}))
        e = (j or {}).get("error", {})
        check(st == 400 and isinstance(e.get("message"), str) and e["message"] and e.get("type") == "invalid_request_error"
              and e.get("param") == field and "code" in e, "%s=%r: 400 with an OpenAI error body: %s %s" % (field, value, st, j))
    for body, param in [({"max_tokens": 4}, "prompt"), ({"messages": "hi"}, "messages"), ({"messages": []}, "messages"),
                        ({"messages": [{"content": "x"}]}, "messages"),
                        ({"messages": [{"role": "user", "content": 5}]}, "messages"),
                        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages")]:
        path = "/v1/completions" if "messages" not in body else "/v1/chat/completions"
        st, _, j, _ = request(srv, "POST", path, body)
        check(st == 400 and j["error"]["param"] == param, "%s %s: 400 %s %s" % (path, body, st, j))
    for raw in ("{not json", "[1, 2]", "", '{"prompt": "Once", "max_tokens": 2} xyz',
                '{"prompt": "Once", "max_tokens": 2}{"prompt": "x"}'):
        st, _, j, _ = request(srv, "POST", "/v1/completions", raw=raw)
        check(st == 400 and j["error"]["message"], "body %r: 400 %s" % (raw, j))
    st, _, j, _ = request(srv, "POST", "/v1/completions", raw='{"prompt": "Once", "max_tokens": 2}  \r\n')
    check(st == 200, "whitespace after the body is fine: %s" % st)
    # a NUL inside the prompt would cut it silently: refused; an escaped backslash before "u0000" is text
    st, _, j, _ = request(srv, "POST", "/v1/completions", raw='{"prompt": "Once\\u0000 upon", "max_tokens": 2}')
    check(st == 400 and "NUL" in j["error"]["message"], "\\u0000 in a prompt: 400 %s" % j)
    st, _, j, _ = request(srv, "POST", "/v1/completions", raw='{"prompt": "Once\\\\u0000 upon", "max_tokens": 2}')
    check(st == 200, "an escaped backslash followed by u0000 is plain text: %s %s" % (st, j))
    st, _, j, _ = request(srv, "POST", "/tokenize", raw='{"content": "a"} {"content": "b"}')
    check(st == 400, "/tokenize: two JSON values are a 400: %s" % st)
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(base, echo=True, logprobs=2))
    check(st == 400 and j["error"]["param"] == "echo", "echo with logprobs (prompt logprobs): 400 %s" % j)
    for extra in ({"response_format": {"type": "text"}}, {"tools": []}, {"tool_choice": "none"}, {"best_of": 1},
                  {"suffix": ""}):
        st, _, j, _ = request(srv, "POST", "/v1/completions", dict(base, **extra))
        check(st == 200, "%s is what it does anyway: 200 %s" % (extra, st))
    # echo: the reply starts with the prompt (plain, streamed, and for a token-id prompt)
    plain = request(srv, "POST", "/v1/completions", dict(base, temperature=0))[2]["choices"][0]["text"]
    st, _, j, _ = request(srv, "POST", "/v1/completions", dict(base, temperature=0, echo=True))
    check(st == 200 and j["choices"][0]["text"] == "Once" + plain, "echo: %r" % (j,))
    st, _, events, raw = stream(srv, "/v1/completions", dict(base, temperature=0, echo=True, stream=True))
    ok, objs = parse_events(events, raw)
    check(ok and text_of(objs, False) == "Once" + plain and objs[0]["choices"][0]["text"] == "Once",
          "echo streamed: the first chunk is the prompt: %r" % raw[:300])
    ids = request(srv, "POST", "/tokenize", {"content": "Once"})[2]["tokens"]
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": ids, "max_tokens": 4, "temperature": 0, "echo": True})
    check(st == 200 and j["choices"][0]["text"].startswith("Once"), "echo of a token-id prompt: its text %r" % (j,))


def text_bytes(srv):
    """Replies are Unicode text whatever the model or the client sends: a NUL byte token (0x00)
    becomes U+FFFD in plain and streamed replies, /detokenize and logprobs (bytes [0]) instead of
    ending the text; a body that is not UTF-8, or holds a raw NUL, is a 400; an error quoting the
    request (a model name cut at 200 bytes) is valid UTF-8."""
    nul = 3  # stories260K's byte tokens <0x00>..<0xFF> are ids 3..258 (checked below through /detokenize)
    body = {"prompt": "Once upon", "max_tokens": 8, "seed": 1, "temperature": 1.0, "logit_bias": {str(nul): 100}}
    st, _, j, raw = request(srv, "POST", "/v1/completions", body)
    text = j["choices"][0]["text"] if st == 200 else ""
    check(st == 200 and text.count("\ufffd") == 8 and "\x00" not in text and j["usage"]["completion_tokens"] == 8,
          "the NUL byte token 8 times: 8 U+FFFD, nothing cut: %r" % raw[:300])
    st, _, events, sraw = stream(srv, "/v1/completions", dict(body, stream=True))
    ok, objs = parse_events(events, sraw)
    check(ok and text_of(objs, False) == text, "streamed the same: %r" % sraw[:300])
    st, _, j, _ = request(srv, "POST", "/detokenize", {"tokens": [400, nul, 400]})
    check(st == 200 and j["content"].count("\ufffd") == 1 and len(j["content"]) > 3, "/detokenize keeps the text after a NUL: %s" % j)
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
                                                                 "logit_bias": {str(nul): 100}, "logprobs": True})
    lp = j["choices"][0]["logprobs"]["content"] if st == 200 else []
    check(len(lp) == 2 and all(e["token"] == "\ufffd" and e["bytes"] == [0] for e in lp), "logprobs of the NUL token: %s" % lp)
    for raw in (b'{"prompt":"\xff\xfeabc","max_tokens":2,"echo":true}', b'{"prompt":"Tell\x00 me more","max_tokens":2}',
                b'{"prompt":"\xc3","max_tokens":2}', b'{"prompt":"\xed\xa0\x80","max_tokens":2}'):
        st, _, j, out = request(srv, "POST", "/v1/completions", raw=raw)
        check(st == 400 and j and ("UTF-8" in j["error"]["message"] or "NUL" in j["error"]["message"]),
              "body %r: 400 %s" % (raw, out[:200]))
    st, _, j, out = request(srv, "POST", "/v1/completions", raw='{"prompt":"caf\u00e9 \u2581","max_tokens":2}'.encode())
    check(st == 200, "escaped non-ASCII text is fine: %s" % st)
    st, _, j, out = request(srv, "GET", "/v1/models/a" + "%C3%A9" * 150)
    try:
        msg = json.loads(out.decode("utf-8"))["error"]["message"]
    except (ValueError, KeyError):
        msg = None
    check(st == 404 and msg, "a model name cut short: valid UTF-8 JSON: %r" % out[-80:])
    st, _, j, out = request(srv, "GET", "/v1/models/%FF%FE")
    try:
        msg = json.loads(out.decode("utf-8"))["error"]["message"]
    except (ValueError, KeyError):
        msg = None
    check(st == 404 and msg and "\ufffd" in msg, "a model name of bytes that are not UTF-8: %r" % out[-80:])


def methods(srv):
    """HEAD is GET for the GET endpoints (health checks use it); a 405 says what the endpoint takes."""
    for path in ("/health", "/v1/models", "/metrics"):
        st, r, _, out = request(srv, "HEAD", path)
        check(st == 200 and out == b"", "HEAD %s: 200, no body: %s %r" % (path, st, out[:50]))
    for method, path, allow in (("PUT", "/v1/completions", "POST"), ("DELETE", "/health", "GET, HEAD"),
                                ("GET", "/tokenize", "POST")):
        st, r, j, _ = request(srv, method, path)
        check(st == 405 and r.getheader("Allow") == allow and j["error"]["message"],
              "%s %s: 405, Allow: %s: %s %s" % (method, path, allow, st, r.getheader("Allow")))


def tool_history(srv):
    """Earlier calls and tool results render in the template's convention whether or not this
    request offers tools: an agent's final-answer turn sends tool_choice "none", or no tools."""
    msgs = [{"role": "user", "content": "Weather in Rome?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "22C sunny"}]
    want = ('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>\n'
            '<|im_start|>user\n<tool_response>\n22C sunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n')
    for extra in ({"tools": TOOLS}, {"tools": TOOLS, "tool_choice": "none"}, {}):
        st, _, j, _ = request(srv, "POST", "/apply-template", dict({"messages": msgs}, **extra))
        p = j["prompt"] if st == 200 else ""
        check(p.endswith(want) and "<|im_start|>tool" not in p, "history with %s: %r" % (list(extra.items())[1:] or "no tools", p[-300:]))


def admission():
    """A request's choices are queued all or none: n above what the server can ever hold (slots +
    queue) is a 400 naming n, not a 503 to retry forever, and leaves nothing queued behind."""
    srv = Server("--parallel", "1", "--queue", "2", "-c", "256")
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 3, "n": 4})
    check(st == 400 and j["error"]["param"] == "n", "n=4 with 1 slot and a queue of 2: 400 %s" % (j,))
    st, _, j, _ = request(srv, "POST", "/v1/embeddings", {"input": ["a", "b", "c", "d"]})
    check(st == 400 and j["error"]["param"] == "input", "4 embedding inputs: 400 %s" % (j,))
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 3, "n": 3})
    check(st == 200 and len(j["choices"]) == 3, "n=3 right after: 200 with 3 choices: %s" % st)
    # tokens per second over the last 10 s: under 10 s up, every token so far over the uptime
    m = metrics(srv)[2]
    up, tps, n = m["vkllm_uptime_seconds"], m["vkllm_generation_tokens_per_second"], m["vkllm_generation_tokens_total"]
    check(n == 9 and (up >= 10 or abs(tps * up - n) <= 1e-3 * n), "tokens/s over the window: %s x %s s for %s tokens" % (tps, up, n))
    srv.stop("admission server")


def framing(srv):
    """Bodies framed two ways (two Content-Lengths, a length beside Transfer-Encoding, a length that
    is not a number) are how requests are smuggled past proxies: a 400, and the connection closes."""
    body = b'{"prompt": "Once", "max_tokens": 2}'
    n = len(body)
    # RFC 9112 5.1: whitespace between a field name and its colon is a 400 (a proxy may take
    # "Transfer-Encoding : chunked" as the framing while a lenient server reads the length)
    for hdrs in (b"Content-Length: %d\r\nContent-Length: %d\r\n" % (n, n), b"Content-Length: -5\r\n",
                 b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % n, b"Content-Length: 0x23\r\n",
                 b"Content-Length: %d\r\nTransfer-Encoding : chunked\r\n" % n,
                 b"Transfer-Encoding\t: chunked\r\nContent-Length: %d\r\n" % n, b"Content-Length : %d\r\n" % n):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + hdrs + b"\r\n" + body)
        s.settimeout(10)
        got = b""
        try:
            while True:
                d = s.recv(4096)
                if not d:
                    break
                got += d
        except socket.timeout:
            got += b"<timeout: the connection stayed open>"
        s.close()
        check(got.startswith(b"HTTP/1.1 400") and not got.endswith(b"open>"),
              "%r: 400 and the connection closed: %r" % (hdrs, got[:80]))


def browsers(srv):
    """What a web page may do to a server on this machine. A cross-origin POST of text/plain, a
    form or no Content-Type needs no preflight (a CORS "simple" request): the page cannot read the
    reply, but the model would run; the JSON endpoints take application/json only (415). DNS
    rebinding (the page's own name pointed at 127.0.0.1) is same-origin to the browser: only the
    Host header tells, and names other than IP addresses, localhost and --allowed-hosts get 403."""
    m0 = metrics(srv)[2]
    body = json.dumps({"prompt": "Once", "max_tokens": 1}).encode()
    for path in ("/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/tokenize", "/detokenize", "/apply-template"):
        for ct in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                   "multipart/form-data; boundary=x", None, "application/jsonx"):
            c = srv.conn()
            c.putrequest("POST", path)
            if ct:
                c.putheader("Content-Type", ct)
            c.putheader("Content-Length", str(len(body)))
            c.endheaders(body)
            r = c.getresponse()
            j = json.loads(r.read())
            c.close()
            check(r.status == 415 and j["error"]["code"] == "unsupported_media_type" and "application/json" in j["error"]["message"],
                  "POST %s with Content-Type %s: 415 %s %s" % (path, ct, r.status, j))
    for ct in ("application/json; charset=utf-8", "Application/JSON"):
        st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 1}, {"Content-Type": ct})
        check(st == 200, "Content-Type %s: 200 %s" % (ct, st))
    m1 = metrics(srv)[2]
    k415 = 'vkllm_responses_total{code="415"}'
    check(m1.get(k415, 0) - m0.get(k415, 0) == 36 and
          m1["vkllm_generation_tokens_total"] - m0["vkllm_generation_tokens_total"] == 2, "415s counted; nothing generated for them")
    # Host
    for host, want in (("evil.example", 403), ("evil.example:%d" % srv.port, 403), ("127.0.0.1.nip.io", 403),
                       ("localhost", 200), ("LOCALHOST:1", 200), ("app.localhost", 200), ("localhost.", 200),
                       ("127.0.0.1:%d" % srv.port, 200), ("10.0.0.7", 200), ("[::1]:%d" % srv.port, 200)):
        for method, path, b in (("GET", "/v1/models", None), ("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 1}),
                                ("GET", "/", None)):
            c = srv.conn()
            c.putrequest(method, path, skip_host=True)
            c.putheader("Host", host)
            data = json.dumps(b).encode() if b else b""
            c.putheader("Content-Type", "application/json")
            c.putheader("Content-Length", str(len(data)))
            c.endheaders(data)
            r = c.getresponse()
            out = r.read()
            c.close()
            ok = r.status == want
            if want == 403:
                j = json.loads(out)
                ok = ok and j["error"]["code"] == "host_not_allowed" and "--allowed-hosts" in j["error"]["message"]
            check(ok, "Host: %s, %s %s: %s, got %s %r" % (host, method, path, want, r.status, out[:200]))
    st = request(srv, "GET", "/health", headers={"Host": "evil.example"})[0]
    check(st == 200, "/health answers any Host (load balancers): %s" % st)
    check(not any("WARNING" in l for l in srv.lines), "no warning on a loopback address")


def exposed():
    """--host 0.0.0.0 without an API key: a loud warning; --allowed-hosts adds names."""
    srv = Server("--host", "0.0.0.0", "--allowed-hosts", "gpu-box.lan, .corp.test", "-c", "256", "--parallel", "1")
    warn = [l for l in srv.lines if "WARNING" in l]
    check(len(warn) >= 2 and "NO API KEY" in warn[0] and "0.0.0.0" in warn[0] and "--api-key" in "".join(warn),
          "no API key on 0.0.0.0: a loud warning: %s" % "".join(srv.lines))
    for host, want in (("gpu-box.lan:8080", 200), ("GPU-BOX.lan", 200), ("corp.test", 200), ("a.b.corp.test", 200),
                       ("evilcorp.test", 403), ("gpu-box.lan.evil.example", 403), ("0.0.0.0", 200)):
        st = request(srv, "GET", "/v1/models", headers={"Host": host})[0]
        check(st == want, "--allowed-hosts gpu-box.lan,.corp.test: Host %s: %s, got %s" % (host, want, st))
    srv.stop("0.0.0.0 server")
    srv = Server("--allowed-hosts", "*", "--api-key", "k", "--host", "0.0.0.0", "-c", "256", "--parallel", "1")
    check(not any("WARNING" in l for l in srv.lines), "0.0.0.0 with an API key: no warning")
    st = request(srv, "GET", "/v1/models", headers={"Host": "anything.example", "Authorization": "Bearer k"})[0]
    check(st == 200, "--allowed-hosts '*': any Host: %s" % st)
    srv.stop("0.0.0.0 server with a key")


def prefill_shutdown():
    """SIGTERM while one long prompt is evaluated at once (--prefill-chunk 0): the server stops
    between its micro-batches, not after all of them (it waited 8.5 s for 2,000 tokens)."""
    srv = Server("--prefill-chunk", "0", "--parallel", "1", "-c", "2048", "--ubatch", "64")
    story = "Once upon a time there was a little girl named Lily who loved to play in the park with her dog. "
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 1})  # the pipelines
    prompt = (story * 80)[:5700]
    # evaluated a micro-batch at a time (to be stoppable between them), as one evaluation computes it
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": prompt[:1300], "max_tokens": 6, "temperature": 0})
    want = subprocess.run([VKLLM, "run", "-m", MODEL, "--temp", "0", "-n", "6", "--ubatch", "64", "-c", "2048", "-p",
                           prompt[:1300]], capture_output=True, text=True).stdout[:-1]
    check(st == 200 and j["usage"]["prompt_tokens"] > 256 and j["choices"][0]["text"] == want,
          "a prompt of several micro-batches: the same text as `vkllm run`: %r %r" % (j and j["choices"], want))
    t0 = time.monotonic()
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": prompt, "max_tokens": 1, "cache_prompt": False})
    whole = time.monotonic() - t0
    check(st == 200 and j["usage"]["prompt_tokens"] > 1500, "a long prompt: %s %s" % (st, j and j.get("usage")))
    got = {}
    key = 'vkllm_requests_total{endpoint="/v1/completions"}'
    n0 = metrics(srv)[2][key]
    t = threading.Thread(target=lambda: got.setdefault("r", request(srv, "POST", "/v1/completions",
                         {"prompt": "Lily " + prompt, "max_tokens": 1, "cache_prompt": False})))
    t.start()
    # received and taken from the queue: the engine evaluates it (its slot counts as busy only after)
    wait_metric(srv, key, lambda v: v == n0 + 1, 10)
    wait_metric(srv, "vkllm_queue_length", lambda v: v == 0, 10)
    time.sleep(min(0.1, whole / 10))
    t0 = time.monotonic()
    srv.p.send_signal(signal.SIGTERM)
    try:
        rc = srv.p.wait(60)
    except subprocess.TimeoutExpired:
        rc = "timeout"
    took = time.monotonic() - t0
    t.join(30)
    r = got.get("r")
    print("prefill shutdown: a %s-token prompt takes %.2f s at once; SIGTERM during it: exit in %.2f s"
          % (j and j["usage"]["prompt_tokens"], whole, took), flush=True)
    check(rc == 0 and took < max(0.25 * whole, 0.5), "SIGTERM during a %.1f s prefill: exit 0 in %.2f s (rc %s)" % (whole, took, rc))
    check(r and r[0] == 503 and "shutting down" in r[2]["error"]["message"], "the request being evaluated: 503 %r" % ((r[0], r[2]) if r else None,))


def read_all(s, limit=30):
    s.settimeout(limit)
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return got
            got += d
    except socket.timeout:
        return got + b"<timeout: the connection stayed open>"


def connections(srv):
    """Idle, slow and garbage connections cost a socket, not a thread: 1500 of them (beyond
    libmicrohttpd's default limit of about 1020) lock nobody out. A client that half-closes after
    sending (shutdown(SHUT_WR), `nc -N`) still gets its reply, plain or streamed."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1500
    if soft < want + 200 and hard >= want + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < want + 200:
        check(False, "this test needs %d file descriptors (the hard limit is %d)" % (want + 200, hard))
        return
    held = []
    for i in range(want):
        s = socket.create_connection(("127.0.0.1", srv.port))
        kind = i % 4  # idle; half a request line (slowloris); garbage bytes; a TLS ClientHello's start
        if kind == 1:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Le")
        elif kind == 2:
            s.sendall(b"\x00\xff garbage \x01")
        elif kind == 3:
            s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))
        held.append(s)
    t0 = time.monotonic()
    try:
        st = request(srv, "GET", "/health")[0]
        st2, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 4, "temperature": 0})
    except OSError as ex:
        st = st2 = repr(ex)
    took = time.monotonic() - t0
    check(st == 200 and st2 == 200 and j["usage"]["completion_tokens"] == 4 and took < 5,
          "/health and a completion with %d idle, slow and garbage connections open: %s, %s in %.3f s"
          % (want, st, st2, took))
    for s in held:
        s.close()
    # half-close after sending: the reply still comes, whole (plain and streamed), also beside an idle
    # keep-alive connection of the same client. libmicrohttpd 0.9.75 closed such a connection without
    # a reply when it read the client's end before the reply (the connection resumed with its read
    # state of before it was parked): about half the tries failed, so 8 tries of each fail all but
    # surely (0.55^8 passing: 1 in 120) without the fix
    for streamed in (False, True):
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "stream": streamed}).encode()
        st, _, want_j, want_raw = request(srv, "POST", "/v1/completions", json.loads(body))
        for attempt in range(8):
            idle = socket.create_connection(("127.0.0.1", srv.port))  # served once, then left idle
            idle.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            idle.settimeout(30)
            idle.recv(4096)
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            s.shutdown(socket.SHUT_WR)
            got = read_all(s)
            s.close()
            idle.close()
            if not half_closed_reply_ok(got, streamed, want_j, want_raw):
                break
        check(half_closed_reply_ok(got, streamed, want_j, want_raw),
              "a client that half-closes after sending gets its whole reply (stream %s, try %d of 8): %r"
              % (streamed, attempt + 1, got[:300]))


def half_closed_reply_ok(got, streamed, want_j, want_raw):
    """got (a reply read to its end) is the one reply that want_j/want_raw hold."""
    head, _, rest = got.partition(b"HTTP/1.1 200 OK\r\n")
    ok = head in (b"", b"HTTP/1.1 100 Continue\r\n\r\n") and rest
    if ok and streamed:
        texts = [json.loads(line[6:])["choices"][0]["text"] for line in rest.split(b"\n")
                 if line.startswith(b"data: {") and json.loads(line[6:])["choices"]]
        want_texts = [json.loads(line[6:])["choices"][0]["text"] for line in want_raw.split(b"\n")
                      if line.startswith(b"data: {") and json.loads(line[6:])["choices"]]
        ok = b"data: [DONE]" in rest and "".join(texts) == "".join(want_texts)
    elif ok:
        body_at = rest.find(b"\r\n\r\n")
        try:
            ok = json.loads(rest[body_at + 4:])["choices"][0]["text"] == want_j["choices"][0]["text"]
        except ValueError:  # cut short
            ok = False
    return bool(ok)


def tokens(srv, text):
    st, _, j, _ = request(srv, "POST", "/tokenize", {"content": text})
    cli = subprocess.run([VKLLM, "tokenize", "-m", MODEL, "--ids", "--no-bos", text], capture_output=True, text=True).stdout.split()
    check(st == 200 and j["tokens"] == [int(x) for x in cli], "/tokenize equals `vkllm tokenize`: %s vs %s" % (j, cli))
    st, _, j2, _ = request(srv, "POST", "/detokenize", {"tokens": j["tokens"]})
    check(st == 200 and j2["content"] == text, "/detokenize round trip: %r" % j2)
    st, _, j3, _ = request(srv, "POST", "/tokenize", {"content": text, "add_special": True})
    check(j3["tokens"] == [1] + j["tokens"], "add_special adds BOS: %s" % j3)
    # byte-fallback tokens (<0xC3> is id 3 + 0xC3): a lone lead byte is not UTF-8, so it comes back
    # as U+FFFD inside valid JSON; with its continuation byte it is the character
    st, _, raw_j, raw = request(srv, "POST", "/detokenize", {"tokens": [3 + 0xC3]})
    ok = True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        ok = False
    check(st == 200 and ok and raw_j["content"] == "\ufffd", "/detokenize of a lone byte: valid UTF-8 JSON, U+FFFD: %r" % raw)
    st, _, j4, _ = request(srv, "POST", "/detokenize", {"tokens": [3 + 0xC3, 3 + 0xA9]})
    check(st == 200 and j4["content"] == "\u00e9", "/detokenize of two bytes of one character: %r" % j4)
    for bad in ({"tokens": [1, -1]}, {"tokens": [10 ** 7]}, {"tokens": "1 2"}, {"tokens": [1.5]}):
        st, _, j, _ = request(srv, "POST", "/detokenize", bad)
        check(st == 400 and "error" in j, "detokenize %s: 400 %s" % (bad, st))
    st, _, j, _ = request(srv, "POST", "/tokenize", {"content": 5})
    check(st == 400, "tokenize without text: 400")


def check_metrics(srv, slots):
    st, ctype, m, text = metrics(srv)
    check(st == 200 and ctype.startswith("text/plain"), "/metrics: %s %s" % (st, ctype))
    for name in ("vkllm_requests_total", "vkllm_prompt_tokens_total", "vkllm_generation_tokens_total",
                 "vkllm_time_to_first_token_seconds_bucket", "vkllm_inter_token_latency_seconds_bucket",
                 "vkllm_generation_tokens_per_second", "vkllm_kv_cache_used_bytes", "vkllm_kv_cache_usage_ratio",
                 "vkllm_queue_length", "vkllm_slots_busy", "vkllm_requests_finished_total"):
        check(("\n" + name) in text and ("# TYPE " + name.replace("_bucket", "")) in text, "metric %s present" % name)
    check(m['vkllm_slots_total'] == slots and m['vkllm_slots_busy'] == 0 and m['vkllm_queue_length'] == 0, "slots idle")
    check("vkllm_device_seconds_total" not in text, "one device: no per-device time in /metrics")
    check(m['vkllm_requests_total{endpoint="/v1/completions"}'] >= 10, "completion requests counted")
    check(m["vkllm_generation_tokens_total"] >= 100 and m["vkllm_prompt_tokens_total"] >= 50, "tokens counted")
    b = [v for k, v in m.items() if k.startswith("vkllm_time_to_first_token_seconds_bucket")]
    check(b == sorted(b) and b[-1] == m["vkllm_time_to_first_token_seconds_count"] > 0, "TTFT histogram cumulative")
    check(m["vkllm_inter_token_latency_seconds_count"] > 50, "ITL histogram observed")
    check(m["vkllm_kv_cache_allocated_bytes"] > 0 and m["vkllm_kv_cache_used_bytes"] == 0, "KV cache use: idle now")
    props = request(srv, "GET", "/props")[2]
    check(m["vkllm_kv_cache_allocated_bytes"] == props["kv_cache_bytes"],
          "KV bytes allocated: the pool once, however many slots share its blocks (after n > 1 requests): %d, /props %d"
          % (m["vkllm_kv_cache_allocated_bytes"], props["kv_cache_bytes"]))
    st, _, sl, _ = request(srv, "GET", "/slots")
    # retained: the blocks no running request holds (idle slots', and the pool's cached ones), at most the pool
    kept = max(x["kv_bytes_allocated"] for x in sl)
    check(0 < kept <= m["vkllm_kv_cache_retained_bytes"] <= m["vkllm_kv_cache_pool_bytes"] and all(x["n_past"] > 0 for x in sl),
          "idle slots keep their prompts for reuse: %d bytes retained (pool %d), /slots %s" %
          (m["vkllm_kv_cache_retained_bytes"], m["vkllm_kv_cache_pool_bytes"], sl))
    check(m["vkllm_kv_cache_block_size"] == 16 and m["vkllm_kv_cache_blocks_total"] * 16 >= 1024,
          "the pool's block size and block count: %s, %s" % (m["vkllm_kv_cache_block_size"], m["vkllm_kv_cache_blocks_total"]))
    check(m['vkllm_responses_total{code="400"}'] > 20, "400s counted")


def disconnects(srv):
    m0 = metrics(srv)[2]
    s, got = open_stream(srv, {"prompt": "Once upon a time", "max_tokens": 1000, "temperature": 0})
    check(got.startswith(b"HTTP/1.1 200") and b"chunked" in got.lower(), "raw stream starts: %r" % got[:200])
    # events come as tokens are produced: the first ones are here while the request still runs
    check(metrics(srv)[2]["vkllm_slots_busy"] == 1, "the first events arrive while the request runs (not buffered)")
    s.close()
    took = wait_metric(srv, "vkllm_slots_busy", lambda v: v == 0, 5)
    m1 = metrics(srv)[2]
    key = 'vkllm_requests_finished_total{reason="cancelled"}'
    check(took is not None and took < 1.0, "a client that leaves mid-stream frees its slot at once (%s s)" % took)
    check(m1[key] == m0[key] + 1, "counted as cancelled")
    check(m1["vkllm_generation_tokens_total"] - m0["vkllm_generation_tokens_total"] < 500, "the generation stopped early")
    # a plain request whose client leaves while it is being generated
    s = socket.create_connection(("127.0.0.1", srv.port))
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 1000, "temperature": 0}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    check(wait_metric(srv, "vkllm_slots_busy", lambda v: v == 1, 5) is not None, "the plain request runs")
    s.close()
    took = wait_metric(srv, "vkllm_slots_busy", lambda v: v == 0, 5)
    check(took is not None and took < 1.0 and metrics(srv)[2][key] == m0[key] + 2,
          "a plain request's client leaving frees its slot at once (%s s)" % took)
    # clients that leave while queued (every slot busy) count as cancelled, not as errors; a prompt
    # longer than the context is a 400, not a failed generation
    m2 = metrics(srv)[2]
    err = 'vkllm_requests_finished_total{reason="error"}'
    busy = [open_stream(srv, {"prompt": "Once upon a time", "max_tokens": 1000, "temperature": 0})[0] for _ in range(4)]
    queued = [open_stream(srv, {"prompt": "Once", "max_tokens": 4, "temperature": 0}, n_events=0)[0] for _ in range(2)]
    check(wait_metric(srv, "vkllm_queue_length", lambda v: v == 2, 5) is not None, "two requests queued")
    for q in queued:
        q.close()
    for b in busy:
        b.close()
    check(wait_metric(srv, "vkllm_slots_busy", lambda v: v == 0, 10) is not None, "slots free again")
    check(wait_metric(srv, key, lambda v: v == m2[key] + 6, 5) is not None and metrics(srv)[2][err] == m2[err],
          "queued clients that leave count as cancelled, none as errors: %s" % metrics(srv)[2][key])
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once upon a time " * 400, "max_tokens": 4})
    check(st == 400 and metrics(srv)[2][err] == m2[err], "a prompt that does not fit is a 400, not a failed generation")


def load(srv, slots):
    """16 streaming clients x 4 requests; each output equals the same request alone."""
    prompts = ["Once upon a time", "Lily wanted", "The dog", "Tom and Sam", "One day, a little", "The sun was",
               "There was a big", "Mom said"]
    reqs = []
    stream_opts = {"stream": True, "stream_options": {"include_usage": True}}
    for i, p in enumerate(prompts):
        sampled = {"temperature": 0.8, "seed": 100 + i} if i % 2 else {"temperature": 0}
        reqs.append(("/v1/completions", dict(prompt=p, max_tokens=10, **stream_opts, **sampled), False))
        reqs.append(("/v1/chat/completions", dict(messages=[{"role": "user", "content": p}], max_tokens=10,
                                                  **stream_opts, **sampled), True))
    alone = []
    for path, body, is_chat in reqs:
        st, _, events, raw = stream(srv, path, body)
        ok, objs = parse_events(events, raw)
        check(st == 200 and ok, "reference %s %s" % (path, body))
        alone.append(text_of(objs, is_chat))
    results, lock = [], threading.Lock()

    def client(ci):
        for k in range(4):
            ri = (ci + 5 * k) % len(reqs)
            path, body, is_chat = reqs[ri]
            t0 = time.monotonic()
            try:
                st, _, events, raw = stream(srv, path, body)
                ok, objs = parse_events(events, raw)
                first = next((tm for tm, e in events if '"content":"' in e[6:] and '"content":""' not in e
                              or '"text":"' in e and '"text":""' not in e), None)
                text = text_of(objs, is_chat)
                n = objs[-1]["usage"]["completion_tokens"]
                res = (ri, st, ok, text, first, time.monotonic() - t0, n)
            except Exception as ex:  # noqa: BLE001 - any failure of a client is a test failure
                res = (ri, repr(ex), False, None, None, 0, 0)
            with lock:
                results.append(res)

    m0 = metrics(srv)[2]
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    peak = 0
    while any(t.is_alive() for t in threads):
        peak = max(peak, metrics(srv)[2]["vkllm_slots_busy"])
        time.sleep(0.05)
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    check(len(results) == 64 and all(r[1] == 200 and r[2] for r in results),
          "all 64 requests complete: %s" % [r[:3] for r in results if r[1] != 200 or not r[2]])
    bad = [(reqs[r[0]][1], r[3], alone[r[0]]) for r in results if r[3] != alone[r[0]]]
    check(not bad, "every output equals the same request alone (%d differ): %s" % (len(bad), bad[:3]))
    time.sleep(0.2)
    m = metrics(srv)[2]
    batch = ((m["vkllm_decode_step_rows_total"] - m0["vkllm_decode_step_rows_total"])
             / max(1, m["vkllm_decode_steps_total"] - m0["vkllm_decode_steps_total"]))
    check(batch > 0.75 * slots, "requests decoded together: mean batch %.2f of %d slots (peak busy %d)" % (batch, slots, peak))
    check(m["vkllm_slots_busy"] == 0 and m["vkllm_queue_length"] == 0 and m["vkllm_kv_cache_used_bytes"] == 0,
          "no slot leaked after the load: %s" % {k: v for k, v in m.items() if "slots" in k or "queue" in k})
    ttft = sorted(r[4] for r in results if r[4] is not None)
    toks = sum(r[6] for r in results)
    pct = lambda q: ttft[min(len(ttft) - 1, int(q * len(ttft)))] * 1e3 if ttft else float("nan")
    print("load: 16 clients x 4 streaming requests, %d slots: %d tokens in %.2f s = %.1f tokens/s; "
          "TTFT p50 %.0f ms, p99 %.0f ms; mean batch %.2f requests/step" % (slots, toks, wall, toks / wall, pct(0.5), pct(0.99),
          batch), flush=True)


def kv_pool():
    """Issue 15's capacity check: 32 slots of 2048 positions share an 8 MiB pool of KV blocks (32
    static caches would need 40 MiB); 32 concurrent streaming requests all finish, each equal to the
    same request alone. A 1500-token prompt again comes from the cache. A pool too small for a
    prompt is a 400; a reply that outgrows it ends with finish_reason "length"."""
    srv = Server("--parallel", "32", "-c", "2048", "--kv-cache-mb", "8")
    m = metrics(srv)[2]
    check(m["vkllm_kv_cache_pool_bytes"] <= 8 * 1048576 and m["vkllm_kv_cache_blocks_total"] > 0 and
          m["vkllm_kv_cache_usage_ratio"] == 0 and m["vkllm_kv_cache_blocks_cached"] == 0,
          "an 8 MiB pool, idle and empty: %s" % {k: v for k, v in m.items() if "kv_cache" in k})
    prompts = ["Once upon a time", "Lily wanted", "The dog", "Tom and Sam", "One day, a little", "The sun was",
               "There was a big", "Mom said"]
    bodies = [dict(prompt=p, max_tokens=64, temperature=0, stream=True) for p in prompts]
    alone = []
    for b in bodies:
        st, _, events, raw = stream(srv, "/v1/completions", b)
        ok, objs = parse_events(events, raw)
        check(st == 200 and ok, "kv pool: reference %s" % b)
        alone.append(text_of(objs, False))
    results, lock, usage = [], threading.Lock(), []

    def client(ci):
        try:
            st, _, events, raw = stream(srv, "/v1/completions", bodies[ci % len(bodies)])
            ok, objs = parse_events(events, raw)
            res = (ci, st, ok, text_of(objs, False))
        except Exception as ex:  # noqa: BLE001 - any failure of a client is a test failure
            res = (ci, repr(ex), False, None)
        with lock:
            results.append(res)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        usage.append(metrics(srv)[2]["vkllm_kv_cache_usage_ratio"])
        time.sleep(0.05)
    for t in threads:
        t.join()
    check(len(results) == 32 and all(r[1] == 200 and r[2] for r in results),
          "kv pool: all 32 concurrent requests complete: %s" % [r[:3] for r in results if r[1] != 200 or not r[2]])
    bad = [(r[0], r[3], alone[r[0] % len(bodies)]) for r in results if r[3] != alone[r[0] % len(bodies)]]
    check(not bad, "kv pool: every output equals the same request alone (%d differ): %s" % (len(bad), bad[:2]))
    time.sleep(0.2)
    m = metrics(srv)[2]
    check(max(usage) > 0 and m["vkllm_kv_cache_usage_ratio"] == 0 and m["vkllm_kv_cache_blocks_used"] == 0,
          "kv pool: usage grows under load (peak %.3f) and is 0 idle" % max(usage))
    print("kv pool: 32 slots x 2048 positions in %.1f MiB (%d blocks), peak usage %.1f%%" %
          (m["vkllm_kv_cache_pool_bytes"] / 1048576, m["vkllm_kv_cache_blocks_total"], 100 * max(usage)), flush=True)
    # the same ~1500-token prompt twice (max_tokens 1): the second from the cache
    story = ("Once upon a time there was a little girl named Lily. She liked to play in the park with her "
             "friends. One day she saw a big red ball under a tree. ") * 32
    times, outs, n, c2 = twice(srv, {"prompt": story, "max_tokens": 1, "temperature": 0}, "kv pool")
    check(n > 1400 and c2 >= n - 16 and times[1] < 0.25 * times[0],
          "kv pool: a %d-token prompt again: %d cached, %.1f vs %.1f ms" % (n, c2, times[1] * 1e3, times[0] * 1e3))
    m = metrics(srv)[2]
    check(m["vkllm_prefix_cache_queries_tokens_total"] >= n and "vkllm_prefix_cache_hits_tokens_total" in m,
          "kv pool: prefix lookups counted")
    srv.stop("kv pool server")
    # a pool of 10 blocks (160 positions): a longer prompt is refused, a long reply cut at the pool's end
    small = Server("--parallel", "2", "-c", "512", "--kv-cache-mb", "0.1")
    st, _, j, _ = request(small, "POST", "/v1/completions", {"prompt": story[:1500], "max_tokens": 4})
    check(st == 400 and "KV cache" in json.dumps(j), "kv pool: a prompt larger than the pool is a 400: %s %s" % (st, j))
    st, _, j, _ = request(small, "POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 400,
                                                             "temperature": 0, "logit_bias": {"2": -100}})
    u = j.get("usage", {})
    check(st == 200 and j["choices"][0]["finish_reason"] == "length" and
          u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) <= 161,
          "kv pool: a reply that outgrows the pool ends with length: %s %s" % (st, u))
    small.stop("small kv pool server")


def keyed():
    """A second server: API key, one slot, a queue of one, a small context and body limit."""
    srv = Server("--api-key", "sekret", "--parallel", "1", "--queue", "1", "-c", "1024", "--max-body", "16384",
                 "--timeout", "1", "--cors-origin", "*")
    auth = {"Authorization": "Bearer sekret"}
    # --timeout: a connection that sends nothing (or half a request) is closed after it
    idle = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(2)]
    idle[1].sendall(b"GET /health HTTP/1.1\r\nHo")
    t0 = time.monotonic()
    got = [read_all(s, 10) for s in idle]
    took = time.monotonic() - t0
    check(got == [b"", b""] and 0.5 < took < 5, "--timeout 1 closes idle and stalled connections: %r after %.1f s" % (got, took))
    st, _, j, _ = request(srv, "GET", "/health")
    srv.auth = auth
    check(st == 200, "/health needs no key")
    for h in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "sekret"}):
        for path, body in (("/v1/models", None), ("/v1/completions", {"prompt": "x"}), ("/metrics", None)):
            st, r, j, _ = request(srv, "GET" if body is None else "POST", path, body, h)
            check(st == 401 and j["error"]["code"] == "invalid_api_key" and r.getheader("WWW-Authenticate") == "Bearer",
                  "%s with %s: 401 %s %s" % (path, h, st, j))
    st, _, j, _ = request(srv, "GET", "/v1/models", headers=auth)
    check(st == 200, "the right key: 200")
    st, r, _, _ = request(srv, "OPTIONS", "/v1/completions", headers={"Origin": "http://example.com"})
    check(st == 204 and r.getheader("Access-Control-Allow-Origin") == "*", "a preflight needs no key (--cors-origin *): %s" % st)
    st, r, _, _ = request(srv, "GET", "/health", headers={"Origin": "http://example.com"})
    check(r.getheader("Access-Control-Allow-Origin") == "*", "--cors-origin *: any origin")
    # stories260K has no chat template: the server falls back to ChatML (as llama-server), with a warning
    st, _, j, _ = request(srv, "POST", "/v1/chat/completions",
                          {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}, auth)
    check(st == 200 and j["choices"][0]["message"]["role"] == "assistant", "chat without a template: ChatML %s %s" % (st, j))
    check(any("chatml" in line and "warning" in line for line in srv.lines), "the fallback is announced on stderr")

    # body limit
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "x" * 20000}, auth)
    check(st == 413 and j["error"]["message"], "a body over --max-body: 413 %s %s" % (st, j))
    st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 2}, auth)
    check(st == 200, "the connection after a 413 still works")
    s = socket.create_connection(("127.0.0.1", srv.port))  # a huge declared body is refused before it is read
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer sekret\r\n"
              b"Content-Length: 10000000000\r\n\r\n{")
    got = s.recv(65536)
    s.close()
    check(got.startswith(b"HTTP/1.1 413"), "a declared 10 GB body: 413 at once: %r" % got[:100])

    # a prompt longer than the context (1024 tokens): a clear 400, streaming or not
    long_prompt = "Once upon a time there was a little girl named Lily who loved to play in the park with her dog. " * 60
    for s in (False, True):
        st, _, j, _ = request(srv, "POST", "/v1/completions", {"prompt": long_prompt, "stream": s}, auth)
        check(st == 400 and "context" in j["error"]["message"] and j["error"]["param"] == "prompt",
              "prompt longer than the context (stream %s): %s %s" % (s, st, j))

    # 503 when the one slot runs and the one queue place is taken
    sa, got = open_stream(srv, {"prompt": "Once", "max_tokens": 1000, "temperature": 0}, 1, auth)
    check(got.startswith(b"HTTP/1.1 200"), "a long request runs: %r" % got[:100])
    b = {}
    tb = threading.Thread(target=lambda: b.setdefault("r", stream(srv, "/v1/completions",
                          {"prompt": "Lily", "max_tokens": 4, "temperature": 0, "stream": True}, auth)))
    tb.start()
    check(wait_metric(srv, "vkllm_queue_length", lambda v: v == 1, 10) is not None, "the second request waits in the queue")
    st, r, j, _ = request(srv, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 2}, auth)
    check(st == 503 and j["error"]["message"] and j["error"]["type"] == "server_error" and r.getheader("Retry-After") == "1",
          "a full queue: 503 with Retry-After %s %s" % (st, j))
    sa.close()  # the long request's client leaves: the queued one gets the slot
    tb.join(120)
    okb, objs = parse_events(b["r"][2], b["r"][3])
    check(b["r"][0] == 200 and okb and objs[-1]["choices"][0]["finish_reason"] == "length",
          "the queued request runs once the slot is free, and completes")
    mm = metrics(srv)[2]
    check(mm['vkllm_requests_rejected_total'] == 1 and mm["vkllm_slots_busy"] == 0, "rejection counted, slot free")

    # SIGTERM with a stream in flight: it ends, the server exits 0
    evs = []
    first_event = threading.Event()
    tc = threading.Thread(target=lambda: evs.append(stream(srv, "/v1/completions",
                          {"prompt": "Once", "max_tokens": 1000, "temperature": 0, "stream": True}, auth,
                          on_event=lambda e: first_event.set())))
    tc.start()
    first_event.wait(60)
    srv.stop("keyed server with a stream in flight")
    tc.join(30)
    check(not tc.is_alive() and evs and evs[0][0] == 200 and b"shutting down" in evs[0][3] and b"[DONE]" not in evs[0][3],
          "the in-flight stream ends with an error event: %r" % (evs[0][3][-200:] if evs else None))


def main():
    t0 = time.monotonic()
    srv = Server("--chat-template", "chatml", "--parallel", "4", "-c", "1024", "--cors-origin",
                 "http://example.com, http://b.test")
    times = []
    def timed(f, *args):
        t = time.monotonic()
        f(*args)
        times.append((time.monotonic() - t, f.__name__))
    for f in (basics, completions, choices, json_mode, structured, tools, embeddings, chat, prefix_reuse, logprobs,
              validation, text_bytes, methods, tool_history, framing, browsers):
        timed(f, srv)
    timed(tokens, srv, "Once upon a time there was a dog")
    for f in (disconnects, connections):
        timed(f, srv)
    timed(check_metrics, srv, 4)
    print("functional checks: %.1f s" % (time.monotonic() - t0), flush=True)
    timed(load, srv, 4)
    srv.stop("main server")
    report(t0, times)


def servers_mode():
    """The checks that start servers of their own (the main server is not running)."""
    t0, times = time.monotonic(), []
    for f in (stalls, kv_pool, keyed, admission, tools_templates, client_cap, split_devices, exposed, prefill_shutdown):
        t = time.monotonic()
        f()
        times.append((time.monotonic() - t, f.__name__))
    report(t0, times)


def report(t0, times):
    print("total %.1f s; slowest: %s" % (time.monotonic() - t0,
                                         ", ".join("%s %.1f s" % (n, t) for t, n in sorted(times, reverse=True)[:6])))


try:
    {"openai": openai_mode, "web": web_mode, "servers": servers_mode}.get(MODE, main)()
except Exception:
    for srv in servers:  # a server that died says why on its stderr
        print("server stderr (exit %s):\n%s" % (srv.p.poll(), "".join(srv.lines)[-3000:]))
    raise
print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
