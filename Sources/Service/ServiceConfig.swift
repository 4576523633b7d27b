import ByteCache
import RangeFetch

/// How `mprobe serve` runs: where it listens, who may use it, which origins it may fetch.
public struct ServiceConfig: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Required as `Authorization: Bearer TOKEN` (or `?token=` where players need it) on every
    /// endpoint but `/healthz`; nil lets every local client in.
    public var token: String?
    /// `HOST[:PORT]` origins that may be fetched although they are internal addresses.
    public var allowHosts: [String] = []
    public var cacheDirectory: String
    public var maxCacheBytes = ByteCache.defaultMaxBytes
    /// Jobs run at once.
    public var workers = 2
    public var fetchOptions = FetchOptions()
    public var limits = ServiceLimits()

    public init(cacheDirectory: String) {
        self.cacheDirectory = cacheDirectory
    }
}

/// Bounds on what one client can make the service do; each is a clear 4xx or 503 when passed.
public struct ServiceLimits: Sendable {
    public var maxURLLength = 8192
    public var maxRequestBody = 1 << 20
    /// Jobs waiting to run; more are refused with 503 until some have run.
    public var maxQueuedJobs = 1000
    /// URLs in one job.
    public var maxItemsPerJob = 100
    /// Thumbnails one job may make (over all its URLs).
    public var maxThumbnailsPerJob = 2000
    /// Probes (and cache ranges, which open the media) running at once; more get 503. Each holds
    /// the demuxer's index of its file, hundreds of MB for a day-long one.
    public var maxConcurrentProbes = 4
    /// Proxied responses streaming at once; more get 503.
    public var maxStreams = 256
    public var maxConnections = 512
    /// Finished jobs kept, the newest; older ones (and their files) are removed.
    public var keptFinishedJobs = 1000
    /// How long a finished job is kept at most, in seconds (7 days).
    public var keptJobSeconds: Double = 7 * 24 * 3600

    public init() {}
}
