import URLSupport

/// How the fetcher talks to origins.
public struct FetchOptions: Sendable {
    /// Seconds to establish a connection, and seconds without progress before a transfer counts
    /// as stalled: no byte at all, or fewer than `lowSpeedLimit` bytes per second on average over
    /// that long (a server dripping bytes). Both end in `FetchError.timeout`; a timed-out request
    /// is retried once, so a stalled origin fails within about twice this.
    public var timeout: Double = 30
    /// Bytes per second below which a transfer makes no real progress (see `timeout`).
    public var lowSpeedLimit: Double = 1024
    public var maxRedirects = 10
    /// Extra CA bundle (PEM) for origins with a private CA; the system CAs are used otherwise.
    public var caCertPath: String?
    /// Retries of transient failures (dropped connections, 5xx, 429; timeouts only once), each
    /// resuming at the first byte not yet received.
    public var maxRetries = 3
    /// First backoff delay in seconds; doubles on each retry.
    public var retryDelay: Double = 0.25
    /// Longest wait a `Retry-After` header can impose before we give up on it.
    public var maxRetryAfter: Double = 30
    public var userAgent = "mprobe/0.1"
    /// Sent on every request to the origins they apply to (retries, parallel waves and redirect
    /// hops included; see `RequestHeader.forHop`): a header for a host pattern only where it
    /// matches; an unscoped `Authorization` or `Cookie` (or a URL's userinfo) only to the host
    /// first asked, unless `locationTrusted` (as `curl --location-trusted`).
    public var headers: [RequestHeader] = []
    public var locationTrusted = false
    /// Host patterns a header for another host pattern may follow a redirect to.
    public var trustedRedirectHosts: [String] = []
    /// A proxy for every request (`http://host:port`); nil leaves libcurl's `http_proxy`,
    /// `https_proxy` and `no_proxy` variables in charge.
    public var proxy: String?
    /// How URLs are shown in errors (secrets hidden).
    public var urlRules = URLRules.standard
    /// Decides, for every connection about to be opened (the first, and each redirect hop to a
    /// new host), whether the address it resolved to may be used: `(ip, port)`, the IP as a
    /// numeric literal. Nil allows every address. The service's guard against server-side request
    /// forgery: the check is on the address actually connected to, so DNS tricks do not pass it.
    /// With a policy no proxy is used (`proxy`, and `http_proxy` and the like, are ignored): the
    /// address connected to would be the proxy's.
    public var connectionPolicy: (@Sendable (_ ip: String, _ port: Int) -> Bool)?

    public init() {}
}

/// What one fetcher has done so far.
public struct FetchCounters: Sendable, Equatable {
    /// HTTP requests sent (retries and redirects each count).
    public var requests: Int64 = 0
    /// New TCP connections opened (a kept-alive connection is counted once).
    public var connections: Int64 = 0
    /// Body bytes received, including those dropped from error pages.
    public var bytesReceived: Int64 = 0
    public init() {}
}
