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
  bad=0
  for f in $files; do
    if ! "$CF" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
      echo "format: $f differs from .clang-format (run scripts/format.sh)"; bad=1
    fi
  done
  [ $bad = 0 ] && echo "format: $(echo $files | wc -w) files follow .clang-format"
  exit $bad
fi
# shellcheck disable=SC2086
"$CF" --style=file -i $files
