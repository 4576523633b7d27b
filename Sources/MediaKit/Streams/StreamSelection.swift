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
    /// The master playlist the variant was picked from (nil: the input is a media playlist).
    let master: HLSMaster?

    static func select(
        _ input: String, pick: VariantPick, playlists loader: inout StreamPlaylists
    ) throws -> StreamSelection {
        switch try loader.load(input) {
        case .media(let media):
            return StreamSelection(
                variant: nil, playlists: [Playlist(role: "video", uri: input, media: media)], master: nil)
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
            return try selection(of: variant, in: master, loader: &loader)
        }
    }

    /// `variant`'s playlist and that of the audio rendition it plays with.
    private static func selection(
        of variant: HLSVariant, in master: HLSMaster, loader: inout StreamPlaylists
    ) throws -> StreamSelection {
        var selected = [Playlist(role: "video", uri: variant.uri, media: try loader.loadMedia(variant.uri))]
        if let group = variant.audio {
            let members = master.renditions.filter { $0.type == "AUDIO" && $0.groupID == group }
            if let audio = (members.first { $0.isDefault } ?? members.first), let uri = audio.uri {
                selected.append(Playlist(role: "audio", uri: uri, media: try loader.loadMedia(uri)))
            }
        }
        return StreamSelection(variant: variant, playlists: selected, master: master)
    }

    /// The selections of the variants `which` names, this one (the played variant) included when
    /// it is named; of a media playlist, itself. Another variant whose playlist cannot be had is
    /// left out (a player opens the ones it can), unless the job was cancelled.
    func variants(
        _ which: StreamReading.Variants, loader: inout StreamPlaylists
    ) throws -> [StreamSelection] {
        guard let master, let variant else { return [self] }
        let listed = master.variants.filter { !$0.uri.isEmpty }
        let named: [HLSVariant]
        switch which {
        case .played: named = [variant]
        case .lowest: named = listed.min { $0.bandwidth < $1.bandwidth }.map { [$0] } ?? []
        case .firstListed: named = listed.prefix(1).map { $0 }
        case .every:
            named = listed
            // In parallel: one by one, a ladder's playlists are a round trip each.
            try? loader.prefetchPlaylists(listed.map(\.uri) + master.renditions.compactMap(\.uri))
        }
        var selections: [StreamSelection] = []
        for other in named {
            if other.uri == variant.uri {
                selections.append(self)
                continue
            }
            do {
                selections.append(try StreamSelection.selection(of: other, in: master, loader: &loader))
            } catch {
                if loader.session.cancellation.isCancelled { throw error }
            }
        }
        return selections
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
