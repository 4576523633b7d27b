import ByteSources
import Foundation
import MediaKit
import Reports

/// `mprobe prefetch URL...`: warm the cache with what a player needs to start at T.
enum PrefetchCommand: OptionCommand {
    static let name = "prefetch"
    static let summary = "cache the bytes a player needs to start at T and play N seconds"
    static let usageText = """
        Usage: mprobe prefetch URL... [--start T] [--seconds N] [--tracks LIST] [--for PLAYERS] [--plan] [--json]
                                      [--connections C] [-j N] [-i FILE|-] [--quiet]
        """
    static let about = """
        Plans from the demuxer's index exactly which byte ranges a player needs to start at T and
        play N seconds (the header, then for video every sample from the key frame at or before T,
        for the other tracks the samples in the window), merges ranges less than 64 KiB apart,
        drops what is cached, and fetches the rest in parallel. Containers without an index
        (MPEG-TS, some MKV) get a byte window estimated from the bit rate, and the output says so.
        The plan is for every known player unless --for says otherwise: what Chromium and
        Firefox (32 KiB blocks) and VLC (the first 4 MiB) read besides libavformat is added, and
        --plan says what each added range is for. Afterwards `mprobe check URL --seconds N
        --offline` plays the window without the network.

        An HLS playlist or DASH manifest: the playlists, then the initialization sections and the
        segments (or byte ranges) that cover the window, of the played variant (--variant) and of
        the audio rendition it plays with, and what the players read besides to start there (the
        first seconds of the variants they open, the window's start on the variant they start
        on), each one request. A live playlist (no #EXT-X-ENDLIST) is refused: its segments slide
        away. Encrypted segments are refused (mprobe does not fetch keys). --json gives one object
        per input, ranges included.
        """
    static let options: [Option] =
        WindowOptions.options + [
            Option("plan", "print the plan and fetch nothing more (the header is read to make it)"),
            Option(
                "for", .value("PLAYERS"),
                """
                the players to plan for: all (the default) or a comma list of ffmpeg
                (and mpv), chromium, firefox, avplayer, exoplayer, vlc, gstreamer; each
                adds what it reads besides the window (see --plan): of a file, the
                head or block alignment; of HLS/DASH, the first seconds of the variants
                it opens, the window's start on the variant it starts on, the segment
                before
                """),
            Option("connections", .value("C"), "parallel requests per input (default 4)"),
            Option(
                "variant", .value("V"), "HLS: best (highest bandwidth, the default), worst, or a BANDWIDTH as listed"),
            Option(
                "first-segment",
                """
                HLS/DASH: also the played variant's first segment, whoever the plan is
                for (the plan for ffmpeg, in the default, has it already)
                """),
            Option("jobs", short: "j", .value("N"), "inputs at once (default 4)"),
            Option("i", .value("FILE"), "inputs from FILE, one per line ('-' for stdin)"),
            Option("quiet", "no progress bar (there is none when stderr is not a terminal)"),
        ]

    static func run(_ args: Arguments) throws -> ExitCode {
        let options = try GlobalOptions(args)
        let window = try WindowOptions(args)
        let inputs = try InputList(operands: args.positionals, listFile: args.value("i"))
        let jobs = try jobsOption(args)
        var job = PrefetchJob()
        if let text = args.value("connections") {
            guard let c = Int(text), c >= 1, c <= 32 else {
                throw UsageError("--connections needs 1...32, got '\(text)'")
            }
            job.prefetcher.connections = c
        }
        job.planOnly = args.flag("plan")
        if let text = args.value("for") {
            do { job.planner.players = try PlayerProfile.named(text) } catch let e as InvalidOption {
                throw UsageError(e.shown { "--\($0)" })
            }
        }
        if options.noCache && !job.planOnly {
            throw UsageError(
                "prefetch keeps bytes in the cache for later; it cannot run with --no-cache (use --plan to see the plan)"
            )
        }
        let planOnly = job.planOnly
        let session = try options.session()
        let bar = ProgressBar(quiet: args.flag("quiet") || options.json || !inputs.isSingleOperand)
        let prefetch = job
        var failures = BatchFailures(json: options.json, urlRules: try options.urlRules())
        var stream = StreamPrefetchJob()
        if let text = args.value("variant") { stream.pick = try variantPick(text) }
        stream.firstSegment = args.flag("first-segment")
        let streamJob = stream
        let count = Batch.run(
            next: inputs.next, jobs: jobs,
            work: { _, input in
                Result { () throws -> PrefetchOutcome in
                    defer { bar.finish() }
                    return try prefetch.run(
                        input, session: session, start: window.start, seconds: window.seconds,
                        tracks: window.tracks, stream: streamJob
                    ) { fetched, total in
                        bar.update(done: fetched, total: total, detail: "fetching")
                    }
                }
            },
            emit: { _, input, result in
                switch result {
                case .success(.stream(let outcome)):
                    Console.out(options.json ? StreamPrefetchReport.json(outcome).text : PrefetchOutput.human(outcome))
                case .success(.file(let outcome)):
                    if let note = outcome.plan.note, !options.json {
                        // An estimate is a warning; a window from the Cues is how it was planned.
                        if outcome.plan.estimated {
                            Console.warning(note)
                        } else {
                            Console.writeStderr("mprobe: \(note)\n")
                        }
                    }
                    Console.out(
                        options.json
                            ? PrefetchReport.json(outcome, planOnly: planOnly).text
                            : PrefetchOutput.human(outcome, planOnly: planOnly))
                case .failure(let error):
                    failures.report(input: input, error: error)
                }
            })
        guard count > 0 else { throw UsageError("prefetch needs at least one URL") }
        return failures.exitCode(inputs: count)
    }

}

/// `--variant best|worst|BANDWIDTH`, for prefetch and check of an HLS stream.
func variantPick(_ text: String) throws -> VariantPick {
    guard let pick = VariantPick(text) else {
        throw UsageError("--variant needs best, worst or a bandwidth in bits per second, got '\(text)'")
    }
    return pick
}
