/// A sorted set of disjoint, non-adjacent half-open byte ranges.
///
/// Inserting merges overlapping and touching ranges, so `ranges` is always the minimal
/// description of the covered bytes. Offsets are `Int64`: media files over 4 GB are normal.
public struct ByteRangeSet: Sendable, Equatable, CustomStringConvertible {
    public private(set) var ranges: [Range<Int64>]

    public init() { ranges = [] }

    public init(_ ranges: [Range<Int64>]) {
        self.ranges = []
        for r in ranges { insert(r) }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    /// Total number of bytes covered.
    public var byteCount: Int64 { ranges.reduce(0) { $0 + Int64($1.count) } }

    public var description: String {
        "[" + ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ", ") + "]"
    }

    /// Index of the first range whose upper bound is >= `offset` (binary search).
    private func firstIndex(endingAtOrAfter offset: Int64) -> Int {
        var lo = 0, hi = ranges.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].upperBound < offset { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    public mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var lower = range.lowerBound, upper = range.upperBound
        let start = firstIndex(endingAtOrAfter: lower)
        var end = start
        while end < ranges.count && ranges[end].lowerBound <= upper {
            lower = min(lower, ranges[end].lowerBound)
            upper = max(upper, ranges[end].upperBound)
            end += 1
        }
        ranges.replaceSubrange(start..<end, with: [lower..<upper])
    }

    public mutating func formUnion(_ other: ByteRangeSet) {
        for r in other.ranges { insert(r) }
    }

    public mutating func remove(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var result: [Range<Int64>] = []
        result.reserveCapacity(ranges.count + 1)
        for r in ranges {
            if r.upperBound <= range.lowerBound || r.lowerBound >= range.upperBound {
                result.append(r)
                continue
            }
            if r.lowerBound < range.lowerBound { result.append(r.lowerBound..<range.lowerBound) }
            if r.upperBound > range.upperBound { result.append(range.upperBound..<r.upperBound) }
        }
        ranges = result
    }

    /// This set without `ranges`.
    public func subtracting(_ ranges: [Range<Int64>]) -> ByteRangeSet {
        var result = self
        for r in ranges { result.remove(r) }
        return result
    }

    /// True when every byte of `range` is covered.
    public func contains(_ range: Range<Int64>) -> Bool {
        if range.isEmpty { return true }
        let i = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        guard i < ranges.count else { return false }
        return ranges[i].lowerBound <= range.lowerBound && ranges[i].upperBound >= range.upperBound
    }

    /// The parts of `range` that are not covered, in order.
    public func gaps(in range: Range<Int64>) -> [Range<Int64>] {
        guard !range.isEmpty else { return [] }
        var gaps: [Range<Int64>] = []
        var cursor = range.lowerBound
        var i = firstIndex(endingAtOrAfter: cursor + 1)
        while cursor < range.upperBound {
            guard i < ranges.count, ranges[i].lowerBound < range.upperBound else {
                gaps.append(cursor..<range.upperBound)
                break
            }
            let r = ranges[i]
            if r.lowerBound > cursor { gaps.append(cursor..<r.lowerBound) }
            cursor = max(cursor, r.upperBound)
            i += 1
        }
        return gaps
    }

    /// Length of the covered run starting exactly at `offset` (0 when `offset` is not covered).
    public func coveredLength(from offset: Int64) -> Int64 {
        guard offset < Int64.max else { return 0 }  // nothing can be stored at the last offset
        let i = firstIndex(endingAtOrAfter: offset + 1)
        guard i < ranges.count, ranges[i].lowerBound <= offset else { return 0 }
        return ranges[i].upperBound - offset
    }
}
