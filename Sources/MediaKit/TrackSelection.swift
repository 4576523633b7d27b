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

    /// The stream indices this selection names in `context`, in stream order.
    func streams(in context: FormatContext) throws -> [Int] {
        let all = Array(0..<context.streamCount)
        switch self {
        case .defaults:
            let picked = [context.bestStream(.video), context.bestStream(.audio)].compactMap { $0 }
            guard !picked.isEmpty else { throw MediaError.noTracks(detail: "no video or audio track") }
            return picked.sorted()
        case .all:
            return all
        case .some(let indices, let kinds):
            if let bad = indices.first(where: { $0 >= context.streamCount }) {
                throw MediaError.noTracks(detail: "no track #\(bad) (the input has \(context.streamCount))")
            }
            let picked = all.filter { indices.contains($0) || kinds.contains(context.kind(ofStream: $0)) }
            guard !picked.isEmpty else { throw MediaError.noTracks(detail: "no track matches the selection") }
            return picked
        }
    }
}
