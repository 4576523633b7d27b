import Caching
import Foundation
import RangeFetch
import URLSupport

/// One resource behind HTTP(S) as a session shares it between its readers (`RemoteSource`s: jobs,
/// proxy responses): the store of its bytes (the disk cache, or memory when caching is off or the
/// resource is too big), what the origin said about it, and the range requests running now.
///
/// A missing byte is fetched once however many readers want it: a reader joins a running fetch
/// that covers it, or starts one on a thread of its own; every reader waiting wakes as each piece
/// is stored. Only bytes that are not stored are ever requested.
final class RemoteResource: @unchecked Sendable {
    /// The URL requested (it may carry credentials) and as it is shown.
    let url: String
    let shown: String
    let fetcher: RangeFetcher
    let cache: ByteCache?
    private let notices: OriginNotices
    /// Told when the resource leaves the cache for memory (`streamThrough`, `moveToMemory`), after
    /// the fact.
    private let leftCache: (@Sendable (RemoteResource) -> Void)?
    /// The session's bound on resources held in memory: those the cache refused, and those larger
    /// than its limit.
    private let memorySlots: MemorySlots

    // Guarded by `condition`, which is also signalled whenever bytes are stored or a fetch ends.
    private let condition = NSCondition()
    private var storeValue: any RangeStore
    private var sizeValue: Int64?
    private var warningsValue: [String] = []
    private var contentTypeValue: String?
    private var locationValue: String?
    private var running: [RunningFetch] = []
    /// Why its bytes are streamed through rather than kept, when the cache refused them; and the
    /// memory slot it holds while in memory (refused, or larger than the cache's limit).
    private var refusedValue: String?
    private var memorySlot: MemorySlots.Slot?

    /// `leftCache` must not be called back into the caller's locks: it is told from fetch threads.
    init(
        url: String, shown: String, fetcher: RangeFetcher, cache: ByteCache?, notices: OriginNotices,
        memorySlots: MemorySlots, leftCache: (@Sendable (RemoteResource) -> Void)? = nil
    ) throws {
        self.url = url
        self.notices = notices
        self.memorySlots = memorySlots
        self.leftCache = leftCache
        self.shown = shown
        self.fetcher = fetcher
        self.cache = cache
        do {
            storeValue = try cache?.entry(for: url) ?? MemoryRangeStore()
        } catch let error as CacheError where error.refusesWrites {
            // Not even an empty data file fits: streamed through (`streamThrough`), if memory may.
            guard let slot = memorySlots.take() else {
                throw SourceError.memoryFull(input: shown, reason: "\(error)", limit: memorySlots.limit)
            }
            storeValue = MemoryRangeStore()
            memorySlot = slot
            refusedValue = error.description
            warningsValue = [streamedThrough(because: error)]
        }
        sizeValue = storeValue.validators.size
        contentTypeValue = try cache?.resource(for: url)?.contentType
    }

    var store: any RangeStore { condition.withLock { storeValue } }
    /// What a read at `offset` may take, in one look (the read path's hot spot): the store, the
    /// size, where it must stop (a fetch's barrier ahead, `OverlapCheck`), and a fetch whose
    /// barrier is right at `offset`, to wait for before reading on.
    func readView(at offset: Int64) -> (store: any RangeStore, size: Int64?, stop: Int64?, waitFor: RunningFetch?) {
        condition.withLock {
            var stop: Int64?, waitFor: RunningFetch?
            for fetch in running {
                guard let barrier = fetch.barrier, barrier >= offset else { continue }
                if barrier == offset { waitFor = fetch }
                stop = min(stop ?? barrier, barrier)
            }
            return (storeValue, knownSize(), stop, waitFor)
        }
    }
    /// The size, once the origin (or the cache) has said it.
    var size: Int64? { condition.withLock { knownSize() } }
    /// Under `condition`: the size as an answer said it, or as the store's records do. Another
    /// process may have recorded it since this resource was opened: a reader that waited for that
    /// process's fetch, and found the bytes in the index, has no answer of its own to learn it
    /// from (`mprobe serve` answered such a player 502, "did not say how long it is").
    private func knownSize() -> Int64? {
        if sizeValue == nil, let stored = storeValue.validators.size { sizeValue = stored }
        return sizeValue
    }
    var warnings: [String] { condition.withLock { warningsValue } }
    /// The origin's `Content-Type`, once known.
    var contentType: String? { condition.withLock { contentTypeValue } }
    /// The URL that answered last, after redirects (nil until a response, e.g. read from the cache).
    var location: String? { condition.withLock { locationValue } }

