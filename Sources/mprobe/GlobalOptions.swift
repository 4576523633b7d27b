import ByteCache
import Foundation
import MediaSource
import RangeFetch
import Synchronization

/// Options every command that reads input understands.
struct GlobalOptions {
    static let valueOptions: Set<String> = ["cache-dir", "timeout", "cacert", "max-cache-size"]
    static let flagOptions: Set<String> = ["no-cache", "offline", "json", "help", "verbose"]
    static let help = """
        Common options:
          --cache-dir DIR        cache directory (default: $MPROBE_CACHE_DIR, else $XDG_CACHE_HOME/mprobe,
                                 else ~/.cache/mprobe)
          --max-cache-size SIZE  cache size limit, e.g. 500M, 10G (default 10G); least recently used
                                 resources are evicted; a resource bigger than the limit is streamed through
          --no-cache             do not use the cache (remote bytes are kept in memory only)
          --offline              never touch the network; a byte that is not cached is an error (exit 4)
          --timeout SECONDS      connect timeout and longest stall of a transfer (default 30)
          --cacert FILE          extra CA certificates (PEM) for HTTPS origins
          --json                 machine-readable output
          -h, --help             this help
        """

    let args: Arguments

    init(_ args: Arguments) { self.args = args }

    var json: Bool { args.flag("json") }
    var offline: Bool { args.flag("offline") }
    var noCache: Bool { args.flag("no-cache") }

    /// `--cache-dir`, else `MPROBE_CACHE_DIR`, else `$XDG_CACHE_HOME/mprobe`, else `~/.cache/mprobe`.
    var cacheDirectory: String {
        let env = ProcessInfo.processInfo.environment
        if let dir = args.value("cache-dir"), !dir.isEmpty { return dir }
        if let dir = env["MPROBE_CACHE_DIR"], !dir.isEmpty { return dir }
        if let xdg = env["XDG_CACHE_HOME"], !xdg.isEmpty { return xdg + "/mprobe" }
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.cache/mprobe"
    }

    func maxCacheBytes() throws -> Int64 {
        guard let text = args.value("max-cache-size") else { return ByteCache.defaultMaxBytes }
        guard let bytes = parseByteSize(text) else {
            throw UsageError("--max-cache-size needs a size like 500M or 10G, got '\(text)'")
        }
        return bytes
    }

    /// Opens the cache and says what opening found and repaired (a corrupt index moved aside,
    /// impossible records dropped, a read-only index).
    func openCache() throws -> ByteCache {
        let cache = try ByteCache(directory: cacheDirectory, maxBytes: try maxCacheBytes())
        for warning in cache.warnings { Console.warning(warning) }
        GlobalOptions.openedCaches.withLock { $0.append((cache, cache.warnings.count)) }
        return cache
    }

    /// Caches this run opened, and how many of their warnings were printed.
    private static let openedCaches = Mutex<[(ByteCache, Int)]>([])

    /// Prints what the caches noted after they were opened (a data file found missing or short
    /// when its entry was opened), once, as the command ends.
    static func printLaterCacheWarnings() {
        for (cache, printed) in openedCaches.withLock({ $0 }) {
            for warning in cache.warnings.dropFirst(printed) { Console.warning(warning) }
        }
    }

    func fetchOptions() throws -> FetchOptions {
        var options = FetchOptions()
        if let timeout = try args.double("timeout", maximum: 86_400) {
            guard timeout > 0 else { throw UsageError("--timeout must be positive") }
            options.timeout = timeout
        }
        if let ca = args.value("cacert") {
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw UsageError("--cacert \(ca): no such readable file")
            }
            options.caCertPath = ca
        }
        return options
    }

    func session() throws -> MediaSession {
        if offline && noCache { throw UsageError("--offline needs the cache; it cannot be combined with --no-cache") }
        return MediaSession(cache: noCache ? nil : try openCache(), fetchOptions: try fetchOptions(), offline: offline,
                            cancellation: Interrupt.cancellation)
    }
}
