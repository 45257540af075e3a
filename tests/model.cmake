# Model description, reference forward pass, make-model, info (tests/test_ref_forward.c,
# tests/test_model*.c, tests/*model*.sh).
vkllm_add_test(NAME test_ref_forward SOURCES test_ref_forward.c LABELS model)
