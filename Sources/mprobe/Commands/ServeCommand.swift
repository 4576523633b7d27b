import Foundation
import Service

/// `mprobe serve`: the HTTP API, persistent jobs and the caching range proxy.
enum ServeCommand: OptionCommand {
    static let name = "serve"
    static let summary = "run the HTTP API, jobs and the caching range proxy for players"
    static let help = """
        Usage: mprobe serve [--listen HOST:PORT] [--token TOKEN | --token-file FILE]
                            [--allow-host HOST[:PORT]]... [--cache-dir DIR] [--max-cache-size SIZE]
                            [--workers N] [--timeout SECONDS] [--cacert FILE]

        Serves, over HTTP:
          GET  /                           the dashboard, for a browser: cache, jobs, storyboards, probe, health
          GET  /v1/probe?url=URL           what `mprobe probe --json` prints
          POST /v1/jobs                    a prefetch or thumbnails job (JSON), answered 202
          GET  /v1/jobs[?state=S]          jobs, newest first;  GET|DELETE /v1/jobs/{id}
          GET  /v1/jobs/{id}/files/{name}  a thumbnail job's images, sprites, VTT and manifest
          GET  /v1/cache                   cache statistics; GET /v1/cache/ranges?url=; DELETE /v1/cache?url=;
                                           GET /v1/cache/resources: every cached resource
          GET  /v1/stream?url=URL          the resource through the cache, with range requests: players
                                           play from here (cached bytes from disk, gaps fetched as needed)
          GET  /healthz, GET /metrics      liveness (no token) and Prometheus metrics; GET /v1/health: the
                                           numbers of /metrics a person reads, as JSON
        Jobs are kept in DIR/jobs.sqlite: a restart loses none and runs queued and interrupted ones
        again. See docs/service.md for every endpoint with curl.

          --listen HOST:PORT   address to listen on (default 127.0.0.1:8080; [::1]:8080 for IPv6);
                               any other than loopback needs a token
          --token TOKEN        require Authorization: Bearer TOKEN on every endpoint but /healthz and
                               the dashboard's files (the page asks for the token); /v1/stream and job
                               files also take ?token=TOKEN, for players
          --token-file FILE    the token from FILE (first line), kept off the command line
          --allow-host H[:P]   an internal origin that may be fetched (repeatable); loopback, private,
                               link-local and unique-local addresses are refused otherwise
          --workers N          jobs run at once (default 2)

        Stops cleanly on SIGTERM or Ctrl-C: no new connections, running jobs go back to the queue,
        responses in flight get 5 seconds to finish.

          --cache-dir DIR        the cache (and jobs.sqlite); default as for the other commands
          --max-cache-size SIZE  cache size limit, e.g. 500M, 10G (default 10G)
          --timeout SECONDS      connect timeout and longest stall of an origin transfer (default 30)
          --cacert FILE          extra CA certificates (PEM) for HTTPS origins
        """
    static let valueOptions: Set<String> = GlobalOptions.valueOptions.union(["listen", "token", "token-file", "allow-host", "workers"])
    static let flagOptions: Set<String> = ["help"]

    static func run(_ args: Arguments) throws -> ExitCode {
        guard args.positionals.isEmpty else { throw UsageError("serve takes no operands") }
        let options = try GlobalOptions(args)
        var config = ServiceConfig(cacheDirectory: options.cacheDirectory)
        (config.host, config.port) = try listenAddress(args.value("listen") ?? "127.0.0.1:8080")
        config.token = try token(args)
        guard config.token != nil || isLoopback(config.host) else {
            throw UsageError("--listen \(config.host) is reachable from other machines: give --token or --token-file, "
                             + "or listen on 127.0.0.1")
        }
        config.allowHosts = args.allValues("allow-host")
        config.maxCacheBytes = try options.maxCacheBytes()
        config.fetchOptions = try options.fetchOptions()
        guard config.fetchOptions.proxy == nil else {
            throw UsageError("serve connects to origins directly, to check each one's address against the origin "
                             + "guard, so it cannot use a proxy (--proxy, or the config file's)")
        }
        if let text = args.value("workers") {
            guard let n = Int(text), (1...64).contains(n) else { throw UsageError("--workers needs 1...64, got '\(text)'") }
            config.workers = n
        }
        let stop = StopSignal()
        let service = try Service(config: config) { line in Console.writeStderr(line + "\n") }
        let environment = ProcessInfo.processInfo.environment
        if let variable = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].first(where: { environment[$0] != nil }) {
            Console.writeStderr("mprobe: \(variable) is set, but serve connects to origins directly (it checks each origin's address)\n")
        }
        let shown = config.host.contains(":") ? "[\(config.host)]" : config.host
        Console.writeStderr("mprobe: serving on http://\(shown):\(service.port)/ (cache \(config.cacheDirectory)); open it in a browser for the dashboard\n")
        stop.wait()
        Console.writeStderr("mprobe: stopping\n")
        service.stop(grace: 5)
        return .success
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
        if let file = args.value("token-file") {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw UsageError("--token-file \(file): cannot read it")
            }
            let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            let token = line.trimmingCharacters(in: .whitespaces)
            guard !token.isEmpty else { throw UsageError("--token-file \(file): its first line holds no token") }
            return token
        }
        if let token = args.value("token") {
            guard !token.trimmingCharacters(in: .whitespaces).isEmpty else { throw UsageError("--token needs a value") }
            return token
        }
        return nil
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
