#!/bin/sh
# build-windows.sh [BUILD_DIR] - cross-build vkllm for Windows x86-64 with Debian's MinGW-w64:
# BUILD_DIR (default build-win) gets vkllm.exe, libvkllm.dll with its import library
# libvkllm.dll.a, and the static library libvkllm.a.
#
# The dependencies are built for MinGW from Debian's own source packages (PCRE2, cJSON,
# libmicrohttpd: `apt-get source --download-only` through a private apt configuration with a
# deb-src line, as scripts/fetch-debs.sh does for binary packages; no root, the system's apt state
# untouched), once, into BUILD_DIR/deps/root (usr/include, usr/lib), with the Vulkan headers, volk
# and stb copied from the host's Debian packages beside them, so that no host header is on the
# path. BUILD_DIR/deps/.done-NAME marks each one built; delete BUILD_DIR/deps to rebuild them.
# Needs: gcc-mingw-w64-x86-64-posix, mingw-w64-tools, cmake, glslang-tools, spirv-tools, the host's
# libvulkan-dev, libvulkan-volk-dev, libstb-dev (scripts/install-deps.sh --windows installs them).
# VKLLM_DEBIAN_MIRROR overrides http://deb.debian.org/debian; VKLLM_DEBIAN_DIST the suite (the
# host's codename, else bookworm).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${1:-build-win}
mkdir -p "$build"
build=$(cd "$build" && pwd)
deps="$build/deps"
root="$deps/root"
host=x86_64-w64-mingw32
jobs=${JOBS:-$(nproc)}

cc=$(command -v $host-gcc-posix || true)
[ -n "$cc" ] || { echo "build-windows: $host-gcc-posix not found (apt-get install gcc-mingw-w64-x86-64-posix)" >&2; exit 1; }
mkdir -p "$deps/src" "$root/usr/include" "$root/usr/lib/pkgconfig"

# --- the host's header-only parts: Vulkan headers, volk, stb ---------------------------------
for f in vulkan vk_video volk.h volk.c stb; do
  [ -e "/usr/include/$f" ] || { echo "build-windows: /usr/include/$f missing (libvulkan-dev libvulkan-volk-dev libstb-dev)" >&2; exit 1; }
  rm -rf "$root/usr/include/$f"
  cp -r "/usr/include/$f" "$root/usr/include/$f"
done

