import Foundation
import RangeFetch
import Serving

/// `mprobe serve`: the HTTP API, persistent jobs and the caching range proxy.
enum ServeCommand: OptionCommand {
    static let name = "serve"
    static let summary = "run the HTTP API, jobs and the caching range proxy for players"
    static let usageText = """
        Usage: mprobe serve [--listen HOST:PORT] [--token TOKEN | --token-file FILE]
                            [--public-host NAME[:PORT]]... [--allow-origin ORIGIN]...
                            [--allow-host HOST[:PORT]]... [--header-for HOST 'Name: value']...
                            [--location-trusted HOST]... [--cache-dir DIR] [--max-cache-size SIZE]
                            [--workers N] [--jobs postgres://...] [--job-lease SECONDS] [--job-attempts N]
                            [--max-connections N] [--max-connections-per-client N]
                            [--timeout SECONDS] [--cacert FILE]
        """
    static let about = """
        Serves, over HTTP:
          GET  /                           the dashboard, for a browser: cache, jobs, storyboards, probe, health
          GET  /openapi.json               this API described in OpenAPI 3.1 (docs/openapi.json)
          GET  /v1/probe?url=URL           what `mprobe probe --json` prints
          POST /v1/jobs                    a prefetch or thumbnails job (Content-Type: application/json), answered 202
          GET  /v1/jobs[?state=S&limit=N&cursor=C]
                                           jobs, newest first, a page at a time;  GET|DELETE /v1/jobs/{id}
          GET  /v1/jobs/{id}/files/{n}/{name}
                                           a thumbnail job's images, sprites, VTT and manifest
          GET  /v1/cache                   cache statistics; GET /v1/cache/ranges?url=; DELETE /v1/cache?url=;
                                           GET /v1/cache/resources: every cached resource
          GET  /v1/stream?url=URL          the resource through the cache, with range requests: players
                                           play from here (cached bytes from disk, gaps fetched as needed)
          GET  /healthz, GET /metrics      liveness (no token) and Prometheus metrics; GET /v1/health: the
                                           numbers of /metrics a person reads, as JSON
        Jobs are kept in DIR/jobs.sqlite, or with --jobs in PostgreSQL, shared by every node that names
        it: a restart loses none, and interrupted ones run again. See docs/service.md for every
        endpoint with curl and its "Security" section, and docs/scale-out.md for several nodes.
        """
    static let options: [Option] = [
        Option(
            "listen", .value("HOST:PORT"),
            """
            address to listen on (default 127.0.0.1:8080; [::1]:8080 for IPv6);
            any other than loopback needs a token
            """),
        Option(
            "token", .value("TOKEN"),
            """
            require Authorization: Bearer TOKEN on every endpoint but /healthz,
            /openapi.json and the dashboard's files (the page asks for the token);
            /v1/stream and job files also take ?token=TOKEN, for players
            """),
        Option("token-file", .value("FILE"), "the token from FILE (first line), kept off the command line"),
        Option(
            "public-host", .value("NAME[:PORT]"),
            """
            a name requests may give as Host besides the listen address and
            localhost (repeatable; without a port, any port): what a front such as
            nginx passes on; needs a token. Any other Host is answered 421 (DNS rebinding)
            """),
        Option(
            "allow-origin", .value("ORIGIN"),
            """
            pages of ORIGIN (https://app.example.com) may play media through
            /v1/stream and read job files (repeatable); pages of other origins
            are refused everywhere but /healthz, /openapi.json and the dashboard
            """),
        Option(
            "allow-host", .value("H[:P]"),
            """
            an internal origin that may be fetched (repeatable); loopback, private,
            link-local and unique-local addresses are refused otherwise
            """),
        Option(
            "header-for", .pair("HOST", "'Name: value'"),
            """
            send this header to origins whose host matches HOST (example.com,
            *.example.com, example.com:8443), and to no other (repeatable); the
            config file's hosts.HOST.headers do the same. A header for every host
            (-H, --header-file, the config's top-level headers) is refused: the
            service fetches whatever URL a client names
            """),
        Option(
            "location-trusted", .value("HOST"),
            """
            a header for one host also follows redirects from it to HOST (repeatable);
            otherwise a redirect to a host its pattern does not match drops it
            """),
        Option("workers", .value("N"), "jobs run at once (default 2)"),
        Option(
            "jobs", .value("URL"),
            """
            keep jobs in PostgreSQL (postgres://USER@HOST[:PORT]/DB; the config
            file's "jobs"), shared by every serve process that names it, on any
            machine; a password is best left to PGPASSWORD or ~/.pgpass. Default
            (or "sqlite"): DIR/jobs.sqlite, for this machine
            """),
        Option(
            "job-lease", .value("SECONDS"),
            """
            how long a running job stays held without its worker renewing it
            (default 30, 2...3600): how soon a dead node's jobs run elsewhere
            """),
        Option("job-attempts", .value("N"), "runs of one job at most before it fails (default 3, 1...100)"),
        Option(
            "max-connections", .value("N"),
            """
            connections held at once, idle players and slow clients included (default
            16384; more are answered 503). Each costs a file descriptor and a few KiB,
            not a thread: serve raises its descriptor limit to fit (this and 3072
            more), or lowers this to fit the limit it may have, saying so
            """),
        Option(
            "max-connections-per-client", .value("N"),
            """
            connections one client address may hold at once (default 64; 0 for no
            limit, e.g. behind a front whose address every request comes from)
            """),
        Option("help", short: "h", "this help"),
    ]
    static let afterOptions = """
        Stops cleanly on SIGTERM or Ctrl-C: no new connections, running jobs go back to the queue,
        responses in flight get 5 seconds to finish.
        """
    /// The common options that take a value (serve lists its own --help, and its --location-trusted
    /// takes a host); none of their flags.
    static var commonOptions: [Option] {
        GlobalOptions.options.filter { option in
            if case .value = option.takes { return true }
            return false
        }
    }

