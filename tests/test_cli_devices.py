#!/usr/bin/env python3
"""`vkllm devices`, `--help`, `--version` and the failure paths of the CLI.

- `vkllm devices --json` agrees with `vulkaninfo` (when installed) on every device's name, type,
  API version, driver, limits and features.
- No Vulkan loader (VKLLM_VULKAN_LIBRARY pointing nowhere) and no driver (VK_ICD_FILENAMES
  pointing nowhere): exactly one line on stderr starting with "vkllm:", a non-zero exit, no crash.
"""
import json, math, os, re, shutil, subprocess, sys, tempfile

VKLLM = sys.argv[1]
# --quick (`make test`): the selftest's defaults of a few ops only (every kernel and variant runs in
# the op tests, each of its pipelines a driver compile); without it (`make test-full`) every op
QUICK = "--quick" in sys.argv[2:]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, env_extra=None, drop=()):
    env = dict(os.environ)
    for k in drop:
        env.pop(k, None)
    env.update(env_extra or {})
    # a first selftest on a cold driver shader cache compiles every pipeline: minutes on 2 busy cores
    return subprocess.run([VKLLM] + args, capture_output=True, text=True, env=env, timeout=400)


# --- --help / --version
r = run(["--help"])
check(r.returncode == 0 and "devices" in r.stdout and "usage:" in r.stdout, "--help lists the commands")
r = run(["--version"])
check(r.returncode == 0 and re.match(r"vkllm \d+\.\d+\.\d+ \(commit [0-9a-f]+|unknown\)", r.stdout), "--version: " + r.stdout)
r = run(["no-such-command"])
check(r.returncode == 2 and "unknown command" in r.stderr, "unknown command exits 2")

# --- devices --json vs vulkaninfo
r = run(["devices", "--json"])
check(r.returncode == 0, "devices --json exits 0: " + r.stderr)
devs = json.loads(r.stdout)["devices"]
check(len(devs) >= 1, "at least one device")
r2 = run(["devices"])
check(r2.returncode == 0 and devs[0]["name"] in r2.stdout, "devices table names the device")

if shutil.which("vulkaninfo"):
    vi = subprocess.run(["vulkaninfo"], capture_output=True, text=True, timeout=120,
                        env=dict(os.environ, VK_LOADER_LAYERS_DISABLE="~all~")).stdout
    # vulkaninfo prints one "GPUn:" section per device.
    sections = re.split(r"^GPU(\d+):\s*$", vi, flags=re.M)
    gpus = {int(sections[i]): sections[i + 1] for i in range(1, len(sections) - 1, 2)}
    check(len(gpus) == len(devs), "same device count as vulkaninfo (%d vs %d)" % (len(gpus), len(devs)))

    def field(text, key):
        m = re.search(r"^\s*%s\s*=\s*(.+?)\s*$" % key, text, flags=re.M)
        return m.group(1) if m else None

    def num(v):
        return int(v, 16) if v.startswith("0x") else int(v.split()[0])

    for d in devs:
        t = gpus.get(d["index"], "")
        check(field(t, "deviceName") == d["name"], "deviceName of %d" % d["index"])
        check(field(t, "driverName") == d["driver_name"], "driverName")
        check(field(t, "driverInfo") == d["driver_info"], "driverInfo")
        check(field(t, "apiVersion").split()[0] == d["api_version"], "apiVersion")
        check(num(field(t, "vendorID")) == d["vendor_id"], "vendorID")
        dtype = field(t, "deviceType").replace("PHYSICAL_DEVICE_TYPE_", "")
        want = {"CPU": "CPU", "DISCRETE_GPU": "discrete GPU", "INTEGRATED_GPU": "integrated GPU",
                "VIRTUAL_GPU": "virtual GPU"}.get(dtype, "other")
        check(want == d["type"], "deviceType %s vs %s" % (dtype, d["type"]))
        for key, ours in [("maxStorageBufferRange", "max_storage_buffer_range"),
                          ("maxMemoryAllocationSize", "max_memory_allocation_size"),
                          ("maxComputeSharedMemorySize", "max_shared_memory"),
                          ("maxComputeWorkGroupInvocations", "max_workgroup_invocations"),
                          ("maxPushConstantsSize", "max_push_constants"),
                          ("minStorageBufferOffsetAlignment", "min_storage_buffer_offset_alignment"),
                          ("minTexelBufferOffsetAlignment", "min_texel_buffer_offset_alignment"),
                          ("minUniformBufferOffsetAlignment", "min_uniform_buffer_offset_alignment"),
                          ("subgroupSize", "subgroup_size")]:
            v = field(t, key)
            check(v is not None and num(v) == d[ours], "%s: vulkaninfo %s, vkllm %s" % (key, v, d[ours]))
        for key, ours in [("shaderFloat16", "fp16_arith"), ("shaderInt8", "int8_arith"),
                          ("storageBuffer16BitAccess", "storage_16bit"),
                          ("storageBuffer8BitAccess", "storage_8bit"),
                          ("bufferDeviceAddress", "buffer_device_address")]:
            v = field(t, key)
            check(v is not None and (v == "true") == d[ours], "%s: vulkaninfo %s, vkllm %s" % (key, v, d[ours]))
        if d["driver_name"] == "llvmpipe":  # the facts PLATFORM.md measured for lavapipe
            check(d["max_storage_buffer_range"] == 134217728, "lavapipe maxStorageBufferRange 128 MiB")
            check(d["subgroup_size"] == 8 or os.environ.get("LP_NATIVE_VECTOR_WIDTH"), "lavapipe subgroup 8")
