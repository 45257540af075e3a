#!/usr/bin/env python3
"""`vkllm run` on stories260K: llama2.c's greedy text exactly, seeds reproduce, stop strings across
token boundaries, EOS, a prompt longer than the context, Ctrl-C, the --stats json metrics, and
output constrained by --grammar, --grammar-file and -j (a JSON schema)."""
import json, os, signal, subprocess, sys, time

VKLLM = sys.argv[1]
models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
model = os.path.join(models, "stories260K.gguf")
vectors = os.path.join(models, "llama2c-test-vectors.json")
if not os.path.exists(model) or not os.path.exists(vectors):
    if os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1":
        print("FAIL: missing test models in", models); sys.exit(1)
    print("SKIPPED: missing", model); sys.exit(77)
expected = [x for x in json.load(open(vectors))["stories260K_greedy"] if "-n 200" in x["command"]][0]["expected_stdout"]

failures = []
def check(c, what):
    if not c:
        failures.append(what); print("FAIL:", what)

def run(*args, timeout=300):
    return subprocess.run([VKLLM, "run", "-m", model, "--stats", "json"] + list(args), capture_output=True, text=True,
                          timeout=timeout)

def stats_of(r):
    lines = [l for l in r.stderr.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {}

# llama2.c's text, exactly
r = run("--temp", "0", "-n", "200", "-p", "")
check(r.returncode == 0, "greedy run exits 0: " + r.stderr)
check(r.stdout.rstrip("\n") == expected, "greedy 200 tokens from BOS equal llama2.c's expected_stdout")
s = stats_of(r)
check(s.get("n_generated") == 200 and s.get("stop_reason") == "max_tokens", "200 tokens, stopped by -n: %s" % s)
for k in ("ttft_ms", "prefill_tps", "itl_p50_ms", "itl_p90_ms", "itl_max_ms", "decode_tps", "kv_bytes_used",
          "kv_bytes_allocated", "device_bytes"):
    check(k in s and s[k] > 0, "stat %s measured (%s)" % (k, s.get(k)))
check(s.get("kv_bytes_cached") == 0 and s.get("kv_bytes_allocated", 0) >= s.get("kv_bytes_used", 1),
      "KV bytes cached (none: the session holds its blocks) and allocated: %s" % s)
check(s.get("ttft_ms", 0) <= s.get("total_ms", 0), "ttft within the total")

# --show-probs: the same text, then one line per generated token: its probability (greedy: the top one)
r2 = run("--temp", "0", "-n", "20", "-p", "", "--show-probs", "3")
lines = [l for l in r2.stderr.splitlines() if l[:5].strip().isdigit() and "%" in l]
check(r2.returncode == 0 and expected.startswith(r2.stdout.rstrip("\n")) and len(lines) == 20,
      "--show-probs: greedy text unchanged, 20 token lines: %s" % r2.stderr[-500:])
for l in lines:
    tok, top = l.split("|", 1)
    p, alts = float(tok.split()[-1].rstrip("%")), [float(x.rstrip("%")) for x in top.split() if x.endswith("%")]
    check(len(alts) == 3 and abs(p - alts[0]) < 1e-9 and alts == sorted(alts, reverse=True) and sum(alts) <= 100.001,
          "--show-probs line: the chosen token is the most likely, 3 candidates, highest first: %r" % l)
r3 = subprocess.run([VKLLM, "run", "-m", model, "-n", "2", "--show-probs", "21"], capture_output=True, text=True)
check(r3.returncode == 2, "--show-probs above 20: a usage error")

# with a prompt, the greedy continuation equals the scalar reference forward pass's
prompt = "Once upon a time, there was a dog"
ids = subprocess.run([VKLLM, "tokenize", "-m", model, "--ids", prompt], capture_output=True, text=True).stdout.split()
check(len(ids) > 3, "prompt tokenized: %s" % ids)
gen = []
for _ in range(24):
    r = subprocess.run([VKLLM, "logits", "-m", model, "--device", "ref", "--top", "1", "--json", "--ids", " ".join(ids + gen)],
                       capture_output=True, text=True)
    gen.append(str(json.loads(r.stdout)[-1]["top"][0][0]))
ref_text = subprocess.run([VKLLM, "detokenize", "-m", model] + gen, capture_output=True, text=True).stdout
r = run("--temp", "0", "-n", "24", "-p", prompt)
# detokenize drops SentencePiece's leading space of the first piece; run keeps it (a continuation)
check(r.stdout.startswith(" ") and r.stdout.strip() == ref_text.strip(), "continuation equals the reference: %r vs %r" % (r.stdout, ref_text))

# seeds reproduce; temperature 0 is greedy
a = run("--temp", "0.9", "--seed", "1234", "-n", "60", "-p", "Once upon a time")
b = run("--temp", "0.9", "--seed", "1234", "-n", "60", "-p", "Once upon a time")
check(a.returncode == 0 and a.stdout == b.stdout, "the same seed gives the same text")
check(stats_of(a).get("seed") == 1234, "seed reported")
c = run("--temp", "0.9", "-n", "60", "-p", "Once upon a time")
check("seed" in stats_of(c), "a picked seed is reported")
# a picked seed (64 bits: above 2^53 a double would round it) gives the same text again
d = run("--temp", "0.9", "-n", "60", "-p", "Once upon a time", "--seed", str(stats_of(c).get("seed", 0)))
check(d.stdout == c.stdout and stats_of(d).get("seed") == stats_of(c).get("seed"),
      "the reported seed %s reproduces the text" % stats_of(c).get("seed"))
big = 2**64 - 3
e, f = (run("--temp", "1.5", "-n", "30", "-p", "Once", "--seed", str(s)) for s in (big, big - 1))
check(stats_of(e).get("seed") == big and e.stdout != f.stdout, "seeds above 2^53 are whole: %s" % stats_of(e).get("seed"))
for bad in ("-5", "1.5", "x", "18446744073709551616"):
    r = run("--seed", bad, "-p", "Once", "-n", "2")
    check(r.returncode == 2 and "--seed" in r.stderr, "--seed %s: refused: %s" % (bad, r.stderr[-200:]))
r = run("--seed", "-1", "-p", "Once", "-n", "2")
check(r.returncode == 0, "--seed -1: a picked seed (llama.cpp's spelling)")
# a prompt or grammar file that cannot be read is an error, not an empty prompt
r = run("-f", "/tmp", "-n", "3")
check(r.returncode == 3 and "cannot read /tmp" in r.stderr and not r.stdout, "-f DIR: %s %r" % (r.returncode, r.stderr[-200:]))
r = run("--grammar-file", "/tmp", "-p", "Once", "-n", "3")
check(r.returncode != 0 and "cannot read /tmp" in r.stderr, "--grammar-file DIR: %s %r" % (r.returncode, r.stderr[-200:]))
r = run("-p", "Once", "-f", "/dev/null", "-n", "3")
check(r.returncode == 2 and "-p and -f" in r.stderr, "-p and -f together: refused: %r" % r.stderr[-200:])

# the sampler order is configurable; a bad stage name is a clear error
r = run("--samplers", "temperature;top_k", "--seed", "7", "-n", "20", "-p", "Once")
check(r.returncode == 0 and stats_of(r).get("n_generated") == 20, "--samplers temperature;top_k: " + r.stderr)
r = run("--samplers", "top_q", "-p", "Once")
check(r.returncode != 0 and "top_q" in r.stderr and r.stderr.count("\n") == 1, "bad --samplers: " + r.stderr)

# a stop string across token boundaries is not printed, nor anything after it
r = run("--temp", "0", "-n", "200", "-p", "", "--stop", "red ball")
check(r.stdout.rstrip("\n") == expected[:expected.index("red ball")], "output ends right before the stop string")
check(stats_of(r).get("stop_reason") == "stop_string", "stop reason stop_string")

# EOS (forced with a logit bias on token 2) ends the generation
r = run("--temp", "0", "-n", "50", "-p", "Once", "--logit-bias", "2:100")
check(r.returncode == 0 and stats_of(r).get("stop_reason") == "eos" and stats_of(r).get("n_generated") == 0,
      "EOS stops cleanly: %s" % r.stderr)

# a prompt longer than the context: one clear line, non-zero exit
r = run("-c", "8", "-p", "Once upon a time there was a little girl named Lily who loved to play")
lines = [l for l in r.stderr.splitlines() if l.strip()]
check(r.returncode != 0 and len(lines) == 1 and "context" in lines[0], "long prompt: %s" % r.stderr)

# a full context ends the generation and says so
r = run("--temp", "0", "-c", "16", "-p", "Once upon a time")
check(r.returncode == 0 and stats_of(r).get("stop_reason") == "context_full", "full context: %s" % r.stderr)

# Ctrl-C stops the reply, the program still reports
p = subprocess.Popen([VKLLM, "run", "-m", model, "--stats", "json", "--temp", "0", "-c", "2048", "-p", ""],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(1.5)
p.send_signal(signal.SIGINT)
out, err = p.communicate(timeout=60)
st = [l for l in err.splitlines() if l.startswith("{")]
check(p.returncode == 0 and st and json.loads(st[-1]).get("stop_reason") in ("cancelled", "context_full"),
      "SIGINT: exit %s, %s" % (p.returncode, err))

# grammars and JSON schemas: the text is a sentence of the grammar, the JSON valid under the schema
import re, tempfile
g = 'root ::= "The " ("cat" | "dog") " is " [a-z]+ "."'
r = run("--temp", "0", "-n", "40", "-p", "Once", "--grammar", g)
check(r.returncode == 0 and re.fullmatch(r"The (cat|dog) is [a-z]+\.", r.stdout.rstrip("\n")) and
      stats_of(r).get("stop_reason") == "eos", "--grammar: %r %s" % (r.stdout, r.stderr[-300:]))
with tempfile.NamedTemporaryFile("w", suffix=".gbnf", delete=False) as f:
    f.write("# a list\nroot ::= item (\", \" item){2}\nitem ::= [0-9]{1,3}\n")
r = run("--temp", "0.8", "--seed", "4", "-n", "40", "-p", "Once", "--grammar-file", f.name)
check(r.returncode == 0 and re.fullmatch(r"[0-9]{1,3}(, [0-9]{1,3}){2}", r.stdout.rstrip("\n")), "--grammar-file: %r" % r.stdout)
os.unlink(f.name)
schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}},
          "required": ["name", "n"], "additionalProperties": False}
r = run("-n", "40", "--seed", "1", "-p", "Lily", "-j", json.dumps(schema))
try:
    o = json.loads(r.stdout)
    ok = set(o) == {"name", "n"} and isinstance(o["name"], str) and len(o["name"]) <= 12 and isinstance(o["n"], int)
except ValueError:
    ok = False
check(r.returncode == 0 and ok, "-j: JSON under the schema within 40 tokens: %r" % r.stdout)
for args, what in ((["--grammar", "root ::= nope"], "never defined"), (["-j", '{"type": "string", "pattern": "x"}'], "pattern"),
                   (["-j", "{oops"], "not valid JSON"), (["--json-object", "--grammar", g], "cannot be combined")):
    r = run("-n", "4", "-p", "x", *args)
    check(r.returncode == 2 and what in r.stderr, "%s: exit 2 naming the problem: %s %r" % (args, r.returncode, r.stderr))

print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
