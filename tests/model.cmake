# Model description, reference forward pass, make-model, info (tests/test_ref_forward.c,
# tests/test_model*.c, tests/*model*.sh).
vkllm_add_test(NAME test_ref_forward SOURCES test_ref_forward.c LABELS model)
vkllm_add_script_test(NAME test_model_info COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_info_model.sh LABELS model)
vkllm_add_test(NAME test_model_make SOURCES test_model_make.c LABELS model)
vkllm_add_script_test(NAME test_make_model_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_make_model.sh LABELS model)
