import Dispatch
import Support
import Synchronization

/// An open resource in the on-disk cache: its data file (held with a shared lock, which pins it
/// against eviction) and a snapshot of its present ranges.
///
/// Durability order: bytes are `pwrite`n, `fdatasync`ed, and only then their ranges are
/// committed to the index, so a crash can lose a range but never make the index claim garbage.
///
/// The entry's lock guards only its in-memory state and is never held across I/O that may wait:
/// `fdatasync`, index transactions (which wait for other processes' write locks) and opening
/// files happen outside it, so readers of present bytes never stall behind them. Decisions made
/// outside the lock are applied only if the entry is still at the generation they were based on.
public final class CacheEntry: RangeStore {
    /// Written bytes wait at most this long for their commit, so a crash loses little.
    static let commitInterval: DispatchTimeInterval = .seconds(1)
    /// ...or until this many are waiting, which bounds one commit's `fdatasync`. Each commit is an
    /// `fdatasync` and an index transaction, and while one runs the writes beside it go several
    /// times slower (ext4, measured): a reader that fetches a whole file at loopback speed in less
    /// than a second is best served by none during its read.
    static let autoCommitBytes: Int64 = 256 << 20
    /// How long after the last claim handed over its bytes are committed: longer than a
    /// sequential reader's pause between one fetch's end and the next one's (a few ms at
    /// loopback speed), short beside the second a stopped process would otherwise hold them.
    static let handOverQuiet: DispatchTimeInterval = .milliseconds(50)

    public let key: String
    public let url: String
    private let cache: ByteCache

    private struct State {
        /// nil when nothing of this resource is stored here and nothing can be: a read-only cache
        /// without it, or a record that could be neither trusted nor dropped.
        var file: DataFile?
        var generation: StoreGeneration
        var validators: ResourceValidators
        var committed: ByteRangeSet
        /// Handed to a commit in progress: readable, recorded once that commit ends.
        var committing = ByteRangeSet()
        var pending = ByteRangeSet()
        var pendingBytes: Int64 = 0
        /// Claims on bytes written (`pending`, or `committing`), released by the next commit.
        var claimsAwaitingCommit: [FetchClaim] = []
        /// Claims handed over so far (`releaseAfterCommit`), to tell the last of a run.
        var handOvers = 0
        /// Why writes are refused (a read-only cache, a full index), or nil.
        var refusal: CacheError?

        /// An entry that serves nothing and stores nothing. Its generation matches no row, so the
        /// index's ranges are never merged into it.
        static func empty(refusal: CacheError) -> State {
            State(
                file: nil, generation: StoreGeneration(row: 0, number: 0), validators: ResourceValidators(),
                committed: ByteRangeSet(), refusal: refusal)
        }
    }
    private let state: BlockingLock<State>
    /// Held through a commit (`commit`).
    private let commits = BlockingLock(())
    /// A commit `write` asked for is queued and has not begun.
    private let commitQueued = Atomic<Bool>(false)
    /// A commit is due within `commitInterval` and has not begun.
    private let commitScheduled = Atomic<Bool>(false)

    init(cache: ByteCache, key: String, url: String) throws {
        self.cache = cache
        self.key = key
        self.url = url
        state = BlockingLock(try CacheEntry.attach(cache: cache, key: key, url: url))
    }

    deinit {
        try? commit()
        try? cache.flushCounters()
        // An entry that never heard from the origin (a 404, an unreachable host) leaves no row behind.
        let untouched = state.withLock {
            $0.refusal == nil && $0.committed.isEmpty && $0.validators == ResourceValidators()
        }
        if untouched { try? cache.removeIfEmpty(key: key) }
    }

    // MARK: Attaching to the index

