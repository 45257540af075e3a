# examples/stream.c built against the installed package (CMake and pkg-config) and run on
# stories260K, its text against `vkllm run`'s (test_install.sh --run-example; test_install itself
# builds the examples too). Not under the sanitizers, as test_install (foundation.cmake).
if(NOT VKLLM_SANITIZE)
  vkllm_add_script_test(NAME test_example LABELS gpu
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} --run-example)
endif()
