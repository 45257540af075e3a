#!/bin/sh
# Install the Debian packages that building vkllm and running it on the CPU (Mesa's lavapipe) need:
# `make demo` (libzmq and msgpack-c: `serve --kv-events`, optional in the build). With --tests also
# what the test suite drives (`make test`): vulkaninfo, Python's jsonschema, zmq and msgpack (the
# KV events' subscriber), clang (the fuzz targets), clang-format (the layout check), chromium (the chat page's browser test, and SwiftShader's
# driver lane), Node.js and npm with the official openai npm package that tests/test_serve.py
# streams with (tests/openai-client) and puppeteer-core, which drives chromium through the chat
# page (tests/web-client), each pinned by its package-lock.json, with npm ci unless already there.
# Idempotent and non-interactive; safe to run again.
# With --windows what the Windows build and its lane need (scripts/build-windows.sh,
# scripts/lane-windows.sh: `make test-drivers`): MinGW-w64 (the POSIX thread model), Wine and Xvfb;
# the base group too.
# Usage: scripts/install-deps.sh [--tests] [--windows]   (as root, or with sudo available)
set -eu
TESTS=0
WINDOWS=0
for a in "$@"; do
  case $a in
    --tests) TESTS=1 ;;
    --windows) WINDOWS=1 ;;
    *) echo "usage: scripts/install-deps.sh [--tests] [--windows]" >&2; exit 2 ;;
  esac
done

PKGS="build-essential cmake pkg-config git python3
      libvulkan-dev libvulkan1 libvulkan-volk-dev
      mesa-vulkan-drivers vulkan-validationlayers
      glslang-tools glslang-dev spirv-tools
      libstb-dev libpcre2-dev libcjson-dev libmicrohttpd-dev
      libzmq3-dev libmsgpack-dev"
if [ $TESTS = 1 ]; then
  PKGS="$PKGS python3-jsonschema python3-zmq python3-msgpack vulkan-tools clang clang-format libclang-rt-14-dev
        chromium"
  # Node.js and npm for the openai client test: Debian's, unless a node/npm is already installed
  # (e.g. NodeSource's nodejs, which bundles npm and conflicts with Debian's npm package).
  command -v node >/dev/null 2>&1 || PKGS="$PKGS nodejs"
  command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
fi

if [ $WINDOWS = 1 ]; then
  # dpkg-dev: dpkg-source unpacks Debian's source packages of the dependencies
  PKGS="$PKGS gcc-mingw-w64-x86-64-posix mingw-w64-x86-64-dev binutils-mingw-w64-x86-64 dpkg-dev
        wine64 xvfb xauth"
fi

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
else
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing$missing"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q -o DPkg::Lock::Timeout=600
  # shellcheck disable=SC2086
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=600 $missing
fi

# npm packages the tests drive (as the calling user, into tests/DIR/node_modules), each pinned
# by its package-lock.json: npm ci DIR unless PKG is there at the version package.json names.
# Not fatal: building and running vkllm do not need them; TEST then reports SKIPPED (a failure
# with VKLLM_REQUIRE_TEST_MODELS=1, as in CI).
npm_ci() { # DIR PKG TEST
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/$1"
  want=$(sed -n "s/.*\"$2\": \"\(.*\)\".*/\1/p" "$dir/package.json")
  have=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' "$dir/node_modules/$2/package.json" 2>/dev/null || true)
  if [ "$have" = "$want" ]; then
    echo "install-deps: $2 $want (npm) present"
  else
    echo "install-deps: npm ci in tests/$1 ($2 $want)"
    (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund) ||
      echo "install-deps: warning: npm ci failed; $3 cannot run" >&2
  fi
}
[ $TESTS = 1 ] || exit 0
npm_ci openai-client openai test_serve_openai
# puppeteer-core drives Debian's chromium through the chat page; it downloads no browser
npm_ci web-client puppeteer-core test_web_chat
