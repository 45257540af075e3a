vkllm_add_test(NAME test_sampler SOURCES test_sampler.c)
