import Reports

/// The service's endpoints as data: each path template with the methods it answers, who may call
/// it, and its handlers. The router (`Service.route`), the `Allow` header of a 405 and the test
/// that holds `docs/openapi.json` to the server all read this one table.
final class Route: Sendable {
    /// Who may call an endpoint.
    enum Access: Sendable {
        /// No data and no effect (liveness, the dashboard's files, the API's description): no
        /// token, and pages of any origin may load them.
        case open
        /// The JSON API: the token as `Authorization: Bearer`, browsers only from the service's own origin.
        case api
        /// What players read (the proxy, thumbnail files): the token also as `?token=` (players and
        /// `<video>` cannot set headers), and pages of the origins `--allow-origin` names may read them.
        case player
    }

    typealias Handler = @Sendable (Service, HTTPRequest, Parameters) throws -> HTTPResponse

    /// Where its handler runs. The event loops hold every connection, so nothing there may wait.
    enum Placement: Sendable {
        /// Answered on the event loop: nothing it does waits (no origin, no job store, no disk).
        case eventLoop
        /// On a worker thread: it may wait on an origin, the job store or the disk.
        case worker
        /// Tried on the event loop, handed to a worker at the first step that would wait
        /// (`MustWait`): the range proxy, whose cached ranges need neither.
        case eventLoopUnlessItWaits
    }

    /// Path segments a template's `{name}` matched, and the rest a trailing `{name...}` took.
    struct Parameters: Sendable {
        var values: [String: String] = [:]
        subscript(_ name: String) -> String { values[name] ?? "" }
    }

    /// `/v1/jobs/{id}`: literal segments and `{name}` placeholders, one segment each.
    let template: String
    let access: Access
    /// By method, in the order `Allow` lists them.
    let handlers: [(method: String, handler: Handler)]
    /// The `route` label of its requests in the metrics (routes of one kind share one).
    let label: String
    /// A GET here makes the service fetch from an origin (a probe, the proxy): an effect, not a
    /// read, which a navigation alone may not cause (`RequestSite.userNavigation`).
    let fetchesOrigins: Bool
    let placement: Placement

    init(
        template: String, access: Access, label: String? = nil, fetchesOrigins: Bool = false,
        placement: Placement = .worker, handlers: [(method: String, handler: Handler)]
    ) {
        self.template = template
        self.access = access
        self.label = label ?? template
        self.fetchesOrigins = fetchesOrigins
        self.placement = placement
        self.handlers = handlers
    }

    var methods: [String] { handlers.map(\.method) }

    func handler(for method: String) -> Handler? { handlers.first { $0.method == method }?.handler }

    /// The placeholders' values when `parts` (a path split at `/`) fits the template, else nil.
    func match(_ parts: [String]) -> Parameters? {
        let pattern = template.split(separator: "/").map(String.init)
        guard pattern.count == parts.count else { return nil }
        var parameters = Parameters()
        for (expected, part) in zip(pattern, parts) {
            if expected.hasPrefix("{") && expected.hasSuffix("}") {
                parameters.values[String(expected.dropFirst().dropLast())] = part
            } else if expected != part {
                return nil
            }
        }
        return parameters
    }
}

