import RangeFetch

/// "Read N bytes at offset" over one resource, local or remote. Thread-safe.
public protocol MediaSource: AnyObject, Sendable {
    /// The input as the user gave it.
    var input: String { get }
    /// Total size in bytes, if it can be known (for a remote resource this may fetch the first bytes).
    func size() throws -> Int64?
    /// Reads up to `buffer.count` bytes at `offset`. Returns 0 only at the end of the resource.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int
    /// Makes sure every byte of `range` (clipped to the size) is stored locally, requesting each
    /// missing gap with one closed range request. Offline, a gap is an `offlineMiss`.
    func prefetch(_ range: Range<Int64>) throws
    /// The parts of `range` that cannot be read without the network (empty for local files).
    func missingRanges(in range: Range<Int64>) -> [Range<Int64>]
    /// Tells the source that bytes at or past `end` will not be read (nil: unknown), so that
    /// readahead does not fetch beyond what the job needs.
    func limitReadahead(to end: Int64?)
    /// Makes the bytes stored so far outlive the process: a transfer still running (readahead)
    /// records its bytes only when it ends, and a process that exits first loses them. A job that
    /// promises bytes for later (a prefetch) calls this before it reports.
    func makeDurable() throws
    /// What reading has cost so far.
    var counters: SourceCounters { get }
    /// The resource changed after bytes of its earlier version were read through this source:
    /// reads now throw `SourceError.versionChanged`. A new source reads the new version.
    var versionChanged: Bool { get }
    /// Things a person should hear about once (e.g. "the server ignores range requests").
    var warnings: [String] { get }
    /// Bytes read or prefetched through this source outlive it (the disk cache, or a local file):
    /// false with `--no-cache`, or for a resource larger than the cache limit (streamed through memory).
    var keepsBytes: Bool { get }
    /// Why `keepsBytes` is false, in words a person can act on.
    var whyNotKept: String { get }
}

extension MediaSource {
    /// True when every byte of `range` can be read without the network.
    public func isLocal(_ range: Range<Int64>) -> Bool { missingRanges(in: range).isEmpty }
}

public struct SourceCounters: Sendable, Equatable {
    /// HTTP requests sent to the origin (retries included).
    public var requests: Int64 = 0
    /// New connections opened to the origin.
    public var connections: Int64 = 0
    /// Bytes received from the origin.
    public var bytesFetched: Int64 = 0
    /// Bytes handed to the reader that were already stored locally.
    public var bytesFromCache: Int64 = 0
    public init() {}
}

/// Errors of the read path that are not the fetcher's.
public enum SourceError: Error, CustomStringConvertible, Equatable {
    /// `--offline` and the bytes are not cached.
    case offlineMiss(input: String, range: Range<Int64>)
    case fileNotFound(path: String)
    case fileUnreadable(path: String, reason: String)
    case unsupportedInput(String)
    /// The origin answered in a way that contradicts what was stored or asked.
    case inconsistentOrigin(input: String, detail: String)
    /// The resource changed (validators or size) after bytes of the old version were used.
    case versionChanged(input: String)
    /// The input is not a URL mprobe can request (bad syntax, port out of range...).
    case invalidURL(input: String, reason: String)
    /// Bytes that had to be kept (a prefetch) could not be.
    case notKept(input: String, reason: String)
    /// Neither the cache (`reason`: it refused the bytes, or the resource is larger than its limit)
    /// nor memory can take the resource now: the session streams `limit` resources through memory
    /// already. Frees itself as their readers finish.
    case memoryFull(input: String, reason: String, limit: Int)

    public var description: String {
        switch self {
        case .offlineMiss(let input, let range):
            return "offline: bytes \(range.lowerBound)-\(range.upperBound - 1) of \(input) are not in the cache"
        case .fileNotFound(let path): return "no such file: \(path)"
        case .fileUnreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .unsupportedInput(let input):
            return "unsupported input \(input): give an http(s):// or file:// URL or a local path"
        case .inconsistentOrigin(let input, let detail): return "\(input): \(detail)"
        case .versionChanged(let input):
            return "\(input) changed on the server while it was being read (another ETag, Last-Modified or size); "
                + "nothing of the new version was mixed in"
        case .invalidURL(let input, let reason): return "invalid URL \(input): \(reason)"
        case .notKept(let input, let reason): return "cannot keep \(input) in the cache: \(reason)"
        case .memoryFull(let input, let reason, let limit):
            return "cannot read \(input) now: the cache cannot hold it (\(reason)), and \(limit) resources are "
                + "streamed through memory already; try again once one of them is read"
        }
    }
}
