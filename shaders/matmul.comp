#version 450
#extension GL_GOOGLE_include_directive : require
// matmul.comp - prefill product y (n, m) = x (n, k) @ W^T, W (m, k) in its GGUF encoding.
// One variant per weight type (-DWTYPE_<TYPE>=1, see dequant.glsl). Two precisions of the
// shared-memory tiles:
//   default     f32 tiles; no optional device feature (weights are read as uint words)
//   MM_F16=1    f16 tiles (shaderFloat16): half the shared memory and its traffic per product,
//               so twice the tile for the same memory. W's dequantized values and x are rounded
//               to f16 as they are staged; products and sums stay f32 (ggml-vulkan's scalar
//               matmul does the same where the device has fp16).
//
// Tiling: a workgroup computes a BM x BN block of y^T (BM weight rows by BN rows of x), stepping
// BK along k. Each invocation accumulates a register block of TM = 4 * GM weight rows by
// TN = 4 * GN rows of x, as GM x GN groups of 4 x 4 (vec4 accumulators). The groups are spread
// over the tile (group g of an invocation's weight rows starts at g * BM / GM), so neighbouring
// invocations read neighbouring vec4s of the shared tiles (no bank conflicts).
//
// Double buffering: two pairs of shared tiles. Each step stages the next step's tiles (global
// loads, dequantized) into one pair and runs its products from the other, so one barrier per
// step separates them (a single pair needs two) and the loads of some invocations overlap the
// products of others.
//
// Specialization constants (ops_matmul.c picks them from the device's limits and the shape):
// 0 workgroup size (== (BM / TM) * (BN / TN)), 1 BM, 2 BN, 3 BK (multiple of 4), 4 GM, 5 GN
// (1 or 2; BM % TM == 0, BN % TN == 0).
//
// COOPMAT=1 (matmul_cm_<type>, devices with VK_KHR_cooperative_matrix): the same staging into
// f16 tiles (padded rows, scalar arrays), and the products by cooperative matrices of
// TM x TK (W) by TK x TN (x) into TM x TN f32 accumulators. The workgroup is four subgroups of
// a size the runtime requires (full subgroups), as a 2 x 2 grid over the tile; each holds
// (BM / 2 / TM) x (BN / 2 / TN) accumulators. Written in GL_NV_cooperative_matrix, which
// glslang 12 compiles, and rewritten to SPV_KHR_cooperative_matrix at build time
// (shaders/coopmat/spv_coopmat.h: A, B and the accumulator need distinct types, hence the three
// specialization constants TM, TN, TK). Specialization constants of this variant: 0 workgroup
// size (4 subgroups), 1 BM, 2 BN, 3 BK (a multiple of TK), 4 TM, 5 TN, 6 TK (a shape the device
// offers; BM % (2 * TM) == 0, BN % (2 * TN) == 0). COOPMAT_EMU=1 (matmul_cm_emu_<type>, tests):
// the same kernel with the matrix operations emulated by plain arithmetic, so that its tiling,
// offsets, layouts and way out run on devices without cooperative matrices (lavapipe).
//
// W may be bound in row chunks (maxStorageBufferRange): the chunk's rows are y's columns
// y_col .. y_col + m - 1, so y's row stride (y_stride) is passed separately from m.
//
// MATMUL_ID=1 (matmul_id_<type>, matmul_id_h16_<type>, matmul_id_cm_<type>: mixture-of-experts
// prefill, as ggml-vulkan's mul_mm_id): W holds n_expert matrices of m rows one after another
// (bound in chunks of whole experts [e0, e1)), and the columns (picks) come grouped by expert from
// moe.comp's MOE_GROUP (binding 3): each expert's columns in a list, and where each expert's start.
// A workgroup takes BM rows of one expert and up to BN of its columns: the dispatch's y counts such
// tiles over the bound experts (an upper bound; the extra workgroups leave at once), and each
// workgroup finds its expert and columns by walking the experts' column counts, so the command
// buffer needs no readback of the grouping. Column c reads x row c / x_div (x_stride floats apart)
// and writes y row c (m floats); an id past n_expert (its own group, taken by the chunk of e0 = 0)
// writes zeros. Everything else (staging, tiles, products) is the kernel above, the same
// specialization constants; rows of x are fetched through the list as they are staged.
#if defined(COOPMAT_EMU)
#define COOPMAT 1
#else
#if defined(COOPMAT)
#extension GL_NV_cooperative_matrix : require
#endif
#endif
#if defined(COOPMAT)
#extension GL_KHR_shader_subgroup_basic : require
#define MM_F16 1
#endif
#if defined(MM_F16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define SH_VEC f16vec4
#define SH_T float16_t
#else
#define SH_VEC vec4
#define SH_T float
#endif
#include "common.glsl"

