import ByteSources
import Caching
import FFmpeg
import Foundation
import MediaKit
import RangeFetch
import Reports
import Support
import Synchronization
import URLSupport

/// `mprobe serve`: the JSON API (probe, jobs, cache), the caching range proxy players play from,
/// `/healthz` and `/metrics`, in one process over one cache and one fetcher.
///
/// Library code: it prints nothing; each request's log line goes to `log`.
public final class Service: Sendable {
    public let config: ServiceConfig
    let cache: ByteCache
    let session: MediaSession
    let guardian: OriginGuard
    let token: AccessToken?
    /// `--allow-origin`s, as browsers write an `Origin`.
    private let allowedOrigins: Set<String>
    /// Made again with the bound port once listening (the config may ask for port 0).
    private let hostCheck: Mutex<HostCheck>
    let metrics = Metrics()
    let store: JobStore
    let runner: JobRunner
    /// Proxied responses streaming now, against `ServiceLimits.maxStreams`.
    let streams = Atomic<Int>(0)
    /// Origins that answered a probe of the range proxy a moment ago, by URL.
    let recentAnswers = RecentAnswers()
    /// `Service.mediaType` of the origins' `Content-Type`s, the routes of paths, and origin URLs
    /// found admissible (`checkOrigin`): asked again on every request of a player.
    let mediaTypes = Memo<String>(limit: 256)
    private let routesOfPaths = Memo<(Route, Route.Parameters)?>()
    private let admittedOrigins = Memo<Bool>()
    /// The playlist kind an origin's type and a URL's name declare (`declaredManifestKind`), and
    /// request targets as the log shows them (token left out, URLs redacted, escaped), by the
    /// target as sent: also asked on every request of a player.
    let declaredKinds = Memo<String?>()
    private let loggedTargets = Memo<String>()
    /// Probes running now, against `ServiceLimits.maxConcurrentProbes`.
    let probes = Atomic<Int>(0)
    /// Playlists being rewritten now, against `ServiceLimits.maxConcurrentPlaylists`.
    let playlists = Atomic<Int>(0)
    /// Set at shutdown: bodies still streaming then end at their next read (short).
    let stopping = Cancellation()
    private let server: Mutex<HTTPServer?> = Mutex(nil)
    private let log: @Sendable (String) -> Void

    /// Opens the cache and the job store and starts listening and running jobs.
    public init(config: ServiceConfig, log: @escaping @Sendable (String) -> Void) throws {
        self.config = config
        self.log = log
        guard config.fetchOptions.proxy == nil else {
            throw ServiceError.configuration(
                "the service connects to origins directly, to check each one's address "
                    + "against the origin guard; it cannot use a proxy")
        }
        // Every job demuxes: without FFmpeg's libraries the service would only fail each request, and
        // loading them now spares the first probe the ~25 ms it takes.
        try FFmpegLibraries.require()
        guardian = try OriginGuard(allowHosts: config.allowHosts)
        token = try config.token.map(AccessToken.init)
        allowedOrigins = Set(try config.allowOrigins.map(Service.origin))
        hostCheck = Mutex(try HostCheck(listenHost: config.host, port: config.port, publicHosts: config.publicHosts))
        cache = try ByteCache(
            directory: config.cacheDirectory, maxBytes: config.maxCacheBytes,
            urlRules: config.fetchOptions.urlRules)
        var fetchOptions = config.fetchOptions
        let guardian = self.guardian
        fetchOptions.connectionPolicy = { ip, port in guardian.allows(ip: ip, port: port) }
        // Marks the service's own requests, so that an origin redirecting to a service (this one,
        // or another pointing back) is refused at once instead of nesting request within request.
        fetchOptions.headers.append(try RequestHeader(parsing: Service.viaHeader))
        session = MediaSession(
            cache: cache, fetchOptions: fetchOptions, keepWarm: 64, onNotice: { log("warning: " + $0) })
        store =
            if let url = config.jobsURL {
                try PostgresJobStore(url: url, connections: config.workers + 4)
            } else {
                try SQLiteJobStore(cache: cache)
            }
        let files = config.cacheDirectory + "/jobs"
        runner = JobRunner(
            store: store, session: session, guardian: guardian, metrics: metrics, filesDirectory: files,
            limits: config.limits, leaseSeconds: config.jobLeaseSeconds, maxAttempts: config.maxJobAttempts)
        for warning in cache.warnings { log("warning: \(warning)") }
        var limits = HTTPServer.Limits()
        limits.maxBody = config.limits.maxRequestBody
        limits.maxConnections = config.limits.maxConnections
        limits.maxConnectionsPerClient = config.limits.maxConnectionsPerClient
        limits.headerTimeout = config.limits.headerTimeout
        limits.bodyTimeout = config.limits.bodyTimeout
        let started = try HTTPServer(
            host: config.host, port: config.port, limits: limits,
            handler: { [unowned self] in self.handle($0) },
            completed: { [unowned self] in self.completed($0) })
        server.withLock { $0 = started }
        let named = try HostCheck(listenHost: config.host, port: started.port, publicHosts: config.publicHosts)
        hostCheck.withLock { $0 = named }
        try runner.start(workers: config.workers)
    }

