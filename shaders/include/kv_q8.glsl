// kv_q8.glsl - the q8_0 KV cache layout (--cache-type-k/v q8_0): a cache of n_rows rows of width
// values holds first the quants, int8 packed four to a uint word (row r, value i at byte
// r * width + i), then one f32 scale per block of 32 values of a row (row r, block b at word
// n_rows * width / 4 + r * width / 32 + b): value = int8 * scale, as ggml's q8_0 (scale =
// max |x| / 127 over the block, quants rounded half away from zero). width is a multiple of 32.
#ifndef VKLLM_KV_Q8_GLSL
#define VKLLM_KV_Q8_GLSL

// The words of a quantized block of 32 values, and its scale.
struct q8_block {
    uint w[8];
    float d;
};

q8_block q8_quantize(float x[32]) {
    float amax = 0.0;
    [[unroll]] for (uint i = 0u; i < 32u; i++) amax = max(amax, abs(x[i]));
    q8_block b;
    b.d = amax / 127.0;
    float id = b.d > 0.0 ? 1.0 / b.d : 0.0;
    [[unroll]] for (uint j = 0u; j < 8u; j++) {
        uint w = 0u;
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            float v = x[4u * j + k] * id;
            int q = int(sign(v) * floor(abs(v) + 0.5));
            w |= (uint(q) & 0xffu) << (8u * k);
        }
        b.w[j] = w;
    }
    return b;
}

// Four values from a quant word and their block's scale.
vec4 q8_unpack(uint w, float d) {
    return vec4(ivec4(int(w << 24), int(w << 16), int(w << 8), int(w)) >> 24) * d;
}

#endif
