import Caching
import Foundation
import Synchronization

/// Where jobs live, so that a restart loses none. Small on purpose: the SQLite store serves one
/// machine; a PostgreSQL store for several machines can implement the same calls.
public protocol JobStore: Sendable {
    func insert(_ job: JobRecord) throws
    func job(id: String) throws -> JobRecord?
    /// Newest first, at most `limit`, only those older than the job numbered `before` when given
    /// (a page after a page); `state` nil for all.
    func jobs(state: JobState?, before: Int64?, limit: Int) throws -> [JobRecord]
    func count(state: JobState) throws -> Int
    /// The oldest queued job, marked running (started now) in the same step, or nil.
    func claimNext() throws -> JobRecord?
    func saveProgress(id: String, _ progress: JobProgress) throws
    /// A running job ended: `done` with a result, `failed` with an error, `cancelled`, or back to
    /// `queued` to run again (the service is stopping).
    func finish(id: String, state: JobState, result: String?, errorCode: String?, errorMessage: String?) throws
    /// Cancels a queued job; false when it was not queued.
    func cancelQueued(id: String) throws -> Bool
    /// Jobs a stopped service left running go back to the queue; returns how many.
    func requeueRunning() throws -> Int
    /// Removes finished jobs beyond the newest `count` and those finished before `cutoff`;
    /// returns their ids (their files go too).
    func removeFinished(keepingNewest count: Int, finishedBefore cutoff: Date) throws -> [String]
}

/// Jobs in `jobs.sqlite` beside the cache index (WAL mode, private like the cache).
public final class SQLiteJobStore: JobStore {
    private let db: Mutex<SQLiteDatabase>

