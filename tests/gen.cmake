# Step-wise generation and batched decode (vkllm_gen_*): random models, then stories260K.
vkllm_add_test(NAME test_gen_random SOURCES test_gen.c ARGS random LABELS gpu TIMEOUT 600)
add_test(NAME test_gen_stories COMMAND test_gen_random stories)
vkllm_test_properties(test_gen_stories 600 gpu)
# The same with the GPU code paths (the nvidia-ampere device profile: tiled prefill, storage-buffer
# matvec and attention, staging copies): greedy decode must stay llama2.c's text. The optimized
# build only: the host code is test_gen_stories' (the sanitizers run that), the profile changes
# which kernels run, and 33 s of the sanitizer suite went to it.
if(NOT VKLLM_SANITIZE)
  add_test(NAME test_gen_stories_gpu_paths COMMAND test_gen_random stories)
  vkllm_test_properties(test_gen_stories_gpu_paths 600 gpu)
  set_property(TEST test_gen_stories_gpu_paths APPEND PROPERTY ENVIRONMENT "VKLLM_DEVICE_PROFILE=nvidia-ampere")
endif()
# The same with each layer's K and V split by kv heads into two buffers (VKLLM_KV_PARTS=2; what a
# cache larger than one binding gets): shared pools, copy on write, prefix sharing, window rings,
# q8_0 caches, and llama2.c's text.
add_test(NAME test_gen_kv_parts COMMAND test_gen_random all)
vkllm_test_properties(test_gen_kv_parts 600 gpu)
set_property(TEST test_gen_kv_parts APPEND PROPERTY ENVIRONMENT "VKLLM_KV_PARTS=2")
