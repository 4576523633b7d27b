import ByteCache
import Foundation
import RangeFetch
import Synchronization
import URLSupport

/// A resource behind HTTP(S), read through a `RangeStore` (the disk cache, or memory when caching
/// is off): cached bytes are served locally, misses become closed range requests sized by the
/// readahead policy, and only the bytes that are not stored are ever requested.
///
/// One version: the first bytes handed to a reader pin the version (validators) they belong to.
/// If the origin (or another process, through the cache) later shows a different version, the
/// source is done: every read, prefetch and running fetch throws `SourceError.versionChanged`,
/// so a reader never gets bytes of two versions. The job then restarts on a new source if it
/// emitted nothing (`MediaSession.onOneVersion`), else fails.
public final class RemoteSource: MediaSource {
    /// The URL as shown (credentials redacted); `url` is the one requested.
    public let input: String
    private let url: String
    private let fetcher: RangeFetcher
    private let cache: ByteCache?
    private let offline: Bool
    private let cancellation: Cancellation?
    private let inflight = InflightFetches()

    private struct State {
        var store: any RangeStore
        var readahead: ReadaheadState
        var counters = SourceCounters()
        /// Bytes this source fetched, so that serving them is not counted as a cache hit.
        var fetchedHere = ByteRangeSet()
        var warnings: [String] = []
        /// Set once the origin has shown its size (from the store's validators or a response).
        var size: Int64?
        var readaheadLimit: Int64?
        /// The version of the bytes handed to readers so far (nil before the first).
        var pinned: ResourceValidators?
        /// A version other than `pinned` was seen: nothing more is read through this source.
        var versionChanged = false
    }
    private let state: Mutex<State>

    init(url: String, fetcher: RangeFetcher, cache: ByteCache?, offline: Bool, readahead: ReadaheadPolicy,
         cancellation: Cancellation?) throws {
        self.url = url
        input = URLText.redacted(url)
        self.fetcher = fetcher
        self.cache = cache
        self.offline = offline
        self.cancellation = cancellation
        let store: any RangeStore = try cache?.entry(for: url) ?? MemoryRangeStore()
        state = Mutex(State(store: store, readahead: ReadaheadState(policy: readahead), size: store.validators.size))
    }

    public var counters: SourceCounters { state.withLock { $0.counters } }
    public var versionChanged: Bool { state.withLock { $0.versionChanged } }

    public var keepsBytes: Bool { cache != nil && store is CacheEntry }

    public var whyNotKept: String {
        guard let cache else { return "caching is off (--no-cache)" }
        let size = state.withLock { $0.size }.map { "\($0) bytes" } ?? "too large"
        return "it is \(size), more than the cache limit of \(cache.maxBytes) bytes (--max-cache-size), so it is streamed through, not stored"
    }
    public var warnings: [String] { state.withLock { $0.warnings } }

    private var store: any RangeStore { state.withLock { $0.store } }

    public func limitReadahead(to end: Int64?) {
        state.withLock { $0.readaheadLimit = end }
    }

    public func size() throws -> Int64? {
        if let size = state.withLock({ $0.size }) { return size }
        var probe = [UInt8](repeating: 0, count: 1)
        _ = try probe.withUnsafeMutableBytes { try read(into: $0, at: 0) }
        return state.withLock { $0.size }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        precondition(offset >= 0, "negative offset")
        guard buffer.count > 0 else { return 0 }
        var fetchedForThisRead: Int64 = 0
        while true {
            try ensureOneVersion()
            if let size = state.withLock({ $0.size }), offset >= size { return 0 }
            let store = self.store
            let generation = store.generation
            let validators = store.validators
            let n = try store.read(into: buffer, at: offset)
            // The content may have been replaced while the bytes were copied: then look again.
            if n > 0, store.generation != generation { continue }
            if n > 0 {
                try pin(validators)
                let fromCache = state.withLock { s -> Int64 in
                    s.readahead.didRead(at: offset, count: n)
                    let local = s.fetchedHere.gaps(in: offset..<offset + Int64(n)).reduce(0) { $0 + Int64($1.count) }
                    s.counters.bytesFromCache += local
                    return local
                }
                store.recordRead(fromCache: fromCache, fetched: fetchedForThisRead)
                return n
            }
            try store.refresh()
            if store.available.coveredLength(from: offset) > 0 { continue } // another process added it
            guard let fetched = try fetchMiss(at: offset, minimum: Int64(buffer.count)) else { return 0 }
            fetchedForThisRead += fetched
        }
    }

