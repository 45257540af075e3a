#!/usr/bin/env python3
"""POST /v1/completions/render and /v1/chat/completions/render on stories260K (python3 stdlib).

test_serve_render.py VKLLM

A router that matches prefixes precisely (the llm-d router's KV-cache scorer) asks these for the
token ids a request will evaluate, so they must be exactly the ids the real endpoint evaluates.
Checked against the real endpoint and the CLI, for text prompts (BOS as the model asks, special
token text left as text), token-id prompts (BOS added once, never twice), the empty prompt, a
batch, and chat requests (the template rendered, tools included, then tokenized with special
tokens parsed):
  - the ids equal `vkllm tokenize` of the same text (for chat: of /apply-template's prompt, with
    --parse-special);
  - their count equals usage.prompt_tokens of the same body at the real endpoint;
  - the ids sent back as a token-id prompt give the same greedy text as the body itself;
  - the real endpoint's 400s are render's 400s (bad ids, a prompt over the context, no prompt);
  - /metrics counts both endpoints.
"""
import json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_proc import Server, check, finish, model  # noqa: E402

VKLLM = sys.argv[1]
MODEL = model()
CTX = 1024
srv = Server(VKLLM, MODEL, "--parallel", "1", "-c", str(CTX))


def request(method, path, body=None):
    st, _, out = srv.request(method, path, body)
    try:
        return st, json.loads(out)
    except ValueError:
        return st, out.decode(errors="replace")


def cli_ids(text, special=False):
    args = [VKLLM, "tokenize", "-m", MODEL, "--ids"] + (["--parse-special"] if special else []) + ["-f", "/dev/stdin"]
    r = subprocess.run(args, input=text.encode(), capture_output=True)
    check(r.returncode == 0, "vkllm tokenize: %s" % r.stderr.decode()[-500:])
    return [int(x) for x in r.stdout.split()]


def real(path, body):
    st, j = request("POST", path, dict(body, max_tokens=8, temperature=0))
    check(st == 200, "%s: 200 %s %s" % (path, st, j))
    if st != 200:
        return 0, ""
    ch = j["choices"][0]
    return j["usage"]["prompt_tokens"], ch["message"]["content"] if "message" in ch else ch["text"]


def render(path, body, what):
    st, j = request("POST", path + "/render", body)
    check(st == 200 and isinstance(j, dict) and isinstance(j.get("token_ids"), list), "%s: render 200 %s %s" % (what, st, j))
    return j.get("token_ids", []) if isinstance(j, dict) else []


BOS = cli_ids("")  # the model's BOS alone: stories260K puts one in front
check(BOS == [1], "stories260K starts from BOS 1: %s" % BOS)
TEXT = "Once upon a time, there was a little dog named Spot. He liked to run"

# text prompts: the CLI's ids (BOS as the model asks), the real endpoint's count, the same text
for what, prompt in (("text", TEXT), ("special-token text stays text", "<s>Once upon</s> a time"),
                     ("unicode", "Lily saw a caf\u00e9 \u2014 \u00fcber \U0001F600"), ("empty", "")):
    ids = render("/v1/completions", {"prompt": prompt}, what)
    check(ids == cli_ids(prompt) and ids[:1] == BOS and BOS[0] not in ids[1:],
          "%s: render = vkllm tokenize, BOS once: %s vs %s" % (what, ids, cli_ids(prompt)))
    n, text = real("/v1/completions", {"prompt": prompt})
    check(n == len(ids), "%s: usage.prompt_tokens %d = %d render ids" % (what, n, len(ids)))
    n2, text2 = real("/v1/completions", {"prompt": ids})
    check(n2 == len(ids) and text2 == text, "%s: the ids as the prompt evaluate the same: %d %r vs %d %r" % (what, n2, text2, n, text))

# token-id prompts: BOS goes in front unless the ids start with it
ids = cli_ids(TEXT)
for what, prompt in (("ids without BOS", ids[1:]), ("ids with BOS", ids)):
    got = render("/v1/completions", {"prompt": prompt}, what)
    check(got == ids, "%s: BOS in front once: %s" % (what, got))
    n, _ = real("/v1/completions", {"prompt": prompt})
    check(n == len(got), "%s: usage.prompt_tokens %d = %d" % (what, n, len(got)))

# a batch: one array per prompt
got = render("/v1/completions", {"prompt": ["Once upon", ids[1:5]]}, "batch")
check(got == [cli_ids("Once upon"), ids[:5]], "batch: an array per prompt: %s" % got)

# chat: the template rendered (tools included), then tokenized with special tokens parsed
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "the weather in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
for what, body in (("chat", {"messages": [{"role": "system", "content": "You tell short stories."},
                                          {"role": "user", "content": "A story about a dog, please."}]}),
                   ("chat with history", {"messages": [{"role": "user", "content": "Hi"},
                                                       {"role": "assistant", "content": "Once upon a time"},
                                                       {"role": "user", "content": "Go on"}]}),
                   ("chat with tools", {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS})):
    ids = render("/v1/chat/completions", body, what)
    st, j = request("POST", "/apply-template", body)
    want = cli_ids(j["prompt"], special=True) if st == 200 else None
    check(want is not None and ids == want and ids[:1] == BOS,
          "%s: render = vkllm tokenize --parse-special of /apply-template's prompt: %s vs %s" % (what, ids, want))
    n, text = real("/v1/chat/completions", body)
    check(n == len(ids), "%s: usage.prompt_tokens %d = %d render ids" % (what, n, len(ids)))
    if "tools" not in body:  # the same ids as a completion's prompt: the same greedy text
        n2, text2 = real("/v1/completions", {"prompt": ids})
        check(n2 == n and text2 == text, "%s: its ids as a completion's prompt: %r vs %r" % (what, text2, text))

# the real endpoint's 400s are render's
for what, path, body, param in (("an id outside the vocabulary", "/v1/completions", {"prompt": [1, 5, 99999]}, "prompt"),
                                ("a prompt over the context", "/v1/completions", {"prompt": "Once upon a time " * 300}, "prompt"),
                                ("no prompt", "/v1/completions", {"max_tokens": 3}, "prompt"),
                                ("no messages", "/v1/chat/completions", {"prompt": "x"}, "messages")):
    st, j = request("POST", path + "/render", body)
    st2, j2 = request("POST", path, dict(body, max_tokens=2))
    check(st == 400 and st2 == 400 and j["error"]["param"] == param and j2["error"]["param"] == param,
          "%s: 400 at render and at the real endpoint, param %s: %s %s / %s %s" % (what, param, st, j, st2, j2))
st, j = request("POST", "/v1/completions/render", [1, 2])
check(st == 400, "a body that is not an object: 400 %s" % st)
st, j = request("GET", "/v1/chat/completions/render")
check(st == 405, "render takes POST: %s" % st)

st, out = request("GET", "/metrics")
counted = {k: float(v) for k, v in re.findall(r'vkllm_requests_total\{endpoint="([^"]+/render)"\} (\S+)', out)}
check(counted.get("/v1/completions/render", 0) >= 10 and counted.get("/v1/chat/completions/render", 0) >= 4,
      "/metrics counts the render endpoints: %s" % counted)

srv.stop("the server")
finish("ok: render = the real endpoint's ids (text, ids, empty, batch, chat, tools), 400s alike")