    /// The port it listens on (the one chosen when the config asked for 0).
    public var port: Int { server.withLock { $0?.port ?? 0 } }

    /// Stops: no new connections; running jobs go back to the queue (they run again after a
    /// restart); jobs and responses in flight share one deadline, `grace` seconds from now, after
    /// which streams still open end short.
    public func stop(grace: Double = 5) {
        let deadline = Date().addingTimeInterval(grace)
        let server = self.server.withLock { $0 }
        server?.quiesce()
        runner.stop(until: deadline)
        store.close()
        while streams.load(ordering: .relaxed) > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        stopping.cancel()
        server?.stop()
        self.server.withLock { $0 = nil }
    }

    // MARK: Requests

    /// The answer to `request`; nil when it is asked on the event loop and must wait (the server
    /// asks again on a worker).
    private func handle(_ request: HTTPRequest) -> HTTPResponse? {
        do {
            return try route(request)
        } catch is MustWait {
            return nil
        } catch {
            return APIError(error, rules: cache.urlRules).response
        }
    }

    private func route(_ request: HTTPRequest) throws -> HTTPResponse {
        // Before anything else: a name the service does not answer to is a page rebound onto it.
        guard hostCheck.withLock({ $0.admits(request.headers["host"]) }) else {
            throw APIError(
                status: 421, code: "misdirected_request",
                message:
                    "this service does not answer to the host \(Service.loggable(String((request.headers["host"] ?? "").prefix(200)))); "
                    + "give it with --public-host NAME")
        }
        guard let (route, parameters) = routeOf(request.path) else {
            throw APIError.notFound("no such endpoint: \(request.method) \(request.path)")
        }
        try admit(request, to: route)
        let corsOrigin = route.access == .player ? Service.corsOrigin(RequestSite(headers: request.headers)) : nil
        if request.method == "OPTIONS", let corsOrigin {
            // A web player's preflight (it sends a header a simple request may not): admitted, so listed.
            return HTTPResponse(
                status: 204,
                headers: [
                    ("Access-Control-Allow-Origin", corsOrigin), ("Vary", "Origin"),
                    ("Access-Control-Allow-Methods", "GET, HEAD"),
                    ("Access-Control-Allow-Headers", "Range, If-Range, Authorization"),
                    ("Access-Control-Max-Age", "600"),
                ])
        }
        guard let handler = route.handler(for: request.method) else {
            var response = APIError(
                status: 405, code: "method_not_allowed",
                message: "\(request.path) answers \(route.methods.joined(separator: ", "))"
            ).response
            response.headers.append(("Allow", route.methods.joined(separator: ", ")))
            return response
        }
        if !request.mayWait && route.placement == .worker { throw MustWait() }
        var response = try handler(self, request, parameters)
        if let corsOrigin {
            // Admitted above, so listed: a web player there may read the bytes and the range headers.
            response.headers += [
                ("Access-Control-Allow-Origin", corsOrigin), ("Vary", "Origin"),
                ("Access-Control-Expose-Headers", "Content-Range, Content-Length, Accept-Ranges, ETag, Last-Modified"),
            ]
        }
        return response
    }

