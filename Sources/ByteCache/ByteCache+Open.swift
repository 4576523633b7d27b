import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// Opening the index so that a broken disk never locks the user out:
/// - nothing is written unless something needs writing (the schema is made only when
///   `user_version` says it is missing), so a full disk or another process's long write
///   transaction does not stop reads;
/// - an index that cannot be opened for writing (a full disk, a read-only directory or file system)
///   is opened read-only: with SQLite's locking if the WAL's shared memory can be had, else
///   `immutable=1`; one that is missing is replaced by an empty one in memory.
extension ByteCache {
    struct OpenedIndex {
        let db: SQLiteDatabase
        var readOnly: ReadOnlyReason?
        var distrusted: Set<Int64> = []
        var warnings: [String] = []
    }

    static func openIndex(_ layout: CacheDirectory, writable: Bool) throws -> OpenedIndex {
        guard writable else {
            return try openReadOnly(layout, because: .directoryNotWritable, warnings: [])
        }
        do {
            try layout.createIndexFileIfMissing()
            return try load(try SQLiteDatabase(path: layout.indexPath, mode: .readWrite), layout)
        } catch let error as SQLiteError where error.isStorageFailure {
            return try openReadOnly(layout, because: .indexNotWritable(error.message), warnings: [unwritable(layout, error.message)])
        } catch CacheError.io(let function, _, let code) where code == ENOSPC || code == EDQUOT {
            // Not even room for an empty index file.
            let why = "\(function): \(String(cString: strerror(code)))"
            return try openReadOnly(layout, because: .indexNotWritable(why), warnings: [unwritable(layout, why)])
        }
    }

    private static func unwritable(_ layout: CacheDirectory, _ why: String) -> String {
        "could not open the cache index \(layout.indexPath) for writing (\(why)); using what it holds read-only"
    }

    /// Opens the index for reading only, trying SQLite's read-only mode, then `immutable=1`. An
    /// index that is missing or not the cache's is replaced by an empty one in memory: the cache
    /// is then empty, not unusable.
    private static func openReadOnly(_ layout: CacheDirectory, because reason: ReadOnlyReason,
                                     warnings: [String]) throws -> OpenedIndex {
        var opened: OpenedIndex?
        if try FileStatus(layout.indexPath, followingLinks: false) != nil {
            for mode in [SQLiteDatabase.Mode.readOnly, .immutable] {
                do {
                    opened = try load(try SQLiteDatabase(path: layout.indexPath, mode: mode), layout)
                    break
                } catch let error as SQLiteError where error.isStorageFailure && mode == .readOnly {
                    continue // the WAL's shared memory cannot be had: read the file as it is
                }
            }
        }
        var result = try opened ?? load(try SQLiteDatabase(path: layout.indexPath, mode: .memory), layout)
        result.readOnly = reason
        result.warnings.insert(contentsOf: warnings, at: 0)
        return result
    }

    /// Makes the schema if the index has none, sets the connection up, and reads every record once
    /// (`impossibleRecords`).
    private static func load(_ db: SQLiteDatabase, _ layout: CacheDirectory) throws -> OpenedIndex {
        let writable = db.mode == .readWrite || db.mode == .memory
        if try userVersion(db) < schemaVersion {
            guard writable else { return try load(try SQLiteDatabase(path: layout.indexPath, mode: .memory), layout) }
            try createSchema(db)
        }
        try db.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        var opened = OpenedIndex(db: db)
        for record in try impossibleRecords(db: db) {
            let dropped = try writable && drop(record, db: db, layout: layout)
            if !dropped { opened.distrusted.insert(record.row) }
            opened.warnings.append(record.warning(dropped: dropped))
        }
        return opened
    }
}
