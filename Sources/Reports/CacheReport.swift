import Caching
import MediaKit

/// The cache as `mprobe cache ... --json` and the service's `/v1/cache` endpoints show it.
public enum CacheReport {
    public static func stats(_ s: CacheStats, directory: String) -> JSON {
        .object([
            ("directory", .string(directory)), ("resources", .int(s.resources)),
            ("bytes", .int(s.storedBytes)), ("max_bytes", .int(s.maxBytes)),
            ("hits", .int(s.hits)), ("misses", .int(s.misses)),
            ("bytes_from_cache", .int(s.bytesFromCache)), ("bytes_fetched", .int(s.bytesFetched)),
        ])
    }

    public static func resources(_ resources: [CachedResource]) -> JSON {
        .array(
            resources.map { r in
                .object([
                    ("url", .string(r.url)), ("key", .string(r.key)), ("size", .optional(r.size)),
                    ("stored_bytes", .int(r.storedBytes)), ("ranges", .int(r.ranges.ranges.count)),
                    ("etag", .optional(r.validators.etag)), ("last_modified", .optional(r.validators.lastModified)),
                    ("content_type", .optional(r.contentType)),
                    ("created", .double(r.created)), ("last_access", .double(r.lastAccess)),
                ])
            })
    }

    /// `{"url", "size", "ranges": [{"start", "end"}], "tracks": [{"index", "type", "buffered"}],
    /// "duration", "moov": {"offset", "size"}}`: ends exclusive, times in seconds; `tracks`,
    /// `duration` and `moov` are null when the header is not cached (or does not say).
    /// `stream`: for a playlist or manifest, what of each variant and rendition is cached (null otherwise).
    public static func ranges(
        url: String, resource: CachedResource?, media: CachedMedia?, stream: [StreamBuffer]? = nil
    ) -> JSON {
        .object([
            ("url", .string(url)), ("size", .optional(resource?.size)),
            ("ranges", PrefetchReport.rangesJSON(resource?.ranges.ranges ?? [])),
            (
                "tracks",
                media.map {
                    .array(
                        $0.tracks.map { t in
                            .object([
                                ("index", .int(t.index)), ("type", .string(t.kind.rawValue)),
                                ("buffered", PrefetchReport.timeRangesJSON(t.ranges)),
                            ])
                        })
                } ?? .null
            ),
            ("duration", media?.duration.map { .double(PrefetchReport.ms($0)) } ?? .null),
            (
                "moov",
                media?.moov.map { .object([("offset", .int($0.lowerBound)), ("size", .int(Int64($0.count)))]) } ?? .null
            ),
            (
                "stream",
                stream.map {
                    .array(
                        $0.map { b in
                            .object([
                                ("uri", .string(b.uri)), ("role", .string(b.role)),
                                ("bandwidth", .optional(b.bandwidth.map(Int64.init))),
                                ("duration", .double(PrefetchReport.ms(b.duration))),
                                ("buffered", PrefetchReport.timeRangesJSON(b.buffered)),
                            ])
                        })
                } ?? .null
            ),
        ])
    }
}
