import Reports

extension Metrics {
    /// `GET /v1/health`: the numbers of `/metrics` a person looks at, as JSON for the dashboard —
    /// the cache against its limit, its hit ratio, bytes from origins against bytes served, jobs by
    /// state. The same counters and gauges as `/metrics`, read at the same moment.
    func health(_ gauges: Gauges) -> JSON {
        .object([
            (
                "cache",
                .object([
                    ("bytes", .int(gauges.cacheBytes)), ("max_bytes", .int(gauges.cacheMaxBytes)),
                    ("resources", .int(gauges.cacheResources)), ("hits", .int(gauges.cacheHits)),
                    ("misses", .int(gauges.cacheMisses)), ("hit_ratio", .double(gauges.hitRatio)),
                ])
            ),
            ("origin_bytes", .int(gauges.bytesFromOrigins)), ("proxy_bytes", .int(bytesServed)),
            ("origin_connections", .int(gauges.originConnections)),
            ("jobs", .object(gauges.jobs.map { ($0.state, .int($0.count)) })),
        ])
    }
}
