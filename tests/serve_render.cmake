# POST /v1/completions/render and /v1/chat/completions/render on stories260K: the ids equal
# `vkllm tokenize`, usage.prompt_tokens of the real request, and evaluate to the same greedy text
# (tests/test_serve_render.py; a few seconds).
vkllm_add_script_test(NAME test_serve_render LABELS gpu TIMEOUT 120
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve_render.py $<TARGET_FILE:vkllm>)