    /// Bytes kept by this resource outlive it: the disk cache, not memory.
    var keepsBytes: Bool { cache != nil && store is CacheEntry }
    /// The index row of its cache entry; nil when its bytes are kept in memory.
    var cacheRow: Int64? { (store as? CacheEntry)?.generation.row }

    // MARK: Fetching

    /// The running fetch that covers `offset`, joined by `token`, if there is one.
    func runningFetch(covering offset: Int64, token: ReaderToken) -> RunningFetch? {
        condition.withLock {
            let existing = running.first { $0.range.contains(offset) }
            existing?.join(token)
            return existing
        }
    }

    /// Whether a fetch running now covers `offset`: its bytes are on their way.
    func isFetching(_ offset: Int64) -> Bool {
        condition.withLock { running.contains { $0.range.contains(offset) } }
    }

    /// A fetch covering `offset`: a running one (joined), or a new one for `offset..<end`, trimmed
    /// to stop where another running fetch starts or a stored byte is. Nil when the byte at
    /// `offset` was stored meanwhile (read it). `ifRange` guards a new request with the version its
    /// reader has seen; `tally` is told what the new request costs.
    func fetch(
        covering offset: Int64, to end: Int64, ifRange: String?, token: ReaderToken,
        tally: ReaderTally
    ) -> RunningFetch? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let existing = running.first(where: { $0.range.contains(offset) }) {
                existing.join(token)
                return existing
            }
            if storeValue.available.coveredLength(from: offset) > 0 { return nil }
            // Without a validator (or before the first answer says there is one), a fetch near a
            // running one waits for it: side by side, nothing would compare their bytes.
            let validators = storeValue.validators
            if validators.etag == nil, validators.lastModified == nil,
                running.contains(where: { OverlapCheck.mustWait(offset..<end, for: $0.range) })
            {
                condition.wait()  // until a fetch ends (`finish`) or the validators are known (`accept`)
                continue
            }
            // A fetch whose bytes are all stored is only finishing: let it hand its connection back,
            // so that a sequential reader goes on over one kept-alive connection. Then look again:
            // another reader may have started what this one wants meanwhile.
            guard running.contains(where: { storeValue.available.contains($0.range) }) else { break }
            condition.wait()  // until it ends (`finish`)
        }
        var stop = running.map(\.range.lowerBound).filter { $0 > offset }.min() ?? end
        if let stored = storeValue.available.gaps(in: offset..<max(offset + 1, stop)).first, stored.lowerBound == offset
        {
            stop = stored.upperBound
        }
        let fetch = RunningFetch(range: offset..<max(offset + 1, min(end, stop)), for: token)
        running.append(fetch)
        // The thread holds the resource only while it runs, and says when it has let go.
        let resource = Unmanaged.passRetained(self)
        let thread = Thread {
            resource.takeUnretainedValue().run(fetch, ifRange: ifRange, tally: tally)
            resource.release()
            fetch.threadExited()
        }
        thread.name = "mprobe.fetch"
        thread.start()
        return fetch
    }

    /// Waits until `offset` is stored (true), the fetch ends without it (true: look again),
    /// the resource ends before it (false), or the fetch fails (throws). `token` cancels the wait.
    func wait(for offset: Int64?, on fetch: RunningFetch, token: ReaderToken) throws -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let offset, storeValue.available.coveredLength(from: offset) > 0 { return true }
            switch fetch.outcome {
            case .done?: return true
            case .endOfResource?: return false
            case .failed(let error)?: throw error
            case nil: break
            }
            if token.interrupted { throw FetchError.cancelled(url: shown) }
            // Woken by each store and by the fetch's end; timed only for the token, whose
            // cancellation is polled (it may follow a condition: `Cancellation(when:)`).
            _ = condition.wait(until: Date().addingTimeInterval(0.2))
        }
    }

    /// The body of a fetch thread: one request (with the fetcher's retries), its bytes stored as
    /// they arrive, then committed; waiting readers are woken at each step.
    private func run(_ fetch: RunningFetch, ifRange: String?, tally: ReaderTally) {
        // Other processes sharing the cache may be fetching these bytes: claim them first. Without
        // a validator the claim reaches `OverlapCheck.overlap` past both ends, so that no other
        // process stores bytes next to these that neither compared (`OverlapCheck`).
        let claim: FetchClaim
        let range: Range<Int64>
        do {
            // Known to be larger than the cache (an earlier reader found no memory slot for it):
            // into memory, or refused again, before the origin is asked.
            if let cache, let entry = store as? CacheEntry, let size = entry.validators.size,
                !cache.canStore(size: size)
            {
                try moveToMemory(from: entry, validators: entry.validators, contentType: contentType, cache: cache)
            }
            guard let (claimed, missing) = try claimMissing(fetch) else {
                finish(fetch, .done)  // stored meanwhile, by another fetch: readers look again
                return
            }
            (claim, range) = (claimed, missing)
        } catch {
            finish(fetch, .failed(error is CancellationError ? FetchError.cancelled(url: shown) : error))
            return
        }
        // An origin without validators: the stored bytes around the gap come too, to be compared.
        let check = OverlapCheck(core: range, validators: store.validators, stored: store.available)
        if let check, check.request.upperBound > range.upperBound { fetch.setBarrier(range.upperBound) }
        // What arrives is committed by the store within a second, however slowly it comes.
        var held = check.flatMap(HeldTail.init)
        var counters = FetchCounters()
        var stored: Int64 = 0  // counted live, for progress
        var responses: Int64 = 0  // counted as they arrive
        var deliveredEnd: Int64 = 0
        // The store and its generation as this transfer's response left them: bytes go there only.
        var target = condition.withLock { (storeValue, storeValue.generation) }
        var outcome: RunningFetch.Outcome
        do {
            let result = try fetcher.fetch(
                url: url, range: check?.request ?? range, ifRange: ifRange, cancellation: fetch.cancellation,
                resumeOverlap: check == nil ? 0 : OverlapCheck.overlap,
                tally: &counters,
                onResponse: { info in
                    responses += 1
                    tally.responded()
                    try self.accept(info)
                    target = self.condition.withLock { (self.storeValue, self.storeValue.generation) }
                },
                onData: { offset, bytes in
                    if let check {
                        try self.checkAndStore(
                            bytes, at: offset, check: check, held: &held, fetch: fetch,
                            into: target, tally: tally, stored: &stored,
                            deliveredEnd: &deliveredEnd)
                        return
                    }
                    let piece = offset..<offset + Int64(bytes.count)
                    // Counted before any reader can see the bytes, so that
                    // reading them is not mistaken for a cache hit.
                    tally.stored(piece)
                    guard try self.store(bytes, at: offset, into: target) else {
                        tally.refused(piece)
                        throw StaleTransfer()
                    }
                    stored += Int64(bytes.count)
                    fetch.arrived(bytes.count)
                    deliveredEnd = max(deliveredEnd, piece.upperBound)
                })
            outcome = try interpret(result, range: range, deliveredEnd: deliveredEnd)
            // Readers read the bytes from the store as they are (written, not yet durable): they
            // need not wait for an `fdatasync`, which a sequential reader's next request would
            // otherwise wait behind (tens of ms per 16 MiB), and beside which that request's
            // writes would go several times slower. So the store commits them once the reader's
            // run of fetches pauses (or within the second) and releases the claim after, for
            // other processes. Only where all the claim holds is stored — the origin
            // has validators, so the claim had no margin (a first fetch, before the validators
            // were known, has one), and nothing was cut short — can no reader's next fetch meet
            // it while it is still held.
            if OverlapCheck.margin(for: store.validators) == 0, target.0.available.contains(claim.range) {
                target.0.releaseAfterCommit(claim)
                tally.finished(counters, alreadyCounted: stored, responses: responses)
                finish(fetch, outcome)
                return
            }
            try store.commit()
        } catch is StaleTransfer {
            outcome = .done  // newer content arrived through another transfer: readers look again
        } catch let mismatch as OverlapMismatch {
            // Another version under the same size: none of the stored bytes can be trusted with
            // the new ones. Readers that used them find their generation gone; the rest read anew.
            // A store that cannot drop them (read-only) can only fail its readers.
            if (try? target.0.dropVersion(target.1)) != nil {
                condition.withLock {
                    warningsValue.append(
                        "\(shown) changed on the server: bytes at \(mismatch.offset) differ from the cached ones "
                            + "(it sends neither ETag nor Last-Modified to say so); cached bytes of the old version were dropped"
                    )
                }
                outcome = .done
            } else {
                outcome = .failed(SourceError.versionChanged(input: shown))
            }
        } catch let error where CacheError.refusesWrites(error) {
            // The bytes could not be made durable (a full disk at the commit): readers look again,
            // in memory (`streamThrough`), if memory may.
            outcome =
                streamThrough(from: target.0, because: error) != nil ? .done : .failed(memoryFull("\(error)"))
        } catch {
            try? store.commit()  // what arrived before the failure is good
            outcome = .failed(error)
        }
        // After the commit, so a waiting process finds the bytes; before the readers hear the
        // outcome, so a reader that goes on to fetch what follows does not find this claim still
        // held, take it for another process's, wait, and then fetch nothing (a flaky test's one
        // request where two were due).
        claim.release()
        tally.finished(counters, alreadyCounted: stored, responses: responses)
        finish(fetch, outcome)
    }

    /// Claims the bytes `fetch` is for from other fetches sharing the store (other processes, and
    /// with margins this one's too), and returns the claim with what is still missing from the
    /// fetch's first byte on; nil when that byte has been stored meanwhile. Without a validator the
    /// claim reaches `OverlapCheck.overlap` past both ends, so that no other fetch stores bytes next
    /// to these that neither compared. A holder in the way is waited for, then it is tried again.
    private func claimMissing(_ fetch: RunningFetch) throws -> (FetchClaim, Range<Int64>)? {
        let first = fetch.range.lowerBound
        // A holder that stores nothing of what this fetch waits for, and neither lets go nor dies
        // (a stopped process), is waited for this long: as long as a stalled origin would be, twice.
        // Once the holder has stored the first byte (its store commits within a second), the wait is over.
        let patience = 2 * fetcher.options.timeout
        let wait = ClaimWait(deadline: Date().addingTimeInterval(patience))
        let givesUp = { [store = self.store] in
            fetch.cancellation.isCancelled
                || wait.isOver {
                    (try? store.refresh()).map { store.available.coveredLength(from: first) > 0 } ?? false
                }
        }
        while true {
            let store = self.store
            let margin = OverlapCheck.margin(for: store.validators)
            let wanted = max(0, first - margin)..<fetch.range.upperBound + margin
            let claimed = try waiting(wait, patience) { try store.claimFetch(wanted, isCancelled: givesUp) }
            // Where another holder's claim begins, its margin does: this fetch ends before its own.
            let end = claimed.map {
                min(
                    fetch.range.upperBound, $0.range.upperBound - ($0.range.upperBound < wanted.upperBound ? margin : 0)
                )
            }
            // The other holder is within a margin of the first byte — or it cut only the last few
            // KiB of this fetch, most likely its own margin: wait for it rather than leave them
            // to a request of their own.
            if let claimed, let end,
                end <= first || (end < fetch.range.upperBound && fetch.range.upperBound - end <= OverlapCheck.overlap)
            {
                claimed.release()
                try waiting(wait, patience) {
                    try store.claimFetch(claimed.range.upperBound..<claimed.range.upperBound + 1, isCancelled: givesUp)
                }?.release()
            }
            // Claimed just after another holder let the same bytes go (or waited for one): they may
            // be stored now (four processes reading one file fetched 16 MiB of it twice).
            try store.refresh()
            if store.available.coveredLength(from: first) > 0 {
                claimed?.release()
                return nil
            }
            guard let claimed, let end, end > first,
                end == fetch.range.upperBound || fetch.range.upperBound - end > OverlapCheck.overlap
            else { continue }  // waited for a holder (which may have failed): claim again
            return (claimed, store.available.gaps(in: first..<end).first ?? first..<end)
        }
    }

    /// `claim`, a wait for another holder's claim: over when the holder stored the byte waited for
    /// (nil: look again), and a clear error past the deadline, not a hang.
    private func waiting(_ wait: ClaimWait, _ patience: Double, _ claim: () throws -> FetchClaim?) throws -> FetchClaim?
    {
        do {
            return try claim()
        } catch is CancellationError where wait.stored {
            return nil
        } catch is CancellationError where wait.expired {
            throw FetchError.other(
                url: shown,
                detail: "another process sharing the cache has claimed these bytes "
                    + "and stored nothing of them for \(Int(patience)) s (is it stopped?)")
        }
    }

    /// Records how `fetch` ended and wakes everyone waiting on the resource.
    private func finish(_ fetch: RunningFetch, _ outcome: RunningFetch.Outcome) {
        condition.withLock {
            fetch.finish(outcome)
            running.removeAll { $0 === fetch }
            condition.broadcast()
        }
    }

    private struct StaleTransfer: Error {}

    /// What a finished request means for the range it asked for.
    private func interpret(
        _ result: FetchOutcome, range: Range<Int64>, deliveredEnd: Int64
    ) throws -> RunningFetch.Outcome {
        switch result {
        case .delivered(let info):
            // A whole body (200) without a stated length whose framing ended it cleanly before the
            // end of the request (a chunked body; not stopped early, which happens only there):
            // the resource ends where it did, as a Content-Length would have said.
            if info.rangeIgnored, info.totalSize == nil, info.framed, deliveredEnd < range.upperBound, size == nil {
                try endsAt(deliveredEnd)
            }
            guard store.available.coveredLength(from: range.lowerBound) == 0 else { return .done }
            // Nothing arrived for the range itself. A whole body (a server that ignores ranges, or
            // nginx's 200 for an empty file) that ended before it, and whose stated length, if
            // any, agrees, means the resource ends there; else the server lies.
            guard info.rangeIgnored, deliveredEnd <= range.lowerBound,
                info.totalSize.map({ $0 == deliveredEnd }) ?? true
            else {
                throw SourceError.inconsistentOrigin(
                    input: shown,
                    detail:
                        "the server answered bytes \(range.lowerBound)-\(range.upperBound - 1) without sending them")
            }
            try endsAt(deliveredEnd)
            return .endOfResource
        case .pastEnd(let total):
            // A 416 is the end of the resource only at or past a size the origin has stated;
            // anywhere else it is a lie or a broken server, never an empty success.
            guard let end = total ?? size, range.lowerBound >= end else {
                throw SourceError.inconsistentOrigin(
                    input: shown,
                    detail:
                        "the server refused bytes \(range.lowerBound)-\(range.upperBound - 1) (416) without stating a size they lie beyond"
                )
            }
            try endsAt(end)
            return .endOfResource
        }
    }

    /// The resource ends at `size`: remember it, so reads there are EOF.
    private func endsAt(_ size: Int64) throws {
        try store.applyValidators(ResourceValidators(size: size), contentType: nil)
        condition.withLock { sizeValue = size }
    }

    /// A piece of a transfer of a resource without validators (`OverlapCheck`): its stored parts
    /// compared (a difference is `OverlapMismatch`), its missing ones stored — the gap's last bytes
    /// (`held`) only once the bytes after the gap have been compared; then readers may read on.
    private func checkAndStore(
        _ bytes: UnsafeRawBufferPointer, at offset: Int64, check: OverlapCheck, held: inout HeldTail?,
        fetch: RunningFetch, into target: (any RangeStore, StoreGeneration), tally: ReaderTally,
        stored: inout Int64, deliveredEnd: inout Int64
    ) throws {
        let piece = offset..<offset + Int64(bytes.count)
        let (compare, keep) = check.parts(of: piece, available: target.0.available)
        for part in compare where !(try RemoteResource.matches(bytes, at: offset, part: part, in: target.0)) {
            throw OverlapMismatch(offset: part.lowerBound)
        }
        func slice(_ part: Range<Int64>) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: bytes[Int(part.lowerBound - offset)..<Int(part.upperBound - offset)])
        }
        for part in keep {
            if let tail = held?.range, part.upperBound > tail.lowerBound {
                let kept = part.clamped(to: tail)
                held?.hold(slice(kept), at: kept.lowerBound)
                let before = part.lowerBound..<max(part.lowerBound, tail.lowerBound)
                if !before.isEmpty {
                    try storeChecked(slice(before), at: before, into: target, tally: tally, stored: &stored)
                }
            } else {
                try storeChecked(slice(part), at: part, into: target, tally: tally, stored: &stored)
            }
        }
        fetch.arrived(bytes.count)
        deliveredEnd = max(deliveredEnd, piece.upperBound)
        if piece.upperBound >= check.request.upperBound {
            // Compared to the end: the gap's last bytes lie against bytes of their own version.
            if let tail = held, tail.isComplete {
                try tail.bytes.withUnsafeBytes {
                    try storeChecked($0, at: tail.range, into: target, tally: tally, stored: &stored)
                }
                held = nil
            }
            fetch.setBarrier(nil)
            condition.withLock { condition.broadcast() }
        }
    }

    /// Stores `bytes` at `range` through `store(_:at:into:)`, counting them; a refusal (another
    /// version meanwhile) ends the transfer.
    private func storeChecked(
        _ bytes: UnsafeRawBufferPointer, at range: Range<Int64>, into target: (any RangeStore, StoreGeneration),
        tally: ReaderTally, stored: inout Int64
    ) throws {
        tally.stored(range)
        guard try store(bytes, at: range.lowerBound, into: target) else {
            tally.refused(range)
            throw StaleTransfer()
        }
        stored += Int64(range.count)
    }

    /// Whether `part` of a piece at `offset` equals the bytes `store` holds there (true when it
    /// no longer holds them all: then there is nothing the new ones could be mixed with).
    private static func matches(
        _ bytes: UnsafeRawBufferPointer, at offset: Int64, part: Range<Int64>,
        in store: any RangeStore
    ) throws -> Bool {
        var held = [UInt8](repeating: 0, count: part.count)
        let read = try held.withUnsafeMutableBytes { try store.read(into: $0, at: part.lowerBound) }
        guard read.count == part.count else { return true }
        let start = Int(part.lowerBound - offset)
        return held.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress! + start, part.count) } == 0
    }

    /// Waits until `fetch` no longer holds readers at its barrier (its overlap was compared, or it
    /// ended). `token` cancels the wait.
    func waitPastBarrier(of fetch: RunningFetch, token: ReaderToken) throws {
        condition.lock()
        defer { condition.unlock() }
        while fetch.barrier != nil {
            if token.interrupted { throw FetchError.cancelled(url: shown) }
            _ = condition.wait(until: Date().addingTimeInterval(0.2))  // woken when it is lifted; timed for the token
        }
    }

    /// Stores a piece of a transfer if `target` is still the current store in the same
    /// generation, and wakes the readers waiting for it.
    private func store(
        _ bytes: UnsafeRawBufferPointer, at offset: Int64, into target: (any RangeStore, StoreGeneration)
    ) throws -> Bool {
        guard target.0 === store else { return false }
        do {
            guard try target.0.write(bytes, at: offset, generation: target.1) else { return false }
            target.0.recordFetched(Int64(bytes.count))
        } catch let error where CacheError.refusesWrites(error) {
            // The transfer ends as if newer content had come: its readers look again, and fetch
            // into memory what this one was bringing.
            guard streamThrough(from: target.0, because: error) != nil else {
                throw memoryFull("\(error)")
            }
            return false
        }
        condition.withLock { condition.broadcast() }
        return true
    }

    /// The warning a resource streamed through carries; the service's log hears it once per origin.
    private func streamedThrough(because error: any Error) -> String {
        let warning = "the cache cannot store \(shown) (\(error)): it is streamed through, not kept"
        _ = notices.note("cannot store", url: url) { _ in warning }
        return warning
    }

    /// The cache can store nothing more (its disk is full, or it is read-only): this resource's
    /// bytes go to memory from here, as a resource too large for the cache does, so that players
    /// and jobs go on, streamed through; what the cache held of it is fetched again when read.
    /// When the origin's validators prove the version, the memory store continues `cached`'s
    /// generation, so that readers who read from the cache read on. Without them, nothing could
    /// compare the bytes to come with those read (`OverlapCheck` compares within one store):
    /// the memory store is a generation of its own, and such readers fail as on a version change.
    /// Said once in the warnings, and told to `leftCache`. Nil, and nothing moved, when the
    /// session holds as many resources in memory as it may (`MemorySlots`).
    private func streamThrough(from cached: any RangeStore, because error: any Error) -> (any RangeStore)? {
        let look = cached.peek(at: 0)  // the generation and validators in one look
        let proven = look.validators.etag != nil || look.validators.lastModified != nil
        let memory = MemoryRangeStore(continuing: proven ? look.generation : nil)
        _ = try? memory.applyValidators(look.validators, contentType: contentType, replacing: false)
        // Taken before the look: a slot not used (another fetch moved it first) goes back as it goes.
        let slot = memorySlots.take()
        let moved = condition.withLock { () -> (any RangeStore)? in
            guard storeValue === cached else { return storeValue }  // another fetch moved it first
            guard let slot else { return nil }
            storeValue = memory
            memorySlot = slot
            refusedValue = "\(error)"
            condition.broadcast()
            return memory
        }
        guard let moved, moved === memory else { return moved }
        let warning = streamedThrough(because: error)  // told to the log outside the lock
        condition.withLock { warningsValue.append(warning) }
        leftCache?(self)
        return memory
    }

    /// What a reader is told when the cache cannot hold this resource (`reason`: its refusal, or
    /// the resource's size) and the session holds as many resources in memory as it may: to try
    /// again once one of them is let go.
    private func memoryFull(_ reason: String) -> SourceError {
        .memoryFull(input: shown, reason: reason, limit: memorySlots.limit)
    }

    /// Why the cache refused this resource's bytes, when it did (they are streamed through).
    var refusal: String? { condition.withLock { refusedValue } }

    /// Headers of a response: record the validators (dropping stored bytes of an older version),
    /// move a too-large resource to memory, and note a server that ignores ranges. Readers that
    /// used bytes of the older version find out when they next read (`RemoteSource`).
    private func accept(_ info: ResponseInfo) throws {
        let validators = ResourceValidators(size: info.totalSize, etag: info.etag, lastModified: info.lastModified)
        let store = self.store
        // An answer with a validator where an earlier one had none (or none where it had one)
        // cannot be told to be of the same version: without a validator in common the stored bytes
        // could be of another, and nothing would compare them with these (`OverlapCheck` runs only
        // while none is known). So they go, and this answer's validators are the ones recorded.
        let known = store.validators
        let proves = { (v: ResourceValidators) in v.etag != nil || v.lastModified != nil }
        let replacing = known.size != nil && proves(known) != proves(validators)
        let changed: Bool
        do {
            changed = try store.applyValidators(validators, contentType: info.contentType, replacing: replacing)
        } catch let error where CacheError.refusesWrites(error) {
            guard let memory = streamThrough(from: store, because: error) else {
                throw memoryFull("\(error)")
            }
            changed = try memory.applyValidators(validators, contentType: info.contentType, replacing: replacing)
        }
        condition.withLock {
            if let size = info.totalSize { sizeValue = size }
            if let type = info.contentType { contentTypeValue = type }
            locationValue = info.effectiveURL
            if changed {
                warningsValue.append("\(shown) changed on the server; cached bytes of the old version were dropped")
            } else if info.rangeIgnored, !warningsValue.contains(where: { $0.contains("ignores range") }) {
                // A 200 for a new version answers If-Range; only an unchanged resource shows that ranges are ignored.
                warningsValue.append("the server of \(shown) ignores range requests; reading from the start instead")
            }
        }
        // Versions are told apart by ETag, Last-Modified and size; with only the size, a new version
        // of the same length shows only where new bytes meet stored ones (`OverlapCheck`), and the
        // user should know. Said once per origin.
        if info.etag == nil && info.lastModified == nil,
            let notice = notices.note(
                "no validators", url: url,
                { origin in
                    "\(origin) sends neither ETag nor Last-Modified: mprobe tells its versions apart by size and by comparing "
                        + "\(OverlapCheck.overlap >> 10) KiB of cached bytes around each range it fetches, so a change confined to bytes "
                        + "it reads only once goes unseen"
                })
        {
            condition.withLock { warningsValue.append(notice) }
        }
        condition.withLock { condition.broadcast() }  // fetches waiting to learn whether there are validators
        if let cache, let size = info.totalSize, !cache.canStore(size: size), let entry = self.store as? CacheEntry {
            try moveToMemory(from: entry, validators: validators, contentType: info.contentType, cache: cache)
        }
    }

    /// A resource larger than the cache's limit is read through memory, in one of the session's
    /// memory slots (`MemorySlots`), as one the cache refuses is: so that players of many such
    /// URLs at once cannot take 64 MiB each without bound. None free: the reader is told to try
    /// again shortly (`SourceError.memoryFull`), and the entry, which now knows the size, stays
    /// for the next fetch to try before it asks the origin (`run`).
    private func moveToMemory(
        from entry: CacheEntry, validators: ResourceValidators, contentType: String?, cache: ByteCache
    ) throws {
        let memory = MemoryRangeStore()
        try memory.applyValidators(validators, contentType: contentType)
        let slot = memorySlots.take()
        let moved = condition.withLock { () -> Bool? in
            guard storeValue === entry else { return false }  // another fetch moved it first
            guard let slot else { return nil }
            storeValue = memory
            memorySlot = slot
            return true
        }
        guard let moved else {
            throw memoryFull("it is larger than the cache's limit")
        }
        guard moved else { return }
        // Off the warm list, which took it when it was opened, still in the cache: kept there,
        // its memory and its slot would stay taken after its players left.
        leftCache?(self)
        try cache.remove(url: url)
    }
}

/// A wait for another holder's claim (`RemoteResource.claimMissing`): looked at about once a second,
/// whether the awaited byte has been stored meanwhile, and whether the deadline has passed.
private final class ClaimWait: @unchecked Sendable {
    // Touched only by the waiting thread.
    private let deadline: Date
    private var lastLook = Date()
    private(set) var stored = false
    private(set) var expired = false

    init(deadline: Date) { self.deadline = deadline }

    /// True once the wait should end: `isStored` (asked at most once a second) said so, or time is up.
    func isOver(_ isStored: () -> Bool) -> Bool {
        let now = Date()
        if now.timeIntervalSince(lastLook) >= 1 {
            lastLook = now
            stored = isStored()
        }
        expired = now > deadline
        return stored || expired
    }
}