# --- Debian source packages ------------------------------------------------------------------
dist=${VKLLM_DEBIAN_DIST:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
dist=${dist:-bookworm}
mirror=${VKLLM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
apt_ready=0
apt_o=""
apt_setup() {
  [ $apt_ready = 1 ] && return 0
  a="$deps/apt"
  rm -rf "$a"
  mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
  printf 'deb-src %s %s main\n' "$mirror" "$dist" > "$a/sources.list"
  : > "$a/status"
  apt_o="-o Dir::Etc::SourceList=$a/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$a/lists
    -o Dir::Cache=$a/cache -o Dir::State::status=$a/status -o APT::Sandbox::User=$(id -un) -o Debug::NoLocking=1"
  # shellcheck disable=SC2086
  apt-get $apt_o -q update > "$deps/apt.log" 2>&1 ||
    { tail -5 "$deps/apt.log" >&2; echo "build-windows: cannot read $dist's source lists from $mirror" >&2; exit 1; }
  apt_ready=1
}
# fetch NAME: BUILD_DIR/deps/src/NAME, the unpacked source package with Debian's patches applied
fetch() {
  d="$deps/src/$1"
  [ -d "$d" ] && return 0
  apt_setup
  rm -rf "$d.tmp" && mkdir -p "$d.tmp"
  # shellcheck disable=SC2086
  (cd "$d.tmp" && apt-get $apt_o -q source --download-only "$1" >> "$deps/apt.log" 2>&1) ||
    { tail -5 "$deps/apt.log" >&2; echo "build-windows: cannot download the source package $1" >&2; exit 1; }
  (cd "$d.tmp" && dpkg-source --no-check -x ./*.dsc tree >> "$deps/apt.log" 2>&1) ||
    { tail -5 "$deps/apt.log" >&2; echo "build-windows: cannot unpack the source package $1" >&2; exit 1; }
  mv "$d.tmp/tree" "$d"
  rm -rf "$d.tmp"
}
built() { [ -f "$deps/.done-$1" ]; }
done_() { echo "$1" > "$deps/.done-$1"; }
log() { echo "build-windows: $*"; }

autotools_env() {
  export CC="$cc" AR=$host-ar RANLIB=$host-ranlib STRIP=$host-strip
  export PKG_CONFIG_LIBDIR="$root/usr/lib/pkgconfig" PKG_CONFIG_PATH="" PKG_CONFIG_SYSROOT_DIR="$root"
}

if ! built pcre2; then
  fetch pcre2
  log "PCRE2 (Debian source $(cd "$deps/src/pcre2" && dpkg-parsechangelog -S Version))"
  b="$deps/build-pcre2" && rm -rf "$b" && mkdir -p "$b"
  (cd "$b" && autotools_env && "$deps/src/pcre2/configure" --host=$host --prefix=/usr --disable-shared --enable-static \
     --enable-pcre2-8 --disable-pcre2-16 --disable-pcre2-32 --enable-unicode --disable-jit --disable-pcre2grep-jit \
     > build.log 2>&1 && make -j"$jobs" libpcre2-8.la >> build.log 2>&1 &&
     make install-nodist_includeHEADERS install-libLTLIBRARIES install-pkgconfigDATA DESTDIR="$root" \
       lib_LTLIBRARIES=libpcre2-8.la pkgconfig_DATA=libpcre2-8.pc >> build.log 2>&1) ||
    { tail -20 "$b/build.log" >&2; exit 1; }
  done_ pcre2
fi

if ! built cjson; then
  fetch cjson
  log "cJSON (Debian source $(cd "$deps/src/cjson" && dpkg-parsechangelog -S Version))"
  b="$deps/build-cjson" && rm -rf "$b"
  (cmake -S "$deps/src/cjson" -B "$b" -DCMAKE_SYSTEM_NAME=Windows -DCMAKE_C_COMPILER="$cc" \
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_LIBDIR=lib \
     -DBUILD_SHARED_LIBS=OFF -DBUILD_SHARED_AND_STATIC_LIBS=OFF -DENABLE_CJSON_TEST=OFF \
     -DENABLE_CJSON_UTILS=OFF -DENABLE_CUSTOM_COMPILER_FLAGS=OFF -DCMAKE_C_FLAGS=-DCJSON_HIDE_SYMBOLS \
     > "$deps/build-cjson.log" 2>&1 &&
   cmake --build "$b" -j"$jobs" >> "$deps/build-cjson.log" 2>&1 &&
   DESTDIR="$root" cmake --install "$b" >> "$deps/build-cjson.log" 2>&1) ||
    { tail -20 "$deps/build-cjson.log" >&2; exit 1; }
  # the header decides dllimport/dllexport itself: a static cJSON wants neither
  sed -i 's|^Cflags: .*|& -DCJSON_HIDE_SYMBOLS|' "$root/usr/lib/pkgconfig/libcjson.pc"
  done_ cjson
fi

# (.done-microhttpd.2: built without dllexport; a cache from before is rebuilt)
if ! built microhttpd.2; then
  fetch libmicrohttpd
  log "libmicrohttpd (Debian source $(cd "$deps/src/libmicrohttpd" && dpkg-parsechangelog -S Version))"
  b="$deps/build-microhttpd" && rm -rf "$b" && mkdir -p "$b"
  # configure declares the API __declspec(dllexport) on MinGW even for a static library, and every
  # program linking it would export libmicrohttpd's functions: plain extern instead
  (cd "$b" && autotools_env && "$deps/src/libmicrohttpd/configure" --host=$host --prefix=/usr --disable-shared \
     --enable-static --disable-doc --disable-examples --disable-curl --disable-https --without-gnutls \
     --disable-nls > build.log 2>&1 &&
     sed -i 's|^#define _MHD_EXTERN .*|#define _MHD_EXTERN extern|' MHD_config.h &&
     grep -q '^#define _MHD_EXTERN extern$' MHD_config.h && make -C src/microhttpd -j"$jobs" >> build.log 2>&1 &&
     make -C src/microhttpd install DESTDIR="$root" >> build.log 2>&1 &&
     make -C src/include install DESTDIR="$root" >> build.log 2>&1 &&
     make install-pkgconfigDATA DESTDIR="$root" >> build.log 2>&1) ||
    { tail -20 "$b/build.log" >&2; exit 1; }
  done_ microhttpd.2
fi
# the libraries' own .pc files name their system libraries in Libs.private only
rm -f "$root"/usr/lib/*.la

# --- vkllm ------------------------------------------------------------------------------------
log "vkllm -> $build"
cmake -S "$src" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$src/cmake/mingw-w64-x86_64.cmake" \
  -DVKLLM_WIN_SYSROOT="$root" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} \
  -DVKLLM_BUILD_TESTS=OFF -DVKLLM_WERROR=${VKLLM_WERROR:-ON} > "$build/configure.log" 2>&1 ||
  { tail -30 "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j"$jobs"
for f in vkllm.exe libvkllm.dll libvkllm.dll.a libvkllm.a; do
  [ -f "$build/$f" ] || { echo "build-windows: $build/$f was not built" >&2; exit 1; }
done
# what each one exports: the DLL vkllm.h's API alone; the static library and vkllm.exe nothing (a
# program linking a static library must not export that library's functions)
exports() { $host-objdump -p "$1" | sed -n '/^\[Ordinal\/Name Pointer\] Table/,/^$/p' | grep -E '^[[:space:]]+\[' | awk '{print $NF}'; }
n_api=$(exports "$build/libvkllm.dll" | grep -c '^vkllm_[a-z0-9_]*$' || true)
others=$(exports "$build/libvkllm.dll" | grep -v '^vkllm_[a-z0-9_]*$' | head -5 | tr '\n' ' ')
[ "$n_api" -gt 0 ] && [ -z "$others" ] ||
  { echo "build-windows: libvkllm.dll exports $n_api vkllm_ functions and: $others" >&2; exit 1; }
exe_exports=$(exports "$build/vkllm.exe" | head -5 | tr '\n' ' ')
[ -z "$exe_exports" ] || { echo "build-windows: vkllm.exe exports $exe_exports..." >&2; exit 1; }
! $host-objdump -s -j .drectve "$build/libvkllm.a" 2>/dev/null | grep -q "Contents of section" ||
  { echo "build-windows: libvkllm.a's objects carry linker directives (-export: dllexport)" >&2; exit 1; }
log "built $build/vkllm.exe, libvkllm.dll (+ libvkllm.dll.a; $n_api functions exported), libvkllm.a (none)"
