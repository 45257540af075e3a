#version 450
#extension GL_GOOGLE_include_directive : require
// matmul.comp - prefill product y (n, m) = x (n, k) @ W^T, W (m, k) in its GGUF encoding.
// One variant per weight type (-DWTYPE_<TYPE>=1, see dequant.glsl); no optional device feature
// is needed (weights are read as uint words, everything else is f32).
//
// Tiling: a workgroup computes a BM x BN block of y^T (BM weight rows by BN rows of x). For each
// step of BK along k it dequantizes the BM x BK weight tile and copies the BN x BK x tile into
// shared memory (k-major, vec4 of 4 rows), then every invocation accumulates a TM x TN register
// block (TM weight rows, TN x rows) from them. BM, BN, BK and the workgroup size are
// specialization constants chosen by ops_matmul.c from the device's limits; TM and TN are
// compile-time (4 x 4, named registers). The op guarantees WG == (BM / TM) * (BN / TN) and BK % 4 == 0.
//
// W may be bound in row chunks (maxStorageBufferRange): the chunk's rows are y's columns
// y_col .. y_col + m - 1, so y's row stride (y_stride) is passed separately from m.
#include "common.glsl"

#define DQ_BINDING 0
#include "dequant.glsl"

layout(std430, binding = 1) readonly buffer X { float x[]; };   // (n, k)
layout(std430, binding = 2) writeonly buffer Y { float y[]; };  // (n, y_stride)

// C twin: struct vkllm__pc_matmul in runtime/ops/shader_abi_matmul.h (change both together).
layout(push_constant) uniform PC {
    uint n;          // rows of x (and of y) in this dispatch
    uint m;          // weight rows in the bound chunk
    uint k;          // elements per row of x and W
    uint row_bytes;  // bytes per weight row
    uint y_stride;   // floats per row of y
    uint y_col;      // column of y written by the chunk's first weight row
} p;

layout(constant_id = 1) const uint BM = 64;  // weight rows per workgroup
layout(constant_id = 2) const uint BN = 64;  // x rows per workgroup
layout(constant_id = 3) const uint BK = 32;  // k per shared-memory step (multiple of 4)

// Register block per invocation: TM = 4 weight rows (one vec4) x TN = 4 rows of x, held in
// four named vec4 accumulators (on lavapipe an indexed accumulator array ran 1.7x slower).
// ops_matmul.c's VKLLM__MM_TM / VKLLM__MM_TN must match.
#define TM 4u
#define TN 4u

// k-major tiles: sh_w[kk * (BM / 4) + r / 4][r % 4] = W[m0 + r][k0 + kk]
shared vec4 sh_w[BK * (BM / 4)];
shared vec4 sh_x[BK * (BN / 4)];

// Weight tile rows m0 .. m0+BM-1, columns k0 .. k0+BK-1; zeros outside the matrix.
void load_w(uint m0, uint k0) {
    const uint groups = BM * (BK / 4);
    for (uint g = gl_LocalInvocationID.x; g < groups; g += gl_WorkGroupSize.x) {
        uint r = g / (BK / 4), kk = (g % (BK / 4)) * 4u;
        uint row = m0 + r, col = k0 + kk;
        vec4 v = vec4(0.0);
        if (row < p.m) {
            uint rb = row * p.row_bytes;
            if (col + 3u < p.k) {
                v = dq_get4(rb, col);
            } else {
                [[unroll]] for (uint c = 0u; c < 4u; c++)
                    if (col + c < p.k) v[c] = dq_get1(rb, col + c);
            }
        }
        uint o = kk * (BM / 4) + r / 4u, lane = r % 4u;
        [[unroll]] for (uint c = 0u; c < 4u; c++) sh_w[o + c * (BM / 4)][lane] = v[c];
    }
}

// x tile rows n0 .. n0+BN-1, columns k0 .. k0+BK-1; zeros outside.
void load_x(uint n0, uint k0) {
    const uint groups = BN * (BK / 4);
    for (uint g = gl_LocalInvocationID.x; g < groups; g += gl_WorkGroupSize.x) {
        uint r = g / (BK / 4), kk = (g % (BK / 4)) * 4u;
        uint row = n0 + r, col = k0 + kk;
        vec4 v = vec4(0.0);
        if (row < p.n) {
            uint o = row * p.k + col;
            [[unroll]] for (uint c = 0u; c < 4u; c++)
                if (col + c < p.k) v[c] = x[o + c];
        }
        uint o = kk * (BN / 4) + r / 4u, lane = r % 4u;
        [[unroll]] for (uint c = 0u; c < 4u; c++) sh_x[o + c * (BN / 4)][lane] = v[c];
    }
}

void main() {
    const uint tm_count = BM / TM;
    uint tm = gl_LocalInvocationID.x % tm_count;  // this invocation's weight rows: tm*TM ..
    uint tn = gl_LocalInvocationID.x / tm_count;  // and x rows: tn*TN ..
    uint m0 = gl_WorkGroupID.x * BM;
    uint n0 = gl_WorkGroupID.y * BN;

    // c<j>[c] = y[n0 + tn*TN + j][m0 + tm*TM + c]
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    for (uint k0 = 0u; k0 < p.k; k0 += BK) {
        load_w(m0, k0);
        load_x(n0, k0);
        barrier();
        for (uint kk = 0u; kk < BK; kk++) {
            vec4 a = sh_w[kk * (BM / 4) + tm];  // 4 weight rows
            vec4 b = sh_x[kk * (BN / 4) + tn];  // 4 rows of x
            c0 += a * b.x;
            c1 += a * b.y;
            c2 += a * b.z;
            c3 += a * b.w;
        }
        barrier();
    }

    vec4 acc[4] = vec4[4](c0, c1, c2, c3);
    [[unroll]] for (uint j = 0u; j < TN; j++) {
        uint row = n0 + tn * TN + j;
        if (row >= p.n) break;
        [[unroll]] for (uint c = 0u; c < TM; c++) {
            uint col = m0 + tm * TM + c;
            if (col < p.m) y[row * p.y_stride + p.y_col + col] = acc[j][c];
        }
    }
}
