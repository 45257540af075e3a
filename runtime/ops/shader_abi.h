/* shader_abi.h - C twins of the shaders' push-constant blocks (shaders/include/pc.glsl).
 * Built only from uint32_t and float; the _Static_asserts catch a drift in size. Change both
 * sides together. Every block stays within the 128 bytes Vulkan guarantees. */
#ifndef VKLLM_SHADER_ABI_H
#define VKLLM_SHADER_ABI_H

#include <stdint.h>

/* GLSL twin: pc_elementwise (elementwise.comp, silu_mul.comp) */
struct vkllm__pc_elementwise {
    uint32_t n;  /* elements of a and of the output */
    uint32_t nb; /* elements of b; b is repeated when nb < n */
};
_Static_assert(sizeof(struct vkllm__pc_elementwise) == 8, "update pc_elementwise in pc.glsl");

/* GLSL twin: pc_rows (rmsnorm.comp, softmax.comp) */
struct vkllm__pc_rows {
    uint32_t ncols;
    uint32_t nrows;
    float eps;
    float scale;
};
_Static_assert(sizeof(struct vkllm__pc_rows) == 16, "update pc_rows in pc.glsl");

/* GLSL twin: pc_moe (moe.comp) */
struct vkllm__pc_moe {
    uint32_t n, n_expert, k, width;
};
_Static_assert(sizeof(struct vkllm__pc_moe) == 16, "update pc_moe in pc.glsl");

/* The op families' blocks, one header each (one writer per file). */
#include "shader_abi_matvec.h"
#include "shader_abi_matvec_tb.h"
#include "shader_abi_matmul.h"
#include "shader_abi_attn.h"

#endif
