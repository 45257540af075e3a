#!/usr/bin/env python3
"""Device profiles (VKLLM_DEVICE_PROFILE): every profile `vkllm devices --tuning` lists

- clamps what `vkllm devices --json` reports: never a limit above the device's own, never a
  feature the device lacks, the profile's name in the "profile" field, still usable;
- runs `vkllm selftest --validate --defaults` with every case within bounds: the code paths that
  GPU's features and limits choose (shared-memory sizes, workgroup sizes, reductions, staging),
  under vulkan-1.1-minimal only unless --full (see below); with --full also the forced variants,
  the same under every profile, once, under vulkan-1.1-minimal, where the most of them meet a
  limit;
- runs stories260K (prefill and decode) to the reference's logits, same argmax at every position.

Unknown profile names are an error naming the valid ones. The stories260K part reports SKIPPED
when the model folder is absent (the rest still runs)."""
import json, os, subprocess, sys

VKLLM = sys.argv[1]
# `make test`: every profile's devices and stories260K logits, and the selftest's defaults under the
# specification's floor (vulkan-1.1-minimal: no subgroup operations, 16 KiB of shared memory, 128
# invocations: the most kernels and plans of their own); --full (`make test-full`): the selftest's
# defaults under every profile, and every forced variant under vulkan-1.1-minimal, where the most
# of them meet a limit (each profile's plans compile pipelines of their own: minutes on 2 cores).
FULL = "--full" in sys.argv[2:]
SELFTEST = None if FULL else ("vulkan-1.1-minimal",)
# --no-selftest (the sanitizer build): the clamps and stories260K under every profile only; the
# selftest's kernels and plans under the minimal profile are the optimized build's to check (the
# sanitizer adds nothing to shaders, and its reference sweeps cost 20 s of the suite's 10 minutes)
if "--no-selftest" in sys.argv[2:]: SELFTEST = ()
models = os.environ.get("VKLLM_TEST_MODELS") or os.environ.get("VKLLM_TEST_MODELS_DEFAULT") or "../shared/models"
model = os.path.join(models, "stories260K.gguf")
have_model = os.path.exists(model)
if not have_model and os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1":
    print("FAIL: missing", model); sys.exit(1)

failures = []
def check(c, what):
    if not c:
        failures.append(what); print("FAIL:", what)

def run(args, profile=None, timeout=600):
    env = dict(os.environ)
    env.pop("VKLLM_DEVICE_PROFILE", None)
    if profile: env["VKLLM_DEVICE_PROFILE"] = profile
    return subprocess.run([VKLLM] + args, capture_output=True, text=True, env=env, timeout=timeout)

r = run(["devices", "--tuning", "--json"])
check(r.returncode == 0, "devices --tuning --json exits 0: " + r.stderr)
knobs = {k["name"]: k for k in json.loads(r.stdout)["tuning"]} if r.returncode == 0 else {}
profiles = [n for n in knobs.get("device_profile", {}).get("value_names", []) if n != "none"]
check(len(profiles) >= 8, "device_profile lists the profiles: %s" % profiles)
check(SELFTEST is None or set(SELFTEST) <= set(profiles), "the selftest's profiles exist: %s" % (SELFTEST,))

base = json.loads(run(["devices", "--json"]).stdout)["devices"][0]
LIMITS = ["max_storage_buffer_range", "max_memory_allocation_size", "max_shared_memory", "max_workgroup_invocations",
          "max_texel_buffer_elements", "max_uniform_buffer_range", "max_push_constants"]
ALIGNMENTS = ["min_storage_buffer_offset_alignment", "min_texel_buffer_offset_alignment",
              "min_uniform_buffer_offset_alignment"]  # larger is stricter: a profile may only raise them
FEATURES = ["fp16_arith", "int8_arith", "int64_arith", "storage_16bit", "storage_8bit", "integer_dot_product",
            "integer_dot_product_accelerated", "buffer_device_address", "cooperative_matrix", "unified_memory"]

def api(s): return tuple(int(x) for x in s.split("."))

