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
# Each module becomes C through vkllm-spv-embed (shaders/embed/, a build tool run on the build
# machine).
add_executable(vkllm-spv-embed ${CMAKE_CURRENT_SOURCE_DIR}/shaders/embed/main.c)
set(_vkllm_build_tools vkllm-spv-coopmat vkllm-spv-embed)

# The variants of one source compile in one vkllm-glslc process (shaders/glslc/: glslang's C
# interface, from Debian's glslang-dev), byte for byte what glslangValidator makes: glslang sets up
# its built-in symbol tables once instead of once a module (~0.2 s each: 35-40 s of a clean build on
# 2 cores). Without glslang-dev, in a cross build (the tool would be the target's) or with
# -DVKLLM_SHADER_BATCH=OFF, each module has a glslangValidator process of its own.
option(VKLLM_SHADER_BATCH "Compile the shader variants of a source in one process (glslang-dev)" ON)
set(VKLLM_GLSLC OFF)
if(VKLLM_SHADER_BATCH AND NOT CMAKE_CROSSCOMPILING AND NOT VKLLM_SPV_FROM)
  find_path(VKLLM_GLSLANG_INCLUDE glslang/Include/glslang_c_interface.h)
  set(_glslc_libs "")
  set(_glslc_found ${VKLLM_GLSLANG_INCLUDE})
  # (static libraries, in link order: glslang-dev 12 ships no usable pkg-config file)
  foreach(lib glslang SPIRV glslang-default-resource-limits MachineIndependent OGLCompiler GenericCodeGen
              OSDependent SPIRV-Tools-opt SPIRV-Tools)
    find_library(VKLLM_GLSLC_LIB_${lib} NAMES ${lib})
    if(NOT VKLLM_GLSLC_LIB_${lib})
      set(_glslc_found FALSE)
    endif()
    list(APPEND _glslc_libs ${VKLLM_GLSLC_LIB_${lib}})
  endforeach()
  if(_glslc_found)
    add_executable(vkllm-glslc ${CMAKE_CURRENT_SOURCE_DIR}/shaders/glslc/main.c)
    target_include_directories(vkllm-glslc PRIVATE ${VKLLM_GLSLANG_INCLUDE})
    target_link_libraries(vkllm-glslc PRIVATE ${_glslc_libs} stdc++ Threads::Threads m)
    list(APPEND _vkllm_build_tools vkllm-glslc)
    set(VKLLM_GLSLC ON)
  else()
    message(STATUS "glslang-dev not found: each shader module is compiled by a glslangValidator of its own "
                   "(scripts/install-deps.sh installs it)")
  endif()
endif()
# The build tools are not instrumented in the sanitizer build: they only run there.
if(VKLLM_SANITIZE)
  foreach(tool ${_vkllm_build_tools})
    target_compile_options(${tool} PRIVATE -fno-sanitize=all)
    target_link_options(${tool} PRIVATE -fno-sanitize=all)
  endforeach()
endif()

set(VKLLM_SHADER_DIR ${CMAKE_CURRENT_SOURCE_DIR}/shaders)
set(VKLLM_SHADER_OUT ${CMAKE_CURRENT_BINARY_DIR}/shaders)
# where the build's .spv modules are (test_coopmat reads them)
if(VKLLM_SPV_FROM)
  set(VKLLM_SHADER_SPV_DIR ${VKLLM_SPV_FROM})
else()
  set(VKLLM_SHADER_SPV_DIR ${VKLLM_SHADER_OUT})
