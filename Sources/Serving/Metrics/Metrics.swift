import Foundation
import Synchronization

/// The service's counters, shown on `/metrics` in the Prometheus text format and used by the
/// dashboard. Counters only grow; gauges (cache size, jobs by state, connections) are read when
/// the page is made.
public final class Metrics: Sendable {
    /// Upper bounds (seconds) of the job duration histogram's buckets.
    static let durationBuckets: [Double] = [0.1, 0.5, 1, 5, 15, 60, 300, 1800]

    private struct State {
        /// Requests by (route, status).
        var requests: [RouteStatus: Int64] = [:]
        /// Body bytes sent by the range proxy.
        var bytesServed: Int64 = 0
        /// Finished jobs' durations: counts per bucket (cumulative at export), sum and count.
        var durationCounts = [Int64](repeating: 0, count: Metrics.durationBuckets.count)
        var durationSum: Double = 0
        var durationCount: Int64 = 0
        /// Calls to the job store by the runner, and the seconds they took, by operation.
        var storeCalls: [String: (count: Int64, seconds: Double)] = [:]
    }

    struct RouteStatus: Hashable {
        let route: String
        let status: Int
    }

    private let state = Mutex(State())

    public init() {}

    func countRequest(route: String, status: Int, proxiedBytes: Int64) {
        state.withLock {
            $0.requests[RouteStatus(route: route, status: status), default: 0] += 1
            $0.bytesServed += proxiedBytes
        }
    }

    func countJob(seconds: Double) {
        state.withLock { s in
            if let bucket = Metrics.durationBuckets.firstIndex(where: { seconds <= $0 }) {
                s.durationCounts[bucket] += 1
            }
            s.durationSum += seconds
            s.durationCount += 1
        }
    }

    /// One call of the job runner to its store: `claim` (a job taken), `claim_empty`, `renew`,
    /// `progress`, `finish`. What the queue itself costs a job, apart from the job's work.
    func countStoreCall(_ operation: String, seconds: Double) {
        state.withLock { s in
            let now = s.storeCalls[operation] ?? (0, 0)
            s.storeCalls[operation] = (now.count + 1, now.seconds + seconds)
        }
    }

    var bytesServed: Int64 { state.withLock { $0.bytesServed } }

    /// What `/metrics` shows besides the counters kept here.
    struct Gauges {
        var bytesFromOrigins: Int64
        var cacheHits: Int64
        var cacheMisses: Int64
        var cacheBytes: Int64
        var cacheMaxBytes: Int64
        var cacheResources: Int
        var jobs: [(state: String, count: Int)]
        var originConnections: Int

        /// Share of cache reads that were hits (0 before any read).
        var hitRatio: Double {
            cacheHits + cacheMisses > 0 ? Double(cacheHits) / Double(cacheHits + cacheMisses) : 0
        }
    }

    /// The Prometheus text exposition (version 0.0.4).
    func exposition(_ gauges: Gauges) -> String {
        let s = state.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("mprobe_http_requests_total", "counter", "HTTP requests answered, by route and status.")
        for (key, count) in s.requests.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            out +=
                "mprobe_http_requests_total{route=\"\(Metrics.escape(key.route))\",status=\"\(key.status)\"} \(count)\n"
        }
        family("mprobe_origin_bytes_total", "counter", "Body bytes received from origins.")
        out += "mprobe_origin_bytes_total \(gauges.bytesFromOrigins)\n"
        family("mprobe_proxy_bytes_total", "counter", "Body bytes the range proxy sent to clients.")
        out += "mprobe_proxy_bytes_total \(s.bytesServed)\n"
        family("mprobe_cache_reads_total", "counter", "Cache reads, by result (hit: served without the origin).")
        out += "mprobe_cache_reads_total{result=\"hit\"} \(gauges.cacheHits)\n"
        out += "mprobe_cache_reads_total{result=\"miss\"} \(gauges.cacheMisses)\n"
        family("mprobe_cache_hit_ratio", "gauge", "Share of cache reads that were hits.")
        out += "mprobe_cache_hit_ratio \(gauges.hitRatio)\n"
        family("mprobe_cache_bytes", "gauge", "Bytes stored in the cache.")
        out += "mprobe_cache_bytes \(gauges.cacheBytes)\n"
        family("mprobe_cache_max_bytes", "gauge", "The cache's size limit.")
        out += "mprobe_cache_max_bytes \(gauges.cacheMaxBytes)\n"
        family("mprobe_cache_resources", "gauge", "Resources in the cache.")
        out += "mprobe_cache_resources \(gauges.cacheResources)\n"
        family("mprobe_jobs", "gauge", "Jobs by state.")
        for (state, count) in gauges.jobs { out += "mprobe_jobs{state=\"\(state)\"} \(count)\n" }
        family("mprobe_job_duration_seconds", "histogram", "How long finished jobs ran.")
        var cumulative: Int64 = 0
        for (bound, count) in zip(Metrics.durationBuckets, s.durationCounts) {
            cumulative += count
            out += "mprobe_job_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "mprobe_job_duration_seconds_bucket{le=\"+Inf\"} \(s.durationCount)\n"
        out += "mprobe_job_duration_seconds_sum \(s.durationSum)\n"
        out += "mprobe_job_duration_seconds_count \(s.durationCount)\n"
        family("mprobe_job_store_calls_total", "counter", "Calls of the job runner to the job store, by operation.")
        for (operation, call) in s.storeCalls.sorted(by: { $0.key < $1.key }) {
            out += "mprobe_job_store_calls_total{operation=\"\(operation)\"} \(call.count)\n"
        }
        family(
            "mprobe_job_store_seconds_total", "counter",
            "Seconds the job runner spent in job store calls, by operation.")
        for (operation, call) in s.storeCalls.sorted(by: { $0.key < $1.key }) {
            out += "mprobe_job_store_seconds_total{operation=\"\(operation)\"} \(call.seconds)\n"
        }
        family("mprobe_origin_connections", "gauge", "Connections to origins held open (idle and in use).")
        out += "mprobe_origin_connections \(gauges.originConnections)\n"
        return out
    }

    /// A label value with `\`, `"` and newlines escaped, as the format requires.
    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
