import Foundation
import Synchronization

/// A local file read directly with `pread`, bypassing the cache. Sole owner of its descriptor.
public final class LocalFileSource: MediaSource {
    public let input: String
    public let path: String
    private let fd: Int32
    private let fileSize: Int64
    private let served = Atomic<Int64>(0)

    public init(input: String, path: String) throws {
        self.input = input
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT || e == ENOTDIR { throw SourceError.fileNotFound(path: path) }
            throw SourceError.fileUnreadable(path: path, reason: String(cString: strerror(e)))
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw SourceError.fileUnreadable(path: path, reason: "not a regular file")
        }
        self.fd = fd
        fileSize = Int64(st.st_size)
    }

    deinit { close(fd) }

    public func size() throws -> Int64? { fileSize }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset < fileSize, buffer.count > 0 else { return 0 }
        while true {
            let n = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw SourceError.fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
            served.add(Int64(n), ordering: .relaxed)
            return n
        }
    }

    public func limitReadahead(to end: Int64?) {}
    public func makeDurable() throws {}

    /// Nothing in the file is missing; what lies past its end is (a cut file's index points there).
    public func missingRanges(in range: Range<Int64>) -> [Range<Int64>] {
        range.upperBound > fileSize ? [max(range.lowerBound, fileSize)..<range.upperBound] : []
    }

    /// A local file is already local.
    public func prefetch(_ range: Range<Int64>) throws {}

    public var counters: SourceCounters {
        var c = SourceCounters()
        c.bytesFromCache = served.load(ordering: .relaxed)
        return c
    }

    public var warnings: [String] { [] }

    /// Local files are read as they are; only remote resources are checked for versions.
    public var versionChanged: Bool { false }

    /// A local file is already where a later job will read it.
    public var keepsBytes: Bool { true }
    public var whyNotKept: String { "" }
}
