#version 450
#extension GL_GOOGLE_include_directive : require
// get_rows.comp - embedding lookup: o (n, k) f32 = rows ids[0..n) of W, W in its GGUF encoding
// (one WTYPE_* define per variant, see dequant.glsl). One invocation converts 4 elements of one
// output row. W may be bound in row chunks (one dispatch each): a dispatch writes only the rows
// whose id falls in its chunk [row0, row0 + nrows); the last one also writes zeros for ids past
// the end of W.
#include "common.glsl"
#define DQ_BINDING 0
#include "dequant.glsl"

layout(std430, binding = 1) readonly buffer Ids { uint ids[]; };  // (n,)
layout(std430, binding = 2) writeonly buffer O { float o[]; };    // (n, k)

// C twin: struct vkllm__pc_get_rows (runtime/ops/shader_abi_matvec.h)
layout(push_constant) uniform PC {
    uint k;          // elements per row
    uint row_bytes;  // bytes per row
    uint n;          // ids
    uint row0;       // first row of W in the binding
    uint nrows;      // rows in the binding
    uint last;       // 1: the last chunk (ids >= row0 + nrows give zero rows)
} p;

void main() {
    uint g = global_index_2d();
    uint per_row = (p.k + 3u) / 4u;
    uint i = g / per_row;  // which id
    if (i >= p.n) return;
    uint j = (g % per_row) * 4u;
    uint id = ids[i];
    bool mine = id >= p.row0 && id - p.row0 < p.nrows;
    if (!mine && !(p.last != 0u && id >= p.row0 + p.nrows)) return;
    uint ob = i * p.k + j;
    if (!mine) {
        for (uint e = 0u; e < 4u && j + e < p.k; e++) o[ob + e] = 0.0;
        return;
    }
    uint rb = (id - p.row0) * p.row_bytes;
    if (j + 4u <= p.k) {
        vec4 v = dq_get4(rb, j);
        o[ob] = v.x;
        o[ob + 1u] = v.y;
        o[ob + 2u] = v.z;
        o[ob + 3u] = v.w;
    } else {
        for (uint e = 0u; j + e < p.k; e++) o[ob + e] = dq_get1(rb, j + e);
    }
}
