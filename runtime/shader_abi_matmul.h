/* shader_abi_matmul.h - C twins of the matmul shaders' push-constant blocks (see shader_abi.h). */
#ifndef VKLLM_SHADER_ABI_MATMUL_H
#define VKLLM_SHADER_ABI_MATMUL_H

#include <stdint.h>

#endif
