import ByteSources
import MediaKit

/// `--start`, `--seconds` and `--tracks`, shared by prefetch and check.
struct WindowOptions {
    static let options: [Option] = [
        Option("start", .value("T"), "window start in seconds (default 0)"),
        Option("seconds", .value("N"), "window length in seconds (default 10)"),
        Option(
            "tracks", .value("LIST"),
            """
            default (the default video and audio track), all, or a comma list of
            track indices and kinds, e.g. 0,2 or video,audio
            """),
    ]

    let window: PlaybackWindow
    var start: Double { window.start }
    var seconds: Double { window.seconds }
    var tracks: TrackSelection { window.tracks }

    init(_ args: Arguments) throws {
        let (start, seconds) = (try args.double("start"), try args.double("seconds"))
        window = try usage { try PlaybackWindow(start: start, seconds: seconds, tracks: args.value("tracks")) }
    }
}

/// Runs `body`, turning an option out of range into a usage error that names it as a flag.
func usage<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let invalid as InvalidOption {
        throw UsageError(invalid.shown { "--" + $0 })
    }
}

func jobsOption(_ args: Arguments) throws -> Int {
    guard let text = args.value("jobs") else { return 4 }
    guard let n = Int(text), n >= 1 else { throw UsageError("-j needs a positive number, got '\(text)'") }
    return n
}
