#!/bin/sh
# The README's first command ends here: the Vulkan devices, every kernel the default device runs
# checked against the C reference (`vkllm selftest --defaults`; without it every variant too), then
# a small model through the forward pass on the device.
# The model is made here with random weights (no download): its outputs are meaningless tokens;
# it shows the pipeline working, not a language model.
set -eu
BUILD=${1:-build}
"$BUILD/vkllm" --version
"$BUILD/vkllm" devices
"$BUILD/vkllm" selftest --defaults
MODEL="$BUILD/demo-random-tiny.gguf"
"$BUILD/vkllm" make-model --preset tiny --type q8_0 -o "$MODEL"
"$BUILD/vkllm" info -m "$MODEL"
echo "top-3 logits at each position (random weights):"
"$BUILD/vkllm" logits -m "$MODEL" --ids "1 72 101 108 108 111" --top 3
echo "a completion (random weights: the text is noise; the pipeline and the statistics are real):"
"$BUILD/vkllm" run -m "$MODEL" -p "Hello" -n 24 --seed 1
"$BUILD/vkllm" bench -m "$MODEL" -p 64 -n 16 -r 3
STORIES=${VKLLM_TEST_MODELS:-../shared/models}/stories260K.gguf
if [ -f "$STORIES" ]; then
  echo "a real (tiny) model, stories260K, greedy:"
  "$BUILD/vkllm" run -m "$STORIES" -p "Once upon a time" -n 60 --temp 0
fi
echo "run a GGUF model of your own:  $BUILD/vkllm run -m MODEL.gguf -p \"Your prompt\""
