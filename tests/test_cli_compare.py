#!/usr/bin/env python3
"""`vkllm compare` on stories260K (lavapipe against the scalar C reference): the JSON report's
agreement is tight (top-1 100%, max |logit diff| and KL small) and symmetric (the reference
measured against the device gives the same numbers over the same tokens), every depth has its
prefill and decode speed, KV bytes grow by exactly the bytes per token times the depth, the decode
step's kernels are listed; the HTML report is one file with four SVG charts and no script; the
Markdown report has its sections; bad options are a clear exit 2. Validation layer on (CTest)."""
import json, os, subprocess, sys, tempfile

VKLLM = sys.argv[1]
REQUIRE = os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1"
models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
MODEL = os.path.join(models, "stories260K.gguf")
if not os.path.exists(MODEL):
    if REQUIRE:
        print("FAIL: missing", MODEL, "(VKLLM_REQUIRE_TEST_MODELS=1)"); sys.exit(1)
    print("SKIPPED: missing", MODEL); sys.exit(77)

failures = []
def check(c, what):
    print(("ok: " if c else "FAIL: ") + what)
    if not c:
        failures.append(what)

def run(args, code=0):
    r = subprocess.run([VKLLM, "compare", "-m", MODEL] + args, capture_output=True, text=True, timeout=300)
    check(r.returncode == code, "compare %s exits %d: %d %s" % (" ".join(args), code, r.returncode, r.stderr[-1500:]))
    check(code != 0 or "validation" not in r.stderr.lower(), "validation layer silent")
    return r

common = ["-p", "32", "-n", "8", "--depths", "0,64,192", "--steps", "24", "-r", "1"]
j = json.loads(run(common + ["--devices", "0,ref", "-o", "json"]).stdout)
dev, ref = j["devices"]
check(j["baseline"].startswith("the scalar C reference") and ref["baseline"] and not dev["baseline"], "ref is the baseline")
a = dev["agreement"]
n_prompt = a["positions"] - 24
check(n_prompt > 5, "positions: the prompt and 24 greedy steps (%d)" % a["positions"])
check(a["top1_agreement"] == 1.0 and 0 < a["max_abs_diff"] < 0.25 and a["mean_abs_diff"] < 0.02 and a["mean_kl"] < 1e-4,
      "lavapipe agrees with the reference: %s" % a)
check([s["depth"] for s in dev["speed"]] == [0, 64, 192] and all(s["pp_tps"] > 0 and s["tg_tps"] > 0 for s in dev["speed"]),
      "pp and tg at every depth: %s" % dev["speed"])
check(all(s["kv_bytes"] == dev["kv_bytes_per_token"] * s["depth"] for s in dev["speed"]) and dev["kv_bytes_per_token"] > 0,
      "KV bytes = bytes per token x depth")
check(all(abs(s["decode_gbps"] - s["tg_tps"] * dev["decode_bytes_per_token"] / 1e9) < 1e-9 for s in dev["speed"]),
      "decode GB/s = tokens/s x weight bytes per token")
check(dev["peak_gbps"] is None, "lavapipe has no known peak (none is made up)")
ks = {k["kernel"]: k for k in dev["kernels"]}
check(len(ks) >= 4 and all(k["gpu_ms"] > 0 and k["calls"] > 0 for k in ks.values()), "the decode step's kernels: %s" % list(ks))

# the other way round: the reference against the device, over the device's greedy tokens
j2 = json.loads(run(common + ["--devices", "ref,0", "--baseline", "0", "-o", "json"]).stdout)
a2 = next(d for d in j2["devices"] if not d["baseline"])["agreement"]
check(a2["positions"] == a["positions"] and abs(a2["max_abs_diff"] - a["max_abs_diff"]) < 1e-6 and
      abs(a2["mean_abs_diff"] - a["mean_abs_diff"]) < 1e-6, "symmetric: %s vs %s" % (a2, a))

check(a["near_ties"] == 0 and a["top1_agreement_beyond_ties"] == 1.0, "no near-ties needed: %s" % a)

# two logical devices on one host (the system lavapipe listed twice through VK_ICD_FILENAMES): the
# report holds both, and the agreement is computed: device 1 against device 0 is exactly 0, the
# reference against device 0 is not
icd = next((p for p in ("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", "/usr/share/vulkan/icd.d/lvp_icd.json")
            if os.path.exists(p)), None)
if icd and not os.environ.get("VK_ICD_FILENAMES"):
    with tempfile.TemporaryDirectory() as d:
        icds = [os.path.join(d, n) for n in ("a.json", "b.json")]
        for p in icds:
            open(p, "w").write(open(icd).read())
        env = dict(os.environ, VK_ICD_FILENAMES=":".join(icds), VK_DRIVER_FILES=":".join(icds))
        r = subprocess.run([VKLLM, "compare", "-m", MODEL, "--devices", "0,1,ref", "--baseline", "0", "-o", "json"] + common,
                           capture_output=True, text=True, timeout=300, env=env)
        check(r.returncode == 0, "two lavapipes and the reference: %s" % r.stderr[-800:])
        if r.returncode == 0:
            jj = json.loads(r.stdout)
            by = {str(x["index"]): x for x in jj["devices"]}
            check(sorted(by) == ["0", "1", "ref"] and by["0"]["baseline"] and by["1"]["agreement"]["max_abs_diff"] == 0
                  and by["1"]["agreement"]["top1_agreement"] == 1.0 and by["ref"]["agreement"]["max_abs_diff"] > 0
                  and len(by["1"]["speed"]) == 3, "both devices in the report, agreement computed: %s" %
                  {k: v.get("agreement") for k, v in by.items()})
elif not icd:
    check(False, "the system lavapipe's ICD file (mesa-vulkan-drivers) to list twice")
else:
    print("note: VK_ICD_FILENAMES is set by the caller: the two-device part follows it, not run here")

with tempfile.TemporaryDirectory() as d:
    html = os.path.join(d, "r.html")
    run(common + ["--devices", "0", "--peak-gbps", "2", "-o", "html", "--out", html])
    page = open(html).read()
    check(page.count("<svg") == 4 and page.count("<polyline") == 3 and "<script" not in page.lower() and
          "stroke-dasharray" in page, "HTML: four SVG charts (three line charts, kernel bars with the peak line), no script")
md = run(common + ["--devices", "0,ref"]).stdout
check(all(h in md for h in ("## Agreement with", "## Speed", "## Memory", "## Kernels of one decode step")), "Markdown sections")
r = run(["--devices", "0,x"], code=2)
check("comma-separated" in r.stderr, "a bad device list: exit 2 with a message")
r = run(["-o", "pdf"], code=2)
check("-o takes" in r.stderr, "a bad format: exit 2")
print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
