#!/bin/sh
# The README's first command ends here: show the Vulkan devices and check every shader on the
# default device against the C reference.
set -eu
BUILD=${1:-build}
"$BUILD/vkllm" --version
"$BUILD/vkllm" devices
"$BUILD/vkllm" selftest
