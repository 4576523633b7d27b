import ByteSources
import Containers
import FFmpeg

/// An MP3's table of contents (its Xing or VBRI header, which libavformat's index holds by
/// position): a hundred points across the duration, with the bytes spread evenly enough between
/// them to place a window's end between two (`PointWindow`'s proportional points); the
/// prefetch walks the frames from the window's start to its real end (`MPEGAudioFrames`). An MP3
/// without one has its window estimated from the bit rate.
struct MP3TableOfContents: SeekIndex {
    let context: FormatContext
    let source: any MediaSource
    private var bitRate: BitRateIndex { BitRateIndex(context, source: source) }

    init(_ context: FormatContext, source: any MediaSource) {
        (self.context, self.source) = (context, source)
    }

    func window(_ query: WindowQuery) throws -> SeekWindow {
        guard let size = try source.size(), let points = PointWindow.libavformatPoints(context, streams: query.streams),
            let last = points.last, last.decodeTime >= query.from,
            let window = PointWindow(
                PointWindow.seekTimes(points), from: query.from, to: query.to, size: size,
                startTime: context.startTime, placedBy: "the stretch its table of contents places", proportional: true)
        else { return try bitRate.window(query) }
        return .points(window.noted(context.formatName + ": "))
    }

    func learnTimes(of video: Int, timesGiven: Bool) throws {
        try bitRate.learnTimes(of: video, timesGiven: timesGiven)
    }

    /// Its pictures are cover art, found by seeking.
    func keyFrames(_ query: KeyFrameQuery) throws -> KeyFrameLookup { try bitRate.keyFrames(query) }
}
