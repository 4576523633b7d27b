import CFFmpeg
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

    public func probe(_ input: String, session: MediaSession) throws -> ProbeResult {
        let started = Date()
        let source = try session.open(input)
        let before = source.counters
        let layout = try walker.walk(source) // first, so its first request also learns the size
        let size = try source.size()
        let context: FormatContext
        do {
            context = try FormatContext(source: source, findStreamInfo: !fast, cancellation: session.cancellation)
        } catch let error as FFmpegError {
            throw Prober.mediaError(error, input: input, layout: layout)
        }
        var result = context.describe(input: input)
        result.size = size
        result.layout = layout
        result.warnings = source.warnings + (layout?.damaged.map { ["\(input): \($0)"] } ?? [])
        result.fetch = source.counters.since(before)
        result.seconds = Date().timeIntervalSince(started)
        return result
    }

    private static func mediaError(_ error: FFmpegError, input: String, layout: MP4Layout?) -> MediaError {
        if let layout, layout.moov == nil {
            // libavformat could not use an ISO-BMFF file without a moov (some HEIF images it can):
            // say what is missing instead of FFmpeg's generic error.
            return .noMoov(input: input, detail: layout.damaged ?? "boxes: " + layout.boxes.map(\.type).joined(separator: ","))
        }
        if error.code == mp_averror_invaliddata() && error.function == "avformat_open_input" && layout == nil {
            return .notMedia(input: input)
        }
        let detail = layout?.damaged.map { "\($0); " } ?? ""
        return .malformed(input: input, detail: detail + error.description)
    }
}

extension SourceCounters {
    /// What was counted after `earlier`.
    func since(_ earlier: SourceCounters) -> SourceCounters {
        var c = SourceCounters()
        c.requests = requests - earlier.requests
        c.connections = connections - earlier.connections
        c.bytesFetched = bytesFetched - earlier.bytesFetched
        c.bytesFromCache = bytesFromCache - earlier.bytesFromCache
        return c
    }
}
