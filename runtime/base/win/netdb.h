/* netdb.h for Windows (MinGW-w64): Winsock 2 (ws2_32). See README. */
#ifndef VKLLM_WIN_SOCKETS_H
#define VKLLM_WIN_SOCKETS_H

#include <winsock2.h>
#include <ws2tcpip.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* Windows raises no SIGPIPE */
#endif
#ifndef MSG_DONTWAIT
#define MSG_DONTWAIT 0
#endif

#endif