    public func missingRanges(in range: Range<Int64>) -> [Range<Int64>] {
        store.available.gaps(in: range)
    }

    public func prefetch(_ range: Range<Int64>) throws {
        try ensureOneVersion()
        var wanted = range
        if let size = state.withLock({ $0.size }) { wanted = range.clamped(to: 0..<size) }
        var previousGap: Int64?
        while let gap = try missing(in: wanted) {
            // A memory store smaller than the range cannot hold it all: best effort, no loop.
            if gap.lowerBound == previousGap { return }
            previousGap = gap.lowerBound
            if offline { throw SourceError.offlineMiss(input: input, range: gap) }
            guard let claimed = inflight.claim(gap) else {
                previousGap = nil // another thread fetched (or failed to fetch) it: look again
                continue
            }
            defer { inflight.release(claimed) }
            guard try fetch(claimed) != nil else { return } // the resource ends before the gap
            if let size = state.withLock({ $0.size }) { wanted = wanted.clamped(to: 0..<size) }
        }
    }

    /// The first gap of `range` after looking at the index again (other processes may have filled it).
    private func missing(in range: Range<Int64>) throws -> Range<Int64>? {
        guard !range.isEmpty else { return nil }
        if store.available.gaps(in: range).first != nil {
            try store.refresh()
            return store.available.gaps(in: range).first
        }
        return nil
    }

    /// Fetches the missing run that starts at `offset`. Returns the bytes received, or nil at EOF.
    private func fetchMiss(at offset: Int64, minimum: Int64) throws -> Int64? {
        let (store, window, knownSize, limit) = state.withLock { s in
            (s.store, s.readahead.windowForMiss(at: offset), s.size, s.readaheadLimit)
        }
        if let knownSize, offset >= knownSize { return nil } // the size shrank meanwhile: EOF
        var end = offset.saturatingAdd(window)
        if let limit, limit > offset { end = min(end, limit) }
        end = max(end, offset.saturatingAdd(minimum))
        if let knownSize { end = min(end, knownSize) }
        // Never fetch what is stored: stop at the next present byte.
        if let gap = store.available.gaps(in: offset..<end).first, gap.lowerBound == offset {
            end = gap.upperBound
        }
        if offline { throw SourceError.offlineMiss(input: input, range: offset..<end) }
        guard let claimed = inflight.claim(offset..<end) else { return 0 } // someone else fetched it
        defer { inflight.release(claimed) }
        return try fetch(claimed)
    }

    /// Fetches `range` into the store. Returns the bytes received (0 when the content changed
    /// under the transfer and its bytes were refused), or nil when the resource ends before `range`.
    private func fetch(_ range: Range<Int64>) throws -> Int64? {
        var tally = FetchCounters()
        var stored: Int64 = 0 // counted live, for progress
        var deliveredEnd: Int64 = 0
        // The store and its version as this transfer's response left them: bytes go there only.
        var target = state.withLock { ($0.store, $0.store.generation) }
        // Guard the range with the version this reader has seen: a changed origin answers 200.
        let validators = state.withLock { $0.pinned } ?? target.0.validators
        let outcome: FetchOutcome
        do {
            outcome = try fetcher.fetch(url: url, range: range, ifRange: validators.etag ?? validators.lastModified,
                                        cancellation: cancellation, tally: &tally,
                                        onResponse: { info in
                                            try self.accept(info)
                                            target = self.state.withLock { ($0.store, $0.store.generation) }
                                        },
                                        onData: { offset, bytes in
                                            guard try self.store(bytes, at: offset, into: target) else { throw StaleTransfer() }
                                            stored += Int64(bytes.count)
                                            deliveredEnd = max(deliveredEnd, offset + Int64(bytes.count))
                                        })
        } catch is StaleTransfer {
            count(tally, alreadyCounted: stored)
            return 0 // newer content arrived through another transfer: the caller looks again
        } catch {
            count(tally, alreadyCounted: stored)
            throw error
        }
        count(tally, alreadyCounted: stored)
        try store.commit()
        switch outcome {
        case .delivered(let info):
            guard store.available.coveredLength(from: range.lowerBound) == 0 else { return tally.bytesReceived }
            // Nothing arrived for the range itself. A whole body of unknown length (a server that
            // ignores ranges) that ended before it means the resource ends there; else the server lies.
            guard info.rangeIgnored, info.totalSize == nil, deliveredEnd <= range.lowerBound else {
                throw SourceError.inconsistentOrigin(input: input, detail:
                    "the server answered bytes \(range.lowerBound)-\(range.upperBound - 1) without sending them")
            }
            try endsAt(deliveredEnd)
            return nil
        case .pastEnd(let total):
            // A 416 is the end of the resource only at or past a size the origin has stated;
            // anywhere else it is a lie or a broken server, never an empty success.
            guard let end = total ?? state.withLock({ $0.size }), range.lowerBound >= end else {
                throw SourceError.inconsistentOrigin(input: input, detail:
                    "the server refused bytes \(range.lowerBound)-\(range.upperBound - 1) (416) without stating a size they lie beyond")
            }
            try endsAt(end)
            return nil
        }
    }

