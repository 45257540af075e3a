/* os.h - what the CLI needs from the operating system that POSIX and Windows spell differently
 * (os_unix.c, os_win.c; the library's are in runtime/base/os.h). */
#ifndef VKLLM_CLI_OS_H
#define VKLLM_CLI_OS_H

/* Route the stop requests (POSIX: SIGINT, SIGTERM, blocked here in the calling thread before any
 * other exists, so that every thread inherits the mask, and SIGPIPE ignored; Windows: Ctrl-C,
 * Ctrl-Break and closing the console, through SetConsoleCtrlHandler) to cli_os_stop_wait. */
void cli_os_stop_init(void);

/* Wait for a stop request: its name ("SIGINT", "SIGTERM", "Ctrl-C", ...). */
const char *cli_os_stop_wait(void);

#endif /* VKLLM_CLI_OS_H */
