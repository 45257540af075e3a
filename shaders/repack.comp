#version 450
#extension GL_GOOGLE_include_directive : require
// repack.comp - weight rows rearranged into the 16-byte layout the GPU readers take (DQ_RP in
// dequant.glsl; the layout and its host twin: runtime/base/quant.c, vkllm__rp_pack): each row cut
// into groups of 8 blocks (the last may be short), each field of a group's blocks together, field
// after field. In place (S and D the same rows) where rows keep their size; otherwise from the
// file's rows in S into longer ones in D. One workgroup per group at a time: the group's bytes into
// shared memory, then each new word gathered byte by byte from them. Run once, at load; its speed
// does not matter.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer S { uint s[]; };   // the file's rows (whole words)
layout(std430, binding = 1) writeonly buffer D { uint d[]; };  // the layout's rows (16-byte aligned)

// C twin: struct vkllm__pc_repack (runtime/ops/shader_abi_matvec.h)
layout(push_constant) uniform PC {
    uint n_units;         // groups in this dispatch
    uint groups_per_row;  // ceil(blocks / 8)
    uint blocks;          // blocks per row
    uint block_bytes;
    uint src_row_bytes;
    uint dst_row_bytes;
    uint n_fields;        // 1 .. 3
    uint pad_;
    uvec4 off;            // field f: bytes off[f] .. off[f] + len[f] - 1 of each block, in the new order
    uvec4 len;
    uvec4 full;           // 1: 8 places in a short group too (zeros after its blocks)
} p;

shared uint sg[421];  // the largest group: Q6_K's 8 x 210 bytes, 2 bytes into a word

// Byte n of the new group of nb blocks, from the old one at byte lead of sg.
uint new_byte(uint n, uint nb, uint lead) {
    uint start = 0u;
    for (uint f = 0u; f < p.n_fields; f++) {
        uint fl = (p.full[f] != 0u ? 8u : nb) * p.len[f];
        if (n < start + fl) {
            uint rel = n - start, b = rel / p.len[f];
            if (b >= nb) return 0u;  // a full field's places past a short group's blocks
            uint o = lead + b * p.block_bytes + p.off[f] + rel % p.len[f];
            return (sg[o >> 2] >> (8u * (o & 3u))) & 0xffu;
        }
        start += fl;
    }
    return 0u;
}

void main() {
    uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y, t = gl_LocalInvocationID.x;
    for (uint u = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; u < p.n_units; u += nwg) {
        uint row = u / p.groups_per_row, g = u % p.groups_per_row;
        uint nb = min(8u, p.blocks - 8u * g);
        uint sb = row * p.src_row_bytes + g * 8u * p.block_bytes, lead = sb & 3u;
        uint nsw = (lead + nb * p.block_bytes + 3u) >> 2;
        for (uint i = t; i < nsw; i += gl_WorkGroupSize.x) sg[i] = s[(sb >> 2) + i];
        barrier();
        uint nbytes = 0u;
        for (uint f = 0u; f < p.n_fields; f++) nbytes += (p.full[f] != 0u ? 8u : nb) * p.len[f];
        uint db = (row * p.dst_row_bytes + g * 8u * p.block_bytes) >> 2;
        for (uint i = t; i < nbytes / 4u; i += gl_WorkGroupSize.x)
            d[db + i] = new_byte(4u * i, nb, lead) | new_byte(4u * i + 1u, nb, lead) << 8 |
                        new_byte(4u * i + 2u, nb, lead) << 16 | new_byte(4u * i + 3u, nb, lead) << 24;
        barrier();  // sg is reused by the next group
    }
}
