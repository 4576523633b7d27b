import ByteSources
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

    /// Throws `MediaError.malformedPlaylist` for a URI the proxy cannot route: one that does not
    /// resolve, or a scheme other than http(s) from a playlist on the web (passed through, a
    /// player would fetch it around the proxy, or read a local file). `data:` URIs stay as they are.
    public static func rewrite(_ text: String, base: String, route: (String) -> String) throws -> String {
        func target(_ reference: String) throws -> String {
            if reference.lowercased().hasPrefix("data:") { return reference }
            return route(try StreamURL.resolve(reference, against: base, in: base))
        }
        // Any line break (\r\n is one Character in Swift); the playlist comes back with \n.
        return try text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#") { return try rewriteAttributes(String(line), target) }
            return trimmed.isEmpty ? String(line) : try target(trimmed)
        }.joined(separator: "\n")
    }

    /// The attributes that hold URIs: a rendition's, a key's, an initialization section's, an
    /// I-frame or image playlist's (`URI`), content steering's, an interstitial's.
    static let uriAttributes: Set<String> = ["URI", "SERVER-URI", "X-ASSET-URI", "X-ASSET-LIST"]

    /// A tag's attribute list with every URI attribute rewritten (and written quoted, as the
    /// specification has them); everything else as it was.
    private static func rewriteAttributes(_ line: String, _ target: (String) throws -> String) throws -> String {
        guard let colon = line.firstIndex(of: ":") else { return line }
        var out = String(line[...colon])
        var rest = line[line.index(after: colon)...]
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { out += rest; break }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces)
            out += rest[...equals]
            rest = rest[rest.index(after: equals)...]
            let value: Substring
            var quoted = false
            if rest.first == "\"" {
                guard let close = rest.dropFirst().firstIndex(of: "\"") else { out += rest; break }
                value = rest[rest.index(after: rest.startIndex)..<close]
                rest = rest[rest.index(after: close)...]
                quoted = true
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end]
                rest = rest[end...]
            }
            if uriAttributes.contains(name) {
                out += "\"" + (try target(value.trimmingCharacters(in: .whitespaces))) + "\""
            } else {
                out += quoted ? "\"" + value + "\"" : String(value)
            }
            if rest.first == "," {
                out += ","
                rest = rest.dropFirst()
            }
        }
        return out
    }
}