ids = "1 365 288 285 29 260 307 287 11 402"
def top(args, profile=None):
    r = run(["logits", "-m", model, "--json", "--ids", ids, "--top", "5"] + args, profile)
    check(r.returncode == 0, "%s logits %s exit 0: %s" % (profile, args, r.stderr[-400:]))
    return json.loads(r.stdout) if r.returncode == 0 else []
ref = top(["--device", "ref"]) if have_model else []

for p in profiles:
    r = run(["devices", "--json"], p)
    check(r.returncode == 0, "%s: devices --json exits 0: %s" % (p, r.stderr))
    if r.returncode: continue
    d = json.loads(r.stdout)["devices"][0]
    check(d["profile"] == p and d["usable"], "%s: named in 'profile', usable" % p)
    check(p == "vulkan-1.1-minimal" or (d["vendor_id"] != base["vendor_id"] and d["vendor"] != "unknown"),
          "%s: the GPU's vendor (%s, 0x%x), whose per-vendor choices the runtime then makes" % (p, d["vendor"], d["vendor_id"]))
    check(api(d["api_version"]) <= api(base["api_version"]), "%s: api version not raised" % p)
    for k in LIMITS:
        check(0 < d[k] <= base[k], "%s: %s %d within the device's %d" % (p, k, d[k], base[k]))
    for k in ALIGNMENTS:
        check(d[k] >= base[k], "%s: %s %d not below the device's %d" % (p, k, d[k], base[k]))
    for k in FEATURES:
        check(not d[k] or base[k], "%s: %s not invented" % (p, k))
    check(set(d["subgroup_operations"].split()) <= set(base["subgroup_operations"].split()),
          "%s: subgroup operations a subset" % p)
    check(d["subgroup_size"] == base["subgroup_size"], "%s: the real subgroup size is reported" % p)
    if d["subgroup_size_control"]:
        check(d["subgroup_size_min"] <= d["subgroup_size"] <= d["subgroup_size_max"], "%s: size range" % p)

    if SELFTEST is None or p in SELFTEST:
        r = run(["selftest", "--validate"] + ([] if p == "vulkan-1.1-minimal" and FULL else ["--defaults"]), p)
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr
        check(r.returncode == 0 and " 0 failed" in last, "%s: selftest passes: %s" % (p, last))
        print("%-20s %s" % (p, last))

    if have_model:
        worst = 0.0
        for mode in ([], ["--decode"]):
            out = top(mode, p)
            check(len(out) == len(ref), "%s %s: every position" % (p, mode))
            for a, c in zip(out, ref):
                check(a["top"][0][0] == c["top"][0][0], "%s %s pos %d: the reference's argmax" % (p, mode, a["pos"]))
                worst = max([worst] + [abs(l1 - l2) for (i1, l1), (i2, l2) in zip(a["top"], c["top"]) if i1 == i2])
        check(worst < 2e-2, "%s: logits within 2e-2 of the reference (got %g)" % (p, worst))
        print("%-20s stories260K prefill and decode: max |device - reference| %.2e" % (p, worst))

m = next((p for p in profiles if p == "vulkan-1.1-minimal"), None)
check(m is not None, "the vulkan-1.1-minimal profile exists")
if m:
    d = json.loads(run(["devices", "--json"], m).stdout)["devices"][0]
    check(d["api_version"] == "1.1.0" and d["subgroup_operations"] == "basic" and d["max_shared_memory"] == 16384
          and d["max_workgroup_invocations"] == 128 and not d["storage_16bit"] and not d["unified_memory"]
          and all(d[k] == 256 for k in ALIGNMENTS),
          "vulkan-1.1-minimal is the specification's floor: %s" % d)

r = run(["devices"], "no-such-gpu")
check(r.returncode != 0 and r.stderr.count("\n") == 1 and "nvidia-ampere" in r.stderr,
      "an unknown profile is one error line naming the profiles: " + r.stderr)

if failures:
    print("%d check(s) failed" % len(failures)); sys.exit(1)
if not have_model:
    print("SKIPPED: the stories260K part (missing %s); the rest passed" % model); sys.exit(77)
print("all checks passed")
