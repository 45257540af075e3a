#!/usr/bin/env python3
"""scripts/gpu-check.sh --local: exits 0, writes the report files it promises (at most 8, the
device tool's limit), and the summary names every step as passed, with logits within bounds and a
tokens/s row per file and test. SKIPPED without stories260K (the script needs it)."""
import json, os, shutil, subprocess, sys

script, build = sys.argv[1], sys.argv[2]
models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
if not os.path.exists(os.path.join(models, "stories260K.gguf")):
    if os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1":
        print("FAIL: missing stories260K.gguf in", models); sys.exit(1)
    print("SKIPPED: missing stories260K.gguf in", models); sys.exit(77)
out = os.path.join(build, "gpu-check-test")
shutil.rmtree(out, ignore_errors=True)
env = dict(os.environ, VKLLM_TEST_MODELS=models, PEER_DIR="/nonexistent")  # no peer: reproducible
r = subprocess.run(["sh", script, "--local", "--build", build, "--out", out], capture_output=True, text=True,
                   env=env, timeout=580)
failures = []
def check(c, what):
    if not c:
        failures.append(what); print("FAIL:", what)
check(r.returncode == 0, "exit 0: " + r.stdout[-2000:] + r.stderr[-2000:])
files = sorted(os.listdir(out)) if os.path.isdir(out) else []
want = ["bench.json", "devices.json", "log.txt", "logits.json", "profile.md", "selftest.json", "summary.md", "tests.log"]
check(files == want, "report files %s" % files)
summary = open(os.path.join(out, "summary.md")).read() if "summary.md" in files else ""
for step in ("devices", "selftest_json", "make_q8_0", "make_q4_K", "make_q4_K_m", "logits", "bench_small-q8_0",
             "bench_small-q4_K", "bench_small-q4_K_m", "profile_small-q4_K", "profile_small-q4_K_m", "decode_x8_-1",
             "decode_x8_1", "decode_x8_0", "test_vk"):
    check("| %s | pass |" % step in summary, "step %s passed" % step)
check("FAIL" not in summary, "no step failed")
if "logits.json" in files:
    lg = json.load(open(os.path.join(out, "logits.json")))
    check(len(lg) == 3 and all(e["ok"] for e in lg), "logits agree with the reference: %s" % lg)
if "bench.json" in files:
    rows = json.load(open(os.path.join(out, "bench.json")))["vkllm"]
    check(len(rows) == 6 and all(x["avg_ts"] > 0 for x in rows), "six bench rows with tokens/s (pp, tg of 3 files)")
if "selftest.json" in files:
    st = json.load(open(os.path.join(out, "selftest.json")))
    check(st["failed"] == 0 and st["ok"] > 20, "selftest: %d ok, %d failed" % (st["ok"], st["failed"]))
check("| small-q8_0.gguf | tg16 |" in summary and "| small-q4_K_m.gguf | tg16 |" in summary and "(no llama.cpp peer in this run)" in summary, "speed table")
prof = open(os.path.join(out, "profile.md")).read() if "profile.md" in files else ""
check(all(prof.count("VKLLM_MATVEC_X8=%s: " % v) == 1 for v in ("-1", "1", "0")) and prof.count("tg:") >= 3,
      "profile.md: decode with matvec_x8 by default, everywhere, nowhere (--local: once each)")
check(all(prof.count("VKLLM_MATVEC_NR=%s: " % v) == 1 for v in ("1", "2", "4")),
      "profile.md: decode with 1, 2 and 4 rows per invocation (--local: once each)")
check(all(prof.count("VKLLM_MATMUL_%s: " % v) == 1 for v in ("COOPMAT=1", "COOPMAT=0", "F16=0")) and prof.count("pp:") >= 3,
      "profile.md: prefill with cooperative matrices, f16 tiles and f32 tiles (--local: once each)")
print(summary)
print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
