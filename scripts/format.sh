#!/bin/sh
# scripts/format.sh [--check] - lay out the C sources with .clang-format (clang-format 14, Debian 12's).
# --check changes nothing and fails, listing the files, where the layout differs (the `format` test).
# third_party/ is not ours; tables laid out by hand are fenced with `// clang-format off`/`on`.
set -eu
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-clang-format}
if ! command -v "$CF" >/dev/null 2>&1; then
  echo "format: SKIPPED: $CF not installed (scripts/install-deps.sh --tests installs it)"
  exit 77
fi
files=$(git ls-files '*.c' '*.h' 2>/dev/null | grep -v '^third_party/' || true)
[ -n "$files" ] || files=$(find cli include runtime tokenizer tools tests examples -name '*.[ch]' 2>/dev/null)
if [ "${1:-}" = --check ]; then
  # one clang-format for all the files; each violation names its file:line:col
  # shellcheck disable=SC2086
  out=$("$CF" --style=file --dry-run --Werror $files 2>&1) && rc=0 || rc=$?
  bad=$(printf '%s\n' "$out" | sed -n 's/^\([^: ]*\):[0-9]*:[0-9]*: \(warning\|error\).*/\1/p' | sort -u)
  if [ $rc != 0 ] && [ -z "$bad" ]; then
    printf 'format: %s failed (%s):\n%s\n' "$CF" $rc "$out" | head -20; exit 1
  fi
  if [ -n "$bad" ]; then
    for f in $bad; do echo "format: $f differs from .clang-format (run scripts/format.sh)"; done
    exit 1
  fi
  echo "format: $(echo $files | wc -w) files follow .clang-format"
  exit 0
fi
# shellcheck disable=SC2086
"$CF" --style=file -i $files
