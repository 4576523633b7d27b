import ByteSources
import Containers
import FFmpeg

/// A Matroska file without Cues: libavformat's index holds the key frames of the Clusters it has
/// read, and a player seeks by reading every Cluster before the time. A window is placed by those
/// key frames only where they reach it (or it runs to the end of the file); thumbnails' key frames
/// are found where the Clusters place their times (`MatroskaKeyFrames.index`).
struct MatroskaClusterIndex: MatroskaSeeking {
    let context: FormatContext
    let source: any MediaSource
    let head: MatroskaHead?

    init(_ context: FormatContext, source: any MediaSource, head: MatroskaHead) {
        (self.context, self.source, self.head) = (context, source, head)
    }

    func window(_ query: WindowQuery) throws -> SeekWindow {
        guard let size = try source.size(), let points = PointWindow.libavformatPoints(context, streams: query.streams),
            let last = points.last, last.decodeTime >= query.from
        else { return try bitRate.window(query) }
        // Past the last key frame read, a window runs to the end of the file: right only for a
        // window that reaches it.
        let duration = try context.durationSeconds ?? MatroskaTail.duration(of: context, source: source)
        if last.decodeTime < query.to, duration.map({ query.to < context.startTime + $0 }) ?? true {
            return try bitRate.window(query)
        }
        guard
            let window = PointWindow(
                PointWindow.seekTimes(points), from: query.from, to: query.to, size: size, startTime: context.startTime,
                placedBy: "the clusters whose key frames libavformat has read (no Cues) place")
        else { return try bitRate.window(query) }
        return .points(window.noted(context.formatName + ": "))
    }

    func keyFrames(_ query: KeyFrameQuery) throws -> KeyFrameLookup {
        .found(try clusterKeyFrames(query) ?? KeyFrames(listed: [], at: query.times))
    }

    /// A seek reads its way through the Clusters.
    func placesSeeks(of video: Int) -> Bool { false }
}
