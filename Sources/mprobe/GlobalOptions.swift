import ByteSources
import Caching
import Foundation
import RangeFetch
import Synchronization
import URLSupport

/// Options every command that reads input understands, over the config file's defaults.
struct GlobalOptions {
    static let options: [Option] = [
        Option(
            "cache-dir", .value("DIR"),
            """
            cache directory (default: $MPROBE_CACHE_DIR, else $XDG_CACHE_HOME/mprobe,
            else ~/.cache/mprobe)
            """),
        Option(
            "max-cache-size", .value("SIZE"),
            """
            cache size limit, e.g. 500M, 10G (default 10G); least recently used
            resources are evicted; a resource bigger than the limit is streamed through
            """),
        Option("no-cache", "do not use the cache (remote bytes are kept in memory only)"),
        Option("offline", "never touch the network; a byte that is not cached is an error (exit 4)"),
        Option("timeout", .value("SECONDS"), "connect timeout and longest stall of a transfer (default 30)"),
        Option("cacert", .value("FILE"), "extra CA certificates (PEM) for HTTPS origins"),
        Option(
            "header", short: "H", .value("'N: V'"), "send this header to origins (repeatable); never shown or stored"),
        Option("header-file", .value("FILE"), "headers from FILE, one per line (keep secrets off the command line)"),
        Option("user-agent", short: "A", .value("UA"), "the User-Agent to send"),
        Option("location-trusted", "keep Authorization and Cookie on redirects to other hosts"),
        Option("proxy", .value("URL"), "send requests through this proxy (else http_proxy, https_proxy, no_proxy)"),
        Option(
            "cache-key", .value("PRESET"),
            """
            key signed URLs without their signature: s3 (X-Amz-*), cloudfront
            (Expires, Signature, Key-Pair-Id, Policy) or gcs (X-Goog-*)
            """),
        Option(
            "cache-key-ignore-query", .value("NAMES"),
            """
            query parameters left out of cache keys and hidden when shown, comma
            separated; NAME* for a prefix, * for the whole query
            """),
        Option("config", .value("FILE"), "defaults from FILE (else $XDG_CONFIG_HOME/mprobe/config.json if present)"),
        Option("json", "machine-readable output"),
        Option("verbose", short: "v", "also show what it cost (requests, bytes) and FFmpeg's warnings"),
        Option("help", short: "h", "this help"),
    ]

    let args: Arguments
    /// The config file's defaults (empty without one); flags win.
    let config: ConfigFile

    init(_ args: Arguments) throws {
        self.args = args
        config =
            try ConfigFile.path(explicit: args.value("config")).map(ConfigFile.load)
            ?? ConfigFile()
    }

    var json: Bool { args.flag("json") }
    var offline: Bool { args.flag("offline") }
    var noCache: Bool { args.flag("no-cache") }

    /// `--cache-dir`, else `MPROBE_CACHE_DIR`, else the config file's, else `$XDG_CACHE_HOME/mprobe`,
    /// else `~/.cache/mprobe`.
    var cacheDirectory: String {
        let env = ProcessInfo.processInfo.environment
        if let dir = args.value("cache-dir"), !dir.isEmpty { return dir }
        if let dir = env["MPROBE_CACHE_DIR"], !dir.isEmpty { return dir }
        if let dir = config.cacheDir, !dir.isEmpty { return dir }
        if let xdg = env["XDG_CACHE_HOME"], !xdg.isEmpty { return xdg + "/mprobe" }
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.cache/mprobe"
    }

    /// How URLs are keyed and shown: `--cache-key`, `--cache-key-ignore-query`, the config's rules
    /// (and its per-host rules).
    func urlRules() throws -> URLRules {
        func names(preset: String?, ignore: [String]?, source: String) throws -> URLRules.QueryNames {
            var names: [String] = []
            if let preset {
                guard let known = URLRules.presets[preset.lowercased()] else {
                    throw UsageError("\(source): unknown cache key preset '\(preset)' (s3, cloudfront, gcs)")
                }
                names += known.names
            }
            names += ignore ?? []
            return URLRules.QueryNames(names)
        }
        let flagIgnore = args.value("cache-key-ignore-query").map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let defaults = try names(
            preset: args.value("cache-key") ?? config.cacheKey,
            ignore: flagIgnore ?? config.cacheKeyIgnoreQuery, source: "--cache-key")
        let hosts = try (config.hosts ?? [:]).sorted { $0.key < $1.key }.compactMap {
            pattern, settings -> (pattern: String, ignoredQuery: URLRules.QueryNames)? in
            guard settings.cacheKey != nil || settings.cacheKeyIgnoreQuery != nil else { return nil }
            return (
                pattern,
                try names(
                    preset: settings.cacheKey, ignore: settings.cacheKeyIgnoreQuery, source: "config hosts.\(pattern)")
            )
        }
        return URLRules(ignoredQuery: defaults, hosts: hosts)
    }

