import MediaSource
import RangeFetch

/// Thumbnails' key frames in a Matroska file with Cues.
extension MatroskaKeyFrames {
    /// For a Matroska `context` with Cues: the key frame each time's Cue point names, with its
    /// bytes — from its Cluster's start (where libavformat's seek lands) to the end of its block.
    /// Where that block ends is read from each Cluster's first kilobytes, all in one parallel
    /// wave: they are the key frame's own first bytes, so the pictures then need only the rest of
    /// each key frame (the caller's wave). libavformat alone reads a readahead window from each
    /// Cluster (2.96 MB for ten thumbnails whose key frames are 0.22 MB). Nil for other files, or
    /// a Cue point whose Cluster has no video key frame at its time.
    static func fromCues(_ context: FormatContext, head: MatroskaHead?, stream: Int, source: any MediaSource, times: [Double],
                         connections: Int, cancellation: Cancellation) throws -> [IndexEntry]? {
        guard let head, head.cues == true, head.firstCluster != nil, head.tracks.count == context.streamCount,
              head.tracks.indices.contains(stream), let size = try source.size() else { return nil }
        let track = head.tracks[stream]
        // libavformat reads the Cues on its first seek; one that fails is said by the seeks after.
        do { try context.seek(seconds: context.startTime) } catch { return nil }
        let points = context.positionedPoints(stream: stream)
        guard !points.isEmpty else { return nil }
        var chosen: [IndexEntry] = []
        for time in times {
            let point = points.last { $0.time <= time } ?? points[0]
            if !chosen.contains(where: { $0.position == point.position }) { chosen.append(point) }
        }
        chosen.sort { $0.time < $1.time }
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        try prefetcher.fetch(chosen.flatMap { source.missingRanges(in: $0.position..<min(size, $0.position + clusterHead)) },
                             source: source, cancellation: cancellation)
        var found: [IndexEntry] = []
        for point in chosen {
            var read = clusterHead
            while true {
                if cancellation.isCancelled { throw MediaError.interrupted }
                let range = point.position..<min(size, point.position + read)
                try source.prefetch(range)
                let bytes = try source.bytes(at: range.lowerBound, count: Int(range.count))
                guard let cluster = MatroskaClusters.cluster(in: bytes, at: 0, whole: false) else { return nil }
                let key = (cluster.blocks + [cluster.cut].compactMap { $0 })
                    .first { $0.track == track && $0.keyframe && $0.timecode == point.timestamp }
                if let key, key.size <= MatroskaKeyFrames.largestWindow {
                    found.append(IndexEntry(position: point.position, size: Int64(key.position + key.size), time: point.time,
                                            timestamp: point.timestamp, decodeTime: point.decodeTime, isKeyframe: true))
                    break
                }
                // Blocks of other tracks, or a BlockGroup, before the key frame's header: read on.
                guard key == nil, range.upperBound < size, read < MatroskaKeyFrames.largestWindow else { return nil }
                read *= 4
            }
        }
        return found
    }

    /// What is read of each Cluster first: its Timecode and the key frame's block header come
    /// first in it (ffmpeg's and browsers' muxers start a Cluster at each video key frame).
    private static let clusterHead: Int64 = 4 << 10
}
