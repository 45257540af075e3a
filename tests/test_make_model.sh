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

# llama.cpp's Q4_K_M mix on 4 layers: q6_K for output.weight and, in the layers llama.cpp's
# use_more_bits picks (2 and 3 of 4), attn_v and ffn_down; q4_K elsewhere, token_embd included;
# general.file_type 15 (LLAMA_FTYPE_MOSTLY_Q4_K_M). Tied: token_embd is quantized as the output.
"$bin" make-model --help | grep -q "q4_K_m" || fail "--help does not list the mixes"
# general.file_type of a GGUF file (a u32 key), read with the format's own layout
ftype() {
  python3 - "$1" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read(1 << 20)
k = b"general.file_type"
i = b.index(struct.pack("<Q", len(k)) + k) + 8 + len(k)
t, v = struct.unpack_from("<II", b, i)
print(v if t == 4 else "type %d" % t)
EOF
}
"$bin" make-model --preset small --type q4_K_m -o "$dir/m.gguf" 2>"$dir/err" || fail "make-model q4_K_m failed: $(cat "$dir/err")"
"$bin" info -m "$dir/m.gguf" --tensors > "$dir/info" || fail "info on the q4_K_m file failed"
types=$(awk '$1 ~ /\.weight$/ && $2 != "f32" {printf "%s=%s ", $1, $2}' "$dir/info")
want="token_embd.weight=q4_K"
for l in 0 1 2 3; do
  q=q4_K; [ $l -ge 2 ] && q=q6_K
  want="$want blk.$l.attn_q.weight=q4_K blk.$l.attn_k.weight=q4_K blk.$l.attn_v.weight=$q"
  want="$want blk.$l.attn_output.weight=q4_K blk.$l.ffn_gate.weight=q4_K blk.$l.ffn_up.weight=q4_K blk.$l.ffn_down.weight=$q"
done
want="$want output.weight=q6_K "
[ "$types" = "$want" ] || fail "q4_K_m types: $types, not $want"
[ "$(ftype "$dir/m.gguf")" = 15 ] || fail "q4_K_m: general.file_type $(ftype "$dir/m.gguf"), not 15"
"$bin" make-model --preset small --tied --type Q4_K_M -o "$dir/m.gguf" 2>"$dir/err" || fail "make-model Q4_K_M failed"
"$bin" info -m "$dir/m.gguf" --tensors | grep -q "token_embd.weight  *q6_K" || fail "tied q4_K_m: token_embd is not q6_K"
# q3_K_m on the 64-wide default: llama.cpp's fallbacks (q3_K -> q4_0, q4_K -> q5_0, q5_K -> q5_1), output q8_0
"$bin" make-model --type q3_K_m -o "$dir/m.gguf" 2>"$dir/err" || fail "make-model q3_K_m failed"
"$bin" info -m "$dir/m.gguf" | grep -qF "q4_0 x" || fail "q3_K_m on 64-wide rows: no q4_0 fallbacks"
"$bin" info -m "$dir/m.gguf" --tensors | grep -q "output.weight  *q8_0" || fail "q3_K_m on 64-wide rows: output not q8_0"
[ "$(ftype "$dir/m.gguf")" = 12 ] || fail "q3_K_m: general.file_type $(ftype "$dir/m.gguf"), not 12"

# Rows of 172 are not a multiple of 32: ffn_down falls back to f16, with a warning.
"$bin" make-model --preset stories-260k-shape --type q8_0 -o "$dir/c.gguf" 2>"$dir/err" || fail "make-model failed"
grep -q "ffn_down.weight" "$dir/err" || fail "no fallback warning: $(cat "$dir/err")"
"$bin" info -m "$dir/c.gguf" | grep -qF "f16 x5" || fail "ffn_down is not f16"

"$bin" make-model --vocab 100 -o "$dir/d.gguf" 2>/dev/null; [ $? -eq 2 ] || fail "--vocab 100 should be a usage error"
"$bin" make-model --type iq2_xxs -o "$dir/d.gguf" 2>"$dir/err" && fail "--type iq2_xxs accepted"
grep -q "^vkllm: make-model: unknown tensor type 'iq2_xxs'" "$dir/err" || fail "unknown type message: $(cat "$dir/err")"
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
