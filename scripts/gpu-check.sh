#!/bin/sh
# gpu-check.sh - everything vkllm wants to know about a GPU, in one short run, into one folder.
#
#   scripts/gpu-check.sh --pack [DIR]        here: pack the kit (default gpu-kit/, git-ignored)
#   scripts/gpu-check.sh --kit DIR --out O   on the lent GPU machine, from the kit
#   scripts/gpu-check.sh --local [--out O]   here, on lavapipe, from build/ (small files; CI runs it)
#
# The lent machine (docs/gpu.md) has an NVIDIA driver but no package registry and no Vulkan
# loader, so the kit (one kit.tar.xz) carries what this build needs: vkllm and the device tests
# (stripped), the shared libraries they link beyond glibc, Debian's Vulkan loader and the Khronos
# validation layer, stories260K and llama2.c's test vectors, and llama.cpp's prebuilt Vulkan peer
# (../shared/peer/setup.sh installs it into /tmp/vkllm-peer; it is unpacked to the same path).
#
# The run, in this order so that a run cut short still returns the numbers:
#   1. `vkllm devices` (text and --json), and `vkllm pipelines`: every pipeline the device's tuning
#      builds, with the driver's registers, spills and occupancy where it reports them (in log.txt)
#   2. `vkllm selftest --json --profile --validate`: every kernel and variant against the reference
#   3. random TinyLlama-1.1B-shaped Q8_0, Q4_K and Q4_K_M files made there by `vkllm make-model`
#      (Q4_K_M: llama.cpp's mix, q6_K output, attn_v and half the ffn_down, as real files are)
#   4. `vkllm logits` on the device against `--device ref` (prefill and decode): stories260K and
#      the Q4_K and Q4_K_M files
#   5. `vkllm bench -p 512 -n 128 -r 3` on the three files, and once more with --profile (per kernel)
#   6. llama.cpp's Vulkan backend (the peer) on the same files, same lengths
#   7. the Q4_K file's decode with matvec_x8 as by default, everywhere and nowhere
#      (VKLLM_MATVEC_X8=-1, 1, 0), then with 1, 2 and 4 weight rows per invocation
#      (VKLLM_MATVEC_NR), twice each, alternating, into profile.md
#      and with matvec_x8 everywhere, its x quantized once per step or per workgroup
#      (VKLLM_MATVEC_XQ=1, 0); the Q8_0 and Q4_K_M files' decode with their weights in the
#      16-byte layout and as stored (VKLLM_REPACK=1, 0)
#   8. the Q4_K file's prefill with the tiled matmul's cooperative matrices, scalar f16 tiles and
#      f32 tiles (VKLLM_MATMUL_COOPMAT=1; =0; VKLLM_MATMUL_F16=0), twice each, alternating, into
#      profile.md (cooperative matrices only where the device has them, else the f16 tiles again)
#   9. decode of the Q4_K_M file at depth 0 and DEPTH (4096; --size small: 256): vkllm with its
#      attention in f32 and in f16 arithmetic (VKLLM_ATTN_F16=0, 1), and llama.cpp's Vulkan backend
#      after a prompt of 1 and of DEPTH tokens, with and without flash attention (-fa 1, 0), into
#      profile.md: issue 37's bar (decode at depth 0 and 4096 at least ggml-vulkan's)
#  10. the device tests (validation on), while the time budget lasts
# then summary.md: the device, pass/fail of each step, logits error, tokens/s of vkllm and the
# peer side by side and as a fraction of the card's bandwidth (--peak-gbps, or known cards').
# Files in OUT (at most 8: what the device tool returns): summary.md devices.json selftest.json
# logits.json bench.json profile.md tests.log log.txt. Exit status 0 when every step passed.
set -u

usage() {
  sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
  echo "options: --out DIR (default build/gpu-check) --build DIR (default build) --peak-gbps X"
  echo "         --budget S (seconds for the run before the device tests are cut, default 420)"
  echo "         --size small|full (files and lengths: full = 1.1B, pp512, tg128, 3 repetitions;"
  echo "         small = 4-layer 256-wide files, pp64, tg16, 1 repetition; default full with --kit)"
  exit "${1:-0}"
}

