import Synchronization
import URLSupport

#if canImport(Glibc)
import Glibc
#endif

/// The segmented on-disk cache: one sparse data file per resource version and an SQLite index
/// (WAL mode) of what each file holds. Several threads and several processes may share one
/// directory; SQLite transactions order index changes and `flock` on data files guards eviction.
///
/// Layout: `DIR/index.sqlite` and `DIR/data/<id>-<generation>.bin`, private to their owner
/// (`CacheDirectory`). Opening repairs what it can — a corrupt index is moved aside, impossible
/// records are dropped — and says so in `warnings`; a directory or disk that cannot be written is
/// served read-only (`isReadOnly`).
public final class ByteCache: Sendable {
    public static let defaultMaxBytes: Int64 = 10 << 30

    public let directory: String
    public let maxBytes: Int64
    /// How URLs become keys (no userinfo; signed query parameters left out, so that signed URLs
    /// whose tokens change share one entry) and how they are stored for showing (secrets hidden).
    public let urlRules: URLRules

    let layout: CacheDirectory
    let index: Mutex<SQLiteDatabase>
    /// Why nothing can be written, or nil when the cache is writable.
    let readOnly: ReadOnlyReason?
    /// Rows found impossible that could not be deleted (the index is read-only): never used.
    let distrusted: Set<Int64>
    /// Held shared while the cache is open; see `DirectoryLock`.
    private let directoryLock: DirectoryLock?
    /// Read counters not yet added to the index: atomics, because every read of every reader
    /// counts here (a lock would be the hottest one of a busy service).
    private let counters = AtomicReadCounters()
    private let noted: Mutex<[String]>
    /// `onHeldOverLimit`'s holder of idle open entries, asked to close them when they keep the
    /// cache over its limit.
    let idleHolder = Mutex<(@Sendable (_ passedBy: [HeldResource], _ excess: Int64) -> Bool)?>(nil)

    public init(
        directory: String, maxBytes: Int64 = ByteCache.defaultMaxBytes,
        urlRules: URLRules = .standard
    ) throws {
        self.directory = directory
        self.maxBytes = maxBytes
        self.urlRules = urlRules
        let given = CacheDirectory(path: directory)
        try given.makeIfMissing()
        layout = try given.resolved()
        let writable = try layout.prepare()
        directoryLock = try DirectoryLock(directory: layout.dataPath)
        let opened = try ByteCache.openIndex(layout, writable: writable, lock: directoryLock)
        readOnly = opened.readOnly
        distrusted = opened.distrusted
        noted = Mutex(opened.warnings)
        index = Mutex(opened.db)
    }

    /// What opening (and later use) found and did about it: a corrupt index moved aside, impossible
    /// records dropped, an index opened read-only. One sentence each, naming the file or URL.
    public var warnings: [String] { noted.withLock { $0 } }

    /// True when nothing can be stored: the directory or file system is read-only, or the index
    /// could not be opened for writing (a full disk). Cached bytes are still served.
    public var isReadOnly: Bool { readOnly != nil }

    /// Notes a sentence for `warnings`, once (a record looked at again says the same).
    func warn(_ sentence: String) {
        noted.withLock { if !$0.contains(sentence) { $0.append(sentence) } }
    }

    /// Opens (creating it, private, if needed) another SQLite database in the cache directory,
    /// such as the service's `jobs.sqlite`, in WAL mode. `cache clear` leaves it alone.
    public func openDatabase(named name: String) throws -> SQLiteDatabase {
        guard !name.contains("/"), !name.hasPrefix("index.sqlite") else {
            throw CacheError.unsafe(path: directory + "/" + name, reason: "not a database name of its own")
        }
        let path = layout.path + "/" + name
        try CacheDirectory.createPrivateFileIfMissing(path)
        let db = try SQLiteDatabase(path: path, mode: .readWrite)
        try db.enableWriteAheadLog()
        return db
    }

