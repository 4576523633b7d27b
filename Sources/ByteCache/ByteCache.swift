import URLSupport
import Synchronization

/// The segmented on-disk cache: one sparse data file per resource version and an SQLite index
/// (WAL mode) of what each file holds. Several threads and several processes may share one
/// directory; SQLite transactions order index changes and `flock` on data files guards eviction.
///
/// Layout: `DIR/index.sqlite` and `DIR/data/<id>-<generation>.bin`, private to their owner
/// (`CacheDirectory`).
public final class ByteCache: Sendable {
    public static let defaultMaxBytes: Int64 = 10 << 30

    public let directory: String
    public let maxBytes: Int64
    /// Maps the URL a user gave (without its userinfo) to the cache key; lets signed URLs whose
    /// tokens change share one entry.
    public let keyForURL: @Sendable (String) -> String

    let layout: CacheDirectory
    let index: Mutex<SQLiteDatabase>
    private let counters = Mutex(ReadCounters())
    private let noted: Mutex<[String]>

    public init(directory: String, maxBytes: Int64 = ByteCache.defaultMaxBytes,
                keyForURL: @escaping @Sendable (String) -> String = { $0 }) throws {
        self.directory = directory
        self.maxBytes = maxBytes
        self.keyForURL = keyForURL
        layout = CacheDirectory(path: directory)
        try layout.prepare()
        try layout.createIndexFileIfMissing()
        let db = try SQLiteDatabase(path: layout.indexPath)
        try ByteCache.prepareSchema(db)
        var warnings: [String] = []
        for record in try ByteCache.impossibleRecords(db: db) {
            try ByteCache.drop(record, db: db, layout: layout)
            warnings.append(record.warning)
        }
        noted = Mutex(warnings)
        index = Mutex(db)
    }

    /// What opening (and later use) found and did about it: impossible records dropped. One
    /// sentence each, naming the URL.
    public var warnings: [String] { noted.withLock { $0 } }

    /// Notes a sentence for `warnings`, once (a record looked at again says the same).
    func warn(_ sentence: String) {
        noted.withLock { if !$0.contains(sentence) { $0.append(sentence) } }
    }

    /// The index key of `url`: credentials are never part of it (they travel with each request).
    func key(for url: String) -> String { keyForURL(URLText.withoutUserinfo(url)) }

    func dataPath(_ generation: StoreGeneration) -> String { layout.dataFile(generation) }

    /// True when a resource of `size` bytes may be stored at all; bigger ones are streamed through.
    public func canStore(size: Int64) -> Bool { size <= maxBytes }

    /// Opens (creating if needed) the entry for `url`. Keep it only while reading or writing:
    /// an open entry pins the resource against eviction.
    public func entry(for url: String) throws -> CacheEntry {
        try CacheEntry(cache: self, key: key(for: url), url: URLText.redacted(url))
    }

    // MARK: Queries

    public func resource(for url: String) throws -> CachedResource? {
        try index.withLock { try ByteCache.loadResource(db: $0, key: key(for: url)) }
    }

    public func resources() throws -> [CachedResource] {
        try index.withLock { try ByteCache.loadAllResources(db: $0) }
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

    // MARK: Removal

    /// Removes one resource. Returns false when it was not cached.
    @discardableResult
    public func remove(url: String) throws -> Bool {
        let key = key(for: url)
        return try index.withLock { db in
            guard let row = try ByteCache.currentGeneration(db: db, key: key) else { return false }
            try ByteCache.deleteRow(db: db, id: row.row)
            try CacheDirectory.remove(dataPath(row))
            return true
        }
    }

    /// Removes the row of `key` if it has no ranges and no validators (nothing was ever learnt).
    func removeIfEmpty(key: String) throws {
        try index.withLock { db in
            guard let state = try ByteCache.loadEntryState(db: db, key: key), state.ranges.isEmpty,
                  state.validators == ResourceValidators() else { return }
            try ByteCache.deleteRow(db: db, id: state.generation.row)
            try CacheDirectory.remove(dataPath(state.generation))
        }
    }

    /// Removes every resource and every data file, including orphans left by crashed writers.
    public func clear() throws {
        try index.withLock { db in
            try db.writeTransaction {
                try db.execute("DELETE FROM ranges; DELETE FROM resources; DELETE FROM stats;")
            }
        }
        try layout.removeDataFiles()
    }

    // MARK: Hit / miss counting

    struct ReadCounters {
        var hits: Int64 = 0, misses: Int64 = 0, bytesFromCache: Int64 = 0, bytesFetched: Int64 = 0
        var isEmpty: Bool { hits == 0 && misses == 0 && bytesFromCache == 0 && bytesFetched == 0 }
    }

    /// Counts one read: a hit if served wholly from the cache, else a miss.
    public func recordRead(fromCache: Int64, fetched: Int64) {
        counters.withLock {
            if fetched == 0 { $0.hits += 1 } else { $0.misses += 1 }
            $0.bytesFromCache += fromCache
            $0.bytesFetched += fetched
        }
    }

    /// Adds the in-memory counters to the index. Called when entries close and before `stats()`.
    public func flushCounters() throws {
        let pending = counters.withLock { c -> ReadCounters in
            let p = c
            c = ReadCounters()
            return p
        }
        guard !pending.isEmpty else { return }
        try index.withLock { try ByteCache.addCounters(db: $0, pending) }
    }
}
