# ggml tensor types: traits, row sizes, f16/bf16, reference dequantize/quantize (CPU only).
vkllm_add_test(NAME test_types SOURCES test_types.c)
