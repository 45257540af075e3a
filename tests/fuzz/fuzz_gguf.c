/* fuzz_gguf.c - libFuzzer target for the GGUF reader (built with -DVKLLM_FUZZ=ON and clang; run
 * with scripts/fuzz-gguf.sh). Each input is opened with vkllm__gguf_open_memory; when it loads,
 * everything it exposes is walked (gguf_walk.h) and every value is copied into a writer with
 * set_kv (never written to disk), so ASan/UBSan see every read the API can make. */
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "gguf_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct vkllm__gguf *g = NULL;
    vkllm_status st = vkllm__gguf_open_memory(data, size, "fuzz", &g);
    if (st != VKLLM_STATUS_OK) {
        /* A failure always leaves a message and no handle. */
        if (g != NULL || vkllm_last_error()[0] == 0) __builtin_trap();
        return 0;
    }
    g_sink += gguf_walk(g);
    if (gguf_walk_bugs) __builtin_trap();

    struct vkllm__gguf_writer *w = NULL;
    if (vkllm__gguf_writer_init(&w) == VKLLM_STATUS_OK) {
        for (uint64_t i = 0; i < g->n_kv; i++) {
            /* Every value the reader accepted is a value the writer accepts (general.alignment
             * was checked by the reader to be a u32 power of two). */
            if (vkllm__gguf_writer_set_kv(w, "k", &g->kv[i]) != VKLLM_STATUS_OK) __builtin_trap();
            if (g->kv[i].type == VKLLM__GGUF_ARRAY) {
                uint64_t n = 0;
                const uint8_t *p = g->kv[i].arr_data - 12; /* element type and count */
                if (vkllm__gguf_value_size(VKLLM__GGUF_ARRAY, p, g->kv[i].arr_bytes + 12, &n) != VKLLM_STATUS_OK ||
                    n != g->kv[i].arr_bytes + 12)
                    __builtin_trap();
            }
        }
        vkllm__gguf_writer_free(w);
    }
    vkllm__gguf_close(g);
    return 0;
}
