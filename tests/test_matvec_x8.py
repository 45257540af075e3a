#!/usr/bin/env python3
"""GPUs' decode matvec with x in int8 (shaders/matvec_x8.comp), end to end: random Q8_0, Q4_0, Q4_K,
Q5_K and Q6_K models (and a Qwen3-MoE-shaped Q4_K one: the experts' products) decoded under the nvidia-ampere profile (a GPU's code paths; lavapipe offers
the integer dot product instruction) with the kernel forced on (VKLLM_MATVEC_X8=1), against the
scalar reference:

- the kernel ran: the logits differ from the same run with VKLLM_MATVEC_X8=0 (x in f32), and
  `vkllm bench --profile` names matvec_x8dp;
- the default leaves it off where the dot product is not accelerated (lavapipe's is not): the
  logits of x in f32;
- the instruction and the integer arithmetic without it (VKLLM_MATVEC_X8=2) give the same bits, and
  so do x quantized once per step (quantize_x8 + matvec_xq8*, the default) and by every workgroup
  (VKLLM_MATVEC_XQ=0);
- x in int8 (q8_1 as ggml's: one scale per 32) costs accuracy, and no more than that: logits
  within 0.1 of the reference (they are about 3) and the reference's argmax wherever its lead
  over the second is more than 0.05;
- `vkllm selftest` of matvec and matvec_glu with the kernel on passes under another GPU's profile
  (amd-rdna3: its subgroup, shared-memory and workgroup limits).
The kernel itself is checked against the reference element by element in `vkllm selftest`."""
import json, os, subprocess, sys, tempfile

VKLLM = sys.argv[1]
QUICK = "--quick" in sys.argv[2:]  # the sanitizer build: one type (the host code is the same for all)
failures = []
def check(c, what):
    print(("ok: " if c else "FAIL: ") + what)
    if not c:
        failures.append(what)

def run(args, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("VKLLM_MATVEC_X8", None)
    e.pop("VKLLM_MATVEC_XQ", None)
    e.update(env or {})
    r = subprocess.run([VKLLM] + args, capture_output=True, text=True, env=e, timeout=timeout)
    check(r.returncode == 0, "%s exits 0: %s" % (" ".join(args[:1]), r.stderr[-600:]))
    return r.stdout if r.returncode == 0 else ""

gpu = {"VKLLM_DEVICE_PROFILE": "nvidia-ampere"}
ids = "1 300 301 302 5 9 77 400 12 13"
with tempfile.TemporaryDirectory() as tmp:
    # (name, type, architecture): qwen3moe's experts go through the kernel's MATVEC_ID variants
    models = [("q4_K", "q4_K", "llama")] if QUICK else [(t, t, "llama") for t in ("q8_0", "q4_0", "q4_K", "q5_K", "q6_K")] + \
        [("qwen3moe q4_K", "q4_K", "qwen3moe")]
    for t, typ, arch in models:
        path = os.path.join(tmp, t.replace(" ", "-") + ".gguf")
        run(["make-model", "--arch", arch, "--n-embd", "256", "--n-ff", "768" if arch == "llama" else "256", "--n-head",
             "4", "--n-head-kv", "2", "--n-layer", "2", "--vocab", "600", "--type", typ, "-o", path])
        def logits(env=None, dev=None):
            out = run(["logits", "-m", path, "--json", "--ids", ids, "--top", "4", "--decode"] +
                      (["--device", dev] if dev else []), env)
            return json.loads(out) if out else []
        ref = logits(dev="ref")
        x8 = logits(dict(gpu, VKLLM_MATVEC_X8="1"))
        f32 = logits(dict(gpu, VKLLM_MATVEC_X8="0"))
        dflt = logits(gpu)
        check(dflt and dflt == f32, "%s: off by default where the dot product is not accelerated" % t)
        emu = logits(dict(gpu, VKLLM_MATVEC_X8="2"))
        check(x8 and x8 != f32, "%s: the int8-x kernel ran (logits differ from x in f32)" % t)
        check(x8 and x8 == emu, "%s: the dot product instruction and integer arithmetic give the same bits" % t)
        worst, argmax = 0.0, True
        for a, c in zip(x8, ref):
            worst = max([worst] + [abs(l1 - l2) for (i1, l1), (i2, l2) in zip(a["top"], c["top"]) if i1 == i2])
            if c["top"][0][1] - c["top"][1][1] > 0.05 and a["top"][0][0] != c["top"][0][0]:
                argmax = False
        check(len(x8) == len(ref) and worst < 0.1 and argmax,
              "%s: logits within 0.1 of the reference (max %.3g), its argmax where it leads by 0.05" % (t, worst))
        worst_f32 = max([abs(l1 - l2) for a, c in zip(f32, ref) for (i1, l1), (i2, l2) in zip(a["top"], c["top"])
                         if i1 == i2], default=1.0)
        print("%s: max |logit - reference|: x in int8 %.2e, x in f32 %.2e" % (t, worst, worst_f32))
        wg = logits(dict(gpu, VKLLM_MATVEC_X8="1", VKLLM_MATVEC_XQ="0"))
        check(x8 and x8 == wg, "%s: x quantized once per step and by every workgroup give the same bits" % t)
        if t == "q4_K":
            prof = run(["bench", "-m", path, "-p", "8", "-n", "4", "-r", "1", "--profile"], dict(gpu, VKLLM_MATVEC_X8="1"))
            check("matvec_x8dp" in prof, "bench --profile names the prefill's kernel (matvec_x8dp)")
            check("matvec_xq8dp" in prof and "quantize_x8" in prof,
                  "bench --profile names decode's kernels (quantize_x8, then matvec_xq8dp)")
            if not QUICK:  # the knob is host code's choice, the same under the sanitizers
                prof = run(["bench", "-m", path, "-p", "0", "-n", "4", "-r", "1", "--profile"],
                           dict(gpu, VKLLM_MATVEC_X8="1", VKLLM_MATVEC_XQ="0"))
                check("matvec_x8dp" in prof and "quantize_x8" not in prof,
                      "VKLLM_MATVEC_XQ=0: decode quantizes in the workgroups (matvec_x8dp, no quantize_x8)")
for p in ([] if QUICK else ["amd-rdna3"]):  # wave64: 64-lane row groups where lavapipe runs 8
    out = run(["selftest", "--op", "matvec,matvec_glu", "--defaults", "--validate", "--json"],
              {"VKLLM_DEVICE_PROFILE": p, "VKLLM_MATVEC_X8": "1"})
    st = json.loads(out) if out else {"cases": []}
    ran = [c for c in st["cases"] if c.get("kernel", "").startswith("matvec_x8")]
    check(st.get("failed", 1) == 0 and len(ran) >= 8,
          "%s: selftest with the kernel on: %d of its cases ran it, %s failed" % (p, len(ran), st.get("failed")))
print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
