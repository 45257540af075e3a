# The sources follow .clang-format (scripts/format.sh lays them out). SKIPPED where clang-format is not
# installed; the sanitizer build does not repeat it.
if(NOT VKLLM_SANITIZE)
  vkllm_add_script_test(NAME test_format TIMEOUT 120
    COMMAND ${CMAKE_SOURCE_DIR}/scripts/format.sh --check)
endif()
