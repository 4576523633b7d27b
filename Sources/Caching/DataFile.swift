#if canImport(Glibc)
import Glibc
#endif

/// The sparse data file of one resource version. Sole owner of its file descriptor.
///
/// Holding the file open also holds a shared `flock` on it: eviction takes an exclusive,
/// non-blocking lock first, so a resource being read or written by any process is never evicted.
///
/// The file is never reached through a symbolic link (`O_NOFOLLOW`) and must be a regular file of
/// this user with no other name: a link planted in `data/` is refused, never written through.
final class DataFile: Sendable {
    let path: String
    private let fd: Int32
    /// True when this open made the file: it cannot hold any bytes yet.
    let created: Bool

    /// Opens the data file for reading and writing, creating it (0600) if it does not exist.
    convenience init(path: String) throws {
        // O_EXCL tells whether we made it; a file another process made is opened as it is.
        var fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        let created = fd >= 0
        if !created && errno == EEXIST { fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC) }
        try self.init(path: path, fd: fd, created: created, writable: true)
    }

    /// Opens an existing data file for reading only; nil when there is none.
    static func existing(readOnly path: String) throws -> DataFile? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 && errno == ENOENT { return nil }
        return try DataFile(path: path, fd: fd, created: false, writable: false)
    }

    /// Takes ownership of `fd` (closing it if the file is refused).
    private init(path: String, fd: Int32, created: Bool, writable: Bool) throws {
        guard fd >= 0 else {
            if errno == ELOOP { throw CacheError.unsafe(path: path, reason: "it is a symbolic link") }
            throw CacheError.io(function: "open", path: path, errno: errno)
        }
        do {
            try DataFile.check(fd: fd, path: path, writable: writable)
            guard flock(fd, LOCK_SH) == 0 else { throw CacheError.io(function: "flock", path: path, errno: errno) }
        } catch {
            close(fd)
            throw error
        }
        self.path = path
        self.fd = fd
        self.created = created
    }

    deinit { close(fd) }

    /// A regular file of this user, with no second name (a hard link would let a write land in a
    /// file outside the cache); made 0600 if an older version left it wider.
    private static func check(fd: Int32, path: String, writable: Bool) throws {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CacheError.io(function: "fstat", path: path, errno: errno) }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw CacheError.unsafe(path: path, reason: "it is not a regular file")
        }
        guard st.st_uid == geteuid() else {
            throw CacheError.unsafe(path: path, reason: "it belongs to user \(st.st_uid), not to user \(geteuid())")
        }
        guard st.st_nlink <= 1 else { throw CacheError.unsafe(path: path, reason: "it has \(st.st_nlink) hard links") }
        if writable && st.st_mode & 0o777 != 0o600 {
            guard fchmod(fd, 0o600) == 0 else { throw CacheError.io(function: "fchmod", path: path, errno: errno) }
        }
    }

    /// The file's length: every recorded range must end within it.
    func size() throws -> Int64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CacheError.io(function: "fstat", path: path, errno: errno) }
        return Int64(st.st_size)
    }

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
            if n == 0 { throw CacheError.inconsistent(path: path, detail: "it is shorter than its recorded ranges") }
            done += n
        }
    }

    /// The descriptor, for the kernel to send from while this object is held (`StoredFile`).
    var descriptor: Int32 { fd }

    /// Makes written bytes durable; must precede recording their range in the index.
    func sync() throws {
        guard fdatasync(fd) == 0 else { throw CacheError.io(function: "fdatasync", path: path, errno: errno) }
    }

    /// A new open file description of this same file (not a path lookup, so it cannot be another
    /// file), for byte-range locks that other descriptions — other entries, other processes — see.
    func openLockDescription() throws -> ByteRangeLock {
        try ByteRangeLock(reopening: fd, path: path)
    }

    /// Tries to take the exclusive lock that eviction needs; false if anyone holds the file open.
    static func lockExclusivelyIfUnused(path: String, _ body: () throws -> Void) rethrows -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 { try body(); return true }  // no data file (or a planted link): nothing can be using it
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        try body()
        return true
    }
}