endif()
set(VKLLM_SHADER_INCLUDE_DIR ${VKLLM_SHADER_OUT})
file(MAKE_DIRECTORY ${VKLLM_SHADER_OUT})
# Every shader depends on every include, so editing a shared header rebuilds them all.
file(GLOB VKLLM_SHADER_INCLUDES CONFIGURE_DEPENDS ${VKLLM_SHADER_DIR}/include/*.glsl)

set(VKLLM_SHADER_SOURCES "")
if(VKLLM_GLSLC)
  set(_shader_step "Checking and embedding")
else()
  set(_shader_step "Compiling")
endif()
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
  # the module glslang writes (the GL_NV_cooperative_matrix form where the rewrite follows), and
  # what checks it and makes the embedded module of it
  if(defargs MATCHES "(^|;)-D(COOPMAT|ATTN_CM)=1(;|$)")
    set(module ${VKLLM_SHADER_OUT}/${name}.nv.spv)
    set(check_steps COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${module} COMMAND vkllm-spv-coopmat ${module} ${spv})
    set(tool_dep vkllm-spv-coopmat)
  else()
    set(module ${spv})
    set(check_steps COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${spv})
    set(tool_dep "")
  endif()
  if(VKLLM_GLSLC)
    # compiled with the other variants of its source (below); here checked, rewritten, embedded
    set(compile_steps ${check_steps})
    list(APPEND tool_dep ${module})
    string(MAKE_C_IDENTIFIER "${src}" srcid)
    if(NOT DEFINED _glslc_jobs_${srcid})
      list(APPEND _glslc_sources ${src})
      set(_glslc_jobs_${srcid} "")
    endif()
    string(REPLACE ";" " " defline "${defargs}")
    string(APPEND _glslc_jobs_${srcid} "${module} ${VKLLM_SHADER_DIR}/${src} ${defline}\n")
    list(APPEND _glslc_outputs_${srcid} ${module})
  else()
    set(compile_steps
      COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.1 --quiet
              -I${VKLLM_SHADER_DIR}/include ${defargs} -o ${module} ${VKLLM_SHADER_DIR}/${src}
      ${check_steps})
  endif()
  if(VKLLM_SPV_FROM)
    # SPIR-V does not depend on the C flags: a second build of the same sources (the sanitizer
    # build of `make test`) compiles the first's C arrays instead of making them again (the
    # modules stay there: test_coopmat reads them from VKLLM_SHADER_SPV_DIR)
    set(csrc ${VKLLM_SPV_FROM}/${name}.spv.c)
    set_source_files_properties(${csrc} PROPERTIES GENERATED TRUE)
  else()
    add_custom_command(
      OUTPUT ${csrc}
      ${compile_steps}
      COMMAND vkllm-spv-embed ${name} ${spv} ${csrc}
      DEPENDS ${VKLLM_SHADER_DIR}/${src} ${VKLLM_SHADER_INCLUDES} vkllm-spv-embed ${tool_dep}
      COMMENT "${_shader_step} shader ${name} (${src} ${defs})"
      VERBATIM)
  endif()
  list(APPEND VKLLM_SHADER_SOURCES ${csrc})
  string(TOUPPER ${name} uname)
  string(APPEND _enum "    VKLLM__SHADER_${uname},\n")
  string(APPEND _decls "extern const uint32_t vkllm_spv_${name}[];\nextern const size_t vkllm_spv_${name}_size;\n")
  string(APPEND _table "    {\"${name}\", vkllm_spv_${name}, &vkllm_spv_${name}_size, ${nbind}, sizeof(struct vkllm__pc_${pcname}), \"${kinds}\"},\n")
endforeach()

# vkllm-glslc: one process for the variants of each source; its job list is rewritten only when it
# changes (configure_file), so that configuring again does not compile every shader again.
foreach(src IN LISTS _glslc_sources)
  string(MAKE_C_IDENTIFIER "${src}" srcid)
  set(jobs ${VKLLM_SHADER_OUT}/${srcid}.jobs)
  file(WRITE ${jobs}.new "${_glslc_jobs_${srcid}}")
  configure_file(${jobs}.new ${jobs} COPYONLY)
  list(LENGTH _glslc_outputs_${srcid} n)
  add_custom_command(
    OUTPUT ${_glslc_outputs_${srcid}}
    COMMAND vkllm-glslc ${VKLLM_SHADER_DIR}/include ${jobs}
    DEPENDS ${VKLLM_SHADER_DIR}/${src} ${VKLLM_SHADER_INCLUDES} ${jobs} vkllm-glslc
    COMMENT "Compiling ${n} shader variants of ${src}"
    VERBATIM)
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
