import MediaKit

/// A prefetch (or its plan) as `mprobe prefetch --json` and a prefetch job's result show it.
public enum PrefetchReport {
    public static func rangesJSON(_ ranges: [Range<Int64>]) -> JSON {
        .array(ranges.map { .object([("start", .int($0.lowerBound)), ("end", .int($0.upperBound))]) })
    }

    public static func timeRangesJSON(_ ranges: [Range<Double>]) -> JSON {
        .array(ranges.map { .object([("start", .double(ms($0.lowerBound))), ("end", .double(ms($0.upperBound)))]) })
    }

    /// Milliseconds, and never -0.0 (a time a hair before the start rounds to 0, not "-0").
    public static func ms(_ t: Double) -> Double { (t * 1000).rounded() / 1000 + 0 }

    public static func json(_ o: PrefetchResult, planOnly: Bool) -> JSON {
        let p = o.plan
        return .object([
            ("url", .string(p.input)), ("start", .double(p.start)), ("seconds", .double(p.seconds)),
            ("estimated", .bool(p.estimated)), ("note", .optional(p.note)),
            ("floor_bytes", .int(p.floorBytes)),
            ("header_ranges", rangesJSON(p.headerRanges)),
            ("sample_ranges", rangesJSON(p.sampleRanges)),
            (
                "player_ranges",
                .array(
                    p.playerRanges.map {
                        .object([
                            ("start", .int($0.range.lowerBound)), ("end", .int($0.range.upperBound)),
                            ("players", .array($0.players.map { .string($0) })), ("why", .string($0.why)),
                        ])
                    })
            ),
            ("missing", rangesJSON(p.missing)), ("missing_bytes", .int(p.missingBytes)),
            ("fetched", .bool(!planOnly)),
            (
                "tracks",
                .array(
                    p.tracks.map { t in
                        let buffered = o.buffered.first { $0.index == t.index }?.ranges ?? []
                        return .object([
                            ("index", .int(t.index)), ("type", .string(t.kind.rawValue)),
                            ("samples", t.samples.map { .int($0) } ?? .null),
                            ("bytes", t.bytes.map { .int($0) } ?? .null),
                            ("first_time", t.firstTime.map { .double(ms($0)) } ?? .null),
                            ("last_time", t.lastTime.map { .double(ms($0)) } ?? .null),
                            ("buffered", timeRangesJSON(buffered)),
                        ])
                    })
            ),
            (
                "fetch",
                .object([
                    ("requests", .int(o.fetched.requests)), ("bytes_fetched", .int(o.fetched.bytesFetched)),
                    ("seconds", .double(ms(o.seconds))),
                ])
            ),
        ])
    }
}
