/* os_unix.c - cli/os.h on POSIX systems: sigwait. */
#include <pthread.h>
#include <signal.h>

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
