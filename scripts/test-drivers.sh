#!/bin/sh
# test-drivers.sh BUILD_DIR [LANE...] - the device tests on other drivers and tools than the suite's
# own (lavapipe 22.3 at subgroup size 8): `make test-drivers`, which CI runs after `make test`.
# Lanes (all by default; name some to run those only):
#
#   sg4          lavapipe at subgroup size 4 (LP_NATIVE_VECTOR_WIDTH=128): `vkllm selftest` (every op
#                and variant: reductions then take the sizes the device guarantees) and the forward
#                pass on a real model, validated
#   mesa25       Mesa 25's lavapipe (bookworm-backports, beside the system Mesa): the selftest of
#                every op but the storage-buffer matvec (the system driver's tests cover its 99
#                variants at length; Mesa 25 compiles 4-5x slower from a cold cache) and the device
#                tests of the Vulkan layer, the elementwise ops and the forward pass, validated; and
#                stories260K split over Mesa 25's and the system's lavapipe in one process
#   radv-null    AMD's compiler (ACO) for GCN to RDNA4 without the chips: every pipeline, registers
#                and spills (scripts/lane-radv-null.sh)
#   amdgpu-shim  AMD's whole driver on seven simulated chips, nothing executed: run, chat, bench,
#                serve, selftest and pipelines, validated, memory checked against the driver's
#                (scripts/lane-amdgpu-shim.sh)
#   swiftshader  Google's SwiftShader (no 16/8-bit storage, subgroup 4): text and logits against the
#                reference, the selftest's defaults (scripts/lane-swiftshader.sh)
#   spirv-val    Debian 13's spirv-val 2025.1 on every embedded SPIR-V module (scripts/lane-spirv-val.sh)
#   windows      the MinGW-w64 build (scripts/build-windows.sh, into BUILD_DIR/windows) under Wine on
#                lavapipe: devices, selftest, logits against the reference, greedy text equal to
#                Linux's, bench, serve streaming to Linux (scripts/lane-windows.sh)
#
# What a lane needs from another Debian release is fetched once into $VKLLM_DRIVERS_DIR (default
# BUILD_DIR/drivers) by scripts/fetch-debs.sh, beside the system and never installed. Where it
# cannot be fetched (no network) a lane reports SKIPPED, or fails when VKLLM_REQUIRE_TEST_MODELS=1
# (CI). The last lines list every lane's result and time.
set -eu
build=$(cd "${1:?usage: test-drivers.sh BUILD_DIR [LANE...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/vkllm"
drivers=${VKLLM_DRIVERS_DIR:-$build/drivers}
lanes=${*:-sg4 mesa25 radv-null amdgpu-shim swiftshader spirv-val windows}
summary=""

# vkllm selftest with these arguments: its last line; fails on a failed case, an error, or a skipped
# case (lavapipe runs every variant but the cooperative-matrix ones: it has none; their emulation
# runs).
selftest() {
  "$bin" selftest "$@" > "$build/test-drivers-selftest.log" 2>&1 && rc=0 || rc=$?
  tail -1 "$build/test-drivers-selftest.log"
  tail -1 "$build/test-drivers-selftest.log" | grep -q " failed" || rc=1
  ! grep " skip " "$build/test-drivers-selftest.log" | grep -qv "no cooperative matrices here" || rc=1
  [ $rc = 0 ] || { grep -E "FAIL|skip|vkllm:" "$build/test-drivers-selftest.log" | head -20 >&2; return 1; }
}

lane_sg4() (
  export LP_NATIVE_VECTOR_WIDTH=128 VKLLM_VALIDATE=1
  sg=$("$bin" devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["subgroup_size"])')
  [ "$sg" = 4 ] || { echo "lane sg4: FAILED: subgroup size $sg, not 4" >&2; exit 1; }
  selftest --validate || exit 1
  cd "$build" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" --timeout 900 -R '^(test_forward_stories|test_gen_stories)$'
)

lane_mesa25() (
  dir="$drivers/mesa25"
  if ! "$here/fetch-debs.sh" bookworm-backports "$dir" mesa-vulkan-drivers libdrm2 libdrm-amdgpu1 > "$build/mesa25-fetch.log" 2>&1; then
    cat "$build/mesa25-fetch.log" >&2
    [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ] && { echo "lane mesa25: FAILED: cannot fetch Mesa 25" >&2; exit 1; }
    echo "lane mesa25: SKIPPED: cannot fetch mesa-vulkan-drivers from bookworm-backports"; exit 3
  fi
  lib="$dir/root/usr/lib/$(uname -m)-linux-gnu"
  python3 - "$dir/root/usr/share/vulkan/icd.d/lvp_icd.json" "$lib/libvulkan_lvp.so" "$build/mesa25-lvp.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["ICD"]["library_path"] = sys.argv[2]; json.dump(d, open(sys.argv[3], "w"))
EOF
  export VK_ICD_FILENAMES="$build/mesa25-lvp.json" VK_DRIVER_FILES="$build/mesa25-lvp.json"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VKLLM_VALIDATE=1
  driver=$("$bin" devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["driver_info"])')
  case "$driver" in
    "Mesa 25"*) echo "lane mesa25: on $driver" ;;
    *) echo "lane mesa25: FAILED: the device is '$driver', not Mesa 25's lavapipe" >&2; exit 1 ;;
  esac
  st=0
  selftest --validate \
    --op add,mul,silu_mul,rmsnorm,add_rmsnorm,softmax,matvec_tb,matmul,get_rows,rope,kv_store,rope_kv,attention,argmax ||
    st=1
  (cd "$build" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" --timeout 900 \
    -R '^(test_vk|test_ops_basic|test_forward_stories|test_gen_stories|test_cli_logits)$') || st=1
  # one model split over Mesa 25's lavapipe and the system's (Mesa 22) in one process: the same
  # greedy text as the system's alone
  sys_lvp=$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -1 || true)
  model="${VKLLM_TEST_MODELS:-$here/../../shared/models}/stories260K.gguf"
  if [ -n "$sys_lvp" ] && [ -f "$model" ]; then
    run() { "$bin" run -m "$model" -p "Once upon a time" -n 64 --temp 0 "$@" 2>>"$build/mesa25-split.log"; }
    one=$(VK_ICD_FILENAMES=$sys_lvp VK_DRIVER_FILES=$sys_lvp run) || st=1
    two=$(VK_ICD_FILENAMES="$build/mesa25-lvp.json:$sys_lvp" VK_DRIVER_FILES="$build/mesa25-lvp.json:$sys_lvp" \
      run --devices 0,1 --tensor-split 1,1) || st=1
    if [ -n "$one" ] && [ "$one" = "$two" ]; then echo "lane mesa25: split over Mesa 25 + Mesa 22: the same text"
    else echo "lane mesa25: FAILED: the text split over Mesa 25 + Mesa 22 differs (see $build/mesa25-split.log)" >&2; st=1; fi
  fi
  exit $st
)

status=0
for lane in $lanes; do
  t0=$(date +%s)
  echo "== test-drivers: lane $lane"
  case $lane in
    sg4) lane_sg4 && rc=0 || rc=$? ;;
    mesa25) lane_mesa25 && rc=0 || rc=$? ;;
    radv-null | amdgpu-shim | swiftshader | spirv-val | windows)
      "$here/lane-$lane.sh" "$build" > "$build/lane-$lane.log" 2>&1 && rc=0 || rc=$?
      cat "$build/lane-$lane.log"
      grep -q "^lane $lane: SKIPPED" "$build/lane-$lane.log" && [ $rc = 0 ] && rc=3 ;;
    *) echo "test-drivers: no lane '$lane' (sg4 mesa25 radv-null amdgpu-shim swiftshader spirv-val windows)" >&2; exit 2 ;;
  esac
  case $rc in
    0) result=passed ;;
    3) result=SKIPPED ;;
    *) result=FAILED; status=1 ;;
  esac
  summary="$summary
test-drivers: $lane: $result in $(( $(date +%s) - t0 )) s"
done
echo "$summary"
[ $status = 0 ] && echo "test-drivers: passed" || echo "test-drivers: FAILED" >&2
exit $status
