#!/bin/sh
# fuzz-gguf.sh [seconds] - build the GGUF reader's libFuzzer target with clang (ASan + UBSan) in
# build-fuzz/, seed a corpus from the real GGUFs (their first 64 KiB: the metadata) and the
# hostile corpus, and fuzz for the given time (default 600 s) with one worker.
# New inputs go to build-fuzz/corpus-gguf; crashes to build-fuzz/crashes-gguf/ (add them to
# tests/data/gguf-hostile/ as fuzz-<what>.gguf once fixed). The last lines of the log give the
# executions and coverage reached.
set -eu
secs=${1:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
models=${VKLLM_TEST_MODELS:-$root/../shared/models}

CC=clang cmake -S "$root" -B "$build" -DVKLLM_FUZZ=ON -DVKLLM_BUILD_TESTS=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_gguf -j1

corpus="$build/corpus-gguf"
seeds="$build/seeds-gguf"
crashes="$build/crashes-gguf"
mkdir -p "$corpus" "$seeds" "$crashes"
cp "$root"/tests/data/gguf-hostile/*.gguf "$seeds"/
for f in "$models"/*.gguf; do
  [ -f "$f" ] || continue
  head -c 65536 "$f" > "$seeds/model-$(basename "$f")"
done
# Small real files whole, too, so that tensor data placement is exercised.
for f in "$root"/tests/data/gguf-hostile/ok-*.gguf; do cp "$f" "$seeds/"; done

cd "$build"
echo "fuzzing for $secs s (corpus $corpus, seeds $seeds)"
./tests/fuzz_gguf -max_total_time="$secs" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -artifact_prefix="$crashes/" -print_final_stats=1 \
  "$corpus" "$seeds" 2>&1 | tee "$build/fuzz-gguf.log" | grep -E "^#[0-9]+ +(pulse|DONE|NEW)|ERROR|stat::|Done" | tail -40
