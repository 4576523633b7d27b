// The Linux socket calls the HTTP server's event loops use that Swift's Glibc module leaves out.
#ifndef MPROBE_CSOCKETS_H
#define MPROBE_CSOCKETS_H
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>

/* accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC): accept4 is a GNU extension, declared
   only under _GNU_SOURCE, which CSockets.c defines for itself. */
int mp_accept_nonblocking(int fd, struct sockaddr *address, socklen_t *length);
#endif