else:
    print("note: vulkaninfo not installed; comparison skipped")

# --- failure paths: one clear line on stderr, non-zero exit, no crash
for name, env, drop in [
    ("no loader", {"VKLLM_VULKAN_LIBRARY": "/nonexistent/libvulkan.so.1"}, ()),
    ("no driver", {"VK_ICD_FILENAMES": "/nonexistent/icd.json", "VK_DRIVER_FILES": "/nonexistent/icd.json"}, ()),
]:
    for cmd in (["devices"], ["selftest"]):
        # validation off here: with it, the loader's own complaints are (rightly) logged too
        r = run(cmd, env, ("VKLLM_VALIDATE",))
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        print("%s, %s: exit %d, stderr: %s" % (name, cmd[0], r.returncode, r.stderr.strip()))
        check(r.returncode not in (0,) and r.returncode > 0, "%s %s: non-zero exit (got %d)" % (name, cmd[0], r.returncode))
        check(len(lines) == 1 and lines[0].startswith("vkllm: "), "%s %s: one line on stderr" % (name, cmd[0]))
        check("VKLLM_STATUS_NO_" in r.stderr, "%s %s: status named" % (name, cmd[0]))

# --- selftest: the cases (every op, every variant) listed without running them; the device's own
# kernels run against the reference, as JSON (every variant runs in test_profiles, under
# vulkan-1.1-minimal, and at length in the op tests)
want_ops = {"add", "mul", "silu_mul", "gelu_mul", "softcap", "rmsnorm", "add_rmsnorm", "softmax", "matvec", "matvec_tb",
            "matvec_glu", "matmul", "get_rows", "rope", "kv_store", "rope_kv", "attention", "argmax", "matvec_id",
            "moe_route", "moe_sum", "swiglu_oai", "moe_add_id"}
r = run(["selftest", "--list", "--json"])
check(r.returncode == 0, "selftest --list exit 0: " + r.stderr[-2000:])
listed = json.loads(r.stdout)["cases"]
check({c["op"] for c in listed} == want_ops, "selftest lists every op: %s" % sorted({c["op"] for c in listed} ^ want_ops))
check(all("err" not in c and "ok" not in c for c in listed), "selftest --list runs nothing")
variants = {(c["op"], c["variant"]) for c in listed}
for v in [("matvec", "matvec_wg=64,matvec_nt=8,matvec_nr=3,matvec_sg=0"), ("attention", "attn_texel=0"),
          ("attention", "attn_texel=1"), ("matmul", "matmul=tiled"), ("matmul", "matmul=matvec")]:
    check(v in variants, "selftest has %s %s" % v)
r = run(["selftest", "--list", "--json", "--defaults"])
deflist = json.loads(r.stdout)["cases"] if r.returncode == 0 else []
check(r.returncode == 0 and {c["op"] for c in deflist} == want_ops and all(c["variant"] == "default" for c in deflist)
      and len(deflist) < len(listed), "selftest --defaults: every op once per shape, the device's own tuning")
r = run(["selftest", "--json", "--defaults"] + (["--op", "add,softmax,rope,argmax"] if QUICK else []))
check(r.returncode == 0, "selftest --defaults exit 0: " + r.stderr[-2000:])
doc = json.loads(r.stdout)
check(QUICK or {c["op"] for c in doc["cases"]} == want_ops, "selftest --defaults runs every op")
check(QUICK or len(doc["cases"]) == len(deflist), "selftest --defaults runs what --list --defaults lists")
for c in doc["cases"]:
    for key in ("op", "variant", "shape", "measure", "err", "max_abs", "bound", "ok", "kernel"):
        check(key in c, "selftest case has %s: %s" % (key, c))
    check(c["ok"] or c.get("skipped"), "selftest case failed: %s" % c)
