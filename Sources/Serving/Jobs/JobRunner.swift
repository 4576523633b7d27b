import ByteSources
import Foundation
import MediaKit
import RangeFetch
import Reports
import Support
import Synchronization
import URLSupport

/// Runs queued jobs on a bounded pool of worker threads. Jobs share the service's session, so two
/// jobs on one URL share its fetches through the cache, and origin connections stay warm.
///
/// A running job has its own cancellation: `DELETE /v1/jobs/{id}` cancels it (state `cancelled`),
/// on whichever node runs it (the store tells that node, or its next lease renewal does);
/// stopping the service cancels it too but puts it back in the queue, to run again here after a
/// restart or at once on another node. A job whose lease this node lost (the store was out of
/// reach too long) is stopped and records nothing: another worker runs it.
final class JobRunner: Sendable {
    private let store: JobStore
    private let session: MediaSession
    private let guardian: OriginGuard
    private let metrics: Metrics
    /// Where thumbnail jobs write their files: `<filesDirectory>/<job id>/<n>/...`.
    let filesDirectory: String
    private let limits: ServiceLimits
    private let leaseSeconds: Double
    private let maxAttempts: Int

    private struct Running {
        let token: Cancellation
        let lease: JobLease
        /// The lease was lost: the job stops and records nothing.
        var lost = false
    }

    private struct State {
        var running: [String: Running] = [:]
        /// Jobs asked to cancel that run nowhere here yet: a worker may have just claimed one
        /// and not yet registered it, and cancels it as it does. Kept a minute at most (the job
        /// may run on another node), when renewals have long told any worker.
        var cancelledEarly: [String: Date] = [:]
        /// Requests whose URLs hold secrets the store does not keep, by job id, until they ran.
        var requests: [String: [UInt8]] = [:]
        var stopping = false
        var workers = 0
    }
    private let state = Mutex(State())
    /// Wakes idle workers when a job is queued or the runner stops.
    private let queue = QueueSignal()
    /// Wakes the lease renewer when the runner stops.
    private let renewals = QueueSignal()

    init(
        store: JobStore, session: MediaSession, guardian: OriginGuard, metrics: Metrics, filesDirectory: String,
        limits: ServiceLimits, leaseSeconds: Double, maxAttempts: Int
    ) {
        self.store = store
        self.leaseSeconds = leaseSeconds
        self.maxAttempts = maxAttempts
        self.limits = limits
        self.session = session
        self.guardian = guardian
        self.metrics = metrics
        self.filesDirectory = filesDirectory
    }

    /// Jobs that processes of this machine left running when they died are released (others'
    /// wait for their leases to end), the store's notices are followed, then `count` workers
    /// and the lease renewer start.
    func start(workers count: Int) throws {
        try? store.heartbeat(seconds: leaseSeconds)
        _ = try store.releaseAbandoned()
        removeOldJobs()
        JobFiles.removeTemporaries(root: filesDirectory)
        store.watch { [weak self] event in
            switch event {
            case .queued: self?.jobQueued()
            case .cancel(let id): self?.cancelRunning(id: id)
            }
        }
        state.withLock { $0.workers += 1 }
        let renewer = Thread { [self] in renewLeases() }
        renewer.name = "mprobe.job.leases"
        renewer.start()
        for n in 0..<max(1, count) {
            state.withLock { $0.workers += 1 }
            let thread = Thread { [self] in work() }
            thread.name = "mprobe.job.\(n)"
            thread.start()
        }
    }

    /// Keeps the real request of a job whose stored copy has its URLs' secrets hidden.
    func remember(_ id: String, request: [UInt8]) {
        state.withLock { $0.requests[id] = request }
    }

    /// Wakes a worker for a newly queued job.
    func jobQueued() { queue.post() }

    /// Cancels a running job, or one a worker has just claimed and is about to run.
    func cancelRunning(id: String) {
        state.withLock { s in
            if let running = s.running[id] {
                running.token.cancel()
                return
            }
            let now = Date()
            s.cancelledEarly = s.cancelledEarly.filter { now.timeIntervalSince($0.value) < 60 }
            s.cancelledEarly[id] = now
        }
    }

