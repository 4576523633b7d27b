import Foundation
import MediaSource
import RangeFetch
import Support

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
        try fetch(ranges.map { Piece(source: source, range: $0) }, cancellation: cancellation)
    }

    /// A range of one source: the pieces of one wave can come from several (a stream's segments).
    struct Piece {
        let source: any MediaSource
        let range: Range<Int64>
    }

    /// `done` is called after each piece is stored (on the worker's thread).
    func fetch(_ pieces: [Piece], cancellation: Cancellation, done pieceDone: @escaping @Sendable () -> Void = {}) throws {
        let queue = WorkQueue(pieces)
        let failure = FirstFailure()
        let workers = max(1, min(connections, pieces.count))
        // Threads of their own, not `concurrentPerform`: that runs at most one worker per CPU, so
        // on a 2-core machine a wave of 4 connections was 2, each paying its round trips in turn.
        // The workers only wait on the network.
        let done = DispatchGroup()
        for _ in 0..<workers {
            done.enter()
            let worker = Thread {
                defer { done.leave() }
                while !failure.isSet, !cancellation.isCancelled, let piece = queue.next() {
                    do {
                        try piece.source.prefetch(piece.range)
                        pieceDone()
                    } catch where Prefetcher.isRefusedConnection(error) {
                        // An origin that allows a client fewer connections refuses or resets the
                        // extra ones: this worker stops and gives its range back.
                        queue.giveBack(piece)
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
        while !cancellation.isCancelled, let piece = queue.next() {
            try piece.source.prefetch(piece.range)
            pieceDone()
        }
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

/// Pieces handed out one at a time to worker threads.
private final class WorkQueue: @unchecked Sendable {
    private var items: [Prefetcher.Piece]
    private let lock = NSLock()
    init(_ items: [Prefetcher.Piece]) { self.items = items.reversed() }
    func next() -> Prefetcher.Piece? { lock.withLock { items.popLast() } }
    /// Puts a piece back to be handed out next.
    func giveBack(_ piece: Prefetcher.Piece) { lock.withLock { items.append(piece) } }
}

/// The first error any worker met.
private final class FirstFailure: @unchecked Sendable {
    private var stored: Error?
    private let lock = NSLock()
    var error: Error? { lock.withLock { stored } }
    var isSet: Bool { error != nil }
    func set(_ error: Error) { lock.withLock { if stored == nil { stored = error } } }
}

