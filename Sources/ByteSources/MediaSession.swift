import Caching
import Foundation
import RangeFetch
import Support
import Synchronization
import URLSupport

/// Everything jobs need to open inputs: the cache (or none), the fetcher (whose pool keeps
/// connections to origins warm), offline mode, readahead and cancellation. A CLI run has one; the
/// service has one for all its jobs and proxied responses.
///
/// Each `open` gives a new reader (its own version pin, readahead and costs), but readers of one
/// URL share a `RemoteResource` while any is in use, so concurrent readers share fetches. The
/// session holds resources weakly: once the last reader is gone, its cache entry (file and lock)
/// is released.
public final class MediaSession: Sendable {
    public let cache: ByteCache?
    public let fetcher: RangeFetcher
    public let offline: Bool
    public let readahead: ReadaheadPolicy
    public let cancellation: Cancellation
    private let remotes: ResourceRegistry
    private let notices: OriginNotices
    private let memorySlots: MemorySlots

    /// `keepWarm`: how many recently used resources stay open after their last reader left, for a
    /// long-running process whose clients come back (a player's next range request, a job after a
    /// probe): they skip reopening their cache entry, and their index rows, each time. A warm entry
    /// is held open, so eviction passes it by, until the cache is over its limit: then the warm
    /// entries are let go (`ByteCache.onHeldOverLimit`). A CLI run keeps none.
    /// `onNotice` hears, once per origin, what readers learnt about it (an origin without
    /// validators), as a sentence; the same sentence is among the first such resource's warnings.
    public init(
        cache: ByteCache?, fetchOptions: FetchOptions = FetchOptions(), offline: Bool = false,
        readahead: ReadaheadPolicy = ReadaheadPolicy(), cancellation: Cancellation = Cancellation(),
        keepWarm: Int = 0, onNotice: (@Sendable (String) -> Void)? = nil
    ) {
        self.cache = cache
        self.fetcher = RangeFetcher(options: fetchOptions)
        self.offline = offline
        self.readahead = readahead
        self.cancellation = cancellation
        remotes = ResourceRegistry(keepWarm: keepWarm)
        notices = OriginNotices(onNotice: onNotice)
        memorySlots = MemorySlots()
        if keepWarm > 0 {
            // Weakly: the cache outlives no session through its warm entries, which hold the cache.
            cache?.onHeldOverLimit { [weak remotes] passedBy, excess in
                remotes?.releaseWarm(among: passedBy, excess: excess) ?? false
            }
        }
    }

    private init(sharing parent: MediaSession, cancellation: Cancellation) {
        cache = parent.cache
        fetcher = parent.fetcher
        offline = parent.offline
        readahead = parent.readahead
        self.cancellation = cancellation
        remotes = parent.remotes
        notices = parent.notices
        memorySlots = parent.memorySlots
    }

    /// A session for one job of a long-running process: the same cache, fetcher (warm
    /// connections) and shared resources, with the job's own cancellation.
    public func job(cancellation: Cancellation) -> MediaSession {
        MediaSession(sharing: self, cancellation: cancellation)
    }

    /// Lets go of the resources of `url`'s cache entry that this session keeps open (warm, or
    /// shared while readers use them): the entry was removed from the cache, and a reader that
    /// comes next must not be served its old bytes from memory, but find it gone. Readers already
    /// reading keep what they read.
    public func forget(_ url: String) {
        let rules = fetcher.options.urlRules
        let key = rules.key(url)
        remotes.forget { rules.key($0) == key }
    }