#define DQ_BINDING 0
#include "dequant.glsl"

layout(std430, binding = 1) readonly buffer X { float x[]; };   // (n, k)
layout(std430, binding = 2) writeonly buffer Y { float y[]; };  // (n, y_stride)

#if defined(MATMUL_ID)
layout(std430, binding = 3) readonly buffer G { uint g[]; };    // moe.comp's MOE_GROUP output

// C twin: struct vkllm__pc_matmul_id in runtime/ops/shader_abi_matmul.h (change both together).
layout(push_constant) uniform PC {
    uint m;          // rows of one expert (and floats per row of y)
    uint k;          // elements per row of x and W
    uint row_bytes;  // bytes per weight row
    uint x_div;      // columns that share one row of x
    uint x_stride;   // floats from one row of x to the next
    uint n_expert;   // experts stacked in W
    uint e0, e1;     // the experts bound: W's binding starts at expert e0
    uint list;       // word of g where the columns in expert order start
    uint firsts;     // word of g where expert e's first place in that list is (n_expert + 2 words)
} p;
#else
// C twin: struct vkllm__pc_matmul in runtime/ops/shader_abi_matmul.h (change both together).
layout(push_constant) uniform PC {
    uint n;          // rows of x (and of y) in this dispatch
    uint m;          // weight rows in the bound chunk
    uint k;          // elements per row of x and W
    uint row_bytes;  // bytes per weight row
    uint y_stride;   // floats per row of y
    uint y_col;      // column of y written by the chunk's first weight row
} p;
#endif

layout(constant_id = 1) const uint BM = 64;  // weight rows per workgroup
layout(constant_id = 2) const uint BN = 64;  // x rows per workgroup
layout(constant_id = 3) const uint BK = 16;  // k per step (multiple of 4)
#if defined(COOPMAT)
layout(constant_id = 4) const uint TM = 16;  // cooperative matrix shape: C (TM x TN) += A (TM x TK) B (TK x TN)
layout(constant_id = 5) const uint TN = 16;
layout(constant_id = 6) const uint TK = 16;
const uint WG = gl_WorkGroupSize.x;          // four subgroups
const uint SA = BM + 8u, SB = BN + 8u;       // padded rows of the tiles (halves; 16-byte multiples)
const uint CMM = BM / (2u * TM), CMN = BN / (2u * TN);  // accumulators of a subgroup, each way

// k-major tiles, two of each: sh_a[b * BK * SA + kk * SA + r] = W[m0 + r][k0 + kk], likewise x
shared float16_t sh_a[2u * BK * SA];
shared float16_t sh_b[2u * BK * SB];
shared float sh_c[4u * TM * TN];             // one accumulator of each subgroup on its way out
#define PUT_W(b, kk, r, v) sh_a[(b) * BK * SA + (kk) * SA + (r)] = (v)
#define PUT_X(b, kk, r, v) sh_b[(b) * BK * SB + (kk) * SB + (r)] = (v)
#else
layout(constant_id = 4) const uint GM = 1;   // 4-row groups of weight rows per invocation
layout(constant_id = 5) const uint GN = 1;   // 4-row groups of x rows per invocation

const uint WG = BM / (4u * GM) * (BN / (4u * GN));  // == gl_WorkGroupSize.x (the op makes sure)
const uint QM = BM / 4u, QN = BN / 4u;              // vec4 columns of a tile's k row

// k-major tiles, two of each: sh_w[b * BK * QM + kk * QM + r / 4][r % 4] = W[m0 + r][k0 + kk]
shared SH_VEC sh_w[2u * BK * QM];
shared SH_VEC sh_x[2u * BK * QN];
#define PUT_W(b, kk, r, v) sh_w[(b) * BK * QM + (kk) * QM + (r) / 4u][(r) % 4u] = (v)
#define PUT_X(b, kk, r, v) sh_x[(b) * BK * QN + (kk) * QN + (r) / 4u][(r) % 4u] = (v)
#endif

