/* poll.h for Windows (MinGW-w64): poll over WSAPoll, for sockets. No descriptors is a sleep (as
 * POSIX's poll; WSAPoll refuses it). POLLRDHUP (Linux) is not there: a closed peer shows as
 * POLLHUP. See README. */
#ifndef VKLLM_WIN_POLL_H
#define VKLLM_WIN_POLL_H

#include <winsock2.h>

#ifndef POLLRDHUP
#define POLLRDHUP 0
#endif
typedef unsigned long nfds_t;

static inline int vkllm_win_poll_(struct pollfd *fds, nfds_t n, int ms) {
    if (n == 0) {
        Sleep(ms < 0 ? INFINITE : (DWORD)ms);
        return 0;
    }
    return WSAPoll(fds, n, ms);
}
#define poll vkllm_win_poll_

#endif
