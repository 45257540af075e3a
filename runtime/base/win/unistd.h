/* unistd.h for Windows (MinGW-w64): MinGW's, plus sysconf (pages, processors), fsync and
 * fchmod. See README. */
#include_next <unistd.h>

#ifndef VKLLM_WIN_UNISTD_H
#define VKLLM_WIN_UNISTD_H

#include <io.h>

/* kernel32's, declared as <windows.h> does (not included: it defines words such as `far`) */
__declspec(dllimport) unsigned long __stdcall GetActiveProcessorCount(unsigned short group);

#define _SC_PAGESIZE 30
#define _SC_NPROCESSORS_ONLN 84

static inline long sysconf(int name) {
    if (name == _SC_PAGESIZE) return 4096; /* every x86-64 and ARM64 Windows */
    if (name == _SC_NPROCESSORS_ONLN) return (long)GetActiveProcessorCount(0xffff /* ALL_PROCESSOR_GROUPS */);
    return -1;
}

static inline int fsync(int fd) { return _commit(fd); }

/* Windows files have ACLs, not modes: nothing to change */
static inline int fchmod(int fd, int mode) {
    (void)fd, (void)mode;
    return 0;
}

#endif