#if defined(MATMUL_ID)
const uint NO_COL = 0xffffffffu;
shared uint sh_col[BN];  // the tile's columns (NO_COL past the expert's count)
uint id_expert, id_w0;   // the tile's expert, and its first row in the bound chunk

// This workgroup's tile: the experts' column counts walked in order, gl_WorkGroupID.y tiles of BN
// columns each skipped; the expert and its columns into id_expert, id_w0 and sh_col. false: the
// workgroup has no tile (the dispatch's y is an upper bound).
bool id_tile() {
    uint t = gl_WorkGroupID.y, last = p.e1 + (p.e0 == 0u ? 1u : 0u);
    for (uint i = p.e0; i < last; i++) {
        uint e = i < p.e1 ? i : p.n_expert;  // ids past n_expert: their group, with the chunk of e0 = 0
        uint f = g[p.firsts + e], cnt = g[p.firsts + e + 1u] - f, nt = (cnt + BN - 1u) / BN;
        if (t < nt) {
            id_expert = e;
            id_w0 = e < p.n_expert ? (e - p.e0) * p.m : 0u;
            uint c0 = t * BN, count = min(BN, cnt - c0);
            for (uint r = gl_LocalInvocationID.x; r < BN; r += WG) sh_col[r] = r < count ? g[p.list + f + c0 + r] : NO_COL;
            return true;
        }
        t -= nt;
    }
    return false;
}
#define W_OK(row) ((row) < p.m && id_expert < p.n_expert)
#define W_RB(row) ((id_w0 + (row)) * p.row_bytes)
#define X_OK(n0, r) (sh_col[r] != NO_COL)
#define X_OFF(n0, r) ((sh_col[r] / p.x_div) * p.x_stride)
#define Y_OK(r) (sh_col[r] != NO_COL)
#define Y_AT(r, col) (sh_col[r] * p.m + (col))
#else
#define W_OK(row) ((row) < p.m)
#define W_RB(row) ((row) * p.row_bytes)
#define X_OK(n0, r) ((n0) + (r) < p.n)
#define X_OFF(n0, r) (((n0) + (r)) * p.k)
#define Y_OK(r) (n0 + (r) < p.n)
#define Y_AT(r, col) ((n0 + (r)) * p.y_stride + p.y_col + (col))
#endif

// Stage step k0's tiles into tile pair b: W's rows m0 .. m0+BM-1 dequantized, x's rows
// n0 .. n0+BN-1, columns k0 .. k0+BK-1, transposed to k-major; zeros outside the matrices.
void stage(uint b, uint m0, uint n0, uint k0) {
    for (uint g = gl_LocalInvocationID.x; g < BM * (BK / 4u); g += WG) {
        uint r = g / (BK / 4u), kk = (g % (BK / 4u)) * 4u;
        uint row = m0 + r, col = k0 + kk;
        vec4 v = vec4(0.0);
        if (W_OK(row)) {
            uint rb = W_RB(row);
            if (col + 3u < p.k) {
                v = dq_get4(rb, col);
            } else {
                [[unroll]] for (uint c = 0u; c < 4u; c++)
                    if (col + c < p.k) v[c] = dq_get1(rb, col + c);
            }
        }
        [[unroll]] for (uint c = 0u; c < 4u; c++) PUT_W(b, kk + c, r, SH_T(v[c]));
    }
    for (uint g = gl_LocalInvocationID.x; g < BN * (BK / 4u); g += WG) {
        uint r = g / (BK / 4u), kk = (g % (BK / 4u)) * 4u;
        uint col = k0 + kk;
        vec4 v = vec4(0.0);
        if (X_OK(n0, r)) {
            uint o = X_OFF(n0, r) + col;
            [[unroll]] for (uint c = 0u; c < 4u; c++)
                if (col + c < p.k) v[c] = x[o + c];
        }
        [[unroll]] for (uint c = 0u; c < 4u; c++) PUT_X(b, kk + c, r, SH_T(v[c]));
    }
}

