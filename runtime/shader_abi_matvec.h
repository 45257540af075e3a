/* shader_abi_matvec.h - C twins of the matvec shaders' push-constant blocks (see shader_abi.h). */
#ifndef VKLLM_SHADER_ABI_MATVEC_H
#define VKLLM_SHADER_ABI_MATVEC_H

#include <stdint.h>

#endif
