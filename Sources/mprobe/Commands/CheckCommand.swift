import Foundation
import MediaKit
import Reports

/// `mprobe check URL`: decode a window, the "will it play" check.
enum CheckCommand: OptionCommand {
    static let name = "check"
    static let summary = "decode a window of each track: will it play (also --offline)"
    static let usageText = """
        Usage: mprobe check URL|PATH [--start T] [--seconds N] [--tracks LIST] [--offline] [--json]
        """
    static let about = """
        Demuxes and decodes every packet of the window [T, T+N] for the default video and audio
        track (or --tracks), as a player starting at T would (video from the key frame before T),
        and reports the frames decoded per track and any decode error. Exit 0 only if the whole
        window decoded; a decode error is a media error (exit 5). With --offline, bytes that are
        not cached are an error naming the range (exit 4): run it after `mprobe prefetch` to
        prove that playback can start without the network. --json gives one object: tracks with
        frames, packets, errors; "ok".
        """
    static let options: [Option] =
        WindowOptions.options + [
            Option(
                "variant", .value("V"),
                """
                HLS: the variant to check (best, worst or a BANDWIDTH, as prefetch takes);
                its segments of the window are read in a row, as a player's demuxer does
                """)
        ]

    static func run(_ args: Arguments) throws -> ExitCode {
        guard args.positionals.count == 1 else { throw UsageError("check needs exactly one URL or path") }
        let options = try GlobalOptions(args)
        let window = try WindowOptions(args)
        let session = try options.session()
        let r: Checker.Result
        do {
            var checker = Checker()
            if let text = args.value("variant") { checker.pick = try variantPick(text) }
            r = try checker.check(
                args.positionals[0], session: session, start: window.start,
                seconds: window.seconds, tracks: window.tracks)
        } catch {
            // Reported as a batch of one: named by its input, and as JSON with --json.
            var failures = BatchFailures(json: options.json, urlRules: try options.urlRules())
            failures.report(input: args.positionals[0], error: error)
            return failures.exitCode(inputs: 1)
        }
        if options.json {
            Console.out(CheckReport.json(r).text)
        } else {
            Console.out(
                r.input + String(format: "  %.3f–%.3f s: %@", r.start, r.start + r.seconds, r.ok ? "plays" : "FAILS"))
            for t in r.tracks {
                var line =
                    "  #\(t.index) \(t.kind.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0))  \(t.codec)  \(t.frames) frames from \(t.packets) packets"
                if !t.errors.isEmpty { line += "  \(t.errors.count) errors, first: \(t.errors[0])" }
                Console.out(line)
            }
        }
        return r.ok ? .success : .media
    }
}
