#!/bin/sh
# run-tests.sh [--full] BUILD_DIR... - the CTest suite in each build folder given; fails if any test
# fails. Without --full, the tests of `make test` (ctest -LE full); with it, the full tier's shape
# sweeps (ctest -L full: `make test-full`). Validation layers are on in every test (VKLLM_VALIDATE=1,
# set by CTest). CTEST_JOBS (default 2) tests run side by side.
set -eu
select="-LE full"
if [ "${1:-}" = --full ]; then select="-L full"; shift; fi
status=0
for dir in "$@"; do
  echo "== ctest $select in $dir"
  # shellcheck disable=SC2086
  (cd "$dir" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" --timeout 900 $select) || status=1
done
exit $status