check(doc["failed"] == 0 and doc["ok"] + doc["skipped"] == len(doc["cases"]), "selftest counts")
if "llvmpipe" in doc["device"]["name"]:  # lavapipe runs every kernel its tuning picks
    check(doc["skipped"] == 0, "selftest --defaults skipped cases on lavapipe: %s" % [c for c in doc["cases"] if c.get("skipped")])

# a case with the device's own tuning that an op refuses fails (a model run would meet the same
# refusal): here a binding limit below one row (VKLLM_MAX_BINDING, read as the device's tuning)
r = run(["selftest", "--json", "--defaults", "--op", "matvec"], {"VKLLM_MAX_BINDING": "1000"})
rdoc = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {"cases": [], "failed": 0}
refused = [c for c in rdoc["cases"] if "refused with the device's own tuning" in c.get("detail", "")]
check(r.returncode != 0 and refused and rdoc["failed"] >= len(refused)
      and not any(c["ok"] or c.get("skipped") for c in refused),
      "selftest: a default case an op refuses for the device's binding limit fails: rc %d, %d refused, %s"
      % (r.returncode, len(refused), r.stderr[-300:]))

# --- pipelines: built on a compile-only context (no device memory, nothing run), with the driver's
# statistics where it has them (lavapipe 22.3 has none: the keys are there, null)
# (the decode kernels' ops: every pipeline costs a driver compile)
ops = "rmsnorm,rope_kv,attention,argmax"
r = run(["pipelines", "--json", "--op", ops])
check(r.returncode == 0, "pipelines exit 0: " + r.stderr[-1000:])
pdoc = json.loads(r.stdout) if r.returncode == 0 else {"pipelines": [], "device_memory_bytes": -1}
pl = pdoc["pipelines"]
check(pdoc["device_memory_bytes"] == 0 and pdoc["validation_messages"] == 0, "pipelines allocates nothing")
check(len(pl) >= 10 and len({(p["shader"], tuple(p["spec"]), p["required_subgroup"]) for p in pl}) == len(pl),
      "pipelines lists each pipeline once: %d" % len(pl))
for key in ("shader", "spec", "workgroup", "compile_ms", "registers", "vgpr", "spills", "scratch", "occupancy", "stats"):
    check(all(key in p for p in pl), "pipelines: every entry has %s" % key)
shaders = {p["shader"] for p in pl}
check({"rmsnorm_f32", "argmax_f32"} <= shaders and ("attn_tb_f16" in shaders or "attn_split_f16" in shaders or "attn_split_sg_f16" in shaders),
      "pipelines: the device's kernels: %s" % sorted(shaders)[:20])
# --all: get_rows' variants (its 16-byte-layout kernels and repack), cheap to build (attention's
# took 10 s under the sanitizers); the layout off by default as on CPU devices (GPUs take it)
r = run(["pipelines", "--json", "--op", "get_rows"], {"VKLLM_REPACK": "0"})
pgr = json.loads(r.stdout)["pipelines"] if r.returncode == 0 else []
r = run(["pipelines", "--json", "--all", "--op", "get_rows"], {"VKLLM_REPACK": "0"})
pall = json.loads(r.stdout)["pipelines"] if r.returncode == 0 else []
check(r.returncode == 0 and len(pgr) > 0 and len(pall) > len(pgr),
      "pipelines --all builds the variants too (%d > %d)" % (len(pall), len(pgr)))
r = run(["pipelines", "--op", "add,rmsnorm"])
check(r.returncode == 0 and "add_f32" in r.stdout and "rmsnorm_f32" in r.stdout and "matvec" not in r.stdout, "pipelines --op")
# RADV's null hardware (Debian's Mesa ships the radeon driver): AMD's compiler without an AMD GPU,
# a device without memory that compile-only opens and a model run refuses
radv = "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json"
if os.path.exists(radv):
    env = {"RADV_FORCE_FAMILY": "navi21", "VK_ICD_FILENAMES": radv, "VK_DRIVER_FILES": radv}
    r = run(["pipelines", "--json", "--op", "add,matvec,attention"], env, ("VKLLM_VALIDATE",))
    check(r.returncode == 0, "pipelines on RADV null navi21: " + r.stderr[-1000:])
    nd = json.loads(r.stdout) if r.returncode == 0 else {"pipelines": [], "device": {}}
    check("NAVI21" in nd["device"].get("name", "") and nd["device"].get("pipeline_statistics"), "navi21 with statistics")
    check(len(nd["pipelines"]) > 5 and all(isinstance(p["vgpr"], (int, float)) and p["vgpr"] > 0 and
                                           isinstance(p["spills"], (int, float)) for p in nd["pipelines"]),
          "navi21: registers and spills for every pipeline: %s" % nd["pipelines"][:1])
    check(all(p["spills"] == 0 and p["scratch"] == 0 for p in nd["pipelines"]),
          "navi21: no spills at the device's own tuning: %s" % [p["shader"] for p in nd["pipelines"] if p["spills"]])
    r = run(["devices", "--json"], env, ("VKLLM_VALIDATE",))
    check(r.returncode == 0 and not json.loads(r.stdout)["devices"][0]["usable"], "null hardware: listed, not usable")
    r = run(["selftest", "--op", "add"], env, ("VKLLM_VALIDATE",))
    lines = [l for l in r.stderr.splitlines() if l.strip().startswith("vkllm:")]
    check(r.returncode == 4 and len(lines) == 1 and "memory" in lines[0], "null hardware: a run refused, no crash: %d %s" %
          (r.returncode, r.stderr[-300:]))
