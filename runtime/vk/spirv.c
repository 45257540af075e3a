/* spirv.c - what a SPIR-V module does with each buffer of descriptor set 0: reads it, writes it, or
 * both, read from the module's own decorations (GLSL's readonly / writeonly on a buffer block
 * become NonWritable / NonReadable on its members or on the variable). The command recorder
 * (command.c) puts a barrier only before a dispatch that reads what an earlier one since the last
 * barrier wrote, or writes what one read or wrote. */
#include <string.h>

#include "vk.h"

/* SPIR-V numbers used here (SPIR-V specification, section 3). */
enum {
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    DEC_BLOCK = 2,
    DEC_NON_WRITABLE = 24,
    DEC_NON_READABLE = 25,
    DEC_BINDING = 33,
    DEC_DESCRIPTOR_SET = 34,
    SC_UNIFORM_CONSTANT = 0,
    SC_UNIFORM = 2,
    SC_STORAGE_BUFFER = 12,
};

/* What is known of one id. */
struct id_info {
    uint32_t binding, set; /* UINT32_MAX: not decorated */
    uint8_t non_writable, non_readable, block;
    uint32_t members;                /* OpTypeStruct: member count */
    uint32_t members_nw, members_nr; /* members decorated NonWritable / NonReadable */
    uint32_t pointee, storage;       /* OpTypePointer: pointee type, storage class */
    uint32_t var_type;               /* OpVariable: its pointer type (0: not a variable) */
    uint32_t var_storage;
};

vkllm_status vkllm__spirv_binding_access(const uint32_t *code, size_t bytes, uint32_t n_bindings, uint8_t *access) {
    memset(access, 0, n_bindings);
    if (!code || bytes < 20 || bytes % 4 || code[0] != 0x07230203u)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "SPIR-V: not a module (%zu bytes)", bytes);
    size_t n = bytes / 4;
    uint32_t bound = code[3];
    if (bound == 0 || bound > (1u << 22))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "SPIR-V: id bound %u out of range", bound);
    struct id_info *ids = vkllm__calloc(bound, sizeof *ids);
    if (!ids) return vkllm__err(VKLLM_STATUS_OOM, "out of host memory");
    for (uint32_t i = 0; i < bound; i++) ids[i].binding = ids[i].set = UINT32_MAX;
    vkllm_status st = VKLLM_STATUS_OK;
    for (size_t w = 5; w < n;) {
        uint32_t op = code[w] & 0xffffu, len = code[w] >> 16;
        if (len == 0 || len > n - w) {
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "SPIR-V: instruction at word %zu overruns the module", w);
            goto done;
        }
        const uint32_t *a = code + w + 1; /* operands */
        uint32_t na = len - 1;
        if (na >= 1 && a[0] >= bound && (op == OP_DECORATE || op == OP_MEMBER_DECORATE)) {
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "SPIR-V: id %u out of bound %u", a[0], bound);
            goto done;
        }
        if (op == OP_DECORATE && na >= 2) {
            struct id_info *t = &ids[a[0]];
            if (a[1] == DEC_BINDING && na >= 3) t->binding = a[2];
            if (a[1] == DEC_DESCRIPTOR_SET && na >= 3) t->set = a[2];
            if (a[1] == DEC_NON_WRITABLE) t->non_writable = 1;
            if (a[1] == DEC_NON_READABLE) t->non_readable = 1;
            if (a[1] == DEC_BLOCK) t->block = 1;
        } else if (op == OP_MEMBER_DECORATE && na >= 3) {
            if (a[2] == DEC_NON_WRITABLE) ids[a[0]].members_nw++;
            if (a[2] == DEC_NON_READABLE) ids[a[0]].members_nr++;
        } else if (op == OP_TYPE_STRUCT && na >= 1 && a[0] < bound) {
            ids[a[0]].members = na - 1;
        } else if (op == OP_TYPE_POINTER && na >= 3 && a[0] < bound) {
            ids[a[0]].storage = a[1];
            ids[a[0]].pointee = a[2];
        } else if (op == OP_VARIABLE && na >= 3 && a[1] < bound) {
            ids[a[1]].var_type = a[0];
            ids[a[1]].var_storage = a[2];
        }
        w += len;
    }
    for (uint32_t v = 0; v < bound; v++) {
        const struct id_info *var = &ids[v];
        if (!var->var_type || var->set != 0 || var->binding >= n_bindings) continue;
        if (var->var_type >= bound || ids[var->var_type].pointee >= bound) {
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "SPIR-V: variable %u has a bad type", v);
            goto done;
        }
        const struct id_info *s = &ids[ids[var->var_type].pointee];
        uint8_t acc = VKLLM__ACCESS_READ;
        /* storage buffers: SPIR-V 1.3's StorageBuffer class, or the older Uniform + BufferBlock
         * (a Uniform block decorated Block is a uniform buffer: read only); texel buffers and
         * other UniformConstant variables here are uniform texel buffers: read only */
        int storage = var->var_storage == SC_STORAGE_BUFFER || (var->var_storage == SC_UNIFORM && !s->block);
        if (storage) {
            int ro = var->non_writable || (s->members && s->members_nw >= s->members);
            int wo = var->non_readable || (s->members && s->members_nr >= s->members);
            acc = (uint8_t)((wo ? 0 : VKLLM__ACCESS_READ) | (ro ? 0 : VKLLM__ACCESS_WRITE));
        }
        access[var->binding] |= acc;
    }
done:
    vkllm__free(ids);
    return st;
}
