import Foundation

/// The SQL side of the cache. Every function takes the connection from `ByteCache.index`'s lock.
extension ByteCache {
    static let schemaVersion: Int64 = 1

    static func userVersion(_ db: SQLiteDatabase) throws -> Int64 {
        try db.scalar("PRAGMA user_version") ?? 0
    }

    /// Makes the tables of a new index. Another process may be doing the same: the transaction
    /// looks again and the first one wins.
    /// - Parameter layout: the directory whose data files go: a new index owns none, so any there
    ///   are orphans of an index that was lost or moved aside. nil for an index in memory.
    static func createSchema(_ db: SQLiteDatabase, removingDataFilesOf layout: CacheDirectory?) throws {
        // WAL lets readers in other processes proceed while one process commits; it is a property
        // of the file, set once.
        try db.enableWriteAheadLog()
        try db.writeTransaction {
            guard try userVersion(db) < schemaVersion else { return }
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS resources(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    key TEXT NOT NULL UNIQUE,
                    url TEXT NOT NULL,
                    size INTEGER,
                    etag TEXT,
                    last_modified TEXT,
                    content_type TEXT,
                    created REAL NOT NULL,
                    last_access REAL NOT NULL,
                    generation INTEGER NOT NULL DEFAULT 1,
                    stored_bytes INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE IF NOT EXISTS ranges(
                    resource_id INTEGER NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
                    start INTEGER NOT NULL,
                    end INTEGER NOT NULL,
                    PRIMARY KEY(resource_id, start)) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS stats(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
                CREATE INDEX IF NOT EXISTS resources_by_access ON resources(last_access);
                """)
            try layout?.removeDataFiles()
            try db.execute("PRAGMA user_version=\(schemaVersion)")
        }
    }

    static var now: Double { Date().timeIntervalSince1970 }

    static func currentGeneration(db: SQLiteDatabase, key: String) throws -> StoreGeneration? {
        var found: StoreGeneration?
        try db.query("SELECT id, generation FROM resources WHERE key = ?", [.text(key)]) {
            found = StoreGeneration(row: $0.int(0), number: $0.int(1))
        }
        return found
    }

    /// Finds or creates the row for `key` and marks it accessed now.
    static func ensureRow(db: SQLiteDatabase, key: String, url: String) throws -> StoreGeneration {
        try db.writeTransaction {
            let t = now
            try db.query(
                """
                INSERT INTO resources(key, url, created, last_access) VALUES(?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET last_access = excluded.last_access, url = excluded.url
                """, [.text(key), .text(url), .double(t), .double(t)])
            guard let row = try currentGeneration(db: db, key: key) else {
                throw CacheError.inconsistent(
                    path: db.path, detail: "the row for \(key) vanished inside its transaction")
            }
            return row
        }
    }

    static func deleteRow(db: SQLiteDatabase, id: Int64) throws {
        try db.writeTransaction {
            try db.query("DELETE FROM resources WHERE id = ?", [.int(id)])
        }
    }

    static func loadRanges(db: SQLiteDatabase, id: Int64) throws -> ByteRangeSet {
        var set = ByteRangeSet()
        try db.query("SELECT start, end FROM ranges WHERE resource_id = ? ORDER BY start", [.int(id)]) {
            // Opening drops impossible ranges; one written since by someone else is an error, not a trap.
            let start = $0.int(0), end = $0.int(1)
            guard start >= 0, start < end else {
                throw CacheError.inconsistent(path: db.path, detail: "resource \(id) has the range \(start)..<\(end)")
            }
            set.insert(start..<end)
        }
        return set
    }

    private static let resourceColumns =
        "id, key, url, size, etag, last_modified, content_type, created, last_access"

    private static func resource(from row: SQLiteRow, db: SQLiteDatabase) throws -> (Int64, CachedResource) {
        let id = row.int(0)
        let resource = CachedResource(
            key: row.text(1) ?? "", url: row.text(2) ?? "",
            validators: ResourceValidators(size: row.optionalInt(3), etag: row.text(4), lastModified: row.text(5)),
            contentType: row.text(6), created: row.double(7), lastAccess: row.double(8),
            ranges: ByteRangeSet())
        return (id, resource)
    }

    private static func withRanges(_ r: CachedResource, _ ranges: ByteRangeSet) -> CachedResource {
        CachedResource(
            key: r.key, url: r.url, validators: r.validators, contentType: r.contentType,
            created: r.created, lastAccess: r.lastAccess, ranges: ranges)
    }

    /// - Parameter distrusted: rows found impossible that could not be deleted; treated as absent.
    static func loadResource(
        db: SQLiteDatabase, key: String, excluding distrusted: Set<Int64>
    ) throws -> CachedResource? {
        var found: (Int64, CachedResource)?
        try db.query("SELECT \(resourceColumns) FROM resources WHERE key = ?", [.text(key)]) {
            found = try resource(from: $0, db: db)
        }
        guard let (id, r) = found, !distrusted.contains(id) else { return nil }
        return withRanges(r, try loadRanges(db: db, id: id))
    }

    static func loadAllResources(db: SQLiteDatabase, excluding distrusted: Set<Int64>) throws -> [CachedResource] {
        var rows: [(Int64, CachedResource)] = []
        try db.query("SELECT \(resourceColumns) FROM resources ORDER BY last_access DESC") {
            rows.append(try resource(from: $0, db: db))
        }
        return try rows.filter { !distrusted.contains($0.0) }.map { withRanges($0.1, try loadRanges(db: db, id: $0.0)) }
    }

    struct EntryState {
        var generation: StoreGeneration
        var validators: ResourceValidators
        var contentType: String?
        var ranges: ByteRangeSet
    }

    static func loadEntryState(db: SQLiteDatabase, key: String) throws -> EntryState? {
        var state: EntryState?
        try db.query(
            "SELECT id, generation, size, etag, last_modified, content_type FROM resources WHERE key = ?",
            [.text(key)]
        ) {
            state = EntryState(
                generation: StoreGeneration(row: $0.int(0), number: $0.int(1)),
                validators: ResourceValidators(
                    size: $0.optionalInt(2), etag: $0.text(3),
                    lastModified: $0.text(4)),
                contentType: $0.text(5), ranges: ByteRangeSet())
        }
        if var s = state {
            s.ranges = try loadRanges(db: db, id: s.generation.row)
            state = s
        }
        return state
    }

    /// Adds `newRanges` to the row if it still has `generation`; returns the merged set, or nil
    /// when the row was evicted or moved to a new generation meanwhile (the bytes are then stale).
    static func addRanges(
        db: SQLiteDatabase, generation: StoreGeneration, _ newRanges: ByteRangeSet
    ) throws -> ByteRangeSet? {
        try db.writeTransaction {
            var current: StoreGeneration?
            try db.query("SELECT id, generation FROM resources WHERE id = ?", [.int(generation.row)]) {
                current = StoreGeneration(row: $0.int(0), number: $0.int(1))
            }
            guard current == generation else { return nil }
            var merged = try loadRanges(db: db, id: generation.row)
            merged.formUnion(newRanges)
            try db.query("DELETE FROM ranges WHERE resource_id = ?", [.int(generation.row)])
            for r in merged.ranges {
                try db.query(
                    "INSERT INTO ranges(resource_id, start, end) VALUES(?, ?, ?)",
                    [.int(generation.row), .int(r.lowerBound), .int(r.upperBound)])
            }
            try db.query(
                "UPDATE resources SET stored_bytes = ?, last_access = ? WHERE id = ?",
                [.int(merged.byteCount), .double(now), .int(generation.row)])
            return merged
        }
    }

    /// Records the origin's validators. If they conflict with the stored ones (or `replacing`), the
    /// stored ranges are dropped and the generation advances (a new data file), in one transaction,
    /// and `incoming` is all that is recorded. nil when
    /// the key has no row (it was evicted or removed meanwhile).
    static func applyValidators(
        db: SQLiteDatabase, key: String, url: String, _ incoming: ResourceValidators,
        contentType: String?, replacing: Bool = false
    ) throws -> (state: EntryState, dropped: Bool)? {
        try db.writeTransaction {
            guard var state = try loadEntryState(db: db, key: key) else { return nil }
            let dropped = replacing || state.validators.conflicts(with: incoming)
            var validators = dropped ? incoming : state.validators.merged(with: incoming)
            if dropped {
                try db.query("DELETE FROM ranges WHERE resource_id = ?", [.int(state.generation.row)])
                state.generation = StoreGeneration(row: state.generation.row, number: state.generation.number + 1)
                state.ranges = ByteRangeSet()
            } else if validators == state.validators && (contentType == nil || contentType == state.contentType) {
                return (state, false)
            }
            if validators.size == nil { validators.size = state.validators.size }
            try db.query(
                """
                UPDATE resources SET size = ?, etag = ?, last_modified = ?, content_type = COALESCE(?, content_type),
                    generation = ?, stored_bytes = ? WHERE id = ?
                """,
                [
                    .optionalInt(validators.size), .optionalText(validators.etag),
                    .optionalText(validators.lastModified), .optionalText(contentType),
                    .int(state.generation.number), .int(state.ranges.byteCount), .int(state.generation.row),
                ])
            state.validators = validators
            if let contentType { state.contentType = contentType }
            return (state, dropped)
        }
    }

    /// Drops the stored bytes of `generation` and advances the row to the next (a new data file),
    /// in one transaction; false when the row is gone or has moved on already. For content found
    /// to be of two versions where no validator said so (an origin without ETag or Last-Modified
    /// that changed under the same size).
    static func dropVersion(db: SQLiteDatabase, generation: StoreGeneration) throws -> Bool {
        try db.writeTransaction {
            var current: StoreGeneration?
            try db.query("SELECT id, generation FROM resources WHERE id = ?", [.int(generation.row)]) {
                current = StoreGeneration(row: $0.int(0), number: $0.int(1))
            }
            guard current == generation else { return false }
            try db.query("DELETE FROM ranges WHERE resource_id = ?", [.int(generation.row)])
            try db.query(
                "UPDATE resources SET generation = ?, stored_bytes = 0 WHERE id = ?",
                [.int(generation.number + 1), .int(generation.row)])
            return true
        }
    }

    static func touch(db: SQLiteDatabase, id: Int64) throws {
        try db.query("UPDATE resources SET last_access = ? WHERE id = ?", [.double(now), .int(id)])
    }

    static func addCounters(db: SQLiteDatabase, _ c: ReadCounters) throws {
        try db.writeTransaction {
            for (name, value) in [
                ("hits", c.hits), ("misses", c.misses),
                ("bytes_from_cache", c.bytesFromCache), ("bytes_fetched", c.bytesFetched),
            ] {
                try db.query(
                    """
                    INSERT INTO stats(name, value) VALUES(?, ?)
                    ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
                    """, [.text(name), .int(value)])
            }
        }
    }

    static func loadStats(db: SQLiteDatabase, maxBytes: Int64) throws -> CacheStats {
        var resources = 0, stored: Int64 = 0
        try db.query("SELECT COUNT(*), COALESCE(SUM(stored_bytes), 0) FROM resources") {
            resources = Int($0.int(0))
            stored = $0.int(1)
        }
        var values: [String: Int64] = [:]
        try db.query("SELECT name, value FROM stats") { values[$0.text(0) ?? ""] = $0.int(1) }
        return CacheStats(
            resources: resources, storedBytes: stored, maxBytes: maxBytes,
            hits: values["hits"] ?? 0, misses: values["misses"] ?? 0,
            bytesFromCache: values["bytes_from_cache"] ?? 0,
            bytesFetched: values["bytes_fetched"] ?? 0)
    }

    static func totalStoredBytes(db: SQLiteDatabase) throws -> Int64 {
        var total: Int64 = 0
        try db.query("SELECT COALESCE(SUM(stored_bytes), 0) FROM resources") { total = $0.int(0) }
        return total
    }

    /// Resources by least recent access, for eviction.
    static func evictionCandidates(db: SQLiteDatabase) throws -> [(StoreGeneration, Int64)] {
        var rows: [(StoreGeneration, Int64)] = []
        try db.query("SELECT id, generation, stored_bytes FROM resources ORDER BY last_access ASC") {
            rows.append((StoreGeneration(row: $0.int(0), number: $0.int(1)), $0.int(2)))
        }
        return rows
    }
}