    /// The origin, as browsers write it, of a page of another origin that named itself: what a
    /// player route admitted (`--allow-origin`) answers CORS requests with.
    private static func corsOrigin(_ site: RequestSite) -> String? {
        guard case .otherOrigin(let origin?) = site else { return nil }
        return RequestSite.origin(of: origin)
    }

    /// The front door's rules for `request` on `route`, each a clear refusal: a page of another
    /// origin (403), a state-changing request that is not JSON (415), a missing token (401), a
    /// URL past the limit (414), a request the service itself made (508).
    private func admit(_ request: HTTPRequest, to route: Route) throws {
        guard route.access != .open else { return }
        // OPTIONS is a CORS preflight, answered only for a listed origin on a player route.
        let changesState = !["GET", "HEAD", "OPTIONS"].contains(request.method)
        switch RequestSite(headers: request.headers) {
        case .noBrowser, .sameOrigin:
            break
        case .userNavigation:
            guard !changesState, !route.fetchesOrigins else {
                throw APIError(
                    status: 403, code: "cross_origin",
                    message: "a navigation the browser began by itself may read "
                        + "the service but not make it fetch (a page could have sent it here): play or probe from the dashboard or a player"
                )
            }
        case .otherOrigin(let origin):
            let listed = origin.flatMap(RequestSite.origin(of:)).map(allowedOrigins.contains) ?? false
            guard route.access == .player, !changesState, listed else {
                throw APIError(
                    status: 403, code: "cross_origin",
                    message: "requests from pages of other origins ("
                        + Service.loggable(String((origin ?? "one that names none").prefix(200)))
                        + ") are refused"
                        + (route.access == .player ? "; allow a player's page with --allow-origin" : ""))
            }
        }
        // A form or a no-cors fetch can post text/plain or a form encoding, never application/json.
        if request.method == "POST",
            request.headers["content-type"].flatMap(MediaType.init)?.description != "application/json"
        {
            throw APIError(
                status: 415, code: "unsupported_media_type",
                message: "the body must be sent as Content-Type: application/json")
        }
        if let token, !token.admits(request, queryAllowed: route.access == .player) {
            throw APIError(status: 401, code: "unauthorized", message: "this server needs Authorization: Bearer TOKEN")
        }
        if let url = request.query["url"], url.utf8.count > config.limits.maxURLLength {
            throw APIError(
                status: 414, code: "url_too_long",
                message: "the url parameter is longer than \(config.limits.maxURLLength) bytes")
        }
        if route.template == "/v1/probe" || route.label == "/v1/stream", Service.isLoop(request) {
            throw APIError(
                status: 508, code: "loop_detected",
                message:
                    "this request comes from an mprobe service fetching an origin: an origin redirects back to a service"
            )
        }
    }

    /// `--allow-origin` text as a browser writes the origin (`https://app.example.com`), or a
    /// configuration error.
    static func origin(_ text: String) throws -> String {
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard let origin = RequestSite.origin(of: trimmed), let components = URLComponents(string: trimmed),
            components.path.isEmpty, components.query == nil, components.user == nil
        else {
            throw ServiceError.configuration(
                "--allow-origin needs an origin such as https://app.example.com, got '\(text)'")
        }
        return origin
    }

    /// The longest access token a request can carry.
    public static let maxTokenLength = AccessToken.maxLength

    static let viaHeader = "Via: 1.1 mprobe"

    /// A request the service (or another mprobe service) made itself: a fetch that came back.
    private static func isLoop(_ request: HTTPRequest) -> Bool {
        request.headers["via"].map { $0.lowercased().contains("mprobe") } ?? false
    }

    func json(_ value: JSON, status: Int = 200) -> HTTPResponse { json(text: value.text, status: status) }

