import ByteSources
import RangeFetch
import Support

/// Thumbnails' key frames in a Matroska file with Cues.
extension MatroskaKeyFrames {
    /// The key frames `fromCues` found: one per time's Cue point, all the Cue points of the stream
    /// (for `--skip-black`'s next ones), and the time of the first key frame the end of the file
    /// cuts or leaves out, when a time needed it.
    public struct CueKeyFrames {
        public let found: [IndexEntry]
        public let points: [IndexEntry]
        public let cut: Double?
    }

    /// For a Matroska file with Cues: the key frame each time's Cue point names, with its
    /// bytes — from its Cluster's start (where libavformat's seek lands) to the end of its block.
    /// Where that block ends is read from each Cluster's first kilobytes, all in one parallel
    /// wave: they are the key frame's own first bytes, so the pictures then need only the rest of
    /// each key frame (the caller's wave). libavformat alone reads a readahead window from each
    /// Cluster (2.96 MB for ten thumbnails whose key frames are 0.22 MB). A key frame the end of the
    /// file cuts gives way to the Cue point before it. Nil for Cues that do not reach
    /// the end of the file (lost with a cut, or listing other tracks: libavformat's index then
    /// holds the key frames it met reading, not Cue points), or a Cue point whose Cluster has no
    /// video key frame at its time.
    ///
    /// `cuePoints` are the Cue points of `track`'s stream as the demuxer read them, `start` and
    /// `duration` (seconds) what the file's Info states, `clock` the stream's. `relocated` gets
    /// the key frames found a rounding from their Cue's time, at their own time, found or not:
    /// for the demuxer's index (its seek skips the blocks before the time it seeks to, and would
    /// take the next Cluster's key frame, reading all of this one).
    public static func fromCues(
        track: Int64, cuePoints: [IndexEntry], start: Double, duration: Double, clock: StreamClock,
        source: any MediaSource, times: [Double], connections: Int,
        cancellation: Cancellation, relocated: inout [FoundKeyFrame]
    ) throws -> CueKeyFrames? {
        guard let size = try source.size() else { return nil }
        // Cue points must reach the duration the Info states, to within two of their widest gaps
        // (times outside the file are no Cue points); those past the end of a file cut short are
        // left out, and their times go to the last whole key frame.
        let end = start + duration
        let listed = cuePoints.filter { $0.time >= start - 1 && $0.time <= end + 1 }
        let widest = zip(listed, listed.dropFirst()).map { $1.time - $0.time }.max() ?? 0
        guard listed.count >= 2, let last = listed.last, last.time >= end - 2 * widest else { return nil }
        let points = listed.filter { $0.position < size }
        guard !points.isEmpty else { return nil }
        var cut = listed.first { $0.position >= size }.flatMap { gone in
            times.contains { $0 >= gone.time } ? gone.time : nil
        }
        var chosen: [Int] = []
        for time in times {
            let i = points.lastIndex { $0.time <= time } ?? 0
            if !chosen.contains(i) { chosen.append(i) }
        }
        chosen.sort()
        // A block of the track a second past the Cue's time means the Cue names no block here; a
        // key frame within 50 ms of it is the one it names (a muxer's rounding).
        let second = clock.timestamp(start + 1) - clock.timestamp(start)
        let rounding = max(1, (clock.timestamp(start + 0.05) - clock.timestamp(start)))
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        try prefetcher.fetch(
            chosen.flatMap {
                source.missingRanges(in: points[$0].position..<min(size, points[$0].position + clusterHead))
            },
            source: source, cancellation: cancellation)
        var found: [IndexEntry] = []
        for var i in chosen {
            while true {
                guard
                    let key = try keyFrame(
                        of: points[i], track: track, clock: clock, size: size, source: source,
                        cancellation: cancellation, second: second, rounding: rounding)
                else {
                    return nil
                }
                if key.timestamp != points[i].timestamp {
                    relocated.append(FoundKeyFrame(position: points[i].position, timestamp: key.timestamp))
                }
                if key.byteRange.upperBound <= size {
                    if !found.contains(key) { found.append(key) }
                    break
                }
                cut = min(cut ?? points[i].time, points[i].time)
                guard i > 0 else { return nil }
                i -= 1
            }
        }
        return CueKeyFrames(found: found.sorted { $0.time < $1.time }, points: points, cut: cut)
    }

    /// The key frame the Cue `point` names, read from its Cluster's first bytes on: nil when the
    /// Cluster holds none at its time (a Cluster that ends within the bytes read holds no more).
    private static func keyFrame(
        of point: IndexEntry, track: Int64, clock: StreamClock, size: Int64,
        source: any MediaSource, cancellation: Cancellation, second: Int64, rounding: Int64
    ) throws -> IndexEntry? {
        var read = clusterHead
        while true {
            if cancellation.isCancelled { throw MediaError.interrupted }
            let range = point.position..<min(size, point.position + read)
            try source.prefetch(range)
            let bytes = try source.bytes(at: range.lowerBound, count: Int(range.count))
            let cluster = MatroskaClusters.cluster(in: bytes, at: 0, whole: false)
            // The key frame at the Cue's time; else one a rounding from it, at its own time (which
            // joins the demuxer's index: `CueKeyFrames.relocated`). (Further off, the Cues are not
            // to be chosen by.)
            let keys =
                cluster.map { ($0.blocks + [$0.cut].compactMap { $0 }).filter { $0.track == track && $0.keyframe } }
                ?? []
            let key =
                keys.first { $0.timecode == point.timestamp }
                ?? keys.first { block in
                    let (apart, overflow) = block.timecode.subtractingReportingOverflow(point.timestamp)
                    return !overflow && apart.magnitude <= rounding.magnitude
                }
            if let key {
                guard key.size <= MatroskaKeyFrames.largestWindow else { return nil }
                if key.timecode == point.timestamp {
                    return IndexEntry(
                        position: point.position, size: Int64(key.position + key.size), time: point.time,
                        timestamp: point.timestamp, decodeTime: point.decodeTime, isKeyframe: true)
                }
                let time = clock.seconds(key.timecode)
                return IndexEntry(
                    position: point.position, size: Int64(key.position + key.size), time: time,
                    timestamp: key.timecode, decodeTime: time, isKeyframe: true)
            }
            // Blocks of other tracks, or a BlockGroup, before the key frame's header: read on — but
            // not past a Cluster that ended within the bytes, nor past the track's blocks a second
            // later (a Cue that names no block), nor far: the key frame starts a Cluster's first
            // megabyte, and bytes that are no Cluster get 64 KiB.
            let later =
                cluster?.blocks.contains { $0.track == track && $0.timecode > point.timestamp.saturatingAdd(second) }
                ?? false
            guard range.upperBound < size, cluster?.end == nil, !later, read < (cluster == nil ? 64 << 10 : 1 << 20)
            else {
                return nil
            }
            read *= 4
        }
    }

    /// What is read of each Cluster first: its Timecode and the key frame's block header come
    /// first in it (ffmpeg's and browsers' muxers start a Cluster at each video key frame).
    private static let clusterHead: Int64 = 4 << 10
}
