import ByteSources

/// Recognises HLS playlists and DASH manifests by their first bytes, so that they are named as
/// what they are instead of failing as damaged media (libavformat's readers of them would open
/// every nested playlist and segment on their own, outside the cache and the origin's rules).
public enum StreamingManifest {
    public static let hls = "an HLS playlist"
    public static let dash = "a DASH manifest"

    /// "an HLS playlist", "a DASH manifest", or nil for anything else. Reads at most 1 KiB,
    /// which the first request of a probe has already brought.
    package static func kind(of source: any MediaSource) throws -> String? {
        kind(ofText: String(decoding: try source.bytes(at: 0, count: 1024), as: UTF8.self))
    }

    /// The playlist tag must open the file (after a byte-order mark or blank space); a manifest is
    /// XML whose first element is `MPD`.
    public static func kind(ofText text: String) -> String? {
        let start = text.drop { $0 == "\u{FEFF}" || $0.isWhitespace }
        if start.hasPrefix("#EXTM3U") { return hls }
        guard start.hasPrefix("<") else { return nil }
        var rest = start[...]
        // Skip the XML declaration, comments and processing instructions before the root element.
        while let open = rest.firstIndex(of: "<") {
            let tag = rest[open...]
            if tag.hasPrefix("<?") || tag.hasPrefix("<!") {
                guard let close = tag.firstIndex(of: ">") else { return nil }
                rest = tag[tag.index(after: close)...]
                continue
            }
            return tag.dropFirst().hasPrefix("MPD") ? dash : nil
        }
        return nil
    }
}
