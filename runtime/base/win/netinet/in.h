/* netinet/in.h for Windows (MinGW-w64): Winsock 2, as sys/socket.h here. See README. */
#include <sys/socket.h>
