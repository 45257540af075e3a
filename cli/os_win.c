/* os_win.c - cli/os.h on Windows: Ctrl-C through SetConsoleCtrlHandler; the console's output in
 * UTF-8 (the CLI prints UTF-8 text); sockets through Winsock (closesocket, WSAPoll). */
#include <winsock2.h>

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include "os.h"

static HANDLE g_stop_event;
static volatile LONG g_stop_kind = -1;

/* on a thread of its own that Windows starts: signal the waiting one */
static BOOL WINAPI on_ctrl(DWORD kind) {
    if (kind != CTRL_C_EVENT && kind != CTRL_BREAK_EVENT && kind != CTRL_CLOSE_EVENT && kind != CTRL_SHUTDOWN_EVENT &&
        kind != CTRL_LOGOFF_EVENT)
        return FALSE;
    InterlockedCompareExchange(&g_stop_kind, (LONG)kind, -1);
    SetEvent(g_stop_event);
    return TRUE; /* handled: the waiting thread shuts down */
}

void cli_os_stop_init(void) {
    g_stop_event = CreateEventW(NULL, TRUE, FALSE, NULL);
    SetConsoleCtrlHandler(on_ctrl, TRUE);
}

const char *cli_os_stop_wait(void) {
    WaitForSingleObject(g_stop_event, INFINITE);
    switch (g_stop_kind) {
    case CTRL_C_EVENT: return "Ctrl-C";
    case CTRL_BREAK_EVENT: return "Ctrl-Break";
    default: return "console closed";
    }
}

/* Before main: the console shows UTF-8 (the CLI prints UTF-8 text), and stdout and stderr carry
 * the bytes printed (no "\r\n" for "\n"), so that a redirected reply equals Linux's byte for
 * byte. */
__attribute__((constructor)) static void console_utf8(void) {
    SetConsoleOutputCP(CP_UTF8);
    SetConsoleCP(CP_UTF8);
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
}

/* libmicrohttpd's sockets are non-blocking (Windows has no MSG_DONTWAIT) and Windows raises no
 * SIGPIPE */
long cli_os_socket_send_now(MHD_socket s, const void *buf, size_t len) {
    int n = len > 0x7fffffff ? 0x7fffffff : (int)len;
    int r = send(s, buf, n, 0);
    return r == SOCKET_ERROR ? -1 : r;
}

/* WSAPoll reports POLLHUP for a FIN as for a reset, and keeps reporting it: a peek tells them apart
 * (0 bytes: a FIN, the peer may still read; an error other than WSAEWOULDBLOCK: gone). A socket
 * whose peer has only half-closed, and that was not asked about, answers every WSAPoll at once:
 * when nothing else was found, the rest of ms is slept, so the caller never spins. */
size_t cli_os_watch_peers(struct cli_os_watch *w, size_t n, int ms) {
    for (size_t i = 0; i < n; i++) w[i].found = 0;
    WSAPOLLFD small[64], *pf = n <= 64 ? small : malloc(n * sizeof *pf);
    if (!n || !pf) { /* (WSAPoll refuses no sockets) a sleep; the next call tries again */
        Sleep(ms < 0 ? INFINITE : (DWORD)ms);
        return 0;
    }
    /* errors and hang-ups are always reported */
    for (size_t i = 0; i < n; i++) pf[i] = (WSAPOLLFD){.fd = w[i].s, .events = 0, .revents = 0};
    ULONGLONG t0 = GetTickCount64();
    int r = WSAPoll(pf, (ULONG)n, ms);
    size_t found = 0;
    for (size_t i = 0; r > 0 && i < n; i++) {
        short ev = pf[i].revents;
        if (ev & (POLLERR | POLLNVAL)) {
            w[i].found = CLI_OS_PEER_GONE;
        } else if (ev & POLLHUP) {
            char c;
            int k = recv(w[i].s, &c, 1, MSG_PEEK);
            if (k < 0 && WSAGetLastError() != WSAEWOULDBLOCK) w[i].found = CLI_OS_PEER_GONE;
            else if (w[i].shut_wr) w[i].found = CLI_OS_PEER_SHUT_WR;
        }
        found += w[i].found != 0;
    }
    if (pf != small) free(pf);
    if (r != 0 && !found && ms > 0) { /* only half-closed peers answered (or an error): wait out the rest */
        ULONGLONG spent = GetTickCount64() - t0;
        if (spent < (ULONGLONG)ms) Sleep((DWORD)((ULONGLONG)ms - spent));
    }
    return found;
}