extension Service {
    /// Every endpoint. A path matches at most one template.
    static let routes: [Route] = [
        Route(
            template: "/healthz", access: .open, placement: .eventLoop,
            handlers: [
                ("GET", { s, _, _ in s.json(.object([("status", .string("ok"))])) }),
                ("HEAD", { s, _, _ in s.json(.object([("status", .string("ok"))])) }),
            ]),
        Route(
            template: "/", access: .open, label: "/dashboard", placement: .eventLoop,
            handlers: asset { _ in DashboardAsset(path: []) }),
        Route(
            template: "/dashboard/{asset}", access: .open, label: "/dashboard", placement: .eventLoop,
            handlers: asset { DashboardAsset(path: ["dashboard", $0["asset"]]) }),
        Route(
            template: "/openapi.json", access: .open, placement: .eventLoop,
            handlers: asset { _ in DashboardAsset.openAPI }),
        Route(template: "/metrics", access: .api, handlers: [("GET", { s, _, _ in s.metricsPage() })]),
        Route(
            template: "/v1/health", access: .api,
            handlers: [("GET", { s, _, _ in s.json(s.metrics.health(s.gauges())) })]),
        Route(
            template: "/v1/probe", access: .api, fetchesOrigins: true,
            handlers: [("GET", { s, request, _ in try s.probe(request) })]),
        Route(
            template: "/v1/stream", access: .player, fetchesOrigins: true, placement: .eventLoopUnlessItWaits,
            handlers: [
                ("GET", { s, request, _ in try s.stream(request) }),
                ("HEAD", { s, request, _ in try s.stream(request) }),
            ]),
        // Named as the origin's file: rewritten playlists point here, since ffmpeg's hls demuxer
        // takes a segment only by its extension.
        Route(
            template: "/v1/stream/{name}", access: .player, label: "/v1/stream", fetchesOrigins: true,
            placement: .eventLoopUnlessItWaits,
            handlers: [
                ("GET", { s, request, _ in try s.stream(request) }),
                ("HEAD", { s, request, _ in try s.stream(request) }),
            ]),
        Route(
            template: "/v1/cache", access: .api,
            handlers: [
                ("GET", { s, _, _ in try s.json(CacheReport.stats(s.cache.stats(), directory: s.cache.directory)) }),
                ("DELETE", { s, request, _ in try s.removeFromCache(request) }),
            ]),
        Route(
            template: "/v1/cache/ranges", access: .api,
            handlers: [("GET", { s, request, _ in try s.cacheRanges(request) })]),
        Route(
            template: "/v1/cache/resources", access: .api,
            handlers: [
                ("GET", { s, _, _ in try s.json(CacheReport.resources(s.cache.resources())) })
            ]),
        Route(
            template: "/v1/jobs", access: .api,
            handlers: [
                ("GET", { s, request, _ in try s.listJobs(request) }),
                ("POST", { s, request, _ in try s.submitJob(request) }),
            ]),
        Route(
            template: "/v1/jobs/{id}", access: .api,
            handlers: [
                ("GET", { s, _, p in try s.showJob(p["id"]) }), ("DELETE", { s, _, p in try s.cancelJob(p["id"]) }),
            ]),
        Route(
            template: "/v1/jobs/{id}/files/{n}/{file}", access: .player, label: "/v1/jobs/{id}/files/{name}",
            handlers: jobFile()),
    ]

    /// GET and HEAD of an embedded file; a name that is not one is 404.
    private static func asset(
        _ pick: @escaping @Sendable (Route.Parameters) -> DashboardAsset?
    ) -> [(method: String, handler: Route.Handler)] {
        let handler: Route.Handler = { _, request, parameters in
            guard let asset = pick(parameters) else {
                throw APIError.notFound("no such endpoint: \(request.method) \(request.path)")
            }
            return asset.response
        }
        return [("GET", handler), ("HEAD", handler)]
    }

    private static func jobFile() -> [(method: String, handler: Route.Handler)] {
        let handler: Route.Handler = { s, request, p in
            try s.jobFile(id: p["id"], name: [p["n"], p["file"]], request: request)
        }
        return [("GET", handler), ("HEAD", handler)]
    }

    /// Every endpoint's path template and methods, as `docs/openapi.json` must describe them.
    public static var endpoints: [(path: String, methods: [String])] { routes.map { ($0.template, $0.methods) } }

    /// The route `parts` (a path split at `/`) belongs to, and its placeholders' values.
    static func route(for parts: [String]) -> (Route, Route.Parameters)? {
        for route in routes {
            if let parameters = route.match(parts) { return (route, parameters) }
        }
        return nil
    }
}