root=$(cd "$(dirname "$0")/.." && pwd)
mode=; kit=; out=; build="$root/build"; peak=; budget=420; packdir="$root/gpu-kit"; size=
while [ $# -gt 0 ]; do
  case "$1" in
    --pack) mode=pack; if [ $# -gt 1 ] && [ "${2#-}" = "$2" ]; then packdir=$2; shift; fi ;;
    --kit) mode=kit; kit=${2:?--kit DIR}; shift ;;
    --local) mode=local ;;
    --out) out=${2:?--out DIR}; shift ;;
    --build) build=${2:?--build DIR}; shift ;;
    --peak-gbps) peak=${2:?--peak-gbps X}; shift ;;
    --budget) budget=${2:?--budget S}; shift ;;
    --size) size=${2:?--size small|full}; shift ;;
    -h|--help) usage 0 ;;
    *) echo "gpu-check: unknown option $1" >&2; usage 2 >&2 ;;
  esac
  shift
done
[ -n "$mode" ] || usage 2 >&2
TESTS="test_vk test_ops_basic test_op_matvec test_op_matmul test_op_attn test_forward_random test_gen_random"
MODELS="${VKLLM_TEST_MODELS:-$root/../shared/models}"
PEER_DIR=${PEER_DIR:-/tmp/vkllm-peer}
PEER_BINS=node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan

