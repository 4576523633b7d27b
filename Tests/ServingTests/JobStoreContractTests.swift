import Caching
import Foundation
import Synchronization
import TestSupport
import XCTest

@testable import Serving

/// The `JobStore` contract, case by case, against both stores: SQLite in a fresh cache, and a
/// real PostgreSQL (started once for the class, a new database per case).
final class JobStoreContractTests: XCTestCase {
    /// One PostgreSQL for every case of the class; nil with the reason when it could not start,
    /// which fails each case that needs it.
    nonisolated(unsafe) static var postgres: Result<PostgresServer, Error>?
    static let postgresLock = NSLock()

    static func sharedPostgres() throws -> PostgresServer {
        try postgresLock.withLock {
            if postgres == nil { postgres = Result { try PostgresServer() } }
            return try postgres!.get()
        }
    }

    override class func tearDown() {
        postgresLock.withLock {
            if case .success(let server)? = postgres { server.stop() }
            postgres = nil
        }
        super.tearDown()
    }

    /// Each kind of store, fresh and empty, with what keeps it alive.
    private func eachStore(_ body: (String, JobStore) throws -> Void) throws {
        let dir = try TempDirectory(prefix: "mprobe-jobstore")
        let cache = try ByteCache(directory: dir.file("cache"))
        let sqlite = try SQLiteJobStore(cache: cache)
        try body("sqlite", sqlite)
        sqlite.close()
        let postgres = try PostgresJobStore(url: try Self.sharedPostgres().newDatabase(), connections: 4)
        defer { postgres.close() }
        try body("postgres", postgres)
    }

    private func record(_ n: Int, id: String? = nil) -> JobRecord {
        var progress = JobProgress()
        progress.items = 1
        return JobRecord(
            id: id ?? "job-\(n)", type: .prefetch, spec: #"{"urls": ["http://127.0.0.1/\#(n)"]}"#, state: .queued,
            progress: progress, result: nil, errorCode: nil, errorMessage: nil,
            created: Date(timeIntervalSince1970: 1_700_000_000 + Double(n)), started: nil, finished: nil)
    }

    private static func lease(seconds: Double = 30, attempts: Int = 3) -> JobLease {
        JobLease(holder: JobLease.newHolder(), seconds: seconds, maxAttempts: attempts)
    }

    func testJobsAreKeptListedAndClaimedOldestFirst() throws {
        try eachStore { kind, store in
            let inserted = try (1...5).map { try store.insert(record($0)) }
            XCTAssertEqual(inserted.map(\.seq), inserted.map(\.seq).sorted(), kind)
            XCTAssertTrue(inserted.allSatisfy { $0.seq > 0 }, "\(kind): as stored, with its place")
            XCTAssertEqual(try store.count(state: .queued), 5, kind)
            let listed = try store.jobs(state: nil, before: nil, limit: 3)
            XCTAssertEqual(listed.map(\.id), ["job-5", "job-4", "job-3"], kind)
            XCTAssertEqual(
                try store.jobs(state: nil, before: listed[2].seq, limit: 10).map(\.id), ["job-2", "job-1"], kind)
            let shown = try XCTUnwrap(store.job(id: "job-3"), kind)
            XCTAssertEqual(shown.spec, record(3).spec, kind)
            XCTAssertEqual(shown.created, inserted[2].created, "\(kind): insert returns the job as stored")
            XCTAssertEqual(shown.seq, inserted[2].seq, kind)
            if kind == "sqlite" {
                XCTAssertEqual(shown.created, record(3).created, kind)
            } else {
                XCTAssertLessThan(abs(shown.created.timeIntervalSinceNow), 60, "PostgreSQL's clock, not the node's")
            }
            XCTAssertNil(try store.job(id: "nope"), kind)

            let first = try XCTUnwrap(store.claimNext(lease: Self.lease()), kind)
            XCTAssertEqual(first.id, "job-1", kind)
            XCTAssertEqual(first.state, .running, kind)
            XCTAssertEqual(first.attempts, 1, kind)
            XCTAssertEqual(try store.job(id: "job-1")?.state, .running, kind)
            XCTAssertEqual(try store.claimNext(lease: Self.lease())?.id, "job-2", kind)
            XCTAssertEqual(try store.count(state: .running), 2, kind)
        }
    }

