import ByteSources
import MediaKit
import Reports

/// The ffprobe command line `mprobe ffprobe` understands: ffprobe's single-dash options that
/// pipelines pass for JSON with the format and streams, in ffprobe's syntax and with its
/// meaning; anything else is a usage error naming it. mprobe's own options (`--cache-dir`,
/// `--offline`...) may be added with two dashes, which no ffprobe option has.
struct FFprobeArguments {
    /// What to show, from `-show_format`, `-show_streams` and `-show_entries`, in their order.
    let entries: FFprobeEntries
    /// `-select_streams`.
    let streams: String?
    let input: String
    /// `-v`/`-loglevel` as FFmpeg's number (`error` = 16, `warning` = 24, `info` = 32, the default).
    let logLevel: Int
    /// The two-dash mprobe options.
    let global: Arguments

    /// ffprobe's log level names and their numbers.
    private static let levels = [
        "quiet": -8, "panic": 0, "fatal": 8, "error": 16, "warning": 24, "info": 32,
        "verbose": 40, "debug": 48, "trace": 56,
    ]

    init(_ argv: [String]) throws {
        var entries = FFprobeEntries()
        var streams: String?
        var input: String?
        var logLevel = 32
        var mprobeOptions: [String] = []
        var i = 0
        func value(_ option: String) throws -> String {
            guard i < argv.count else { throw UsageError("\(option) needs a value") }
            defer { i += 1 }
            return argv[i]
        }
        func setInput(_ arg: String) throws {
            guard input == nil else { throw UsageError("one input only: '\(arg)' after '\(input ?? "")'") }
            guard arg != "-" else { throw UsageError("mprobe ffprobe cannot read stdin ('-'): give a URL or a path") }
            input = arg
        }
        while i < argv.count {
            let arg = argv[i]
            i += 1
            if arg.hasPrefix("--") {
                mprobeOptions.append(arg)
                if case .value = GlobalOptions.options.named(String(arg.dropFirst(2)))?.takes, i < argv.count {
                    mprobeOptions.append(argv[i])
                    i += 1
                }
                continue
            }
            switch arg {
            case "-show_format": entries.showFormat()
            case "-show_streams": entries.showStreams()
            case "-show_entries":
                do {
                    try entries.showEntries(try value(arg))
                } catch let invalid as InvalidOption {
                    throw UsageError(invalid.shown { "-" + $0 })
                }
            case "-select_streams": streams = try value(arg)
            case "-of", "-print_format":
                let format = try value(arg)
                guard format == "json" else {
                    throw UsageError("\(arg) \(format): mprobe ffprobe writes ffprobe's JSON only (-of json)")
                }
            case "-v", "-loglevel": logLevel = try Self.logLevel(try value(arg))
            case "-hide_banner": break  // mprobe prints no banner
            case "-i": try setInput(try value(arg))
            default:
                guard !arg.hasPrefix("-") || arg == "-" else {
                    throw UsageError("\(arg) is not an ffprobe option mprobe ffprobe supports")
                }
                try setInput(arg)
            }
        }
        guard let input else { throw UsageError("give one input (a URL or a path)") }
        self.entries = entries
        self.streams = streams
        self.input = input
        self.logLevel = logLevel
        global = try Arguments(mprobeOptions, options: FFprobeArguments.accepted)
    }

    /// mprobe's own options, in `--name` form among ffprobe's: the common ones that take a value,
    /// and the flags that say how to fetch (output is ffprobe's, so not --json or -v).
    static let accepted = GlobalOptions.options.filter { option in
        if case .value = option.takes { return true }
        return ["no-cache", "offline", "location-trusted"].contains(option.name)
    }

    /// `LEVEL`, a number, or with ffprobe's flags in front (`repeat+level+error`).
    private static func logLevel(_ text: String) throws -> Int {
        let level = String(text.split(separator: "+").last ?? "")
        guard let n = levels[level] ?? Int(level) else {
            throw UsageError(
                "-v \(text): not a log level (\(levels.sorted { $0.value < $1.value }.map(\.key).joined(separator: ", ")))"
            )
        }
        return n
    }
}
