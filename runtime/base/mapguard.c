/* mapguard.c - SIGBUS from reading past the end of a shrunk file, turned into zeros for the
 * mappings the library registered (see mapguard.h). */
#include "mapguard.h"

#include <stddef.h>

#if defined(__unix__) || defined(__APPLE__)

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

/* A slot is claimed through `used`; the handler reads base then size (size is written first and
 * base last, so a non-zero base has its size). */
struct slot {
    atomic_int used;
    _Atomic uintptr_t base, size;
    atomic_int hit;
};
static struct slot g_slots[VKLLM__MAPGUARD_MAX];
static struct sigaction g_prev; /* the handler before ours: SIGBUS outside our mappings goes there */
static uintptr_t g_page;
static int g_installed;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Anonymous zero pages over [at, at + len): the mmap system call itself, so that no sanitizer's
 * interceptor runs inside the signal handler. Readable and writable: gguf.c makes the metadata's
 * pages private by writing to them, and may be doing that when the file shrinks. */
static int zero_pages(uintptr_t at, uintptr_t len) {
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
    long r = syscall(SYS_mmap, at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    return r != -1;
#else
    return mmap((void *)at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
#endif
}

/* Not ours: what would have happened without the guard. */
static void chain(int sig, siginfo_t *si, void *uc) {
    if (g_prev.sa_flags & SA_SIGINFO) {
        if (g_prev.sa_sigaction) g_prev.sa_sigaction(sig, si, uc);
        return;
    }
    if (g_prev.sa_handler == SIG_IGN && si->si_code <= 0) return; /* sent by kill() and ignored */
    if (g_prev.sa_handler != SIG_DFL && g_prev.sa_handler != SIG_IGN) {
        g_prev.sa_handler(sig);
        return;
    }
    /* the default action: a fault happens again once this returns; a signal someone sent must be
     * raised again */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0) raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; si->si_code > 0 && i < VKLLM__MAPGUARD_MAX; i++) { /* a fault: si_addr is where */
        uintptr_t b = atomic_load(&g_slots[i].base);
        if (!b || a < b) continue;
        uintptr_t n = atomic_load(&g_slots[i].size);
        if (a - b >= n) continue;
        /* every page from the faulting one on lies past the file's end */
        uintptr_t page = a & ~(g_page - 1), end = (b + n + g_page - 1) & ~(g_page - 1);
        if (!zero_pages(page, end - page)) break;
        atomic_store(&g_slots[i].hit, 1);
        errno = saved;
        return;
    }
    errno = saved;
    chain(sig, si, uc);
}

static void install(void) {
    g_page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (g_page == 0 || (g_page & (g_page - 1)) || sigaction(SIGBUS, NULL, &g_prev) != 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    g_installed = sigaction(SIGBUS, &sa, NULL) == 0;
}

int vkllm__mapguard_add(const void *base, uint64_t size) {
    if (!base || !size || size > UINTPTR_MAX - (uintptr_t)base) return -1;
    pthread_once(&g_once, install);
    if (!g_installed) return -1;
    for (int i = 0; i < VKLLM__MAPGUARD_MAX; i++) {
        int free_ = 0;
        if (!atomic_compare_exchange_strong(&g_slots[i].used, &free_, 1)) continue;
        atomic_store(&g_slots[i].hit, 0);
        atomic_store(&g_slots[i].size, (uintptr_t)size);
        atomic_store(&g_slots[i].base, (uintptr_t)base);
        return i;
    }
    return -1;
}

void vkllm__mapguard_remove(int id) {
    if (id < 0 || id >= VKLLM__MAPGUARD_MAX) return;
    atomic_store(&g_slots[id].base, 0);
    atomic_store(&g_slots[id].size, 0);
    atomic_store(&g_slots[id].used, 0);
}

int vkllm__mapguard_hit(int id) { return id >= 0 && id < VKLLM__MAPGUARD_MAX && atomic_load(&g_slots[id].hit); }

#else /* no SIGBUS: nothing to guard */

int vkllm__mapguard_add(const void *base, uint64_t size) {
    (void)base, (void)size;
    return -1;
}
void vkllm__mapguard_remove(int id) { (void)id; }
int vkllm__mapguard_hit(int id) {
    (void)id;
    return 0;
}

#endif
