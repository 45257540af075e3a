#version 450
#extension GL_GOOGLE_include_directive : require
// repack.comp - weight rows rearranged in place into the 16-byte layout the GPU readers take
// (DQ_RP in dequant.glsl; the layout and its host twin: runtime/base/quant.c, vkllm__rp_pack): in
// each group of 8 blocks, each field of the 8 blocks together, field after field. Groups keep
// their bytes, so rows, chunks and experts keep their offsets. One workgroup per group at a time:
// the group's words into shared memory, then each new word gathered byte by byte from them. Run
// once, at load; its speed does not matter.
#include "common.glsl"

layout(std430, binding = 0) buffer W { uint w[]; };  // whole groups, from the binding's start

// C twin: struct vkllm__pc_repack (runtime/ops/shader_abi_matvec.h)
layout(push_constant) uniform PC {
    uint n_groups;     // groups in the binding
    uint group_words;  // 2 * block_bytes (a group is 8 blocks: a multiple of 16 bytes)
    uint block_bytes;
    uint n_fields;     // 1 .. 3
    uvec4 off;         // field f: bytes off[f] .. off[f] + len[f] - 1 of each block, in the new order
    uvec4 len;
} p;

shared uint sg[420];  // the largest group: Q6_K's 8 x 210 bytes

// The byte of the group in its old place that goes to byte n of the new group.
uint old_byte(uint n) {
    uint start = 0u, o = 0u;
    for (uint f = 0u; f < p.n_fields; f++) {
        uint fl = 8u * p.len[f];
        if (n < start + fl) {
            uint rel = n - start;
            o = (rel / p.len[f]) * p.block_bytes + p.off[f] + rel % p.len[f];
            break;
        }
        start += fl;
    }
    return (sg[o >> 2] >> (8u * (o & 3u))) & 0xffu;
}

void main() {
    uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y, t = gl_LocalInvocationID.x;
    for (uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; g < p.n_groups; g += nwg) {
        uint base = g * p.group_words;
        for (uint i = t; i < p.group_words; i += gl_WorkGroupSize.x) sg[i] = w[base + i];
        barrier();
        for (uint i = t; i < p.group_words; i += gl_WorkGroupSize.x)
            w[base + i] = old_byte(4u * i) | old_byte(4u * i + 1u) << 8 | old_byte(4u * i + 2u) << 16 |
                          old_byte(4u * i + 3u) << 24;
        barrier();  // sg is reused by the next group
    }
}
