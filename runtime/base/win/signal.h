/* signal.h for Windows (MinGW-w64): the C runtime's signal(), plus the part of POSIX's sigaction
 * that vkllm uses (a plain handler for SIGINT and SIGTERM) over it. See README. */
#include_next <signal.h>

#ifndef VKLLM_WIN_SIGNAL_H
#define VKLLM_WIN_SIGNAL_H

typedef unsigned long vkllm_win_sigset_t;
#define sigset_t vkllm_win_sigset_t
struct sigaction {
    void (*sa_handler)(int);
    sigset_t sa_mask;
    int sa_flags;
};
static inline int sigemptyset(sigset_t *s) { return *s = 0, 0; }
static inline int sigaddset(sigset_t *s, int sig) { return *s |= 1ul << sig, 0; }
static inline int sigaction(int sig, const struct sigaction *sa, struct sigaction *old) {
    void (*prev)(int) = signal(sig, sa ? sa->sa_handler : SIG_DFL);
    if (!sa && prev != SIG_ERR) signal(sig, prev); /* only asked */
    if (old) old->sa_handler = prev == SIG_ERR ? SIG_DFL : prev, old->sa_mask = 0, old->sa_flags = 0;
    return prev == SIG_ERR ? -1 : 0;
}

#endif
