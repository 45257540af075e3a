#!/bin/sh
# lane-spirv-val.sh BUILD_DIR - Debian 13's spirv-val (SPIRV-Tools 2025.1) on every SPIR-V module the
# build embeds in libvkllm.
#
# Why: the build checks each module with the system's spirv-val (Debian 12: 2023.1), which does not
# know SPV_KHR_cooperative_matrix, so it can check the cooperative-matrix shaders only in their
# GL_NV_cooperative_matrix form, before vkllm-spv-coopmat rewrites them (shaders/shaders.cmake); the
# rewritten KHR modules, the ones vkllm ships, were checked by no SPIR-V validator (test_coopmat
# checks the rewrite's instructions one by one). 2025.1 knows the KHR extension, and its newer rules
# re-check the plain modules too.
#
# Which modules: the build's registry, BUILD_DIR/shaders/vkllm_shaders.c, names every embedded
# module; the build leaves each as BUILD_DIR/shaders/<name>.spv beside the C array made from it
# (<name>.spv.c, whose byte count must equal the file's). <name>.nv.spv files are the rewrite's
# inputs, not embedded (the build validates them).
#
# Target environments (--target-env):
#   plain modules           vulkan1.1: what the build compiles them for (glslangValidator
#                           --target-env vulkan1.1, SPIR-V 1.3) and the lowest Vulkan vkllm opens
#                           (runtime/vk/device.c).
#   cooperative-matrix      vulkan1.2 and vulkan1.3. SPV_KHR_cooperative_matrix needs SPIR-V 1.3 and,
#   (SPV_KHR_cooperative_    with the Shader capability, the Vulkan memory model (SPV_KHR_vulkan_memory_
#   matrix in the module)   model below SPIR-V 1.5); VK_KHR_cooperative_matrix needs Vulkan 1.1. vkllm
#                           loads these modules only on devices whose Vulkan 1.2 features report
#                           vulkanMemoryModel (runtime/vk/device.c), so 1.2 is their lowest
#                           environment; the drivers that offer the extension (NVIDIA's, RADV: the
#                           coopmat profiles in runtime/vk/profiles.c) are Vulkan 1.3 ones, hence 1.3
#                           as well. Nothing in the modules needs 1.3 (they pass 1.1 to 1.4).
# A module that still declares SPV_NV_cooperative_matrix fails the lane (vkllm enables only the KHR
# extension: the rewrite was skipped).
#
# The tools are fetched once into ${VKLLM_DRIVERS_DIR:-BUILD_DIR/drivers}/trixie-spirv-tools with
# scripts/fetch-debs.sh (spirv-tools and its libc: 8 MB to download, 51 MB unpacked, seconds) and
# started through their own ld-linux (they need Debian 13's libc). Where they cannot be fetched or
# started the lane prints "lane spirv-val: SKIPPED: <reason>" and exits 0, or fails when
# VKLLM_REQUIRE_TEST_MODELS=1 (CI).
# VKLLM_SPIRV_VAL=/path/to/spirv-val uses that program instead (no fetch).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: lane-spirv-val.sh BUILD_DIR}" && pwd)
dir=${VKLLM_DRIVERS_DIR:-$build/drivers}/trixie-spirv-tools
dir=$(mkdir -p "$(dirname "$dir")" && cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
shaders=$build/shaders
registry=$shaders/vkllm_shaders.c

skip_or_fail() {
  if [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ]; then
    echo "lane spirv-val: FAILED: $* (VKLLM_REQUIRE_TEST_MODELS=1)" >&2
    exit 1
  fi
  echo "lane spirv-val: SKIPPED: $*"
  exit 0
}
now_ms() { date +%s%3N; }

[ -f "$registry" ] || { echo "lane spirv-val: FAILED: $registry not found (configure and build $build first)" >&2; exit 1; }

# The validator: Debian 13's, fetched once.
if [ -n "${VKLLM_SPIRV_VAL:-}" ]; then
  set -- "$VKLLM_SPIRV_VAL"
else
  if [ ! -f "$dir/.done" ]; then
    echo "lane spirv-val: fetching Debian 13's spirv-tools into $dir"
    t0=$(now_ms)
    sh "$here/fetch-debs.sh" --recurse trixie "$dir" spirv-tools >&2 ||
      skip_or_fail "cannot fetch spirv-tools from Debian 13 (trixie)"
    echo "lane spirv-val: fetched in $(( $(now_ms) - t0 )) ms"
  fi
  root=$dir/root
  set -- "$root/usr/lib64/ld-linux-x86-64.so.2" --library-path "$root/usr/lib/x86_64-linux-gnu" \
    "$root/usr/bin/spirv-val"
  if [ ! -x "$1" ] || [ ! -x "$4" ]; then
    skip_or_fail "$dir holds no spirv-val and ld-linux (remove it to fetch again)"
  fi
fi
version=$("$@" --version 2>&1 | head -1) || skip_or_fail "spirv-val does not start: $version"
case "$version" in
  SPIRV-Tools*) ;;
  *) skip_or_fail "spirv-val does not start: $version" ;;
esac

# The embedded modules, from the registry's table rows: {"name", vkllm_spv_name, ...}.
names=$(sed -n 's/^ *{"\([a-z0-9_]*\)", vkllm_spv_.*/\1/p' "$registry")
[ -n "$names" ] || { echo "lane spirv-val: FAILED: no modules listed in $registry" >&2; exit 1; }

t0=$(now_ms)
n=0 n_cm=0 n_val=0 bad=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
reject() { # module, what
  bad=$((bad + 1))
  echo "lane spirv-val: REJECTED $1: $2" >&2
}
for name in $names; do
  spv=$shaders/$name.spv
  n=$((n + 1))
  if [ ! -f "$spv" ] || [ ! -f "$spv.c" ]; then
    reject "$name" "$spv or its .spv.c is missing (is the build complete?)"
    continue
  fi
  # The C array is made from this file: same byte count.
  csize=$(sed -n "s/^const size_t vkllm_spv_${name}_size = \([0-9]*\);/\1/p" "$spv.c")
  fsize=$(wc -c < "$spv")
  if [ "$csize" != "$fsize" ]; then
    reject "$name" "$name.spv has $fsize bytes, the embedded array $csize (stale build?)"
    continue
  fi
  if grep -qa SPV_NV_cooperative_matrix "$spv"; then
    reject "$name" "declares SPV_NV_cooperative_matrix: vkllm enables only VK_KHR_cooperative_matrix (rewrite skipped?)"
    continue
  fi
  if grep -qa SPV_KHR_cooperative_matrix "$spv"; then
    n_cm=$((n_cm + 1))
    envs="vulkan1.2 vulkan1.3"
  else
    envs="vulkan1.1"
  fi
  rejected=0
  for env in $envs; do
    n_val=$((n_val + 1))
    if ! "$@" --target-env "$env" "$spv" > "$out" 2>&1; then
      echo "lane spirv-val: REJECTED $name: spirv-val --target-env $env $spv:" >&2
      sed 's/^/    /' "$out" | head -40 >&2
      rejected=1
    fi
  done
  bad=$((bad + rejected))
done
ms=$(( $(now_ms) - t0 ))
summary="$n modules ($n_cm cooperative-matrix, $((n - n_cm)) plain), $n_val validations, ${ms} ms ($version)"
if [ $bad -gt 0 ]; then
  echo "lane spirv-val: FAILED: $bad rejected of $summary" >&2
  exit 1
fi
echo "lane spirv-val: passed: $summary"
