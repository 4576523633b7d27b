import ByteCache
import Foundation
import RangeFetch
import Synchronization
import URLSupport

/// Everything one job needs to open inputs: the cache (or none), the fetcher, offline mode,
/// readahead and cancellation. While a source for a remote input is in use, opening the same
/// input again returns it, so concurrent readers of one resource share fetches; the session holds
/// sources weakly, so a finished job's cache entry (its file and its lock) is released at once.
public final class MediaSession: Sendable {
    public let cache: ByteCache?
    public let fetcher: RangeFetcher
    public let offline: Bool
    public let readahead: ReadaheadPolicy
    public let cancellation: Cancellation
    private let remotes = Mutex<[String: WeakSource]>([:])

    private struct WeakSource {
        weak var source: RemoteSource?
    }

    public init(cache: ByteCache?, fetchOptions: FetchOptions = FetchOptions(), offline: Bool = false,
                readahead: ReadaheadPolicy = ReadaheadPolicy(), cancellation: Cancellation = Cancellation()) {
        self.cache = cache
        self.fetcher = RangeFetcher(options: fetchOptions)
        self.offline = offline
        self.readahead = readahead
        self.cancellation = cancellation
    }

    /// What kind of input a string names.
    public enum InputKind: Equatable, Sendable {
        case remote(String)
        case local(path: String)
    }

    public static func classify(_ input: String) throws -> InputKind {
        let lower = input.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            try validateRemote(input)
            return .remote(input)
        }
        if lower.hasPrefix("file://") {
            guard let url = URL(string: input), url.isFileURL else { throw SourceError.unsupportedInput(input) }
            return .local(path: url.path)
        }
        // A scheme we do not speak (ftp://, rtmp://, s3://...) is an error, not a relative path.
        if let colon = input.range(of: "://"),
           input[..<colon.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }),
           !input[..<colon.lowerBound].isEmpty {
            throw SourceError.unsupportedInput(input)
        }
        return .local(path: input)
    }

    /// Refuses what libcurl would mangle or fail on as a network error: whitespace and control
    /// characters (they must be percent-encoded), no host, a port outside 1...65535.
    static func validateRemote(_ url: String) throws {
        func invalid(_ reason: String) -> SourceError { .invalidURL(input: URLText.redacted(url), reason: reason) }
        if url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f }) {
            throw invalid("it contains a space or a control character (percent-encode them, e.g. %20)")
        }
        guard let components = URLComponents(string: url) else { throw invalid("it cannot be parsed") }
        guard let host = components.host, !host.isEmpty else { throw invalid("it names no host") }
        if let port = components.port, !(1...65535).contains(port) {
            throw invalid("port \(port) is outside 1-65535")
        }
    }

    /// Opens `input`: a local path or `file://` URL directly, an http(s) URL through the cache.
    public func open(_ input: String) throws -> any MediaSource {
        switch try MediaSession.classify(input) {
        case .local(let path):
            return try LocalFileSource(input: input, path: path)
        case .remote(let url):
            return try remotes.withLock { remotes in
                // A source that saw the resource change is finished: readers of the new version get a new one.
                if let existing = remotes[url]?.source, !existing.versionChanged { return existing }
                let source = try RemoteSource(url: url, fetcher: fetcher, cache: cache, offline: offline,
                                              readahead: readahead, cancellation: cancellation)
                remotes = remotes.filter { $0.value.source != nil }
                remotes[url] = WeakSource(source: source)
                return source
            }
        }
    }
}

extension MediaSession {
    /// Runs `job` so that it reads one version of its inputs: when the origin's content changed
    /// after the job had read bytes of the old version (`SourceError.versionChanged`), the job
    /// runs once more, on new sources and the new version. Only for jobs that emit nothing before
    /// they return; a second change in a row is the error.
    public func onOneVersion<T>(_ job: () throws -> T) throws -> T {
        do {
            return try job()
        } catch SourceError.versionChanged {
            return try job()
        }
    }
}
