#!/bin/sh
# fetch-debs.sh [--recurse] DIST DEST PKG... - download Debian packages of another release and
# unpack them into DEST/root, beside the system and never installed into it: the driver lanes'
# Mesa 25 (bookworm-backports), and Debian 13's Mesa, drm shim, validation layer and SPIR-V tools
# (trixie), started through their own ld-linux where they need a newer libc.
#
#   DIST       bookworm-backports or trixie (any suite of the Debian mirror)
#   DEST       the folder: DEST/root is the unpacked tree, DEST/apt.log what apt said
#   --recurse  also every package they depend on (Depends and Pre-Depends, in DIST), which a
#              newer release's programs need (its libc6, libstdc++6, ...)
#
# A private apt configuration (its own sources, lists, cache and status) leaves the system's apt
# state untouched; no root needed. Skipped when DEST holds the same packages already (DEST/.done).
# VKLLM_DEBIAN_MIRROR overrides http://deb.debian.org/debian. Exit 1 (with apt's last lines) when
# the packages cannot be fetched, e.g. without network.
set -eu
recurse=0
if [ "${1:-}" = --recurse ]; then recurse=1; shift; fi
dist=${1:?usage: fetch-debs.sh [--recurse] DIST DEST PKG...}
dest=${2:?usage: fetch-debs.sh [--recurse] DIST DEST PKG...}
shift 2
case "$dest" in /*) ;; *) dest="$(pwd)/$dest" ;; esac  # apt and the unpacking below change folders
[ $# -gt 0 ] || { echo "fetch-debs: no packages named" >&2; exit 2; }
want="$dist $recurse $*"
if [ -f "$dest/.done" ] && [ "$(cat "$dest/.done")" = "$want" ]; then exit 0; fi
command -v apt-get >/dev/null 2>&1 || { echo "fetch-debs: apt-get is not available" >&2; exit 1; }

mirror=${VKLLM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
tmp="$dest.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/debs" "$tmp/root"
case "$dist" in
  *-backports) printf 'deb %s %s main\ndeb %s %s main\n' "$mirror" "${dist%-backports}" "$mirror" "$dist" ;;
  *) printf 'deb %s %s main\n' "$mirror" "$dist" ;;
esac > "$tmp/sources.list"
: > "$tmp/status"
o="-o Dir::Etc::SourceList=$tmp/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$tmp/lists
   -o Dir::Cache=$tmp/cache -o Dir::State::status=$tmp/status -o APT::Sandbox::User=$(id -un) -o Debug::NoLocking=1"
fail() {
  echo "fetch-debs: cannot fetch $* from $dist ($mirror):" >&2
  tail -5 "$tmp/apt.log" >&2 || true
  exit 1
}
# shellcheck disable=SC2086
apt-get $o -q update > "$tmp/apt.log" 2>&1 || fail "the package lists"
pkgs="$*"
if [ $recurse = 1 ]; then
  # shellcheck disable=SC2086
  pkgs=$(apt-cache $o depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances $pkgs 2>>"$tmp/apt.log" | grep -v '^ ' | grep -v '^<' | sort -u) || fail "the dependencies of $*"
  [ -n "$pkgs" ] || fail "the dependencies of $*"
fi
target=""
case "$dist" in *-backports) target="-t $dist" ;; esac
# shellcheck disable=SC2086
(cd "$tmp/debs" && apt-get $o -q download $target $pkgs >> ../apt.log 2>&1) || fail "$pkgs"
for d in "$tmp"/debs/*.deb; do dpkg -x "$d" "$tmp/root" || fail "$d (unpacking)"; done
rm -rf "$tmp/lists" "$tmp/cache" "$tmp/debs"
echo "$want" > "$tmp/.done"
rm -rf "$dest"
mv "$tmp" "$dest"
