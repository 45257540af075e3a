# Shaders: every entry of VKLLM_SHADER_TABLE becomes one SPIR-V module, compiled with
# glslangValidator (Vulkan 1.1 target: SPIR-V 1.3), checked with spirv-val and embedded in libvkllm as
# `const uint32_t vkllm_spv_<name>[]`. Type variants are -D defines in this one table.
#
# Columns: name, source, defines (comma separated, "-" for none), number of bindings,
# push-constant block (struct vkllm__pc_<block> in runtime/ops/shader_abi.h), and optionally the kind of
# each binding, one letter per binding: s storage buffer, u uniform buffer (std140), t uniform
# texel buffer of uvec4 (R32G32B32A32_UINT), f uniform texel buffer of float (R32_SFLOAT). Without
# that column every binding is a storage buffer.
#
#   name                source              defines      bindings  push constants
set(VKLLM_SHADER_TABLE
  "add_f32              elementwise.comp    OP_ADD=1     3         elementwise"
  "mul_f32              elementwise.comp    OP_MUL=1     3         elementwise"
  "rmsnorm_f32          rmsnorm.comp        -            3         rows"
  "add_rmsnorm_f32      rmsnorm.comp        ADD=1        4         rows"
  "softmax_f32          softmax.comp        -            2         rows"
  "silu_mul_f32         silu_mul.comp       -            3         elementwise"
  "gelu_mul_f32         silu_mul.comp       GELU=1       3         elementwise"
  "swiglu_oai_f32       silu_mul.comp       SWIGLU_OAI=1 3         elementwise"
  "softcap_f32          elementwise.comp    OP_SOFTCAP=1 3         elementwise"
)
# Each op family keeps its variants in shaders/table_<family>.cmake, which appends rows in the
# same format to VKLLM_SHADER_TABLE (one writer per file).
file(GLOB _vkllm_shader_tables CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/shaders/table_*.cmake)
foreach(t IN LISTS _vkllm_shader_tables)
  include(${t})
endforeach()

# Rows whose defines include COOPMAT=1 or ATTN_CM=1 are written in GL_NV_cooperative_matrix (what glslang 12
# compiles), checked with spirv-val in that form, then rewritten to SPV_KHR_cooperative_matrix by
# vkllm-spv-coopmat (shaders/coopmat/, a build tool run on the build machine); spirv-val here does
# not know the KHR extension, so tests/test_spv_coopmat.c checks the rewrite's output.
add_executable(vkllm-spv-coopmat ${CMAKE_CURRENT_SOURCE_DIR}/shaders/coopmat/main.c
                                 ${CMAKE_CURRENT_SOURCE_DIR}/shaders/coopmat/spv_coopmat.c)