    /// The resource ends at `size`: remember it, so reads there are EOF.
    private func endsAt(_ size: Int64) throws {
        try learn(ResourceValidators(size: size), contentType: nil)
        state.withLock { $0.size = size }
    }

    /// Throws once the origin has shown a version other than the one read so far.
    private func ensureOneVersion() throws {
        if state.withLock({ $0.versionChanged }) { throw SourceError.versionChanged(input: input) }
    }

    /// Bytes of the version `validators` were handed to a reader: pin it, or fail if it is not
    /// the version pinned before (another process replaced the cached content meanwhile).
    private func pin(_ validators: ResourceValidators) throws {
        try state.withLock { s in
            if let pinned = s.pinned, pinned.conflicts(with: validators) {
                s.versionChanged = true
                throw SourceError.versionChanged(input: input)
            }
            s.pinned = s.pinned?.merged(with: validators) ?? validators
        }
    }

    /// Records what the origin said about the resource. Returns true when stored bytes of an
    /// older version were dropped; throws `versionChanged` when this reader had already used them.
    @discardableResult
    private func learn(_ validators: ResourceValidators, contentType: String?) throws -> Bool {
        let dropped = try store.applyValidators(validators, contentType: contentType)
        try state.withLock { s in
            guard let pinned = s.pinned else { return }
            if pinned.conflicts(with: validators) {
                s.versionChanged = true
                throw SourceError.versionChanged(input: input)
            }
            s.pinned = pinned.merged(with: validators)
        }
        return dropped
    }

    private struct StaleTransfer: Error {}

    /// Stores a piece of a transfer if `target` is still the current store in the same generation.
    private func store(_ bytes: UnsafeRawBufferPointer, at offset: Int64, into target: (any RangeStore, StoreGeneration)) throws -> Bool {
        guard target.0 === store, try target.0.write(bytes, at: offset, generation: target.1) else { return false }
        state.withLock {
            $0.fetchedHere.insert(offset..<offset + Int64(bytes.count))
            $0.counters.bytesFetched += Int64(bytes.count)
        }
        return true
    }

    /// Adds a finished fetch's requests and connections, and the received bytes not yet counted
    /// as they were stored (error bodies, bytes past the range of a server that ignores ranges).
    private func count(_ tally: FetchCounters, alreadyCounted: Int64) {
        state.withLock {
            $0.counters.requests += tally.requests
            $0.counters.connections += tally.connections
            $0.counters.bytesFetched += max(0, tally.bytesReceived - alreadyCounted)
        }
    }

    /// Headers of a response: record the validators (dropping stored bytes of an older version,
    /// failing if this reader used them), move a too-large resource to memory, and note a server
    /// that ignores ranges.
    private func accept(_ info: ResponseInfo) throws {
        let validators = ResourceValidators(size: info.totalSize, etag: info.etag, lastModified: info.lastModified)
        let store = self.store
        let changed = try learn(validators, contentType: info.contentType)
        state.withLock { s in
            if let size = info.totalSize { s.size = size }
            if changed {
                s.warnings.append("\(input) changed on the server; cached bytes of the old version were dropped")
            } else if info.rangeIgnored, !s.warnings.contains(where: { $0.contains("ignores range") }) {
                // A 200 for a new version answers If-Range; only an unchanged resource shows that ranges are ignored.
                s.warnings.append("the server of \(input) ignores range requests; reading from the start instead")
            }
        }
        if let cache, let size = info.totalSize, !cache.canStore(size: size), store is CacheEntry {
            let memory = MemoryRangeStore()
            try memory.applyValidators(validators, contentType: info.contentType)
            state.withLock { $0.store = memory }
            try cache.remove(url: url)
        }
    }
}

extension Int64 {
    /// `self + other`, or `Int64.max` where that would overflow (offsets from damaged files).
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
