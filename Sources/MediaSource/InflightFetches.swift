import Foundation

/// The ranges being fetched right now for one resource, so that concurrent readers of the same
/// missing bytes wait for one fetch instead of each starting their own.
final class InflightFetches: @unchecked Sendable {
    // Guarded by `condition`.
    private var ranges: [Range<Int64>] = []
    private let condition = NSCondition()

    /// Claims `wanted` (trimmed to end before any fetch already running past its start) for the
    /// caller to fetch. If a running fetch covers `wanted.lowerBound`, waits for it and returns nil:
    /// the caller should look at the store again.
    func claim(_ wanted: Range<Int64>) -> Range<Int64>? {
        condition.lock()
        defer { condition.unlock() }
        if ranges.contains(where: { $0.contains(wanted.lowerBound) }) {
            while ranges.contains(where: { $0.contains(wanted.lowerBound) }) { condition.wait() }
            return nil
        }
        let nextStart = ranges.map(\.lowerBound).filter { $0 > wanted.lowerBound }.min() ?? wanted.upperBound
        let claimed = wanted.lowerBound..<min(wanted.upperBound, nextStart)
        ranges.append(claimed)
        return claimed
    }

    func release(_ range: Range<Int64>) {
        condition.lock()
        if let i = ranges.firstIndex(of: range) { ranges.remove(at: i) }
        condition.broadcast()
        condition.unlock()
    }
}
