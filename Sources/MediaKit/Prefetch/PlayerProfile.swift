import ByteSources

/// How a player reads a file to start at T, where it reads more than libavformat (whose reading
/// is the plan's base): one value per player, so that what a prefetch covers for each is data,
/// not a code path (`PrefetchPlanner.players`). Measured from the players' own requests through
/// nginx (docs/service.md, "Player profiles"), or taken from their documented request patterns
/// where they do not run here.
public struct PlayerProfile: Sendable, Hashable {
    /// As `--for` names it.
    public let name: String
    /// Its reads start at a multiple of this many bytes: Chromium's media cache asks in 32 KiB
    /// blocks, so its read of the window (or of a moov at the end) starts up to 32 KiB before the
    /// first byte the demuxer needs.
    public var alignment: Int64 = 1
    /// Bytes from byte 0 that it reads before it seeks, and cannot do without: VLC's stream
    /// prefetch reads ahead of its demuxer from 0, and a read that fails before the demuxer has
    /// sought ends the input ("connection failed", then every track disabled).
    public var readsFromStart: Int64 = 0
    /// How it reads an HLS or DASH stream.
    public var stream = StreamReading()

    public init(name: String, alignment: Int64 = 1, readsFromStart: Int64 = 0, stream: StreamReading = .init()) {
        (self.name, self.alignment, self.readsFromStart, self.stream) = (name, alignment, readsFromStart, stream)
    }
}

/// Which segments of which variants a player reads to start an HLS or DASH stream at T, besides
/// the window's segments of the variant it plays (`StreamPrefetchJob.pick`, the best by default:
/// from a cache on the local network every adaptive player measures enough bandwidth for it).
public struct StreamReading: Sendable, Hashable {
    /// Variants of a ladder, by what singles them out.
    public enum Variants: String, Sendable, Hashable {
        /// The one the window is played on.
        case played
        /// The lowest bandwidth.
        case lowest
        /// The first in the master playlist.
        case firstListed = "first listed"
        /// All of them (and every DASH Representation).
        case every
    }

    /// Seconds from the start of each playlist it reads while it opens the stream (the segments
    /// that cover them), and of which variants.
    public var opens = 0.0
    public var opensOn: [Variants] = []
    /// Seconds of the window it reads on the variants it starts on, before it switches to the
    /// played one.
    public var starts = 0.0
    public var startsOn: [Variants] = []
    /// Segments before the window's first that it reads when it seeks, and of which variants.
    public var before = 0
    public var beforeOn: [Variants] = []

    public init(
        opens: Double = 0, on opensOn: [Variants] = [], starts: Double = 0, startsOn: [Variants] = [], before: Int = 0,
        beforeOn: [Variants] = []
    ) {
        (self.opens, self.opensOn, self.starts, self.startsOn) = (opens, opensOn, starts, startsOn)
        (self.before, self.beforeOn) = (before, beforeOn)
    }
}

extension PlayerProfile {
    /// ffmpeg, ffplay, mpv and everything else on libavformat: the plan's base, nothing more.
    /// On a stream it reads the first 5 s (its analysis) of every variant and every DASH
    /// Representation to learn their streams, then, seeking, the segment before the window of
    /// each (its dash demuxer drops the Representations not played only after that one).
    public static let ffmpeg = PlayerProfile(
        name: "ffmpeg",
        stream: StreamReading(opens: 5, on: [.every], before: 1, beforeOn: [.every]))
    /// Chromium's `<video>` (every Chromium-based browser and Electron app): 32 KiB-aligned range
    /// starts (80,510,976 for a window whose first sample is at 80,522,397).
    /// On HLS it opens the lowest variant (its first 4 s segment), switches to the best at once
    /// (the next segment), then seeks: the first 8 s of both.
    public static let chromium = PlayerProfile(
        name: "chromium", alignment: 32 << 10,
        stream: StreamReading(opens: 8, on: [.lowest, .played]))
    /// Firefox's `<video>`: its media cache (`MediaCacheStream`) holds 32 KiB blocks and asks the
    /// network for whole blocks, from a block boundary (from its source; not run here). It plays
    /// no HLS or DASH of its own (a page's script does, with Media Source Extensions).
    public static let firefox = PlayerProfile(
        name: "firefox", alignment: 32 << 10)
    /// VLC: its prefetch reads from byte 0 while the demuxer opens the file, as fast as the
    /// bytes come. Offline it failed with 0.85 MB cached from 0 (its read of byte 846,636 got a
    /// 502 before the seek), in 1 of 3 runs with 1.4 MB, 1 of 8 with 2 MiB, 0 of 6 with 4.4 MB: 4 MiB.
    /// On a stream it opens the lowest variant (its first segment), plays the window's first 8 s
    /// there (two 4 s segments), then switches up.
    public static let vlc = PlayerProfile(
        name: "vlc", readsFromStart: 4 << 20,
        stream: StreamReading(opens: 1, on: [.lowest], starts: 8, startsOn: [.lowest]))
    /// GStreamer's playbin: asks for the whole file without a Range, takes the length of the
    /// answer for the size of the file and seeks within it. The plan gives it nothing more: no
    /// prefix of the file serves a seek past it (docs/service.md, "Player profiles"). On a stream
    /// it prerolls before it seeks: hlsdemux the first 16 s (four 4 s segments) of the first
    /// variant listed, dashdemux 20 s of audio and the first segments of the lowest Representation
    /// and of the best it switches to. Offline, DASH failed 1 run in 3 with 8 s kept, none in 4 with 20 s.
    public static let gstreamer = PlayerProfile(
        name: "gstreamer",
        stream: StreamReading(opens: 20, on: [.firstListed, .lowest, .played]))
    /// Apple's AVPlayer: `bytes=0-1`, a read from 0 that it closes, the moov, then open ranges
    /// from the sample it seeks to (its documented pattern): libavformat's ranges cover it.
    /// On HLS it starts on the first variant listed (Apple's authoring guidance puts it first for
    /// that reason) and switches once it has measured the bandwidth: the window's first segment.
    public static let avplayer = PlayerProfile(
        name: "avplayer",
        stream: StreamReading(starts: 1, startsOn: [.firstListed]))
    /// ExoPlayer / Media3: reads from 0 to the moov, then from the sync sample its SeekMap gives:
    /// libavformat's ranges cover it.
    /// On a stream its first variant is the one its initial bandwidth estimate affords, which
    /// may be any of them; it switches after the window's first segment.
    public static let exoplayer = PlayerProfile(
        name: "exoplayer",
        stream: StreamReading(starts: 1, startsOn: [.every]))

    /// Every player a prefetch is made for by default (`--for all`).
    public static let known: [PlayerProfile] = [ffmpeg, chromium, firefox, avplayer, exoplayer, vlc, gstreamer]

    /// The players `text` names: `all`, or names separated by commas.
    public static func named(_ text: String) throws -> [PlayerProfile] {
        if text == "all" { return known }
        var names: [String] = []
        for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() })
        where !names.contains(name) {
            names.append(name)
        }
        if names.isEmpty || names.contains("") {
            throw InvalidOption("for", "takes all or players among " + known.map(\.name).joined(separator: ", "))
        }
        return try names.map { name in
            guard let found = known.first(where: { $0.name == name }) else {
                throw InvalidOption(
                    "for", "takes all or players among " + known.map(\.name).joined(separator: ", ") + ", not '\(name)'"
                )
            }
            return found
        }
    }
}
