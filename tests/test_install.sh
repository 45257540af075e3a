#!/bin/sh
# Install the build into a temporary prefix, then build applications against it the two ways a
# user would: CMake find_package(vkllm) (shared and static) and pkg-config. Run them.
set -eu
BUILD=$1
SRC=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$BUILD" --prefix "$tmp/prefix" >/dev/null
cmake -S "$SRC/tests/consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" >/dev/null
"$tmp/build/consumer_shared"
"$tmp/build/consumer_static"
libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -1)
cflags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags vkllm)
libs=$(PKG_CONFIG_PATH="$libdir" pkg-config --libs vkllm)
cc -std=c11 $cflags -o "$tmp/consumer_pc" "$SRC/tests/consumer/main.c" $libs -Wl,-rpath,"$(dirname "$libdir")"
"$tmp/consumer_pc"
# The vkllm library must not link libvulkan: volk opens the loader at run time.
if ldd "$(dirname "$libdir")"/libvkllm.so | grep -q libvulkan; then
  echo "FAIL: libvkllm.so links libvulkan"; exit 1
fi
echo "install ok"
