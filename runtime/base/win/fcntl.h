/* fcntl.h for Windows (MinGW-w64): MinGW's, with the POSIX flags it lacks. A descriptor opened
 * with O_CLOEXEC is also binary: every such open in vkllm reads or writes bytes, and Windows'
 * default text mode would translate them. See README. */
#include_next <fcntl.h>

#ifndef VKLLM_WIN_FCNTL_H
#define VKLLM_WIN_FCNTL_H

#define O_CLOEXEC (_O_NOINHERIT | _O_BINARY)
#define O_NONBLOCK 0 /* no FIFOs in the file system */
#define O_NOCTTY 0

#endif
