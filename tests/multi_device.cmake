# One model split by layers over several devices (--devices 0,0: the first device opened twice):
# text identical to one device, logits within test_cli_logits' bars; stories260K and a random model
# (the sanitizer build: one split of stories260K and its logits, about a minute on busy cores).
if(VKLLM_SANITIZE)
  set(VKLLM_MULTI_DEVICE_ARGS quick)
endif()
vkllm_add_script_test(NAME test_multi_device LABELS gpu TIMEOUT 300
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_multi_device.py $<TARGET_FILE:vkllm> ${VKLLM_MULTI_DEVICE_ARGS})
# serve --parallel 2 over two devices: interleaved conversations (prefix cache, batched decode steps)
# give one device's replies. About a minute on 2 busy cores: the full tier.
vkllm_add_script_test(NAME test_multi_device_serve LABELS gpu full TIMEOUT 600
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_multi_device.py $<TARGET_FILE:vkllm> serve)
