#!/bin/sh
# `vkllm make-model` from the command line: presets, overrides, determinism, fallbacks, errors.
# Environment (set by CTest): VKLLM_BIN.
set -u
bin=${VKLLM_BIN:?VKLLM_BIN must name the vkllm binary}
dir=$(mktemp -d "${TMPDIR:-/tmp}/vkllm-make-model-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" make-model --help | grep -q "tinyllama-1.1b" || fail "--help does not list the presets"
"$bin" make-model --help | grep -q -- "--n-head-kv" || fail "--help does not describe --n-head-kv"

"$bin" make-model --preset tiny-qwen2 --n-layer 3 --type q8_0 --seed 5 -o "$dir/a.gguf" || fail "make-model failed"
"$bin" make-model --seed 5 --type q8_0 --n-layer 3 --preset tiny-qwen2 -o "$dir/b.gguf" || fail "make-model failed"
cmp -s "$dir/a.gguf" "$dir/b.gguf" || fail "same options, different files"
out=$("$bin" info -m "$dir/a.gguf") || fail "info on the generated file failed"
echo "$out"
echo "$out" | grep -qF "architecture:    qwen2" || fail "not qwen2"
echo "$out" | grep -qF "layers:          3" || fail "--n-layer after --preset was not applied"
echo "$out" | grep -qF "(tied embeddings)" || fail "the preset's tied embeddings were lost"
echo "$out" | grep -qF "q8_0 x" || fail "no q8_0 tensors"

# Rows of 172 are not a multiple of 32: ffn_down falls back to f16, with a warning.
"$bin" make-model --preset stories-260k-shape --type q8_0 -o "$dir/c.gguf" 2>"$dir/err" || fail "make-model failed"
grep -q "ffn_down.weight" "$dir/err" || fail "no fallback warning: $(cat "$dir/err")"
"$bin" info -m "$dir/c.gguf" | grep -qF "f16 x5" || fail "ffn_down is not f16"

"$bin" make-model --vocab 100 -o "$dir/d.gguf" 2>/dev/null; [ $? -eq 2 ] || fail "--vocab 100 should be a usage error"
"$bin" make-model --type iq2_xxs -o "$dir/d.gguf" 2>/dev/null && fail "--type iq2_xxs accepted"
"$bin" make-model --preset nope -o "$dir/d.gguf" 2>/dev/null && fail "unknown preset accepted"
"$bin" make-model --n-layer 2 2>/dev/null && fail "missing -o accepted"
[ -e "$dir/d.gguf" ] && fail "a failed make-model left a file"
"$bin" make-model --seed -5 -o "$dir/d.gguf" 2>/dev/null; [ $? -eq 2 ] || fail "--seed -5 should be a usage error"

# Interrupted (SIGINT, SIGTERM) while writing: the status says so and no temporary file is left.
for sig in INT TERM; do
  "$bin" make-model --preset tinyllama-1.1b --type q8_0 -o "$dir/big.gguf" 2>"$dir/err" &
  pid=$!
  sleep 1
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" -ge 129 ] || fail "SIG$sig: exit $rc, not 128 + the signal: $(cat "$dir/err")"
  grep -q "interrupted" "$dir/err" || fail "SIG$sig: not reported: $(cat "$dir/err")"
  ls "$dir" | grep -q "big.gguf" && fail "SIG$sig left $(ls "$dir")"
done
echo "ok"
