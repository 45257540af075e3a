/* shader_abi_attn.h - C twins of the attn shaders' push-constant blocks (see shader_abi.h). */
#ifndef VKLLM_SHADER_ABI_ATTN_H
#define VKLLM_SHADER_ABI_ATTN_H

#include <stdint.h>

#endif
