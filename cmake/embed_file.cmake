# cmake -DIN=file -DOUT=out.c -DNAME=name -P embed_file.cmake
# Writes `const unsigned char <name>[]` (the file's bytes and a NUL after them) and
# `const size_t <name>_size` (the bytes without the NUL).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR nbytes "${n} / 2")
string(REGEX REPLACE "(..)" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n    " bytes "${bytes}")
get_filename_component(base ${IN} NAME)
file(WRITE ${OUT} "/* Generated from ${base}. Do not edit. */
#include <stddef.h>
const unsigned char ${NAME}[] = {
    ${bytes}0x00
};
const size_t ${NAME}_size = ${nbytes};
")
