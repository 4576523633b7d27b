import ByteSources
import Containers
import FFmpeg

/// A Matroska file's Cues: each the Cluster a key frame starts, read by libavformat on its first
/// seek. A window runs from the Cluster at or before its start to the first at or after its end
/// (past the last Cue point, to the end of the file); thumbnails' key frames are read from the
/// heads of the Clusters the Cue points name (`MatroskaKeyFrames.fromCues`), or found where the
/// Clusters place them when the Cues do not.
struct MatroskaCuesIndex: MatroskaSeeking {
    let context: FormatContext
    let source: any MediaSource
    /// Nil where it could not be read: libavformat may still find Cues, through a SeekHead
    /// beyond the head read.
    let head: MatroskaHead?

    init(_ context: FormatContext, source: any MediaSource, head: MatroskaHead?) {
        (self.context, self.source, self.head) = (context, source, head)
    }

    func window(_ query: WindowQuery) throws -> SeekWindow {
        // Cues the head states place a window past their last point too: from there to the end.
        guard let size = try source.size(), let points = PointWindow.libavformatPoints(context, streams: query.streams),
            let last = points.last, last.decodeTime >= query.from || head?.cues == true,
            let window = PointWindow(
                PointWindow.seekTimes(points), from: query.from, to: query.to, size: size, startTime: context.startTime,
                placedBy: "the clusters its Cues place")
        else { return try bitRate.window(query) }
        return .points(window.noted(context.formatName + ": "))
    }

    /// The key frame each Cue point names, read from its Cluster's head; the key frames
    /// `--skip-black` may go on to are every Cue point's.
    func keyFrames(_ query: KeyFrameQuery) throws -> KeyFrameLookup {
        var (listed, candidates, notes): ([IndexEntry], [IndexEntry]?, [String]) = ([], nil, [])
        if let cues = try MatroskaKeyFrames.fromCues(
            context, head: head, stream: query.video, source: source, times: query.times,
            connections: query.connections, cancellation: query.cancellation)
        {
            (listed, candidates) = (cues.found, cues.points)
            if let cut = cues.cut { notes.append(Thumbnailer.cutNote(cut - query.offset)) }
        }
        // Cues lost with a cut, of another track, times off or outside the file.
        if listed.isEmpty, let clusters = try clusterKeyFrames(query) {
            listed = clusters.listed
            notes += clusters.notes
        }
        return .found(KeyFrames(listed: listed, at: query.times, candidates: candidates, notes: notes))
    }

    func placesSeeks(of video: Int) -> Bool {
        head.map { $0.cues == true } ?? !context.positionedPoints(stream: video).isEmpty
    }
}
