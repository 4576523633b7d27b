import ByteSources
import Foundation

/// URIs in playlists and manifests, made absolute.
package enum StreamURL {
    /// The longest URL a playlist may lead to, as the service takes from its clients: a playlist
    /// is up to 16 MiB, and one URI of megabytes would be stored and shown with every job using it.
    static let maximumLength = 8192

    /// `reference` against `base` (an absolute URL, or an absolute local path), for the playlist or
    /// manifest `document`. A document on a web server may only point at http(s): a `file:` URI
    /// there would read the local disk on the origin's say-so.
    static func resolve(_ reference: String, against base: String, in document: String) throws -> String {
        guard let baseURL = URL(string: base) ?? (base.hasPrefix("/") ? URL(fileURLWithPath: base) : nil),
            let resolved = URL(string: reference, relativeTo: baseURL)?.absoluteURL
        else {
            throw MediaError.malformedPlaylist(
                input: document, detail: "a URI that cannot be resolved: \(reference.prefix(200))")
        }
        let scheme = resolved.scheme?.lowercased() ?? ""
        let remote = ["http", "https"].contains(baseURL.scheme?.lowercased() ?? "")
        guard ["http", "https"].contains(scheme) || (!remote && scheme == "file") else {
            throw MediaError.malformedPlaylist(
                input: document, detail: "a URI mprobe does not follow from here: \(reference.prefix(200))")
        }
        let absolute = resolved.absoluteString
        guard absolute.utf8.count <= maximumLength else {
            throw MediaError.malformedPlaylist(
                input: document,
                detail:
                    "a URI of \(absolute.utf8.count) bytes, longer than the \(maximumLength) mprobe follows")
        }
        return absolute
    }
}
