import Foundation
import MediaSource
import RangeFetch

/// Fetches a plan's missing ranges in parallel: up to `connections` requests at once to the
/// origin, each range one closed request (the fetcher's pool keeps the connections alive).
public struct Prefetcher: Sendable {
    public var connections = 4

    public init() {}

    /// Blocks until every missing range of the plan is stored or one failed (the others then stop early).
    public func fetch(_ plan: PrefetchPlan, source: any MediaSource, cancellation: Cancellation) throws {
        try fetch(plan.missing, source: source, cancellation: cancellation)
    }

    public func fetch(_ ranges: [Range<Int64>], source: any MediaSource, cancellation: Cancellation) throws {
        let queue = WorkQueue(ranges)
        let failure = FirstFailure()
        let workers = max(1, min(connections, ranges.count))
        // Threads of their own, not `concurrentPerform`: that runs at most one worker per CPU, so
        // on a 2-core machine a wave of 4 connections was 2, each paying its round trips in turn.
        // The workers only wait on the network.
        let done = DispatchGroup()
        for _ in 0..<workers {
            done.enter()
            let worker = Thread {
                while !failure.isSet, !cancellation.isCancelled, let range = queue.next() {
                    do {
                        try source.prefetch(range)
                    } catch {
                        failure.set(error)
                    }
                }
                done.leave()
            }
            worker.name = "mprobe.prefetch"
            worker.start()
        }
        done.wait()
        if let error = failure.error { throw error }
        if cancellation.isCancelled { throw MediaError.interrupted }
    }
}

/// Ranges handed out one at a time to worker threads.
private final class WorkQueue: @unchecked Sendable {
    private var items: [Range<Int64>]
    private let lock = NSLock()
    init(_ items: [Range<Int64>]) { self.items = items.reversed() }
    func next() -> Range<Int64>? { lock.withLock { items.popLast() } }
}

/// The first error any worker met.
private final class FirstFailure: @unchecked Sendable {
    private var stored: Error?
    private let lock = NSLock()
    var error: Error? { lock.withLock { stored } }
    var isSet: Bool { error != nil }
    func set(_ error: Error) { lock.withLock { if stored == nil { stored = error } } }
}
