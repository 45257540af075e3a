#!/bin/sh
# lane-windows.sh BUILD_DIR - the Windows build (scripts/build-windows.sh, MinGW-w64) run under
# Wine on the host's lavapipe (Wine's vulkan-1.dll, winevulkan, needs an X display: Xvfb). It
# builds BUILD_DIR/windows (the dependencies from Debian's source packages, cached there), then
# under one `xvfb-run -a` with wine64:
#
#   1. vkllm.exe devices: lavapipe (llvmpipe) through the Windows loader path, usable;
#   2. vkllm.exe selftest --defaults under the host's Khronos validation layer, with synchronization
#      validation: every case within its bound (only the cooperative-matrix cases skip: lavapipe has
#      none) and not one validation message. VKLLM_VALIDATE=1 cannot ask for the layer under Wine:
#      winevulkan lists no layers and refuses a vkCreateInstance that names one. But it creates its
#      instance through the host's Vulkan loader, which inserts the layers that VK_INSTANCE_LAYERS
#      names (the host's libVkLayer_khronos_validation.so, Debian's vulkan-validationlayers); the
#      layer's settings file (VK_LAYER_SETTINGS_PATH) turns on synchronization validation and logs
#      every message, from information up, to a file, which must show the layer active and nothing
#      else;
#   3. vkllm.exe logits against `vkllm.exe logits --device ref`, prefill and decode, within the bars
#      of tests/test_cli_logits.py (the same argmax at every position, the top logits within 2e-2),
#      and against the Linux build's logits on the same driver (the same top 5, within 1e-3);
#   4. stories260K's greedy `run` byte-identical to the Linux build's (BUILD_DIR/vkllm), the model
#      read from a path outside ASCII ("modèles é/histoire-ü.gguf": UTF-8 paths);
#   5. vkllm.exe bench -p 64 -n 16;
#   6. vkllm.exe serve on 127.0.0.1 answering a streamed /v1/chat/completions from Linux's Python;
#      a streaming client and a plain one that leave mid-generation, each freeing its slot at once
#      (counted as cancelled: the server's failed write, and its watcher over WSAPoll); then Ctrl-C
#      (Wine turns SIGINT into the console's Ctrl-C event) shutting it down cleanly.
#
# Where MinGW-w64, wine64 or Xvfb are not installed (scripts/install-deps.sh --windows installs
# them), the Debian sources cannot be downloaded or the model is missing, the lane reports SKIPPED
# and exits 0, or fails when VKLLM_REQUIRE_TEST_MODELS=1 (CI). The model:
# $VKLLM_TEST_MODELS/stories260K.gguf (default: the repository's ../shared/models).
set -eu
build=$(cd "${1:?usage: lane-windows.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
models=${VKLLM_TEST_MODELS:-$here/../../shared/models}
model="$models/stories260K.gguf"
win=${VKLLM_WIN_BUILD_DIR:-$build/windows}
log="$build/lane-windows.details.log" # (lane-windows.log is test-drivers.sh's copy of the output)
exe="$win/vkllm.exe"

skip_or_fail() {
  if [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ]; then
    echo "lane windows: FAILED: $*" >&2
    exit 1
  fi
  echo "lane windows: SKIPPED: $*"
  exit 0
}

wine=""
for w in wine64 /usr/lib/wine/wine64; do
  command -v "$w" >/dev/null 2>&1 && wine=$(command -v "$w") && break
done

if [ -z "${VKLLM_LANE_WINDOWS_INNER:-}" ]; then
  : > "$log"
  command -v x86_64-w64-mingw32-gcc-posix >/dev/null 2>&1 ||
    skip_or_fail "MinGW-w64 is not installed (gcc-mingw-w64-x86-64-posix: scripts/install-deps.sh --windows)"
  [ -n "$wine" ] || skip_or_fail "wine64 is not installed (scripts/install-deps.sh --windows)"
  command -v xvfb-run >/dev/null 2>&1 || skip_or_fail "xvfb-run is not installed (xvfb: scripts/install-deps.sh --windows)"
  [ -f "$model" ] || skip_or_fail "missing $model"
  [ -x "$build/vkllm" ] || { echo "lane windows: FAILED: no $build/vkllm" >&2; exit 1; }
  t0=$(date +%s)
  if ! "$here/build-windows.sh" "$win" >> "$log" 2>&1; then
    if grep -q "cannot read .* source lists\|cannot download the source package" "$log"; then
      tail -3 "$log" >&2
      skip_or_fail "cannot download Debian's source packages (PCRE2, cJSON, libmicrohttpd)"
    fi
    tail -20 "$log" >&2
    echo "lane windows: FAILED: scripts/build-windows.sh $win (see $log)" >&2
    exit 1
  fi
  echo "lane windows: built $exe in $(( $(date +%s) - t0 )) s"
  # every Wine run under one X server (winevulkan needs one)
  VKLLM_LANE_WINDOWS_INNER=1 exec xvfb-run -a "$0" "$@"
fi

# --- under Xvfb --------------------------------------------------------------------------------
export WINEPREFIX="$win/wineprefix" WINEDEBUG=-all WINELOADER="$wine" WINEDLLOVERRIDES="mscoree,mshtml="
wm="Z:$model"
status=0
fail() { echo "lane windows: FAILED: $*" >&2; status=1; }
t0=$(date +%s)
notes="$win/lane-notes.txt"
: > "$notes"
"$wine" wineboot -i >> "$log" 2>&1 || true # a new prefix, once (not timed below)
# vkllm.exe under Wine. Now and then (seen 2 times in about 30 runs, on a loaded machine) Wine's
# vulkan-1.dll starts without the host's driver and offers Vulkan 1.0 alone: such a run is tried
# once more, and says so. Its stderr goes to the caller's stderr after the run.
on_win() {
  e="$win/lane-stderr.txt"
  "$wine" "$exe" "$@" 2> "$e" && r=0 || r=$?
  if [ $r != 0 ] && grep -q "the Vulkan loader supports only Vulkan 1.0" "$e"; then
    echo "lane windows: note: winevulkan offered Vulkan 1.0 only to 'vkllm.exe $1': ran it again" >> "$notes"
    "$wine" "$exe" "$@" 2> "$e" && r=0 || r=$?
  fi
  cat "$e" >&2
  return $r
}
echo "lane windows: $(on_win --version 2>>"$log" | head -1) under $("$wine" --version 2>/dev/null)"

# 1. the device
on_win devices > "$build/lane-windows.devices.txt" 2>>"$log" || fail "vkllm.exe devices"
if grep -q "llvmpipe" "$build/lane-windows.devices.txt" && grep -q "usable by vkllm  *yes" "$build/lane-windows.devices.txt"; then
  echo "lane windows: devices: $(sed -n 2p "$build/lane-windows.devices.txt" | tr -s ' ')"
else
  fail "vkllm.exe devices lists no usable lavapipe"
  cat "$build/lane-windows.devices.txt" >&2
fi

# 2. every default case of the selftest, under the host's validation layer (see the top)
rc=0
vlog="$build/lane-windows.validation.log"
vset="$win/vk_layer_settings.txt"
rm -f "$vlog"
layer=""
for d in /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d; do
  [ -f "$d/VkLayer_khronos_validation.json" ] && layer=$d/VkLayer_khronos_validation.json && break
done
if [ -n "$layer" ]; then
  printf '%s\n' "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG" \
    "khronos_validation.report_flags = info,warn,perf,error" "khronos_validation.log_filename = $vlog" \
    "khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT" > "$vset"
  (export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation VK_LAYER_SETTINGS_PATH="$vset" VKLLM_VALIDATE=1
   on_win selftest --defaults) > "$build/lane-windows.selftest.log" 2>&1 || rc=1
else
  echo "lane windows: note: no Khronos validation layer on the host (vulkan-validationlayers): the selftest ran without it" >> "$notes"
  [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ] && fail "no Khronos validation layer on the host (vulkan-validationlayers)"
  on_win selftest --defaults > "$build/lane-windows.selftest.log" 2>&1 || rc=1
fi
tail -1 "$build/lane-windows.selftest.log" | sed 's/^/lane windows: selftest: /'
tail -1 "$build/lane-windows.selftest.log" | grep -q " failed" || rc=1
! grep " skip " "$build/lane-windows.selftest.log" | grep -qv "no cooperative matrices here" || rc=1
[ $rc = 0 ] || { fail "selftest --defaults"; grep -E "FAIL|skip|vkllm:" "$build/lane-windows.selftest.log" | head -20 >&2; }
if [ -n "$layer" ]; then
  # one line a message, "ID(SEVERITY / TYPE): msgNum: ..."; the layer's own status message at
  # vkCreateInstance (INFO) shows that it ran with synchronization validation and logged here
  n_bad=$(grep "): msgNum: " "$vlog" 2>/dev/null | grep -vc "^UNASSIGNED-khronos-validation-createinstance-status-message(INFO" || true)
  if ! grep -q "Current Enables: .*VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION" "$vlog" 2>/dev/null; then
    fail "the validation layer did not run under Wine with synchronization validation (no status message in $vlog)"
  elif [ "${n_bad:-0}" != 0 ]; then
    fail "selftest --defaults: $n_bad validation messages under Wine (see $vlog)"
    grep "): msgNum: " "$vlog" | grep -v "(INFO" | head -5 | cut -c1-300 >&2
  else
    echo "lane windows: selftest: under the host's validation layer, synchronization validation on: 0 messages"
  fi
fi

# 3. logits against the reference and against Linux's on the same driver
ids="1 365 288 285 29 260 307 287 11 402 1 365 288 285 29 260"
on_win logits -m "$wm" --ids "$ids" --top 5 --json > "$build/lane-windows.pre.json" 2>>"$log" || fail "vkllm.exe logits"
on_win logits -m "$wm" --ids "$ids" --top 5 --json --decode > "$build/lane-windows.dec.json" 2>>"$log" ||
  fail "vkllm.exe logits --decode"
on_win logits -m "$wm" --ids "$ids" --top 5 --json --device ref > "$build/lane-windows.ref.json" 2>>"$log" ||
  fail "vkllm.exe logits --device ref"
"$build/vkllm" logits -m "$model" --ids "$ids" --top 5 --json > "$build/lane-windows.linux.json" 2>>"$log" ||
  fail "vkllm logits (Linux)"
python3 - "$build"/lane-windows.pre.json "$build"/lane-windows.dec.json "$build"/lane-windows.ref.json \
  "$build"/lane-windows.linux.json <<'PY' || fail "logits not within the bars"
import json, sys
try:
    pre, dec, ref, lin = (json.load(open(p)) for p in sys.argv[1:5])
except ValueError as e:
    print("lane windows: logits: unreadable JSON: %s" % e); sys.exit(1)
ok = len(pre) == len(ref) == len(dec) == len(lin) > 0
worst = 0.0
for name, out in (("prefill", pre), ("decode", dec)):
    for a, r in zip(out, ref):
        if a["top"][0][0] != r["top"][0][0]:
            print("lane windows: %s pos %d: argmax %d, the reference's %d" % (name, a["pos"], a["top"][0][0], r["top"][0][0]))
            ok = False
        for (i1, l1), (i2, l2) in zip(a["top"], r["top"]):
            if i1 == i2:
                worst = max(worst, abs(l1 - l2))
drv = 0.0
for a, b in zip(pre, lin):
    if [t[0] for t in a["top"]] != [t[0] for t in b["top"]]:
        print("lane windows: pos %d: top 5 %s, Linux's %s" % (a["pos"], a["top"], b["top"]))
        ok = False
    drv = max([drv] + [abs(x[1] - y[1]) for x, y in zip(a["top"], b["top"])])
print("lane windows: logits: max |Windows - reference| %.2e over %d positions, prefill and decode (bar 2e-2); "
      "|Windows - Linux| %.2e (bar 1e-3)" % (worst, len(ref), drv))
sys.exit(0 if ok and worst < 2e-2 and drv < 1e-3 else 1)
PY

# 4. greedy text, byte for byte Linux's, the model read from a path outside ASCII (UTF-8 paths)
prompt="Once upon a time"
mkdir -p "$win/modèles é"
cp "$model" "$win/modèles é/histoire-ü.gguf"
on_win run -m "Z:$win/modèles é/histoire-ü.gguf" -p "$prompt" -n 96 --temp 0 > "$build/lane-windows.run.win.txt" 2>>"$log" ||
  fail "vkllm.exe run (the model at $win/modèles é/histoire-ü.gguf)"
"$build/vkllm" run -m "$model" -p "$prompt" -n 96 --temp 0 > "$build/lane-windows.run.linux.txt" 2>>"$log" ||
  fail "vkllm run (Linux)"
if [ -s "$build/lane-windows.run.win.txt" ] && cmp -s "$build/lane-windows.run.win.txt" "$build/lane-windows.run.linux.txt"; then
  echo "lane windows: greedy text equal to Linux's ($(wc -c < "$build/lane-windows.run.win.txt") bytes; the model at a UTF-8 path)"
else
  fail "greedy text differs from Linux's"
  cmp "$build/lane-windows.run.linux.txt" "$build/lane-windows.run.win.txt" >&2 || true
fi

# 5. bench
if on_win bench -m "$wm" -p 64 -n 16 > "$build/lane-windows.bench.txt" 2>>"$log" &&
  grep -q "tg16" "$build/lane-windows.bench.txt"; then
  grep -E "pp64|tg16" "$build/lane-windows.bench.txt" | tr -s ' ' | sed 's/^/lane windows: bench: /'
else
  fail "vkllm.exe bench -p 64 -n 16"
  cat "$build/lane-windows.bench.txt" >&2 || true
fi

# 6. serve: a streamed chat completion from this side, clients that leave mid-generation, then Ctrl-C
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# (a background job of a script starts with SIGINT ignored: python3 gives it back its default)
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
  "$wine" "$exe" serve -m "$wm" --host 127.0.0.1 --port "$port" -c 2048 > "$build/lane-windows.serve.out" 2> "$build/lane-windows.serve.err" &
spid=$!
python3 - "$port" <<'PY' || fail "serve: the streamed /v1/chat/completions or a client leaving (see $build/lane-windows.serve.err)"
import http.client, json, sys, time
port = int(sys.argv[1])
deadline = time.time() + 120
while True:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/health")
        if c.getresponse().status == 200: break
    except OSError:
        pass
    if time.time() > deadline:
        print("lane windows: serve: no /health in 120 s"); sys.exit(1)
    time.sleep(0.5)
body = {"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 24, "temperature": 0, "stream": True}
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
r = c.getresponse()
if r.status != 200:
    print("lane windows: serve: HTTP %d: %s" % (r.status, r.read()[:200])); sys.exit(1)
text, chunks, done = "", 0, False
for line in r:
    line = line.decode().strip()
    if not line.startswith("data: "): continue
    if line == "data: [DONE]": done = True; break
    d = json.loads(line[6:])
    for ch in d.get("choices", []):
        piece = (ch.get("delta") or {}).get("content")
        if piece: text += piece; chunks += 1
print("lane windows: serve: streamed %d chunks, %d bytes, [DONE] %s: %r" % (chunks, len(text), done, text[:60]))
ok = done and chunks > 1 and text

# clients that leave while their request is generated: the slot freed at once, counted as cancelled
import socket
def metrics():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30); c.request("GET", "/metrics")
    m = {}
    for line in c.getresponse().read().decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1); m[k] = float(v)
    return m
