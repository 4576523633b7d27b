import ByteSources
import Containers
import FFmpeg

/// An MPEG-TS whose analysis left its durations to its tail (`FormatContext.durationsLeftToTheTail`)
/// has them set from `TransportStreamTail`, as libavformat would have set them.
enum TransportStreamDurations {
    /// False when its streams are not what the tail's reading follows (a clock other than 90 kHz)
    /// or no timestamp was found: the caller analyses it as ffprobe does.
    static func apply(to context: FormatContext, source: any MediaSource) throws -> Bool {
        var streams: [TransportStreamTail.Stream] = []
        for index in 0..<context.streamCount {
            guard let timing = context.timing(ofStream: index), let start = timing.start else { continue }
            guard timing.timeBase == (1, 90_000) else { return false }
            let (num, den) = timing.frame
            streams.append(
                TransportStreamTail.Stream(
                    index: index, pid: Int(timing.id), start: start,
                    frame: num > 0 && den > 0 ? num * 90_000 / den : 0,
                    primary: timing.kind == .video || timing.kind == .audio))
        }
        guard let size = try source.size(), let found = try TransportStreamTail.durations(of: streams, source: source)
        else {
            return false
        }
        for (index, duration) in found.streams { context.setDuration(duration, stream: index) }
        context.setDuration(seconds: found.seconds, bytes: size)
        return true
    }
}