    func testWorkersClaimingAtOnceNeverTakeOneJobTwice() throws {
        try eachStore { kind, store in
            for n in 1...60 { try store.insert(record(n)) }
            let taken = Mutex<[String]>([])
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                while true {
                    do {
                        guard let job = try store.claimNext(lease: Self.lease()) else { return }
                        taken.withLock { $0.append(job.id) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                        return
                    }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, [], kind)
            let ids = taken.withLock { $0 }
            XCTAssertEqual(ids.count, 60, kind)
            XCTAssertEqual(Set(ids).count, 60, "\(kind): a job was claimed twice")
        }
    }

    func testOnlyTheHolderOfTheLeaseRecordsAnything() throws {
        try eachStore { kind, store in
            try store.insert(record(1))
            let held = Self.lease()
            _ = try XCTUnwrap(store.claimNext(lease: held), kind)
            let other = Self.lease()
            XCTAssertEqual(try store.renew(id: "job-1", lease: held), .held, kind)
            XCTAssertEqual(try store.renew(id: "job-1", lease: other), .lost, kind)
            var progress = JobProgress()
            progress.bytes = 7
            try store.saveProgress(id: "job-1", lease: other, progress)
            XCTAssertEqual(try store.job(id: "job-1")?.progress.bytes, 0, kind)
            try store.saveProgress(id: "job-1", lease: held, progress)
            XCTAssertEqual(try store.job(id: "job-1")?.progress.bytes, 7, kind)
            XCTAssertFalse(
                try store.finish(
                    id: "job-1", lease: other, state: .done, result: "{}", errorCode: nil, errorMessage: nil),
                kind)
            XCTAssertEqual(try store.job(id: "job-1")?.state, .running, kind)
            XCTAssertTrue(
                try store.finish(
                    id: "job-1", lease: held, state: .done, result: #"{"items": []}"#, errorCode: nil, errorMessage: nil
                ),
                kind)
            let done = try XCTUnwrap(store.job(id: "job-1"), kind)
            XCTAssertEqual(done.state, .done, kind)
            XCTAssertEqual(done.result, #"{"items": []}"#, kind)
            XCTAssertNotNil(done.finished, kind)
            XCTAssertEqual(
                try store.renew(id: "job-1", lease: held), .lost, "\(kind): a finished job is held by no one")
        }
    }

    func testAnExpiredLeaseRunsTheJobAgainUntilItsAttemptsAreSpent() throws {
        try eachStore { kind, store in
            try store.insert(record(1))
            let short = Self.lease(seconds: 0.3, attempts: 2)
            let first = try XCTUnwrap(store.claimNext(lease: short), kind)
            XCTAssertEqual(first.attempts, 1, kind)
            XCTAssertNil(try store.claimNext(lease: short), "\(kind): a held job is not claimed again")
            // The worker died: once its lease ends, another takes the job.
            let second = Self.lease(seconds: 0.3, attempts: 2)
            var again: JobRecord?
            XCTAssertTrue(
                waitUntil(seconds: 10) {
                    again = try? store.claimNext(lease: second); return again != nil
                }, kind)
            XCTAssertEqual(again?.id, "job-1", kind)
            XCTAssertEqual(again?.attempts, 2, kind)
            XCTAssertFalse(
                try store.finish(
                    id: "job-1", lease: short, state: .done, result: "{}", errorCode: nil, errorMessage: nil),
                "\(kind): the first worker's late result is not recorded")
            // The second dies too: with its attempts spent, the job fails, saying why.
            XCTAssertTrue(
                waitUntil(seconds: 10) {
                    _ = try? store.claimNext(lease: Self.lease(seconds: 0.3, attempts: 2))
                    return (try? store.job(id: "job-1"))??.state == .failed
                }, kind)
            let failed = try XCTUnwrap(store.job(id: "job-1"), kind)
            XCTAssertEqual(failed.errorCode, "attempts_exhausted", kind)
            XCTAssertEqual(failed.errorMessage, JobStoreText.exhausted(2), kind)
            XCTAssertNotNil(failed.finished, kind)
        }
    }

    func testAJobPutBackByAStoppingServiceKeepsItsAttempt() throws {
        try eachStore { kind, store in
            try store.insert(record(1))
            let held = Self.lease(attempts: 1)
            _ = try XCTUnwrap(store.claimNext(lease: held), kind)
            XCTAssertTrue(
                try store.finish(
                    id: "job-1", lease: held, state: .queued, result: nil, errorCode: nil, errorMessage: nil),
                kind)
            let queued = try XCTUnwrap(store.job(id: "job-1"), kind)
            XCTAssertEqual(queued.state, .queued, kind)
            XCTAssertEqual(queued.attempts, 0, kind)
            XCTAssertNil(queued.started, kind)
            XCTAssertEqual(try store.claimNext(lease: Self.lease(attempts: 1))?.attempts, 1, kind)
        }
    }

    func testCancellingAQueuedARunningAndAFinishedJob() throws {
        try eachStore { kind, store in
            for n in 1...3 { try store.insert(record(n)) }
            let held = Self.lease(seconds: 0.3)
            _ = try XCTUnwrap(store.claimNext(lease: held), kind)  // job-1 runs
            XCTAssertEqual(try store.cancel(id: "job-2"), .cancelled, kind)
            let cancelled = try XCTUnwrap(store.job(id: "job-2"), kind)
            XCTAssertEqual(cancelled.state, .cancelled, kind)
            XCTAssertEqual(cancelled.errorCode, "cancelled", kind)
            XCTAssertEqual(try store.cancel(id: "job-1"), .requested, kind)
            XCTAssertEqual(try store.job(id: "job-1")?.state, .running, "\(kind): its worker records the end")
            XCTAssertEqual(try store.renew(id: "job-1", lease: held), .cancelRequested, kind)
            XCTAssertEqual(try store.cancel(id: "job-2"), .finished(.cancelled), kind)
            XCTAssertEqual(try store.cancel(id: "nope"), .notFound, kind)
            // Its worker died before it saw the ask: when the lease ends the job is cancelled, not run again.
            XCTAssertTrue(
                waitUntil(seconds: 10) {
                    _ = try? store.claimNext(lease: Self.lease())
                    return (try? store.job(id: "job-1"))??.state == .cancelled
                }, kind)
            XCTAssertEqual(try store.job(id: "job-3")?.state, .running, "\(kind): the next queued job was claimed")
        }
    }

    func testJobsOfAProcessThatIsGoneAreReleasedAtOnce() throws {
        try eachStore { kind, store in
            try store.insert(record(1))
            try store.insert(record(2))
            // A pid that was this machine's and is gone: a child that has exited and been reaped.
            let child = try runProcess("/bin/sh", ["-c", "echo $$"])
            let deadPid = child.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
            let parts = JobLease.process.split(separator: "|", omittingEmptySubsequences: false)
            let deadHolder = "\(parts[0])|\(parts[1])|\(deadPid)|dead0000"
            let dead = JobLease(holder: deadHolder, seconds: 3600, maxAttempts: 3)
            let alive = Self.lease(seconds: 3600)
            _ = try XCTUnwrap(store.claimNext(lease: dead), kind)
            _ = try XCTUnwrap(store.claimNext(lease: alive), kind)
            XCTAssertEqual(try store.releaseAbandoned(), 1, kind)
            let again = try XCTUnwrap(
                store.claimNext(lease: Self.lease()), "\(kind): the dead process's job runs again")
            XCTAssertEqual(again.id, "job-1", kind)
            XCTAssertEqual(again.attempts, 2, kind)
            XCTAssertEqual(try store.renew(id: "job-2", lease: alive), .held, "\(kind): a live process keeps its job")
        }
    }

    func testFinishedJobsBeyondTheLimitsAreRemoved() throws {
        try eachStore { kind, store in
            for n in 1...4 {
                try store.insert(record(n))
                let held = Self.lease()
                _ = try XCTUnwrap(store.claimNext(lease: held), kind)
                try store.finish(
                    id: "job-\(n)", lease: held, state: .done, result: "{}", errorCode: nil, errorMessage: nil)
            }
            try store.insert(record(5))
            XCTAssertEqual(
                try store.removeFinished(keepingNewest: 10, finishedLongerAgoThan: 3600), [], "\(kind): all are recent")
            let removed = try store.removeFinished(keepingNewest: 2, finishedLongerAgoThan: 3600)
            XCTAssertEqual(removed.sorted(), ["job-1", "job-2"], kind)
            XCTAssertEqual(
                try store.jobs(state: nil, before: nil, limit: 10).map(\.id), ["job-5", "job-4", "job-3"], kind)
            // By age, on the store's clock: every finished job is older than no time at all.
            XCTAssertEqual(
                try store.removeFinished(keepingNewest: 10, finishedLongerAgoThan: 0).sorted(), ["job-3", "job-4"], kind
            )
        }
    }

    // MARK: Nodes and files (PostgreSQL)

    func testAJobBoundToALiveNodeWaitsForItAndGoesElsewhereWhenItIsGone() throws {
        let server = try Self.sharedPostgres()
        let url = try server.newDatabase()
        let database = String(url.split(separator: "/").last!)
        let store = try PostgresJobStore(url: url, connections: 2)
        defer { store.close() }
        let other = "otherhost|boot|1234|"
        try server.sql("INSERT INTO mprobe_nodes(name, seen) VALUES ('\(other)', now())", database: database)
        var bound = record(1)
        bound.node = other
        try store.insert(bound)
        var mine = record(2)
        mine.node = JobLease.process
        try store.insert(mine)
        var gone = record(3)
        gone.node = "gonehost|boot|1|"
        try store.insert(gone)
        try store.heartbeat(seconds: 30)
        XCTAssertEqual(try store.claimNext(lease: Self.lease())?.id, "job-2", "bound to this node")
        XCTAssertEqual(
            try store.claimNext(lease: Self.lease())?.id, "job-3", "bound to a node that never said it lives")
        XCTAssertNil(try store.claimNext(lease: Self.lease()), "bound to a live node: it runs it")
        try server.sql(
            "UPDATE mprobe_nodes SET seen = now() - interval '1 minute' WHERE name = '\(other)'", database: database)
        XCTAssertEqual(try store.claimNext(lease: Self.lease())?.id, "job-1", "its node went silent: anyone runs it")
    }

    func testFilesAreStoredWholeByTheLeaseHolderAndGoWithTheirJob() throws {
        let store = try PostgresJobStore(url: try Self.sharedPostgres().newDatabase(), connections: 2)
        defer { store.close() }
        try store.insert(record(1))
        let held = Self.lease()
        _ = try XCTUnwrap(store.claimNext(lease: held))
        let sprite = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        XCTAssertFalse(try store.putFiles(id: "job-1", lease: Self.lease(), item: "1", [("sprite.jpg", sprite)]))
        XCTAssertNil(try store.file(id: "job-1", item: "1", name: "sprite.jpg"))
        XCTAssertTrue(
            try store.putFiles(
                id: "job-1", lease: held, item: "1", [("sprite.jpg", sprite), ("manifest.json", [0x7B, 0x7D])]))
        XCTAssertEqual(try store.file(id: "job-1", item: "1", name: "sprite.jpg"), sprite)
        XCTAssertEqual(try store.file(id: "job-1", item: "1", name: "manifest.json"), [0x7B, 0x7D])
        // A run again replaces the item's files, none left of the run before.
        XCTAssertTrue(try store.putFiles(id: "job-1", lease: held, item: "1", [("manifest.json", [0x5B, 0x5D])]))
        XCTAssertNil(try store.file(id: "job-1", item: "1", name: "sprite.jpg"))
        try store.finish(id: "job-1", lease: held, state: .done, result: "{}", errorCode: nil, errorMessage: nil)
        XCTAssertEqual(try store.removeFinished(keepingNewest: 0, finishedLongerAgoThan: 3600), ["job-1"])
        XCTAssertNil(try store.file(id: "job-1", item: "1", name: "manifest.json"))
    }

    // MARK: Schema

    func testASchemaNewerThanTheBinaryIsRefusedClearly() throws {
        let dir = try TempDirectory(prefix: "mprobe-jobstore")
        let cache = try ByteCache(directory: dir.file("cache"))
        _ = try SQLiteJobStore(cache: cache)
        let sqlite = try runProcess("sqlite3", [dir.file("cache/jobs.sqlite"), "PRAGMA user_version = 99"])
        XCTAssertEqual(sqlite.status, 0, sqlite.stderr)
        XCTAssertThrowsError(try SQLiteJobStore(cache: cache)) { error in
            XCTAssertTrue("\(error)".contains("schema version 99, written by a newer mprobe"), "\(error)")
        }

        let server = try Self.sharedPostgres()
        let url = try server.newDatabase()
        try PostgresJobStore(url: url, connections: 2).close()
        try server.sql("UPDATE mprobe_schema SET version = 99", database: String(url.split(separator: "/").last!))
        XCTAssertThrowsError(try PostgresJobStore(url: url, connections: 2)) { error in
            XCTAssertTrue("\(error)".contains("schema version 99, written by a newer mprobe"), "\(error)")
        }
    }

    func testNodesStartingTogetherCreateTheSchemaOnce() throws {
        let url = try Self.sharedPostgres().newDatabase()
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do { try PostgresJobStore(url: url, connections: 2).close() } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
    }

    func testAMissingPostgresIsAClearError() throws {
        let port = try LoopbackSocket.listen(port: 0, backlog: 1)
        close(port.fd)  // a port no one listens on
        XCTAssertThrowsError(
            try PostgresJobStore(url: "postgres://mprobe:secret@127.0.0.1:\(port.port)/x", connections: 2)
        ) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("cannot connect to PostgreSQL"), text)
            XCTAssertFalse(text.contains("secret"), text)
        }
    }

