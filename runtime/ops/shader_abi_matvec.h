/* shader_abi_matvec.h - C twins of the matvec shaders' push-constant blocks (see shader_abi.h). */
#ifndef VKLLM_SHADER_ABI_MATVEC_H
#define VKLLM_SHADER_ABI_MATVEC_H

#include <stdint.h>

/* GLSL twin: the push_constant block PC of shaders/matvec.comp */
struct vkllm__pc_matvec {
    uint32_t k;         /* elements per row */
    uint32_t m;         /* rows in this dispatch (one chunk of W) */
    uint32_t row_bytes; /* bytes per row */
    uint32_t y0;        /* y index of the chunk's first row (first column) */
    uint32_t x0;        /* x index of the first column's first element (a multiple of 4) */
    uint32_t x_stride;  /* x elements from one column to the next (a multiple of 4) */
    uint32_t y_stride;  /* y elements from one column to the next */
};
_Static_assert(sizeof(struct vkllm__pc_matvec) == 28, "update PC in shaders/matvec.comp");

/* GLSL twin: the push_constant block PC of shaders/matvec.comp built with -DMATVEC_ID */
struct vkllm__pc_matvec_id {
    struct vkllm__pc_matvec mv; /* m: rows of one expert; y0 and x0 of column 0 */
    uint32_t n_expert;          /* experts stacked in W */
    uint32_t x_div;             /* columns that share one x vector */
    uint32_t e0, e1;            /* the experts bound (W's binding starts at expert e0) */
};
_Static_assert(sizeof(struct vkllm__pc_matvec_id) == 44, "update PC in shaders/matvec.comp");

/* GLSL twin: the push_constant block PC of shaders/quantize_x8.comp (x quantized once per step for
 * matvec_x8.comp's X_Q8 variants, whose vkllm__pc_matvec x0 and x_stride then count 160-byte groups
 * of 4 blocks of 32 in that buffer: shaders/include/quant_x8.glsl) */
struct vkllm__pc_quantize_x8 {
    uint32_t nb;       /* blocks of 32 per column (k / 32) */
    uint32_t ncols;    /* columns */
    uint32_t x0;       /* x index of the first column's first element (a multiple of 4) */
    uint32_t x_stride; /* x elements from one column to the next (a multiple of 4) */
    uint32_t q_stride; /* groups from one column to the next in the quantized buffer */
};
_Static_assert(sizeof(struct vkllm__pc_quantize_x8) == 20, "update PC in shaders/quantize_x8.comp");

/* GLSL twin: the push_constant block PC of shaders/repack.comp (weights into the 16-byte layout,
 * vkllm__rp_pack's device twin) */
struct vkllm__pc_repack {
    uint32_t n_words; /* 32-bit words of the layout's rows in this dispatch */
    uint32_t blocks;  /* blocks per row */
    uint32_t block_bytes;
    uint32_t src_row_bytes; /* the file's rows */
    uint32_t dst_row_bytes; /* the layout's rows (vkllm__rp_row_bytes, a multiple of 16) */
    uint32_t n_fields;
    uint32_t pad_[2];
    uint32_t off[4]; /* field f: bytes off[f] .. off[f] + len[f] - 1 of each block, in the new order */
    uint32_t len[4];
    uint32_t full[4]; /* 1: the field takes 8 places in a short group too */
};
_Static_assert(sizeof(struct vkllm__pc_repack) == 80, "update PC in shaders/repack.comp");

/* GLSL twin: the push_constant block PC of shaders/get_rows.comp */
struct vkllm__pc_get_rows {
    uint32_t k;         /* elements per row */
    uint32_t row_bytes; /* bytes per row */
    uint32_t n;         /* ids */
    uint32_t row0;      /* first row of W in this dispatch's binding */
    uint32_t nrows;     /* rows in this binding */
    uint32_t last;      /* 1 for the last chunk: ids >= row0 + nrows give zero rows */
};
_Static_assert(sizeof(struct vkllm__pc_get_rows) == 24, "update PC in shaders/get_rows.comp");

#endif
