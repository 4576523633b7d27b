import Caching
import Foundation
import RangeFetch
import Support
import Synchronization

/// One closed range request running on its own thread for a `RemoteResource`. Its bytes are
/// stored as they arrive, so readers waiting on it get them at once, not when the range is done.
///
/// It runs while anyone who needs it is still there: each reader that starts or joins it adds
/// its token, and the transfer stops when every reader has gone (a player that closed its
/// connection stops the readahead only it needed).
final class RunningFetch: Sendable {
    enum Outcome: Sendable {
        /// The transfer ended; its bytes are stored (or were refused because the content changed).
        case done
        /// The resource ends at or before the start of the range.
        case endOfResource
        case failed(Error)
    }

    /// The readers that need this fetch.
    private final class Interest: Sendable {
        let tokens: Mutex<[ReaderToken]>
        init(_ token: ReaderToken) { tokens = Mutex([token]) }
        var allGone: Bool { tokens.withLock { $0.allSatisfy(\.gone) } }
        var anyInterrupted: Bool { tokens.withLock { $0.contains(where: \.interrupted) } }
    }

    let range: Range<Int64>
    private let interest: Interest
    /// Cancelled once everyone interested has gone.
    let cancellation: Cancellation
    /// Set once, when the transfer is over.
    private let result = Mutex<Outcome?>(nil)
    /// Left when the fetch's thread holds nothing of its resource any more.
    private let thread = DispatchGroup()

    /// Bytes of the range that have arrived.
    private final class Received: Sendable {
        let count = Atomic<Int64>(0)
        /// When the last byte arrived (uptime, milliseconds).
        let lastArrival = Atomic<Int64>(Received.now)
        static var now: Int64 { Int64(ProcessInfo.processInfo.systemUptime * 1000) }
        /// Bytes are flowing: some arrived within the last second.
        var flowing: Bool { Received.now - lastArrival.load(ordering: .relaxed) < 1000 }
    }
    private let received: Received
    /// A fetch with less than this left goes on when its readers leave: on a fast link those bytes
    /// are already in socket buffers, and stopping would only throw them away.
    static let worthStopping: Int64 = 512 << 10

    init(range: Range<Int64>, for token: ReaderToken) {
        self.range = range
        let interest = Interest(token)
        self.interest = interest
        let received = Received()
        self.received = received
        let length = Int64(range.count)
        // Stopped when everyone who needed it has gone, unless little is left and it is flowing;
        // at once when a reader's job was cancelled (the user wants it to stop).
        cancellation = Cancellation(when: {
            guard interest.allGone else { return false }
            let nearlyDone =
                length - received.count.load(ordering: .relaxed) <= RunningFetch.worthStopping && received.flowing
            return !nearlyDone || interest.anyInterrupted
        })
        thread.enter()
    }

    /// Counts bytes of the range that arrived (for the decision to stop when readers leave).
    func arrived(_ count: Int) {
        received.count.add(Int64(count), ordering: .relaxed)
        received.lastArrival.store(Received.now, ordering: .relaxed)
    }

    /// Called last by the fetch's thread, after it dropped its reference to the resource.
    func threadExited() { thread.leave() }

    /// Waits (bounded) until the thread has exited: a reader that goes away then knows that what
    /// the fetch stored is committed and that the resource is not kept alive by it.
    func waitForThread() { _ = thread.wait(timeout: .now() + 30) }

    var threadHasExited: Bool { thread.wait(timeout: .now()) == .success }

    /// Another reader needs these bytes too: the fetch goes on while it is there.
    func join(_ token: ReaderToken) {
        interest.tokens.withLock { tokens in
            if !tokens.contains(where: { $0 === token }) { tokens.append(token) }
        }
    }

    /// Every reader that needed this fetch has gone (it may still finish: see `worthStopping`).
    var isAbandoned: Bool { interest.allGone }

