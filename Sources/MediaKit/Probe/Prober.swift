import ByteSources
import Containers
import FFmpeg
import Foundation
import RangeFetch

/// What `mprobe URL` found: a media file, or an HLS stream.
public enum ProbeOutcome: Sendable {
    case media(ProbeResult)
    case stream(StreamProbeResult)
}

/// Probes one input: for MP4/MOV the box walker fetches the moov first, then libavformat reads
/// the header (and, unless `fast`, the first packets) from the cache.
public struct Prober: Sendable {
    /// Header only: skip `avformat_find_stream_info`, so no sample data is read. Fields that need
    /// a decoded frame (pixel format for some codecs, frame rate of some containers) may be missing.
    public var fast = false
    public var walker = BoxWalker()

    public init() {}

    /// Runs on one version of the resource: if it changes while the header is read, the probe
    /// starts over on the new version (`MediaSession.onOneVersion`).
    public func probe(_ input: String, session: MediaSession) throws -> ProbeResult {
        try session.onOneVersion { try probeOnce(input, session: session) }
    }

    private func probeOnce(_ input: String, session: MediaSession) throws -> ProbeResult {
        let started = Date()
        return try describe(
            try OpenedInput.open(input, session: session, findStreamInfo: !fast, fragments: .first, walker: walker)
                .media(), started: started)
    }

    /// A media file's probe, or, when the input is an HLS playlist, `streams`' probe of the stream.
    public func probe(_ input: String, session: MediaSession, streams: StreamProber) throws -> ProbeOutcome {
        try session.onOneVersion {
            let started = Date()
            let source = try session.open(input)
            switch try OpenedInput.open(
                source: source, session: session, findStreamInfo: !fast, fragments: .first, walker: walker)
            {
            case .media(let opened):
                return .media(try describe(opened, started: started))
            case .stream:
                // The first request, which told, counts as the stream's.
                return .stream(try streams.probe(input, session: session, opened: source))
            }
        }
    }

    /// A probe of a stream's segment.
    func probe(segment: SpanSource, session: MediaSession) throws -> ProbeResult {
        let started = Date()
        return try describe(
            try StreamPlaylists.open(segment, session: session, findStreamInfo: !fast, fragments: .first),
            started: started)
    }

    private func describe(_ opened: OpenedInput, started: Date) throws -> ProbeResult {
        let described = opened.context.describe()
        var result = ProbeResult(
            input: opened.source.input, size: try opened.source.size(), format: described.format,
            formatLongName: described.formatLongName, duration: described.duration,
            bitRate: described.bitRate, startTime: described.startTime, layout: opened.layout,
            tracks: described.tracks, tags: described.tags, warnings: opened.warnings,
            fetch: SourceCounters(), seconds: 0)
        if let timeline = opened.fragmentTimeline { Prober.apply(timeline, to: &result, context: opened.context) }
        if result.duration == nil, let duration = try MatroskaTail.duration(of: opened.context, source: opened.source) {
            result.duration = duration
            if let size = result.size, duration > 0 {
                result.bitRate = Int64((Double(size) * 8 / duration).rounded(.down))
            }
        }
        result.fetch = opened.cost  // after the tail reads above
        result.floorBytes = opened.context.bytesRead.byteCount
        result.seconds = Date().timeIntervalSince(started)
        return result
    }

    /// Durations of a fragmented MP4 from its last fragment: libavformat read only the first, so its
    /// durations are that fragment's and its rates that fragment's averages. As libavformat does
    /// for fragments, a track's duration is where its last sample ends, counted from zero, and the
    /// file's is the longest track's. The frame rate is the last fragment's (no other read needed);
    /// the tracks' bit rates would need every fragment and are left out.
    private static func apply(_ timeline: FragmentTimeline, to result: inout ProbeResult, context: FormatContext) {
        for i in result.tracks.indices {
            result.tracks[i].bitRate = nil
            result.tracks[i].duration = nil
            guard let id = context.containerID(stream: result.tracks[i].index),
                let track = timeline.tracks.first(where: { Int64($0.id) == Int64(id) })
            else { continue }
            result.tracks[i].duration = track.seconds
            if result.tracks[i].kind == .video, let rate = track.lastRate { result.tracks[i].frameRate = rate }
        }
        result.duration = result.tracks.compactMap(\.duration).max()
        // libavformat read the first video key frame only: the other tracks' starts are their
        // first decode times, as it finds them when it reads every fragment.
        let starts = timeline.tracks.compactMap(\.startSeconds) + [result.startTime].compactMap { $0 }
        result.startTime = starts.min()
        result.bitRate = nil
        if let duration = result.duration, duration > 0, let size = result.size {
            result.bitRate = Int64((Double(size) * 8 / duration).rounded(.down))
        }
    }

    /// Every field `ffprobe -show_format -show_streams` reports, read the way `probe` reads
    /// (moov first, then libavformat from the cache), plus a decoder opened per stream as ffprobe
    /// opens one. `streams` chooses streams as ffprobe's `-select_streams` does; nil for all.
    public func details(_ input: String, session: MediaSession, streams: String? = nil) throws -> ProbeDetails {
        try session.onOneVersion {
            // ffprobe's answer: what libavformat makes of a cut file, not mprobe's stricter check.
            var walker = walker
            walker.acceptsACutMoov = true
            let opened = try OpenedInput.open(input, session: session, findStreamInfo: !fast, walker: walker).media()
            var details = try opened.context.details(input: opened.source.input, selecting: streams)
            details.warnings = opened.warnings
            return details
        }
    }
}
