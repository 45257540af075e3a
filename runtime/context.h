/* context.h - what the public handles hold (shared by context.c and session.c). */
#ifndef VKLLM_CONTEXT_H
#define VKLLM_CONTEXT_H

#include "gpu.h"
#include "internal.h"

struct vkllm_ctx {
    struct vkllm__gpu *gpu;
};

#endif