    /// The index key of `url`: credentials are never part of it (they travel with each request).
    func key(for url: String) -> String { urlRules.key(url) }

    func dataPath(_ generation: StoreGeneration) -> String { layout.dataFile(generation) }

    /// True when a resource of `size` bytes may be stored at all; bigger ones are streamed through.
    public func canStore(size: Int64) -> Bool { size <= maxBytes }

    /// Opens (creating if needed) the entry for `url`. Keep it only while reading or writing:
    /// an open entry pins the resource against eviction. In a read-only cache the entry serves
    /// what is stored and refuses writes.
    public func entry(for url: String) throws -> CacheEntry {
        try CacheEntry(cache: self, key: key(for: url), url: urlRules.shown(url))
    }

    // MARK: Queries

    public func resource(for url: String) throws -> CachedResource? {
        try index.withLock { try ByteCache.loadResource(db: $0, key: key(for: url), excluding: distrusted) }
    }

    public func resources() throws -> [CachedResource] {
        try index.withLock { try ByteCache.loadAllResources(db: $0, excluding: distrusted) }
    }

    /// Present ranges of a resource (empty when unknown).
    public func presentRanges(for url: String) throws -> ByteRangeSet {
        try resource(for: url)?.ranges ?? ByteRangeSet()
    }

    /// The parts of `range` that are not cached for `url`.
    public func missingRanges(for url: String, in range: Range<Int64>) throws -> [Range<Int64>] {
        try presentRanges(for: url).gaps(in: range)
    }

    public func stats() throws -> CacheStats {
        try flushCounters()
        return try index.withLock { try ByteCache.loadStats(db: $0, maxBytes: maxBytes) }
    }

    /// The index state of `key`, unless its row is distrusted.
    func loadEntryState(key: String) throws -> EntryState? {
        guard let state = try index.withLock({ try ByteCache.loadEntryState(db: $0, key: key) }),
            !distrusted.contains(state.generation.row)
        else { return nil }
        return state
    }

    // MARK: Removal

    /// Removes one resource. Returns false when it was not cached. Works on a full disk: when the
    /// index cannot be written, the resource's data file is removed first (if no process has it
    /// open) to make room.
    @discardableResult
    public func remove(url: String) throws -> Bool {
        let key = key(for: url)
        guard let row = try index.withLock({ try ByteCache.currentGeneration(db: $0, key: key) }) else { return false }
        let path = dataPath(row)
        try withWritableIndex(freeingSpace: {
            // Only a file nobody has open: a reader's recorded bytes must stay where they are.
            _ = try DataFile.lockExclusivelyIfUnused(path: path) { try CacheDirectory.remove(path) }
        }) { db in
            try ByteCache.deleteRow(db: db, id: row.row)
        }
        try CacheDirectory.remove(path)
        return true
    }

    /// Removes the row of `key` if it has no ranges and no validators (nothing was ever learnt).
    func removeIfEmpty(key: String) throws {
        guard readOnly == nil else { return }
        try index.withLock { db in
            guard let state = try ByteCache.loadEntryState(db: db, key: key), state.ranges.isEmpty,
                state.validators == ResourceValidators()
            else { return }
            try ByteCache.deleteRow(db: db, id: state.generation.row)
            try CacheDirectory.remove(dataPath(state.generation))
        }
    }

    /// Removes every resource and every data file, including orphans left by crashed writers.
    /// On a full disk the data files go first, to make room for the index's change.
    public func clear() throws {
        try withWritableIndex(freeingSpace: { try layout.removeDataFiles() }) { db in
            try db.writeTransaction {
                try db.execute("DELETE FROM ranges; DELETE FROM resources; DELETE FROM stats;")
            }
        }
        try layout.removeDataFiles()
    }

