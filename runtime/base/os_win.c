/* os_win.c - os.h on Windows (MinGW-w64): file mappings through CreateFileMapping, the clock
 * through QueryPerformanceCounter, the cache under %LOCALAPPDATA%, UTF-8 paths as UTF-16. */
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <direct.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <windows.h>

#include "internal.h"

uint64_t vkllm__now_ns(void) {
    static LARGE_INTEGER freq; /* constant while the system runs: a benign race sets it twice */
    LARGE_INTEGER t;
    if (!freq.QuadPart) QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t);
    uint64_t f = (uint64_t)freq.QuadPart, c = (uint64_t)t.QuadPart;
    return c / f * 1000000000ull + c % f * 1000000000ull / f;
}

size_t vkllm__os_page_size(void) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize;
}

long vkllm__os_cpu_count(void) {
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 ? (long)n : 1;
}

int vkllm__os_cache_dir(const char *xdg, const char *home, char *buf, size_t n) {
    (void)xdg, (void)home; /* Windows' own folder: its UTF-16 environment, not the C runtime's code page */
    wchar_t *w = _wgetenv(L"LOCALAPPDATA");
    if (!w || !*w) return 0;
    int len = WideCharToMultiByte(CP_UTF8, 0, w, -1, buf, (int)(n < 0x7fffffff ? n : 0x7fffffff), NULL, NULL);
    if (len <= 0) return 0; /* does not fit, or not convertible */
    size_t at = (size_t)len - 1;
    int more = snprintf(buf + at, n - at, "\\vkllm");
    return more > 0 && (size_t)more < n - at;
}

/* path (UTF-8) as a new UTF-16 string, NULL with errno */
static wchar_t *wide(const char *path) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    if (n <= 0) return errno = EINVAL, NULL;
    wchar_t *w = malloc((size_t)n * sizeof *w);
    if (!w) return errno = ENOMEM, NULL;
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, n);
    return w;
}

int vkllm__os_mkdir(const char *path) {
    wchar_t *w = wide(path);
    if (!w) return -1;
    int r = _wmkdir(w);
    free(w);
    return r;
}

int vkllm__os_replace(const char *from, const char *to) {
    wchar_t *wf = wide(from), *wt = wf ? wide(to) : NULL;
    int ok = wt && MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING);
    if (wt && !ok) errno = EACCES;
    free(wf);
    free(wt);
    return ok ? 0 : -1;
}

int vkllm__os_open_read(const char *path) {
    wchar_t *w = wide(path);
    if (!w) return -1;
    int fd = _wopen(w, _O_RDONLY | _O_BINARY | _O_NOINHERIT);
    free(w);
    return fd;
}

void vkllm__os_close(int fd) { _close(fd); }

int vkllm__os_fstat(int fd, struct vkllm__os_file_info *fi) {
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    BY_HANDLE_FILE_INFORMATION bi;
    if (h == INVALID_HANDLE_VALUE || !GetFileInformationByHandle(h, &bi)) return errno = EBADF, -1;
    fi->size = (uint64_t)bi.nFileSizeHigh << 32 | bi.nFileSizeLow;
    /* 100 ns ticks since 1601 */
    uint64_t t = (uint64_t)bi.ftLastWriteTime.dwHighDateTime << 32 | bi.ftLastWriteTime.dwLowDateTime;
    fi->mtime_s = (int64_t)(t / 10000000u);
    fi->mtime_ns = (int64_t)(t % 10000000u * 100u);
    fi->regular = GetFileType(h) == FILE_TYPE_DISK && !(bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY);
    return 0;
}

/* A copy-on-write view (FILE_MAP_COPY), as MAP_PRIVATE. The mapping object may be closed at once:
 * the view keeps it. While mapped, Windows refuses to truncate the file, so a view never reads
 * past its end (mapguard.h's case does not arise). */
void *vkllm__os_map(int fd, uint64_t size) {
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h == INVALID_HANDLE_VALUE) return errno = EBADF, NULL;
    HANDLE fm = CreateFileMappingW(h, NULL, PAGE_WRITECOPY, (DWORD)(size >> 32), (DWORD)size, NULL);
    if (!fm) return errno = GetLastError() == ERROR_NOT_ENOUGH_MEMORY ? ENOMEM : EACCES, NULL;
    void *m = MapViewOfFile(fm, FILE_MAP_COPY, 0, 0, (SIZE_T)size);
    CloseHandle(fm);
    if (!m) return errno = ENOMEM, NULL;
    DWORD old;
    VirtualProtect(m, (SIZE_T)size, PAGE_READONLY, &old); /* as mmap's PROT_READ */
    return m;
}

void vkllm__os_unmap(void *m, uint64_t size) {
    (void)size;
    UnmapViewOfFile(m);
}

int vkllm__os_protect(void *m, size_t len, int writable) {
    DWORD old;
    return VirtualProtect(m, len, writable ? PAGE_WRITECOPY : PAGE_READONLY, &old) ? 0 : -1;
}
