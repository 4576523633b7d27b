import ByteSources
import Caching
import Containers
import FFmpeg

/// For each track, the time ranges whose samples are all cached: what a player calls buffered
/// (or loaded) time ranges. Derived from the seek index and the source's present bytes.
public struct TrackBuffer: Sendable {
    public let index: Int
    public let kind: TrackInfo.Kind
    /// Seconds from the start of the presentation, merged, sorted.
    public let ranges: [Range<Double>]

    public init(index: Int, kind: TrackInfo.Kind, ranges: [Range<Double>]) {
        self.index = index
        self.kind = kind
        self.ranges = ranges
    }
}

extension FormatContext {
    /// From libavformat's index: a sample covers the time up to the next one, and counts when its
    /// bytes are cached (`SeekIndex.buffered`).
    func sampleBuffers(source: any MediaSource, streams: [Int]?) -> [TrackBuffer] {
        (streams ?? Array(0..<streamCount)).compactMap { index in
            let entries = indexEntries(stream: index)
            guard !entries.isEmpty else { return nil }
            let offset = startTime
            // What is present across the track's span, asked once rather than once per sample.
            let span = entries.map(\.position).min()!..<entries.map { $0.byteRange.upperBound }.max()!
            let present = ByteRangeSet([span]).subtracting(source.missingRanges(in: span))
            var ranges: [Range<Double>] = []
            for (i, e) in entries.enumerated() where present.contains(e.byteRange) {
                // The last sample lasts a typical sample duration.
                let end =
                    i + 1 < entries.count
                    ? entries[i + 1].time
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

/// What the cached header says about a cached resource, for views of the cache that draw its
/// bytes and times: each track's buffered time ranges, the duration they are drawn over, and the
/// moov's place among the bytes.
public struct CachedMedia: Sendable {
    public let tracks: [TrackBuffer]
    /// Seconds, when the container states it.
    public let duration: Double?
    /// The moov box's bytes in an MP4/MOV file, from the top-level box headers.
    public let moov: Range<Int64>?

    public init(tracks: [TrackBuffer], duration: Double?, moov: Range<Int64>?) {
        self.tracks = tracks
        self.duration = duration
        self.moov = moov
    }
}

/// Buffered time ranges of a cached resource, computed offline from the cached header.
public enum BufferedRanges {
    /// Opens `input` from the cache only (no network) and derives each track's buffered time
    /// ranges, the duration and the moov's place. Throws (an offline miss, usually) when the
    /// header itself is not cached.
    /// A long fragmented MP4 is read through its `mfra`, as a prefetch caches it.
    public static func cachedMedia(_ input: String, session: MediaSession) throws -> CachedMedia {
        let opened = try OpenedInput.open(
            input, session: session, findStreamInfo: false, fragments: .throughIndex(oneStream: true)
        )
        .media()
        return CachedMedia(
            tracks: opened.seekIndex.buffered(streams: nil), duration: opened.seekIndex.statedDuration,
            moov: opened.layout?.moov?.range)
    }
}
