import ByteCache
import Foundation
import RangeFetch
import Synchronization

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
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return .remote(input) }
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

    /// Opens `input`: a local path or `file://` URL directly, an http(s) URL through the cache.
    public func open(_ input: String) throws -> any MediaSource {
        switch try MediaSession.classify(input) {
        case .local(let path):
            return try LocalFileSource(input: input, path: path)
        case .remote(let url):
            return try remotes.withLock { remotes in
                if let existing = remotes[url]?.source { return existing }
                let source = try RemoteSource(input: url, fetcher: fetcher, cache: cache, offline: offline,
                                              readahead: readahead, cancellation: cancellation)
                remotes = remotes.filter { $0.value.source != nil }
                remotes[url] = WeakSource(source: source)
                return source
            }
        }
    }
}
