import CSQLite

#if canImport(Glibc)
import Glibc
#endif

/// A failed SQLite call: the result code, the function that returned it, the database file and
/// SQLite's message (with the system error behind it, when there is one).
public struct SQLiteError: Error, CustomStringConvertible {
    /// The primary result code (`SQLITE_FULL`, `SQLITE_CORRUPT`, ...).
    public let code: Int32
    public let function: String
    public let path: String
    public let message: String
    public var description: String { "\(function) failed for \(path) (\(code)): \(message)" }

    /// The file is not an SQLite database, or its pages contradict each other.
    var isCorruption: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
    /// The storage refused, not the data: a full disk, an I/O error, a read-only file or directory.
    var isStorageFailure: Bool {
        [SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM].contains(code)
    }
    var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
}

/// One SQLite connection. The single owner of the `sqlite3*`; closed in `deinit`.
///
/// Not thread-safe by itself: its owner (`ByteCache`, the service's job store) serialises access
/// with its own lock. Made by `ByteCache` only, which keeps every database of a cache directory
/// private (0600, no symbolic links).
public final class SQLiteDatabase {
    enum Mode {
        /// Reads and writes; the file must exist (the cache creates it with its own permissions).
        case readWrite
        /// Reads, with SQLite's locking, so other processes' commits are seen. Needs the WAL's
        /// shared-memory file to exist or be creatable.
        case readOnly
        /// Reads without any locking or WAL (`immutable=1`): the last resort for a read-only or
        /// full file system where even the shared-memory file cannot be made. Sees the database
        /// file as last checkpointed.
        case immutable
        /// An empty database in memory, standing in for an index that cannot be used at all.
        case memory
    }

    private let handle: OpaquePointer
    let path: String
    let mode: Mode
    static let busyTimeoutMilliseconds: Int32 = 30_000

    init(path: String, mode: Mode) throws {
        var db: OpaquePointer?
        // The index is never reached through a symbolic link (SQLITE_OPEN_NOFOLLOW).
        let flags: Int32
        let name: String
        switch mode {
        case .readWrite:
            flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW
            name = path
        case .readOnly:
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_URI
            name = SQLiteDatabase.uri(path, query: "mode=ro")
        case .immutable:
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_URI
            name = SQLiteDatabase.uri(path, query: "mode=ro&immutable=1")
        case .memory:
            flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY
            name = ":memory:"
        }
        let rc = sqlite3_open_v2(name, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { SQLiteDatabase.message(of: $0, code: rc) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc & 0xff, function: "sqlite3_open_v2", path: path, message: message)
        }
        handle = db
        self.path = path
        self.mode = mode
        // Other processes may hold the write lock briefly; wait rather than fail.
        sqlite3_busy_timeout(handle, SQLiteDatabase.busyTimeoutMilliseconds)
    }

    deinit { sqlite3_close_v2(handle) }

    /// `file:` URI of `path` for URI parameters; `%`, `?` and `#` are escaped as the URI syntax needs.
    private static func uri(_ path: String, query: String) -> String {
        var escaped = ""
        for c in path.unicodeScalars {
            switch c {
            case "%": escaped += "%25"
            case "?": escaped += "%3f"
            case "#": escaped += "%23"
            default: escaped.unicodeScalars.append(c)
            }
        }
        // "file:///abs" has an empty authority; a relative path must not start with "//".
        return (path.hasPrefix("/") ? "file://" : "file:") + escaped + "?" + query
    }

    /// SQLite's message, with the system error behind it when the storage failed (the errno of
    /// other codes may be left over from a harmless probe, such as a missing journal).
    private static func message(of db: OpaquePointer, code: Int32) -> String {
        let message = String(cString: sqlite3_errmsg(db))
        let system = sqlite3_system_errno(db)
        guard system != 0, [SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN].contains(code & 0xff) else { return message }
        return "\(message): \(String(cString: strerror(system)))"
    }

    private func check(_ rc: Int32, _ function: String) throws {
        guard rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE else {
            throw SQLiteError(
                code: rc & 0xff, function: function, path: path, message: SQLiteDatabase.message(of: handle, code: rc))
        }
    }

    /// Runs one or more statements without parameters or results.
    public func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), "sqlite3_exec")
    }

    /// Runs `sql` with `bindings`, calling `row` for each result row.
    public func query(_ sql: String, _ bindings: [SQLiteValue] = [], row: (SQLiteRow) throws -> Void = { _ in }) throws
    {
        var stmt: OpaquePointer?
        try check(sqlite3_prepare_v2(handle, sql, -1, &stmt, nil), "sqlite3_prepare_v2")
        guard let stmt else { return }
        defer { sqlite3_finalize(stmt) }
        for (i, value) in bindings.enumerated() {
            let index = Int32(i + 1)
            switch value {
            case .int(let v): try check(sqlite3_bind_int64(stmt, index, v), "sqlite3_bind_int64")
            case .double(let v): try check(sqlite3_bind_double(stmt, index, v), "sqlite3_bind_double")
            case .text(let v): try check(mp_sqlite3_bind_text_transient(stmt, index, v), "sqlite3_bind_text")
            case .null: try check(sqlite3_bind_null(stmt, index), "sqlite3_bind_null")
            }
        }
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return }
            try check(rc, "sqlite3_step")
            try row(SQLiteRow(stmt: stmt))
        }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The first column of the first row of `sql`.
    public func scalar(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> Int64? {
        var value: Int64?
        try query(sql, bindings) { if value == nil { value = $0.optionalInt(0) } }
        return value
    }

    /// Runs `body` in a write transaction taken up front (`BEGIN IMMEDIATE`), so two processes
    /// never both read-then-write the same rows; rolls back if `body` throws.
    public func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` failing at once with `SQLITE_BUSY` instead of waiting for another process's
    /// write lock: for writes that are worth doing only when they cost nothing.
    func withoutWaiting<T>(_ body: () throws -> T) rethrows -> T {
        sqlite3_busy_timeout(handle, 0)
        defer { sqlite3_busy_timeout(handle, SQLiteDatabase.busyTimeoutMilliseconds) }
        return try body()
    }

    /// Puts the file in WAL mode (a property of the file, set once). Several processes opening a
    /// new cache at once all try: switching needs the file to themselves, and SQLite answers
    /// `SQLITE_BUSY` at once, without its busy handler, to a reader asking for that (waiting could
    /// deadlock), so the switch is retried here for as long as the busy timeout.
    public func enableWriteAheadLog() throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(SQLiteDatabase.busyTimeoutMilliseconds))
        while true {
            do {
                return try query("PRAGMA journal_mode=WAL")
            } catch let error as SQLiteError where error.code == SQLITE_BUSY && ContinuousClock.now < deadline {
                usleep(5_000)
            }
        }
    }

    /// `PRAGMA quick_check`: "ok", or what SQLite found wrong.
    func quickCheck() throws -> String {
        var lines: [String] = []
        try query("PRAGMA quick_check") { lines.append($0.text(0) ?? "") }
        return lines.joined(separator: "; ")
    }
}

public enum SQLiteValue: Sendable {
    case int(Int64)
    case double(Double)
    case text(String)
    case null

    public static func optionalText(_ s: String?) -> SQLiteValue { s.map { .text($0) } ?? .null }
    public static func optionalInt(_ v: Int64?) -> SQLiteValue { v.map { .int($0) } ?? .null }
}

/// A view of the current row of a statement; valid only inside the `row` callback.
public struct SQLiteRow {
    fileprivate let stmt: OpaquePointer

    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(stmt, column) }
    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    public func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }
    public func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(stmt, column) else { return nil }
        return String(cString: p)
    }
}
