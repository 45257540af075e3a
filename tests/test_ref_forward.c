/* test_ref_forward.c - the reference forward pass on stories260K: greedy from BOS for 200 tokens
 * must print exactly llama2.c's expected text (test_all.py's test_runc). */
#include <cjson/cJSON.h>

#include "gguf.h"
#include "harness.h"
#include "vectors.h"
#include "model.h"
#include "ref_ops.h"
#include "ref.h"

/* llama2.c's decode(): after BOS the piece's leading space is dropped; <0xNN> is a raw byte;
 * U+2581 is a space. Appends to out (capacity cap). */
static void decode_piece(struct vkllm__str piece, uint32_t prev, uint32_t bos, char *out, size_t cap) {
    char buf[256];
    size_t n = 0;
    unsigned byte;
    if (piece.len == 6 && sscanf(piece.ptr, "<0x%02X>", &byte) == 1) {
        buf[n++] = (char)byte;
    } else {
        for (uint64_t i = 0; i < piece.len && n + 1 < sizeof buf; i++) {
            if (i + 2 < piece.len && (unsigned char)piece.ptr[i] == 0xE2 && (unsigned char)piece.ptr[i + 1] == 0x96 &&
                (unsigned char)piece.ptr[i + 2] == 0x81) {
                buf[n++] = ' ';
                i += 2;
            } else {
                buf[n++] = piece.ptr[i];
            }
        }
    }
    size_t skip = (prev == bos && n > 0 && buf[0] == ' ') ? 1 : 0;
    size_t len = strlen(out);
    for (size_t i = skip; i < n && len + 1 < cap; i++) out[len++] = buf[i];
    out[len] = 0;
}

int main(void) {
    char *want = vkllm_test_stories_expected();
    const char *path = vkllm_test_model("stories260K.gguf");
    struct vkllm__gguf *g;
    struct vkllm__model_desc *d;
    struct vkllm__ref *r;
    ASSERT_OK(vkllm__gguf_open(path, &g));
    ASSERT_OK(vkllm__model_desc_load(g, &d));
    ASSERT_EQ(d->hp.n_layer, 5);
    ASSERT_EQ(d->hp.n_embd, 64);
    ASSERT_EQ(d->hp.n_head_kv, 4);
    ASSERT_EQ(d->hp.n_vocab, 512);
    ASSERT_EQ(d->hp.rope.neox, 0);
    ASSERT_EQ(d->hp.tied_embd, 0);
    ASSERT_OK(vkllm__ref_init(d, 256, &r));

    struct vkllm__str *pieces;
    ASSERT_OK(vkllm__gguf_arr_strings(vkllm__gguf_find(g, "tokenizer.ggml.tokens"), &pieces));
    const uint32_t bos = 1;
    static char text[8192];
    uint32_t token = bos;
    for (uint32_t pos = 0; pos < 200; pos++) {
        const float *logits;
        ASSERT_OK(vkllm__ref_forward(r, token, pos, &logits));
        uint32_t next = vkllm__ref_argmax(logits, d->hp.n_vocab);
        if (next == bos) break; /* run.c stops at BOS */
        decode_piece(pieces[next], token, bos, text, sizeof text);
        token = next;
    }
    if (strcmp(text, want) != 0) {
        fprintf(stderr, "got:\n%s\nwant:\n%s\n", text, want);
        FAILF("stories260K greedy text differs");
    }
    printf("stories260K greedy, 200 tokens: match\n");
    /* Out-of-range arguments are errors, not crashes. */
    const float *lg;
    ASSERT_STATUS(vkllm__ref_forward(r, 512, 0, &lg), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__ref_forward(r, 1, 256, &lg), VKLLM_STATUS_CONTEXT_FULL);
    vkllm__free(pieces);
    vkllm__ref_free(r);
    vkllm__model_desc_free(d);
    vkllm__gguf_close(g);
    free(want);
    return 0;
}
