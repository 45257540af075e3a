# `vkllm serve`: the HTTP server end to end on stories260K (tests/test_serve.py: endpoints, SSE,
# errors, API key, disconnects, 503, SIGTERM, the 16x4 load test), and the official openai npm
# package streaming from it (tests/openai-client; scripts/install-deps.sh runs its npm ci).
vkllm_add_script_test(NAME test_serve LABELS gpu TIMEOUT 600
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve.py $<TARGET_FILE:vkllm>)
vkllm_add_script_test(NAME test_serve_openai LABELS gpu TIMEOUT 300
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve.py $<TARGET_FILE:vkllm> openai)
# The chat page at / in Debian's chromium, headless, driven by puppeteer-core (tests/web-client,
# pinned by its package-lock.json; scripts/install-deps.sh installs both). Leaves web-chat.png in
# the build's tests/ folder.
vkllm_add_script_test(NAME test_web_chat LABELS gpu TIMEOUT 400
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve.py $<TARGET_FILE:vkllm> web)
