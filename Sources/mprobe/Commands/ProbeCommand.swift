import Foundation
import MediaKit
import MediaSource
import Reports

/// `mprobe [probe] URL... [--json]`: container, duration, tracks and MP4 layout.
enum ProbeCommand: Command {
    static let name = "probe"
    static let summary = "duration, container, tracks and moov position (the default command)"
    static let help = """
        Usage: mprobe URL|PATH...            (same as mprobe probe)
               mprobe probe URL|PATH... [--json] [--fast] [-j N] [-i FILE|-]

        Reports the container, duration, size, bit rate and every track (codec, profile, size,
        frame rate, pixel format, sample rate, channels, language, rotation), and for MP4/MOV
        where the moov box sits and whether the file is fragmented.

        What it reads: for MP4/MOV the top-level box headers, then the whole moov in one request
        (the first request is 64 KiB; a moov at the end comes with the rest of the file after the
        media data when that is at most 16 MiB, else in its own request), plus the 64 KiB after the
        moov. libavformat then reads the first packets of each track from the cache, or with one more
        small request, to fill in fields the header lacks (pixel format, profile of some codecs).
        --fast skips that step: header fields only, no sample data.

          --json        one JSON object per input (JSON Lines for several inputs)
          --fast        header only: no sample data is read
          -j N          probe N inputs at once (default 4); output stays in input order
          -i FILE       read inputs from FILE, one per line ('-' for stdin)
          -v            also show what it cost (requests, bytes) and FFmpeg's warnings

        With several inputs one failure does not stop the others; the exit status is then 1 if
        any failed. With one input it is that failure's own code.

        \(GlobalOptions.help)
        """
    static let valueOptions: Set<String> = GlobalOptions.valueOptions.union(["jobs", "i"])
    static let flagOptions: Set<String> = GlobalOptions.flagOptions.union(["fast"])

    static func run(_ args: Arguments) throws -> ExitCode {
        let options = try GlobalOptions(args)
        let inputs = try InputList(operands: args.positionals, listFile: args.value("i"))
        let jobs = try jobsOption(args)
        let verbose = args.flag("verbose")
        if verbose { FFmpegLog.showWarnings() }
        let session = try options.session()
        var prober = Prober()
        prober.fast = args.flag("fast")
        let probe = prober
        var failures = BatchFailures(json: options.json, urlRules: try options.urlRules())
        let count = Batch.run(next: inputs.next, jobs: jobs, work: { _, input in
            Result { try probe.probe(input, session: session) }
        }, emit: { _, input, result in
            switch result {
            case .success(let r):
                for warning in r.warnings { Console.warning(warning) }
                if options.json {
                    Console.out(ProbeReport.json(r).text)
                } else {
                    Console.out(ProbeOutput.human(r, verbose: verbose))
                }
            case .failure(let error):
                failures.report(input: input, error: error)
            }
        })
        guard count > 0 else { throw UsageError("probe needs at least one URL or path") }
        return failures.exitCode(inputs: count)
    }
}