#if defined(COOPMAT)
// Where the operands lie in the shared tiles: A (r, q) at off + r + q * SA (column-major),
// B (q, c) at off + q * SB + c (row-major), an accumulator (r, c) in sh_c at off + c * TM + r.
const bool A_COLMAJOR = true, B_COLMAJOR = false, C_COLMAJOR = true;
uint c_index(uint r, uint c) { return C_COLMAJOR ? c * TM + r : r * TN + c; }

#if defined(COOPMAT_EMU)
// Emulated (tests on devices without cooperative matrices, matmul_cm_emu_<type>): an operand is
// its offset in the shared tile (the tiles do not change between the loads and the products of a
// step); the accumulators live in shared memory (each subgroup its own, each lane its own elements
// e = lane + t * SGS), summed in f32 by plain arithmetic. Everything else (tiles, offsets,
// layouts, the subgroups' quarters, the way out) is the real kernel's. Shared rather than private
// arrays: lavapipe 22.3 summed a dynamically indexed private array wrongly across the barriers
// (Mesa 25 did not), and fully unrolled it took ~10 s per pipeline to compile.
const uint SGS = WG / 4u, CM_ELEMS = TM * TN;
shared float emu_acc[4u * CMM * CMN * CM_ELEMS];
#define CM_A uint
#define CM_B uint
#define CM_ZERO(ai) emu_zero(ai)
#define CM_LOAD_A(m, off) m = (off)
#define CM_LOAD_B(m, off) m = (off)
#define CM_MMA(ai, a, b) emu_mma(ai, a, b)
#define CM_STORE(ai, off) emu_store(ai, off)
uint emu_base(uint ai) { return (gl_SubgroupID * CMM * CMN + ai) * CM_ELEMS; }
void emu_zero(uint ai) {
    for (uint e = gl_SubgroupInvocationID; e < CM_ELEMS; e += SGS) emu_acc[emu_base(ai) + e] = 0.0;
}
void emu_mma(uint ai, uint a, uint b) {
    for (uint e = gl_SubgroupInvocationID; e < CM_ELEMS; e += SGS) {
        uint r = e % TM, c = e / TM;
        float sum = 0.0;
        for (uint q = 0u; q < TK; q++)
            sum += float(sh_a[a + (A_COLMAJOR ? q * SA + r : r * SA + q)]) *
                   float(sh_b[b + (B_COLMAJOR ? c * SB + q : q * SB + c)]);
        emu_acc[emu_base(ai) + e] += sum;
    }
}
void emu_store(uint ai, uint off) {
    for (uint e = gl_SubgroupInvocationID; e < CM_ELEMS; e += SGS)
        sh_c[off + c_index(e % TM, e / TM)] = emu_acc[emu_base(ai) + e];
}
#else
#define CM_A fcoopmatNV<16, 3, TM, TK>   // scope 3: subgroup
#define CM_B fcoopmatNV<16, 3, TK, TN>
#define CM_ZERO(ai) acc[ai] = fcoopmatNV<32, 3, TM, TN>(0.0)
#define CM_LOAD_A(m, off) coopMatLoadNV(m, sh_a, off, SA, A_COLMAJOR)
#define CM_LOAD_B(m, off) coopMatLoadNV(m, sh_b, off, SB, B_COLMAJOR)
#define CM_MMA(ai, a, b) acc[ai] = coopMatMulAddNV(a, b, acc[ai])
#define CM_STORE(ai, off) coopMatStoreNV(acc[ai], sh_c, off, C_COLMAJOR ? TM : TN, C_COLMAJOR)
#endif

