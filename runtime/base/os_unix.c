/* os_unix.c - os.h on POSIX systems (Linux, the BSDs, macOS). */
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

uint64_t vkllm__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

size_t vkllm__os_page_size(void) {
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 0;
}

long vkllm__os_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

int vkllm__os_cache_dir(const char *xdg, const char *home, char *buf, size_t n) {
    int len;
    if (xdg && *xdg) len = snprintf(buf, n, "%s/vkllm", xdg);
    else if (home && *home) len = snprintf(buf, n, "%s/.cache/vkllm", home);
    else return 0;
    return len > 0 && (size_t)len < n;
}

int vkllm__os_mkdir(const char *path) { return mkdir(path, 0755); }

int vkllm__os_replace(const char *from, const char *to) { return rename(from, to); }

/* O_NONBLOCK: a FIFO at path must not hang the open (the caller refuses it, as not a file) */
int vkllm__os_open_read(const char *path) { return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); }

void vkllm__os_close(int fd) { close(fd); }

int vkllm__os_fstat(int fd, struct vkllm__os_file_info *fi) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return -1;
    fi->size = (uint64_t)sb.st_size;
#if defined(__APPLE__)
    fi->mtime_s = (int64_t)sb.st_mtimespec.tv_sec;
    fi->mtime_ns = (int64_t)sb.st_mtimespec.tv_nsec;
#else
    fi->mtime_s = (int64_t)sb.st_mtim.tv_sec;
    fi->mtime_ns = (int64_t)sb.st_mtim.tv_nsec;
#endif
    fi->regular = S_ISREG(sb.st_mode) != 0;
    return 0;
}

void *vkllm__os_map(int fd, uint64_t size) {
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    return m == MAP_FAILED ? NULL : m;
}

void vkllm__os_unmap(void *m, uint64_t size) { munmap(m, (size_t)size); }

int vkllm__os_protect(void *m, size_t len, int writable) {
    return mprotect(m, len, writable ? PROT_READ | PROT_WRITE : PROT_READ);
}
