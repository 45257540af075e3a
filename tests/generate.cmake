# Generation: `vkllm run` end to end on stories260K.
vkllm_add_script_test(NAME test_cli_run LABELS gpu TIMEOUT 600
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_run.py $<TARGET_FILE:vkllm>)
vkllm_add_script_test(NAME test_cli_chat LABELS gpu
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_chat.py $<TARGET_FILE:vkllm>)