void main() {
    uint s = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    uint wm = (s % 2u) * (BM / 2u), wn = (s / 2u) * (BN / 2u);  // this subgroup's quarter of the tile
    uint m0 = gl_WorkGroupID.x * BM;
#if defined(MATMUL_ID)
    uint n0 = 0u;
    if (!id_tile()) return;
    barrier();
#else
    uint n0 = gl_WorkGroupID.y * BN;
#endif

    // accumulator j * CMM + i: y^T rows m0 + wm + i * TM .., columns n0 + wn + j * TN ..
#if !defined(COOPMAT_EMU)
    fcoopmatNV<32, 3, TM, TN> acc[CMM * CMN];
#endif
    [[unroll]] for (uint i = 0u; i < CMM * CMN; i++) CM_ZERO(i);

    uint steps = (p.k + BK - 1u) / BK;
    stage(0u, m0, n0, 0u);
    barrier();
    for (uint t = 0u; t < steps; t++) {
        uint b = t & 1u;
        if (t + 1u < steps) stage(b ^ 1u, m0, n0, (t + 1u) * BK);
        for (uint kk = 0u; kk < BK; kk += TK) {
            CM_A ma[CMM];
            CM_B mb;
            [[unroll]] for (uint i = 0u; i < CMM; i++) CM_LOAD_A(ma[i], b * BK * SA + kk * SA + wm + i * TM);
            [[unroll]] for (uint j = 0u; j < CMN; j++) {
                CM_LOAD_B(mb, b * BK * SB + kk * SB + wn + j * TN);
                [[unroll]] for (uint i = 0u; i < CMM; i++) CM_MMA(j * CMM + i, ma[i], mb);
            }
        }
        barrier();
    }

    // Out through shared memory, so that the edges of y are masked and neighbouring lanes write
    // neighbouring floats (element e: row e % TM, column e / TM of the accumulator).
    uint c0 = s * TM * TN;
    [[unroll]] for (uint j = 0u; j < CMN; j++)
        [[unroll]] for (uint i = 0u; i < CMM; i++) {
            CM_STORE(j * CMM + i, c0);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < TM * TN; e += gl_SubgroupSize) {
                uint col = m0 + wm + i * TM + e % TM, r = wn + j * TN + e / TM;
                if (col < p.m && Y_OK(r)) y[Y_AT(r, col)] = sh_c[c0 + c_index(e % TM, e / TM)];
            }
            subgroupBarrier();
        }
}
#else
void main() {
    const uint tm_count = BM / (4u * GM);
    uint tm = gl_LocalInvocationID.x % tm_count;  // weight rows g * BM / GM + tm * 4 .. + 3
    uint tn = gl_LocalInvocationID.x / tm_count;  // x rows h * BN / GN + tn * 4 .. + 3
    uint m0 = gl_WorkGroupID.x * BM;
#if defined(MATMUL_ID)
    uint n0 = 0u;
    if (!id_tile()) return;
    barrier();
#else
    uint n0 = gl_WorkGroupID.y * BN;
#endif

    // acc[(g * GN + h) * 4 + j][c] = y[n0 + h * BN / GN + tn * 4 + j][m0 + g * BM / GM + tm * 4 + c]
    vec4 acc[GM * GN * 4u];
    [[unroll]] for (uint i = 0u; i < GM * GN * 4u; i++) acc[i] = vec4(0.0);

    uint steps = (p.k + BK - 1u) / BK;
    stage(0u, m0, n0, 0u);
    barrier();
    for (uint t = 0u; t < steps; t++) {
        uint b = t & 1u;
        if (t + 1u < steps) stage(b ^ 1u, m0, n0, (t + 1u) * BK);
        uint wb = b * BK * QM + tm, xb = b * BK * QN + tn;
        for (uint kk = 0u; kk < BK; kk++) {
            vec4 a[GM], v[GN];
            [[unroll]] for (uint g = 0u; g < GM; g++) a[g] = vec4(sh_w[wb + kk * QM + g * (QM / GM)]);
            [[unroll]] for (uint h = 0u; h < GN; h++) v[h] = vec4(sh_x[xb + kk * QN + h * (QN / GN)]);
            [[unroll]] for (uint g = 0u; g < GM; g++)
                [[unroll]] for (uint h = 0u; h < GN; h++) {
                    uint o = (g * GN + h) * 4u;
                    acc[o] += a[g] * v[h].x;
                    acc[o + 1u] += a[g] * v[h].y;
                    acc[o + 2u] += a[g] * v[h].z;
                    acc[o + 3u] += a[g] * v[h].w;
                }
        }
        barrier();
    }

    [[unroll]] for (uint g = 0u; g < GM; g++)
        [[unroll]] for (uint h = 0u; h < GN; h++)
            [[unroll]] for (uint j = 0u; j < 4u; j++) {
                uint r = h * (BN / GN) + tn * 4u + j;
                if (!Y_OK(r)) continue;
                vec4 s = acc[(g * GN + h) * 4u + j];
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    uint col = m0 + g * (BM / GM) + tm * 4u + c;
                    if (col < p.m) y[Y_AT(r, col)] = s[c];
                }
            }
}
#endif
