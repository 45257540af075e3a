#!/usr/bin/env python3
"""GPUs' 16-byte weight layout (VKLLM_REPACK; runtime/ops/dtensor.c, shaders/repack.comp), end to
end: random Q8_0, Q4_0, Q5_0 and Q4_K_M-mix models (the mix's Q6_K rows of 256 and 1280 values end
in a short group of blocks, so they grow) and a Qwen3-MoE-shaped Q8_0 one (the experts' kernels)
under the nvidia-ampere profile (a GPU's defaults on lavapipe):

- the layout is taken by default on a GPU (the loader's debug log names the matrices it writes in
  it) and not with VKLLM_REPACK=0, nor by default on lavapipe as itself (a CPU device);
- every reader gives the same bits with the layout as without it: prefill (13 ids: the tiled
  matmul's staging; with --ubatch 4, the batched matvec), decode (the matvec, with x in f32 and in
  int8), the embedding lookup (token_embd is in the file's type);
- the longer Q6_K rows are counted: the weights' device bytes grow by what the layout adds.
Each reader is checked element by element against the reference in `vkllm selftest` (its
repack=1 cases); test_op_matvec checks the device's bytes against vkllm__rp_pack."""
import json, os, re, subprocess, sys, tempfile

VKLLM = sys.argv[1]
failures = []
def check(c, what):
    print(("ok: " if c else "FAIL: ") + what)
    if not c:
        failures.append(what)

def run(args, env=None, timeout=300):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("VKLLM_REPACK", "VKLLM_MATVEC_X", "VKLLM_LOG"))}
    e.update(env or {})
    r = subprocess.run([VKLLM] + args, capture_output=True, text=True, env=e, timeout=timeout)
    if r.returncode:
        check(False, "%s exits 0: %s" % (" ".join(args[:1]), r.stderr[-600:]))
    return r if r.returncode == 0 else None

gpu = {"VKLLM_DEVICE_PROFILE": "nvidia-ampere"}
ids = "1 300 301 302 5 9 77 400 12 13 14 15 16"
LAYOUT = re.compile(r"rows (\d+)\.\.(\d+) of a (\S+) matrix of (\d+) x (\d+) in the 16-byte layout")
with tempfile.TemporaryDirectory() as tmp:
    # (name, make-model arguments): q4_K_m puts attn_v, half of ffn_down and the output in Q6_K
    models = [(t, ["--type", t]) for t in ("q8_0", "q4_0", "q5_0")] + \
        [("q4_K_m", ["--type", "q4_K_m", "--n-ff", "1280", "--n-layer", "3"]),
         ("qwen3moe q8_0", ["--arch", "qwen3moe", "--type", "q8_0", "--n-ff", "256"])]
    for name, extra in models:
        path = os.path.join(tmp, name.replace(" ", "-") + ".gguf")
        run(["make-model", "--n-embd", "256", "--n-ff", "768", "--n-head", "4", "--n-head-kv", "2",
             "--n-layer", "2", "--vocab", "600", "-o", path] + extra)

        def logits(env, *more):
            r = run(["logits", "-m", path, "--json", "--ids", ids, "--top", "5"] + list(more), env)
            return json.loads(r.stdout) if r else None

        # a load: the matrices written in the layout (the loader's debug log) and the weights' device bytes
        def load(env):
            r = run(["run", "-m", path, "-p", "", "-n", "1", "-c", "64", "--stats", "json"], dict(env, VKLLM_LOG="debug"))
            laid = [(int(r1) - int(r0), t, int(m), int(k)) for r0, r1, t, m, k in LAYOUT.findall(r.stderr)] if r else []
            mem = [json.loads(l)["memory"]["device"] for l in ((r.stdout + r.stderr).splitlines() if r else [])
                   if l.startswith('{"memory"')]
            return laid, (mem[0].get("weights") if mem else None)
        laid, w1 = load(gpu)
        types = {t for _, t, _, _ in laid}
        want = {"q4_K_m": {"q6_K"}}.get(name, {name.split()[-1]})
        check(types == want, "%s: the layout taken by default on a GPU, by the %s matrices (%s)" %
              (name, "/".join(sorted(want)), ", ".join(sorted({"%s %dx%d" % m[1:] for m in laid})) or "none"))
        off, w0 = load(dict(gpu, VKLLM_REPACK="0"))
        check(not off, "%s: no layout with VKLLM_REPACK=0" % name)
        check(not load({})[0], "%s: no layout on lavapipe as a CPU device" % name)
        # the layout's longer Q6_K rows are counted: 16 - 2 r more bytes a row of 8 n + r blocks (each
        # buffer rounded up to the device's alignment, at most 256 bytes, with and without the layout)
        grow = sum(n * (16 - 2 * (k // 256 % 8)) for n, t, m, k in laid if t == "q6_K" and k // 256 % 8)
        check(w1 is not None and w0 is not None and (w1 > w0) == (grow > 0) and abs(w1 - w0 - grow) < 256 * len(laid),
              "%s: the weights take %s bytes with the layout, %s without it (%d more expected, give or take the "
              "buffers' alignment)" % (name, w1, w0, grow))

        for more, what in (((), "prefill"), (("--ubatch", "4"), "prefill in batches of 4"), (("--decode",), "decode")):
            for x8 in ("0", "1"):
                if x8 == "1" and not more:
                    continue  # the tiled matmul does not take x in int8
                a = logits(dict(gpu, VKLLM_REPACK="1", VKLLM_MATVEC_X8=x8), *more)
                b = logits(dict(gpu, VKLLM_REPACK="0", VKLLM_MATVEC_X8=x8), *more)
                check(a and len(a) == len(ids.split()) and a == b,
                      "%s: %s, x in %s: logits with the layout and without it bit-identical" %
                      (name, what, "int8" if x8 == "1" else "f32"))

print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
