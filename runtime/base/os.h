/* os.h - what the library needs from the operating system that POSIX and Windows spell
 * differently, in one place (libuv's unix/win split): os_unix.c (Linux, the BSDs, macOS) and
 * os_win.c (Windows, MinGW-w64). Only these two files name system calls of one or the other.
 *
 * Paths are UTF-8 on every system (Windows: converted to UTF-16 for the wide calls). Calls that
 * fail return -1 (or NULL) with errno set, as POSIX calls do. */
#ifndef VKLLM_OS_H
#define VKLLM_OS_H

#include <stddef.h>
#include <stdint.h>

/* The system's page size (the granularity of vkllm__os_protect), 0 when unknown. */
size_t vkllm__os_page_size(void);

/* The number of online CPUs, at least 1. */
long vkllm__os_cpu_count(void);

/* vkllm's cache folder, not created: xdg/vkllm, else home/.cache/vkllm (the values of
 * $XDG_CACHE_HOME and $HOME, which tuning.c reads; NULL or empty: unset); on Windows
 * %LOCALAPPDATA%\vkllm, read here as UTF-16. 1 with it in buf, 0 when there is none or it does not
 * fit in n. */
int vkllm__os_cache_dir(const char *xdg, const char *home, char *buf, size_t n);

/* mkdir with mode 0755 (Windows: the folder's inherited ACL): 0, or -1 with errno (EEXIST when
 * it is there). */
int vkllm__os_mkdir(const char *path);

/* Rename from to to, replacing a file at to (Windows' rename does not): 0, or -1 with errno. */
int vkllm__os_replace(const char *from, const char *to);

/* A file, opened for reading (a FIFO's open does not block). The descriptor is a C runtime one. */
int vkllm__os_open_read(const char *path);
void vkllm__os_close(int fd);

struct vkllm__os_file_info {
    uint64_t size;
    int64_t mtime_s, mtime_ns; /* the modification time */
    int regular;               /* 1 for a regular file */
};
int vkllm__os_fstat(int fd, struct vkllm__os_file_info *fi);

/* [0, size) of fd mapped read-only and private (copy-on-write once made writable by
 * vkllm__os_protect): NULL with errno when it cannot be. */
void *vkllm__os_map(int fd, uint64_t size);
void vkllm__os_unmap(void *m, uint64_t size);

/* Make [m, m + len) of a mapping writable (copy-on-write) or read-only again: 0, or -1. */
int vkllm__os_protect(void *m, size_t len, int writable);

#endif /* VKLLM_OS_H */
