#if canImport(Glibc)
import Glibc
#endif

/// What the origin says identifies one version of a resource. If any known field changes,
/// the bytes stored for the old version are dropped before new ones are added.
public struct ResourceValidators: Sendable, Equatable {
    public var size: Int64?
    public var etag: String?
    public var lastModified: String?

    public init(size: Int64? = nil, etag: String? = nil, lastModified: String? = nil) {
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }

    /// True when both sides know a field and disagree on it. Unknown fields never conflict.
    public func conflicts(with other: ResourceValidators) -> Bool {
        func differ<T: Equatable>(_ a: T?, _ b: T?) -> Bool {
            if let a, let b { return a != b }
            return false
        }
        return differ(size, other.size) || differ(etag, other.etag) || differ(lastModified, other.lastModified)
    }

    /// Fields of `other` fill the ones this value does not know.
    public func merged(with other: ResourceValidators) -> ResourceValidators {
        ResourceValidators(
            size: other.size ?? size, etag: other.etag ?? etag,
            lastModified: other.lastModified ?? lastModified)
    }
}

/// One resource as the index records it.
public struct CachedResource: Sendable {
    public let key: String
    public let url: String
    public let validators: ResourceValidators
    public let contentType: String?
    /// Seconds since 1970.
    public let created: Double
    public let lastAccess: Double
    public let ranges: ByteRangeSet

    public var size: Int64? { validators.size }
    public var storedBytes: Int64 { ranges.byteCount }
}

public struct CacheStats: Sendable {
    public let resources: Int
    public let storedBytes: Int64
    public let maxBytes: Int64
    /// Reads answered entirely from the cache, and reads that needed the origin.
    public let hits: Int64
    public let misses: Int64
    public let bytesFromCache: Int64
    public let bytesFetched: Int64
}

/// What went wrong in the cache directory, as a sentence that names the file.
public enum CacheError: Error, CustomStringConvertible {
    /// A system call failed for a file of the cache.
    case io(function: String, path: String, errno: Int32)
    /// The index and the data files disagree in a way no writer of ours can cause.
    case inconsistent(path: String, detail: String)
    /// Something in the cache directory is not what the cache makes (a symbolic link, a file of
    /// another user, a file where a directory belongs): refused rather than followed or used.
    case unsafe(path: String, reason: String)
    /// The cache is open read-only (a read-only directory or file system, or an index that could
    /// not be opened for writing), and this operation needs to write.
    case readOnly(path: String, reason: String)
    /// The directory holds files and is not a cache: nothing in it is touched.
    case notACache(path: String, holds: [String])

    /// True when the cache can store nothing now: it is read-only (or its file system was
    /// remounted so), or its disk (or quota) is full. What is stored can still be read.
    public var refusesWrites: Bool {
        switch self {
        case .readOnly: true
        case .io(_, _, let code): [ENOSPC, EDQUOT, EROFS].contains(code)
        default: false
        }
    }

    /// `refusesWrites` of a cache's error, or an index that could not be written (SQLite's full,
    /// read-only or I/O failures).
    public static func refusesWrites(_ error: any Error) -> Bool {
        if let error = error as? CacheError { return error.refusesWrites }
        return (error as? SQLiteError)?.isStorageFailure ?? false
    }

    public var description: String {
        switch self {
        case .io(let function, let path, let errno):
            return "\(function) failed for \(path): \(String(cString: strerror(errno)))"
        case .inconsistent(let path, let detail):
            return "the cache file \(path) is inconsistent: \(detail)"
        case .unsafe(let path, let reason):
            return "refusing to use \(path) as part of the cache: \(reason)"
        case .readOnly(let path, let reason):
            return "cannot write to the cache in \(path): \(reason)"
        case .notACache(let path, let holds):
            let shown = holds.prefix(3).joined(separator: ", ") + (holds.count > 3 ? ", …" : "")
            return "\(path) is not an mprobe cache: it already holds other files (\(shown)); "
                + "give the cache a new or empty directory"
        }
    }
}
