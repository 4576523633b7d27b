import MediaKit

/// `--start`, `--seconds` and `--tracks`, shared by prefetch and check.
struct WindowOptions {
    static let valueOptions: Set<String> = ["start", "seconds", "tracks"]
    static let help = """
          --start T        window start in seconds (default 0)
          --seconds N      window length in seconds (default 10)
          --tracks LIST    default (the default video and audio track), all, or a comma list of
                           track indices and kinds, e.g. 0,2 or video,audio
        """

    let start: Double
    let seconds: Double
    let tracks: TrackSelection

    init(_ args: Arguments) throws {
        start = try args.double("start") ?? 0
        seconds = try args.double("seconds") ?? 10
        guard seconds > 0 else { throw UsageError("--seconds must be positive") }
        if let text = args.value("tracks") {
            guard let selection = TrackSelection.parse(text) else {
                throw UsageError("--tracks needs default, all, or a list like 0,1 or video,audio; got '\(text)'")
            }
            tracks = selection
        } else {
            tracks = .defaults
        }
    }
}

func jobsOption(_ args: Arguments) throws -> Int {
    guard let text = args.value("jobs") else { return 4 }
    guard let n = Int(text), n >= 1 else { throw UsageError("-j needs a positive number, got '\(text)'") }
    return n
}
