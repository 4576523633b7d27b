import CSQLite

#if canImport(Glibc)
import Glibc
#endif

/// Opening the index so that a broken one never locks the user out:
/// - nothing is written unless something needs writing (the schema is made only when
///   `user_version` says it is missing), so a full disk or another process's long write
///   transaction does not stop reads;
/// - a corrupt index (SQLite says so, the open-time queries find it the wrong shape, or
///   `PRAGMA quick_check` finds fault after an open-time query failed) is moved aside to
///   `index.sqlite.corrupt-<unix time>` and an empty one is made, with a warning;
/// - an index that cannot be opened for writing (a full disk, a read-only directory or file system)
///   is opened read-only: with SQLite's locking if the WAL's shared memory can be had, else
///   `immutable=1`; one that cannot be read at all is replaced by an empty one in memory.
extension ByteCache {
    struct OpenedIndex {
        let db: SQLiteDatabase
        var readOnly: ReadOnlyReason?
        var distrusted: Set<Int64> = []
        var warnings: [String] = []
    }

    /// What is wrong with an index that must not be used.
    private struct IndexDamage: Error {
        let detail: String
        /// The index file's inode when the damage was found, so that only that file is moved aside.
        let inode: ino_t?
    }

    static func openIndex(_ layout: CacheDirectory, writable: Bool, lock: DirectoryLock?) throws -> OpenedIndex {
        var warnings: [String] = []
        guard writable else {
            return try openReadOnly(layout, because: .directoryNotWritable, warnings: warnings)
        }
        var lookedAgain = false, movedAside = false
        while true {
            do {
                try layout.createIndexFileIfMissing()
                let inode = try FileStatus(layout.indexPath, followingLinks: false)?.info.st_ino
                var opened = try withDamageFound(inode: inode) {
                    try load(try SQLiteDatabase(path: layout.indexPath, mode: .readWrite), layout)
                }
                opened.warnings.insert(contentsOf: warnings, at: 0)
                return opened
            } catch let damage as IndexDamage where movedAside {
                throw CacheError.inconsistent(
                    path: layout.indexPath, detail: "a new index is damaged too: \(damage.detail)")
            } catch let damage as IndexDamage {
                switch try moveAside(layout, damage, lock: lock) {
                case .moved(let warning):
                    warnings.append(warning)
                    movedAside = true
                case .replacedMeanwhile where !lookedAgain, .busy where !lookedAgain:
                    lookedAgain = true  // another process may be repairing it right now
                case .replacedMeanwhile, .busy:
                    throw CacheError.inconsistent(
                        path: layout.indexPath,
                        detail: damage.detail
                            + "; another process has the cache open, so it cannot be moved aside now")
                }
            } catch let error as SQLiteError where error.isStorageFailure {
                return try openReadOnly(
                    layout, because: .indexNotWritable(error.message),
                    warnings: warnings + [unwritable(layout, error.message)])
            } catch CacheError.io(let function, _, let code) where code == ENOSPC || code == EDQUOT {
                // Not even room for an empty index file.
                let why = "\(function): \(String(cString: strerror(code)))"
                return try openReadOnly(
                    layout, because: .indexNotWritable(why), warnings: warnings + [unwritable(layout, why)])
            }
        }
    }

    private static func unwritable(_ layout: CacheDirectory, _ why: String) -> String {
        "could not open the cache index \(layout.indexPath) for writing (\(why)); using what it holds read-only"
    }

    /// Opens the index for reading only, trying SQLite's read-only mode, then `immutable=1`. An
    /// index that is missing, not the cache's, or corrupt (and cannot be moved aside here) is
    /// replaced by an empty one in memory: the cache is then empty, not unusable.
    private static func openReadOnly(
        _ layout: CacheDirectory, because reason: ReadOnlyReason,
        warnings: [String]
    ) throws -> OpenedIndex {
        var warnings = warnings
        var opened: OpenedIndex?
        if try FileStatus(layout.indexPath, followingLinks: false) != nil {
            for mode in [SQLiteDatabase.Mode.readOnly, .immutable] {
                do {
                    opened = try withDamageFound(inode: nil) {
                        try load(try SQLiteDatabase(path: layout.indexPath, mode: mode), layout)
                    }
                    break
                } catch let error as SQLiteError where error.isStorageFailure && mode == .readOnly {
                    continue  // the WAL's shared memory cannot be had: read the file as it is
                } catch let damage as IndexDamage {
                    warnings.append(
                        "the cache index \(layout.indexPath) is corrupt (\(damage.detail)) and cannot be "
                            + "replaced, because \(reason.sentence); the cache is treated as empty")
                    break
                }
            }
        }
        var result = try opened ?? load(try SQLiteDatabase(path: layout.indexPath, mode: .memory), layout)
        result.readOnly = reason
        result.warnings.insert(contentsOf: warnings, at: 0)
        return result
    }

