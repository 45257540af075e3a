# `vkllm serve`: the HTTP server end to end on stories260K (tests/test_serve.py: endpoints, SSE,
# errors, API key, disconnects, 503, SIGTERM, the 16x4 load test), and the official openai npm
# package streaming from it (tests/openai-client; scripts/install-deps.sh runs its npm ci).
vkllm_add_script_test(NAME test_serve LABELS gpu TIMEOUT 600
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve.py $<TARGET_FILE:vkllm>)
# The checks that start servers of their own (chunked prefill, the KV pool, keys, templates' tools,
# SIGTERM mid-prefill): a test apart, so that the two halves run side by side; under the sanitizers
# in the full tier (45-50 s there, a server start each; the main half keeps the server's code paths).
vkllm_add_script_test(NAME test_serve_servers LABELS ${VKLLM_ASAN_FULL_LABELS} TIMEOUT 600
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve.py $<TARGET_FILE:vkllm> servers)
vkllm_add_script_test(NAME test_serve_openai LABELS gpu TIMEOUT 300
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve.py $<TARGET_FILE:vkllm> openai)
# The chat page at / in Debian's chromium, headless, driven by puppeteer-core (tests/web-client,
# pinned by its package-lock.json; scripts/install-deps.sh installs both). Leaves web-chat.png in
# the build's tests/ folder.
# Under the sanitizers in the full tier (test_serve keeps the server's code paths in `make test`).
vkllm_add_script_test(NAME test_web_chat LABELS ${VKLLM_ASAN_FULL_LABELS} TIMEOUT 400
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_serve.py $<TARGET_FILE:vkllm> web)
