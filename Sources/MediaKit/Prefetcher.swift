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
                defer { done.leave() }
                while !failure.isSet, !cancellation.isCancelled, let range = queue.next() {
                    do {
                        try source.prefetch(range)
                    } catch where Prefetcher.isRefusedConnection(error) {
                        // An origin that allows a client fewer connections refuses or resets the
                        // extra ones: this worker stops and gives its range back.
                        queue.giveBack(range)
                        return
                    } catch {
                        failure.set(error)
                    }
                }
            }
            worker.name = "mprobe.prefetch"
            worker.start()
        }
        done.wait()
        if let error = failure.error { throw error }
        // What workers gave back, on the connection that is left (or one new one): if even that
        // is refused, the origin is down and its error is the answer.
        while !cancellation.isCancelled, let range = queue.next() { try source.prefetch(range) }
        if cancellation.isCancelled { throw MediaError.interrupted }
    }

    /// A connection refused, reset or cut during its handshake, as opposed to an answer about
    /// the range itself or a silent origin (a timeout, which is not worth waiting for twice).
    static func isRefusedConnection(_ error: Error) -> Bool {
        switch error as? FetchError {
        case .connectionRefused?, .connectionLost?, .tls?: return true
        default: return false
        }
    }
}

/// Ranges handed out one at a time to worker threads.
private final class WorkQueue: @unchecked Sendable {
    private var items: [Range<Int64>]
    private let lock = NSLock()
    init(_ items: [Range<Int64>]) { self.items = items.reversed() }
    func next() -> Range<Int64>? { lock.withLock { items.popLast() } }
    /// Puts a range back to be handed out next.
    func giveBack(_ range: Range<Int64>) { lock.withLock { items.append(range) } }
}

/// The first error any worker met.
private final class FirstFailure: @unchecked Sendable {
    private var stored: Error?
    private let lock = NSLock()
    var error: Error? { lock.withLock { stored } }
    var isSet: Bool { error != nil }
    func set(_ error: Error) { lock.withLock { if stored == nil { stored = error } } }
}

