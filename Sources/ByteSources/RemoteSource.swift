import Caching
import Foundation
import RangeFetch
import Support
import Synchronization

/// One reader of a resource behind HTTP(S) (a job, a proxied response), over the `RemoteResource`
/// its session shares between readers: cached bytes are served locally, a miss joins or starts a
/// closed range request sized by this reader's readahead, and a read returns as soon as its first
/// byte is stored — it never waits for the whole window.
///
/// One version: the first bytes handed to this reader pin the version (validators) they belong
/// to. If the resource later shows another version (the origin changed, or another process
/// replaced the cached content), this reader is done: reads and prefetches throw
/// `SourceError.versionChanged`, so it never gets bytes of two versions. Its job then starts
/// over on a new reader if it emitted nothing (`MediaSession.onOneVersion`), else fails.
public final class RemoteSource: MediaSource {
    /// The URL as shown (credentials redacted).
    public let input: String
    private let resource: RemoteResource
    private let offline: Bool
    /// This reader's stake in fetches: interrupted with its job, gone when the reader is.
    private let token: ReaderToken
    private let tally = ReaderTally()
    /// Fetches this reader started or joined that may still be running.
    private let involved = Mutex<[RunningFetch]>([])

    private struct State {
        var readahead: ReadaheadState
        var readaheadLimit: Int64?
        /// The version of the bytes handed out so far (nil before the first), and the store's
        /// generation they came from: without validators, a version change shows only there.
        var pinned: ResourceValidators?
        var pinnedGeneration: StoreGeneration?
        /// Another version was seen after `pinned`: nothing more is read through this reader.
        var versionChanged = false
    }
    private let state: Mutex<State>

    init(resource: RemoteResource, offline: Bool, readahead: ReadaheadPolicy, cancellation: Cancellation) {
        self.resource = resource
        input = resource.shown
        self.offline = offline
        token = ReaderToken(parent: cancellation)
        state = Mutex(State(readahead: ReadaheadState(policy: readahead)))
    }

    /// A finished reader stops the fetches that only it needed (readahead nobody will read; one
    /// that is nearly done goes on), waits for them to end, and commits what it fetched; the
    /// resource is released with its last reader (an entry that never heard from the origin
    /// leaves no row behind).
    deinit {
        token.leave()
        for fetch in involved.withLock({ $0 }) where fetch.isAbandoned || fetch.outcome != nil {
            fetch.waitForThread()
        }
        // A reader that fetched makes it durable as it goes: a command that exits next (`cat`)
        // may end before the store's own commit, or its entry's release, comes.
        if tally.counters.bytesFetched > 0 { try? resource.store.commit() }
    }

    /// Remembers a fetch this reader waits on, forgetting those whose threads are gone.
    private func involve(_ fetch: RunningFetch) -> RunningFetch {
        involved.withLock { list in
            list.removeAll { $0.threadHasExited }
            if !list.contains(where: { $0 === fetch }) { list.append(fetch) }
        }
        return fetch
    }

    public var counters: SourceCounters { tally.counters }
    public var warnings: [String] { resource.warnings }
    public var versionChanged: Bool { state.withLock { $0.versionChanged } }
    public var keepsBytes: Bool { resource.keepsBytes }

    public var whyNotKept: String {
        guard let cache = resource.cache else { return "caching is off (--no-cache)" }
        if let refusal = resource.refusal { return "the cache cannot store it (\(refusal)), so it is streamed through" }
        let size = resource.size.map { "\($0) bytes" } ?? "too large"
        return
            "it is \(size), more than the cache limit of \(cache.maxBytes) bytes (--max-cache-size), so it is streamed through, not stored"
    }

    /// What the resource's store knows of the origin's version.
    public var validators: ResourceValidators { resource.store.validators }
    /// The version of the bytes this reader has handed out, once it has (what they all are of).
    public var version: ResourceValidators? { state.withLock { $0.pinned } }
    /// The origin's `Content-Type`, once a response (or the cache) has said it.
    public var contentType: String? { resource.contentType }
    /// Where relative references in the resource point from: the URL that answered after
    /// redirects, or the one asked for (a resource read from the cache alone).
    public var location: String { resource.location ?? resource.url }

    public func limitReadahead(to end: Int64?) {
        state.withLock { $0.readaheadLimit = end }
    }

    public func makeDurable() throws { try resource.store.commit() }

    /// The size if the origin (or the cache) has said it already; never fetches.
    public var knownSize: Int64? { resource.size }

