import Foundation

/// Defaults a user would otherwise repeat on every command line, from
/// `$XDG_CONFIG_HOME/mprobe/config.json` (else `~/.config/mprobe/config.json`) or `--config FILE`.
/// Flags on the command line win. Read with Foundation's `JSONDecoder`; an unknown key is an error
/// naming the key and the file, so a typo never silently does nothing.
///
/// ```json
/// {
///   "cache_dir": "/var/cache/mprobe", "max_cache_size": "50G", "timeout": 20,
///   "headers": ["X-Team: video"], "user_agent": "acme-probe/1", "proxy": "http://proxy:3128",
///   "cache_key": "s3", "cache_key_ignore_query": ["session"],
///   "public_hosts": ["media.example.com"], "allow_origins": ["https://app.example.com"],
///   "jobs": "postgres://mprobe@db.internal/mprobe",
///   "hosts": {
///     "*.cloudfront.net": { "cache_key": "cloudfront" },
///     "media.internal": { "headers": ["Authorization: Bearer ..."] }
///   }
/// }
/// ```
struct ConfigFile: Decodable {
    var cacheDir: String?
    var maxCacheSize: String?
    var timeout: Double?
    var cacert: String?
    var userAgent: String?
    var proxy: String?
    var headers: [String]?
    var cacheKey: String?
    var cacheKeyIgnoreQuery: [String]?
    var hosts: [String: HostSettings]?
    /// `serve` only: `--public-host` and `--allow-origin`, as lists.
    var publicHosts: [String]?
    var allowOrigins: [String]?
    /// `serve` only: `--jobs`.
    var jobs: String?

    /// What may differ by host pattern (`*.example.com`, `example.com:8080`).
    struct HostSettings: Decodable {
        var headers: [String]?
        var cacheKey: String?
        var cacheKeyIgnoreQuery: [String]?

        static let keys: Set<String> = ["headers", "cache_key", "cache_key_ignore_query"]

        enum CodingKeys: String, CodingKey {
            case headers, cacheKey = "cache_key", cacheKeyIgnoreQuery = "cache_key_ignore_query"
        }
    }

    // Spelled out: a key-decoding strategy would also rewrite host patterns, the keys of `hosts`.
    enum CodingKeys: String, CodingKey {
        case cacheDir = "cache_dir", maxCacheSize = "max_cache_size", timeout, cacert, userAgent = "user_agent", proxy,
            headers, cacheKey = "cache_key", cacheKeyIgnoreQuery = "cache_key_ignore_query", hosts,
            publicHosts = "public_hosts", allowOrigins = "allow_origins", jobs
    }

    static let keys: Set<String> = [
        "cache_dir", "max_cache_size", "timeout", "cacert", "user_agent", "proxy",
        "headers", "cache_key", "cache_key_ignore_query", "hosts", "public_hosts", "allow_origins", "jobs",
    ]

    /// The file to read: `--config FILE` (which must exist), else the user's file if there is one.
    static func path(explicit: String?) -> String? {
        if let explicit { return explicit }
        let env = ProcessInfo.processInfo.environment
        let base =
            env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.config")
        let path = base + "/mprobe/config.json"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    static func load(_ path: String) throws -> ConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("config \(path): cannot read it")
        }
        // Unknown keys first: JSONDecoder ignores them, and a misspelt key must not be ignored.
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw UsageError("config \(path): not a JSON object")
        }
        if let unknown = Set(object.keys).subtracting(keys).sorted().first {
            throw UsageError(
                "config \(path): unknown key '\(unknown)' (known: \(keys.sorted().joined(separator: ", ")))")
        }
        for (pattern, value) in (object["hosts"] as? [String: Any]) ?? [:] {
            guard ConfigFile.isHostPattern(pattern) else {
                throw UsageError(
                    "config \(path): hosts.\(pattern) is not a host pattern (example.com, *.example.com, example.com:8443)"
                )
            }
            guard let settings = value as? [String: Any] else {
                throw UsageError("config \(path): hosts.\(pattern) is not an object")
            }
            if let unknown = Set(settings.keys).subtracting(HostSettings.keys).sorted().first {
                throw UsageError("config \(path): unknown key '\(unknown)' in hosts.\(pattern)")
            }
        }
        do {
            return try JSONDecoder().decode(ConfigFile.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw UsageError("config \(path): '\(key)' has the wrong type")
        }
    }

    /// `example.com`, `*.example.com`, either with `:PORT`: what `hosts` keys, `--header-for` and
    /// `--location-trusted` take.
    static func isHostPattern(_ text: String) -> Bool {
        let parts = (text.hasPrefix("*.") ? String(text.dropFirst(2)) : text).split(
            separator: ":", omittingEmptySubsequences: false)
        let nameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        return (1...2).contains(parts.count) && !parts[0].isEmpty && parts[0].allSatisfy(nameCharacters.contains)
            && !parts[0].hasPrefix(".") && !parts[0].hasSuffix(".")
            && (parts.count == 1 || UInt16(parts[1]).map { $0 > 0 } == true)
    }
}
