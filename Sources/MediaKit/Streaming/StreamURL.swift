import Foundation

/// URIs in playlists and manifests, made absolute.
enum StreamURL {
    /// `reference` against `base` (an absolute URL, or an absolute local path), for the playlist or
    /// manifest `document`. A document on a web server may only point at http(s): a `file:` URI
    /// there would read the local disk on the origin's say-so.
    static func resolve(_ reference: String, against base: String, in document: String) throws -> String {
        guard let baseURL = URL(string: base) ?? (base.hasPrefix("/") ? URL(fileURLWithPath: base) : nil),
              let resolved = URL(string: reference, relativeTo: baseURL)?.absoluteURL else {
            throw MediaError.malformedPlaylist(input: document, detail: "a URI that cannot be resolved: \(reference)")
        }
        let scheme = resolved.scheme?.lowercased() ?? ""
        let remote = ["http", "https"].contains(baseURL.scheme?.lowercased() ?? "")
        guard ["http", "https"].contains(scheme) || (!remote && scheme == "file") else {
            throw MediaError.malformedPlaylist(input: document, detail: "a URI mprobe does not follow from here: \(reference)")
        }
        return resolved.absoluteString
    }
}
