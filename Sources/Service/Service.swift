import ByteCache
import Foundation
import MediaKit
import MediaSource
import RangeFetch
import Reports
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
    let metrics = Metrics()
    let store: JobStore
    let runner: JobRunner
    /// Proxied responses streaming now, against `ServiceLimits.maxStreams`.
    let streams = Atomic<Int>(0)
    /// Probes running now, against `ServiceLimits.maxConcurrentProbes`.
    let probes = Atomic<Int>(0)
    /// Set at shutdown: bodies still streaming then end at their next read (short).
    let stopping = Cancellation()
    private let server: Mutex<HTTPServer?> = Mutex(nil)
    private let log: @Sendable (String) -> Void

    /// Opens the cache and the job store and starts listening and running jobs.
    public init(config: ServiceConfig, log: @escaping @Sendable (String) -> Void) throws {
        self.config = config
        self.log = log
        guard config.fetchOptions.proxy == nil else {
            throw ServiceError.configuration("the service connects to origins directly, to check each one's address "
                                             + "against the origin guard; it cannot use a proxy")
        }
        // Every job demuxes: without FFmpeg's libraries the service would only fail each request, and
        // loading them now spares the first probe the ~25 ms it takes.
        try FFmpegLibraries.require()
        guardian = try OriginGuard(allowHosts: config.allowHosts)
        token = try config.token.map(AccessToken.init)
        cache = try ByteCache(directory: config.cacheDirectory, maxBytes: config.maxCacheBytes,
                              urlRules: config.fetchOptions.urlRules)
        var fetchOptions = config.fetchOptions
        let guardian = self.guardian
        fetchOptions.connectionPolicy = { ip, port in guardian.allows(ip: ip, port: port) }
        // Marks the service's own requests, so that an origin redirecting to a service (this one,
        // or another pointing back) is refused at once instead of nesting request within request.
        fetchOptions.headers.append(try RequestHeader(parsing: Service.viaHeader))
        session = MediaSession(cache: cache, fetchOptions: fetchOptions, keepWarm: 64)
        store = try SQLiteJobStore(cache: cache)
        let files = config.cacheDirectory + "/jobs"
        runner = JobRunner(store: store, session: session, guardian: guardian, metrics: metrics, filesDirectory: files,
                           limits: config.limits)
        for warning in cache.warnings { log("warning: \(warning)") }
        var limits = HTTPServer.Limits()
        limits.maxBody = config.limits.maxRequestBody
        limits.maxConnections = config.limits.maxConnections
        let started = try HTTPServer(host: config.host, port: config.port, limits: limits,
                                     handler: { [unowned self] in self.handle($0) },
                                     completed: { [unowned self] in self.completed($0) })
        server.withLock { $0 = started }
        try runner.start(workers: config.workers)
    }

    /// The port it listens on (the one chosen when the config asked for 0).
    public var port: Int { server.withLock { $0?.port ?? 0 } }

    /// Stops: no new connections; running jobs go back to the queue (they run again after a
    /// restart); responses in flight get `grace` seconds to finish, then their streams end short.
    public func stop(grace: Double = 5) {
        let server = self.server.withLock { $0 }
        server?.quiesce()
        runner.stop(grace: grace)
        let deadline = Date().addingTimeInterval(grace)
        while streams.load(ordering: .relaxed) > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        stopping.cancel()
        server?.stop()
        self.server.withLock { $0 = nil }
    }

    // MARK: Requests

    private func handle(_ request: HTTPRequest) -> HTTPResponse {
        do {
            return try route(request)
        } catch {
            return APIError(error).response
        }
    }

    private func route(_ request: HTTPRequest) throws -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        if parts == ["healthz"] { return try only(["GET", "HEAD"], request) { json(.object([("status", .string("ok"))])) } }
        // The dashboard's files hold no data: served without the token, so the page can ask for it.
        if let asset = DashboardAsset(path: parts) { return try only(["GET", "HEAD"], request) { asset.response } }
        // `/v1/stream/NAME?url=`: the same proxy, named as the origin's file (rewritten playlists
        // point there, since ffmpeg's hls demuxer takes a segment only by its extension).
        let streamRoute = parts == ["v1", "stream"] || (parts.count == 3 && parts[0...1] == ["v1", "stream"])
        let playerRoute = streamRoute || (parts.count >= 5 && parts[0...1] == ["v1", "jobs"] && parts[3] == "files")
        if let token, !token.admits(request, queryAllowed: playerRoute) {
            throw APIError(status: 401, code: "unauthorized", message: "this server needs Authorization: Bearer TOKEN")
        }
        if let url = request.query["url"], url.utf8.count > config.limits.maxURLLength {
            throw APIError(status: 414, code: "url_too_long", message: "the url parameter is longer than \(config.limits.maxURLLength) bytes")
        }
        if parts == ["v1", "probe"] || streamRoute, Service.isLoop(request) {
            throw APIError(status: 508, code: "loop_detected",
                           message: "this request comes from an mprobe service fetching an origin: an origin redirects back to a service")
        }
        switch parts {
        case ["metrics"]: return try only(["GET"], request) { metricsPage() }
        case ["v1", "health"]: return try only(["GET"], request) { json(metrics.health(gauges())) }
        case ["v1", "probe"]: return try only(["GET"], request) { try probe(request) }
        case ["v1", "stream"]: return try only(["GET", "HEAD"], request) { try stream(request) }
        case ["v1", "cache"]:
            if request.method == "DELETE" { return try removeFromCache(request) }
            return try only(["GET"], request) { try json(CacheReport.stats(cache.stats(), directory: cache.directory)) }
        case ["v1", "cache", "ranges"]: return try only(["GET"], request) { try cacheRanges(request) }
        case ["v1", "cache", "resources"]: return try only(["GET"], request) { try json(CacheReport.resources(cache.resources())) }
        case ["v1", "jobs"]:
            if request.method == "POST" { return try submitJob(request) }
            return try only(["GET"], request) { try listJobs(request) }
        default:
            if streamRoute { return try only(["GET", "HEAD"], request) { try stream(request) } }
            if parts.count == 3, parts[0...1] == ["v1", "jobs"] {
                if request.method == "DELETE" { return try cancelJob(parts[2]) }
                return try only(["GET"], request) { try showJob(parts[2]) }
            }
            if parts.count >= 5, parts[0...1] == ["v1", "jobs"], parts[3] == "files" {
                return try only(["GET", "HEAD"], request) { try jobFile(id: parts[2], name: Array(parts[4...]), request: request) }
            }
            throw APIError.notFound("no such endpoint: \(request.method) \(request.path)")
        }
    }

    static let viaHeader = "Via: 1.1 mprobe"

    /// A request the service (or another mprobe service) made itself: a fetch that came back.
    private static func isLoop(_ request: HTTPRequest) -> Bool {
        request.headers["via"].map { $0.lowercased().contains("mprobe") } ?? false
    }

    /// Runs `body` when the method is one of `methods`, else answers 405 with `Allow`.
    private func only(_ methods: [String], _ request: HTTPRequest, _ body: () throws -> HTTPResponse) throws -> HTTPResponse {
        guard methods.contains(request.method) else {
            var response = APIError(status: 405, code: "method_not_allowed",
                                    message: "\(request.path) answers \(methods.joined(separator: ", "))").response
            response.headers.append(("Allow", methods.joined(separator: ", ")))
            return response
        }
        return try body()
    }

    func json(_ value: JSON, status: Int = 200) -> HTTPResponse { json(text: value.text, status: status) }

    /// JSON already written out (ffprobe's layout), ended by a newline.
    func json(text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array((text + "\n").utf8)))
    }

    /// The `url` query parameter, checked: present, http(s), no credentials, an origin we may fetch.
    func originURL(_ request: HTTPRequest) throws -> String {
        guard let url = request.query["url"], !url.isEmpty else { throw APIError.badRequest("the url parameter is missing") }
        try checkOrigin(url)
        return url
    }

    func checkOrigin(_ url: String) throws {
        if URLText.withoutUserinfo(url) != url {
            throw APIError.badRequest("credentials in URLs are not accepted by the service (they would be stored with jobs)")
        }
        if let refusal = guardian.refusal(for: url) { throw APIError.forbidden(refusal) }
        do {
            guard case .remote = try MediaSession.classify(url) else { throw APIError.forbidden("only http and https origins may be fetched") }
        } catch let error as SourceError {
            throw APIError(error)
        }
    }

    // MARK: Log and metrics

    private func completed(_ done: HTTPServer.Completed) {
        let route = Service.routeName(done.path)
        metrics.countRequest(route: route, status: done.status, proxiedBytes: route == "/v1/stream" ? done.bodyBytes : 0)
        // The token never reaches the log, URLs in the query are shown redacted, and nothing a
        // client sent can start a line of its own (control characters and spaces are escaped).
        let query = done.query.filter { $0.key != "token" }.sorted { $0.key < $1.key }
            .map { "\(Service.loggable($0.key))=\(Service.loggable($0.key == "url" ? cache.urlRules.shown($0.value) : $0.value))" }
        let path = Service.loggable(done.path)
        let target = query.isEmpty ? path : path + "?" + query.joined(separator: "&")
        log(String(format: "%@ %@ %d %lld B %.0f ms", Service.loggable(done.method), target, done.status, done.bodyBytes, done.seconds * 1000))
    }

    /// `text` with control characters (C0, DEL and C1: no terminal escape survives), spaces and
    /// `%` percent-encoded, for one log line.
    static func loggable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value <= 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "%" {
                out += String(format: "%%%02X", scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The route a path belongs to, with ids and file names folded, for metrics labels.
    static func routeName(_ path: String) -> String {
        let parts = path.split(separator: "/").map(String.init)
        switch parts.count {
        case 3 where parts[0...1] == ["v1", "jobs"]: return "/v1/jobs/{id}"
        case 3 where parts[0...1] == ["v1", "stream"]: return "/v1/stream"
        case 5... where parts[0...1] == ["v1", "jobs"] && parts[3] == "files": return "/v1/jobs/{id}/files/{name}"
        default:
            if DashboardAsset(path: parts) != nil { return "/dashboard" }
            let known: Set<String> = ["/healthz", "/metrics", "/v1/health", "/v1/probe", "/v1/stream", "/v1/cache",
                                      "/v1/cache/ranges", "/v1/cache/resources", "/v1/jobs"]
            let joined = "/" + parts.joined(separator: "/")
            return known.contains(joined) ? joined : "other"
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

    private func metricsPage() -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                     body: .bytes(Array(metrics.exposition(gauges()).utf8)))
    }
}
