import Foundation
import MediaSource
import RangeFetch

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
        let opened = try OpenedInput(input, session: session, findStreamInfo: !fast, walker: walker)
        var result = opened.context.describe(input: opened.source.input)
        result.size = try opened.source.size()
        result.layout = opened.layout
        result.warnings = opened.warnings
        result.fetch = opened.cost
        result.floorBytes = opened.context.bytesRead.byteCount
        result.seconds = Date().timeIntervalSince(started)
        return result
    }

    /// Every field `ffprobe -show_format -show_streams` reports, read the way `probe` reads
    /// (moov first, then libavformat from the cache), plus a decoder opened per stream as ffprobe
    /// opens one. `streams` chooses streams as ffprobe's `-select_streams` does; nil for all.
    public func details(_ input: String, session: MediaSession, streams: String? = nil) throws -> ProbeDetails {
        try session.onOneVersion {
            let opened = try OpenedInput(input, session: session, findStreamInfo: !fast, walker: walker)
            var details = try opened.context.details(input: opened.source.input, selecting: streams)
            details.warnings = opened.warnings
            return details
        }
    }
}
