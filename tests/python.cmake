# The Python module over the shared library (bindings/python/vkllm.py), on stories260K: its
# structures against the C compiler's layout, and its greedy text against `vkllm run`'s.
vkllm_add_script_test(NAME test_python LABELS gpu TIMEOUT 300
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_python.py $<TARGET_FILE:vkllm> $<TARGET_FILE:vkllm_shared>
          ${CMAKE_SOURCE_DIR})
if(VKLLM_SANITIZE)
  # python3 is not built with ASan: its runtime must come first, before libvkllm.so asks for it
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE VKLLM_LIBASAN
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  set_property(TEST test_python APPEND PROPERTY ENVIRONMENT "LD_PRELOAD=${VKLLM_LIBASAN}")
endif()
