#!/bin/sh
# test-drivers.sh BUILD_DIR - the device tests on other drivers than the suite's own (lavapipe 22.3
# at subgroup size 8), two lanes:
#
# 1. lavapipe at subgroup size 4 (LP_NATIVE_VECTOR_WIDTH=128): `vkllm selftest` (every op and
#    variant: reductions then take the sizes the device guarantees) and the forward pass on a real
#    model, with validation on.
#
# 2. Mesa 25's lavapipe (bookworm-backports)
# unpacked beside the system Mesa, never replacing it, and chosen through VK_ICD_FILENAMES /
# VK_DRIVER_FILES. Runs, with the validation layer on (only its messages fail a test; the driver's
# own messages are logged): `vkllm selftest` of every op but the storage-buffer matvec, and the
# device tests of the Vulkan layer, the elementwise ops and the forward pass on a real model.
# Mesa 25 compiles shaders 4-5x slower than 22.3 from a cold cache (CI's), so the lane leaves out
# what the system driver's tests cover at length: the storage-buffer matvec's 99 variants (minutes)
# and the full attention list (test_op_attn: 6 minutes there); the selftest runs both attention
# kernels in prefill and split decode.
#
# The driver is fetched once into $VKLLM_DRIVERS_DIR (default BUILD_DIR/drivers) with a private apt
# configuration (its own lists and cache: the system's apt state is untouched). Where it cannot be
# fetched (no network) the lane reports SKIPPED, or fails when VKLLM_REQUIRE_TEST_MODELS=1 (CI).
set -eu
build=$(cd "${1:?usage: test-drivers.sh BUILD_DIR}" && pwd)
dir=${VKLLM_DRIVERS_DIR:-$build/drivers}/mesa25
bin="$build/vkllm"

skip_or_fail() { # the Mesa 25 lane cannot run: SKIPPED, or FAILED in CI
  if [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ]; then
    echo "test-drivers: lane 2 FAILED: $*" >&2
    exit 1
  fi
  echo "test-drivers: lane 2 SKIPPED: $*"
  [ $status = 0 ] && echo "test-drivers: lane 1 passed" || echo "test-drivers: FAILED" >&2
  exit $status
}

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

fetch() {
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp/lists/partial" "$dir.tmp/cache/archives/partial" "$dir.tmp/root"
  printf '%s\n' "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-backports main" > "$dir.tmp/sources.list"
  o="-o Dir::Etc::SourceList=$dir.tmp/sources.list -o Dir::Etc::SourceParts=/nonexistent
     -o Dir::State::Lists=$dir.tmp/lists -o Dir::Cache=$dir.tmp/cache -o APT::Sandbox::User=root
     -o Debug::NoLocking=1"
  # shellcheck disable=SC2086
  apt-get $o -q update >"$dir.tmp/apt.log" 2>&1 || return 1
  # shellcheck disable=SC2086
  (cd "$dir.tmp" && apt-get $o -q download -t bookworm-backports mesa-vulkan-drivers libdrm2 libdrm-amdgpu1 \
    >>apt.log 2>&1) || return 1
  for d in "$dir.tmp"/*.deb; do dpkg -x "$d" "$dir.tmp/root" || return 1; done
  lib="$dir.tmp/root/usr/lib/$(uname -m)-linux-gnu"
  [ -f "$lib/libvulkan_lvp.so" ] || return 1
  python3 - "$dir.tmp/root/usr/share/vulkan/icd.d/lvp_icd.json" "$dir/lib/libvulkan_lvp.so" "$dir.tmp/lvp_icd.json" <<'EOF' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
d["ICD"]["library_path"] = sys.argv[2]
json.dump(d, open(sys.argv[3], "w"))
EOF
  mkdir -p "$dir.tmp/lib"
  cp -a "$lib"/libvulkan_lvp.so "$lib"/libdrm* "$dir.tmp/lib/"
  rm -rf "$dir.tmp/root" "$dir.tmp/cache" "$dir.tmp/lists"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

status=0
echo "test-drivers: lane 1, lavapipe at subgroup size 4"
(
  export LP_NATIVE_VECTOR_WIDTH=128 VKLLM_VALIDATE=1
  sg=$("$bin" devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["subgroup_size"])')
  [ "$sg" = 4 ] || { echo "test-drivers: FAILED: subgroup size $sg, not 4" >&2; exit 1; }
  selftest --validate || exit 1
  cd "$build" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" --timeout 900 -R '^(test_forward_stories|test_gen_stories)$'
) || status=1

echo "test-drivers: lane 2, Mesa 25's lavapipe"
if [ ! -f "$dir/lvp_icd.json" ]; then
  command -v apt-get >/dev/null 2>&1 || skip_or_fail "apt-get is not available to fetch Mesa 25's lavapipe"
  echo "test-drivers: fetching Mesa 25's lavapipe from bookworm-backports into $dir"
  fetch || { tail -5 "$dir.tmp/apt.log" 2>/dev/null || true; skip_or_fail "cannot fetch mesa-vulkan-drivers from bookworm-backports"; }
fi

export VK_ICD_FILENAMES="$dir/lvp_icd.json" VK_DRIVER_FILES="$dir/lvp_icd.json"
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VKLLM_VALIDATE=1
driver=$("$bin" devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["driver_info"])')
case "$driver" in
  "Mesa 25"*) echo "test-drivers: on $driver" ;;
  *) echo "test-drivers: FAILED: the device is '$driver', not Mesa 25's lavapipe" >&2; exit 1 ;;
esac

selftest --validate \
  --op add,mul,silu_mul,rmsnorm,add_rmsnorm,softmax,matvec_tb,matmul,get_rows,rope,kv_store,rope_kv,attention,argmax ||
  status=1
(cd "$build" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" --timeout 900 \
  -R '^(test_vk|test_ops_basic|test_forward_stories|test_gen_stories|test_cli_logits)$') || status=1
[ $status = 0 ] && echo "test-drivers: both lanes passed" || echo "test-drivers: FAILED" >&2
exit $status
