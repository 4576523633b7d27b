import Caching
import RangeFetch

/// How `mprobe serve` runs: where it listens, who may use it, which origins it may fetch.
public struct ServiceConfig: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Required as `Authorization: Bearer TOKEN` (or `?token=` where players need it) on every
    /// endpoint but `/healthz`; nil lets every local client in.
    public var token: String?
    /// Names besides the listen address that requests may give as `Host` (`NAME` for any port,
    /// `NAME:PORT`): what a front such as nginx passes on. Any other `Host` is answered 421.
    public var publicHosts: [String] = []
    /// Origins (`https://app.example.com`) whose pages may play media through the proxy and read
    /// thumbnail files; pages of every other origin are refused everywhere but the open endpoints.
    public var allowOrigins: [String] = []
    /// `HOST[:PORT]` origins that may be fetched although they are internal addresses.
    public var allowHosts: [String] = []
    public var cacheDirectory: String
    public var maxCacheBytes = ByteCache.defaultMaxBytes
    /// Jobs run at once.
    public var workers = 2
    /// Where jobs are kept: nil for `jobs.sqlite` in the cache directory (one machine), or a
    /// PostgreSQL URL that every node of a cluster names (`postgres://user@host/db`).
    public var jobsURL: String?
    /// How long a running job stays held without its worker renewing the lease (a third of it
    /// between renewals): how soon the jobs of a node that died run elsewhere.
    public var jobLeaseSeconds: Double = 30
    /// Runs of one job at most: a job whose worker is lost this many times is failed.
    public var maxJobAttempts = 3
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
    /// A job's request body and its stored result, at most: what each job costs the store and
    /// every listing (a larger body is 413; a larger result fails the job, saying so).
    public var maxJobRequestBytes = 256 << 10
    public var maxJobResultBytes = 2 << 20
    /// A job's files kept in a shared job store (PostgreSQL), at most, all items together: what one
    /// thumbnail job costs the database (more fails the job, saying so).
    public var maxStoredJobFileBytes = 64 << 20
    /// Bytes of jobs one page of `GET /v1/jobs` holds, at most (at least one job, which the two
    /// bounds above keep small); the rest is on the next page.
    public var maxListingBytes = 2 << 20
    /// Thumbnails one job may make (over all its URLs).
    public var maxThumbnailsPerJob = 2000
    /// Probes (and cache ranges, which open the media) running at once; more get 503. Each holds
    /// the demuxer's index of its file, hundreds of MB for a day-long one.
    public var maxConcurrentProbes = 4
    /// Playlists and manifests being read and rewritten at once; more get 503. A 16 MiB playlist
    /// takes about 250 MB to rewrite.
    public var maxConcurrentPlaylists = 4
    /// Proxied responses streaming at once; more get 503.
    public var maxStreams = 256
    /// Open connections at once (idle keep-alive players, slow clients): each costs a descriptor and
    /// a few KiB, no thread. More get 503. The process needs a descriptor for each, and more for
    /// the cached ranges being sent.
    public var maxConnections = 16_384
    /// Connections one client address may hold at once; 0 for no limit (behind a front such as
    /// nginx every request comes from its address).
    public var maxConnectionsPerClient = 64
    /// Seconds a new connection may take to send its first request's headers, and a request its
    /// body (slow ones are closed). A kept-alive connection has 60 for its next request's headers.
    public var headerTimeout: Double = 10
    public var bodyTimeout: Double = 30
    /// Finished jobs kept, the newest; older ones (and their files) are removed.
    public var keptFinishedJobs = 1000
    /// How long a finished job is kept at most, in seconds (7 days).
    public var keptJobSeconds: Double = 7 * 24 * 3600

    public init() {}
}
