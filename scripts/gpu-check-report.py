#!/usr/bin/env python3
"""gpu-check-report.py - the parts of scripts/gpu-check.sh that read JSON.

  logits VKLLM OUT.json MODEL...        device vs reference logits (prefill and decode) per model
  bench BENCH.jsonl WORKDIR OUT.json    vkllm's bench rows and the peer's results, side by side
  summary OUTDIR STATUS MODE [PEAK]     summary.md on stdout
Exit status of `logits`: 0 when every model agrees with the reference."""
import json, os, subprocess, sys

# Memory bandwidth in GB/s of cards the lent machines may have, from the vendors' data sheets.
PEAK_GBPS = [("H200", 4800), ("H100 PCIe", 2000), ("H100", 3350), ("A100-SXM4-80GB", 2039), ("A100", 1555),
             ("L40S", 864), ("RTX 4090", 1008), ("RTX 3090", 936)]
IDS = {"stories260K.gguf": "1 365 288 285 29 260 307 287 11 402"}
IDS_RANDOM = "1 15 300 1000 27 99 1500 7"


def logits(vkllm, out, models):
    res, ok = [], True
    for m in models:
        ids = IDS.get(os.path.basename(m), IDS_RANDOM)
        runs = {}
        for name, extra in (("prefill", []), ("decode", ["--decode"]), ("ref", ["--device", "ref"])):
            r = subprocess.run([vkllm, "logits", "-m", m, "--json", "--top", "5", "--ids", ids] + extra,
                               capture_output=True, text=True, timeout=900)
            runs[name] = json.loads(r.stdout) if r.returncode == 0 else None
            if r.returncode:
                print("%s %s: exit %d: %s" % (m, name, r.returncode, r.stderr[-500:]))
        entry = {"model": os.path.basename(m), "ids": ids}
        if any(v is None for v in runs.values()):
            entry["ok"] = False
        else:
            ref = runs["ref"]
            scale = max(abs(t[1]) for e in ref for t in e["top"]) or 1.0
            for name in ("prefill", "decode"):
                worst, flips, ties = 0.0, 0, 0
                for a, c in zip(runs[name], ref):
                    rl = dict((i, l) for i, l in c["top"])
                    for i, l in a["top"]:
                        if i in rl:
                            worst = max(worst, abs(l - rl[i]))
                    if a["top"][0][0] != c["top"][0][0]:
                        # a near-tie is no error: the device's pick is within the bound of the best
                        if a["top"][0][0] in rl and c["top"][0][1] - rl[a["top"][0][0]] < 2e-2 * scale:
                            ties += 1
                        else:
                            flips += 1
                entry[name] = {"max_abs": worst, "max_rel": worst / scale, "argmax_differs": flips, "near_ties": ties}
            entry["ok"] = all(entry[n]["argmax_differs"] == 0 and entry[n]["max_rel"] < 2e-2 for n in ("prefill", "decode"))
        ok = ok and entry["ok"]
        print(json.dumps(entry))
        res.append(entry)
    json.dump(res, open(out, "w"), indent=1)
    return 0 if ok else 1


def bench(jsonl, work, out):
    rows = [json.loads(l) for l in open(jsonl) if l.strip()] if os.path.exists(jsonl) else []
    peer = {}
    for f in sorted(os.listdir(work)):
        if f.endswith(".peer.json"):
            try:
                peer[f[:-len(".peer.json")]] = json.load(open(os.path.join(work, f)))
            except ValueError as e:
                peer[f[:-len(".peer.json")]] = {"error": str(e)}
    json.dump({"vkllm": rows, "peer": peer}, open(out, "w"), indent=1)
    return 0


def load(path, default=None):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return default


