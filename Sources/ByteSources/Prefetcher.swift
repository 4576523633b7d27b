import Foundation
import RangeFetch
import Support
import Synchronization

/// Fetches ranges in parallel: up to `connections` requests at once to the origin, each range one
/// closed request (the fetcher's pool keeps the connections alive). Used by prefetch plans and
/// by the parsers that fetch what they read in waves (key frames, fragments, Cues' clusters).
public struct Prefetcher: Sendable {
    public var connections = 4

    public init() {}

    /// Blocks until every range is stored or one failed (the others then stop early).
    public func fetch(_ ranges: [Range<Int64>], source: any MediaSource, cancellation: Cancellation) throws {
        try fetch(ranges.map { Piece(source: source, range: $0) }, cancellation: cancellation)
    }

    /// A range of one source: the pieces of one wave can come from several (a stream's segments).
    public struct Piece: Sendable {
        public let source: any MediaSource
        public let range: Range<Int64>

        public init(source: any MediaSource, range: Range<Int64>) { (self.source, self.range) = (source, range) }
    }

    /// `ranges` sorted, and joined where at most `gap` bytes lie between them.
    public static func merge(_ ranges: [Range<Int64>], gap: Int64) -> [Range<Int64>] {
        var merged: [Range<Int64>] = []
        for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, r.lowerBound - last.upperBound <= gap {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        return merged
    }

    /// `done` is called after each piece is stored (on the worker's thread).
    public func fetch(
        _ pieces: [Piece], cancellation: Cancellation, done pieceDone: @escaping @Sendable () -> Void = {}
    ) throws {
        let queue = WorkQueue(pieces)
        let failure = Mutex<(any Error)?>(nil)
        let workers = max(1, min(connections, pieces.count))
        // Threads of their own, not `concurrentPerform`: that runs at most one worker per CPU, so
        // on a 2-core machine a wave of 4 connections was 2, each paying its round trips in turn.
        // The workers only wait on the network.
        let done = DispatchGroup()
        for _ in 0..<workers {
            done.enter()
            let worker = Thread {
                defer { done.leave() }
                while failure.withLock({ $0 == nil }), !cancellation.isCancelled, let piece = queue.next() {
                    do {
                        try piece.source.prefetch(piece.range)
                        pieceDone()
                    } catch  where Prefetcher.isRefusedConnection(error) {
                        // An origin that allows a client fewer connections refuses or resets the
                        // extra ones: this worker stops and gives its range back.
                        queue.giveBack(piece)
                        return
                    } catch {
                        failure.withLock { if $0 == nil { $0 = error } }
                    }
                }
            }
            worker.name = "mprobe.prefetch"
            worker.start()
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
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
private final class WorkQueue: Sendable {
    private let items: Mutex<[Prefetcher.Piece]>
    init(_ items: [Prefetcher.Piece]) { self.items = Mutex(items.reversed()) }
    func next() -> Prefetcher.Piece? { items.withLock { $0.popLast() } }
    /// Puts a piece back to be handed out next.
    func giveBack(_ piece: Prefetcher.Piece) { items.withLock { $0.append(piece) } }
}
