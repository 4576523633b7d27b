import Foundation
import Synchronization

/// Jobs in PostgreSQL, shared by every `serve` process that names the same database
/// (`--jobs postgres://...`). Workers claim with `FOR UPDATE SKIP LOCKED`, so no two take one
/// job; leases are timed by the database's clock, so the nodes' clocks need not agree; a new job
/// and a cancel are announced with `NOTIFY`, so an idle worker on any node wakes at once.
public final class PostgresJobStore: JobStore {
    private let pool: PostgresPool
    private let listener: Mutex<JobListener?>
    /// The schema this build writes (`mprobe_schema.version`).
    static let schemaVersion = 1
    static let queuedChannel = "mprobe_job_queued"
    static let cancelChannel = "mprobe_job_cancel"

    /// Connects, and creates or migrates the schema (nodes starting together take turns, under an
    /// advisory lock). A schema newer than this build knows is refused.
    public init(url: String, connections: Int) throws {
        pool = PostgresPool(url: url, size: max(2, connections))
        listener = Mutex(nil)
        try pool.with { try PostgresJobStore.migrate($0) }
    }

    /// The job store's name in messages: the URL without its password.
    /// The URL as shown: its password (`user:PASSWORD@`, `?password=`) hidden. One that cannot be
    /// read as a URL is not shown at all.
    public static func shown(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "postgres://..." }
        if parts.password != nil { parts.password = "***" }
        parts.queryItems = parts.queryItems?.map { item in
            item.name.lowercased().contains("password") ? URLQueryItem(name: item.name, value: "***") : item
        }
        return parts.string ?? "postgres://..."
    }

    /// The passwords a URL holds, as written and decoded: what no message may repeat.
    static func secrets(in url: String) -> [String] {
        guard let parts = URLComponents(string: url) else { return [url] }
        let query = (parts.queryItems ?? []).filter { $0.name.lowercased().contains("password") }.compactMap(\.value)
        return ([parts.percentEncodedPassword, parts.password].compactMap { $0 } + query).filter { !$0.isEmpty }
    }

    private static func migrate(_ db: PostgresConnection) throws {
        try db.execute("BEGIN")
        do {
            // Any constant both sides agree on: the key of mprobe's schema changes.
            try db.execute("SELECT pg_advisory_xact_lock(73011)")
            try db.execute("CREATE TABLE IF NOT EXISTS mprobe_schema(version integer NOT NULL)")
            let found = Int(try db.query("SELECT max(version) FROM mprobe_schema").firstValue ?? "") ?? 0
            guard found <= schemaVersion else {
                throw JobStoreError.newerSchema(
                    store: "in PostgreSQL (table mprobe_schema)", found: Int64(found), known: Int64(schemaVersion))
            }
            if found < 1 {
                try db.execute(
                    """
                    CREATE TABLE mprobe_jobs(
                        seq bigserial PRIMARY KEY,
                        id text NOT NULL UNIQUE,
                        type text NOT NULL,
                        spec text NOT NULL,
                        state text NOT NULL,
                        bytes bigint NOT NULL DEFAULT 0,
                        total_bytes bigint NOT NULL DEFAULT 0,
                        items_done integer NOT NULL DEFAULT 0,
                        items integer NOT NULL DEFAULT 0,
                        result text,
                        error_code text,
                        error_message text,
                        created double precision NOT NULL,
                        started double precision,
                        finished double precision,
                        attempts integer NOT NULL DEFAULT 0,
                        holder text,
                        lease_until timestamptz,
                        cancel_requested boolean NOT NULL DEFAULT false,
                        bound_node text);
                    CREATE INDEX mprobe_jobs_by_state ON mprobe_jobs(state, seq);
                    CREATE INDEX mprobe_jobs_leases ON mprobe_jobs(lease_until) WHERE state = 'running';
                    CREATE TABLE mprobe_nodes(name text PRIMARY KEY, seen timestamptz NOT NULL);
                    CREATE TABLE mprobe_job_files(
                        job_id text NOT NULL REFERENCES mprobe_jobs(id) ON DELETE CASCADE,
                        item text NOT NULL,
                        name text NOT NULL,
                        bytes bytea NOT NULL,
                        PRIMARY KEY (job_id, item, name));
                    DELETE FROM mprobe_schema;
                    INSERT INTO mprobe_schema(version) VALUES (1);
                    """)
            }
            try db.execute("COMMIT")
        } catch {
            _ = try? db.execute("ROLLBACK")
            throw error
        }
    }

    private static let columns =
        "id, type, spec, state, bytes, total_bytes, items_done, items, result, error_code, "
        + "error_message, created, started, finished, seq, attempts"

    private static func record(_ row: [String?]) -> JobRecord? {
        guard row.count == 16, let id = row[0], let type = row[1].flatMap(JobType.init), let spec = row[2],
            let state = row[3].flatMap(JobState.init)
        else { return nil }
        func int(_ i: Int) -> Int64 { row[i].flatMap { Int64($0) } ?? 0 }
        func date(_ i: Int) -> Date? { row[i].flatMap(Double.init).map { Date(timeIntervalSince1970: $0) } }
        var progress = JobProgress()
        progress.bytes = int(4)
        progress.totalBytes = int(5)
        progress.itemsDone = Int(int(6))
        progress.items = Int(int(7))
        return JobRecord(
            id: id, type: type, spec: spec, state: state, progress: progress, result: row[8], errorCode: row[9],
            errorMessage: row[10], created: date(11) ?? Date(timeIntervalSince1970: 0), started: date(12),
            finished: date(13), seq: int(14), attempts: Int(int(15)))
    }

    /// Times are the database's (`now()`, the transaction's start), as seconds since 1970: the
    /// nodes' clocks need not agree, for leases, retention or what a job shows.
    private static let now = "extract(epoch from now())"

    public func insert(_ job: JobRecord) throws -> JobRecord {
        try pool.with { db in
            // The notice goes out when the statement commits: a worker woken by it finds the job.
            let row = try db.query(
                """
                WITH added AS (
                    INSERT INTO mprobe_jobs(id, type, spec, state, items, created, bound_node)
                    VALUES ($1, $2, $3, $4, $5, \(PostgresJobStore.now), $6) RETURNING seq, created)
                SELECT seq, created, pg_notify('\(PostgresJobStore.queuedChannel)', '') FROM added
                """,
                [
                    job.id, job.type.rawValue, job.spec, job.state.rawValue, String(job.progress.items), job.node,
                ]
            ).first
            var stored = job
            if let seq = row?[0].flatMap({ Int64($0) }) { stored.seq = seq }
            if let created = row?[1].flatMap(Double.init) { stored.created = Date(timeIntervalSince1970: created) }
            return stored
        }
    }

    public func job(id: String) throws -> JobRecord? {
        try pool.with { db in
            try db.query("SELECT \(PostgresJobStore.columns) FROM mprobe_jobs WHERE id = $1", [id]).first
                .flatMap(PostgresJobStore.record)
        }
    }

    public func jobs(state: JobState?, before: Int64?, limit: Int) throws -> [JobRecord] {
        try pool.with { db in
            try db.query(
                """
                SELECT \(PostgresJobStore.columns) FROM mprobe_jobs
                WHERE seq < $1 AND ($2::text IS NULL OR state = $2) ORDER BY seq DESC LIMIT $3
                """, [String(before ?? Int64.max), state?.rawValue, String(limit)]
            ).compactMap(PostgresJobStore.record)
        }
    }

    public func count(state: JobState) throws -> Int {
        try pool.with { db in
            Int(try db.query("SELECT count(*) FROM mprobe_jobs WHERE state = $1", [state.rawValue]).firstValue ?? "")
                ?? 0
        }
    }

    public func claimNext(lease: JobLease) throws -> JobRecord? {
        try pool.with { db in
            try PostgresJobStore.settleExpired(db, maxAttempts: lease.maxAttempts)
            // SKIP LOCKED: workers claiming at once each take a different job, none waits.
            return try db.query(
                """
                WITH next AS (
                    SELECT seq FROM mprobe_jobs j WHERE state = 'queued' AND (bound_node IS NULL OR bound_node = $3
                        OR NOT EXISTS (SELECT 1 FROM mprobe_nodes n
                            WHERE n.name = j.bound_node AND n.seen > now() - make_interval(secs => $2)))
                    ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
                UPDATE mprobe_jobs j SET state = 'running', started = \(PostgresJobStore.now), holder = $1,
                    lease_until = now() + make_interval(secs => $2), attempts = j.attempts + 1
                FROM next WHERE j.seq = next.seq
                RETURNING \(PostgresJobStore.columns.split(separator: ",").map { "j." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", "))
                """, [lease.holder, String(lease.seconds), JobLease.process]
            ).first.flatMap(PostgresJobStore.record)
        }
    }

    /// Running jobs whose lease ran out (by the database's clock): cancelled if asked to be,
    /// failed after `maxAttempts` runs, otherwise queued again, keeping their place.
    private static func settleExpired(_ db: PostgresConnection, maxAttempts: Int) throws {
        try db.query(
            """
            UPDATE mprobe_jobs SET
                state = CASE WHEN cancel_requested THEN 'cancelled'
                    WHEN attempts >= $1 THEN 'failed' ELSE 'queued' END,
                finished = CASE WHEN cancel_requested OR attempts >= $1 THEN \(PostgresJobStore.now) END,
                started = CASE WHEN cancel_requested OR attempts >= $1 THEN started END,
                error_code = CASE WHEN cancel_requested THEN 'cancelled'
                    WHEN attempts >= $1 THEN 'attempts_exhausted' END,
                error_message = CASE WHEN cancel_requested THEN 'the job was cancelled'
                    WHEN attempts >= $1 THEN $2 || attempts || $3 END,
                holder = NULL, lease_until = NULL
            WHERE state = 'running' AND (lease_until IS NULL OR lease_until < now())
            """,
            [String(maxAttempts)] + exhaustedParts)
    }

    /// `JobStoreText.exhausted` around the count, for SQL to put the row's count between.
    private static let exhaustedParts: [String?] = {
        let text = JobStoreText.exhausted(999_999_999)
        let parts = text.components(separatedBy: "999999999")
        return [parts[0], parts.dropFirst().joined()]
    }()

    public func renew(id: String, lease: JobLease) throws -> LeaseState {
        try pool.with { db in
            let rows = try db.query(
                """
                UPDATE mprobe_jobs SET lease_until = now() + make_interval(secs => $3)
                WHERE id = $1 AND holder = $2 AND state = 'running' RETURNING cancel_requested
                """, [id, lease.holder, String(lease.seconds)])
            guard let row = rows.first else { return .lost }
            return row.first == "t" ? .cancelRequested : .held
        }
    }

    public func saveProgress(id: String, lease: JobLease, _ progress: JobProgress) throws {
        try pool.with { db in
            _ = try db.query(
                """
                UPDATE mprobe_jobs SET bytes = $3, total_bytes = $4, items_done = $5, items = $6
                WHERE id = $1 AND holder = $2 AND state = 'running'
                """,
                [
                    id, lease.holder, String(progress.bytes), String(progress.totalBytes), String(progress.itemsDone),
                    String(progress.items),
                ])
        }
    }

    public func finish(
        id: String, lease: JobLease, state: JobState, result: String?, errorCode: String?, errorMessage: String?
    ) throws -> Bool {
        try pool.with { db in
            // Back to the queue (the service stops) is not a run: the attempt is given back, and
            // the notice wakes a worker of another node to take it.
            let rows = try db.query(
                """
                WITH ended AS (
                    UPDATE mprobe_jobs SET state = $3, result = $4, error_code = $5, error_message = $6,
                        finished = CASE WHEN $3 IN ('done', 'failed', 'cancelled') THEN \(PostgresJobStore.now) END,
                        holder = NULL, lease_until = NULL,
                        started = CASE WHEN $3 = 'queued' THEN NULL ELSE started END,
                        attempts = CASE WHEN $3 = 'queued' THEN attempts - 1 ELSE attempts END
                    WHERE id = $1 AND holder = $2 AND state = 'running' RETURNING state)
                SELECT CASE WHEN state = 'queued' THEN pg_notify('\(PostgresJobStore.queuedChannel)', '') END FROM ended
                """, [id, lease.holder, state.rawValue, result, errorCode, errorMessage])
            return !rows.isEmpty
        }
    }

    public func cancel(id: String) throws -> CancelOutcome {
        try pool.with { db in
            // One statement: a queued job is cancelled, a running one is asked (and its node told).
            let rows = try db.query(
                """
                WITH found AS (SELECT state FROM mprobe_jobs WHERE id = $1 FOR UPDATE),
                changed AS (
                    UPDATE mprobe_jobs SET
                        state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
                        finished = CASE WHEN state = 'queued' THEN \(PostgresJobStore.now) ELSE finished END,
                        error_code = CASE WHEN state = 'queued' THEN 'cancelled' ELSE error_code END,
                        error_message = CASE WHEN state = 'queued' THEN 'the job was cancelled' ELSE error_message END,
                        cancel_requested = cancel_requested OR state = 'running'
                    WHERE id = $1 AND state IN ('queued', 'running') RETURNING 1)
                SELECT found.state, CASE WHEN found.state = 'running'
                    THEN pg_notify('\(PostgresJobStore.cancelChannel)', $1) END
                FROM found
                """, [id])
            guard let state = rows.firstValue.flatMap({ JobState(rawValue: $0) }) else { return .notFound }
            switch state {
            case .queued: return .cancelled
            case .running: return .requested
            default: return .finished(state)
            }
        }
    }

    /// Processes of other machines cannot be looked at: their jobs wait for their leases to end.
    public func releaseAbandoned() throws -> Int {
        try pool.with { db in
            let rows = try db.query("SELECT id, holder FROM mprobe_jobs WHERE state = 'running' AND holder IS NOT NULL")
            let gone = rows.compactMap { row -> String? in
                guard let id = row[0], let holder = row[1], JobLease.holderIsGone(holder) else { return nil }
                return id
            }
            for id in gone {
                try db.query("UPDATE mprobe_jobs SET lease_until = now() WHERE id = $1 AND state = 'running'", [id])
            }
            return gone.count
        }
    }

    public func removeFinished(keepingNewest count: Int, finishedLongerAgoThan age: Double) throws -> [String] {
        try pool.with { db in
            try db.query(
                """
                DELETE FROM mprobe_jobs WHERE finished IS NOT NULL AND (finished < \(PostgresJobStore.now) - $1 OR seq NOT IN
                    (SELECT seq FROM mprobe_jobs WHERE finished IS NOT NULL ORDER BY seq DESC LIMIT $2))
                RETURNING id
                """, [String(age), String(count)]
            ).compactMap { $0.first ?? nil }
        }
    }

    public func heartbeat(seconds: Double) throws {
        try pool.with { db in
            _ = try db.query(
                """
                INSERT INTO mprobe_nodes(name, seen) VALUES ($1, now())
                ON CONFLICT (name) DO UPDATE SET seen = now()
                """, [JobLease.process])
            // Nodes gone a day are forgotten: their bound jobs were taken long ago.
            _ = try db.query("DELETE FROM mprobe_nodes WHERE seen < now() - interval '1 day'")
        }
    }

    public var keepsFiles: Bool { true }

    public func putFiles(
        id: String, lease: JobLease, item: String, _ files: [(name: String, bytes: [UInt8])]
    ) throws
        -> Bool
    {
        try pool.with { db in
            try db.execute("BEGIN")
            do {
                // Locks the job's row: the lease cannot change hands before the files are in.
                let held = try db.query(
                    "SELECT 1 FROM mprobe_jobs WHERE id = $1 AND holder = $2 AND state = 'running' FOR UPDATE",
                    [id, lease.holder])
                guard !held.isEmpty else {
                    try db.execute("ROLLBACK")
                    return false
                }
                try db.query("DELETE FROM mprobe_job_files WHERE job_id = $1 AND item = $2", [id, item])
                for file in files {
                    try db.query(
                        "INSERT INTO mprobe_job_files(job_id, item, name, bytes) VALUES ($1, $2, $3, decode($4, 'hex'))",
                        [id, item, file.name, PostgresJobStore.hex(file.bytes)])
                }
                try db.execute("COMMIT")
                return true
            } catch {
                _ = try? db.execute("ROLLBACK")
                throw error
            }
        }
    }

    public func file(id: String, item: String, name: String) throws -> [UInt8]? {
        try pool.with { db in
            try db.query(
                "SELECT encode(bytes, 'hex') FROM mprobe_job_files WHERE job_id = $1 AND item = $2 AND name = $3",
                [id, item, name]
            ).firstValue.flatMap(PostgresJobStore.bytes(hex:))
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8](repeating: 0, count: bytes.count * 2)
        for (i, byte) in bytes.enumerated() {
            text[2 * i] = digits[Int(byte >> 4)]
            text[2 * i + 1] = digits[Int(byte & 15)]
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let text = Array(hex.utf8)
        guard text.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            default: nil
            }
        }
        var bytes = [UInt8](repeating: 0, count: text.count / 2)
        for i in bytes.indices {
            guard let high = value(text[2 * i]), let low = value(text[2 * i + 1]) else { return nil }
            bytes[i] = high << 4 | low
        }
        return bytes
    }

    public func watch(_ handler: @escaping @Sendable (JobEvent) -> Void) {
        let started = JobListener(
            url: pool.url, channels: [PostgresJobStore.queuedChannel, PostgresJobStore.cancelChannel]
        ) { channel, payload in
            handler(channel == PostgresJobStore.cancelChannel ? .cancel(id: payload) : .queued)
        }
        listener.withLock { $0 = started }
    }

    public func close() {
        listener.withLock { $0?.stop() }
        // Jobs bound to this node may run elsewhere at once, not when its heartbeat goes stale.
        _ = try? pool.with { try $0.query("DELETE FROM mprobe_nodes WHERE name = $1", [JobLease.process]) }
        pool.close()
    }
}
