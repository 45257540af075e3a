#!/usr/bin/env python3
"""`vkllm bench` on a small random model: every output format parses, rows carry llama-bench's
field names, pp rows have n_gen 0 and tg rows n_prompt 0, stddev and samples are reported."""
import csv, io, json, os, subprocess, sys, tempfile

VKLLM = sys.argv[1]
failures = []
def check(c, what):
    if not c:
        failures.append(what); print("FAIL:", what)

with tempfile.TemporaryDirectory() as d:
    model = os.path.join(d, "m.gguf")
    r = subprocess.run([VKLLM, "make-model", "--preset", "tiny", "--type", "q8_0", "-o", model], capture_output=True, text=True)
    check(r.returncode == 0, "make-model: " + r.stderr)
    def bench(fmt):
        r = subprocess.run([VKLLM, "bench", "-m", model, "-p", "16", "-n", "4", "-r", "2", "-o", fmt],
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, "bench -o %s exits 0: %s" % (fmt, r.stderr))
        return r.stdout
    rows = json.loads(bench("json"))
    check(len(rows) == 2, "json: a pp row and a tg row")
    for row in rows:
        for k in ("model_size", "model_n_params", "n_prompt", "n_gen", "n_depth", "avg_ts", "stddev_ts",
                  "samples_ts", "gpu_info", "build_commit", "n_ubatch", "type_k", "tensor_types"):
            check(k in row, "json field %s" % k)
        check(len(row.get("samples_ts", [])) == 2 and row.get("avg_ts", 0) > 0 and row.get("stddev_ts", -1) >= 0,
              "samples, average, stddev")
    pp = [x for x in rows if x["n_prompt"]]
    tg = [x for x in rows if x["n_gen"]]
    check(len(pp) == 1 and pp[0]["n_gen"] == 0 and pp[0]["n_prompt"] == 16, "pp row: n_gen 0")
    check(len(tg) == 1 and tg[0]["n_prompt"] == 0 and tg[0]["n_gen"] == 4, "tg row: n_prompt 0")
    check(tg and tg[0].get("effective_gbps", 0) > 0, "tg row reports the effective weight bandwidth")
    lines = [json.loads(l) for l in bench("jsonl").splitlines() if l.strip()]
    check(len(lines) == 2, "jsonl: two rows")
    table = list(csv.DictReader(io.StringIO(bench("csv"))))
    check(len(table) == 2 and "avg_ts" in table[0], "csv: header and two rows")
    md = bench("md")
    check(md.count("\n| llvmpipe") + md.count("\n| ") >= 2 and "pp16" in md and "tg4" in md, "markdown table")
    r = subprocess.run([VKLLM, "bench", "-m", model, "-o", "xml"], capture_output=True, text=True)
    check(r.returncode == 2, "unknown format is a usage error")
print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
