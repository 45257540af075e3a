# GGUF reader/writer tests, and the libFuzzer target for the reader (cmake -DVKLLM_FUZZ=ON with
# CC=clang; see scripts/fuzz-gguf.sh).

vkllm_add_test(NAME test_gguf SOURCES test_gguf.c)
vkllm_add_test(NAME test_gguf_hostile SOURCES test_gguf_hostile.c)

if(VKLLM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "VKLLM_FUZZ needs clang (libFuzzer): configure with CC=clang")
  endif()
  # The library sources the reader needs are compiled straight into the target, so that all of
  # them carry the fuzzer's coverage instrumentation and sanitizers.
  add_executable(fuzz_gguf
    ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_gguf.c
    ${CMAKE_SOURCE_DIR}/runtime/base/gguf.c
    ${CMAKE_SOURCE_DIR}/runtime/base/mapguard.c
    ${CMAKE_SOURCE_DIR}/tools/gguf_write.c
    ${CMAKE_SOURCE_DIR}/runtime/base/types.c
    ${CMAKE_SOURCE_DIR}/runtime/base/common.c)
  target_include_directories(fuzz_gguf PRIVATE ${VKLLM_INTERNAL_INCLUDE_DIRS})
  target_compile_definitions(fuzz_gguf PRIVATE _GNU_SOURCE)
  target_compile_options(fuzz_gguf PRIVATE -g -O1 -fno-omit-frame-pointer
                         -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(fuzz_gguf PRIVATE -fsanitize=fuzzer,address,undefined)
endif()
