/* shader_abi_matmul.h - C twins of the matmul shaders' push-constant blocks (see shader_abi.h). */
#ifndef VKLLM_SHADER_ABI_MATMUL_H
#define VKLLM_SHADER_ABI_MATMUL_H

#include <stdint.h>

/* GLSL twin: the PC block of shaders/matmul.comp (change both together). */
struct vkllm__pc_matmul {
    uint32_t n;         /* rows of x and y in this dispatch */
    uint32_t m;         /* weight rows in the bound chunk */
    uint32_t k;         /* elements per row of x and W */
    uint32_t row_bytes; /* bytes per weight row */
    uint32_t y_stride;  /* floats per row of y (all of W's rows) */
    uint32_t y_col;     /* column of y of the chunk's first weight row */
};
_Static_assert(sizeof(struct vkllm__pc_matmul) == 24, "update the PC block of matmul.comp");

/* GLSL twin: the PC block of shaders/matmul.comp's MATMUL_ID variants (change both together). */
struct vkllm__pc_matmul_id {
    uint32_t m;         /* rows of one expert (floats per row of y) */
    uint32_t k;         /* elements per row of x and W */
    uint32_t row_bytes; /* bytes per weight row */
    uint32_t x_div;     /* columns that share one row of x */
    uint32_t x_stride;  /* floats from one row of x to the next */
    uint32_t n_expert;  /* experts stacked in W */
    uint32_t e0, e1;    /* the experts bound: W's binding starts at expert e0 */
    uint32_t list;      /* word of the grouping where the columns in expert order start */
    uint32_t firsts;    /* word of the grouping where each expert's first place in that list is */
};
_Static_assert(sizeof(struct vkllm__pc_matmul_id) == 40, "update the MATMUL_ID PC block of matmul.comp");

#endif
