import Foundation

/// A `Content-Type` read exactly (RFC 9110 §8.3.1): one `type/subtype` of token characters,
/// lowercased, its parameters after `;` dropped. Anything else — a list (`video/mp4,text/html`,
/// which a browser may read as its last member), a control character, a missing subtype — is not
/// a media type, so no check made on one text can be passed by another.
struct MediaType: Equatable, CustomStringConvertible {
    let type: String
    let subtype: String

    init?(_ text: String) {
        let essence = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = essence.trimmingCharacters(in: CharacterSet(charactersIn: " \t")).lowercased()
        let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(token.contains) }),
            text.unicodeScalars.allSatisfy({ ($0.value >= 0x20 && $0.value < 0x7F) || $0 == "\t" })
        else { return nil }
        type = String(parts[0])
        subtype = String(parts[1])
    }

    var description: String { type + "/" + subtype }
}