    /// Request headers: the config's (for every host, then per host), `--header-file`, `-H`.
    func requestHeaders() throws -> [RequestHeader] {
        try parsingHeaders {
            var headers = try (config.headers ?? []).map { try RequestHeader(parsing: $0) }
            headers += try hostHeaders()
            if let file = args.value("header-file") {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw UsageError("--header-file \(file): cannot read it")
                }
                headers += try String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
                    .map { try RequestHeader(parsing: $0) }
            }
            return headers + (try args.allValues("header").map { try RequestHeader(parsing: $0) })
        }
    }

    /// Headers for the hosts that match a pattern: the config's `hosts.PATTERN.headers`.
    func hostHeaders() throws -> [RequestHeader] {
        try parsingHeaders {
            try (config.hosts ?? [:]).sorted(by: { $0.key < $1.key }).flatMap { pattern, settings in
                try (settings.headers ?? []).map { try RequestHeader(parsing: $0, hostPattern: pattern) }
            }
        }
    }

    /// Whether any header goes to every host: the config's `headers`, `--header-file` or `-H`.
    var hasUnscopedHeaders: Bool {
        !(config.headers ?? []).isEmpty || args.value("header-file") != nil || !args.allValues("header").isEmpty
    }

    /// `parse`, with a header that cannot be sent reported as a usage error.
    func parsingHeaders(_ parse: () throws -> [RequestHeader]) throws -> [RequestHeader] {
        do {
            return try parse()
        } catch let invalid as InvalidRequestHeader {
            throw UsageError(invalid.description)
        }
    }

    func maxCacheBytes() throws -> Int64 {
        guard let text = args.value("max-cache-size") ?? config.maxCacheSize else { return ByteCache.defaultMaxBytes }
        guard let bytes = parseByteSize(text) else {
            throw UsageError("--max-cache-size needs a size like 500M or 10G, got '\(text)'")
        }
        return bytes
    }

    /// Opens the cache and says what opening found and repaired (a corrupt index moved aside,
    /// impossible records dropped, a read-only index).
    func openCache() throws -> ByteCache {
        let cache = try ByteCache(directory: cacheDirectory, maxBytes: try maxCacheBytes(), urlRules: try urlRules())
        for warning in cache.warnings { Console.warning(warning) }
        GlobalOptions.openedCaches.withLock { $0.append((cache, cache.warnings.count)) }
        return cache
    }

    /// Caches this run opened, and how many of their warnings were printed.
    private static let openedCaches = Mutex<[(ByteCache, Int)]>([])

    /// Prints what the caches noted after they were opened (a data file found missing or short
    /// when its entry was opened), once, as the command ends; then lets them go, so that each
    /// closes its index (SQLite checkpoints its WAL on close) before the process exits.
    static func printLaterCacheWarnings() {
        let caches = openedCaches.withLock { list in
            defer { list = [] }
            return list
        }
        for (cache, printed) in caches {
            for warning in cache.warnings.dropFirst(printed) { Console.warning(warning) }
        }
    }

    func fetchOptions() throws -> FetchOptions {
        var options = FetchOptions()
        if let timeout = try args.double("timeout", maximum: 86_400) ?? config.timeout {
            guard timeout > 0, timeout <= 86_400 else { throw UsageError("--timeout needs 0 to 86400 seconds") }
            options.timeout = timeout
        }
        options.headers = try requestHeaders()
        options.locationTrusted = args.flag("location-trusted")
        options.urlRules = try urlRules()
        if let agent = args.value("user-agent") ?? config.userAgent {
            guard !agent.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw UsageError("--user-agent holds a control character")
            }
            options.userAgent = agent
        }
        if let proxy = args.value("proxy") ?? config.proxy {
            guard let scheme = proxy.split(separator: ":").first?.lowercased(),
                ["http", "https", "socks5", "socks5h"].contains(scheme),
                proxy.contains("://")
            else {
                throw UsageError("--proxy needs a URL such as http://127.0.0.1:3128, got '\(URLText.redacted(proxy))'")
            }
            options.proxy = proxy
        }
        if let ca = args.value("cacert") ?? config.cacert {
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw UsageError("--cacert \(ca): no such readable file")
            }
            options.caCertPath = ca
        }
        return options
    }

    func session() throws -> MediaSession {
        if offline && noCache { throw UsageError("--offline needs the cache; it cannot be combined with --no-cache") }
        return MediaSession(
            cache: noCache ? nil : try openCache(), fetchOptions: try fetchOptions(), offline: offline,
            cancellation: Interrupt.cancellation)
    }
}
