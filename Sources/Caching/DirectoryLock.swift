#if canImport(Glibc)
import Glibc
#endif

/// A shared `flock` on `data/`, held by every open `ByteCache` for its lifetime. The one change
/// that must not happen under another process — moving its index aside — takes it exclusively
/// first, so it happens only when no other process has the cache open. Sole owner of its descriptor.
///
/// `data/` rather than the index: closing any descriptor of the index file would drop SQLite's
/// POSIX locks on it.
final class DirectoryLock: Sendable {
    let path: String
    private let fd: Int32

    /// nil when there is no such directory (a read-only cache that never stored anything).
    init?(directory path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw CacheError.io(function: "open", path: path, errno: errno)
        }
        guard flock(fd, LOCK_SH) == 0 else {
            let e = errno
            close(fd)
            throw CacheError.io(function: "flock", path: path, errno: e)
        }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// Runs `body` holding the lock exclusively, waiting up to `seconds` for other holders to
    /// go; nil (and `body` not run) when they stay. Shared again afterwards.
    func exclusively<T>(waitingUpTo seconds: Double, _ body: () throws -> T) throws -> T? {
        // Converting shared to exclusive releases the shared lock first, so two processes that
        // both want it exclusively do not wait for each other forever.
        var waited = 0.0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw CacheError.io(function: "flock", path: path, errno: errno)
            }
            guard waited < seconds else {
                guard flock(fd, LOCK_SH) == 0 else { throw CacheError.io(function: "flock", path: path, errno: errno) }
                return nil
            }
            usleep(20_000)
            waited += 0.02
        }
        defer { flock(fd, LOCK_SH) }
        return try body()
    }
}
