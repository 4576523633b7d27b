import MediaKit

/// A decoded window as `mprobe check --json` shows it.
public enum CheckReport {
    public static func json(_ r: Checker.Result) -> JSON {
        .object([
            ("url", .string(r.input)), ("start", .double(r.start)), ("seconds", .double(r.seconds)),
            ("ok", .bool(r.ok)),
            (
                "tracks",
                .array(
                    r.tracks.map { t in
                        .object([
                            ("index", .int(t.index)), ("type", .string(t.kind.rawValue)), ("codec", .string(t.codec)),
                            ("frames", .int(t.frames)), ("packets", .int(t.packets)),
                            ("last_time", t.lastTime.map { .double(PrefetchReport.ms($0)) } ?? .null),
                            ("complete", .bool(t.complete)), ("errors", .array(t.errors.map { .string($0) })),
                        ])
                    })
            ),
            ("fetch", .object([("requests", .int(r.fetch.requests)), ("bytes_fetched", .int(r.fetch.bytesFetched))])),
        ])
    }
}