set(VKLLM_SHADER_DIR ${CMAKE_CURRENT_SOURCE_DIR}/shaders)
set(VKLLM_SHADER_OUT ${CMAKE_CURRENT_BINARY_DIR}/shaders)
set(VKLLM_SHADER_INCLUDE_DIR ${VKLLM_SHADER_OUT})
file(MAKE_DIRECTORY ${VKLLM_SHADER_OUT})
# Every shader depends on every include, so editing a shared header rebuilds them all.
file(GLOB VKLLM_SHADER_INCLUDES CONFIGURE_DEPENDS ${VKLLM_SHADER_DIR}/include/*.glsl)

set(VKLLM_SHADER_SOURCES "")
set(_enum "")
set(_table "")
set(_decls "")
foreach(entry IN LISTS VKLLM_SHADER_TABLE)
  string(REGEX REPLACE "[ \t]+" ";" fields "${entry}")
  list(GET fields 0 name)
  list(GET fields 1 src)
  list(GET fields 2 defs)
  list(GET fields 3 nbind)
  list(GET fields 4 pcname)
  list(LENGTH fields nfields)
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "shader ${name}: names are lower-case snake_case (op_variant_type, e.g. matvec_q4_k)")
  endif()
  set(kinds "")
  if(nfields GREATER 5)
    list(GET fields 5 kinds)
    string(LENGTH "${kinds}" nkinds)
    if(NOT nkinds EQUAL nbind OR NOT kinds MATCHES "^[sutf]+$")
      message(FATAL_ERROR "shader ${name}: binding kinds '${kinds}' must be ${nbind} letters of s, u, t, f")
    endif()
  endif()
  set(defargs "")
  if(NOT defs STREQUAL "-")
    string(REPLACE "," ";" deflist "${defs}")
    foreach(d IN LISTS deflist)
      list(APPEND defargs "-D${d}")
    endforeach()
  endif()
  set(spv ${VKLLM_SHADER_OUT}/${name}.spv)
  set(csrc ${VKLLM_SHADER_OUT}/${name}.spv.c)
  set(nv "")
  if(defargs MATCHES "(^|;)-D(COOPMAT|ATTN_CM)=1(;|$)")
    set(nv ${VKLLM_SHADER_OUT}/${name}.nv.spv)
    set(compile_steps
      COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.1 --quiet
              -I${VKLLM_SHADER_DIR}/include ${defargs} -o ${nv} ${VKLLM_SHADER_DIR}/${src}
      COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${nv}
      COMMAND vkllm-spv-coopmat ${nv} ${spv})
    set(tool_dep vkllm-spv-coopmat)
  else()
    set(compile_steps
      COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.1 --quiet
              -I${VKLLM_SHADER_DIR}/include ${defargs} -o ${spv} ${VKLLM_SHADER_DIR}/${src}
      COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${spv})
    set(tool_dep "")
  endif()
  if(VKLLM_SPV_FROM)
    # SPIR-V does not depend on the C flags: a second build of the same sources (the sanitizer
    # build of `make test`) takes the first's modules instead of compiling them again
    set(compile_steps COMMAND ${CMAKE_COMMAND} -E copy ${VKLLM_SPV_FROM}/${name}.spv ${spv})
    set(tool_dep ${VKLLM_SPV_FROM}/${name}.spv)
    if(nv) # the module before the cooperative-matrix rewrite too (test_coopmat reads it)
      list(APPEND compile_steps COMMAND ${CMAKE_COMMAND} -E copy ${VKLLM_SPV_FROM}/${name}.nv.spv ${nv})
      list(APPEND tool_dep ${VKLLM_SPV_FROM}/${name}.nv.spv)
    endif()
  endif()
  add_custom_command(
    OUTPUT ${csrc}
    ${compile_steps}
    COMMAND ${CMAKE_COMMAND} -DSPV=${spv} -DOUT=${csrc} -DNAME=${name}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPENDS ${VKLLM_SHADER_DIR}/${src} ${VKLLM_SHADER_INCLUDES}
            ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake ${tool_dep}
    COMMENT "Compiling shader ${name} (${src} ${defs})"
    VERBATIM)
  list(APPEND VKLLM_SHADER_SOURCES ${csrc})
  string(TOUPPER ${name} uname)
  string(APPEND _enum "    VKLLM__SHADER_${uname},\n")
  string(APPEND _decls "extern const uint32_t vkllm_spv_${name}[];\nextern const size_t vkllm_spv_${name}_size;\n")
  string(APPEND _table "    {\"${name}\", vkllm_spv_${name}, &vkllm_spv_${name}_size, ${nbind}, sizeof(struct vkllm__pc_${pcname}), \"${kinds}\"},\n")
endforeach()

# The registry: an enum of shader ids and a table from id to SPIR-V.
set(_hdr "/* Generated by shaders/shaders.cmake from VKLLM_SHADER_TABLE. Do not edit. */
#ifndef VKLLM_SHADERS_H
#define VKLLM_SHADERS_H
#include <stddef.h>
#include <stdint.h>
enum vkllm__shader_id {
${_enum}    VKLLM__SHADER_COUNT_
};
struct vkllm__shader_blob {
    const char *name;
    const uint32_t *code;
    const size_t *size;  /* bytes */
    uint32_t n_bindings; /* buffers at bindings 0..n-1 of set 0 */
    uint32_t push_size;  /* bytes of the push-constant block (its C twin in shader_abi.h) */
    const char *kinds;   /* \"\": all storage buffers; else one letter per binding (s, u, t, f) */
};
extern const struct vkllm__shader_blob vkllm__shader_blobs[VKLLM__SHADER_COUNT_];
#endif
")
set(_reg "/* Generated by shaders/shaders.cmake from VKLLM_SHADER_TABLE. Do not edit. */
#include \"vkllm_shaders.h\"
#include \"shader_abi.h\"
${_decls}
const struct vkllm__shader_blob vkllm__shader_blobs[VKLLM__SHADER_COUNT_] = {
${_table}};
")
file(CONFIGURE OUTPUT ${VKLLM_SHADER_OUT}/vkllm_shaders.h CONTENT "${_hdr}")
file(CONFIGURE OUTPUT ${VKLLM_SHADER_OUT}/vkllm_shaders.c CONTENT "${_reg}")
list(APPEND VKLLM_SHADER_SOURCES ${VKLLM_SHADER_OUT}/vkllm_shaders.c)