    /// Stops taking jobs, cancels the running ones (they go back to the queue) and waits, until
    /// `deadline` at most, for the workers to leave.
    func stop(until deadline: Date) {
        let tokens = state.withLock { s -> [Cancellation] in
            s.stopping = true
            return s.running.values.map(\.token)
        }
        tokens.forEach { $0.cancel() }
        jobQueued()
        renewals.post()
        while state.withLock({ $0.workers }) > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    private func work() {
        defer { state.withLock { $0.workers -= 1 } }
        while !stopping {
            let seen = queue.count
            let claimed: JobRecord?
            let lease = JobLease(holder: JobLease.newHolder(), seconds: leaseSeconds, maxAttempts: maxAttempts)
            do {
                let started = DispatchTime.now().uptimeNanoseconds
                claimed = try store.claimNext(lease: lease)
                metrics.countStoreCall(
                    claimed == nil ? "claim_empty" : "claim",
                    seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
            } catch {
                queue.wait(whileCountIs: seen, atMost: 1)  // the store is busy or failing: look again soon
                continue
            }
            guard let job = claimed else {
                // Notices wake a worker at once; looking every few seconds besides finds the jobs
                // of expired leases, and any job whose notice was lost.
                queue.wait(whileCountIs: seen, atMost: JobRunner.pollSeconds(lease: leaseSeconds))
                continue
            }
            run(job, lease: lease)
        }
    }

    /// `body`, a store call, counted with its time in the metrics under `operation`.
    private func timed<T>(_ operation: String, _ body: () throws -> T) throws -> T {
        let started = DispatchTime.now().uptimeNanoseconds
        defer {
            metrics.countStoreCall(operation, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        }
        return try body()
    }

    /// How often an idle worker looks at the store unasked.
    static func pollSeconds(lease: Double) -> Double { min(5, max(0.1, lease / 2)) }

    /// Renews the lease of every job running here, a few times per lease, until the runner stops
    /// and its workers have left. A cancel asked for elsewhere, or a lease lost, stops the job.
    private func renewLeases() {
        defer { state.withLock { $0.workers -= 1 } }
        while true {
            let seen = renewals.count
            try? store.heartbeat(seconds: leaseSeconds)
            let (held, last) = state.withLock { s in
                (s.running.map { ($0.key, $0.value.lease) }, s.stopping && s.workers == 1)
            }
            if last { return }
            for (id, lease) in held {
                // A store out of reach: the job goes on, and finds at its end whether it still holds it.
                guard let now = try? timed("renew", { try store.renew(id: id, lease: lease) }) else { continue }
                state.withLock { s in
                    guard var running = s.running[id], running.lease == lease else { return }
                    switch now {
                    case .held: return
                    case .cancelRequested: running.token.cancel()
                    case .lost:
                        running.lost = true
                        running.token.cancel()
                    }
                    s.running[id] = running
                }
            }
            renewals.wait(whileCountIs: seen, atMost: stopping ? 0.05 : leaseSeconds / 3)
        }
    }

    private func run(_ job: JobRecord, lease: JobLease) {
        let token = Cancellation()
        state.withLock { s in
            s.running[job.id] = Running(token: token, lease: lease)
            if s.cancelledEarly.removeValue(forKey: job.id) != nil { token.cancel() }
        }
        defer { state.withLock { _ = $0.running.removeValue(forKey: job.id) } }
        // With a shared store this node's folder only stages a job's files: nothing stays.
        defer { if store.keepsFiles { try? FileManager.default.removeItem(atPath: filesDirectory + "/" + job.id) } }
        let started = Date()
        var outcome: (state: JobState, result: String?, code: String?, message: String?)
        do {
            // Kept until the job ends: a run again here (after a lost lease) needs the secrets too.
            let request = state.withLock { $0.requests[job.id] }
            let spec = try JobSpec(body: request ?? Array(job.spec.utf8), limits: ServiceLimits())
            if request == nil, spec.remoteURLs.contains(where: { $0.contains("=***") || $0.contains("***@") }) {
                throw APIError(
                    status: 409, code: "credentials_lost",
                    message:
                        "the service that accepted this job, the only one that kept its signed URLs, restarted or is gone; submit it again"
                )
            }
            let progress = ProgressKeeper(
                id: job.id, lease: lease, store: store, items: spec.urls.count,
                timed: { [self] in try timed("progress", $0) })
            let (result, failures) = try execute(spec, job: job, lease: lease, token: token, progress: progress)
            progress.save()
            if result.text.utf8.count > limits.maxJobResultBytes {
                throw APIError(
                    status: 500, code: "result_too_large",
                    message:
                        "the job's result is \(result.text.utf8.count) bytes, more than the \(limits.maxJobResultBytes) a job may keep"
                )
            }
            if failures.count == spec.urls.count, let first = failures.first {
                outcome = (.failed, result.text, first.code, first.message)
            } else {
                outcome = (.done, result.text, nil, nil)
            }
        } catch {
            let failure = APIError(error, rules: session.fetcher.options.urlRules)
            outcome = (.failed, nil, failure.code, failure.message)
        }
        if token.isCancelled {
            // Another worker holds the job now: it records the outcome.
            if state.withLock({ $0.running[job.id]?.lost ?? false }) { return }
            // Stopping puts the job back in the queue; a DELETE ends it.
            outcome = stopping ? (.queued, nil, nil, nil) : (.cancelled, nil, "cancelled", "the job was cancelled")
        }
        if outcome.state.isFinal {
            metrics.countJob(seconds: Date().timeIntervalSince(started))
            state.withLock { _ = $0.requests.removeValue(forKey: job.id) }
        }
        record(outcome, of: job.id, lease: lease)
        removeOldJobs()
    }

    /// Records a job's end. A store out of reach (PostgreSQL restarting) is tried again for as
    /// long as the lease may still hold — the job stays registered meanwhile, so its lease is
    /// renewed as soon as the store is back — or, when the service stops, for its last seconds.
    private func record(
        _ outcome: (state: JobState, result: String?, code: String?, message: String?), of id: String, lease: JobLease
    ) {
        let deadline = Date().addingTimeInterval(stopping ? min(2, leaseSeconds) : leaseSeconds)
        while true {
            do {
                _ = try timed("finish") {
                    try store.finish(
                        id: id, lease: lease, state: outcome.state, result: outcome.result, errorCode: outcome.code,
                        errorMessage: outcome.message)
                }
                return
            } catch {
                guard Date() < deadline else { return }  // the lease is gone: the job runs again elsewhere
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
    }

    /// Keeps the store and the job files bounded: finished jobs past the retention limits go,
    /// with their files. Failing to remove them costs only space, so errors are not fatal.
    private func removeOldJobs() {
        guard
            let removed = try? store.removeFinished(
                keepingNewest: limits.keptFinishedJobs, finishedLongerAgoThan: limits.keptJobSeconds)
        else { return }
        // Ids are the service's own UUIDs; anything else is never turned into a path.
        for id in removed where !id.isEmpty && id.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
            try? FileManager.default.removeItem(atPath: filesDirectory + "/" + id)
        }
    }

    /// `PUT`s one item's files below the job's `output`, the manifest last: once it is there,
    /// every file it names is. Each address is checked by the origin guard, as fetches are.
    private func deliver(
        _ files: [(name: String, bytes: [UInt8])], to output: String, item: String, token: Cancellation
    ) throws {
        if let refusal = guardian.refusal(for: output) { throw APIError.forbidden(refusal) }
        let upload = FileUpload(options: session.fetcher.options)
        let ordered = files.filter { $0.name != "manifest.json" } + files.filter { $0.name == "manifest.json" }
        for file in ordered {
            try upload.put(
                url: JobSpec.destination(output: output, item: item, name: file.name), body: file.bytes,
                contentType: Service.mediaType(of: file.name), cancellation: token)
        }
    }

    /// Runs every URL of the job; returns the result object and the failures (one per failed URL).
    private func execute(
        _ spec: JobSpec, job: JobRecord, lease: JobLease, token: Cancellation,
        progress: ProgressKeeper
    ) throws -> (JSON, [APIError]) {
        var storedFileBytes = 0
        let jobSession = session.job(cancellation: token)
        // A job run again (after a restart) makes its files afresh: nothing of the run before stays.
        if case .thumbnails = spec { try? FileManager.default.removeItem(atPath: filesDirectory + "/" + job.id) }
        var items: [JSON] = []
        var failures: [APIError] = []
        for (i, url) in spec.urls.enumerated() {
            if token.isCancelled { break }
            do {
                if let refusal = guardian.refusal(for: url) { throw APIError.forbidden(refusal) }
                switch spec {
                case .prefetch(_, let window, let stream, let players):
                    var prefetch = PrefetchJob()
                    prefetch.prefetcher.connections = 4
                    prefetch.planner.players = players
                    let outcome = try prefetch.run(
                        url, session: jobSession, start: window.start, seconds: window.seconds,
                        tracks: window.tracks, stream: stream
                    ) { fetched, total in
                        progress.item(i, bytes: fetched, total: total)
                    }
                    switch outcome {
                    case .file(let result):
                        items.append(
                            .object([
                                ("url", .string(result.plan.input)), ("ok", .bool(true)),
                                ("prefetch", PrefetchReport.json(result, planOnly: false)),
                            ]))
                    case .stream(let result):
                        items.append(
                            .object([
                                ("url", .string(result.input)), ("ok", .bool(true)),
                                ("prefetch", StreamPrefetchReport.json(result)),
                            ]))
                    }
                case .thumbnails(_, let options, let output):
                    var thumbnailer = Thumbnailer()
                    thumbnailer.options = options
                    let set = try thumbnailer.make(url, session: jobSession)
                    let folder = "\(i + 1)"
                    try ThumbnailReport.write(set, to: filesDirectory + "/" + job.id + "/" + folder)
                    // Counted before they are read: what a shared store keeps of a job is bounded, and
                    // so is what a node holds in memory to store it.
                    if store.keepsFiles {
                        storedFileBytes += JobFiles.itemBytes(root: filesDirectory, job: job.id, item: folder)
                        guard storedFileBytes <= limits.maxStoredJobFileBytes else {
                            throw APIError(
                                status: 500, code: "files_too_large",
                                message:
                                    "the job's files are \(storedFileBytes) bytes so far, more than the \(limits.maxStoredJobFileBytes) the job store keeps for one job"
                            )
                        }
                    }
                    let files = JobFiles.item(root: filesDirectory, job: job.id, item: folder)
                    if let output { try deliver(files, to: output, item: folder, token: token) }
                    // A lost lease stores nothing: the worker that holds the job now makes its own files.
                    if store.keepsFiles { _ = try store.putFiles(id: job.id, lease: lease, item: folder, files) }
                    guard case .object(var members) = ThumbnailReport.manifest(set) else { break }
                    members.insert(("ok", .bool(true)), at: 1)
                    members.append(("files", .string("/v1/jobs/\(job.id)/files/\(folder)/")))
                    if let output {
                        let shown = session.fetcher.options.urlRules.shown(
                            JobSpec.destination(output: output, item: folder, name: ""))
                        members.append(("output", .string(shown)))
                    }
                    items.append(.object(members))
                }
            } catch {
                let failure = APIError(error, rules: session.fetcher.options.urlRules)
                failures.append(failure)
                items.append(
                    .object([
                        ("url", .string(session.fetcher.options.urlRules.shown(url))), ("ok", .bool(false)),
                        ("error", APIError.json(code: failure.code, message: failure.message)),
                    ]))
            }
            progress.itemDone(i)
        }
        return (.object([("items", .array(items))]), failures)
    }
}

/// Keeps a job's progress and saves it to the store at most every half second.
private final class ProgressKeeper: Sendable {
    private struct State {
        var progress = JobProgress()
        /// Bytes fetched and needed per item.
        var bytes: [Int: (Int64, Int64)] = [:]
        var saved = Date.distantPast
    }
    private let state: Mutex<State>
    private let id: String
    private let lease: JobLease
    private let store: JobStore
    /// Runs a store call, counting it.
    private let timed: @Sendable (() throws -> Void) throws -> Void

    init(
        id: String, lease: JobLease, store: JobStore, items: Int,
        timed: @escaping @Sendable (() throws -> Void) throws -> Void
    ) {
        self.id = id
        self.lease = lease
        self.timed = timed
        self.store = store
        var initial = State()
        initial.progress.items = items
        state = Mutex(initial)
    }

    func item(_ i: Int, bytes: Int64, total: Int64) {
        update { s in s.bytes[i] = (bytes, total) }
    }

    func itemDone(_ i: Int) {
        update { s in s.progress.itemsDone = max(s.progress.itemsDone, i + 1) }
        save()
    }

    func save() {
        let progress = state.withLock { $0.progress }
        try? timed { try store.saveProgress(id: id, lease: lease, progress) }
    }

    private func update(_ change: (inout State) -> Void) {
        let due = state.withLock { s -> JobProgress? in
            change(&s)
            s.progress.bytes = s.bytes.values.reduce(0) { $0 + $1.0 }
            s.progress.totalBytes = s.bytes.values.reduce(0) { $0 + $1.1 }
            guard Date().timeIntervalSince(s.saved) >= 0.5 else { return nil }
            s.saved = Date()
            return s.progress
        }
        if let due { try? timed { try store.saveProgress(id: id, lease: lease, due) } }
    }
}

/// Wakes idle workers when a job is queued (or the runner stops). A count, not a bare signal: a
/// worker that found the queue empty sleeps only while nothing was queued since it looked, so a
/// job queued between its look and its wait is not left for a timeout to find.
private final class QueueSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var posted = 0  // guarded by condition

    var count: Int { condition.withLock { posted } }

    func post() {
        condition.withLock {
            posted += 1
            condition.broadcast()
        }
    }

    /// Returns once `count` is no longer `seen`, or after `atMost` seconds.
    func wait(whileCountIs seen: Int, atMost seconds: TimeInterval?) {
        let deadline = seconds.map { Date().addingTimeInterval($0) }
        condition.withLock {
            while posted == seen {
                if let deadline {
                    guard condition.wait(until: deadline) else { return }
                } else {
                    condition.wait()
                }
            }
        }
    }
}
