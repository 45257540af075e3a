/* sys/stat.h for Windows (MinGW-w64): MinGW's, plus lstat (no symbolic links are followed
 * apart: stat) and the file types Windows does not have. See README. */
#include_next <sys/stat.h>

#ifndef VKLLM_WIN_SYS_STAT_H
#define VKLLM_WIN_SYS_STAT_H

#define lstat stat
#ifndef S_ISLNK
#define S_ISLNK(m) 0
#endif
#ifndef S_ISSOCK
#define S_ISSOCK(m) 0
#endif
#ifndef S_ISBLK
#define S_ISBLK(m) 0
#endif
#ifndef S_ISFIFO
#define S_ISFIFO(m) (((m)&_S_IFMT) == _S_IFIFO)
#endif

#endif
