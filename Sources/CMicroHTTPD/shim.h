// Typed entry points for libmicrohttpd's variadic functions, which Swift cannot call.
#ifndef MPROBE_CMICROHTTPD_SHIM_H
#define MPROBE_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon with the options mprobe uses: event loops on `threads` threads (epoll), an
   address to bind, a cap on connections, an idle timeout in seconds, a callback when a request is
   done (to release its context) and one when a connection opens or closes (to count clients and
   time their headers). */
static inline struct MHD_Daemon *mp_mhd_start(unsigned int flags, const struct sockaddr *address,
                                              unsigned int threads,
                                              unsigned int connection_limit, unsigned int timeout,
                                              MHD_AccessHandlerCallback handler, void *handler_cls,
                                              MHD_RequestCompletedCallback completed, void *completed_cls,
                                              MHD_NotifyConnectionCallback notify, void *notify_cls) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, notify_cls,
                            /* A request line holds a URL of up to 8 KiB percent-encoded (24 KiB):
                               the default 32 KiB per connection would leave little for headers. */
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                            MHD_OPTION_END);
}

/* The port the daemon listens on (useful after binding port 0), or 0. */
static inline uint16_t mp_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* The peer's address of a connection, or NULL. */
static inline const struct sockaddr *mp_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

/* The connection's socket, or -1. */
static inline int mp_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/* Whether the peer of `fd` has closed its side (or the socket is gone), without reading from it.
   POLLRDHUP needs _GNU_SOURCE in C; its value is fixed by the Linux ABI. */
#include <poll.h>
static inline int mp_socket_peer_closed(int fd) {
    struct pollfd p = { .fd = fd, .events = 0x2000 /* POLLRDHUP */, .revents = 0 };
    if (fd < 0 || poll(&p, 1, 0) < 0) return 1;
    return (p.revents & (0x2000 | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* A connection's notification: opened (1) or closed (0). */
static inline int mp_mhd_notify_started(enum MHD_ConnectionNotificationCode code) { return code == MHD_CONNECTION_NOTIFY_STARTED; }

/* Enum constants whose Swift spelling depends on how the importer strips prefixes. */
static inline enum MHD_ValueKind mp_mhd_header_kind(void) { return MHD_HEADER_KIND; }
static inline enum MHD_ValueKind mp_mhd_argument_kind(void) { return MHD_GET_ARGUMENT_KIND; }
static inline enum MHD_ResponseMemoryMode mp_mhd_respmem_copy(void) { return MHD_RESPMEM_MUST_COPY; }

static inline enum MHD_FLAG mp_mhd_event_loop_flags(void) {
    return (enum MHD_FLAG)(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO);
}
static inline ssize_t mp_mhd_reader_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t mp_mhd_reader_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }
static inline uint64_t mp_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
#endif
