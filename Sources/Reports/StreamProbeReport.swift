import MediaKit

/// An HLS or DASH stream's probe as `mprobe probe --json` shows it (the shape is in docs/streaming.md).
public enum StreamProbeReport {
    public static func json(_ r: StreamProbeResult) -> JSON {
        .object([
            ("url", .string(r.input)),
            ("format", .string(r.format)),
            ("master", .bool(r.isMaster)),
            ("live", .bool(r.live)),
            ("duration", r.duration.map { .double(ProbeReport.round6($0)) } ?? .null),
            ("encryption", .array(r.encryption.map { .string($0) })),
            ("variants", .array(r.variants.map(variant))),
            ("renditions", .array(r.renditions.map(rendition))),
            (
                "fetch",
                .object([
                    ("requests", .int(r.fetch.requests)), ("bytes_fetched", .int(r.fetch.bytesFetched)),
                    ("bytes_from_cache", .int(r.fetch.bytesFromCache)),
                    ("seconds", .double(ProbeReport.round6(r.seconds))),
                ])
            ),
        ])
    }

    private static func variant(_ v: StreamProbeResult.Variant) -> JSON {
        .object([
            ("uri", .string(v.uri)), ("bandwidth", .optional(v.bandwidth.map(Int64.init))),
            ("average_bandwidth", .optional(v.averageBandwidth.map(Int64.init))),
            ("width", .optional(v.width.map(Int64.init))), ("height", .optional(v.height.map(Int64.init))),
            ("codecs", .optional(v.codecs)), ("frame_rate", v.frameRate.map { .double($0) } ?? .null),
            ("audio_group", .optional(v.audioGroup)), ("subtitles_group", .optional(v.subtitlesGroup)),
            ("playlist", playlist(v.playlist)),
            ("first_segment", v.firstSegment.map(ProbeReport.json) ?? .null),
            ("note", .optional(v.note)),
        ])
    }

    private static func rendition(_ r: StreamProbeResult.Rendition) -> JSON {
        .object([
            ("type", .string(r.type)), ("group_id", .string(r.groupID)), ("name", .optional(r.name)),
            ("language", .optional(r.language)), ("default", .bool(r.isDefault)), ("channels", .optional(r.channels)),
            ("uri", .optional(r.uri)), ("playlist", r.playlist.map(playlist) ?? .null),
            ("first_segment", r.firstSegment.map(ProbeReport.json) ?? .null),
        ])
    }

    private static func playlist(_ p: StreamPlaylistInfo) -> JSON {
        .object([
            ("live", .bool(p.live)), ("duration", .double(ProbeReport.round6(p.duration))),
            ("segments", .int(p.segments)),
            ("target_duration", p.targetDuration.map { .double($0) } ?? .null),
            ("encryption", .array(p.encryption.map { .string($0) })), ("byte_ranges", .bool(p.byteRanges)),
            ("init_section", .bool(p.initSection)),
        ])
    }
}
