# Step-wise generation and batched decode (vkllm_gen_*): random models, then stories260K.
vkllm_add_test(NAME test_gen_random SOURCES test_gen.c ARGS random LABELS gpu TIMEOUT 600)
add_test(NAME test_gen_stories COMMAND test_gen_random stories)
vkllm_test_properties(test_gen_stories 600 gpu)
