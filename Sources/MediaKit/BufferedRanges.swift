import ByteCache
import MediaSource

/// For each track, the time ranges whose samples are all cached: what a player calls buffered
/// (or loaded) time ranges. Derived from the demuxer's index and the source's present bytes.
public struct TrackBuffer: Sendable {
    public let index: Int
    public let kind: TrackInfo.Kind
    /// Seconds from the start of the presentation, merged, sorted.
    public let ranges: [Range<Double>]
}

extension FormatContext {
    public func bufferedRanges(source: any MediaSource, streams: [Int]? = nil) -> [TrackBuffer] {
        (streams ?? Array(0..<streamCount)).compactMap { index in
            let entries = indexEntries(stream: index)
            guard !entries.isEmpty else { return nil }
            let offset = startTime
            // What is present across the track's span, asked once rather than once per sample.
            let span = entries.map(\.position).min()!..<entries.map { $0.byteRange.upperBound }.max()!
            let present = ByteRangeSet([span]).subtracting(source.missingRanges(in: span))
            var ranges: [Range<Double>] = []
            for (i, e) in entries.enumerated() where present.contains(e.byteRange) {
                // A sample covers the time up to the next one; the last one a typical sample duration.
                let end = i + 1 < entries.count ? entries[i + 1].time
                    : e.time + (entries.count > 1 ? (e.time - entries[0].time) / Double(entries.count - 1) : 0)
                let lower = e.time - offset, upper = max(end, e.time) - offset
                if let last = ranges.last, abs(last.upperBound - lower) < 1e-9 {
                    ranges[ranges.count - 1] = last.lowerBound..<upper
                } else {
                    ranges.append(lower..<upper)
                }
            }
            return TrackBuffer(index: index, kind: kind(ofStream: index), ranges: ranges)
        }
    }
}

/// Buffered time ranges of a cached resource, computed offline from the cached header.
public enum BufferedRanges {
    /// Opens `input` from the cache only (no network) and derives each track's buffered time ranges.
    /// Throws (an offline miss, usually) when the header itself is not cached.
    public static func compute(_ input: String, session: MediaSession) throws -> [TrackBuffer] {
        let opened = try OpenedInput(input, session: session, findStreamInfo: false)
        return opened.context.bufferedRanges(source: opened.source)
    }
}
