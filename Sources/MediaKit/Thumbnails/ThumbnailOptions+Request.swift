import ByteSources
import FFmpeg

extension ThumbnailOptions {
    /// What a user asked for, before it is checked. Exactly one of `every`, `count`, `at` (or none).
    public struct Request: Sendable {
        public var every: Double?
        public var count: Int?
        public var at: [Double]?
        public var width: Int?
        public var height: Int?
        public var format: String?
        public var quality: Int?
        public var accurate = false
        /// Sprite sheets: nil for none, "" for the automatic grid, else "COLSxROWS".
        public var sprite: String?
        /// "vtt,hls,dash" (any of them): the storyboards; hls or dash make sheets of their own.
        public var storyboard: String?
        public var skipBlack = false

        public init() {}
    }

    /// The options `request` asks for, each checked: ranges, the one-of rule, and the sprite
    /// sheet's bounds (before any fetch, a sheet too large to hold or to encode is refused).
    public init(validating request: Request) throws {
        self.init()
        let chosen = [request.every != nil, request.count != nil, request.at != nil].filter { $0 }.count
        guard chosen <= 1 else { throw InvalidOption(["every", "count", "at"], "are exclusive: give one") }
        if let every = request.every {
            guard every >= 0.001, every <= 1e9 else {
                throw InvalidOption("every", "needs 0.001 to 1000000000 seconds")
            }
            times = .every(every)
        }
        if let count = request.count {
            guard (1...ThumbnailOptions.maxCount).contains(count) else {
                throw InvalidOption("count", "needs 1...\(ThumbnailOptions.maxCount)")
            }
            times = .count(count)
        }
        if let at = request.at {
            guard !at.isEmpty, at.count <= ThumbnailOptions.maxCount, at.allSatisfy({ $0 >= 0 && $0 <= 1e9 }) else {
                throw InvalidOption(
                    "at", "needs 1 to \(ThumbnailOptions.maxCount) times in seconds, each 0 to 1000000000")
            }
            times = .at(at)
        }
        for (name, value) in [("width", request.width), ("height", request.height)] {
            if let value, !(16...8192).contains(value) { throw InvalidOption(name, "needs 16...8192 pixels") }
        }
        width = request.width
        height = request.height
        if let text = request.format {
            let name = text.lowercased() == "jpeg" ? "jpg" : text.lowercased()
            guard let parsed = ImageFormat(rawValue: name) else {
                throw InvalidOption("format", "needs jpg, png or webp")
            }
            format = parsed
        }
        if let quality = request.quality {
            guard (1...100).contains(quality) else { throw InvalidOption("quality", "needs 1...100") }
            self.quality = quality
        }
        accurate = request.accurate
        if let text = request.sprite {
            sprite = try SpriteLayout(parsing: text)
            if let problem = spriteProblem { throw InvalidOption("sprite", problem) }
        }
        skipBlack = request.skipBlack
        if let text = request.storyboard { try validateStoryboards(text) }
    }

    /// HLS and DASH storyboards place tiles by a fixed duration, on sheets a TV player can decode.
    private mutating func validateStoryboards(_ text: String) throws {
        let names = text.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let formats = names.compactMap(StoryboardFormat.init(rawValue:))
        guard !names.isEmpty, formats.count == names.count else {
            throw InvalidOption("storyboard", "needs vtt, hls and/or dash, comma separated")
        }
        storyboards = Set(formats)
        guard storyboards.contains(.hls) || storyboards.contains(.dash) else { return }
        if case .at = times {
            throw InvalidOption(
                "storyboard", "hls and dash place tiles every so many seconds: give --every or --count, not --at")
        }
        let (cellWidth, cellHeight) = outputSize(displayWidth: 16, displayHeight: 9)
        let side = StoryboardFormat.streamingSheetSide
        switch sprite {
        case .grid(let columns, let rows)?:
            guard columns * cellWidth <= side, rows * cellHeight <= side else {
                throw InvalidOption(
                    "sprite",
                    "makes sheets of \(columns * cellWidth)x\(rows * cellHeight): hls and dash "
                        + "storyboards keep sheets at most \(side) pixels a side, what TV players decode")
            }
        default:
            // Ten by ten tiles, or as many as fit the side.
            sprite = .grid(columns: max(1, min(10, side / cellWidth)), rows: max(1, min(10, side / cellHeight)))
        }
    }
}

extension SpriteLayout {
    /// "" for the automatic grid, else `COLSxROWS`.
    init(parsing text: String) throws {
        guard !text.isEmpty else { self = .automatic; return }
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 2, let columns = parts[0], let rows = parts[1], columns >= 1, rows >= 1 else {
            throw InvalidOption("sprite", "needs COLSxROWS, e.g. 5x4")
        }
        self = .grid(columns: columns, rows: rows)
    }
}

/// The time window of a prefetch or a check: checked the same for the CLI and the service.
public struct PlaybackWindow: Sendable {
    public let start: Double
    public let seconds: Double
    public let tracks: TrackSelection

    public init(start: Double?, seconds: Double?, tracks: String?) throws {
        let start = start ?? 0
        guard start >= 0, start <= 1e9 else { throw InvalidOption("start", "needs 0 to 1000000000 seconds") }
        let seconds = seconds ?? 10
        guard seconds > 0, seconds <= 1e9 else { throw InvalidOption("seconds", "needs a positive number of seconds") }
        self.start = start
        self.seconds = seconds
        if let tracks {
            guard let selection = TrackSelection.parse(tracks) else {
                throw InvalidOption("tracks", "needs default, all, or a list like 0,1 or video,audio")
            }
            self.tracks = selection
        } else {
            self.tracks = .defaults
        }
    }
}
