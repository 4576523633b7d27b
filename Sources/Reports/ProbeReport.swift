import FFmpeg
import MediaKit

/// The probe result as `mprobe probe --json` and `GET /v1/probe` show it.
public enum ProbeReport {
    public static func json(_ r: ProbeResult) -> JSON {
        let moov: JSON =
            r.layout?.moov.map { box in
                .object([
                    ("offset", .int(box.offset)), ("size", .int(box.size)),
                    ("position", .string(r.layout?.moovPosition?.rawValue ?? "front")),
                ])
            } ?? .null
        return .object([
            ("url", .string(r.input)),
            ("size", .optional(r.size)),
            ("format", .string(r.format)),
            ("format_long_name", .optional(r.formatLongName)),
            ("duration", r.duration.map { .double(round6($0)) } ?? .null),
            ("bit_rate", .optional(r.bitRate)),
            ("start_time", r.startTime.map { .double(round6($0)) } ?? .null),
            ("moov", moov),
            ("fragmented", .bool(r.layout?.fragmented ?? false)),
            ("tracks", .array(r.tracks.map(track))),
            ("tags", tags(r.tags)),
            (
                "fetch",
                .object([
                    ("requests", .int(r.fetch.requests)), ("bytes_fetched", .int(r.fetch.bytesFetched)),
                    ("bytes_from_cache", .int(r.fetch.bytesFromCache)), ("floor_bytes", .int(r.floorBytes)),
                    ("seconds", .double(round6(r.seconds))),
                ])
            ),
        ])
    }

    private static func track(_ t: TrackInfo) -> JSON {
        func int(_ v: Int?) -> JSON { v.map { .int($0) } ?? .null }
        func double(_ v: Double?) -> JSON { v.map { .double(round6($0)) } ?? .null }
        return .object([
            ("index", .int(t.index)), ("type", .string(t.kind.rawValue)), ("codec", .string(t.codec)),
            ("codec_long_name", .optional(t.codecLongName)), ("profile", .optional(t.profile)),
            ("width", int(t.width)), ("height", int(t.height)), ("frame_rate", double(t.frameRate)),
            ("pixel_format", .optional(t.pixelFormat)), ("sample_rate", int(t.sampleRate)),
            ("channels", int(t.channels)), ("channel_layout", .optional(t.channelLayout)),
            ("language", .optional(t.language)), ("bit_rate", .optional(t.bitRate)),
            ("duration", double(t.duration)), ("frames", .optional(t.frames)), ("rotation", double(t.rotation)),
            ("default", .bool(t.isDefault)), ("tags", tags(t.tags)),
        ])
    }

    private static func tags(_ tags: [(String, String)]) -> JSON {
        .object(tags.map { ($0.0, .string($0.1)) })
    }

    static func round6(_ v: Double) -> Double { (v * 1_000_000).rounded() / 1_000_000 }
}
