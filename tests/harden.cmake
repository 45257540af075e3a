# Issue 41, an outside red team's findings on files (tests/test_harden.py): make-model's -o on a
# FIFO, device, directory or link; run and serve with their model file truncated or rewritten in
# place while it loads (deterministic: stopped in their first progress line); the pipeline cache
# file truncated, corrupted, foreign or not a file. The server's items are in test_serve.py.
vkllm_add_script_test(NAME test_harden LABELS gpu TIMEOUT 180
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_harden.py $<TARGET_FILE:vkllm>)
