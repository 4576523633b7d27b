import RangeFetch
import Support
import TestSupport
import XCTest

/// Collects what a fetch delivers into a sparse byte map keyed by offset.
final class Collected {
    var pieces: [(Int64, [UInt8])] = []
    var responses: [ResponseInfo] = []

    /// The delivered bytes of `range`, assuming they were delivered contiguously.
    func bytes(in range: Range<Int64>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: range.count)
        var covered = 0
        for (offset, piece) in pieces {
            for (i, b) in piece.enumerated() where range.contains(offset + Int64(i)) {
                out[Int(offset + Int64(i) - range.lowerBound)] = b
                covered += 1
            }
        }
        return covered >= range.count ? out : []
    }
}

extension RangeFetcher {
    /// Fetches `range` into a `Collected`, returning the outcome and the request tally.
    func collect(
        _ url: String, _ range: Range<Int64>, ifRange: String? = nil,
        cancellation: Cancellation? = nil
    ) throws -> (FetchOutcome, Collected, FetchCounters) {
        let collected = Collected()
        var tally = FetchCounters()
        let outcome = try fetch(
            url: url, range: range, ifRange: ifRange, cancellation: cancellation, tally: &tally,
            onResponse: { collected.responses.append($0) },
            onData: { collected.pieces.append(($0, Array($1))) })
        return (outcome, collected, tally)
    }
}

func quickOptions(timeout: Double = 5) -> FetchOptions {
    var o = FetchOptions()
    o.timeout = timeout
    o.retryDelay = 0.05
    return o
}
