import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An open resource in the on-disk cache: its data file (held with a shared lock, which pins it
/// against eviction) and a snapshot of its present ranges.
///
/// Durability order: bytes are `pwrite`n, `fdatasync`ed, and only then their ranges are
/// committed to the index, so a crash can lose a range but never make the index claim garbage.
public final class CacheEntry: RangeStore {
    /// Written bytes not yet committed are committed once they reach this many.
    static let autoCommitBytes: Int64 = 16 << 20

    public let key: String
    public let url: String
    private let cache: ByteCache

    private struct State {
        var file: DataFile
        var generation: StoreGeneration
        var validators: ResourceValidators
        var committed: ByteRangeSet
        var pending: ByteRangeSet
        var pendingBytes: Int64 = 0
    }
    private let state: Mutex<State>

    init(cache: ByteCache, key: String, url: String) throws {
        self.cache = cache
        self.key = key
        self.url = url
        state = Mutex(try CacheEntry.attach(cache: cache, key: key, url: url))
    }

    deinit {
        try? commit()
        try? cache.flushCounters()
        // An entry that never heard from the origin (a 404, an unreachable host) leaves no row behind.
        let untouched = state.withLock { $0.committed.isEmpty && $0.validators == ResourceValidators() }
        if untouched { try? cache.removeIfEmpty(key: key) }
    }

    /// Finds or creates the row, opens its data file with the shared lock, and checks the row
    /// was not evicted or regenerated in between (else tries again with the new row).
    private static func attach(cache: ByteCache, key: String, url: String) throws -> State {
        while true {
            let row = try cache.index.withLock { try ByteCache.ensureRow(db: $0, key: key, url: url) }
            let path = cache.dataPath(row)
            let file = try DataFile(path: path)
            let loaded = try cache.index.withLock { try ByteCache.loadEntryState(db: $0, key: key) }
            if let loaded, loaded.generation == row {
                return State(file: file, generation: row, validators: loaded.validators,
                             committed: loaded.ranges, pending: ByteRangeSet())
            }
            unlink(path) // evicted while we opened it: this file belongs to no row
        }
    }

    public var validators: ResourceValidators { state.withLock { $0.validators } }

    public var available: ByteRangeSet {
        state.withLock {
            var all = $0.committed
            all.formUnion($0.pending)
            return all
        }
    }

    /// Present ranges that are durable and recorded in the index.
    public var committedRanges: ByteRangeSet { state.withLock { $0.committed } }

    public func refresh() throws {
        try state.withLock { s in
            guard let loaded = try cache.index.withLock({ try ByteCache.loadEntryState(db: $0, key: key) }),
                  loaded.generation == s.generation else {
                s = try CacheEntry.attach(cache: cache, key: key, url: url)
                return
            }
            s.committed = loaded.ranges
            s.validators = loaded.validators
        }
    }

    @discardableResult
    public func applyValidators(_ incoming: ResourceValidators, contentType: String?) throws -> Bool {
        try state.withLock { s in
            let (loaded, dropped) = try cache.index.withLock {
                try ByteCache.applyValidators(db: $0, key: key, url: url, incoming, contentType: contentType)
            }
            if loaded.generation != s.generation {
                // New content: write to a fresh file; the old one goes once no one has it open.
                unlink(s.file.path)
                s.file = try DataFile(path: cache.dataPath(loaded.generation))
                s.pending = ByteRangeSet()
                s.pendingBytes = 0
            }
            s.generation = loaded.generation
            s.validators = loaded.validators
            s.committed = loaded.ranges
            return dropped
        }
    }

    public var generation: StoreGeneration { state.withLock { $0.generation } }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, generation: StoreGeneration) throws -> Bool {
        let target = state.withLock { s -> (DataFile, Bool)? in
            s.generation == generation ? (s.file, s.pendingBytes + Int64(bytes.count) >= CacheEntry.autoCommitBytes) : nil
        }
        guard let (file, due) = target else { return false }
        try file.write(bytes, at: offset)
        let recorded = state.withLock { s -> Bool in
            // The file may have been replaced while we wrote: then these bytes belong to no one.
            guard s.generation == generation else { return false }
            s.pending.insert(offset..<offset + Int64(bytes.count))
            s.pendingBytes += Int64(bytes.count)
            return true
        }
        if due && recorded { try commit() }
        return recorded
    }

    public func commit() throws {
        let evict = try state.withLock { s -> Bool in
            guard !s.pending.isEmpty else { return false }
            try s.file.sync()
            let merged = try cache.index.withLock { try ByteCache.addRanges(db: $0, generation: s.generation, s.pending) }
            s.pending = ByteRangeSet()
            s.pendingBytes = 0
            guard let merged else {
                // Evicted or replaced by newer content meanwhile: these bytes belong to no row.
                s = try CacheEntry.attach(cache: cache, key: key, url: url)
                return false
            }
            s.committed = merged
            return true
        }
        if evict { try cache.enforceLimit(keeping: state.withLock { $0.generation.row }) }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        let (file, length) = state.withLock { s -> (DataFile, Int64) in
            (s.file, max(s.committed.coveredLength(from: offset), s.pending.coveredLength(from: offset)))
        }
        let n = Int(min(Int64(buffer.count), length))
        guard n > 0 else { return 0 }
        try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]), at: offset)
        return n
    }

    public func recordRead(fromCache: Int64, fetched: Int64) {
        cache.recordRead(fromCache: fromCache, fetched: fetched)
    }
}