    // MARK: Notices between processes (PostgreSQL)

    func testANewJobAndACancelReachAnotherNodeAtOnce() throws {
        let url = try Self.sharedPostgres().newDatabase()
        let nodeA = try PostgresJobStore(url: url, connections: 2)
        let nodeB = try PostgresJobStore(url: url, connections: 2)
        defer {
            nodeA.close()
            nodeB.close()
        }
        let events = Mutex<[JobEvent]>([])
        nodeB.watch { event in events.withLock { $0.append(event) } }
        // The listener says it is connected with a first `.queued` (look now: notices may have been missed).
        XCTAssertTrue(waitUntil(seconds: 10) { events.withLock { $0.contains(.queued) } })
        events.withLock { $0.removeAll() }
        try nodeA.insert(record(1))
        XCTAssertTrue(waitUntil(seconds: 5) { events.withLock { $0 == [.queued] } }, "\(events.withLock { $0 })")
        _ = try XCTUnwrap(nodeB.claimNext(lease: Self.lease()))
        XCTAssertEqual(try nodeA.cancel(id: "job-1"), .requested)
        XCTAssertTrue(waitUntil(seconds: 5) { events.withLock { $0.contains(.cancel(id: "job-1")) } })
    }

    func testAPostgresRestartCostsAReconnectNotAnError() throws {
        let server = try Self.sharedPostgres()
        let store = try PostgresJobStore(url: try server.newDatabase(), connections: 2)
        defer { store.close() }
        let events = Mutex<Int>(0)
        store.watch { if $0 == .queued { events.withLock { $0 += 1 } } }
        XCTAssertTrue(waitUntil(seconds: 10) { events.withLock { $0 } >= 1 })
        try store.insert(record(1))
        try server.restart()
        // Pooled connections were cut: the next statements run on new ones.
        try store.insert(record(2))
        XCTAssertEqual(try store.count(state: .queued), 2)
        XCTAssertEqual(try store.claimNext(lease: Self.lease())?.id, "job-1")
        // The listener reconnects and says so (a `.queued`: look, notices may have been missed).
        XCTAssertTrue(waitUntil(seconds: 15) { events.withLock { $0 } >= 3 })
    }
}