else:
    print("note: no radeon ICD: the RADV null-hardware checks did not run")

r = run(["selftest", "--json", "--op", "matmul"], {"VKLLM_MATMUL_BK": "3"})  # every tiled case refused
doc = json.loads(r.stdout)
check(r.returncode == 0 and doc["skipped"] > 0 and
      all(c["ok"] or "refused" in c.get("detail", "") or "no cooperative matrices" in c.get("detail", "") for c in doc["cases"]),
      "selftest: a refused variant is skipped, saying why")
print("selftest: %d cases, %d ok, %d skipped" % (len(doc["cases"]), doc["ok"], doc["skipped"]))
r = run(["selftest", "--json", "--profile", "--op", "rope,argmax"])
doc = json.loads(r.stdout)
check(r.returncode == 0 and {c["op"] for c in doc["cases"]} == {"rope", "argmax"}, "selftest --op")
check(all("gpu_ms" in c and "gb_per_s" in c for c in doc["cases"]), "selftest --profile fields")
r = run(["selftest", "--op", "nosuchop"])
check(r.returncode == 2 and "nosuchop" in r.stderr, "selftest --op unknown: " + r.stderr)

# --- a bad --device index
r = run(["selftest", "--device", "99"])
check(r.returncode == 2 and "device 99 does not exist" in r.stderr, "bad --device: " + r.stderr)
r = run(["selftest"], {"VKLLM_DEVICE": "banana"})
check(r.returncode == 2 and "VKLLM_DEVICE" in r.stderr, "bad VKLLM_DEVICE: " + r.stderr)

# --- an allocation failure: device memory capped below what the op needs
r = run(["selftest"], {"VKLLM_MEMORY_LIMIT_MB": "1"})
lines = [l for l in r.stderr.splitlines() if l.strip()]
print("memory limit: exit %d, stderr: %s" % (r.returncode, r.stderr.strip()))
check(r.returncode == 5 and len(lines) == 1 and "out of device memory" in lines[0], "OOM: one clear line, exit 5")

# --- a session whose activations do not fit (the model and its KV cache do): the error says what
# the memory was for and what needs less, and a smaller micro-batch then runs
with tempfile.TemporaryDirectory() as tmp:
    mf = os.path.join(tmp, "m.gguf")
    r = run(["make-model", "--n-layer", "1", "--n-embd", "1024", "--n-ff", "2816", "--n-head", "8", "--n-head-kv", "8",
             "--vocab", "300", "--type", "q8_0", "-o", mf])
    check(r.returncode == 0, "make-model: " + r.stderr[-300:])
    r = run(["run", "-m", mf, "-p", "x", "-n", "1", "-c", "64", "--stats", "json"])
    mem = [json.loads(l) for l in r.stderr.splitlines() if l.startswith('{"memory"')]
    dev = mem[0]["memory"]["device"] if mem else {}
    check(r.returncode == 0 and dev.get("activations", 0) > (2 << 20), "run -c 64: %s %s" % (dev, r.stderr[-300:]))
    if dev:
        mb = math.ceil((dev["weights"] + dev["repacked"] + dev["kv"]) / (1 << 20)) + 1  # 1-2 MiB free for the rest
        lim = {"VKLLM_MEMORY_LIMIT_MB": str(mb)}
        r = run(["run", "-m", mf, "-p", "x", "-n", "1", "-c", "64"], lim)
        check(r.returncode == 5 and "the activations for micro-batches of 64 tokens" in r.stderr and "--ubatch" in r.stderr,
              "activations over the memory limit (%d MiB): exit 5, what they were for: %s" % (mb, r.stderr[-400:]))
        r = run(["run", "-m", mf, "-p", "x", "-n", "1", "-c", "64", "--ubatch", "8"], lim)
        check(r.returncode == 0, "--ubatch 8 within %d MiB: %s" % (mb, r.stderr[-300:]))

print("all checks passed" if not failures else "%d check(s) failed" % len(failures))
sys.exit(1 if failures else 0)