    public func size() throws -> Int64? {
        if let size = resource.size { return size }
        var probe = [UInt8](repeating: 0, count: 1)
        _ = try probe.withUnsafeMutableBytes { try read(into: $0, at: 0) }
        return resource.size
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        while true {
            if let n = try readStored(into: buffer, at: offset) { return n }
            guard try awaitBytes(at: offset, count: buffer.count) else { return 0 }
        }
    }

    /// Like `read`, but never waits: nil when the bytes at `offset` are not stored yet (or a
    /// fetch is comparing them), for a caller that must not block (the server's event loop),
    /// which then has `awaitBytes` wait elsewhere.
    public func readStored(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int? {
        precondition(offset >= 0, "negative offset")
        // No origin may claim a size past this, so nothing is there (and offsets stay far from overflow).
        guard buffer.count > 0, offset < ResponseInfo.maxResourceSize else { return 0 }
        try ensureOneVersion()
        let (store, size, stop, barrier) = resource.readView(at: offset)
        if let size, offset >= size { return try endOfFile() }
        guard barrier == nil else { return nil }
        let usable = stop.map { Int(min(Int64(buffer.count), $0 - offset)) } ?? buffer.count
        let copied = try store.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<usable]), at: offset)
        let n = copied.count
        guard n > 0 else { return nil }
        try pin(copied.validators, generation: copied.generation)
        state.withLock { $0.readahead.didRead(at: offset, count: n) }
        recordRead(offset..<offset + Int64(n), in: store)
        return n
    }

    /// Pins the version of the stored byte at `offset` without reading it, for a response that
    /// sends it later (from the file, or read then): false, and nothing pinned, when the byte is
    /// not stored, a fetch still compares it, or the size is not known yet.
    public func pinStored(at offset: Int64) throws -> Bool {
        try ensureOneVersion()
        let (store, size, _, barrier) = resource.readView(at: offset)
        guard barrier == nil, let size, offset < size else { return false }
        let found = store.peek(at: offset)
        guard found.count > 0 else { return false }
        try pin(found.validators, generation: found.generation)
        return true
    }

    /// Waits until the byte at `offset` is stored (fetching the missing run from there, sized by
    /// the readahead and at least `count` bytes): false when the resource ends before it.
    @discardableResult
    public func awaitBytes(at offset: Int64, count: Int) throws -> Bool {
        guard count > 0, offset < ResponseInfo.maxResourceSize else { return false }
        while true {
            try ensureOneVersion()
            let (store, size, _, barrier) = resource.readView(at: offset)
            if let size, offset >= size {
                _ = try endOfFile()
                return false
            }
            if let barrier {
                // A fetch is comparing the stored bytes from here with the ones it brings.
                try resource.waitPastBarrier(of: involve(barrier), token: token)
                continue
            }
            if store.available.coveredLength(from: offset) > 0 { return true }
            try store.refresh()
            if store.available.coveredLength(from: offset) > 0 { continue }  // another process added it
            guard try fetchMiss(at: offset, minimum: Int64(count), store: store) else {
                _ = try endOfFile()
                return false
            }
        }
    }

    /// All of `range`, stored, as the file holding it (open while the value is kept), with its
    /// version pinned as a read would: nil when any of it is missing, is not in a file, or is
    /// being compared by a fetch (`OverlapCheck`).
    public func storedFile(_ range: Range<Int64>) throws -> StoredFile? {
        try ensureOneVersion()
        let (store, _, stop, barrier) = resource.readView(at: range.lowerBound)
        guard barrier == nil, stop.map({ $0 >= range.upperBound }) ?? true,
            let stored = try store.openStored(range)
        else { return nil }
        try pin(stored.validators, generation: stored.generation)
        state.withLock { $0.readahead.didRead(at: range.lowerBound, count: range.count) }
        recordRead(range, in: store)
        return stored
    }

    /// Counts a read of `range` in the cache's statistics: one that first reads bytes this
    /// reader's fetches brought is a miss (a cold read sent from the file as it arrives is no
    /// hit); bytes stored before the reader asked are the cache's. The fetched bytes themselves
    /// are counted as they are stored (`RemoteResource`).
    private func recordRead(_ range: Range<Int64>, in store: any RangeStore) {
        let counted = tally.read(range)
        store.recordRead(fromCache: counted.local, miss: counted.firstFetched > 0)
    }

    public func missingRanges(in range: Range<Int64>) -> [Range<Int64>] {
        resource.store.available.gaps(in: range)
    }

    /// Whether the byte at `offset`, not stored yet, is being fetched now (for any reader).
    public func isFetching(_ offset: Int64) -> Bool { resource.isFetching(offset) }

    public func prefetch(_ range: Range<Int64>) throws {
        try ensureOneVersion()
        var wanted = range.clamped(to: 0..<(resource.size ?? Int64.max))
        var previousGap: Int64?
        while let gap = try missing(in: wanted) {
            // A memory store smaller than the range cannot hold it all: best effort, no loop.
            if gap.lowerBound == previousGap { return }
            previousGap = gap.lowerBound
            if offline { throw SourceError.offlineMiss(input: input, range: gap) }
            guard
                let started = resource.fetch(
                    covering: gap.lowerBound, to: gap.upperBound, ifRange: ifRange,
                    token: token, tally: tally)
            else {
                previousGap = nil  // stored meanwhile: look again
                continue
            }
            let fetch = involve(started)
            let continues = try resource.wait(for: nil, on: fetch, token: token)
            // The bytes fetched for this reader must be of the version it has read.
            try pin(resource.store.validators, generation: resource.store.generation, handedOut: false)
            guard continues else { return }  // the resource ends before the gap
            wanted = wanted.clamped(to: 0..<(resource.size ?? Int64.max))
        }
    }

    /// The first gap of `range` after looking at the index again (other processes may have filled it).
    private func missing(in range: Range<Int64>) throws -> Range<Int64>? {
        guard !range.isEmpty else { return nil }
        let store = resource.store
        guard store.available.gaps(in: range).first != nil else { return nil }
        try store.refresh()
        return store.available.gaps(in: range).first
    }

    /// Fetches (or waits for) the missing run that starts at `offset`, returning as soon as its
    /// first byte is stored. False when the resource ends before `offset`.
    private func fetchMiss(at offset: Int64, minimum: Int64, store: any RangeStore) throws -> Bool {
        // Bytes already on their way: wait for them. Only a new request grows the readahead window.
        if let running = resource.runningFetch(covering: offset, token: token) {
            return try resource.wait(for: offset, on: involve(running), token: token)
        }
        let (window, limit) = state.withLock { ($0.readahead.windowForMiss(at: offset), $0.readaheadLimit) }
        let knownSize = resource.size
        if let knownSize, offset >= knownSize { return false }  // the size shrank meanwhile: EOF
        var end = offset.saturatingAdd(window)
        if let limit, limit > offset, limit < end {
            end = limit
            // Reads past the limit double from what was fetched, not from a window never taken
            // (a demuxer reading past an MP3's head fetched 464 KB of a 535 KB file).
            state.withLock { $0.readahead.clamp(to: limit - offset) }
        }
        end = max(end, offset.saturatingAdd(minimum))
        if let knownSize { end = min(end, knownSize) }
        // Never fetch what is stored: stop at the next present byte.
        if let gap = store.available.gaps(in: offset..<end).first, gap.lowerBound == offset {
            end = gap.upperBound
        }
        if offline { throw SourceError.offlineMiss(input: input, range: offset..<end) }
        guard let fetch = resource.fetch(covering: offset, to: end, ifRange: ifRange, token: token, tally: tally) else {
            return true  // stored meanwhile: read it
        }
        return try resource.wait(for: offset, on: involve(fetch), token: token)
    }

    /// The end of the resource, if it is the end of the version this reader has read: an end that
    /// moved (a 416 naming another size, a file that shrank) is another version, not a short file.
    private func endOfFile() throws -> Int {
        try pin(resource.store.validators, generation: resource.store.generation, handedOut: false)
        return 0
    }

    /// The validator a new request is guarded with: the version this reader has seen, else the stored one.
    private var ifRange: String? {
        let validators = state.withLock { $0.pinned } ?? resource.store.validators
        return validators.etag ?? validators.lastModified
    }

    /// Throws once this reader has seen a version other than the one it read.
    private func ensureOneVersion() throws {
        if state.withLock({ $0.versionChanged }) { throw SourceError.versionChanged(input: input) }
    }

    /// Bytes of the version `validators` (of the store's `generation`) reached this reader: pin
    /// it (when they were handed out), or fail if another version was pinned before.
    private func pin(
        _ validators: ResourceValidators, generation: StoreGeneration? = nil, handedOut: Bool = true
    ) throws {
        try state.withLock { s in
            if let pinned = s.pinned {
                let otherGeneration = generation.map { s.pinnedGeneration != nil && $0 != s.pinnedGeneration } ?? false
                if pinned.conflicts(with: validators) || otherGeneration {
                    s.versionChanged = true
                    throw SourceError.versionChanged(input: input)
                }
                s.pinned = pinned.merged(with: validators)
                if s.pinnedGeneration == nil { s.pinnedGeneration = generation }
            } else if handedOut {
                s.pinned = validators
                s.pinnedGeneration = generation
            }
        }
    }
}
