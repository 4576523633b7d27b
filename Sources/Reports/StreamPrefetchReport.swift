import MediaKit

/// An HLS or DASH prefetch as `mprobe prefetch --json` shows it (the shape is in docs/streaming.md).
public enum StreamPrefetchReport {
    public static func json(_ r: StreamPrefetchResult) -> JSON {
        .object([
            ("url", .string(r.input)), ("format", .string(r.format)), ("start", .double(r.start)),
            ("seconds", .double(r.seconds)),
            (
                "variant",
                .object([
                    ("bandwidth", .optional(r.bandwidth.map(Int64.init))),
                    ("width", .optional(r.width.map(Int64.init))),
                    ("height", .optional(r.height.map(Int64.init))),
                ])
            ),
            ("fetched", .bool(!r.planOnly)),
            (
                "playlists",
                .array(
                    r.windows.map { w in
                        .object([
                            ("role", .string(w.role)), ("uri", .string(w.playlist)),
                            ("bandwidth", .optional(w.bandwidth.map(Int64.init))),
                            ("first", .double(PrefetchReport.ms(w.first))), ("end", .double(PrefetchReport.ms(w.end))),
                            ("segments", .int(w.segments)),
                            (
                                "parts",
                                .array(
                                    w.parts.map { part in
                                        .object([
                                            ("uri", .string(part.uri)),
                                            (
                                                "range",
                                                part.range.map {
                                                    .object([
                                                        ("start", .int($0.lowerBound)), ("end", .int($0.upperBound)),
                                                    ])
                                                } ?? .null
                                            ),
                                            ("why", .string(part.why)),
                                            ("for", .array(part.players.map(JSON.string))),
                                        ])
                                    })
                            ),
                            (
                                "buffered",
                                .array(
                                    w.buffered.map {
                                        .object([
                                            ("start", .double(PrefetchReport.ms($0.lowerBound))),
                                            ("end", .double(PrefetchReport.ms($0.upperBound))),
                                        ])
                                    })
                            ),
                        ])
                    })
            ),
            (
                "fetch",
                .object([
                    ("requests", .int(r.fetched.requests)), ("bytes_fetched", .int(r.fetched.bytesFetched)),
                    ("seconds", .double(PrefetchReport.ms(r.elapsed))),
                ])
            ),
        ])
    }
}
