#if canImport(Glibc)
import Glibc
#endif

/// The sparse data file of one resource version. Sole owner of its file descriptor.
///
/// Holding the file open also holds a shared `flock` on it: eviction takes an exclusive,
/// non-blocking lock first, so a resource being read or written by any process is never evicted.
final class DataFile: Sendable {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CacheError.io(function: "open", path: path, errno: errno) }
        guard flock(fd, LOCK_SH) == 0 else {
            let e = errno
            close(fd)
            throw CacheError.io(function: "flock", path: path, errno: e)
        }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// Writes all of `bytes` at `offset`, retrying short writes and EINTR.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw CacheError.io(function: "pwrite", path: path, errno: errno)
            }
            done += n
        }
    }

    /// Reads exactly `buffer.count` bytes at `offset`; the caller knows they are present.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw CacheError.io(function: "pread", path: path, errno: errno)
            }
            if n == 0 { throw CacheError.corruptIndex("\(path) is shorter than its recorded ranges") }
            done += n
        }
    }

    /// Makes written bytes durable; must precede recording their range in the index.
    func sync() throws {
        guard fdatasync(fd) == 0 else { throw CacheError.io(function: "fdatasync", path: path, errno: errno) }
    }

    /// Tries to take the exclusive lock that eviction needs; false if anyone holds the file open.
    static func lockExclusivelyIfUnused(path: String, _ body: () throws -> Void) rethrows -> Bool {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        if fd < 0 { try body(); return true } // no data file: nothing can be using it
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        try body()
        return true
    }
}