def leave(stream):
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 1000, "temperature": 0, "stream": stream}).encode()
    m0 = metrics()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    if stream:  # three events: the request is generating
        got = b""
        while got.count(b"data: ") < 3:
            more = s.recv(4096)
            if not more: break
            got += more
    else:  # its slot busy: the request is generating, its connection parked (the watcher's)
        t = time.time()
        while metrics().get("vkllm_slots_busy", 0) != 1 and time.time() - t < 30: time.sleep(0.02)
    s.close()
    t0 = time.time()
    while metrics().get("vkllm_slots_busy", 1) != 0 and time.time() - t0 < 30: time.sleep(0.02)
    took, m1 = time.time() - t0, metrics()
    key = 'vkllm_requests_finished_total{reason="cancelled"}'
    made = m1["vkllm_generation_tokens_total"] - m0["vkllm_generation_tokens_total"]
    good = m1[key] == m0[key] + 1 and took < 5 and made < 1000
    print("lane windows: serve: a %s client that left: slot free after %.2f s, %d tokens made, cancelled %+d%s"
          % ("streaming" if stream else "plain", took, made, m1[key] - m0[key], "" if good else " (want +1 within 5 s)"))
    return good
ok = leave(True) and ok
ok = leave(False) and ok
sys.exit(0 if ok else 1)
PY
kill -INT $spid 2>/dev/null || true
for _ in $(seq 1 60); do kill -0 $spid 2>/dev/null || break; sleep 0.5; done
if kill -0 $spid 2>/dev/null; then
  fail "serve did not stop on Ctrl-C (SIGINT) within 30 s"
  kill $spid 2>/dev/null || true
fi
wait $spid 2>/dev/null || true
if grep -q "shutting down" "$build/lane-windows.serve.err"; then
  echo "lane windows: serve: $(grep "shutting down" "$build/lane-windows.serve.err" | head -1)"
else
  fail "serve: no clean shutdown on Ctrl-C"
  tail -5 "$build/lane-windows.serve.err" >&2
fi

"$(dirname "$wine")/wineserver" -k 2>/dev/null || wineserver -k 2>/dev/null || true
cat "$notes"
echo "lane windows: $(( $(date +%s) - t0 )) s under Wine"
[ $status = 0 ] && echo "lane windows: passed" || echo "lane windows: FAILED (details in $log)" >&2
exit $status
