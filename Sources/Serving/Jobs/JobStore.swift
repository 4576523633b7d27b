import Foundation

/// Where jobs live, so that a restart loses none: SQLite beside the cache for one machine
/// (`SQLiteJobStore`), PostgreSQL for any number of `serve` processes on any number of machines
/// (`PostgresJobStore`).
///
/// A running job is held under a lease: the worker that claimed it renews it while it runs; a
/// job whose lease ran out (its process died, or lost the store) goes back to the queue and runs
/// again, at most `JobLease.maxAttempts` times in all. Writes about a running job name the lease
/// they hold, and one that no longer holds it changes nothing: a job that ran twice keeps the
/// result of the run that held its lease when it ended.
public protocol JobStore: Sendable {
    /// Stores a queued job. A job with `node` set is run by that node's workers while the node
    /// is alive (`heartbeat`), by any node's once it is not. A shared store stamps its times
    /// (created, started, finished) with its own clock, so that the nodes' clocks need not agree.
    /// Returns the job as stored (its place in the order, its creation time).
    @discardableResult
    func insert(_ job: JobRecord) throws -> JobRecord
    func job(id: String) throws -> JobRecord?
    /// Newest first, at most `limit`, only those older than the job numbered `before` when given
    /// (a page after a page); `state` nil for all.
    func jobs(state: JobState?, before: Int64?, limit: Int) throws -> [JobRecord]
    func count(state: JobState) throws -> Int
    /// The oldest queued job this process may run (unbound, bound to it, or bound to a node that
    /// is gone), marked running under `lease` in the same step, or nil. Jobs whose
    /// lease ran out are first put back in the queue, or failed (`attempts_exhausted`) when they
    /// have run `lease.maxAttempts` times, or cancelled when a cancel was asked for.
    func claimNext(lease: JobLease) throws -> JobRecord?
    /// Extends the lease of a job still held by `lease`, saying whether a cancel was asked for.
    func renew(id: String, lease: JobLease) throws -> LeaseState
    func saveProgress(id: String, lease: JobLease, _ progress: JobProgress) throws
    /// A running job ended: `done` with a result, `failed` with an error, `cancelled`, or back to
    /// `queued` to run again (the service is stopping). False, and nothing changed, when `lease`
    /// no longer holds the job.
    @discardableResult
    func finish(
        id: String, lease: JobLease, state: JobState, result: String?, errorCode: String?, errorMessage: String?
    )
        throws -> Bool
    /// Cancels a queued job at once; asks the worker of a running one to stop (it sees the ask
    /// when it renews its lease, or sooner through `watch`).
    func cancel(id: String) throws -> CancelOutcome
    /// Jobs held by processes of this machine that are gone are put back in the queue without
    /// waiting for their leases to run out; returns how many.
    func releaseAbandoned() throws -> Int
    /// Removes finished jobs beyond the newest `count` and those finished more than `age`
    /// seconds ago, by the store's clock; returns their ids (their files go too).
    func removeFinished(keepingNewest count: Int, finishedLongerAgoThan age: Double) throws -> [String]
    /// Tells `handler` of what other processes do: a job queued, a cancel asked for. Stores that
    /// cannot tell (SQLite) call nothing; workers look every `JobLease.pollSeconds` besides.
    func watch(_ handler: @escaping @Sendable (JobEvent) -> Void)
    /// Says this process (`JobLease.process`) is alive, for jobs bound to it; nodes silent for
    /// `seconds` are taken as gone. Stores of one machine need none.
    func heartbeat(seconds: Double) throws
    /// Whether job files are kept here (readable through every node) rather than only in the
    /// node's own folder.
    var keepsFiles: Bool { get }
    /// Stores the files of one item of a running job, replacing that item's files, all at once:
    /// readers see every file or none. False, and nothing stored, when `lease` no longer holds it.
    func putFiles(id: String, lease: JobLease, item: String, _ files: [(name: String, bytes: [UInt8])]) throws -> Bool
    /// A stored file of a job (`item/name`), or nil.
    func file(id: String, item: String, name: String) throws -> [UInt8]?
    /// Stops watching, says this node is leaving (its bound jobs may run elsewhere at once) and
    /// closes connections.
    func close()
}

/// What a worker holds a running job under.
public struct JobLease: Sendable, Equatable {
    /// Unique for each claim: the process (host, boot, pid) and a random part.
    public var holder: String
    /// How long the job stays held without a renewal.
    public var seconds: Double
    /// Runs of one job at most, counting the first: a job whose worker keeps dying is failed.
    public var maxAttempts: Int

    public init(holder: String, seconds: Double, maxAttempts: Int) {
        self.holder = holder
        self.seconds = seconds
        self.maxAttempts = maxAttempts
    }

    /// This process: host name, boot id and pid, which `releaseAbandoned` reads back.
    public static let process: String = {
        let boot =
            (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        return "\(ProcessInfo.processInfo.hostName)|\(boot)|\(getpid())"
    }()

    /// A new holder for one claim by this process.
    public static func newHolder() -> String {
        process + "|" + UUID().uuidString.lowercased().prefix(8)
    }

    /// The pid of a holder made by a process of this machine since it booted, or nil.
    static func localPid(of holder: String) -> pid_t? {
        let parts = holder.split(separator: "|", omittingEmptySubsequences: false)
        let own = process.split(separator: "|", omittingEmptySubsequences: false)
        guard parts.count == 4, own.count == 3, parts[0] == own[0], parts[1] == own[1] else { return nil }
        return pid_t(parts[2])
    }

    /// The holder's process is known to be gone (not merely unreachable).
    static func holderIsGone(_ holder: String) -> Bool {
        guard let pid = localPid(of: holder), pid > 0 else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }
}

public enum LeaseState: Sendable, Equatable {
    case held
    /// Still held, and a cancel was asked for.
    case cancelRequested
    /// Another worker holds it now, or it ended: this worker must stop and record nothing.
    case lost
}

public enum CancelOutcome: Sendable, Equatable {
    /// It was queued, and is cancelled.
    case cancelled
    /// It is running; its worker was asked to stop.
    case requested
    /// It had already ended in this state.
    case finished(JobState)
    case notFound
}

public enum JobEvent: Sendable, Equatable {
    case queued
    case cancel(id: String)
}

/// The message of a job failed for running too often.
enum JobStoreText {
    static func exhausted(_ attempts: Int) -> String {
        "the job was started \(attempts) times and its worker was lost each time (a process died, or lost the job store)"
    }
}
