#!/bin/sh
# Run the CTest suite in each build folder given; fails if any test fails.
# Validation layers are on in every test (VKLLM_VALIDATE=1, set by CTest).
set -eu
status=0
for dir in "$@"; do
  echo "== ctest in $dir"
  (cd "$dir" && ctest --output-on-failure -j"${CTEST_JOBS:-2}" --timeout 900) || status=1
done
exit $status
