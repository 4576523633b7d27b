import ByteSources
import URLSupport

/// `mprobe cat URL [--range A-B]`: the bytes, through the cache, to stdout.
enum CatCommand: OptionCommand {
    static let name = "cat"
    static let summary = "write a resource's bytes (through the cache) to stdout"
    static let usageText = "Usage: mprobe cat URL|PATH [--range A-B] [options]"
    static let about = """
        Writes the bytes of URL to stdout, served from the cache where present and fetched with
        closed HTTP range requests where not (only the missing gaps are requested). Local paths and
        file:// URLs are read directly. -v reports requests and bytes on stderr when done.
        """
    static let options = [
        Option("range", .value("A-B"), "only bytes A to B, inclusive as in HTTP (A- means to the end)")
    ]

    /// Bytes of the first missing gap fetched before anything is written (one readahead window).
    static let firstGapProbe: Int64 = 256 << 10

    static func run(_ args: Arguments) throws -> ExitCode {
        guard args.positionals.count == 1 else { throw UsageError("cat needs exactly one URL or path") }
        let options = try GlobalOptions(args)
        let requested = try args.value("range").map(parseRange)
        let session = try options.session()
        let input = args.positionals[0]
        var written: Int64 = 0
        do {
            // One version: if the resource changes before a byte was written, start over on the
            // new version; after that the output would mix two versions, so it is an error (exit 3).
            try session.onOneVersion {
                guard written == 0 else { throw SourceError.versionChanged(input: try options.urlRules().shown(input)) }
                try copy(try session.open(input), range: requested, verbose: args.flag("verbose"), written: &written)
            }
        } catch StdoutError.closed {
            return .success  // the reader went away (`| head`): a quiet stop
        } catch SourceError.versionChanged(let shown) where written > 0 {
            throw SourceError.inconsistentOrigin(
                input: shown,
                detail:
                    "changed on the server after \(written) bytes of the old version were written; the output is incomplete (run again)"
            )
        }
        return .success
    }

    /// Writes the bytes of `range` (all of them without one) to stdout, counting them in `written`.
    private static func copy(
        _ source: any MediaSource, range requested: Range<Int64>?, verbose: Bool,
        written: inout Int64
    ) throws {
        defer { report(source, verbose: verbose) }
        var offset = requested?.lowerBound ?? 0
        let end = requested?.upperBound ?? Int64.max
        source.limitReadahead(to: requested?.upperBound)
        // Ask the origin before the first byte goes out: if it changed since the cached bytes were
        // stored, the job learns it now and starts over on the new version, instead of failing after
        // printing old bytes. (The first missing window would be fetched next anyway.)
        if let gap = source.missingRanges(in: offset..<end).first {
            try source.prefetch(gap.lowerBound..<gap.lowerBound + min(Int64(gap.count), firstGapProbe))
        }
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while offset < end {
            let want = Int(min(Int64(chunk), end - offset))
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
            if n == 0 { break }
            try Console.writeStdout(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            written += Int64(n)
            offset += Int64(n)
        }
    }

    /// `A-B` inclusive, or `A-` to the end.
    static func parseRange(_ text: String) throws -> Range<Int64> {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int64(parts[0]), first >= 0 else {
            throw UsageError("--range needs A-B (inclusive byte offsets) or A-, got '\(text)'")
        }
        if parts[1].isEmpty { return first..<Int64.max }
        guard let last = Int64(parts[1]), last >= first, last < Int64.max else {
            throw UsageError("--range needs A-B with A <= B, got '\(text)'")
        }
        return first..<last + 1
    }

    private static func report(_ source: any MediaSource, verbose: Bool) {
        for warning in source.warnings { Console.warning(warning) }
        guard verbose else { return }
        let c = source.counters
        Console.error(
            "\(c.requests) requests, \(c.connections) connections, \(Console.humanBytes(c.bytesFetched)) fetched, \(Console.humanBytes(c.bytesFromCache)) from cache"
        )
    }
}
