# cmake -DSPV=in.spv -DOUT=out.c -DNAME=name -P embed_spirv.cmake
# Writes `const uint32_t vkllm_spv_<name>[]` (little-endian words) and its size in bytes.
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(NOT rem EQUAL 0 OR n EQUAL 0)
  message(FATAL_ERROR "${SPV}: not a SPIR-V module (size not a multiple of 4)")
endif()
math(EXPR nbytes "${n} / 2")
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1," words "${hex}")
string(REGEX REPLACE "(0x........,0x........,0x........,0x........,0x........,0x........,0x........,0x........,)" "\\1\n    " words "${words}")
file(WRITE ${OUT} "/* Generated from ${NAME}.spv. Do not edit. */
#include <stddef.h>
#include <stdint.h>
const uint32_t vkllm_spv_${NAME}[] = {
    ${words}
};
const size_t vkllm_spv_${NAME}_size = ${nbytes};
")
