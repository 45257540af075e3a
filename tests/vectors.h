/* vectors.h - reading ../shared/models/llama2c-test-vectors.json in tests (needs cJSON). */
#ifndef VKLLM_TEST_VECTORS_H
#define VKLLM_TEST_VECTORS_H

#include <cjson/cJSON.h>

#include "harness.h"

/* llama2.c's expected stdout for stories260K, greedy, 200 tokens from BOS (malloc'd). Skips or
 * fails like vkllm_test_model when the file is missing. */
static inline char *vkllm_test_stories_expected(void) {
    char *json = vkllm_test_read_file(vkllm_test_model("llama2c-test-vectors.json"), NULL);
    cJSON *root = cJSON_Parse(json);
    ASSERT(root);
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "stories260K_greedy");
    ASSERT(cJSON_IsArray(arr));
    char *want = NULL;
    cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        cJSON *cmd = cJSON_GetObjectItemCaseSensitive(it, "command");
        cJSON *exp = cJSON_GetObjectItemCaseSensitive(it, "expected_stdout");
        if (cJSON_IsString(cmd) && strstr(cmd->valuestring, "-n 200") && cJSON_IsString(exp))
            want = strdup(exp->valuestring);
    }
    ASSERT(want);
    cJSON_Delete(root);
    free(json);
    return want;
}

#endif
