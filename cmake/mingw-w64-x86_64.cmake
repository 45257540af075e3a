# CMake toolchain for Windows x86-64 with Debian's MinGW-w64 (gcc-mingw-w64-x86-64-posix: the
# POSIX thread model, whose winpthreads gives the library its pthreads). Used by
# scripts/build-windows.sh, which builds the dependencies (PCRE2, cJSON, libmicrohttpd) from
# Debian's source packages into VKLLM_WIN_SYSROOT and puts volk, the Vulkan headers and stb there
# too, so that nothing of the host's /usr/include (glibc's headers) is on the path.
#
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake \
#         -DVKLLM_WIN_SYSROOT=build-win/deps/root
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(VKLLM_MINGW_TRIPLE x86_64-w64-mingw32)

find_program(CMAKE_C_COMPILER NAMES ${VKLLM_MINGW_TRIPLE}-gcc-posix ${VKLLM_MINGW_TRIPLE}-gcc REQUIRED)
find_program(CMAKE_RC_COMPILER NAMES ${VKLLM_MINGW_TRIPLE}-windres)
set(CMAKE_AR ${VKLLM_MINGW_TRIPLE}-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${VKLLM_MINGW_TRIPLE}-ranlib CACHE FILEPATH "")

# The dependencies' prefix (usr/include, usr/lib): libraries and headers are looked for there
# only; programs (glslangValidator, spirv-val) on the host.
if(NOT VKLLM_WIN_SYSROOT)
  set(VKLLM_WIN_SYSROOT "$ENV{VKLLM_WIN_SYSROOT}")
endif()
if(NOT VKLLM_WIN_SYSROOT)
  message(FATAL_ERROR "mingw-w64-x86_64.cmake: set VKLLM_WIN_SYSROOT (scripts/build-windows.sh does)")
endif()
get_filename_component(VKLLM_WIN_SYSROOT "${VKLLM_WIN_SYSROOT}" ABSOLUTE)
set(VKLLM_WIN_SYSROOT "${VKLLM_WIN_SYSROOT}" CACHE PATH "the MinGW dependencies' root" FORCE)
set(ENV{VKLLM_WIN_SYSROOT} "${VKLLM_WIN_SYSROOT}") # try_compile projects re-read this file
set(CMAKE_FIND_ROOT_PATH "${VKLLM_WIN_SYSROOT}" /usr/${VKLLM_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the dependencies' .pc files alone, their paths under the root.
set(ENV{PKG_CONFIG_LIBDIR} "${VKLLM_WIN_SYSROOT}/usr/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${VKLLM_WIN_SYSROOT}")

# Every program and the DLL carry their runtime (libgcc, winpthreads) inside: vkllm.exe and
# libvkllm.dll need no MinGW DLL beside them.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")

# Only the Vulkan headers are needed (volk opens vulkan-1.dll at run time): FindVulkan also wants
# a library to name, which nothing links.
set(Vulkan_LIBRARY vulkan-1 CACHE STRING "not linked: volk loads vulkan-1.dll at run time")
