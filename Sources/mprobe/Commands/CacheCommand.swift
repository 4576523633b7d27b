import ByteSources
import Caching
import Foundation
import MediaKit
import Reports
import URLSupport

/// `mprobe cache stats|ls|clear|rm URL|ranges URL`.
enum CacheCommand: OptionCommand {
    static let name = "cache"
    static let summary = "inspect or clear the cache (stats, ls, ranges, rm, clear)"
    static let usageText = """
        Usage: mprobe cache stats|ls|clear [--json] [--cache-dir DIR]
               mprobe cache ranges URL [--json]
               mprobe cache rm URL [--json]
        """
    static let about = """
          stats    resources, stored bytes, limit, hits and misses
          ls       every cached resource: size, stored bytes, last access, URL
          ranges   the byte ranges of URL that are cached, drawn over the terminal's width:
                   the bytes (# cached, + partly, . missing, M the moov, m the moov not all
                   cached; blocks on a UTF-8 terminal) and each track's buffered time over
                   the duration, then the ranges (--json: "end" is exclusive)
          rm       remove URL from the cache
          clear    remove everything
        """
    static let options: [Option] = []

    static func run(_ args: Arguments) throws -> ExitCode {
        guard let action = args.positionals.first else {
            throw UsageError("cache needs an action: stats, ls, ranges, rm or clear")
        }
        let options = try GlobalOptions(args)
        let operands = Array(args.positionals.dropFirst())
        func url() throws -> String {
            guard operands.count == 1 else { throw UsageError("cache \(action) needs exactly one URL") }
            return operands[0]
        }
        if ["stats", "ls", "clear"].contains(action), !operands.isEmpty {
            throw UsageError("cache \(action) takes no operands")
        }
        if action == "clear" {
            try clear(options)
            return .success
        }
        let cache = try options.openCache()
        switch action {
        case "stats": try stats(cache, json: options.json)
        case "ls": try list(cache, json: options.json)
        case "ranges": return try ranges(cache, url: try url(), options: options)
        case "rm":
            let u = try url()
            let shown = cache.urlRules.shown(u)
            let removed = try cache.remove(url: u)
            if options.json {
                Console.out(JSON.object([("url", .string(shown)), ("removed", .bool(removed))]).text)
            } else {
                Console.out(removed ? "removed \(shown)" : "not cached: \(shown)")
            }
        default:
            throw UsageError("unknown cache action '\(action)' (stats, ls, ranges, rm, clear)")
        }
        return .success
    }

    /// Empties the cache whatever state it is in: through the index when it opens and can be
    /// written, else by removing its files (an index that cannot be opened must not keep the user
    /// from starting over).
    private static func clear(_ options: GlobalOptions) throws {
        let directory = options.cacheDirectory
        do {
            try options.openCache().clear()
        } catch let error where error is CacheError || error is SQLiteError {
            try ByteCache.reset(directory: directory)
        }
        Console.out(options.json ? JSON.object([("cleared", .bool(true))]).text : "cache cleared: \(directory)")
    }

    private static func stats(_ cache: ByteCache, json: Bool) throws {
        let s = try cache.stats()
        if json {
            Console.out(CacheReport.stats(s, directory: cache.directory).text)
        } else {
            Console.out(
                """
                directory  \(cache.directory)
                resources  \(s.resources)
                stored     \(Console.humanBytes(s.storedBytes)) of \(Console.humanBytes(s.maxBytes))
                reads      \(s.hits) hits, \(s.misses) misses
                bytes      \(Console.humanBytes(s.bytesFromCache)) from cache, \(Console.humanBytes(s.bytesFetched)) fetched
                """)
        }
    }

    private static func list(_ cache: ByteCache, json: Bool) throws {
        let resources = try cache.resources()
        if json {
            Console.out(CacheReport.resources(resources).text)
            return
        }
        if resources.isEmpty { Console.out("cache is empty (\(cache.directory))"); return }
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        for r in resources {
            let size = r.size.map { Console.humanBytes($0) } ?? "?"
            let percent =
                r.size.map { $0 > 0 ? String(format: "%3.0f%%", 100 * Double(r.storedBytes) / Double($0)) : "100%" }
                ?? "  ?"
            let when = formatter.string(from: Date(timeIntervalSince1970: r.lastAccess))
            Console.out("\(percent)  \(Console.humanBytes(r.storedBytes)) of \(size)  \(when)  \(r.url)")
        }
    }

    private static func ranges(_ cache: ByteCache, url: String, options: GlobalOptions) throws -> ExitCode {
        let resource = try cache.resource(for: url)
        let ranges = resource?.ranges.ranges ?? []
        // Buffered time ranges and the moov's place need the header from the cache; a resource
        // whose header is not cached (or that is not media) has none, and that is not an error here.
        let media: CachedMedia? =
            resource == nil
            ? nil
            : try? BufferedRanges.cachedMedia(
                url, session: MediaSession(cache: cache, fetchOptions: try options.fetchOptions(), offline: true))
        let stream =
            media != nil || resource == nil
            ? nil
            : StreamBuffer.cached(
                url, session: MediaSession(cache: cache, fetchOptions: try options.fetchOptions(), offline: true))
        let shown = cache.urlRules.shown(url)
        if options.json {
            Console.out(CacheReport.ranges(url: shown, resource: resource, media: media, stream: stream).text)
            return .success
        }
        guard let resource else {
            Console.out("not cached: \(shown)")
            return .success
        }
        var summary = [
            resource.size.map { "size \($0)" } ?? "size unknown", "\(ranges.count) ranges",
            "\(resource.storedBytes) bytes cached",
        ]
        if let duration = media?.duration { summary.append(String(format: "duration %.3f s", duration)) }
        if let moov = media?.moov { summary.append("moov \(moov.lowerBound)-\(moov.upperBound - 1)") }
        Console.out("\(shown): " + summary.joined(separator: ", "))
        if let size = resource.size {
            for line in CacheMap.lines(
                size: size, ranges: ranges, media: media, width: Terminal.width, charset: Terminal.mapCharset)
            {
                Console.out(line)
            }
        }
        if let stream {
            for b in stream {
                let spans = b.buffered.map { String(format: "%.3f–%.3f s", $0.lowerBound, $0.upperBound) }
                Console.out(
                    "  \(b.role) \(b.bandwidth.map { "\($0 / 1000) kb/s " } ?? "")(of \(String(format: "%.3f s", b.duration))): "
                        + (spans.isEmpty ? "nothing buffered" : "buffered " + spans.joined(separator: ", "))
                        + "  \(cache.urlRules.shown(b.uri))")
            }
        } else if media == nil {
            Console.out("buffered time ranges: unknown (the header is not cached)")
        }
        for r in ranges {
            Console.out("  \(r.lowerBound)-\(r.upperBound - 1)  (\(Console.humanBytes(Int64(r.count))))")
        }
        return .success
    }
}
