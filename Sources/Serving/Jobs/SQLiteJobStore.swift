import Caching
import Foundation
import Synchronization

/// Jobs in `jobs.sqlite` beside the cache index (WAL mode, private like the cache): the default,
/// for one machine. Processes sharing the cache directory share the jobs too, under leases.
public final class SQLiteJobStore: JobStore {
    private let db: Mutex<SQLiteDatabase>
    /// The schema this build writes (`PRAGMA user_version`). 0 was the first, before leases.
    static let schemaVersion: Int64 = 2

    public init(cache: ByteCache) throws {
        let database = try cache.openDatabase(named: "jobs.sqlite")
        try database.writeTransaction { try SQLiteJobStore.migrate(database, path: cache.directory + "/jobs.sqlite") }
        db = Mutex(database)
    }

    private static func migrate(_ db: SQLiteDatabase, path: String) throws {
        let version = try db.scalar("PRAGMA user_version") ?? 0
        guard version <= schemaVersion else {
            throw JobStoreError.newerSchema(store: path, found: version, known: schemaVersion)
        }
        guard version < schemaVersion else { return }
        let existing = try db.scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'jobs'") ?? 0
        if existing == 0 {
            try db.execute(
                """
                CREATE TABLE jobs(
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
                CREATE INDEX jobs_by_state ON jobs(state, seq);
                """)
        }
        // Version 2: leases. Jobs a version-0 process left running have no lease: they are taken
        // as expired.
        try db.execute(
            """
            ALTER TABLE jobs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE jobs ADD COLUMN holder TEXT;
            ALTER TABLE jobs ADD COLUMN lease_until REAL;
            ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
            PRAGMA user_version = \(schemaVersion);
            """)
    }

