import ByteSources
import Containers
import FFmpeg
import Support

/// Where libavformat's Matroska demuxer and the Matroska parsers meet: the parsers read bytes and
/// return values; this reads the demuxer's streams and clock for them, and gives the demuxer's
/// index what they found.
extension MatroskaHead {
    /// The head of a Matroska `context`; nil for a context of another format.
    init?(_ context: FormatContext, source: any MediaSource) throws {
        guard context.formatName.hasPrefix("matroska"), let head = try MatroskaHead(source: source) else { return nil }
        self = head
    }

    /// What of a Matroska file's head is read to open it (`OpenedInput.headRead`), not a readahead
    /// window doubled past what the analysis reads (0.5 MB of its first Cluster for a prefetch of
    /// 3.2 MB at 300 s); nil for a source that does not start like Matroska.
    static func headRead(of source: any MediaSource) -> Int64? {
        startsAMatroskaFile(source) ? OpenedInput.headRead : nil
    }

    /// The TrackNumber of libavformat's `stream`.
    func trackNumber(ofStream stream: Int, in context: FormatContext) -> Int64? {
        trackNumber(
            ofStream: stream,
            mediaStreams: (0..<context.streamCount).filter { context.kind(ofStream: $0) != .attachment })
    }
}

extension MatroskaTail {
    /// For a Matroska `context` that states no duration: seconds from its start to its last block.
    /// Nil for other containers, or when no Cluster is found.
    static func duration(of context: FormatContext, source: any MediaSource) throws -> Double? {
        guard context.formatName.hasPrefix("matroska"), context.durationSeconds == nil, context.streamCount > 0 else {
            return nil
        }
        // The streams' time base is TimecodeScale ÷ 10⁹: the seconds of one timecode unit.
        return try duration(source: source, tick: context.seconds(1, stream: 0), start: context.startTime)
    }
}

extension StreamClock {
    /// Stream `index`'s clock in `context`.
    init(_ context: FormatContext, stream index: Int) {
        self.init(timestamp: { context.timestamp($0, stream: index) }, seconds: { context.seconds($0, stream: index) })
    }
}

extension MatroskaKeyFrames {
    /// For a Matroska `context` without Cues: `index(head:track:...)` for its `stream`, each key
    /// frame also given to libavformat's index. Nil for other files, or when a time could not be
    /// found within its reads.
    static func index(
        _ context: FormatContext, head: MatroskaHead?, stream: Int, source: any MediaSource, times: [Double],
        end: Double,
        connections: Int, cancellation: Cancellation
    ) throws -> [IndexEntry]? {
        guard let head, let track = head.trackNumber(ofStream: stream, in: context),
            let found = try index(
                head: head, track: track, clock: StreamClock(context, stream: stream), source: source,
                times: times, end: end, connections: connections, cancellation: cancellation)
        else { return nil }
        for (_, cluster) in found {
            context.addKeyFrame(stream: stream, position: cluster.position, timestamp: cluster.timestamp)
        }
        return found.map(\.entry)
    }

    /// For a Matroska `context` with Cues: `fromCues(track:cuePoints:...)` over the Cue points
    /// libavformat read for `stream`, the key frames found off their Cue's time given to its index.
    static func fromCues(
        _ context: FormatContext, head: MatroskaHead?, stream: Int, source: any MediaSource, times: [Double],
        connections: Int, cancellation: Cancellation
    ) throws -> CueKeyFrames? {
        guard let head, head.cues == true, head.firstCluster != nil,
            let track = head.trackNumber(ofStream: stream, in: context),
            try source.size() != nil, let duration = context.durationSeconds
        else { return nil }
        // libavformat reads the Cues on its first seek; one that fails is said by the seeks after.
        do { try context.seek(seconds: context.startTime) } catch { return nil }
        var relocated: [FoundKeyFrame] = []
        // Given to the index even when the Cues do not serve (the seeks that follow use them).
        defer {
            for key in relocated {
                context.addKeyFrame(stream: stream, position: key.position, timestamp: key.timestamp)
            }
        }
        return try fromCues(
            track: track, cuePoints: context.positionedPoints(stream: stream), start: context.startTime,
            duration: duration, clock: StreamClock(context, stream: stream), source: source,
            times: times, connections: connections, cancellation: cancellation, relocated: &relocated)
    }
}