    static func run(_ args: Arguments) throws -> ExitCode {
        guard args.positionals.isEmpty else { throw UsageError("serve takes no operands") }
        let options = try GlobalOptions(args)
        var config = ServiceConfig(cacheDirectory: options.cacheDirectory)
        (config.host, config.port) = try listenAddress(args.value("listen") ?? "127.0.0.1:8080")
        config.token = try token(args)
        guard config.token != nil || isLoopback(config.host) else {
            throw UsageError(
                "--listen \(config.host) is reachable from other machines: give --token or --token-file, "
                    + "or listen on 127.0.0.1")
        }
        config.allowHosts = args.allValues("allow-host")
        config.publicHosts = (options.config.publicHosts ?? []) + args.allValues("public-host")
        // A name other than loopback is reached by other machines (through a front), where
        // browsers send no Sec-Fetch-Site over plain http to tell a page's requests from a program's.
        guard config.publicHosts.isEmpty || config.token != nil else {
            throw UsageError(
                "--public-host makes the service reachable by that name from other machines: give --token or --token-file too"
            )
        }
        config.allowOrigins = (options.config.allowOrigins ?? []) + args.allValues("allow-origin")
        config.maxCacheBytes = try options.maxCacheBytes()
        if let n = try args.integer("max-connections-per-client") {
            guard (0...100_000).contains(n) else {
                throw UsageError("--max-connections-per-client needs 0...100000, got \(n)")
            }
            config.limits.maxConnectionsPerClient = n
        }
        if let n = try args.integer("max-connections") {
            guard (1...1_000_000).contains(n) else { throw UsageError("--max-connections needs 1...1000000, got \(n)") }
            config.limits.maxConnections = n
        }
        config.limits.maxConnections = descriptorsFor(connections: config.limits.maxConnections)
        // Before fetchOptions(), which would read (and so accept) headers for every host.
        let headers = try originHeaders(args, options)
        config.fetchOptions = try options.fetchOptions()
        config.fetchOptions.headers = headers
        config.fetchOptions.trustedRedirectHosts = try args.allValues("location-trusted").map {
            try hostPattern($0, option: "--location-trusted")
        }
        guard config.fetchOptions.proxy == nil else {
            throw UsageError(
                "serve connects to origins directly, to check each one's address against the origin "
                    + "guard, so it cannot use a proxy (--proxy, or the config file's)")
        }
        if let text = args.value("workers") {
            guard let n = Int(text), (1...64).contains(n) else {
                throw UsageError("--workers needs 1...64, got '\(text)'")
            }
            config.workers = n
        }
        config.jobsURL = try jobsURL(args.value("jobs") ?? options.config.jobs)
        if let text = args.value("job-lease") {
            guard let seconds = Double(text), (2...3600).contains(seconds) else {
                throw UsageError("--job-lease needs 2...3600 seconds, got '\(text)'")
            }
            config.jobLeaseSeconds = seconds
        }
        if let n = try args.integer("job-attempts") {
            guard (1...100).contains(n) else { throw UsageError("--job-attempts needs 1...100, got \(n)") }
            config.maxJobAttempts = n
        }
        let stop = StopSignal()
        let log = LogBuffer()
        defer { log.close() }
        let service = try Service(config: config) { log.write($0) }
        log.flush()  // the cache's warnings, before what is written around the buffer
        let environment = ProcessInfo.processInfo.environment
        if let variable = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].first(where: {
            environment[$0] != nil
        }) {
            Console.writeStderr(
                "mprobe: \(variable) is set, but serve connects to origins directly (it checks each origin's address)\n"
            )
        }
        let shown = config.host.contains(":") ? "[\(config.host)]" : config.host
        Console.writeStderr(
            "mprobe: serving on http://\(shown):\(service.port)/ (cache \(config.cacheDirectory)\(config.jobsURL.map { "; jobs in " + PostgresJobStore.shown($0) } ?? "")); open it in a browser for the dashboard\n"
        )
        stop.wait()
        log.flush()
        Console.writeStderr("mprobe: stopping\n")
        service.stop(grace: 5)
        return .success
    }

    /// Raises the process's descriptor limit to what `connections` need (a socket each, and room
    /// for the cache, origins, refused connections and the data-file descriptors of cached ranges
    /// being sent: a range that finds none left is streamed instead), or as near as it may;
    /// returns the connections that fit.
    static func descriptorsFor(connections: Int) -> Int {
        let room = HTTPServer.refusalRoom + 2048
        let needed = rlim_t(connections + room)
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard limit.rlim_cur < needed else { return connections }
        // Only a privileged process may raise the hard limit; any may raise the soft one to it.
        var raised = rlimit(rlim_cur: needed, rlim_max: max(limit.rlim_max, needed))
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 {
            raised = rlimit(rlim_cur: min(needed, limit.rlim_max), rlim_max: limit.rlim_max)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        }
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard limit.rlim_cur < needed else { return connections }
        let fitting = max(16, Int(limit.rlim_cur) - room)
        Console.writeStderr(
            "mprobe: the descriptor limit is \(limit.rlim_cur) (ulimit -n), so serve holds \(fitting) connections at most, "
                + "not \(connections)\n")
        return fitting
    }

    /// The headers the service sends to origins, each for the hosts named for it: the config's
    /// `hosts.PATTERN.headers` and `--header-for`. A header for every host would go to whatever
    /// origin a client names in `url=`, so one is refused, with how to scope it.
    static func originHeaders(_ args: Arguments, _ options: GlobalOptions) throws -> [RequestHeader] {
        guard !options.hasUnscopedHeaders else {
            throw UsageError(
                "serve sends a header only to the hosts named for it, never to every origin a client names: "
                    + "give it as --header-for HOST 'Name: value', or in the config file's \"hosts\": "
                    + "{\"HOST\": {\"headers\": [...]}} (not -H, --header-file or the top-level \"headers\")")
        }
        return try options.hostHeaders()
            + options.parsingHeaders {
                try args.allPairs("header-for").map { host, line in
                    try RequestHeader(parsing: line, hostPattern: hostPattern(host, option: "--header-for"))
                }
            }
    }

    /// A host pattern as an option gives it: `example.com`, `*.example.com`, either with `:PORT`.
    static func hostPattern(_ text: String, option: String) throws -> String {
        guard ConfigFile.isHostPattern(text) else {
            throw UsageError(
                "\(option) needs a host such as media.example.com, *.example.com or example.com:8443, got '\(text)'")
        }
        return text.lowercased()
    }

    /// A PostgreSQL URL for `--jobs`, or nil for the default (`sqlite`, or none given).
    static func jobsURL(_ text: String?) throws -> String? {
        guard let text, text != "sqlite" else { return nil }
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
            // Only a scheme is repeated: whatever else was given may hold a password.
            let scheme = text.range(of: "^[A-Za-z][A-Za-z0-9+.-]{0,19}://", options: .regularExpression).map {
                "a URL of scheme '\(text[$0].dropLast(3))'"
            }
            throw UsageError(
                "--jobs needs a PostgreSQL URL as libpq takes it (postgres://... or postgresql://...) or sqlite "
                    + "(the default), got \(scheme ?? "something else")")
        }
        return text
    }

    /// `HOST:PORT`, `[v6]:PORT` or `:PORT` (loopback).
    static func listenAddress(_ text: String) throws -> (String, Int) {
        var host = "127.0.0.1", portText = text
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = String(text[text.index(after: close)...].dropFirst())
        } else if let colon = text.lastIndex(of: ":") {
            if colon != text.startIndex { host = String(text[..<colon]) }
            portText = String(text[text.index(after: colon)...])
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else {
            throw UsageError("--listen needs HOST:PORT, e.g. 127.0.0.1:8080, got '\(text)'")
        }
        return (host, port)
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    static func token(_ args: Arguments) throws -> String? {
        if args.value("token") != nil && args.value("token-file") != nil {
            throw UsageError("use only one of --token and --token-file")
        }
        let given: String, source: String
        if let file = args.value("token-file") {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw UsageError("--token-file \(file): cannot read it")
            }
            // The first line, even when it is blank: a token is never taken from further down.
            let text = String(decoding: data, as: UTF8.self)
            given = String(text[..<(text.firstIndex(where: \.isNewline) ?? text.endIndex)])
            source = "--token-file \(file): its first line"
        } else if let token = args.value("token") {
            given = token
            source = "--token"
        } else {
            return nil
        }
        let token = given.trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else { throw UsageError("\(source) holds no token") }
        guard !token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw UsageError("\(source) holds a control character, which no request header can carry")
        }
        guard token.utf8.count <= Service.maxTokenLength else {
            throw UsageError(
                "\(source) is \(token.utf8.count) bytes, more than a request can carry (at most \(Service.maxTokenLength))"
            )
        }
        return token
    }
}

/// Waits for SIGTERM or SIGINT (the first one: a second Ctrl-C still ends the process at once,
/// through `Interrupt`).
private final class StopSignal: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private var sources: [DispatchSourceSignal] = []

    init() {
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [semaphore] in semaphore.signal() }
            source.resume()
            sources.append(source)
        }
    }

    func wait() { semaphore.wait() }
}
