import ByteSources
import Caching
import Containers
import FFmpeg

/// For each track, the time ranges whose samples are all cached: what a player calls buffered
/// (or loaded) time ranges. Derived from the demuxer's index and the source's present bytes.
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
    /// With `timeline`, a fragmented file's (`OpenedInput.fragmentTimeline`): libavformat's index
    /// then holds only the fragments it read.
    func bufferedRanges(source: any MediaSource, timeline: FragmentTimeline?, streams: [Int]? = nil) -> [TrackBuffer] {
        if let timeline { return fragmentBuffers(timeline, source: source, streams: streams) }
        return (streams ?? Array(0..<streamCount)).compactMap { index in
            let entries = indexEntries(stream: index)
            guard !entries.isEmpty else { return nil }
            let offset = startTime
            // What is present across the track's span, asked once rather than once per sample.
            let span = entries.map(\.position).min()!..<entries.map { $0.byteRange.upperBound }.max()!
            let present = ByteRangeSet([span]).subtracting(source.missingRanges(in: span))
            var ranges: [Range<Double>] = []
            for (i, e) in entries.enumerated() where present.contains(e.byteRange) {
                // A sample covers the time up to the next one; the last one a typical sample duration.
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

extension FormatContext {
    /// The buffered time of a fragmented MP4 read through its `mfra` (libavformat's index holds the
    /// first fragment only): a fragment, from one sync sample the `mfra` lists to the next (the
    /// last to the track's end), counts when all its bytes are cached.
    private func fragmentBuffers(
        _ timeline: FragmentTimeline, source: any MediaSource, streams: [Int]?
    ) -> [TrackBuffer] {
        guard let size = try? source.size() else { return [] }
        return (streams ?? Array(0..<streamCount)).compactMap { index in
            guard let id = containerID(stream: index).map({ UInt32(bitPattern: $0) }),
                let points = timeline.randomAccess[id]?.sorted(by: { $0.moof < $1.moof }), !points.isEmpty,
                let track = timeline.tracks.first(where: { $0.id == id })
            else { return nil }
            let scale = 1 / Double(track.timescale)
            let span = points[0].moof..<size
            let present = ByteRangeSet([span]).subtracting(source.missingRanges(in: span))
            var ranges: [Range<Double>] = []
            for (i, point) in points.enumerated() {
                let bytes = point.moof..<(i + 1 < points.count ? points[i + 1].moof : size)
                guard !bytes.isEmpty, present.contains(bytes) else { continue }
                let lower = Double(point.time) * scale - startTime
                let upper = max(
                    lower, (i + 1 < points.count ? Double(points[i + 1].time) * scale : track.seconds) - startTime)
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
        let context = opened.context
        return CachedMedia(
            tracks: context.bufferedRanges(source: opened.source, timeline: opened.fragmentTimeline),
            duration: opened.fragmentTimeline?.tracks.map(\.seconds).max() ?? context.durationSeconds,
            moov: opened.layout?.moov?.range)
    }
}
