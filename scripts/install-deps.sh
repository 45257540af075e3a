#!/bin/sh
# Install every Debian package that building vkllm, running its tests and running Vulkan on
# the CPU (Mesa's lavapipe) need. Idempotent and non-interactive; safe to run again.
# Usage: scripts/install-deps.sh        (as root, or with sudo available)
set -eu

PKGS="build-essential cmake pkg-config git python3
      libvulkan-dev libvulkan1 libvulkan-volk-dev vulkan-tools
      mesa-vulkan-drivers vulkan-validationlayers
      glslang-tools spirv-tools
      libstb-dev libpcre2-dev libcjson-dev libmicrohttpd-dev
      clang libclang-rt-14-dev"

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q -o DPkg::Lock::Timeout=600
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  -o DPkg::Lock::Timeout=600 $missing
