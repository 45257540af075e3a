#!/bin/sh
# host-tool.sh SRC_DIR HOST_BIN TARGET_EXE ARGS... - run a build tool of a cross build on the build
# machine: the CROSSCOMPILING_EMULATOR of vkllm-spv-coopmat and vkllm-spv-embed in the Windows
# build (CMakeLists.txt), whose .exe the build machine cannot run. HOST_BIN is the same tool compiled from SRC_DIR/*.c by
# the build machine's cc (again when a source is newer); TARGET_EXE is not used.
set -eu
src=$1 bin=$2
shift 3
if [ ! -x "$bin" ] || [ -n "$(find "$src" -name '*.[ch]' -newer "$bin")" ]; then
  ${HOST_CC:-cc} -std=c11 -O2 -o "$bin.$$" "$src"/*.c && mv -f "$bin.$$" "$bin" # several may race: each its own
fi
exec "$bin" "$@"
