vkllm_add_test(NAME test_sampler SOURCES test_sampler.c)
# The JSON-mode recognizer (vkllm_generate_params.json_object) on valid and invalid documents.
vkllm_add_test(NAME test_json_constraint SOURCES test_json_constraint.c)
# GBNF grammars (vkllm_generate_params.grammar): parsing, matching, token masks.
vkllm_add_test(NAME test_grammar SOURCES test_grammar.c)
# JSON schema -> GBNF (cli/json_schema.c, compiled in) checked through the grammar engine.
vkllm_add_test(NAME test_json_schema SOURCES test_json_schema.c ${PROJECT_SOURCE_DIR}/cli/json_schema.c)
target_include_directories(test_json_schema PRIVATE ${PROJECT_SOURCE_DIR}/cli)
target_link_libraries(test_json_schema PRIVATE m)
# The streaming scanner of function calls (cli/serve_tools.c, compiled in) fed in pieces.
vkllm_add_test(NAME test_tool_scan SOURCES test_tool_scan.c ${PROJECT_SOURCE_DIR}/cli/serve_tools.c
               ${PROJECT_SOURCE_DIR}/cli/json_schema.c ${PROJECT_SOURCE_DIR}/cli/serve_buf.c)
target_include_directories(test_tool_scan PRIVATE ${PROJECT_SOURCE_DIR}/cli)
target_link_libraries(test_tool_scan PRIVATE m)
