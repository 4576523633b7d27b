import ByteSources
import Containers
import FFmpeg
import Foundation

/// No index: a window's bytes are estimated from the overall bit rate (an MPEG-TS; any container
/// whose index does not reach the window), and a thumbnail's frame is found by libavformat's seek.
struct BitRateIndex: SeekIndex {
    /// Margin added to the estimate: bit rates vary across a file.
    static let margin = 1.25

    let context: FormatContext
    let source: any MediaSource
    /// A Matroska file known to have no Cues, where a player reads every Cluster up to a time.
    var noCues = false
    /// How the duration is found where the container does not state it (a Matroska file's tail).
    var foundDuration: () throws -> Double? = { nil }

    init(_ context: FormatContext, source: any MediaSource) {
        (self.context, self.source) = (context, source)
    }

    func window(_ query: WindowQuery) throws -> SeekWindow {
        let (start, seconds) = (query.start, query.seconds)
        guard let size = try source.size() else {
            throw MediaError.noTimeline(
                input: source.input,
                detail: "\(context.formatName) with no index and no known size here: "
                    + "nothing tells which bytes hold \(start) s, so no window can be prefetched")
        }
        if noCues, start > 0 {
            throw MediaError.noTimeline(
                input: source.input,
                detail: "\(context.formatName) without Cues: a player seeks in it by "
                    + "reading every Cluster before the time, so no window at \(start) s can be prefetched "
                    + "(one from the start can: --start 0)")
        }
        let duration = try context.durationSeconds ?? foundDuration()
        let bitRate = context.bitRate ?? duration.map { Int64(Double(size * 8) / max($0, 0.001)) }
        guard let bitRate, bitRate > 0 else {
            throw MediaError.noTimeline(
                input: source.input,
                detail: "\(context.formatName) with no index, no duration and no bit "
                    + "rate here: nothing tells which bytes hold \(start) s, so no window can be prefetched")
        }
        let bytesPerSecond = Double(bitRate) / 8
        let lower = min(size, Int64(start * bytesPerSecond))
        let upper = min(size, lower + Int64(seconds * bytesPerSecond * BitRateIndex.margin))
        let why =
            "\(context.formatName) has \(noCues ? "no Cues" : "no usable index here"): "
            + "the byte window is estimated from the bit rate "
            + "(\(bitRate / 1000) kb/s, +\(Int((BitRateIndex.margin - 1) * 100))%)"
        return .estimated(lower..<max(lower, upper), why: why)
    }

    /// The duration and start time come from the first packets.
    func learnTimes(of video: Int, timesGiven: Bool) throws { try context.findStreamInfo() }

    /// None listed: each frame is found by seeking to its time.
    func keyFrames(_ query: KeyFrameQuery) throws -> KeyFrameLookup {
        .found(KeyFrames(listed: [], at: query.times))
    }
}
