# Tokenizer: unit tests on small in-memory cases and the real vocabularies
# (tests/test_tokenizer.c), the CLI contract on every llama.cpp vocab test vector
# (tests/test_tokenizer_cli.py), and a benchmark that is built but not run as a test.
vkllm_add_test(NAME test_tokenizer SOURCES test_tokenizer.c TIMEOUT 600)
# Each vector through the CLI is two process starts, and the library runs all of them (test_tokenizer,
# both builds): the optimized build runs every third vector of each vocabulary through the CLI (16;
# all 46: 54 s of `make test`), the sanitizer build every twelfth (4). `make test-full` runs all.
if(VKLLM_SANITIZE)
  set(VKLLM_TOKENIZER_CLI_ARGS --every 12)
else()
  set(VKLLM_TOKENIZER_CLI_ARGS --every 3)
  vkllm_add_script_test(NAME test_tokenizer_cli_full LABELS full TIMEOUT 600
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_tokenizer_cli.py $<TARGET_FILE:vkllm>)
endif()
vkllm_add_script_test(NAME test_tokenizer_cli TIMEOUT 600
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_tokenizer_cli.py $<TARGET_FILE:vkllm> ${VKLLM_TOKENIZER_CLI_ARGS})

add_executable(bench_tokenizer bench_tokenizer.c)
target_include_directories(bench_tokenizer PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS})
target_compile_definitions(bench_tokenizer PRIVATE _GNU_SOURCE)
target_link_libraries(bench_tokenizer PRIVATE vkllm_static)
# bench_grammar GGUF...: grammar mask and feed cost per token over a file's vocabulary.
add_executable(bench_grammar bench_grammar.c)
target_include_directories(bench_grammar PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS})
target_compile_definitions(bench_grammar PRIVATE _GNU_SOURCE)
target_link_libraries(bench_grammar PRIVATE vkllm_static)