    /// Turns a failure that shows the index itself is broken into `IndexDamage`.
    private static func withDamageFound(inode: ino_t?, _ body: () throws -> OpenedIndex) throws -> OpenedIndex {
        do {
            return try body()
        } catch let error as SQLiteError {
            guard let detail = damage(behind: error) else { throw error }
            throw IndexDamage(detail: detail, inode: inode)
        }
    }

    /// Why the index is unusable, when that is what `error` shows; nil when the failure lies
    /// elsewhere (a full disk, a lock) and the index must be kept.
    private static func damage(behind error: SQLiteError) -> String? {
        if error.isCorruption { return error.message }
        if error.code == SQLITE_ERROR
            && (error.message.hasPrefix("no such table") || error.message.hasPrefix("no such column"))
        {
            return "it does not have the cache's tables: \(error.message)"
        }
        // Something else failed: ask SQLite whether the file is sound, on a fresh connection.
        guard !error.isBusy, let db = try? SQLiteDatabase(path: error.path, mode: .readOnly) else { return nil }
        do {
            let verdict = try db.quickCheck()
            return verdict == "ok" ? nil : "quick_check: \(verdict)"
        } catch let check as SQLiteError where check.isCorruption {
            return check.message
        } catch {
            return nil
        }
    }

    /// Makes the schema if the index has none, sets the connection up, and reads every record once
    /// (`impossibleRecords`): the open-time query that finds damage and impossible values.
    private static func load(_ db: SQLiteDatabase, _ layout: CacheDirectory) throws -> OpenedIndex {
        let writable = db.mode == .readWrite || db.mode == .memory
        if try userVersion(db) < schemaVersion {
            guard writable else { return try load(try SQLiteDatabase(path: layout.indexPath, mode: .memory), layout) }
            try createSchema(db, removingDataFilesOf: db.mode == .memory ? nil : layout)
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

    private enum MoveAside {
        case moved(warning: String)
        /// The file is no longer the damaged one: another process repaired it.
        case replacedMeanwhile
        /// Other processes have the cache open.
        case busy
    }

    /// Removes the data files of the damaged index and renames it (its WAL and shared memory
    /// first: a WAL left behind would be replayed into the new index) to
    /// `index.sqlite.corrupt-<unix time>`. Only when no other process has the cache open: SQLite
    /// in a process still using the old file would delete the new index's WAL when it closes.
    private static func moveAside(
        _ layout: CacheDirectory, _ damage: IndexDamage, lock: DirectoryLock?
    ) throws -> MoveAside {
        guard let lock else { return .busy }
        let outcome = try lock.exclusively(waitingUpTo: 2) { () throws -> MoveAside in
            guard let now = try FileStatus(layout.indexPath, followingLinks: false), now.info.st_ino == damage.inode
            else {
                return .replacedMeanwhile
            }
            var aside = layout.indexPath + CacheDirectory.asideMarker + "\(time(nil))"
            var n = 1
            while try FileStatus(aside, followingLinks: false) != nil {
                n += 1
                aside = layout.indexPath + CacheDirectory.asideMarker + "\(time(nil))-\(n)"
            }
            // Its data files first: they free room on a full disk for the new index.
            try layout.removeDataFiles()
            for suffix in ["-wal", "-shm", "-journal", ""] {
                guard rename(layout.indexPath + suffix, aside + suffix) == 0 || errno == ENOENT else {
                    throw CacheError.io(function: "rename", path: layout.indexPath + suffix, errno: errno)
                }
            }
            return .moved(
                warning: "the cache index \(layout.indexPath) was corrupt (\(damage.detail)); "
                    + "moved it to \(aside) and started an empty cache")
        }
        return outcome ?? .busy
    }

    /// Empties the cache at `directory` without SQLite: removes the index, its WAL and shared
    /// memory, indexes moved aside, and every data file. For `cache clear` when the index cannot
    /// be opened at all; `clear()` is the gentler way when it can. A process still using the cache
    /// keeps its open files and loses nothing it has not yet committed; what it commits later is
    /// lost with the old index.
    ///
    /// The directory must be this user's; a symbolic link or file in place of `data/` is removed
    /// (never followed).
    public static func reset(directory: String) throws {
        guard let top = try FileStatus(directory, followingLinks: true) else { return }
        try top.requireOwnDirectory(directory)
        let layout = try CacheDirectory(path: directory).resolved()
        try layout.requireCache()
        let aside = try CacheDirectory.names(in: layout.path)
            .filter { $0.hasPrefix("index.sqlite" + CacheDirectory.asideMarker) }
            .map { layout.path + "/" + $0 }
        // The WAL before the database, so no WAL is ever left to be replayed into a new index.
        for file in layout.indexFiles.reversed() + aside {
            try CacheDirectory.remove(file)
        }
        guard let data = try FileStatus(layout.dataPath, followingLinks: false) else { return }
        if data.type == S_IFDIR {
            try data.requireOwnDirectory(layout.dataPath)
            try layout.removeDataFiles()
        } else {
            try CacheDirectory.remove(layout.dataPath)
        }
    }
}
