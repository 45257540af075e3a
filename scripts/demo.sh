#!/bin/sh
# The README's first command ends here: show the Vulkan devices vkllm can use.
set -eu
BUILD=${1:-build}
"$BUILD/vkllm" --version
"$BUILD/vkllm" devices
