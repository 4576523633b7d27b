#if canImport(Glibc)
import Glibc
#endif

/// One open file description of a data file, used only for Linux open-file-description byte-range
/// locks (`F_OFD_SETLK`, `F_OFD_GETLK`). Sole owner of its descriptor; closing it releases every
/// lock it holds, so a process that dies releases its claims with it.
///
/// OFD locks belong to the description, not the process: two descriptions conflict even inside
/// one process, and closing some other descriptor of the file (as SQLite fears for POSIX locks)
/// releases nothing here. Locks beyond the end of the file are allowed.
final class ByteRangeLock: Sendable {
    let path: String
    private let fd: Int32

    /// Opens `/proc/self/fd/N`, which makes a new description of the very file `fd` refers to,
    /// even if its name has been unlinked or replaced meanwhile.
    init(reopening fd: Int32, path: String) throws {
        let own = open("/proc/self/fd/\(fd)", O_RDWR | O_CLOEXEC)
        guard own >= 0 else { throw CacheError.io(function: "open(/proc/self/fd)", path: path, errno: errno) }
        self.path = path
        self.fd = own
    }

    deinit { close(fd) }

    // <bits/fcntl-linux.h> defines these only under _GNU_SOURCE, which Swift's Glibc module does
    // not set; the values are Linux's ABI (since 3.15, on every architecture).
    private static let getLock: Int32 = 36  // F_OFD_GETLK
    private static let setLock: Int32 = 37  // F_OFD_SETLK

    private func description(_ type: Int32, _ range: Range<Int64>) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(range.lowerBound)
        lock.l_len = off_t(range.count)
        lock.l_pid = 0  // required for OFD locks
        return lock
    }

    /// Write-locks `range`; false when another description holds part of it.
    func tryLock(_ range: Range<Int64>) throws -> Bool {
        var lock = description(F_WRLCK, range)
        if fcntl(fd, ByteRangeLock.setLock, &lock) == 0 { return true }
        if errno == EAGAIN || errno == EACCES { return false }
        throw CacheError.io(function: "fcntl(F_OFD_SETLK)", path: path, errno: errno)
    }

    /// The start of a lock another description holds within `range` (any one of them), or nil.
    func conflict(in range: Range<Int64>) throws -> Int64? {
        var lock = description(F_WRLCK, range)
        guard fcntl(fd, ByteRangeLock.getLock, &lock) == 0 else {
            throw CacheError.io(function: "fcntl(F_OFD_GETLK)", path: path, errno: errno)
        }
        return lock.l_type == Int16(F_UNLCK) ? nil : Int64(lock.l_start)
    }
}