    public init(cache: ByteCache) throws {
        let database = try cache.openDatabase(named: "jobs.sqlite")
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS jobs(
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                type TEXT NOT NULL,
                spec TEXT NOT NULL,
                state TEXT NOT NULL,
                bytes INTEGER NOT NULL DEFAULT 0,
                total_bytes INTEGER NOT NULL DEFAULT 0,
                items_done INTEGER NOT NULL DEFAULT 0,
                items INTEGER NOT NULL DEFAULT 0,
                result TEXT,
                error_code TEXT,
                error_message TEXT,
                created REAL NOT NULL,
                started REAL,
                finished REAL);
            CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state, seq);
            """)
        db = Mutex(database)
    }

    private static let columns =
        "id, type, spec, state, bytes, total_bytes, items_done, items, result, error_code, "
        + "error_message, created, started, finished, seq"

    private static func record(_ row: SQLiteRow) -> JobRecord? {
        guard let id = row.text(0), let type = row.text(1).flatMap(JobType.init), let spec = row.text(2),
            let state = row.text(3).flatMap(JobState.init)
        else { return nil }
        var progress = JobProgress()
        progress.bytes = row.int(4)
        progress.totalBytes = row.int(5)
        progress.itemsDone = Int(row.int(6))
        progress.items = Int(row.int(7))
        func date(_ column: Int32) -> Date? {
            row.isNull(column) ? nil : Date(timeIntervalSince1970: row.double(column))
        }
        return JobRecord(
            id: id, type: type, spec: spec, state: state, progress: progress, result: row.text(8),
            errorCode: row.text(9), errorMessage: row.text(10),
            created: date(11) ?? Date(timeIntervalSince1970: 0), started: date(12), finished: date(13),
            seq: row.int(14))
    }

    public func insert(_ job: JobRecord) throws {
        try db.withLock { db in
            try db.query(
                """
                INSERT INTO jobs(id, type, spec, state, items, created) VALUES(?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(job.id), .text(job.type.rawValue), .text(job.spec), .text(job.state.rawValue),
                    .int(Int64(job.progress.items)), .double(job.created.timeIntervalSince1970),
                ])
        }
    }

    public func job(id: String) throws -> JobRecord? {
        try db.withLock { db in
            var found: JobRecord?
            try db.query("SELECT \(SQLiteJobStore.columns) FROM jobs WHERE id = ?", [.text(id)]) {
                found = SQLiteJobStore.record($0)
            }
            return found
        }
    }

    public func jobs(state: JobState?, before: Int64?, limit: Int) throws -> [JobRecord] {
        try db.withLock { db in
            var list: [JobRecord] = []
            let filter = "WHERE seq < ?" + (state == nil ? "" : " AND state = ?")
            let bindings: [SQLiteValue] =
                [.int(before ?? Int64.max)] + (state.map { [.text($0.rawValue)] } ?? []) + [.int(Int64(limit))]
            try db.query("SELECT \(SQLiteJobStore.columns) FROM jobs \(filter) ORDER BY seq DESC LIMIT ?", bindings) {
                if let job = SQLiteJobStore.record($0) { list.append(job) }
            }
            return list
        }
    }

    public func count(state: JobState) throws -> Int {
        try db.withLock {
            Int(try $0.scalar("SELECT COUNT(*) FROM jobs WHERE state = ?", [.text(state.rawValue)]) ?? 0)
        }
    }

    public func claimNext() throws -> JobRecord? {
        try db.withLock { db in
            try db.writeTransaction {
                var next: JobRecord?
                try db.query("SELECT \(SQLiteJobStore.columns) FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1") {
                    next = SQLiteJobStore.record($0)
                }
                guard var job = next else { return nil }
                let now = Date()
                try db.query(
                    "UPDATE jobs SET state = 'running', started = ? WHERE id = ?",
                    [.double(now.timeIntervalSince1970), .text(job.id)])
                job.state = .running
                job.started = now
                return job
            }
        }
    }

    public func saveProgress(id: String, _ progress: JobProgress) throws {
        try db.withLock { db in
            try db.query(
                "UPDATE jobs SET bytes = ?, total_bytes = ?, items_done = ?, items = ? WHERE id = ?",
                [
                    .int(progress.bytes), .int(progress.totalBytes), .int(Int64(progress.itemsDone)),
                    .int(Int64(progress.items)), .text(id),
                ])
        }
    }

    public func finish(id: String, state: JobState, result: String?, errorCode: String?, errorMessage: String?) throws {
        try db.withLock { db in
            let finished: SQLiteValue = state.isFinal ? .double(Date().timeIntervalSince1970) : .null
            try db.query(
                """
                UPDATE jobs SET state = ?, result = ?, error_code = ?, error_message = ?, finished = ?,
                    started = CASE WHEN ? = 'queued' THEN NULL ELSE started END
                WHERE id = ?
                """,
                [
                    .text(state.rawValue), .optionalText(result), .optionalText(errorCode), .optionalText(errorMessage),
                    finished, .text(state.rawValue), .text(id),
                ])
        }
    }

    public func cancelQueued(id: String) throws -> Bool {
        try db.withLock { db in
            try db.query(
                "UPDATE jobs SET state = 'cancelled', finished = ? WHERE id = ? AND state = 'queued'",
                [.double(Date().timeIntervalSince1970), .text(id)])
            return db.changes > 0
        }
    }

    public func removeFinished(keepingNewest count: Int, finishedBefore cutoff: Date) throws -> [String] {
        try db.withLock { db in
            var ids: [String] = []
            try db.query(
                """
                SELECT id FROM jobs WHERE finished IS NOT NULL AND (finished < ? OR seq NOT IN
                    (SELECT seq FROM jobs WHERE finished IS NOT NULL ORDER BY seq DESC LIMIT ?))
                """, [.double(cutoff.timeIntervalSince1970), .int(Int64(count))]
            ) { row in
                if let id = row.text(0) { ids.append(id) }
            }
            for id in ids { try db.query("DELETE FROM jobs WHERE id = ?", [.text(id)]) }
            return ids
        }
    }

    public func requeueRunning() throws -> Int {
        try db.withLock { db in
            try db.query("UPDATE jobs SET state = 'queued', started = NULL WHERE state = 'running'")
            return db.changes
        }
    }
}
