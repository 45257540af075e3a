#!/bin/sh
# `vkllm info` on stories260K: text and --json describe its shape; a missing file fails cleanly.
# Environment (set by CTest): VKLLM_BIN, VKLLM_TEST_MODELS or VKLLM_TEST_MODELS_DEFAULT.
set -u
bin=${VKLLM_BIN:?VKLLM_BIN must name the vkllm binary}
dir=${VKLLM_TEST_MODELS:-${VKLLM_TEST_MODELS_DEFAULT:-../shared/models}}
model=$dir/stories260K.gguf
if [ ! -r "$model" ]; then
    [ "${VKLLM_REQUIRE_TEST_MODELS:-0}" = 1 ] && { echo "FAIL: required model missing: $model"; exit 1; }
    echo "SKIPPED: test model missing: $model"
    exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
out=$("$bin" info -m "$model") || fail "vkllm info exited $?"
echo "$out"
for want in "architecture:    llama" "layers:          5" "embedding:       64 (ffn 172)" \
            "heads:           8 query, 4 key/value" "vocabulary:      512" "context length:  2048" \
            "parameters:      292800" "f32 x48" "llama (SentencePiece), 512 tokens" "chat template:   no"; do
    echo "$out" | grep -qF "$want" || fail "text output lacks '$want'"
done
json=$("$bin" info -m "$model" --json) || fail "vkllm info --json exited $?"
for want in '"architecture":	"llama"' '"n_layer":	5' '"n_head_kv":	4' '"n_params":	292800' \
            '"f32":	48' '"n_tokens":	512' '"chat_template":	false' '"context_length":	2048'; do
    echo "$json" | grep -qF "$want" || fail "json output lacks '$want'"
done
if command -v python3 >/dev/null 2>&1; then
    echo "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["hparams"]["n_embd"] == 64' ||
        fail "json output does not parse"
fi
"$bin" info -m "$dir/does-not-exist.gguf" 2>/dev/null && fail "info on a missing file succeeded"
"$bin" info --help | grep -q -- "--json" || fail "--help does not describe --json"
echo "ok"
