/* json_constraint.h - the JSON mode of vkllm_generate_params.json_object (OpenAI's
 * response_format {"type": "json_object"}): a byte-at-a-time recognizer of one JSON object
 * (RFC 8259; whitespace between tokens bounded as below). Generation draws each token among those whose bytes
 * keep the text a prefix of such an object, and stops once it is closed.
 *
 * The state is a small value type: copy it to try a token's bytes without committing them. */
#ifndef VKLLM_JSON_CONSTRAINT_H
#define VKLLM_JSON_CONSTRAINT_H

#include <stddef.h>
#include <stdint.h>

#define VKLLM__JSON_MAX_DEPTH 32 /* nesting of objects and arrays; deeper is refused */
/* Whitespace outside strings: a small model otherwise fills the reply with it (every whitespace
 * token keeps JSON valid). As llama.cpp's JSON grammar, a gap between tokens is nothing, one
 * space, or a newline and up to VKLLM__JSON_MAX_INDENT spaces or tabs. */
#define VKLLM__JSON_MAX_INDENT 20

struct vkllm__json {
    uint8_t stack[VKLLM__JSON_MAX_DEPTH]; /* '{' or '[' of each open container */
    uint8_t depth;
    uint8_t state; /* what may come next (json_constraint.c) */
    uint8_t sub;   /* progress inside a literal, a \u escape */
    uint8_t key;   /* the string being read is an object key */
    uint8_t ws;    /* whitespace bytes in the current gap outside strings */
    uint8_t nl;    /* the gap started with a newline */
};

void vkllm__json_init(struct vkllm__json *j);
/* Feed n bytes: 0 when the text so far is still a prefix of one JSON object, -1 when it cannot be
 * (j is then unspecified: feed a copy to try). */
int vkllm__json_feed(struct vkllm__json *j, const char *s, size_t n);
/* 1 once the object has closed (only whitespace may follow). */
int vkllm__json_complete(const struct vkllm__json *j);

#endif /* VKLLM_JSON_CONSTRAINT_H */
