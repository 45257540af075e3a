/* shader_abi_matvec_tb.h - C twin of the push-constant block of shaders/matvec_tb.comp. */
#ifndef VKLLM_SHADER_ABI_MATVEC_TB_H
#define VKLLM_SHADER_ABI_MATVEC_TB_H

#include <stdint.h>

/* GLSL twin: the push_constant block PC of shaders/matvec_tb.comp */
struct vkllm__pc_matvec_tb {
    uint32_t k;       /* elements per row */
    uint32_t nu;      /* units per row of the repacked layout */
    uint32_t m;       /* rows in this dispatch */
    uint32_t y0;      /* y index of row 0 of column 0 in the y binding */
    uint32_t ystride; /* y elements between columns */
    uint32_t x0;      /* vec4 index of column 0 in the x binding */
    uint32_t xstride; /* vec4s between columns */
};
_Static_assert(sizeof(struct vkllm__pc_matvec_tb) == 28, "update PC in shaders/matvec_tb.comp");

/* GLSL twin: PC of matvec_tb.comp with -DMATVEC_ID (m: rows per expert) */
struct vkllm__pc_matvec_tb_id {
    struct vkllm__pc_matvec_tb b;
    uint32_t n_expert;
    uint32_t x_div; /* columns that share one x vector */
    uint32_t col0;  /* one column per workgroup: the column of z = 0 */
};
_Static_assert(sizeof(struct vkllm__pc_matvec_tb_id) == 40, "update PC in shaders/matvec_tb.comp");

#endif
