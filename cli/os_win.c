/* os_win.c - cli/os.h on Windows: Ctrl-C through SetConsoleCtrlHandler; the console's output in
 * UTF-8 (the CLI prints UTF-8 text). */
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
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
