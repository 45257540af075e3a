/* sys/resource.h for Windows (MinGW-w64): the descriptor limit. Windows' sockets have no such
 * per-process limit: getrlimit reports a large one, setrlimit changes nothing. See README. */
#ifndef VKLLM_WIN_SYS_RESOURCE_H
#define VKLLM_WIN_SYS_RESOURCE_H

typedef unsigned long long rlim_t;
struct rlimit {
    rlim_t rlim_cur, rlim_max;
};
#define RLIMIT_NOFILE 7
#define RLIM_INFINITY (~(rlim_t)0)

static inline int getrlimit(int what, struct rlimit *rl) {
    (void)what;
    rl->rlim_cur = rl->rlim_max = 16384;
    return 0;
}
static inline int setrlimit(int what, const struct rlimit *rl) {
    (void)what, (void)rl;
    return 0;
}

#endif