    /// Finds or creates the row, opens its data file with the shared lock, and checks the row
    /// was not evicted or regenerated in between (else tries again with the new row), and that
    /// the file holds what the row records (else drops the row and starts over).
    private static func attach(cache: ByteCache, key: String, url: String) throws -> State {
        if let reason = cache.readOnly {
            return try attachReadOnly(
                cache: cache, key: key, url: url,
                refusal: .readOnly(path: cache.directory, reason: reason.sentence))
        }
        while true {
            let row: StoreGeneration
            if let existing = try cache.index.withLock({ try ByteCache.currentGeneration(db: $0, key: key) }) {
                guard !cache.distrusted.contains(existing.row) else {
                    return .empty(
                        refusal: .inconsistent(
                            path: cache.layout.indexPath,
                            detail: "the record of \(url) is impossible and could not be dropped"))
                }
                touch(existing, in: cache)
                row = existing
            } else {
                do {
                    row = try cache.index.withLock { try ByteCache.ensureRow(db: $0, key: key, url: url) }
                } catch let error as SQLiteError where error.isStorageFailure {
                    // A full disk: nothing is stored for this URL and nothing can be now.
                    return .empty(refusal: .readOnly(path: cache.directory, reason: error.description))
                }
            }
            let file = try DataFile(path: cache.dataPath(row))
            guard let loaded = try cache.loadEntryState(key: key), loaded.generation == row else {
                try CacheDirectory.remove(file.path)  // evicted while we opened it: this file belongs to no row
                continue
            }
            if let problem = try ByteCache.missingBytes(loaded.ranges, in: file) {
                guard try cache.drop(ByteCache.ImpossibleRecord(row: row.row, url: url, reason: problem)) else {
                    return .empty(refusal: .inconsistent(path: file.path, detail: problem))
                }
                continue
            }
            return State(file: file, generation: row, validators: loaded.validators, committed: loaded.ranges)
        }
    }

    /// Marks the resource used now, for eviction order — but only when that costs nothing: not a
    /// wait for another process's write lock, not a failure on a full disk. A missed mark only
    /// makes the resource look older.
    private static func touch(_ row: StoreGeneration, in cache: ByteCache) {
        cache.index.withLock { db in
            try? db.withoutWaiting { try ByteCache.touch(db: db, id: row.row) }
        }
    }

    /// What a read-only cache holds for `key`, creating and writing nothing.
    private static func attachReadOnly(cache: ByteCache, key: String, url: String, refusal: CacheError) throws -> State
    {
        guard let loaded = try cache.loadEntryState(key: key) else { return .empty(refusal: refusal) }
        let path = cache.dataPath(loaded.generation)
        guard let file = try DataFile.existing(readOnly: path) else {
            if !loaded.ranges.isEmpty { ignore("its data file \(path) is missing") }
            return .empty(refusal: refusal)
        }
        if let problem = try ByteCache.missingBytes(loaded.ranges, in: file) {
            ignore(problem)
            return .empty(refusal: refusal)
        }
        return State(
            file: file, generation: loaded.generation, validators: loaded.validators,
            committed: loaded.ranges, refusal: refusal)

        func ignore(_ problem: String) {
            cache.warn(
                ByteCache.ImpossibleRecord(row: loaded.generation.row, url: url, reason: problem).warning(
                    dropped: false))
        }
    }

    /// Moves the entry to what the index now holds for its key (a new version, a new row after
    /// eviction) — unless it has left `observed` meanwhile, because another thread moved it on.
    private func moveOn(from observed: StoreGeneration) throws {
        let fresh = try CacheEntry.attach(cache: cache, key: key, url: url)
        state.withLock { s in
            if s.generation == observed { s = fresh }
        }
    }

    /// Adds what the index holds for the entry's generation (ranges only grow within one).
    private func merge(_ loaded: ByteCache.EntryState) {
        state.withLock { s in
            guard s.generation == loaded.generation, s.file != nil else { return }
            s.committed.formUnion(loaded.ranges)
            s.validators = s.validators.merged(with: loaded.validators)
        }
    }

    // MARK: RangeStore

    public var validators: ResourceValidators { state.withLock { $0.validators } }

    public var available: ByteRangeSet {
        state.withLock {
            var all = $0.committed
            all.formUnion($0.committing)
            all.formUnion($0.pending)
            return all
        }
    }

    /// Present ranges that are durable and recorded in the index.
    public var committedRanges: ByteRangeSet { state.withLock { $0.committed } }

    /// Ranges a commit under way has taken from the pending ones and not yet recorded.
    package var committingRanges: ByteRangeSet { state.withLock { $0.committing } }

    public var generation: StoreGeneration { state.withLock { $0.generation } }

    /// The data file and why writing is refused, for claims.
    var fileAndRefusal: (DataFile?, CacheError?) { state.withLock { ($0.file, $0.refusal) } }

    public func refresh() throws {
        let current = generation
        if let loaded = try cache.loadEntryState(key: key), loaded.generation == current {
            merge(loaded)
        } else {
            try moveOn(from: current)
        }
    }

