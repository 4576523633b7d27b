import Containers

/// What a prefetch of an HLS or DASH stream keeps: per media playlist, the segments the players
/// read to start the window and play it (the window's own, on the played variant), each with
/// why and for whom (`PlayerProfile.stream`).
struct StreamPlan {
    struct Playlist {
        let role: String
        let uri: String
        let bandwidth: Int?
        let media: HLSMedia
        /// The window's segments in this playlist, as indices of `media.segments`.
        let window: Range<Int>
        /// The segments to keep, by index.
        var reads: [Int: Read] = [:]
    }

    struct Read {
        var why: String
        var players: [String]
    }

    /// The parts to fetch, each once: URI, byte range (nil: all of it), why and for whom.
    struct Part {
        let uri: String
        let range: Range<Int64>?
        var why: String
        var players: [String]
    }

    private(set) var playlists: [Playlist] = []

    /// The plan for `players` of [start, start + seconds) of `selection` (the played variant);
    /// `firstSegment` also keeps segment 0 of the played variant's playlists for everyone.
    init(
        _ selection: StreamSelection, players: [PlayerProfile], start: Double, seconds: Double, firstSegment: Bool,
        loader: inout StreamPlaylists
    ) throws {
        let everyone = players.map(\.name)
        for p in selection.playlists {
            add(p, bandwidth: selection.variant?.bandwidth, start: start, seconds: seconds) { window in
                [(window, "window", everyone)] + (firstSegment ? [(0..<1, "first segment", everyone)] : [])
            }
        }
        // Each kind of variant resolved once: the ladder's playlists are loaded once, whoever reads them.
        var resolved: [StreamReading.Variants: [StreamSelection]] = [:]
        for player in players {
            let reading = player.stream
            // Each read: the variants it is of, and its segments given the window's in a playlist.
            let others: [([StreamReading.Variants], String, (HLSMedia, Range<Int>) -> Range<Int>)] = [
                (reading.opensOn, "opening", { m, _ in StreamPlan.covering(m, from: 0, seconds: reading.opens) }),
                (
                    reading.startsOn, "starting",
                    { m, _ in StreamPlan.covering(m, from: start, seconds: reading.starts) }
                ),
                (reading.beforeOn, "before the window", { _, w in w.lowerBound - reading.before..<w.lowerBound }),
            ]
            for (ranks, why, segments) in others {
                for rank in ranks {
                    if resolved[rank] == nil { resolved[rank] = try selection.variants(rank, loader: &loader) }
                    for variant in resolved[rank]! {
                        for p in variant.playlists {
                            add(p, bandwidth: variant.variant?.bandwidth, start: start, seconds: seconds) { window in
                                [(segments(p.media, window), why, [player.name])]
                            }
                        }
                    }
                }
            }
        }
    }

    /// The segments of `media` that cover `seconds` from `from`; none for no seconds.
    private static func covering(_ media: HLSMedia, from: Double, seconds: Double) -> Range<Int> {
        guard seconds > 0 else { return 0..<0 }
        let covered = media.segments(from: from, to: from + seconds)
        return covered.startIndex..<covered.endIndex
    }

    /// Adds the segments `reads` names (given the window's indices in `p`) to `p`'s plan.
    private mutating func add(
        _ p: StreamSelection.Playlist, bandwidth: Int?, start: Double, seconds: Double,
        reads: (Range<Int>) -> [(Range<Int>, String, [String])]
    ) {
        let index: Int
        if let found = playlists.firstIndex(where: { $0.uri == p.uri }) {
            index = found
        } else {
            let segments = p.media.segments(from: start, to: start + seconds)
            playlists.append(
                Playlist(
                    role: p.role, uri: p.uri, bandwidth: p.role == "video" ? bandwidth : nil, media: p.media,
                    window: segments.startIndex..<segments.endIndex))
            index = playlists.count - 1
        }
        let count = playlists[index].media.segments.count
        for (range, why, players) in reads(playlists[index].window) {
            for i in max(0, range.lowerBound)..<min(count, max(0, range.upperBound)) {
                if var read = playlists[index].reads[i] {
                    read.players += players.filter { !read.players.contains($0) }
                    playlists[index].reads[i] = read
                } else {
                    playlists[index].reads[i] = Read(why: why, players: players)
                }
            }
        }
    }

    /// The segments of `p` to keep, in order.
    static func segments(_ p: Playlist) -> [HLSSegment] { p.reads.keys.sorted().map { p.media.segments[$0] } }

    /// `p`'s parts in order: each segment after its initialization section, which is read for
    /// everyone who reads a segment it starts.
    static func parts(_ p: Playlist) -> [Part] {
        var parts: [Part] = []
        func add(_ uri: String, _ range: Range<Int64>?, _ read: Read) {
            if let i = parts.firstIndex(where: { $0.uri == uri && $0.range == range }) {
                parts[i].players += read.players.filter { !parts[i].players.contains($0) }
            } else {
                parts.append(Part(uri: uri, range: range, why: read.why, players: read.players))
            }
        }
        for i in p.reads.keys.sorted() {
            let s = p.media.segments[i], read = p.reads[i]!
            if let map = s.initSection {
                add(map.uri, map.byteRange, Read(why: "initialization", players: read.players))
            }
            add(s.uri, s.byteRange, read)
        }
        return parts
    }
}
