#version 450
#extension GL_GOOGLE_include_directive : require
// repack.comp - weight rows into the 16-byte layout the GPU readers take (DQ_RP in dequant.glsl; the
// layout and its host twin: runtime/base/quant.c, vkllm__rp_pack): each row cut into groups of 8
// blocks (the last may be short), each field of a group's blocks together, field after field. From
// the file's rows in S (a temporary buffer) into the layout's in D, one invocation per word of D:
// where its 4 bytes are consecutive bytes of one field of one block (all but the scales), two word
// loads and a shift; else byte by byte. Runs once, at load.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer S { uint s[]; };   // the file's rows (whole words)
layout(std430, binding = 1) writeonly buffer D { uint d[]; };  // the layout's rows

// C twin: struct vkllm__pc_repack (runtime/ops/shader_abi_matvec.h)
layout(push_constant) uniform PC {
    uint n_words;        // words of D in this dispatch
    uint blocks;         // blocks per row
    uint block_bytes;
    uint src_row_bytes;
    uint dst_row_bytes;  // a multiple of 16
    uint n_fields;       // 1 .. 3
    uint pad0_, pad1_;
    uvec4 off;           // field f: bytes off[f] .. off[f] + len[f] - 1 of each block, in the new order
    uvec4 len;
    uvec4 full;          // 1: 8 places in a short group too (zeros past its blocks)
} p;

// Byte n of a row in the layout: its byte of the file's row (the row's first byte is 0), or ~0u for
// a short group's padding; run: how many bytes from there on belong to the same field of the same block.
uint src_byte(uint n, out uint run) {
    uint gb = 8u * p.block_bytes, g = n / gb, m = n - g * gb, nb = min(8u, p.blocks - 8u * g), start = 0u;
    run = 0u;
    for (uint f = 0u; f < p.n_fields; f++) {
        uint fl = (p.full[f] != 0u ? 8u : nb) * p.len[f];
        if (m < start + fl) {
            uint rel = m - start, b = rel / p.len[f], e = rel % p.len[f];
            if (b >= nb) return ~0u;
            run = p.len[f] - e;
            return g * gb + b * p.block_bytes + p.off[f] + e;
        }
        start += fl;
    }
    return ~0u;
}

uint s_byte(uint o) { return (s[o >> 2] >> (8u * (o & 3u))) & 0xffu; }

void main() {
    uint w = global_index_2d();
    if (w >= p.n_words) return;
    uint rw = p.dst_row_bytes / 4u, row = w / rw, n = 4u * (w - row * rw), base = row * p.src_row_bytes, run;
    uint o = src_byte(n, run);
    uint v = 0u;
    if (o != ~0u && run >= 4u) {
        uint a = base + o, sh = 8u * (a & 3u);
        v = sh == 0u ? s[a >> 2] : (s[a >> 2] >> sh) | (s[(a >> 2) + 1u] << (32u - sh));
    } else {
        for (uint c = 0u; c < 4u; c++) {
            uint oc = src_byte(n + c, run);
            if (oc != ~0u) v |= s_byte(base + oc) << (8u * c);
        }
    }
    d[w] = v;
}