    /// JSON already written out (ffprobe's layout), ended by a newline.
    func json(text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array((text + "\n").utf8)))
    }

    /// The `url` query parameter, checked: present, http(s), no credentials, an origin we may fetch.
    func originURL(_ request: HTTPRequest) throws -> String {
        guard let url = request.query["url"], !url.isEmpty else {
            throw APIError.badRequest("the url parameter is missing")
        }
        try checkOrigin(url)
        return url
    }

    func checkOrigin(_ url: String) throws {
        _ = try admittedOrigins.value(for: url) { url in
            try checkUnremembered(url)
            return true
        }
    }

    private func checkUnremembered(_ url: String) throws {
        if URLText.withoutUserinfo(url) != url {
            throw APIError.badRequest(
                "credentials in URLs are not accepted by the service (they would be stored with jobs)")
        }
        if let refusal = guardian.refusal(for: url) { throw APIError.forbidden(refusal) }
        do {
            guard case .remote = try MediaSession.classify(url) else {
                throw APIError.forbidden("only http and https origins may be fetched")
            }
        } catch let error as SourceError {
            throw APIError(error, rules: cache.urlRules)
        }
    }

    // MARK: Log and metrics

    private func completed(_ done: HTTPServer.Completed) {
        // The route's label: ids and file names folded, for the metrics.
        let route = routeOf(done.path)?.0.label ?? "other"
        metrics.countRequest(
            route: route, status: done.status, proxiedBytes: route == "/v1/stream" ? done.bodyBytes : 0)
        // The token never reaches the log, URLs in the query are shown redacted, and nothing a
        // client sent can start a line of its own (control characters and spaces are escaped).
        let target = loggedTargets.value(for: done.target) { _ in
            let query = done.query.filter { $0.key != "token" }.sorted { $0.key < $1.key }
                .map {
                    "\(Service.loggable($0.key))=\(Service.loggable($0.key == "url" ? cache.urlRules.shown($0.value) : $0.value))"
                }
            let path = Service.loggable(done.path)
            return query.isEmpty ? path : path + "?" + query.joined(separator: "&")
        }
        // Written on every request: plain interpolation, not String(format:).
        log(
            "\(Service.loggable(done.method)) \(target) \(done.status) \(done.bodyBytes) B \(Int((done.seconds * 1000).rounded())) ms"
        )
    }

    /// `text` with control characters (C0, DEL and C1: no terminal escape survives), spaces and
    /// `%` percent-encoded, for one log line.
    static func loggable(_ text: String) -> String {
        // Most lines have nothing to escape: printable ASCII other than `%`, checked byte by byte.
        if text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x25 }) { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value <= 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "%" {
                out +=
                    "%" + String(decoding: [hex[Int(scalar.value >> 4)], hex[Int(scalar.value & 0xF)]], as: UTF8.self)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The route of `path` and its placeholders' values (`Service.route(for:)`), remembered.
    private func routeOf(_ path: String) -> (Route, Route.Parameters)? {
        routesOfPaths.value(for: path) {
            Service.route(for: $0.split(separator: "/", omittingEmptySubsequences: true).map(String.init))
        }
    }

    /// What `/metrics` and `/v1/health` show besides the counters `metrics` keeps, read now.
    func gauges() -> Metrics.Gauges {
        let stats = try? cache.stats()
        let jobs = JobState.allCases.map { ($0.rawValue, (try? store.count(state: $0)) ?? 0) }
        return Metrics.Gauges(
            bytesFromOrigins: session.fetcher.counters.bytesReceived, cacheHits: stats?.hits ?? 0,
            cacheMisses: stats?.misses ?? 0, cacheBytes: stats?.storedBytes ?? 0, cacheMaxBytes: cache.maxBytes,
            cacheResources: stats?.resources ?? 0, jobs: jobs, originConnections: session.fetcher.openHandles)
    }

    func metricsPage() -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
            body: .bytes(Array(metrics.exposition(gauges()).utf8)))
    }
}