# --- pack -------------------------------------------------------------------------------------
if [ $mode = pack ]; then
  [ -x "$build/vkllm" ] || { echo "gpu-check: build first (make build): no $build/vkllm" >&2; exit 1; }
  st="$packdir/stage"
  rm -rf "$packdir" && mkdir -p "$st/bin" "$st/lib" "$st/layers" "$st/models" || exit 1
  cp "$build/vkllm" "$st/bin/"
  for t in $TESTS; do cp "$build/tests/$t" "$st/bin/" || exit 1; done
  strip --strip-debug "$st"/bin/* 2>/dev/null || true
  # every shared library the binaries link, but glibc's own (the machine has a newer glibc)
  for b in "$st"/bin/*; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    while read -r lib; do
      case "$(basename "$lib")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
        *) cp -L "$lib" "$st/lib/" ;;
      esac
    done
  loader=$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ {print $NF; exit}')
  [ -n "$loader" ] || { echo "gpu-check: no Vulkan loader here (libvulkan1)" >&2; exit 1; }
  cp -L "$loader" "$st/lib/libvulkan.so.1"
  vl=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
  if [ -f "$vl" ]; then # the manifest's library path, relative to the manifest
    python3 - "$vl" "$st/layers/VkLayer_khronos_validation.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["layer"]["library_path"] = "./libVkLayer_khronos_validation.so"
json.dump(d, open(sys.argv[2], "w"))
EOF
    # the library the manifest names, as the loader finds it (not another copy: Chromium bundles
    # its own, whose synchronization validation test_vk's hazard check does not see)
    vlib=$(ldconfig -p | awk '/libVkLayer_khronos_validation\.so .*x86-64/ {print $NF; exit}')
    [ -n "$vlib" ] || { echo "gpu-check: no libVkLayer_khronos_validation.so (vulkan-validationlayers)" >&2; exit 1; }
    cp -L "$vlib" "$st/layers/" || exit 1
  fi
  for f in stories260K.gguf llama2c-test-vectors.json; do
    cp "$MODELS/$f" "$st/models/" || { echo "gpu-check: missing $MODELS/$f" >&2; exit 1; }
  done
  if [ -x "$PEER_DIR/llama_peer_vulkan" ]; then
    mkdir -p "$st/peer/$PEER_BINS"
    cp "$PEER_DIR/llama_peer_vulkan" "$st/peer/"
    cp "$PEER_DIR/$PEER_BINS"/*.so "$st/peer/$PEER_BINS/"
  else
    echo "gpu-check: no llama.cpp peer in $PEER_DIR (../shared/peer/setup.sh): the kit goes without it"
  fi
  (cd "$root" && git rev-parse HEAD 2>/dev/null) > "$st/commit"
  tar -C "$st" -cJf "$packdir/kit.tar.xz" . || exit 1
  rm -rf "$st"
  echo "gpu-check: packed $(du -h "$packdir/kit.tar.xz" | cut -f1) into $packdir/kit.tar.xz"
  exit 0
fi

# --- the run ----------------------------------------------------------------------------------
out=${out:-$build/gpu-check}
mkdir -p "$out" && out=$(cd "$out" && pwd)
rm -f "$out"/summary.md "$out"/devices.json "$out"/selftest.json "$out"/logits.json "$out"/bench.json \
  "$out"/profile.md "$out"/tests.log "$out"/log.txt
work=$(mktemp -d "${TMPDIR:-/tmp}/vkllm-gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
if [ $mode = kit ]; then
  k=$work/kit
  rm -rf "$k" && mkdir -p "$k" && tar -xJf "$kit/kit.tar.xz" -C "$k" || { echo "gpu-check: cannot unpack $kit/kit.tar.xz" >&2; exit 1; }
  bin=$k/bin; tests=$k/bin; MODELS=$k/models
  export LD_LIBRARY_PATH="$k/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VKLLM_VULKAN_LIBRARY="$k/lib/libvulkan.so.1"
  export VK_LAYER_PATH="$k/layers"
  if [ -d "$k/peer" ]; then mkdir -p "$PEER_DIR" && cp -a "$k/peer/." "$PEER_DIR/"; fi
  nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nv" ]; then export VK_DRIVER_FILES="$nv" VK_ICD_FILENAMES="$nv"; fi
  size=${size:-full}
else
  bin=$build; tests=$build/tests
  size=${size:-small}
fi
case $size in
  full) PP=512 TG=128 REPS=3 PRESET=tinyllama-1.1b DEPTH=4096 ;;
  small) PP=64 TG=16 REPS=1 PRESET=small DEPTH=256 ;;
  *) echo "gpu-check: --size small or full" >&2; exit 2 ;;
esac
export VKLLM_TEST_MODELS="$MODELS" VKLLM_TEST_DATA="$root/tests/data"
peer="$PEER_DIR/llama_peer_vulkan"
[ -x "$peer" ] || peer=
status="$work/status"; : > "$status"
log() { echo "== $*" | tee -a "$out/log.txt"; }
# step NAME CMD...: run CMD with its output in log.txt; record NAME pass/fail and seconds
step() {
  name=$1; shift
  s=$(date +%s)
  log "$name: $*"
  "$@" >> "$out/log.txt" 2>&1; rc=$?
  echo "$name $([ $rc = 0 ] && echo pass || echo "FAIL($rc)") $(( $(date +%s) - s ))" >> "$status"
  log "$name: exit $rc after $(( $(date +%s) - s )) s"
  return $rc
}

log "gpu-check $mode, vkllm $("$bin/vkllm" --version 2>&1), $(date -u +%FT%TZ)"
step devices "$bin/vkllm" devices
"$bin/vkllm" devices --json > "$out/devices.json" 2>> "$out/log.txt"
step pipelines "$bin/vkllm" pipelines
# --local: the device's own kernels of a few ops (the step is what is checked here; every op and
# variant runs in the test suite's op tests)
sel=; [ $mode = local ] && sel="--defaults --op rmsnorm,rope_kv,attention"
step selftest_json sh -c '"$0" selftest --json --profile --validate $2 > "$1"' "$bin/vkllm" "$out/selftest.json" "$sel"

q8="$work/$PRESET-q8_0.gguf"; q4="$work/$PRESET-q4_K.gguf"; q4m="$work/$PRESET-q4_K_m.gguf"
step make_q8_0 "$bin/vkllm" make-model --preset $PRESET --type q8_0 -o "$q8"
step make_q4_K "$bin/vkllm" make-model --preset $PRESET --type q4_K -o "$q4"
step make_q4_K_m "$bin/vkllm" make-model --preset $PRESET --type q4_K_m -o "$q4m"

step logits python3 "$root/scripts/gpu-check-report.py" logits "$bin/vkllm" "$out/logits.json" \
  "$MODELS/stories260K.gguf" "$q4" "$q4m"

: > "$work/bench.jsonl"
for f in "$q8" "$q4" "$q4m"; do
  step "bench_$(basename "$f" .gguf)" sh -c '"$0" bench -m "$1" -p "$2" -n "$3" -r "$4" -o jsonl >> "$5"' \
    "$bin/vkllm" "$f" $PP $TG $REPS "$work/bench.jsonl"
  echo "## $(basename "$f")" >> "$out/profile.md"
  step "profile_$(basename "$f" .gguf)" sh -c '"$0" bench -m "$1" -p "$2" -n "$3" -r 1 --profile ${5:+--peak-gbps "$5"} >> "$4"' \
    "$bin/vkllm" "$f" $PP $TG "$out/profile.md" "$peak"
  if [ -n "$peer" ]; then
    step "peer_$(basename "$f" .gguf)" sh -c '"$0" "$1" -p "$2" -n "$3" -r "$4" > "$5.peer.json"' \
      "$peer" "$f" $PP $TG $REPS "$work/$(basename "$f")"
  fi
done
python3 "$root/scripts/gpu-check-report.py" bench "$work/bench.jsonl" "$work" "$out/bench.json" >> "$out/log.txt" 2>&1
# compare NAME pp|tg PREFIX VALUE...: the Q4_K file's prefill (pp) or decode (tg) under each
# environment setting PREFIX$VALUE, twice each, alternating (once each with --local), its pp: or
# tg: line into profile.md; steps NAME_VALUE (with '=' as '_')
compare() {
  cmp_name=$1 cmp_kind=$2 cmp_pre=$3; shift 3
  [ $mode = local ] || set -- "$@" "$@"
  cmp_p=0 cmp_n=$TG; [ "$cmp_kind" = pp ] && cmp_p=$PP cmp_n=0
  for v in "$@"; do
    step "${cmp_name}_$(echo "$v" | tr '= ' '__')" \
      sh -c 'echo "$4: $(env $4 "$0" bench -m "$1" -p "$2" -n "$3" -r "$5" 2>&1 | grep "$6:")" >> "$7"' \
      "$bin/vkllm" "${cmp_file:-$q4}" "$cmp_p" "$cmp_n" "$cmp_pre$v" "$REPS" "$cmp_kind" "$out/profile.md"
  done
}

# decode of the Q4_K file as chosen by default, with x in int8 wherever matvec_x8 can run, and with
# x in f32 everywhere (matvec.comp): which is faster on this GPU (lavapipe: the texel path whatever
# it says)
echo "## $(basename "$q4"): decode, VKLLM_MATVEC_X8 default (-1), everywhere (1), nowhere (0), alternating" >> "$out/profile.md"
compare decode_x8 tg VKLLM_MATVEC_X8= -1 1 0

# decode of the Q4_K file with matvec_x8 everywhere, its x quantized once per step into a buffer
# (VKLLM_MATVEC_XQ=1, the default) or by every workgroup into shared memory (0): one dependent
# dispatch per activation against x read as f32 by every workgroup
echo "## $(basename "$q4"): decode, VKLLM_MATVEC_X8=1 with VKLLM_MATVEC_XQ 1, 0 (x quantized once per step / per workgroup), alternating" >> "$out/profile.md"
compare decode_xq tg "VKLLM_MATVEC_X8=1 VKLLM_MATVEC_XQ=" 1 0

# decode of the Q8_0 and Q4_K_M files with their Q8_0 / Q6_K weights in the 16-byte layout (the
# default on GPUs) and as stored (VKLLM_REPACK=1, 0): what 16-byte loads of the quants buy here
echo "## $(basename "$q8"), $(basename "$q4m"): decode, VKLLM_REPACK 1, 0 (the 16-byte layout / the file's), alternating" >> "$out/profile.md"
cmp_file=$q8; compare decode_rp_q8_0 tg VKLLM_REPACK= 1 0
cmp_file=$q4m; compare decode_rp_q4_K_m tg VKLLM_REPACK= 1 0
cmp_file=""

# decode of the Q4_K file with 1, 2 (the default) and 4 weight rows per invocation: the input for
# choosing rows per workgroup per vendor (docs/gpu.md), which nothing here can measure
echo "## $(basename "$q4"): decode, VKLLM_MATVEC_NR 1, 2, 4 (weight rows per invocation), alternating" >> "$out/profile.md"
compare decode_nr tg VKLLM_MATVEC_NR= 1 2 4

# prefill of the Q4_K file with the tiled matmul's cooperative matrices (the default where the
# device has them), its scalar f16 tiles (the default where shaderFloat16 is offered) and f32
# tiles: which is faster on this GPU (lavapipe: the matvec path unless forced, no coopmat)
echo "## $(basename "$q4"): prefill, VKLLM_MATMUL_COOPMAT=1 (cooperative matrices), VKLLM_MATMUL_COOPMAT=0 (f16 tiles), VKLLM_MATMUL_F16=0 (f32 tiles), alternating" >> "$out/profile.md"
compare prefill pp VKLLM_MATMUL_ COOPMAT=1 COOPMAT=0 F16=0

# decode at depth 0 and DEPTH on the Q4_K_M file: vkllm's attention walk in f32 and in f16
# arithmetic (VKLLM_ATTN_F16; f16 is off by default, see docs/gpu.md), and llama.cpp's decode after
# a prompt of 1 and of DEPTH tokens (its depth), with flash attention and without
echo "## $(basename "$q4m"): decode at depth 0 and $DEPTH, vkllm (VKLLM_ATTN_F16=0, 1) and llama.cpp (-fa 1, 0)" >> "$out/profile.md"
for v in 0 1; do
  step "depth_attn_f16_$v" sh -c 'echo "VKLLM_ATTN_F16=$4:" >> "$6"; VKLLM_ATTN_F16=$4 "$0" bench -m "$1" -p 0 -n "$2" -d "0,$3" -r "$5" -o md >> "$6"' \
    "$bin/vkllm" "$q4m" $TG $DEPTH $v $REPS "$out/profile.md"
done
if [ -n "$peer" ]; then
  for fa in 1 0; do
    for d in 1 $DEPTH; do
      step "depth_peer_fa${fa}_$d" sh -c '"$0" "$1" -p "$2" -n "$3" -r "$4" -fa "$5" > "$6" &&
        python3 -c "import json,statistics,sys; j=json.load(open(sys.argv[1])); print(\"llama.cpp -fa %s, decode after %s prompt tokens: %.2f t/s (median of %s)\" % (sys.argv[2], sys.argv[3], statistics.median(j[\"decode_tok_s\"]), j[\"decode_tok_s\"]))" "$6" "$5" "$2" >> "$7"' \
        "$peer" "$q4m" $d $TG $REPS $fa "$work/depth-peer-$fa-$d.json" "$out/profile.md"
    done
  done
fi

# the device tests, with validation on, while the budget lasts
[ $mode = local ] && TESTS="test_vk test_forward_random:stories"
for t in $TESTS; do
  case $t in test_forward_random|test_gen_random) set -- "$t:random" "$t:stories" ;; *) set -- "$t" ;; esac
  for tt in "$@"; do
    if [ $(( $(date +%s) - t0 )) -gt "$budget" ]; then
      echo "test ${tt%%:*} ${tt#*:} skipped: past the ${budget} s budget" >> "$out/tests.log"
      echo "$tt SKIPPED 0" >> "$status"
      continue
    fi
    arg=; [ "$tt" != "${tt%%:*}" ] && arg=${tt#*:}
    s=$(date +%s)
    echo "== ${tt%%:*} $arg" >> "$out/tests.log"
    VKLLM_VALIDATE=1 timeout 300 "$tests/${tt%%:*}" $arg >> "$out/tests.log" 2>&1; rc=$?
    r=pass; [ $rc = 0 ] || r="FAIL($rc)"; [ $rc = 77 ] && r=SKIPPED
    echo "$tt $r $(( $(date +%s) - s ))" >> "$status"
    echo "== ${tt%%:*} $arg: $r after $(( $(date +%s) - s )) s" >> "$out/tests.log"
  done
done

python3 "$root/scripts/gpu-check-report.py" summary "$out" "$status" "$mode" "${peak:-}" > "$out/summary.md"
cat "$out/summary.md"
log "gpu-check done in $(( $(date +%s) - t0 )) s"
! grep -q FAIL "$status"
