// quant_x8.glsl - x quantized to int8 for matvec_x8.comp, per block of 32 elements as ggml's q8_1:
// d = max|x| / 127, q = roundEven(x / d) (as x * (1 / d)), and s = d * sum(q) for the weight types
// with an offset. matvec_x8.comp's in-workgroup path (load_x) and quantize_x8.comp (x quantized once
// per step, into a buffer) both call it, so both give the same bits; runtime/ref's
// vkllm__ref_quantize_x8 is its host twin.
#ifndef VKLLM_QUANT_X8_GLSL
#define VKLLM_QUANT_X8_GLSL

// Block v (32 values): its quants, 4 to a word (q0: elements 0..15, q1: 16..31), and (d, d * sum).
void quant_x8_block(vec4 v[8], out uvec4 q0, out uvec4 q1, out vec2 ds) {
    float amax = 0.0;
    bool finite = true;
    [[unroll]] for (uint j = 0u; j < 8u; j++) {
        vec4 a = abs(v[j]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
        finite = finite && !any(isnan(v[j])) && !any(isinf(v[j]));
    }
    // an inf or NaN in the block: its scale is NaN, so every row it meets is NaN (the f32
    // kernels' products are not finite either), not a block of zeros
    float d = finite ? amax / 127.0 : uintBitsToFloat(0x7fc00000u);
    float id = finite && d != 0.0 ? 1.0 / d : 0.0;
    int sum = 0;
    uint qw[8];
    [[unroll]] for (uint j = 0u; j < 8u; j++) {
        ivec4 q = clamp(ivec4(roundEven(v[j] * id)), -127, 127);
        sum += q.x + q.y + q.z + q.w;
        qw[j] = uint(q.x & 255) | uint(q.y & 255) << 8 | uint(q.z & 255) << 16 | uint(q.w & 255) << 24;
    }
    q0 = uvec4(qw[0], qw[1], qw[2], qw[3]);
    q1 = uvec4(qw[4], qw[5], qw[6], qw[7]);
    ds = vec2(d, d * float(sum));
}

// The buffer quantize_x8.comp writes and matvec_x8.comp's X_Q8 variants read: each column of x in
// groups of 4 blocks (128 elements; the last group of a column padded), 160 bytes a group as ggml's
// block_q8_1_x4 but with f32 scales: the 4 blocks' (d, d * sum) (two 16-byte words), then their
// quants (two 16-byte words a block, elements 0..15 then 16..31). A block's index xi counts 4 per
// group: group xi / 4, block xi % 4 of it. 1.25 bytes an element.
#define XQ8_GROUP_WORDS 10u                                            // 16-byte words per group
uint xq8_quant_word(uint xi, uint h) { return (xi >> 2) * 10u + 2u + 2u * (xi & 3u) + h; }  // uvec4 index
uint xq8_ds_index(uint xi) { return (xi >> 2) * 20u + (xi & 3u); }                      // vec2 index

#endif
