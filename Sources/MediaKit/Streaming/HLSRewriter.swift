import Foundation

/// Rewrites an HLS playlist so that every URI in it (segment and playlist lines, and the `URI`
/// attribute of any tag: renditions, initialization sections, keys, I-frame playlists) points
/// where `route` says — for `mprobe serve`, back at its own proxy, so a player fetches segments
/// through the cache. URIs are made absolute against `base` (where the playlist was served from,
/// after redirects) first; what is not http(s) (`data:`, a scheme the proxy would refuse) is left
/// as it is.
public enum HLSRewriter {
    /// The largest playlist read whole (`HLSPlaylist.maximumSize`).
    public static let maximumSize = HLSPlaylist.maximumSize

    /// The text is a media playlist that may still grow: segments, and no `#EXT-X-ENDLIST`.
    public static func isLive(_ text: String) -> Bool {
        text.contains("#EXTINF") && !text.contains("#EXT-X-ENDLIST") && !text.contains("#EXT-X-PLAYLIST-TYPE:VOD")
    }

    public static func rewrite(_ text: String, base: String, route: (String) -> String) -> String {
        let baseURL = URL(string: base)
        func target(_ reference: String) -> String? {
            guard let resolved = URL(string: reference, relativeTo: baseURL)?.absoluteURL,
                  ["http", "https"].contains(resolved.scheme?.lowercased() ?? "") else { return nil }
            return route(resolved.absoluteString)
        }
        var out: [String] = []
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let hasCR = rawLine.hasSuffix("\r")
            let line = String(hasCR ? rawLine.dropLast() : rawLine)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            var rewritten = line
            if trimmed.hasPrefix("#") {
                rewritten = rewriteURIAttribute(line, target)
            } else if !trimmed.isEmpty, let routed = target(trimmed) {
                rewritten = routed
            }
            out.append(rewritten + (hasCR ? "\r" : ""))
        }
        return out.joined(separator: "\n")
    }

    /// `URI="..."` inside a tag's attribute list, rewritten; the rest of the line as it was.
    private static func rewriteURIAttribute(_ line: String, _ target: (String) -> String?) -> String {
        guard let key = line.range(of: "URI=\"") else { return line }
        // Only the attribute named URI, not one that ends in it (such as a hypothetical XURI).
        if key.lowerBound > line.startIndex {
            let before = line[line.index(before: key.lowerBound)]
            guard before == ":" || before == "," else { return line }
        }
        guard let close = line[key.upperBound...].firstIndex(of: "\""),
              let routed = target(String(line[key.upperBound..<close])) else { return line }
        return String(line[..<key.upperBound]) + routed + String(line[close...])
    }
}
