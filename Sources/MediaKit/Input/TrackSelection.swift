import ByteSources
import FFmpeg
import Foundation

/// Which tracks a prefetch or check covers.
public enum TrackSelection: Sendable, Equatable {
    /// The default video and default audio track (what a player plays).
    case defaults
    case all
    /// Stream indices, or kinds (every track of that kind), as given after `--tracks`.
    case some(indices: [Int], kinds: [TrackInfo.Kind])

    /// Parses `default`, `all`, or a comma list of indices and kinds: `0,2`, `video,audio`.
    public static func parse(_ text: String) -> TrackSelection? {
        switch text.lowercased() {
        case "default", "defaults": return .defaults
        case "all": return .all
        default:
            var indices: [Int] = [], kinds: [TrackInfo.Kind] = []
            for part in text.lowercased().split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                if let i = Int(part), i >= 0 {
                    indices.append(i)
                } else if let kind = TrackInfo.Kind(rawValue: part) {
                    kinds.append(kind)
                } else {
                    return nil
                }
            }
            return indices.isEmpty && kinds.isEmpty ? nil : .some(indices: indices, kinds: kinds)
        }
    }

    /// The stream indices this selection names in `context`, in stream order. An attached picture
    /// (an MP3's cover art) is a video stream whose one packet is in the header: it has no time to
    /// cover, and a reader waiting for its packet after the window would read to the end.
    func streams(in context: FormatContext) throws -> [Int] {
        let all = (0..<context.streamCount).filter { !context.isAttachedPicture(stream: $0) }
        switch self {
        case .defaults:
            let video = context.bestStream(.video).flatMap { context.isAttachedPicture(stream: $0) ? nil : $0 }
            let picked = [video, context.bestStream(.audio)].compactMap { $0 }
            guard !picked.isEmpty else { throw MediaError.noTracks(detail: "no video or audio track") }
            return picked.sorted()
        case .all:
            return all
        case .some(let indices, let kinds):
            if let bad = indices.first(where: { $0 >= context.streamCount }) {
                throw MediaError.noTracks(detail: "no track #\(bad) (the input has \(context.streamCount))")
            }
            if let picture = indices.first(where: { context.isAttachedPicture(stream: $0) }) {
                throw MediaError.noTracks(
                    detail:
                        "track #\(picture) is an attached picture (cover art), stored in the header: it has no window")
            }
            let picked = all.filter { indices.contains($0) || kinds.contains(context.kind(ofStream: $0)) }
            guard !picked.isEmpty else { throw MediaError.noTracks(detail: "no track matches the selection") }
            return picked
        }
    }
}
