import ByteCache
import Foundation
import RangeFetch
import Synchronization

/// One closed range request running on its own thread for a `RemoteResource`. Its bytes are
/// stored as they arrive, so readers waiting on it get them at once, not when the range is done.
///
/// It runs while anyone who needs it is still there: each reader that starts or joins it adds
/// its cancellation token, and the transfer stops when every token is cancelled (a player that
/// closed its connection stops the readahead only it needed).
final class RunningFetch: Sendable {
    enum Outcome: Sendable {
        /// The transfer ended; its bytes are stored (or were refused because the content changed).
        case done
        /// The resource ends at or before the start of the range.
        case endOfResource
        case failed(Error)
    }

    /// The tokens of the readers that need this fetch.
    private final class Interest: Sendable {
        let tokens: Mutex<[Cancellation]>
        init(_ token: Cancellation) { tokens = Mutex([token]) }
        var allGone: Bool { tokens.withLock { $0.allSatisfy(\.isCancelled) } }
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
    }
    private let received: Received
    /// A fetch with less than this left goes on when its readers leave: on a fast link those bytes
    /// are already in socket buffers, and stopping would only throw them away.
    static let worthStopping: Int64 = 512 << 10

    init(range: Range<Int64>, for token: Cancellation) {
        self.range = range
        let interest = Interest(token)
        self.interest = interest
        let received = Received()
        self.received = received
        let length = Int64(range.count)
        cancellation = Cancellation(when: {
            interest.allGone && length - received.count.load(ordering: .relaxed) > RunningFetch.worthStopping
        })
        thread.enter()
    }

    /// Counts bytes of the range that arrived (for the decision to stop when readers leave).
    func arrived(_ count: Int) { received.count.add(Int64(count), ordering: .relaxed) }

    /// Called last by the fetch's thread, after it dropped its reference to the resource.
    func threadExited() { thread.leave() }

    /// Waits (bounded) until the thread has exited: a reader that goes away then knows that what
    /// the fetch stored is committed and that the resource is not kept alive by it.
    func waitForThread() { _ = thread.wait(timeout: .now() + 30) }

    var threadHasExited: Bool { thread.wait(timeout: .now()) == .success }

    /// Another reader needs these bytes too: the fetch goes on while it is there.
    func join(_ token: Cancellation) {
        interest.tokens.withLock { tokens in
            if !tokens.contains(where: { $0 === token }) { tokens.append(token) }
        }
    }

    /// True when `token` is one of the readers this fetch is for.
    func serves(_ token: Cancellation) -> Bool {
        interest.tokens.withLock { $0.contains { $0 === token } }
    }

    var outcome: Outcome? { result.withLock { $0 } }

    func finish(_ outcome: Outcome) { result.withLock { $0 = outcome } }
}

/// What a reader learns from the fetches it started: requests, connections and bytes, and which
/// bytes it fetched itself (serving those is not a cache hit). Shared with the fetch threads.
final class ReaderTally: Sendable {
    private struct State {
        var counters = SourceCounters()
        var fetched = ByteRangeSet()
    }
    private let state = Mutex(State())

    var counters: SourceCounters { state.withLock { $0.counters } }

    func stored(_ range: Range<Int64>) {
        state.withLock {
            $0.fetched.insert(range)
            $0.counters.bytesFetched += Int64(range.count)
        }
    }

    /// Bytes counted by `stored` that the store refused (the content changed meanwhile).
    func refused(_ range: Range<Int64>) {
        state.withLock {
            $0.fetched.remove(range)
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

    /// Counts a read of `range`; returns the bytes of it that were already local (a cache hit).
    func read(_ range: Range<Int64>) -> Int64 {
        state.withLock { s in
            let local = s.fetched.gaps(in: range).reduce(0) { $0 + Int64($1.count) }
            s.counters.bytesFromCache += local
            return local
        }
    }
}
