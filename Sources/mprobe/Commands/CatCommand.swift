import MediaSource

/// `mprobe cat URL [--range A-B]`: the bytes, through the cache, to stdout.
enum CatCommand: Command {
    static let name = "cat"
    static let summary = "write a resource's bytes (through the cache) to stdout"
    static let help = """
        Usage: mprobe cat URL|PATH [--range A-B] [options]

        Writes the bytes of URL to stdout, served from the cache where present and fetched with
        closed HTTP range requests where not (only the missing gaps are requested). Local paths and
        file:// URLs are read directly.

          --range A-B   only bytes A to B, inclusive as in HTTP (A- means to the end)
          -v, --verbose report requests and bytes on stderr when done

        \(GlobalOptions.help)
        """
    static let valueOptions: Set<String> = GlobalOptions.valueOptions.union(["range"])
    static let flagOptions: Set<String> = GlobalOptions.flagOptions

    static func run(_ args: Arguments) throws -> ExitCode {
        guard args.positionals.count == 1 else { throw UsageError("cat needs exactly one URL or path") }
        let options = GlobalOptions(args)
        let requested = try args.value("range").map(parseRange)
        let session = try options.session()
        let source = try session.open(args.positionals[0])
        defer { report(source, verbose: args.flag("verbose")) }

        var offset = requested?.lowerBound ?? 0
        let end = requested?.upperBound ?? Int64.max
        source.limitReadahead(to: requested?.upperBound)
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while offset < end {
            let want = Int(min(Int64(chunk), end - offset))
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
            if n == 0 { break }
            do {
                try Console.writeStdout(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            } catch is StdoutClosed {
                return .success
            }
            offset += Int64(n)
        }
        return .success
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
        Console.error("\(c.requests) requests, \(c.connections) connections, \(Console.humanBytes(c.bytesFetched)) fetched, \(Console.humanBytes(c.bytesFromCache)) from cache")
    }
}
