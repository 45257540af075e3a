#!/bin/sh
# test_validate_env.sh VKLLM - VKLLM_VALIDATE=1 and where the validation layer comes from
# (runtime/vk/device.c, docs/platforms.md): listed by the loader, it is named and runs; listed and
# also in VK_INSTANCE_LAYERS, the same; not listed (VK_LAYER_PATH elsewhere, other layers still
# listed) and not in VK_INSTANCE_LAYERS, a clear error; not listed but in VK_INSTANCE_LAYERS (the
# Wine case, where winevulkan lists none and the host's loader inserts it), the instance is made
# without naming it and asked whether a validation tool runs (VK_EXT_tooling_info): here the loader
# cannot find it either, so an error that says so rather than a run without validation.
set -u
vk=${1:?usage: test_validate_env.sh VKLLM}
fails=0
layer=VK_LAYER_KHRONOS_validation
found=""
for d in /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d; do
  [ -f "$d/VkLayer_khronos_validation.json" ] && found=1
done
[ -n "$found" ] || { echo "SKIPPED: no Khronos validation layer (vulkan-validationlayers)"; exit 77; }
empty=$(mktemp -d) || exit 1
trap 'rmdir "$empty"' EXIT
# run NAME WANT_RC GREP_ERE ENV...: `vkllm selftest --op add --defaults` with VKLLM_VALIDATE=1 and ENV
run() {
  name=$1 want=$2 text=$3
  shift 3
  out=$(env "$@" VKLLM_VALIDATE=1 VKLLM_LOG=info "$vk" selftest --op add --defaults 2>&1)
  rc=$?
  if [ "$rc" != "$want" ] || ! printf '%s\n' "$out" | grep -E -q -- "$text"; then
    echo "FAIL: $name: rc $rc (want $want), wanted '$text' in:"
    printf '%s\n' "$out" | tail -5
    fails=$((fails + 1))
  else
    echo "ok: $name"
  fi
}
run "listed: named, runs" 0 "passed:" A=1
run "listed and in VK_INSTANCE_LAYERS" 0 "passed:" VK_INSTANCE_LAYERS=$layer
# (where the loader lists no layer at all, as under Wine, the instance is asked instead: either error)
nolayer="the Vulkan loader lists no $layer: install it|$layer does not run"
run "not listed, not in VK_INSTANCE_LAYERS: a clear error" 3 "$nolayer" \
  VK_LAYER_PATH="$empty"
run "not listed, in VK_INSTANCE_LAYERS, not found: the check says it does not run" 3 \
  "$layer does not run: the Vulkan loader does not list it" VK_LAYER_PATH="$empty" VK_INSTANCE_LAYERS=$layer
run "a list that names another layer only" 3 "$nolayer" VK_LAYER_PATH="$empty" \
  VK_INSTANCE_LAYERS="VK_LAYER_foo:${layer}_x"
[ $fails = 0 ] && echo "validate env ok" || { echo "$fails failure(s)"; exit 1; }
