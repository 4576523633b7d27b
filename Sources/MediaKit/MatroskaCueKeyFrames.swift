import MediaSource
import RangeFetch

/// Thumbnails' key frames in a Matroska file with Cues.
extension MatroskaKeyFrames {
    /// For a Matroska `context` with Cues: the key frame each time's Cue point names, with its
    /// bytes — from its Cluster's start (where libavformat's seek lands) to the end of its block —
    /// read from the Cluster's head: the first alone, the others in one parallel wave sized by it
    /// (a key frame larger than its read is read on). libavformat alone reads a readahead window from each Cluster (2.96 MB for ten
    /// thumbnails where the key frames are 0.8). Nil for other files, or a Cue point whose Cluster
    /// has no video key frame at its time.
    static func fromCues(_ context: FormatContext, head: MatroskaHead?, stream: Int, source: any MediaSource, times: [Double],
                         connections: Int, cancellation: Cancellation) throws -> [IndexEntry]? {
        guard let head, head.cues == true, head.firstCluster != nil, head.tracks.count == context.streamCount,
              head.tracks.indices.contains(stream), let size = try source.size() else { return nil }
        let numbers = head.tracks
        // libavformat reads the Cues on its first seek; one that fails is said by the seeks after.
        do { try context.seek(seconds: context.startTime) } catch { return nil }
        let points = context.positionedPoints(stream: stream)
        guard !points.isEmpty else { return nil }
        var chosen: [IndexEntry] = []
        for time in times {
            let point = points.last { $0.time <= time } ?? points[0]
            if !chosen.contains(where: { $0.position == point.position }) { chosen.append(point) }
        }
        // The first one alone, from a small read on; the others' heads then sized by it, together.
        var first: Int64 = 32 << 10
        var found: [IndexEntry] = []
        for (i, point) in chosen.sorted(by: { $0.time < $1.time }).enumerated() {
            if i == 1 {
                first = max(16 << 10, (found.first?.size ?? first) * 3 / 2)
                var prefetcher = Prefetcher()
                prefetcher.connections = connections
                try prefetcher.fetch(chosen.flatMap { source.missingRanges(in: $0.position..<min(size, $0.position + first)) },
                                     source: source, cancellation: cancellation)
            }
            var read = first
            while true {
                if cancellation.isCancelled { throw MediaError.interrupted }
                let range = point.position..<min(size, point.position + read)
                try source.prefetch(range)
                let bytes = try source.bytes(at: range.lowerBound, count: Int(range.count))
                guard let cluster = MatroskaClusters.cluster(in: bytes, at: 0, whole: false) else { return nil }
                if let block = cluster.blocks.first(where: { $0.track == numbers[stream] && $0.keyframe && $0.timecode == point.timestamp }) {
                    found.append(IndexEntry(position: point.position, size: Int64(block.position + block.size), time: point.time,
                                            timestamp: point.timestamp, decodeTime: point.decodeTime, isKeyframe: true))
                    break
                }
                guard range.upperBound < size, read < MatroskaKeyFrames.largestWindow else { return nil }
                read *= 4 // the key frame runs past this read
            }
        }
        return found
    }
}
