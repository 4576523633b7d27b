import ByteSources

/// How a player reads a file to start at T, where it reads more than libavformat (whose reading
/// is the plan's base): one value per player, so that what a prefetch covers for each is data,
/// not a code path (`PrefetchPlanner.players`). Measured from the players' own requests through
/// nginx (docs/service.md, "Player profiles"), or taken from their documented request patterns
/// where they do not run here.
public struct PlayerProfile: Sendable, Hashable {
    /// As `--for` names it.
    public let name: String
    /// Who reads this way, for `--help` and the plan.
    public let about: String
    /// Its reads start at a multiple of this many bytes: Chromium's media cache asks in 32 KiB
    /// blocks, so its read of the window (or of a moov at the end) starts up to 32 KiB before the
    /// first byte the demuxer needs.
    public var alignment: Int64 = 1
    /// Bytes from byte 0 that it reads before it seeks, and cannot do without: VLC's stream
    /// prefetch reads ahead of its demuxer from 0, and a read that fails before the demuxer has
    /// sought ends the input ("connection failed", then every track disabled).
    public var readsFromStart: Int64 = 0

    public init(name: String, about: String, alignment: Int64 = 1, readsFromStart: Int64 = 0) {
        (self.name, self.about, self.alignment, self.readsFromStart) = (name, about, alignment, readsFromStart)
    }
}

extension PlayerProfile {
    /// ffmpeg, ffplay, mpv and everything else on libavformat: the plan's base, nothing more.
    public static let ffmpeg = PlayerProfile(
        name: "ffmpeg", about: "ffmpeg, ffplay, mpv and other players on libavformat")
    /// Chromium's `<video>` (every Chromium-based browser and Electron app): 32 KiB-aligned range
    /// starts (80,510,976 for a window whose first sample is at 80,522,397).
    public static let chromium = PlayerProfile(
        name: "chromium", about: "Chromium, Chrome, Edge, Electron: reads in 32 KiB blocks", alignment: 32 << 10)
    /// VLC: its prefetch reads from byte 0 while the demuxer opens the file, as fast as the
    /// bytes come. Offline it failed with 0.85 MB cached from 0 (its read of byte 846,636 got a
    /// 502 before the seek), in 1 of 3 runs with 1.4 MB, 1 of 8 with 2 MiB, 0 of 6 with 4.4 MB: 4 MiB.
    public static let vlc = PlayerProfile(
        name: "vlc", about: "VLC: reads up to 4 MiB from byte 0 before it seeks", readsFromStart: 4 << 20)
    /// GStreamer's playbin: asks for the whole file without a Range, takes the length of the
    /// answer for the size of the file and seeks within it. The plan gives it nothing more: no
    /// prefix of the file serves a seek past it (docs/service.md, "Player profiles").
    public static let gstreamer = PlayerProfile(
        name: "gstreamer", about: "GStreamer playbin: libavformat's ranges (offline seeks need the whole file)")
    /// Apple's AVPlayer: `bytes=0-1`, a read from 0 that it closes, the moov, then open ranges
    /// from the sample it seeks to (its documented pattern): libavformat's ranges cover it.
    public static let avplayer = PlayerProfile(
        name: "avplayer", about: "AVPlayer (iOS, macOS, tvOS): bytes=0-1, the head, the moov, the sample")
    /// ExoPlayer / Media3: reads from 0 to the moov, then from the sync sample its SeekMap gives:
    /// libavformat's ranges cover it.
    public static let exoplayer = PlayerProfile(
        name: "exoplayer", about: "ExoPlayer / Media3 (Android): the head, the moov, the sync sample")

    /// Every player a prefetch is made for by default (`--for all`).
    public static let known: [PlayerProfile] = [ffmpeg, chromium, avplayer, exoplayer, vlc, gstreamer]

    /// The players `text` names: `all`, or names separated by commas.
    public static func named(_ text: String) throws -> [PlayerProfile] {
        if text == "all" { return known }
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
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