    /// True when `token` is one of the readers this fetch is for.
    func serves(_ token: ReaderToken) -> Bool {
        interest.tokens.withLock { $0.contains { $0 === token } }
    }

    var outcome: Outcome? { result.withLock { $0 } }

    /// Where readers must not read on from until this fetch has compared the stored bytes there
    /// with the ones it is bringing (`OverlapCheck`): the end of its range, while they are awaited.
    private let barrierAt = Mutex<Int64?>(nil)
    var barrier: Int64? { outcome == nil ? barrierAt.withLock { $0 } : nil }
    func setBarrier(_ offset: Int64?) { barrierAt.withLock { $0 = offset } }

    func finish(_ outcome: Outcome) { result.withLock { $0 = outcome } }
}

/// What a reader learns from the fetches it started: requests, connections and bytes, and which
/// bytes it fetched itself (serving those is not a cache hit). Shared with the fetch threads.
final class ReaderTally: Sendable {
    private struct State {
        var counters = SourceCounters()
        var fetched = ByteRangeSet()
        /// Of `fetched`, the bytes not read yet: each fetched byte counts once in the cache's
        /// statistics, however often it is read.
        var unread = ByteRangeSet()
    }
    private let state = Mutex(State())

    var counters: SourceCounters { state.withLock { $0.counters } }

    func stored(_ range: Range<Int64>) {
        state.withLock {
            $0.fetched.insert(range)
            $0.unread.insert(range)
            $0.counters.bytesFetched += Int64(range.count)
        }
    }

    /// Bytes counted by `stored` that the store refused (the content changed meanwhile).
    func refused(_ range: Range<Int64>) {
        state.withLock {
            $0.fetched.remove(range)
            $0.unread.remove(range)
            $0.counters.bytesFetched -= Int64(range.count)
        }
    }

    /// A response arrived: its request counts now, while its body is still coming.
    func responded() {
        state.withLock { $0.counters.requests += 1 }
    }

    /// A finished fetch's requests (those without a response, such as failed connections) and
    /// connections, and the received bytes not yet counted as they were stored (error bodies,
    /// bytes past the range of a server that ignores ranges).
    /// `responses` is how many of its requests `responded` counted already.
    func finished(_ tally: FetchCounters, alreadyCounted: Int64, responses: Int64) {
        state.withLock {
            $0.counters.requests += max(0, tally.requests - responses)
            $0.counters.connections += tally.connections
            $0.counters.bytesFetched += max(0, tally.bytesReceived - alreadyCounted)
        }
    }

    /// Counts a read of `range`: the bytes of it that were already local (a cache hit), and the
    /// bytes this reader fetched that it reads for the first time.
    func read(_ range: Range<Int64>) -> (local: Int64, firstFetched: Int64) {
        state.withLock { s in
            // A warm reader fetched nothing: no set to search (this runs on every cached range).
            guard !s.fetched.isEmpty else {
                s.counters.bytesFromCache += Int64(range.count)
                return (Int64(range.count), 0)
            }
            let local = s.fetched.gaps(in: range).reduce(0) { $0 + Int64($1.count) }
            let outsideUnread = s.unread.gaps(in: range).reduce(0) { $0 + Int64($1.count) }
            s.unread.remove(range)
            s.counters.bytesFromCache += local
            return (local, Int64(range.count) - outsideUnread)
        }
    }
}

/// A reader's stake in the fetches it waits on. `interrupted` when the job or response that owns
/// the reader was cancelled: its fetches stop at once. `gone` also when the reader finished: the
/// fetches only it needed stop unless they are nearly done.
final class ReaderToken: Sendable {
    private let parent: Cancellation
    private let left = Atomic<Bool>(false)

    init(parent: Cancellation) { self.parent = parent }

    var interrupted: Bool { parent.isCancelled }
    var gone: Bool { left.load(ordering: .relaxed) || parent.isCancelled }

    /// The reader has finished.
    func leave() { left.store(true, ordering: .relaxed) }
}