    private static let columns =
        "id, type, spec, state, bytes, total_bytes, items_done, items, result, error_code, "
        + "error_message, created, started, finished, seq, attempts"

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
            seq: row.int(14), attempts: Int(row.int(15)))
    }

    private static var now: Double { Date().timeIntervalSince1970 }

    public func insert(_ job: JobRecord) throws -> JobRecord {
        try db.withLock { db in
            var stored = job
            try db.query(
                "INSERT INTO jobs(id, type, spec, state, items, created) VALUES(?, ?, ?, ?, ?, ?) RETURNING seq",
                [
                    .text(job.id), .text(job.type.rawValue), .text(job.spec), .text(job.state.rawValue),
                    .int(Int64(job.progress.items)), .double(job.created.timeIntervalSince1970),
                ]
            ) { stored.seq = $0.int(0) }
            return stored
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

    public func claimNext(lease: JobLease) throws -> JobRecord? {
        try db.withLock { db in
            try db.writeTransaction {
                let now = SQLiteJobStore.now
                try SQLiteJobStore.settleExpired(db, now: now, maxAttempts: lease.maxAttempts)
                var next: JobRecord?
                try db.query("SELECT \(SQLiteJobStore.columns) FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1") {
                    next = SQLiteJobStore.record($0)
                }
                guard var job = next else { return nil }
                try db.query(
                    """
                    UPDATE jobs SET state = 'running', started = ?, holder = ?, lease_until = ?,
                        attempts = attempts + 1 WHERE id = ?
                    """,
                    [.double(now), .text(lease.holder), .double(now + lease.seconds), .text(job.id)])
                job.state = .running
                job.started = Date(timeIntervalSince1970: now)
                job.attempts += 1
                return job
            }
        }
    }

    /// Running jobs whose lease ran out: cancelled if asked to be, failed after `maxAttempts`
    /// runs, otherwise queued again (keeping their place: the oldest runs first).
    private static func settleExpired(_ db: SQLiteDatabase, now: Double, maxAttempts: Int) throws {
        let expired = "state = 'running' AND (lease_until IS NULL OR lease_until < ?)"
        try db.query(
            """
            UPDATE jobs SET state = 'cancelled', finished = ?, holder = NULL, lease_until = NULL,
                error_code = 'cancelled', error_message = 'the job was cancelled'
            WHERE \(expired) AND cancel_requested = 1
            """, [.double(now), .double(now)])
        var exhausted: [(String, Int64)] = []
        try db.query(
            "SELECT id, attempts FROM jobs WHERE \(expired) AND attempts >= ?",
            [.double(now), .int(Int64(maxAttempts))]
        ) {
            if let id = $0.text(0) { exhausted.append((id, $0.int(1))) }
        }
        for (id, attempts) in exhausted {
            try db.query(
                """
                UPDATE jobs SET state = 'failed', finished = ?, holder = NULL, lease_until = NULL,
                    error_code = 'attempts_exhausted', error_message = ? WHERE id = ?
                """, [.double(now), .text(JobStoreText.exhausted(Int(attempts))), .text(id)])
        }
        try db.query(
            "UPDATE jobs SET state = 'queued', started = NULL, holder = NULL, lease_until = NULL WHERE \(expired)",
            [.double(now)])
    }

    public func renew(id: String, lease: JobLease) throws -> LeaseState {
        try db.withLock { db in
            try db.query(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND holder = ? AND state = 'running'",
                [.double(SQLiteJobStore.now + lease.seconds), .text(id), .text(lease.holder)])
            guard db.changes > 0 else { return .lost }
            let asked = try db.scalar("SELECT cancel_requested FROM jobs WHERE id = ?", [.text(id)]) ?? 0
            return asked != 0 ? .cancelRequested : .held
        }
    }

    public func saveProgress(id: String, lease: JobLease, _ progress: JobProgress) throws {
        try db.withLock { db in
            try db.query(
                """
                UPDATE jobs SET bytes = ?, total_bytes = ?, items_done = ?, items = ?
                WHERE id = ? AND holder = ? AND state = 'running'
                """,
                [
                    .int(progress.bytes), .int(progress.totalBytes), .int(Int64(progress.itemsDone)),
                    .int(Int64(progress.items)), .text(id), .text(lease.holder),
                ])
        }
    }

    public func finish(
        id: String, lease: JobLease, state: JobState, result: String?, errorCode: String?, errorMessage: String?
    ) throws -> Bool {
        try db.withLock { db in
            let finished: SQLiteValue = state.isFinal ? .double(SQLiteJobStore.now) : .null
            // Back to the queue (the service stops) is not a run: the attempt is given back.
            try db.query(
                """
                UPDATE jobs SET state = ?, result = ?, error_code = ?, error_message = ?, finished = ?,
                    holder = NULL, lease_until = NULL,
                    started = CASE WHEN ? = 'queued' THEN NULL ELSE started END,
                    attempts = CASE WHEN ? = 'queued' THEN attempts - 1 ELSE attempts END
                WHERE id = ? AND holder = ? AND state = 'running'
                """,
                [
                    .text(state.rawValue), .optionalText(result), .optionalText(errorCode), .optionalText(errorMessage),
                    finished, .text(state.rawValue), .text(state.rawValue), .text(id), .text(lease.holder),
                ])
            return db.changes > 0
        }
    }

    public func cancel(id: String) throws -> CancelOutcome {
        try db.withLock { db in
            try db.writeTransaction {
                var state: JobState?
                try db.query("SELECT state FROM jobs WHERE id = ?", [.text(id)]) {
                    state = $0.text(0).flatMap(JobState.init)
                }
                switch state {
                case nil: return .notFound
                case .queued?:
                    try db.query(
                        """
                        UPDATE jobs SET state = 'cancelled', finished = ?, error_code = 'cancelled',
                            error_message = 'the job was cancelled' WHERE id = ?
                        """, [.double(SQLiteJobStore.now), .text(id)])
                    return .cancelled
                case .running?:
                    try db.query("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", [.text(id)])
                    return .requested
                case let final?:
                    return .finished(final)
                }
            }
        }
    }

    public func releaseAbandoned() throws -> Int {
        try db.withLock { db in
            try db.writeTransaction {
                var gone: [String] = []
                try db.query("SELECT id, holder FROM jobs WHERE state = 'running' AND holder IS NOT NULL") { row in
                    if let id = row.text(0), let holder = row.text(1), JobLease.holderIsGone(holder) { gone.append(id) }
                }
                // Their leases end now; the next claim settles them as it settles any expired lease.
                for id in gone { try db.query("UPDATE jobs SET lease_until = 0 WHERE id = ?", [.text(id)]) }
                return gone.count
            }
        }
    }

    public func removeFinished(keepingNewest count: Int, finishedLongerAgoThan age: Double) throws -> [String] {
        let cutoff = SQLiteJobStore.now - age
        return try db.withLock { db in
            var ids: [String] = []
            try db.query(
                """
                SELECT id FROM jobs WHERE finished IS NOT NULL AND (finished < ? OR seq NOT IN
                    (SELECT seq FROM jobs WHERE finished IS NOT NULL ORDER BY seq DESC LIMIT ?))
                """, [.double(cutoff), .int(Int64(count))]
            ) { row in
                if let id = row.text(0) { ids.append(id) }
            }
            for id in ids { try db.query("DELETE FROM jobs WHERE id = ?", [.text(id)]) }
            return ids
        }
    }

    public func watch(_ handler: @escaping @Sendable (JobEvent) -> Void) {}

    /// Every process sharing the file shares the cache too: no job needs a node of its own.
    public func heartbeat(seconds: Double) throws {}

    /// The files stay in the cache directory's `jobs/` folder, which every process sharing the
    /// file shares too.
    public var keepsFiles: Bool { false }

    public func putFiles(
        id: String, lease: JobLease, item: String, _ files: [(name: String, bytes: [UInt8])]
    ) throws
        -> Bool
    { false }

    public func file(id: String, item: String, name: String) throws -> [UInt8]? { nil }

    public func close() {}
}

/// A job store that cannot be used as it is.
public struct JobStoreError: Error, CustomStringConvertible {
    public let description: String

    static func newerSchema(store: String, found: Int64, known: Int64) -> JobStoreError {
        JobStoreError(
            description:
                "the job store \(store) has schema version \(found), written by a newer mprobe; this one knows versions up to \(known): run the newer mprobe, or give another store"
        )
    }
}