def summary(outdir, status, mode, peak):
    p = print
    devs = (load(os.path.join(outdir, "devices.json"), {}) or {}).get("devices", [])
    b = load(os.path.join(outdir, "bench.json"), {"vkllm": [], "peer": {}})
    gpu = b["vkllm"][0]["gpu_info"] if b["vkllm"] else (devs[0]["name"] if devs else "?")
    if not peak:
        peak = next((g for n, g in PEAK_GBPS if n in gpu), None)
    peak = float(peak) if peak else None
    p("# vkllm gpu-check (%s)\n" % mode)
    for d in devs:
        p("- device %d: **%s** (%s), %s, Vulkan %s, subgroup %d (%d..%d, control %s), fp16 %s, int dot %s, "
          "coopmat %s, shared %d B" % (d["index"], d["name"], d["type"], d["driver_info"], d["api_version"],
                                      d["subgroup_size"], d["subgroup_size_min"], d["subgroup_size_max"],
                                      d["subgroup_size_control"], d["fp16_arith"], d["integer_dot_product"],
                                      d["cooperative_matrix"], d["max_shared_memory"]))
    p("\n## Steps\n\n| step | result | seconds |\n|---|---|---:|")
    for line in open(status):
        parts = line.split()
        if len(parts) == 3:
            p("| %s | %s | %s |" % tuple(parts))
    st = load(os.path.join(outdir, "selftest.json"))
    if st:
        p("\nselftest: %d ok, %d failed, %d skipped, %d validation messages" %
          (st["ok"], st["failed"], st["skipped"], st["validation_messages"]))
        for c in st["cases"]:  # a skipped case (a feature the device lacks) is not a failure
            if not c["ok"] and not c.get("skipped"):
                p("- FAILED %s %s %s: %s %.3g > %.3g %s" % (c["op"], c["shape"], c["variant"], c["measure"],
                                                          c["err"], c["bound"], c.get("detail", "")))
        sk = {}
        for c in st["cases"]:
            if c.get("skipped"):
                sk.setdefault(c.get("detail", ""), []).append(c["variant"])
        for why, vs in sk.items():
            p("- skipped %d: %s (%s)" % (len(vs), why, ", ".join(sorted(set(vs)))))
    lg = load(os.path.join(outdir, "logits.json"), [])
    if lg:
        p("\n## Logits against the C reference\n\n| model | mode | max abs | max rel | argmax differs | near ties |")
        p("|---|---|---:|---:|---:|---:|")
        for e in lg:
            for n in ("prefill", "decode"):
                if n in e:
                    x = e[n]
                    p("| %s | %s | %.3g | %.3g | %d | %d |" % (e["model"], n, x["max_abs"], x["max_rel"],
                                                              x["argmax_differs"], x["near_ties"]))
    p("\n## Speed (medians; peak %s)\n" % ("%g GB/s" % peak if peak else "unknown: pass --peak-gbps"))
    p("| file | test | vkllm t/s | llama.cpp Vulkan t/s | ratio | vkllm GB/s | of peak |")
    p("|---|---|---:|---:|---:|---:|---:|")
    for r in b["vkllm"]:
        f = os.path.basename(r["model_filename"])
        pp = r["n_prompt"] > 0
        ts = sorted(r["samples_ts"])[len(r["samples_ts"]) // 2]
        pr = b["peer"].get(f, {})
        pts = pr.get("median_prefill_tok_s" if pp else "median_decode_tok_s")
        gbps = r.get("effective_gbps")
        p("| %s | %s | %.2f | %s | %s | %s | %s |" % (
            f, "pp%d" % r["n_prompt"] if pp else "tg%d" % r["n_gen"], ts, "%.2f" % pts if pts else "-",
            "%.2fx" % (ts / pts) if pts else "-", "%.1f" % gbps if gbps else "-",
            "%.1f%%" % (100 * gbps / peak) if gbps and peak else "-"))
    if not b["peer"]:
        p("\n(no llama.cpp peer in this run)")
    p("\nPer-kernel profiles: profile.md. Every command's output: log.txt; device tests: tests.log.")
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["logits"]:
        sys.exit(logits(a[1], a[2], a[3:]))
    if a[:1] == ["bench"]:
        sys.exit(bench(a[1], a[2], a[3]))
    if a[:1] == ["summary"]:
        sys.exit(summary(a[1], a[2], a[3], a[4] if len(a) > 4 else None))
    print(__doc__)
    sys.exit(2)
