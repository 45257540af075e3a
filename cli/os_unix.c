/* os_unix.c - cli/os.h on POSIX systems: sigwait; sockets through close, send and poll. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "os.h"

static sigset_t g_stop;

void cli_os_stop_init(void) {
    sigemptyset(&g_stop);
    sigaddset(&g_stop, SIGINT);
    sigaddset(&g_stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &g_stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a broken connection must not kill the server */
}

const char *cli_os_stop_wait(void) {
    int sig = 0;
    sigwait(&g_stop, &sig);
    return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* (macOS: SIGPIPE is ignored, cli_os_stop_init) */
#endif
#ifndef POLLRDHUP
#define POLLRDHUP 0 /* Linux's: a closed read side is not reported elsewhere */
#endif

long cli_os_socket_send_now(MHD_socket s, const void *buf, size_t len) {
    return (long)send(s, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

size_t cli_os_watch_peers(struct cli_os_watch *w, size_t n, int ms) {
    struct pollfd small[64], *pf = n <= 64 ? small : malloc(n * sizeof *pf);
    for (size_t i = 0; i < n; i++) w[i].found = 0;
    if (!pf) n = 0; /* a sleep; the next call tries again */
    /* errors and hang-ups are always reported */
    for (size_t i = 0; i < n; i++) pf[i] = (struct pollfd){w[i].s, (short)(w[i].shut_wr ? POLLRDHUP : 0), 0};
    poll(n ? pf : NULL, (nfds_t)n, ms);
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        short ev = pf[i].revents;
        if (ev & (POLLHUP | POLLERR | POLLNVAL)) w[i].found = CLI_OS_PEER_GONE;
        else if (ev & POLLRDHUP && w[i].shut_wr) w[i].found = CLI_OS_PEER_SHUT_WR;
        found += w[i].found != 0;
    }
    if (pf != small) free(pf);
    return found;
}