    /// `url` as output, errors and stored records show it (`URLRules.shown`: no userinfo, no
    /// signatures): what a job's result says of the URLs it derived (a playlist's segments).
    public func shown(_ url: String) -> String { fetcher.options.urlRules.shown(url) }

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
            input[..<colon.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }
            ),
            !input[..<colon.lowerBound].isEmpty
        {
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
        // URLComponents has no port for digits past Int's range; read them as written.
        if let authority = URLText.host(of: url), !authority.hasSuffix("]"), let colon = authority.lastIndex(of: ":") {
            let digits = authority[authority.index(after: colon)...]
            if !digits.isEmpty, Int(digits).map({ !(1...65535).contains($0) }) ?? true {
                throw invalid("port \(digits.prefix(12)) is outside 1-65535")
            }
        }
    }

    /// Opens `input`: a local path or `file://` URL directly, an http(s) URL through the cache.
    /// `cancellation` is the reader's own (a proxied response's); by default the session's.
    public func open(_ input: String, cancellation token: Cancellation? = nil) throws -> any MediaSource {
        // A URL as most are written is known remote without lowercasing it, and one whose
        // resource is open was validated when it was made (the range proxy opens the same URL
        // for every request of a player).
        if input.hasPrefix("http://") || input.hasPrefix("https://") { return try openRemote(input, token) }
        switch try MediaSession.classify(input) {
        case .local(let path):
            return try LocalFileSource(input: input, path: path)
        case .remote(let url):
            return try openRemote(url, token)
        }
    }

    private func openRemote(_ url: String, _ token: Cancellation?) throws -> RemoteSource {
        let resource = try remotes.resource(for: url) {
            try MediaSession.validateRemote(url)
            return try RemoteResource(
                url: url, shown: fetcher.options.urlRules.shown(url), fetcher: fetcher, cache: cache,
                notices: notices, memorySlots: memorySlots, leftCache: { [weak remotes] in remotes?.forgetWarm($0) })
        }
        return RemoteSource(
            resource: resource, offline: offline, readahead: readahead, cancellation: token ?? cancellation)
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

/// The resources readers use now, by URL, held weakly, and the few most recently used held
/// strongly (`keepWarm`): shared by a session and its job sessions.
private final class ResourceRegistry: Sendable {
    private struct WeakResource {
        weak var resource: RemoteResource?
    }
    private struct State {
        var resources: [String: WeakResource] = [:]
        /// Most recently used last; disk-backed resources only (a memory store may hold 64 MB).
        var warm: [RemoteResource] = []
    }
    /// Every open of the service's readers passes here: a lock that sleeps rather than spins.
    private let state = BlockingLock(State())
    private let keepWarm: Int

    init(keepWarm: Int) { self.keepWarm = max(0, keepWarm) }

    /// Forgets the resources whose URL `matches`: the next open of one makes a new one.
    func forget(_ matches: (String) -> Bool) {
        let dropped = state.withLock { s in
            s.resources = s.resources.filter { !matches($0.key) }
            return s.warm.drain { matches($0.url) }
        }
        letGo(dropped)
    }

    /// Lets go of warm resources that eviction passed by (`ByteCache.onHeldOverLimit`), the least
    /// recently used first, until the bytes they store cover `excess`: true when it let any go.
    /// Only the registry knows how recently a warm resource was used (the index knows when it was
    /// opened), so the order is its own.
    func releaseWarm(among passedBy: [ByteCache.HeldResource], excess: Int64) -> Bool {
        let bytesOfRow = Dictionary(passedBy.map { ($0.row, $0.bytes) }, uniquingKeysWith: { first, _ in first })
        let released = state.withLock { s in
            var released: [RemoteResource] = [], kept: [RemoteResource] = []
            var freed: Int64 = 0
            for resource in s.warm {
                if freed < excess, let row = resource.cacheRow, let bytes = bytesOfRow[row] {
                    released.append(resource)
                    freed += bytes
                } else {
                    kept.append(resource)
                }
            }
            s.warm = kept
            return released
        }
        letGo(released)
        return !released.isEmpty
    }

    /// Takes `resource` off the warm list: its bytes went from the disk to memory (a full disk, or
    /// a resource larger than the cache), and memory, up to 64 MiB a resource, is not kept for later.
    func forgetWarm(_ resource: RemoteResource) {
        letGo(state.withLock { s in s.warm.drain { $0 === resource } })
    }

    func resource(for url: String, make: () throws -> RemoteResource) throws -> RemoteResource {
        let (resource, taken) = try state.withLock { s in
            // Every reference the registry takes here ends outside the lock (`letGo`), those its
            // search for dead entries takes too.
            var taken: [RemoteResource] = []
            let resource: RemoteResource
            if let existing = s.resources[url]?.resource {
                resource = existing
            } else {
                resource = try make()
                s.resources = s.resources.filter { entry in
                    guard let alive = entry.value.resource else { return false }
                    taken.append(alive)
                    return true
                }
                s.resources[url] = WeakResource(resource: resource)
            }
            // A player asks for one URL range after range: most opens find it the most recent already.
            if keepWarm > 0, resource.keepsBytes, s.warm.last !== resource {
                s.warm.removeAll { $0 === resource }
                s.warm.append(resource)
                if s.warm.count > keepWarm { taken.append(s.warm.removeFirst()) }
            }
            return (resource, taken)
        }
        letGo(taken)
        return resource
    }

    /// Where the registry's references to `resources` end: outside its lock, because the last one
    /// closes the resource's cache entry, whose commit may evict, and eviction may call
    /// `releaseWarm`, which takes the lock (a second time on one thread: a deadlock).
    private func letGo(_ resources: [RemoteResource]) {
        withExtendedLifetime(resources) {}
    }
}

extension Array {
    /// Removes the elements that `matches` and returns them.
    fileprivate mutating func drain(_ matches: (Element) -> Bool) -> [Element] {
        let taken = filter(matches)
        removeAll(where: matches)
        return taken
    }
}
