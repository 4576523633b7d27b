import ByteSources
import Containers
import FFmpeg

/// Where libavformat's MPEG-TS demuxer and the tail's timestamps meet: a probe analyses the
/// streams from the head alone (`FormatContext.headAnalysisBytes`) and takes the durations from
/// the tail, as libavformat would have set them from its last 250,000 bytes.
extension TransportStreamTail {
    /// The context `open` gives with a head analysis (`open(1)`), opened again over four and
    /// sixteen times the head while a stream is left undescribed (audio after a large first key
    /// frame), then as ffprobe would (`open(0)`: over the bytes already fetched and those after
    /// them) if one still is, or when the tail gave no durations.
    static func analysed(by open: (Int64) throws -> FormatContext, source: any MediaSource) throws -> FormatContext {
        var context = try open(1)
        for scale: Int64 in [4, 16] where context.analysedFromTheHead && context.leavesAStreamUndescribed {
            context = try open(scale)
        }
        if try context.analysedFromTheHead && context.leavesAStreamUndescribed
            || context.durationsLeftToTheTail && !apply(to: context, source: source)
        {
            context = try open(0)
        }
        return context
    }

    /// Sets the durations of a context whose analysis left them to the tail
    /// (`FormatContext.durationsLeftToTheTail`). False when its streams are not what the tail's
    /// reading follows (a clock other than 90 kHz) or no timestamp was found.
    static func apply(to context: FormatContext, source: any MediaSource) throws -> Bool {
        var streams: [Stream] = []
        for index in 0..<context.streamCount {
            guard let timing = context.timing(ofStream: index), let start = timing.start else { continue }
            guard timing.timeBase == (1, 90_000) else { return false }
            let (num, den) = timing.frame
            streams.append(
                Stream(
                    index: index, pid: Int(timing.id), start: start,
                    frame: num > 0 && den > 0 ? num * 90_000 / den : 0,
                    primary: timing.kind == .video || timing.kind == .audio))
        }
        guard let size = try source.size(), let found = try durations(of: streams, source: source)
        else {
            return false
        }
        for (index, duration) in found.streams { context.setDuration(duration, stream: index) }
        context.setDuration(seconds: found.seconds, bytes: size)
        return true
    }
}