    @discardableResult
    public func applyValidators(_ incoming: ResourceValidators, contentType: String?, replacing: Bool) throws -> Bool {
        let (before, refusal) = state.withLock { ($0.generation, $0.refusal) }
        if let refusal {
            // Nothing can be recorded; an answer that tells nothing new needs nothing recorded.
            let known = validators
            guard known.conflicts(with: incoming) || known.merged(with: incoming) != known else { return false }
            throw refusal
        }
        guard
            let (loaded, dropped) = try cache.index.withLock({
                try ByteCache.applyValidators(
                    db: $0, key: key, url: url, incoming, contentType: contentType, replacing: replacing)
            })
        else {
            // The row was evicted or removed meanwhile: make a new one and record there.
            try moveOn(from: before)
            return try applyValidators(incoming, contentType: contentType, replacing: replacing)
        }
        if loaded.generation == before {
            merge(loaded)
        } else {
            try moveOn(from: before)
        }
        if dropped {
            // New content: the old version's file goes once no one has it open.
            try CacheDirectory.remove(
                cache.dataPath(
                    StoreGeneration(
                        row: loaded.generation.row,
                        number: loaded.generation.number - 1)))
        }
        return dropped
    }

    public func dropVersion(_ generation: StoreGeneration) throws {
        if let refusal = state.withLock({ $0.refusal }) { throw refusal }
        guard state.withLock({ $0.generation == generation }) else { return }
        let dropped = try cache.index.withLock { try ByteCache.dropVersion(db: $0, generation: generation) }
        try moveOn(from: generation)
        // The old version's file goes once no one has it open.
        if dropped { try CacheDirectory.remove(cache.dataPath(generation)) }
    }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, generation: StoreGeneration) throws -> Bool {
        let target = try state.withLock { s throws -> (DataFile, Bool, ByteRangeSet, Bool)? in
            if let refusal = s.refusal { throw refusal }
            guard s.generation == generation, let file = s.file else { return nil }
            return (
                file, s.pendingBytes + Int64(bytes.count) >= CacheEntry.autoCommitBytes, s.committed, s.pending.isEmpty
            )
        }
        guard let (file, due, committed, firstOfBatch) = target else { return false }
        // A data file cut short from outside (a disk tool, a restore) is caught at open; but once
        // a write extends it again, the lost bytes would read back as zeros. So the first write
        // after each commit checks the file still holds what is recorded (an `fstat`), and if not
        // the record goes; the writes between, at a fetch's pace, do not pay for it.
        if firstOfBatch, let problem = try ByteCache.truncation(of: committed, in: file) {
            _ = try cache.drop(ByteCache.ImpossibleRecord(row: generation.row, url: url, reason: problem))
            try moveOn(from: generation)
            return false
        }
        try file.write(bytes, at: offset)
        let recorded = state.withLock { s -> Bool in
            // The file may have been replaced while we wrote: then these bytes belong to no one.
            guard s.generation == generation else { return false }
            s.pending.insert(offset..<offset + Int64(bytes.count))
            s.pendingBytes += Int64(bytes.count)
            return true
        }
        guard recorded else { return false }
        if due { commitSoon() } else { commitWithinInterval() }
        return true
    }

    /// Releases `claim` once the bytes written so far are committed. Until then other processes
    /// that want these bytes wait for the claim, and then find them in the index rather than
    /// fetching them again (released with the bytes uncommitted, four processes reading one file
    /// at loopback speed fetched it 2.2 times). The commit comes `handOverQuiet` after the last
    /// claim handed over, or `commitInterval` after the first byte waiting: not between a reader's
    /// back-to-back fetches, and soon after its last, because a process stopped (SIGSTOP) while
    /// it holds claims keeps every other one from those bytes (it waits, then gives up).
    public func releaseAfterCommit(_ claim: FetchClaim) {
        let handOver = state.withLock { s in
            s.claimsAwaitingCommit.append(claim)
            s.handOvers += 1
            return s.handOvers
        }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + CacheEntry.handOverQuiet) {
            [weak self] in
            guard let self, state.withLock({ $0.handOvers == handOver }) else { return }
            try? commit()
        }
        commitWithinInterval()
    }

    /// Commits on another thread, so that the writer (a fetch at the origin's speed) does not
    /// wait for `fdatasync`. A failure leaves the bytes pending for the next commit.
    private func commitSoon() {
        guard !commitQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).async { [weak self] in
            guard let self else { return }
            commitQueued.store(false, ordering: .releasing)
            try? commit()
        }
    }

    /// Commits `commitInterval` from now, on another thread, unless a commit is due already: so
    /// no written byte waits longer than about that (and the commit that follows) to be durable.
    /// An entry gone by then committed in its `deinit`.
    private func commitWithinInterval() {
        guard !commitScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + CacheEntry.commitInterval) {
            [weak self] in
            guard let self else { return }
            commitScheduled.store(false, ordering: .releasing)
            try? commit()
        }
    }

    /// Makes the pending bytes durable and records them. The bytes stay readable throughout (as
    /// `committing`); a generation replaced meanwhile gets nothing recorded (the index checks it in
    /// the same transaction), and a failed commit leaves them pending for the next one.
    ///
    /// Commits follow one another: one that finds nothing pending still waits for a commit under
    /// way, so that its caller may count on every byte stored before the call (a job that ends the
    /// process next).
    public func commit() throws {
        try commits.withLock { _ in try commitPending() }
    }

    private func commitPending() throws {
        // Their bytes are pending (committed here), or were taken by a commit before this one,
        // which has ended (commits follow one another): once this one ends, all are recorded or
        // failed. Released either way, as a fetch that fails releases its claim.
        let claims = state.withLock { s in
            defer { s.claimsAwaitingCommit = [] }
            return s.claimsAwaitingCommit
        }
        defer { for claim in claims { claim.release() } }
        let batch = state.withLock { s -> (file: DataFile, generation: StoreGeneration, ranges: ByteRangeSet)? in
            guard !s.pending.isEmpty, let file = s.file else { return nil }
            defer {
                s.committing.formUnion(s.pending)
                s.pending = ByteRangeSet()
                s.pendingBytes = 0
            }
            return (file, s.generation, s.pending)
        }
        guard let batch else { return }
        let merged: ByteRangeSet?
        do {
            try batch.file.sync()
            merged = try cache.index.withLock {
                try ByteCache.addRanges(db: $0, generation: batch.generation, batch.ranges)
            }
        } catch {
            state.withLock { s in
                s.committing = s.committing.subtracting(batch.ranges.ranges)
                if s.generation == batch.generation { s.pending.formUnion(batch.ranges) }
            }
            throw error
        }
        let recorded = state.withLock { s -> Bool in
            s.committing = s.committing.subtracting(batch.ranges.ranges)
            guard let merged, s.generation == batch.generation else { return false }
            s.committed.formUnion(merged)
            return true
        }
        if recorded {
            try cache.enforceLimit(keeping: batch.generation.row)
        } else if merged == nil {
            // Evicted or replaced by newer content meanwhile: these bytes belong to no row.
            try moveOn(from: batch.generation)
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> StoredRead {
        // One look under the lock: the file, how much of it is present, and whose bytes they are.
        // The file object is one generation's; if the entry moves on meanwhile, the bytes read
        // from it are still of the generation taken here.
        let (file, length, generation, validators) = look(at: offset)
        let n = Int(min(Int64(buffer.count), length))
        if n > 0, let file {
            try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]), at: offset)
            return StoredRead(count: n, generation: generation, validators: validators)
        }
        return StoredRead(count: 0, generation: generation, validators: validators)
    }

    public func peek(at offset: Int64) -> StoredRead {
        let (_, length, generation, validators) = look(at: offset)
        return StoredRead(count: Int(min(length, Int64(Int.max))), generation: generation, validators: validators)
    }

    /// The data file, how much of it is present from `offset`, and whose bytes they are.
    private func look(at offset: Int64) -> (DataFile?, Int64, StoreGeneration, ResourceValidators) {
        state.withLock { s in
            (
                s.file,
                max(
                    s.committed.coveredLength(from: offset), s.committing.coveredLength(from: offset),
                    s.pending.coveredLength(from: offset)), s.generation, s.validators
            )
        }
    }

    public func openStored(_ range: Range<Int64>) throws -> StoredFile? {
        let (file, length, generation, validators) = state.withLock { s in
            var present = s.committed
            present.formUnion(s.committing)
            present.formUnion(s.pending)
            return (s.file, present.coveredLength(from: range.lowerBound), s.generation, s.validators)
        }
        guard let file, !range.isEmpty, length >= Int64(range.count) else { return nil }
        return StoredFile(file: file, generation: generation, validators: validators)
    }

    public func recordRead(fromCache: Int64, miss: Bool) {
        cache.recordRead(fromCache: fromCache, miss: miss)
    }

    public func recordFetched(_ bytes: Int64) { cache.recordFetched(bytes) }
}
