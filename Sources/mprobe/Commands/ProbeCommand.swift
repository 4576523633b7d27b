import ByteSources
import FFmpeg
import Foundation
import MediaKit
import Reports

/// `mprobe [probe] URL... [--json]`: container, duration, tracks and MP4 layout.
enum ProbeCommand: OptionCommand {
    static let name = "probe"
    static let summary = "duration, container, tracks and moov position (the default command)"
    static let usageText = """
        Usage: mprobe URL|PATH...            (same as mprobe probe)
               mprobe probe URL|PATH... [--json | --of ffprobe] [--fast] [-j N] [-i FILE|-]
        """
    static let about = """
        Reports the container, duration, size, bit rate and every track (codec, profile, size,
        frame rate, pixel format, sample rate, channels, language, rotation), and for MP4/MOV
        where the moov box sits and whether the file is fragmented. An HLS playlist (master or
        media): its variants (bandwidth, resolution, codecs, frame rate, audio and subtitle
        groups), renditions, VOD or live, duration, segments, encryption, and the tracks of the
        first segment of the variants --variants picks.

        What it reads: for MP4/MOV the top-level box headers, then the whole moov in one request
        (the first request is 64 KiB; a moov at the end comes with the rest of the file after the
        media data when that is at most 16 MiB, else in its own request), plus the 64 KiB after the
        moov. libavformat then reads the first packets of each track from the cache, or with one more
        small request, to fill in fields the header lacks (pixel format, profile of some codecs).
        --fast skips that step: header fields only, no sample data.
        """
    static let options: [Option] = [
        Option(
            "of", .value("FORMAT"),
            """
            ffprobe: what `ffprobe -v error -of json -show_format -show_streams` prints, key for
            key (one object per input, laid out as ffprobe does); mprobe (the default) is
            mprobe's own report. See also `mprobe ffprobe`.
            """),
        Option("fast", "header only: no sample data is read"),
        Option(
            "variants", .value("V"),
            """
            for an HLS playlist: whose first segment to probe: best (the highest
            bandwidth, the default), all, or a count N of the highest (0: playlists only).
            Every variant's playlist is read; of segments, only those first ones (and
            the audio renditions the probed variants play with).
            """),
        Option("jobs", short: "j", .value("N"), "probe N inputs at once (default 4); output stays in input order"),
        Option("i", .value("FILE"), "read inputs from FILE, one per line ('-' for stdin)"),
    ]
    static let afterOptions = """
        --json gives one JSON object per input (JSON Lines for several inputs). With several inputs
        one failure does not stop the others; the exit status is then 1 if any failed. With one
        input it is that failure's own code.
        """

    /// `--of`: mprobe's report (human, or `--json`), or ffprobe's JSON.
    enum Output: String { case mprobe, ffprobe }

    static func run(_ args: Arguments) throws -> ExitCode {
        let options = try GlobalOptions(args)
        let inputs = try InputList(operands: args.positionals, listFile: args.value("i"))
        let jobs = try jobsOption(args)
        guard let output = Output(rawValue: args.value("of") ?? "mprobe") else {
            throw UsageError("--of needs ffprobe or mprobe, got '\(args.value("of") ?? "")'")
        }
        if output == .ffprobe && options.json { throw UsageError("--json and --of ffprobe are two outputs: give one") }
        let verbose = args.flag("verbose")
        if verbose { FFmpegLog.showWarnings() }
        let session = try options.session()
        var prober = Prober()
        prober.fast = args.flag("fast")
        let probe = prober
        var streams = StreamProber()
        if let text = args.value("variants") {
            guard let choice = VariantChoice(text) else {
                throw UsageError("--variants needs all, best or a count, got '\(text)'")
            }
            streams.variants = choice
        }
        let streamProbe = streams
        var failures = BatchFailures(json: options.json, urlRules: try options.urlRules())
        let count: Int
        switch output {
        case .mprobe:
            count = run(
                inputs, jobs: jobs, failures: &failures,
                work: { try probe.probe($0, session: session, streams: streamProbe) }
            ) { outcome in
                switch outcome {
                case .media(let r):
                    for warning in r.warnings { Console.warning(warning) }
                    Console.out(options.json ? ProbeReport.json(r).text : ProbeOutput.human(r, verbose: verbose))
                case .stream(let r):
                    Console.out(options.json ? StreamProbeReport.json(r).text : ProbeOutput.human(r, verbose: verbose))
                }
            }
        case .ffprobe:
            count = run(inputs, jobs: jobs, failures: &failures, work: { try probe.details($0, session: session) }) {
                details in
                for warning in details.warnings { Console.warning(warning) }
                Console.out(FFprobeReport.text(details))
            }
        }
        guard count > 0 else { throw UsageError("probe needs at least one URL or path") }
        return failures.exitCode(inputs: count)
    }

    /// Runs `work` on every input, `-j` at a time, and hands each result to `emit` in input order;
    /// failures are reported as they come. Returns how many inputs there were.
    private static func run<R>(
        _ inputs: InputList, jobs: Int, failures: inout BatchFailures,
        work: @escaping @Sendable (String) throws -> R, emit: (R) -> Void
    ) -> Int {
        Batch.run(
            next: inputs.next, jobs: jobs,
            work: { _, input in
                Result { try work(input) }
            },
            emit: { _, input, result in
                switch result {
                case .success(let r): emit(r)
                case .failure(let error): failures.report(input: input, error: error)
                }
            })
    }
}
