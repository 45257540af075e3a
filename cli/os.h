/* os.h - what the CLI needs from the operating system that POSIX and Windows spell differently
 * (os_unix.c, os_win.c; the library's are in runtime/base/os.h). */
#ifndef VKLLM_CLI_OS_H
#define VKLLM_CLI_OS_H

#include <stddef.h>

#include <microhttpd.h> /* MHD_socket: a descriptor (int) on POSIX, a SOCKET (unsigned) on Windows */

/* Route the stop requests (POSIX: SIGINT, SIGTERM, blocked here in the calling thread before any
 * other exists, so that every thread inherits the mask, and SIGPIPE ignored; Windows: Ctrl-C,
 * Ctrl-Break and closing the console, through SetConsoleCtrlHandler) to cli_os_stop_wait. */
void cli_os_stop_init(void);

/* Wait for a stop request: its name ("SIGINT", "SIGTERM", "Ctrl-C", ...). */
const char *cli_os_stop_wait(void);

/* --- libmicrohttpd's sockets (the server's watcher, serve_http.c) ----------------------------- */

/* Send what fits now, without blocking and without SIGPIPE: the bytes sent, or -1. */
long cli_os_socket_send_now(MHD_socket s, const void *buf, size_t len);

/* What the watcher asks about a socket, and what it found. */
enum {
    CLI_OS_PEER_SHUT_WR = 1, /* the peer closed its sending side (a FIN): gone, or half-closed */
    CLI_OS_PEER_GONE = 2,    /* reset, fully closed, or an error: nobody reads the reply */
};
struct cli_os_watch {
    MHD_socket s;
    int shut_wr; /* in: report CLI_OS_PEER_SHUT_WR (else only CLI_OS_PEER_GONE) */
    int found;   /* out: CLI_OS_PEER_*, or 0 */
};

/* Wait up to ms milliseconds for a peer of the n sockets to shut its side or go; set each one's
 * found. With n == 0, or when nothing can be waited on (no memory), sleeps ms. POSIX: poll
 * (POLLRDHUP on Linux; elsewhere CLI_OS_PEER_SHUT_WR is never reported). Windows: WSAPoll, whose
 * POLLHUP means either; a peek at the socket tells a FIN from a reset. Returns how many sockets
 * found something. */
size_t cli_os_watch_peers(struct cli_os_watch *w, size_t n, int ms);

#endif /* VKLLM_CLI_OS_H */
