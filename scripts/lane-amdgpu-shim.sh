#!/bin/sh
# lane-amdgpu-shim.sh BUILD_DIR - vkllm on AMD's whole Vulkan driver (RADV and its ACO compiler,
# Debian 13's Mesa 25.0.7) over simulated chips: Debian 13's amdgpu noop DRM shim, preloaded,
# answers the kernel's calls as each card would and executes nothing. Allocation, pipeline
# compilation, recording, submission and waits are real; what the shaders compute is not (no
# text or number is checked). It exercises the discrete-memory paths (staging uploads, readback,
# host-visible and device-local heaps apart) that lavapipe's unified memory never takes.
#
# Chips: navi31 (RDNA3, discrete, cooperative matrix), navi21 (RDNA2), navi10 (RDNA1), gfx1150
# (RDNA3.5, integrated, cooperative matrix), vega10 (GCN5, wave64), polaris10 (GCN4, no fp16),
# bonaire (GCN2, 2 GiB, no fp16). On each, with Debian 13's validation layer and synchronization
# validation on (VKLLM_VALIDATE=1): devices (the chip is what it claims), pipelines --all, the
# selftest's default cases and every matmul variant (--defaults has none; recorded and submitted,
# --unchecked), run and chat on stories260K and
# on a 4-layer random tinyllama (q8_0, made once with the host build), also with a q8_0 KV cache,
# bench -p 64 -n 16 --profile, and serve answering two concurrent streamed chat completions
# (decoded together: /metrics). On bonaire (2 GiB) a KV pool fills the device-local heap to within
# 48 MiB, and one 96 MiB larger must be refused cleanly (DEVICE_OOM) before anything is allocated.
# The selftest runs one process per op: the shim never frees a buffer object that was mapped (its
# GEM_MMAP takes a reference nothing drops) and backs all of them with one 4 GiB file, so one process
# may map 4 GiB in all over its life, and each selftest case maps a 64 MiB staging buffer afresh.
# On navi31 and gfx1150 the cooperative-matrix matmul and attention are forced on
# (VKLLM_MATMUL_COOPMAT=1 VKLLM_ATTN_COOPMAT=1: the known-answer check at context creation must
# fail where nothing executes) and the lane checks they were built and recorded.
#
# Judged: exit codes, no hang (every command under a timeout), no validation message, and the
# memory figures: with VKLLM_LOG=debug vkllm logs every memory block it allocates or frees with the
# driver's VK_EXT_memory_budget heapUsage read just before and after the call (runtime/vk/memory.c);
# the driver's change must be the block's size, `run --stats json`'s device_bytes must be what the
# blocks on the device-local heap add up to then, and everything must be freed at exit.
#
# The driver is fetched once (scripts/fetch-debs.sh: 63 MB, 285 MB unpacked, ~30 s) into
# $VKLLM_DRIVERS_DIR (default BUILD_DIR/drivers)/trixie-amd; Mesa's shader cache lives beside it in
# amdgpu-shim-cache; the random model is BUILD_DIR/amdgpu-shim-tinyllama-4l-q8_0.gguf (313 MB)
# (VKLLM_SHIM_COLD=1 empties it first: every pipeline compiled again). On 2 cores the seven chips
# take ~100 s with the cache warm (pipelines --all's validated compile-only pass ~6 s a chip, the
# selftest's processes ~4 s) and ~200 s cold (ACO compiling ~400 pipelines a chip: ~14 s more).
# Where the driver cannot be fetched or started the lane prints SKIPPED and exits 0, or fails when
# VKLLM_REQUIRE_TEST_MODELS=1 (CI). VKLLM_SHIM_CHIPS=navi31,bonaire runs some chips only. Logs (each
# command's stdout and stderr): BUILD_DIR/lane-amdgpu-shim/. Exit 1 when a check fails.
set -eu
build=$(cd "${1:?usage: lane-amdgpu-shim.sh BUILD_DIR}" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
drivers=${VKLLM_DRIVERS_DIR:-$build/drivers}
dir=$drivers/trixie-amd
bin=$build/vkllm

skip_or_fail() {
  if [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ]; then
    echo "lane amdgpu-shim: FAILED: $*" >&2
    exit 1
  fi
  echo "lane amdgpu-shim: SKIPPED: $*"
  exit 0
}

[ -x "$bin" ] || { echo "lane amdgpu-shim: FAILED: $bin is not built" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || skip_or_fail "python3 is not available"
t0=$(date +%s)
if ! "$repo/scripts/fetch-debs.sh" --recurse trixie "$dir" mesa-vulkan-drivers mesa-drm-shim libvulkan1 \
    vulkan-validationlayers libc6; then
  skip_or_fail "cannot fetch Debian 13's Mesa, drm shim and validation layer (scripts/fetch-debs.sh)"
fi
t1=$(date +%s)
[ "$t1" -gt "$((t0 + 2))" ] && echo "lane amdgpu-shim: fetched Debian 13's driver into $dir in $((t1 - t0)) s"

root=$dir/root
lib=$root/usr/lib/x86_64-linux-gnu
for f in "$root/usr/lib64/ld-linux-x86-64.so.2" "$lib/libamdgpu_noop_drm_shim.so" "$lib/libvulkan_radeon.so" \
    "$lib/libVkLayer_khronos_validation.so" "$lib/libvulkan.so.1" "$root/usr/share/vulkan/icd.d/radeon_icd.json" \
    "$root/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"; do
  [ -e "$f" ] || skip_or_fail "the unpacked driver lacks $f (an x86-64 host is needed)"
done
# the ICD and layer manifests with absolute library paths (the unpacked tree is not on any search path)
mkdir -p "$dir/etc/layers"
python3 - "$root" "$dir/etc" <<'EOF' || skip_or_fail "cannot write the driver's manifests"
import json, os, sys
root, etc = sys.argv[1:]
lib = os.path.join(root, "usr/lib/x86_64-linux-gnu")
for src, key, so, dst in (("icd.d/radeon_icd.json", "ICD", "libvulkan_radeon.so", "radeon_icd.json"),
                          ("explicit_layer.d/VkLayer_khronos_validation.json", "layer",
                           "libVkLayer_khronos_validation.so", "layers/VkLayer_khronos_validation.json")):
    d = json.load(open(os.path.join(root, "usr/share/vulkan", src)))
    d[key]["library_path"] = os.path.join(lib, so)
    json.dump(d, open(os.path.join(etc, dst), "w"), indent=1)
EOF

models=${VKLLM_TEST_MODELS:-$repo/../shared/models}
export LANE_BUILD="$build" LANE_BIN="$bin" LANE_ROOT="$root" LANE_ETC="$dir/etc" LANE_MODELS="$models"
export LANE_CACHE="$drivers/amdgpu-shim-cache"
exec python3 - <<'EOF'
import json, os, re, shutil, signal, subprocess, sys, threading, time, http.client

B, BIN, ROOT, ETC = (os.environ[k] for k in ("LANE_BUILD", "LANE_BIN", "LANE_ROOT", "LANE_ETC"))
LIB = os.path.join(ROOT, "usr/lib/x86_64-linux-gnu")
LOGS = os.path.join(B, "lane-amdgpu-shim")
REQUIRE = os.environ.get("VKLLM_REQUIRE_TEST_MODELS") == "1"
P = "lane amdgpu-shim:"

# chip: (RADV's name, type, cooperative matrix, subgroup sizes, fp16 arithmetic)
CHIPS = {
    "navi31": ("NAVI31", "discrete GPU", True, (32, 64), True),
    "navi21": ("NAVI21", "discrete GPU", False, (32, 64), True),
    "navi10": ("NAVI10", "discrete GPU", False, (32, 64), True),
    "gfx1150": ("GFX1150", "integrated GPU", True, (32, 64), True),
    "vega10": ("VEGA10", "discrete GPU", False, (64, 64), True),
    "polaris10": ("POLARIS10", "discrete GPU", False, (64, 64), False),
    "bonaire": ("BONAIRE", "discrete GPU", False, (64, 64), False),
}

def say(*a):
    print(P, *a, flush=True)

def skip_or_fail(why):
    if REQUIRE:
        print(P, "FAILED:", why, file=sys.stderr, flush=True)
        sys.exit(1)
    say("SKIPPED:", why)
    sys.exit(0)

cache = os.environ["LANE_CACHE"]
if os.environ.get("VKLLM_SHIM_COLD") == "1":
    shutil.rmtree(cache, ignore_errors=True)
os.makedirs(cache, exist_ok=True)
shutil.rmtree(LOGS, ignore_errors=True)
os.makedirs(LOGS)

BASE_ENV = dict(os.environ)
for k in ("VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VK_INSTANCE_LAYERS", "VK_ADD_LAYER_PATH", "LD_PRELOAD",
          "VKLLM_DEVICE", "VKLLM_DEVICE_PROFILE", "VKLLM_MATMUL_COOPMAT", "VKLLM_ATTN_COOPMAT", "VKLLM_LOG"):
    BASE_ENV.pop(k, None)
BASE_ENV.update({
    "VK_ICD_FILENAMES": os.path.join(ETC, "radeon_icd.json"),
    "VK_LAYER_PATH": os.path.join(ETC, "layers"),
    "NODEVICE_SELECT": "1",                    # the system's implicit device-select layer stays out
    "XDG_CACHE_HOME": cache,                   # Mesa's shader cache and vkllm's pipeline cache
    "VKLLM_VALIDATE": "1",
    "VKLLM_LOG": "debug",                      # the memory lines (and the validation messages)
})
PREFIX = [os.path.join(ROOT, "usr/lib64/ld-linux-x86-64.so.2"), "--library-path", LIB + ":/usr/lib/x86_64-linux-gnu",
          "--preload", os.path.join(LIB, "libamdgpu_noop_drm_shim.so"), BIN]

# --- the models -----------------------------------------------------------------------------------

stories = os.path.join(os.environ["LANE_MODELS"], "stories260K.gguf")
if not os.path.exists(stories):
    if REQUIRE:
        print(P, "FAILED: stories260K required but missing:", stories, file=sys.stderr)
        sys.exit(1)
    say("note: %s missing: its runs are skipped" % stories)
    stories = None
rand = os.path.join(B, "amdgpu-shim-tinyllama-4l-q8_0.gguf")
if not os.path.exists(rand):
    r = subprocess.run([BIN, "make-model", "--preset", "tinyllama-1.1b", "--n-layer", "4", "--type", "q8_0", "-o", rand],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        print(P, "FAILED: make-model:", r.stderr[-1000:], file=sys.stderr)
        sys.exit(1)

# --- running and judging one command ----------------------------------------------------------------

MEM = re.compile(r"memory: (allocated|freed) (\d+) bytes \(heap (\d+), type \d+, (host|device)\); vkllm holds (\d+) of "
                 r"heap \d+, (\d+) in all; driver heapUsage (?:(\d+) -> (\d+)|unknown)")
VALIDATION = re.compile(r"^vkllm: (?:warning|error): validation: |Vulkan validation message\(s\) were reported", re.M)

class Chip:
    def __init__(self, name):
        self.name = name
        self.errors = []
        self.notes = []
        self.n_cmds = 0
        self.env = dict(BASE_ENV, AMDGPU_GPU_ID=name)
        if CHIPS[name][2]:
            self.env.update(VKLLM_MATMUL_COOPMAT="1", VKLLM_ATTN_COOPMAT="1")

    def fail(self, step, what):
        self.errors.append("%s: %s" % (step, what))

    def log(self, step, args, rc, out, err, secs):
        with open(os.path.join(LOGS, "%s.%s.log" % (self.name, step)), "w") as f:
            f.write("$ %s\n# rc %s, %.1f s\n--- stdout\n%s\n--- stderr\n%s" % (" ".join(args), rc, secs, out, err))

    def judge(self, step, rc, err, want_rc=0):
        """Exit code, validation messages, memory lines: the checks every command gets."""
        if rc != want_rc:
            tail = [l for l in err.splitlines() if not l.startswith("vkllm: debug:")][-4:]
            self.fail(step, "exit code %s: %s" % (rc, " | ".join(tail)))
        v = VALIDATION.findall(err)
        if v:
            first = next(l for l in err.splitlines() if VALIDATION.search(l))
            self.fail(step, "%d validation message(s), first: %s" % (len(v), first[:300]))
        return self.memory(step, err)

    def memory(self, step, err):
        """Each block's size against the driver's heapUsage change around the call; at the end
        nothing held. Returns the device-local heap's bytes vkllm held at each stats JSON line."""
        held, at_stats, dev_heap, last = {}, [], None, None
        for line in err.splitlines():
            m = MEM.search(line)
            if m:
                what, size, heap, kind, heap_held, total = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), \
                    int(m.group(5)), int(m.group(6))
                held[heap] = held.get(heap, 0) + (size if what == "allocated" else -size)
                if kind == "device":
                    dev_heap = heap
                if held[heap] != heap_held:
                    self.fail(step, "vkllm says it holds %d bytes of heap %d, its blocks add up to %d" % (heap_held, heap, held[heap]))
                if m.group(7) is None:
                    self.fail(step, "the driver reports no heapUsage (VK_EXT_memory_budget)")
                elif int(m.group(8)) - int(m.group(7)) != (size if what == "allocated" else -size):
                    self.fail(step, "a block of %d bytes %s on heap %d: the driver's heapUsage changed by %d" %
                              (size, what, heap, int(m.group(8)) - int(m.group(7))))
                last = total
            elif line.startswith("{") and '"device_bytes"' in line:
                at_stats.append((json.loads(line)["device_bytes"], held.get(dev_heap, 0), sum(held.values())))
        if last not in (None, 0):
            self.fail(step, "%d bytes of device memory still held at exit" % last)
        return at_stats

    def cmd(self, step, args, timeout=120, stdin=None, want_rc=0, env=None):
        t = time.monotonic()
        self.n_cmds += 1
        try:
            r = subprocess.run(PREFIX + args, input=stdin if stdin is not None else "", capture_output=True, text=True,
                               timeout=timeout, env=env or self.env, start_new_session=True)
            rc, out, err = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = "timeout", e.stdout or "", e.stderr or ""
            out = out.decode(errors="replace") if isinstance(out, bytes) else out
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            self.fail(step, "no answer in %d s (hang?)" % timeout)
        secs = time.monotonic() - t
        self.log(step, args, rc, out, err, secs)
        self.at_stats = self.judge(step, rc, err, want_rc) if rc != "timeout" else []
        return rc, out, err

# --- the steps --------------------------------------------------------------------------------------

def step_devices(c):
    rc, out, err = c.cmd("devices", ["devices", "--json"], timeout=60)
    c.cmd("devices-text", ["devices"], timeout=60)
    if rc != 0:
        return False
    radv, dtype, coop, sg, fp16 = CHIPS[c.name]
    try:
        devs = json.loads(out)["devices"]
    except ValueError:
        c.fail("devices", "not JSON")
        return False
    if len(devs) != 1 or not devs[0]["name"].endswith("(RADV %s)" % radv):
        c.fail("devices", "not the simulated %s: %s" % (radv, [d["name"] for d in devs]))
        return False
    d = devs[0]
    got = (d["type"], d["cooperative_matrix"], (d["subgroup_size_min"], d["subgroup_size_max"]), d["fp16_arith"], d["usable"])
    if got != (dtype, coop, sg, fp16, True):
        c.fail("devices", "%s is %s, expected %s" % (d["name"], got, (dtype, coop, sg, fp16, True)))
    heaps = c.heaps = d["memory_heaps"]
    dl = [h for h in heaps if h.get("device_local")]
    c.desc = "%s: %s, %s, %s%s%s, wave%s, %d heaps (device-local %.1f GiB)" % (
        c.name, d["name"], d["type"], "unified memory" if d["unified_memory"] else "staging through host memory",
        ", coopmat" if d["cooperative_matrix"] else "", ", int8 dot" + (" (accelerated)" if d["integer_dot_product_accelerated"] else "")
        if d["integer_dot_product"] else "", "/".join(str(s) for s in sorted(set(sg))), len(heaps),
        sum(h["size"] for h in dl) / 2**30)
    return True

def step_pipelines(c):
    rc, out, err = c.cmd("pipelines", ["pipelines", "--all", "--json"], timeout=300)
    if rc != 0:
        return
    try:
        j = json.loads(out)
    except ValueError:
        return c.fail("pipelines", "not JSON")
    if j.get("validation_messages"):
        c.fail("pipelines", "%s validation messages" % j["validation_messages"])
    names = set(p["shader"] for p in j["pipelines"])
    cm = sorted(n for n in names if n.startswith("matmul_cm_") and "_emu_" not in n)
    acm = sorted(n for n in names if n.startswith("attn_cm_") and "_emu_" not in n)
    if CHIPS[c.name][2]:
        if not cm or "attn_cm_f16" not in acm or "attn_cm_q8" not in acm:
            c.fail("pipelines", "cooperative-matrix pipelines missing: matmul %s, attention %s" % (cm, acm))
    elif cm or acm:
        c.fail("pipelines", "cooperative-matrix pipelines built on a chip without them: %s" % (cm + acm))
    c.notes.append("%d pipelines (%d shaders%s) compiled in %.1f s" % (
        len(j["pipelines"]), len(names), ", %d matmul_cm_* and %d attn_cm_*" % (len(cm), len(acm)) if cm else "",
        j["compile_ms"] / 1e3))

def selftest_ops():
    # the ops of the selftest's cases, in its order (vkllm selftest --list --json runs nothing)
    r = subprocess.run([BIN, "selftest", "--list", "--json"], capture_output=True, text=True)
    try:
        ops = list(dict.fromkeys(c["op"] for c in json.loads(r.stdout)["cases"]))
    except (ValueError, KeyError):
        ops = []
    if not ops or not all(re.fullmatch(r"[a-z0-9_]+", o) for o in ops):
        print(P, "FAILED: cannot read the op names from vkllm selftest --list --json", file=sys.stderr)
        sys.exit(1)
    return ops

def step_selftest(c, ops):
    # one process per op: the shim's 4 GiB of mappable memory is never given back (see the top)
    n = 0
    for op in ops:
        rc, out, err = c.cmd("selftest-" + op, ["selftest", "--defaults", "--unchecked", "--op", op], timeout=300)
        m = re.search(r"passed: (\d+) of (\d+) cases recorded and submitted \(not checked\), 0 failed", out)
        if rc == 0 and not m:
            c.fail("selftest-" + op, "no 'passed' line: " + out[-200:])
        n += int(m.group(1)) if m else 0
    # every matmul variant too: the cooperative-matrix ones (matmul_coopmat=1; 2 is their emulation)
    # run where the chip has them, skipped elsewhere
    rc, out, err = c.cmd("selftest-matmul-variants", ["selftest", "--unchecked", "--op", "matmul"], timeout=300)
    m = re.search(r"passed: (\d+) of (\d+) cases recorded and submitted \(not checked\), 0 failed, (\d+) skipped", out)
    cm = len(re.findall(r"matmul_coopmat=1 +\(not checked", out))
    if rc == 0 and not m:
        c.fail("selftest-matmul-variants", "no 'passed' line: " + out[-200:])
    elif m and CHIPS[c.name][2] and (cm == 0 or int(m.group(3))):
        c.fail("selftest-matmul-variants", "%d cooperative-matrix cases recorded, %s skipped" % (cm, m.group(3)))
    c.notes.append("selftest: %d default cases and %s matmul variants (%d cooperative-matrix) recorded and submitted"
                   % (n, m.group(1) if m else "?", cm))

def run_and_chat(c, tag, model, extra):
    rc, out, err = c.cmd("run-" + tag, ["run", "-m", model, "-p", "Once upon a time", "-n", "16", "--temp", "0",
                                        "--stats", "json"] + extra)
    if rc == 0:
        if len(c.at_stats) != 1:
            c.fail("run-" + tag, "no --stats json line")
        for dev_bytes, dev_held, all_held in c.at_stats:
            if dev_bytes != dev_held:
                c.fail("run-" + tag, "device_bytes %d, but vkllm's blocks on the device-local heap hold %d (all heaps %d)"
                       % (dev_bytes, dev_held, all_held))
    script = "hello there\n/stats\nsecond message\n/stats\n/quit\n"
    rc, out, err = c.cmd("chat-" + tag, ["chat", "-m", model, "--chat-template", "chatml", "-n", "8", "--seed", "3"] + extra,
                         stdin=script)
    if rc == 0 and len(re.findall(r"prompt \d+ tokens, reply \d+ tokens", err)) != 2:
        c.fail("chat-" + tag, "not two /stats lines")

def profile_shaders(j, which):
    return sorted(set(s for p in j if p.get("profile") == which for k in p["kernels"] for s in k["shaders"]))

def step_bench(c, kv):
    tag = "bench" + ("-q8kv" if kv else "")
    extra = ["-ctk", "q8_0", "-ctv", "q8_0"] if kv else []
    rc, out, err = c.cmd(tag, ["bench", "-m", rand, "-p", "64", "-n", "16", "-r", "2", "--profile", "-o", "json"] + extra,
                         timeout=300)
    if rc != 0:
        return
    try:
        j = json.loads(out)
    except ValueError:
        return c.fail(tag, "not JSON")
    pre = profile_shaders(j, "prefill")
    mm = [s.split()[0] for s in pre if s.startswith("matmul")]
    at = [s.split()[0] for s in pre if s.startswith("attn")]
    if CHIPS[c.name][2]:
        want = "attn_cm_q8" if kv else "attn_cm_f16"
        if "matmul_cm_q8_0" not in mm or want not in at:
            c.fail(tag, "the prefill did not record the cooperative-matrix kernels: %s %s" % (mm, at))
    c.notes.append("%s prefill recorded %s, %s" % (tag, ",".join(sorted(set(mm))), ",".join(sorted(set(at)))))

def step_serve(c, model):
    step = "serve"
    args = ["serve", "-m", model, "--port", "0", "--parallel", "2", "-c", "512", "--chat-template", "chatml"]
    t = time.monotonic()
    c.n_cmds += 1
    p = subprocess.Popen(PREFIX + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=c.env, start_new_session=True)
    lines, ready = [], threading.Event()
    def drain():
        for line in p.stderr:
            lines.append(line)
            if "listening on" in line:
                ready.set()
        ready.set()
    th = threading.Thread(target=drain, daemon=True)
    th.start()
    ready.wait(120)
    port = [re.search(r"listening on http://[^ ]*:(\d+)", l) for l in lines]
    port = [x for x in port if x]
    results = [None, None]
    def ask(i):
        try:
            h = http.client.HTTPConnection("127.0.0.1", int(port[0].group(1)), timeout=120)
            # end of text banned (id 2 in the llama vocabulary): both replies run their 12 tokens, side by side
            body = {"messages": [{"role": "user", "content": "tell me a story number %d" % i}], "max_tokens": 12,
                    "stream": True, "temperature": 0, "logit_bias": {"2": -100}}
            h.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = h.getresponse()
            raw = r.read().decode(errors="replace")
            events = [e for e in raw.split("\n\n") if e.startswith("data: ")]
            results[i] = (r.status, r.getheader("Content-Type"), events)
            h.close()
        except Exception as e:
            results[i] = ("error", str(e), [])
    if port:
        ts = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
        for x in ts: x.start()
        for x in ts: x.join(180)
        for i, res in enumerate(results):
            if res is None:
                c.fail(step, "request %d: no reply in 180 s (hang?)" % i)
            elif res[0] != 200 or not (res[1] or "").startswith("text/event-stream") or not res[2] or \
                    res[2][-1] != "data: [DONE]":
                c.fail(step, "request %d: %s %s, %d events%s" % (i, res[0], res[1], len(res[2]),
                                                              ", last %r" % res[2][-1][:200] if res[2] else ""))
        try:  # were they decoded together? (continuous batching: rows per decode step)
            h = http.client.HTTPConnection("127.0.0.1", int(port[0].group(1)), timeout=30)
            h.request("GET", "/metrics")
            met = dict(re.findall(r"^(vkllm_decode_step(?:s|_rows)_total) (\S+)$", h.getresponse().read().decode(), re.M))
            steps, rows = float(met["vkllm_decode_steps_total"]), float(met["vkllm_decode_step_rows_total"])
            c.notes.append("serve: 2 streamed chat completions, %d decode steps for %d rows" % (steps, rows))
            if rows <= steps:
                c.fail(step, "the two requests were never decoded together (%d steps, %d rows)" % (steps, rows))
        except Exception as e:
            c.fail(step, "/metrics: %s" % e)
    else:
        c.fail(step, "the server did not start: " + "".join(lines)[-500:])
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rc = p.wait()
        c.fail(step, "SIGTERM did not stop the server in 60 s (hang?)")
    th.join(10)
    err = "".join(lines)
    c.log(step, args, rc, "", err, time.monotonic() - t)
    c.judge(step, rc, err)
    if not any("shutting down" in l for l in lines):
        c.fail(step, "no 'shutting down' line")
    return held_at(err, "listening on")

def held_at(err, marker):
    """(device-local heap, bytes vkllm held there) when marker was printed, from the memory lines."""
    held, heap = {}, None
    for line in err.splitlines():
        if marker in line:
            break
        m = MEM.search(line)
        if m:
            h = int(m.group(3))
            held[h] = held.get(h, 0) + int(m.group(2)) * (1 if m.group(1) == "allocated" else -1)
            heap = h if m.group(4) == "device" else heap
    return heap, held.get(heap, 0)

def step_fill(c, heap, held, kv_mb):
    """A 2 GiB card filled by the KV pool: a pool that leaves 48 MiB of the device-local heap free
    starts, one 96 MiB larger is refused (DEVICE_OOM, exit 5) before anything is allocated. Counted
    against the heap the weights and the KV cache are on, not the host-visible heap."""
    size = c.heaps[heap]["size"]
    fit = (size - held) // 2**20 + kv_mb - 48
    for mb, ok in ((fit, True), (fit + 96, False)):
        step = "fill-%dmb" % mb
        args = ["serve", "-m", rand, "--port", "0", "--parallel", "2", "-c", "512", "--kv-cache-mb", str(mb)]
        p = subprocess.Popen(PREFIX + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, env=c.env, start_new_session=True)
        c.n_cmds += 1
        t, lines = time.monotonic(), []
        for line in p.stderr:
            lines.append(line)
            if "listening on" in line:
                p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
            c.fail(step, "no answer in 60 s (hang?)")
        err = "".join(lines)
        c.log(step, args, rc, "", err, time.monotonic() - t)
        c.judge(step, rc, err, want_rc=0 if ok else 5)
        if not ok and "cannot allocate the KV cache pool" not in err:
            c.fail(step, "not refused for the KV pool's size")
        if ok and rc == 0 and "listening on" in err:
            _, top = held_at(err, "listening on")
            c.notes.append("a %d MiB KV pool fills the %.2f GiB device-local heap to %.1f%%; 96 MiB more is refused" %
                           (mb, size / 2**30, 100.0 * top / size))

def run_chip(name, ops):
    c = Chip(name)
    c.desc = name
    t = time.monotonic()
    if step_devices(c):
        step_pipelines(c)      # first: compiles every pipeline, which the later commands find in the cache
        step_selftest(c, ops)
        if stories:
            run_and_chat(c, "stories", stories, [])
            run_and_chat(c, "stories-q8kv", stories, ["-ctk", "q8_0", "-ctv", "q8_0"])
        run_and_chat(c, "random", rand, [])
        run_and_chat(c, "random-q8kv", rand, ["-ctk", "q8_0", "-ctv", "q8_0"])
        step_bench(c, False)
        if CHIPS[name][2]:
            step_bench(c, True)
        heap, held = step_serve(c, rand)
        if name == "bonaire" and heap is not None:
            step_fill(c, heap, held, 4)  # serve's pool: 2 slots x 512 positions x 4 layers x 2 x 256 x f16 = 4 MiB
    secs = time.monotonic() - t
    if c.errors:
        say("%s: FAILED in %.1f s (%d commands)" % (c.desc, secs, c.n_cmds))
        for e in c.errors[:20]:
            print("    " + e, flush=True)
        if len(c.errors) > 20:
            print("    ... %d more; logs in %s" % (len(c.errors) - 20, LOGS), flush=True)
    else:
        say("%s: ok in %.1f s (%d commands)" % (c.desc, secs, c.n_cmds))
    for n in c.notes:
        print("    " + n, flush=True)
    return not c.errors, secs

# --- the lane ---------------------------------------------------------------------------------------

chips = [x for x in os.environ.get("VKLLM_SHIM_CHIPS", ",".join(CHIPS)).split(",") if x]
bad = [x for x in chips if x not in CHIPS]
if bad:
    print(P, "FAILED: unknown chips %s (known: %s)" % (bad, ", ".join(CHIPS)), file=sys.stderr)
    sys.exit(2)
# can the driver start at all? (a host without the shim's needs: SKIPPED, as a failed fetch)
r = subprocess.run(PREFIX + ["devices", "--json"], capture_output=True, text=True, timeout=60,
                   env=dict(BASE_ENV, AMDGPU_GPU_ID=chips[0]))
if r.returncode != 0 or "RADV" not in r.stdout:
    skip_or_fail("the simulated %s does not start: %s" % (chips[0], (r.stderr or r.stdout)[-300:].strip()))
ops = selftest_ops()
say("RADV (Mesa 25.0.7) on the amdgpu noop DRM shim, validation on: the shaders execute nothing, so no "
    "text or number is checked; exit codes, hangs, validation messages and memory figures are")
ok, total = True, 0.0
for name in chips:
    good, secs = run_chip(name, ops)
    ok, total = ok and good, total + secs
say("%s: %d chip(s) in %.0f s; logs in %s" % ("passed" if ok else "FAILED", len(chips), total, LOGS))
sys.exit(0 if ok else 1)
EOF
