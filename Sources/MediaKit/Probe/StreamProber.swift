import ByteSources
import Containers
import Foundation

/// Which variants of a stream get their first segment probed.
public enum VariantChoice: Sendable, Equatable {
    /// The highest bandwidth.
    case best
    case all
    /// The N highest bandwidths (0: playlists only).
    case count(Int)

    /// "best", "all" or a count; nil for anything else.
    public init?(_ text: String) {
        switch text {
        case "best": self = .best
        case "all": self = .all
        default:
            guard let n = Int(text), n >= 0 else { return nil }
            self = .count(n)
        }
    }

    func limit(_ available: Int) -> Int {
        switch self {
        case .best: return min(1, available)
        case .all: return available
        case .count(let n): return min(n, available)
        }
    }
}

/// What a media playlist says about itself.
public struct StreamPlaylistInfo: Sendable {
    public let live: Bool
    public let duration: Double
    public let segments: Int
    public let targetDuration: Double?
    /// Key methods in use (AES-128, SAMPLE-AES).
    public let encryption: [String]
    /// Segments are byte ranges of larger files (`EXT-X-BYTERANGE`).
    public let byteRanges: Bool
    /// Segments follow an initialization section (`EXT-X-MAP`: fragmented MP4 / CMAF).
    public let initSection: Bool

    init(_ media: HLSMedia) {
        live = media.isLive
        duration = media.duration
        segments = media.segments.count
        targetDuration = media.targetDuration
        encryption = media.encryption.sorted()
        byteRanges = media.segments.contains { $0.byteRange != nil }
        initSection = media.segments.contains { $0.initSection != nil }
    }
}

/// `mprobe URL` of an HLS playlist: the variants and renditions, what their playlists say, and
/// for the chosen variants what a probe of their first segment shows.
public struct StreamProbeResult: Sendable {
    public struct Variant: Sendable {
        public let uri: String
        /// Nil for a media playlist given directly (no master lists it).
        public let bandwidth: Int?
        public let averageBandwidth: Int?
        public let width: Int?
        public let height: Int?
        public let codecs: String?
        public let frameRate: Double?
        public let audioGroup: String?
        public let subtitlesGroup: String?
        public let playlist: StreamPlaylistInfo
        /// Its first segment, when probed.
        public let firstSegment: ProbeResult?
        /// Why it was not probed, when it was chosen (encrypted segments).
        public let note: String?
    }

    public struct Rendition: Sendable {
        public let type: String
        public let groupID: String
        public let name: String?
        public let language: String?
        public let isDefault: Bool
        public let channels: String?
        public let uri: String?
        public let playlist: StreamPlaylistInfo?
        public let firstSegment: ProbeResult?
    }

    public let input: String
    /// "hls" or "dash".
    public let format: String
    /// The input lists variants (a master playlist) rather than segments.
    public let isMaster: Bool
    public let variants: [Variant]
    public let renditions: [Rendition]
    /// Every key method the master and the playlists name.
    public let encryption: [String]
    public let fetch: SourceCounters
    public let seconds: Double

    public var live: Bool { variants.contains { $0.playlist.live } }
    public var duration: Double? { variants.map(\.playlist.duration).max() }
}

/// Probes an HLS stream: the playlists, and the first segment of the variants `variants` picks
/// (with the audio renditions they play with) — nothing else is fetched.
public struct StreamProber: Sendable {
    public var variants: VariantChoice = .best

    public init() {}

