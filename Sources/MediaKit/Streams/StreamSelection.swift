import ByteSources
import Containers
import Foundation

/// Which variant of a stream a job plays.
public enum VariantPick: Sendable, Equatable {
    case best
    case worst
    /// The variant whose `BANDWIDTH` is this.
    case bandwidth(Int)

    /// "best", "worst" or a bandwidth in bits per second; nil for anything else.
    public init?(_ text: String) {
        switch text {
        case "best": self = .best
        case "worst": self = .worst
        default:
            guard let n = Int(text), n > 0 else { return nil }
            self = .bandwidth(n)
        }
    }
}

/// The media playlists a player of one variant reads: the variant's, and the audio rendition it
/// plays with when that has a playlist of its own (the group's default, else its first).
struct StreamSelection {
    struct Playlist {
        /// "video" for the variant (its segments may hold audio too), "audio" for a rendition.
        let role: String
        let uri: String
        let media: HLSMedia
    }

    let variant: HLSVariant?
    let playlists: [Playlist]

    static func select(
        _ input: String, pick: VariantPick, playlists loader: inout StreamPlaylists
    ) throws -> StreamSelection {
        switch try loader.load(input) {
        case .media(let media):
            return StreamSelection(variant: nil, playlists: [Playlist(role: "video", uri: input, media: media)])
        case .master(let master):
            let ranked = master.variants.filter { !$0.uri.isEmpty }.sorted { $0.bandwidth > $1.bandwidth }
            let chosen: HLSVariant?
            switch pick {
            case .best: chosen = ranked.first
            case .worst: chosen = ranked.last
            case .bandwidth(let b): chosen = ranked.first { $0.bandwidth == b }
            }
            guard let variant = chosen else {
                let listed = ranked.map { String($0.bandwidth) }.joined(separator: ", ")
                throw MediaError.unsupportedStream(
                    input: input,
                    detail: ranked.isEmpty
                        ? "a master playlist without variants"
                        : "no variant has that bandwidth; the variants have \(listed)")
            }
            var selected = [Playlist(role: "video", uri: variant.uri, media: try loader.loadMedia(variant.uri))]
            if let group = variant.audio {
                let members = master.renditions.filter { $0.type == "AUDIO" && $0.groupID == group }
                if let audio = (members.first { $0.isDefault } ?? members.first), let uri = audio.uri {
                    selected.append(Playlist(role: "audio", uri: uri, media: try loader.loadMedia(uri)))
                }
            }
            return StreamSelection(variant: variant, playlists: selected)
        }
    }

    /// Refuses what a window cannot be kept of: a live playlist (its segments slide away) and a
    /// window that starts past the end.
    func checkWindow(_ input: String, start: Double) throws {
        for p in playlists {
            if !p.media.ended && p.media.playlistType == nil {
                throw MediaError.unsupportedStream(
                    input: input,
                    detail: "a live stream (a playlist without #EXT-X-ENDLIST, or a dynamic MPD): its segments "
                        + "are replaced as it plays, so no window of it can be kept; probe it instead")
            }
            if p.media.segments.isEmpty {
                throw MediaError.malformedPlaylist(input: p.uri, detail: "a media playlist without segments")
            }
            if start >= p.media.duration {
                throw MediaError.unsupportedStream(
                    input: input,
                    detail: String(
                        format: "the window starts at %.3f s, "
                            + "past the end of the stream (%.3f s)", start, p.media.duration))
            }
        }
    }
}