    /// Runs `body` with a connection that can write: the cache's own, or — when the index could
    /// not be opened for writing — a new one tried now. If the storage refuses (a full disk),
    /// `freeSpace` runs and `body` is tried once more.
    ///
    /// Freeing data files before their rows are gone is safe: a row whose data file is missing
    /// or short is dropped when it is next opened (`CacheEntry`), never read.
    private func withWritableIndex(
        freeingSpace freeSpace: @Sendable () throws -> Void,
        _ body: @Sendable (SQLiteDatabase) throws -> Void
    ) throws {
        func attempt(_ db: SQLiteDatabase) throws {
            do {
                try body(db)
            } catch let error as SQLiteError where error.isStorageFailure {
                try freeSpace()
                try body(db)
            }
        }
        switch readOnly {
        case nil:
            try index.withLock { try attempt($0) }
        case .directoryNotWritable?:
            throw CacheError.readOnly(path: directory, reason: ReadOnlyReason.directoryNotWritable.sentence)
        case .indexNotWritable?:
            try attempt(try SQLiteDatabase(path: layout.indexPath, mode: .readWrite))
        }
    }

    // MARK: Hit / miss counting

    struct ReadCounters {
        var hits: Int64 = 0, misses: Int64 = 0, bytesFromCache: Int64 = 0, bytesFetched: Int64 = 0
        var isEmpty: Bool { hits == 0 && misses == 0 && bytesFromCache == 0 && bytesFetched == 0 }

        mutating func add(_ other: ReadCounters) {
            hits += other.hits
            misses += other.misses
            bytesFromCache += other.bytesFromCache
            bytesFetched += other.bytesFetched
        }
    }

    /// Counts one read: a hit when it was served wholly from what the cache held before, else a
    /// miss; `fromCache` of its bytes were held before.
    public func recordRead(fromCache: Int64, miss: Bool) {
        counters.add(ReadCounters(hits: miss ? 0 : 1, misses: miss ? 1 : 0, bytesFromCache: fromCache))
    }

    /// Counts bytes fetched from an origin and stored.
    public func recordFetched(_ bytes: Int64) {
        counters.add(ReadCounters(bytesFetched: bytes))
    }

    /// Adds the in-memory counters to the index. Called when entries close and before `stats()`.
    /// Statistics are not worth failing for: a read-only index or a full disk keeps them in memory.
    public func flushCounters() throws {
        guard readOnly == nil else { return }
        let pending = counters.take()
        guard !pending.isEmpty else { return }
        do {
            try index.withLock { try ByteCache.addCounters(db: $0, pending) }
        } catch let error as SQLiteError where error.isStorageFailure {
            counters.add(pending)
        }
    }
}

/// `ByteCache.ReadCounters` kept in atomics.
final class AtomicReadCounters: Sendable {
    private let hits = Atomic<Int64>(0), misses = Atomic<Int64>(0)
    private let bytesFromCache = Atomic<Int64>(0), bytesFetched = Atomic<Int64>(0)

    func add(_ c: ByteCache.ReadCounters) {
        hits.add(c.hits, ordering: .relaxed)
        misses.add(c.misses, ordering: .relaxed)
        bytesFromCache.add(c.bytesFromCache, ordering: .relaxed)
        bytesFetched.add(c.bytesFetched, ordering: .relaxed)
    }

    /// What was counted, leaving zero.
    func take() -> ByteCache.ReadCounters {
        ByteCache.ReadCounters(
            hits: hits.exchange(0, ordering: .relaxed), misses: misses.exchange(0, ordering: .relaxed),
            bytesFromCache: bytesFromCache.exchange(0, ordering: .relaxed),
            bytesFetched: bytesFetched.exchange(0, ordering: .relaxed))
    }
}

/// Why a cache is read-only.
enum ReadOnlyReason: Sendable, Equatable {
    /// The directory or its file system cannot be written.
    case directoryNotWritable
    /// The directory can be written but the index could not be opened for writing (a full disk).
    case indexNotWritable(String)

    var sentence: String {
        switch self {
        case .directoryNotWritable: return "the directory is read-only"
        case .indexNotWritable(let why): return "the index could not be opened for writing (\(why))"
        }
    }
}
