#!/bin/sh
# Install the build into a temporary prefix, then build applications against it the two ways a
# user would: CMake find_package(vkllm) (shared and static) and pkg-config. Run them. Then build
# examples/stream.c against the same install both ways (examples/CMakeLists.txt, examples/Makefile)
# and check its device choice by name: a name no device has is refused with the list.
#
# usage: test_install.sh BUILD_DIR SOURCE_DIR [--run-example]
# --run-example (test_example): also stream stories260K through the example on the first device,
# named by a piece of its name in the other case, and require vkllm run's greedy text byte for byte;
# exit 77 (SKIPPED) when the model is absent.
set -eu
BUILD=$1
SRC=$2
MODE=${3:-}
model=""
if [ "$MODE" = --run-example ]; then
  models=${VKLLM_TEST_MODELS:-${VKLLM_TEST_MODELS_DEFAULT:-$SRC/../shared/models}}
  model=$models/stories260K.gguf
  if [ ! -f "$model" ]; then
    if [ "${VKLLM_REQUIRE_TEST_MODELS:-}" = 1 ]; then echo "FAIL: missing $model"; exit 1; fi
    echo "SKIPPED: missing $model"; exit 77
  fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$BUILD" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -1)
export PKG_CONFIG_PATH="$libdir"
libdir=$(dirname "$libdir")

if [ -z "$MODE" ]; then
  cmake -S "$SRC/tests/consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
  cmake --build "$tmp/build" >/dev/null
  "$tmp/build/consumer_shared"
  "$tmp/build/consumer_static"
  cflags=$(pkg-config --cflags vkllm)
  libs=$(pkg-config --libs vkllm)
  cc -std=c11 $cflags -o "$tmp/consumer_pc" "$SRC/tests/consumer/main.c" $libs -Wl,-rpath,"$libdir"
  "$tmp/consumer_pc"
  # The vkllm library must not link libvulkan: volk opens the loader at run time.
  if ldd "$libdir"/libvkllm.so | grep -q libvulkan; then
    echo "FAIL: libvkllm.so links libvulkan"; exit 1
  fi
fi

# examples/: with find_package (a copy of the folder: nothing is written into the source tree) and
# with its Makefile (pkg-config), warnings as errors
cp -r "$SRC/examples" "$tmp/examples"
cmake -S "$tmp/examples" -B "$tmp/build-examples" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_C_FLAGS="-Wall -Wextra -Werror -pedantic" >/dev/null
cmake --build "$tmp/build-examples" >/dev/null
make -s -C "$tmp/examples" CFLAGS="-O2 -Wall -Wextra -Werror -pedantic" LDFLAGS="-Wl,-rpath,$libdir" >/dev/null
for stream in "$tmp/build-examples/stream" "$tmp/examples/stream"; do
  rc=0
  "$stream" >/dev/null 2>"$tmp/err" || rc=$?
  if [ $rc -ne 2 ] || ! grep -q "usage: stream" "$tmp/err"; then echo "FAIL: $stream without a model: exit $rc"; exit 1; fi
  rc=0
  "$stream" no-model.gguf --device "no such device anywhere" >/dev/null 2>"$tmp/err" || rc=$?
  if [ $rc -ne 1 ] || ! grep -q "^device 0: " "$tmp/err" || ! grep -q "no usable device's name contains" "$tmp/err"; then
    echo "FAIL: $stream with an unknown device name: exit $rc"; cat "$tmp/err"; exit 1
  fi
done
echo "examples build"

if [ -n "$model" ]; then
  name=$("$tmp/prefix/bin/vkllm" devices --json | python3 -c \
    'import json,sys; d=[x for x in json.load(sys.stdin)["devices"] if x["usable"]][0]["name"]; print(d.split()[0].swapcase())')
  prompt="Once upon a time, there was a dog"
  "$tmp/prefix/bin/vkllm" run -m "$model" --temp 0 -n 64 -p "$prompt" >"$tmp/expected" 2>/dev/null
  for stream in "$tmp/build-examples/stream" "$tmp/examples/stream"; do
    "$stream" "$model" --device "$name" -n 64 -p "$prompt" >"$tmp/got" 2>"$tmp/err" || {
      echo "FAIL: $stream on $model"; cat "$tmp/err"; exit 1; }
    if ! cmp -s "$tmp/expected" "$tmp/got"; then
      echo "FAIL: $stream's text differs from vkllm run's:"; cat "$tmp/got" "$tmp/expected"; exit 1
    fi
    if ! grep -qi "^using $name" "$tmp/err" || ! grep -q "64 tokens" "$tmp/err"; then
      echo "FAIL: $stream: device \"$name\" not used, or not 64 tokens:"; cat "$tmp/err"; exit 1
    fi
  done
  echo "example streams vkllm run's text ($(wc -c <"$tmp/got") bytes) on the device named \"$name\""
fi
echo "install ok"
