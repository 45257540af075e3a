// pc.glsl - push-constant blocks. Each has a C twin in runtime/ops/shader_abi.h with a
// _Static_assert on its size: change both together.
#ifndef VKLLM_PC_GLSL
#define VKLLM_PC_GLSL

// C twin: struct vkllm__pc_elementwise
struct pc_elementwise {
    uint n;        // elements of a and of the output
    uint nb;       // elements of b; b is repeated (b[i % nb]) when nb < n
};

// C twin: struct vkllm__pc_rows
struct pc_rows {
    uint ncols;    // row length
    uint nrows;    // number of rows
    float eps;     // rmsnorm: epsilon
    float scale;   // softmax: logits are multiplied by scale first
};

// C twin: struct vkllm__pc_moe
struct pc_moe {
    uint n;        // tokens (moe_add_id: rows)
    uint n_expert; // router logits per token (moe_add_id: rows of the bias)
    uint k;        // experts per token
    uint width;    // moe_sum, moe_add_id: elements per output row
};

#endif