    /// `opened`: a source of `input` the caller has read already (what it cost counts here).
    public func probe(
        _ input: String, session: MediaSession, opened: (any MediaSource)? = nil
    ) throws -> StreamProbeResult {
        let started = Date()
        var playlists = StreamPlaylists(session: session, opened: opened)
        let top = try playlists.load(input)
        let master: HLSMaster
        switch top {
        case .master(let m):
            guard !m.variants.isEmpty else {
                throw MediaError.malformedPlaylist(input: input, detail: "a master playlist without variants")
            }
            master = m
        case .media(let media):
            let variant = try probed(media, chosen: variants.limit(1) == 1, playlists: &playlists)
            return StreamProbeResult(
                input: session.shown(input), format: playlists.format, isMaster: false,
                variants: [
                    StreamProbeResult.Variant(
                        uri: session.shown(input), bandwidth: nil, averageBandwidth: nil, width: nil, height: nil,
                        codecs: nil, frameRate: nil,
                        audioGroup: nil, subtitlesGroup: nil, playlist: StreamPlaylistInfo(media),
                        firstSegment: variant.probe, note: variant.note)
                ],
                renditions: [], encryption: media.encryption.sorted(), fetch: playlists.counters,
                seconds: Date().timeIntervalSince(started))
        }
        let entries = master.variants.count + master.renditions.count
        guard entries <= StreamPlaylists.maximumEntries else {
            throw MediaError.unsupportedStream(
                input: input,
                detail: "a master playlist of \(entries) variants and renditions: "
                    + "mprobe reads at most \(StreamPlaylists.maximumEntries)")
        }
        // Every variant's and rendition's playlist, at once (their durations and segment counts).
        try playlists.prefetchPlaylists(
            master.variants.map(\.uri)
                + master.renditions.filter {
                    $0.type != "SUBTITLES" && $0.type != "CLOSED-CAPTIONS"
                }.compactMap(\.uri))
        // Chosen: the highest bandwidths first.
        let ranked = master.variants.indices.sorted { master.variants[$0].bandwidth > master.variants[$1].bandwidth }
        let chosen = Set(ranked.prefix(variants.limit(ranked.count)))
        var variantsOut: [StreamProbeResult.Variant] = []
        var encryption = master.encryption
        for (i, v) in master.variants.enumerated() {
            let media = try playlists.loadMedia(v.uri)
            encryption.formUnion(media.encryption)
            let first = try probed(media, chosen: chosen.contains(i), playlists: &playlists)
            variantsOut.append(
                StreamProbeResult.Variant(
                    uri: session.shown(v.uri), bandwidth: v.bandwidth, averageBandwidth: v.averageBandwidth,
                    width: v.width, height: v.height,
                    codecs: v.codecs, frameRate: v.frameRate, audioGroup: v.audio, subtitlesGroup: v.subtitles,
                    playlist: StreamPlaylistInfo(media), firstSegment: first.probe, note: first.note))
        }
        // The audio (and video) renditions the chosen variants play with: the default of each group.
        let groups = Set(chosen.compactMap { master.variants[$0].audio })
        var renditionsOut: [StreamProbeResult.Rendition] = []
        for (i, r) in master.renditions.enumerated() {
            var info: StreamPlaylistInfo?
            var probe: ProbeResult?
            if let uri = r.uri, r.type != "SUBTITLES" && r.type != "CLOSED-CAPTIONS" {
                let media = try playlists.loadMedia(uri)
                info = StreamPlaylistInfo(media)
                encryption.formUnion(media.encryption)
                let leads =
                    master.renditions.indices.first {
                        master.renditions[$0].groupID == r.groupID && master.renditions[$0].isDefault
                    }
                    ?? master.renditions.indices.first { master.renditions[$0].groupID == r.groupID }
                probe = try probed(media, chosen: groups.contains(r.groupID) && leads == i, playlists: &playlists).probe
            }
            renditionsOut.append(
                StreamProbeResult.Rendition(
                    type: r.type, groupID: r.groupID, name: r.name, language: r.language,
                    isDefault: r.isDefault, channels: r.channels, uri: r.uri.map(session.shown),
                    playlist: info, firstSegment: probe))
        }
        return StreamProbeResult(
            input: session.shown(input), format: playlists.format, isMaster: true, variants: variantsOut,
            renditions: renditionsOut,
            encryption: encryption.sorted(), fetch: playlists.counters, seconds: Date().timeIntervalSince(started))
    }

    /// The probe of a playlist's first segment when chosen, or why there is none.
    private func probed(
        _ media: HLSMedia, chosen: Bool, playlists: inout StreamPlaylists
    ) throws -> (probe: ProbeResult?, note: String?) {
        guard chosen, let first = media.segments.first else { return (nil, nil) }
        if first.encrypted, media.encryption.contains("AES-128") {
            return (nil, "segments are encrypted (AES-128): not probed")
        }
        let source = try playlists.source(of: first)
        try StreamPlaylists.checkIsMedia(source.parts[source.parts.count - 1].source, range: first.byteRange)
        return (try Prober().probe(segment: source, session: playlists.session), nil)
    }
}
