import Foundation

/// The bearer token every endpoint but `/healthz` requires, when one is configured.
struct AccessToken: Sendable {
    private let secret: [UInt8]

    /// The longest token accepted: a request carries it in a header or the query, and both must
    /// fit in what the server reads of a request (a longer one could never be matched).
    static let maxLength = 1024

    /// The token with surrounding spaces trimmed (as they are from the header that carries it).
    /// Refuses what no request could carry: nothing left, a control character, more than
    /// `maxLength` bytes.
    init(_ secret: String) throws {
        let trimmed = secret.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw ServiceError.configuration("the access token is empty") }
        guard !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw ServiceError.configuration("the access token holds a control character, which no header can carry")
        }
        guard trimmed.utf8.count <= AccessToken.maxLength else {
            throw ServiceError.configuration(
                "the access token is longer than \(AccessToken.maxLength) bytes, more than a request can carry")
        }
        self.secret = Array(trimmed.utf8)
    }

    /// True when `request` carries the token: `Authorization: Bearer T`, or `?token=T` where
    /// `queryAllowed` (players and `<video>` elements cannot set headers).
    func admits(_ request: HTTPRequest, queryAllowed: Bool) -> Bool {
        if let header = request.headers["authorization"], header.lowercased().hasPrefix("bearer ") {
            return matches(String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces))
        }
        if queryAllowed, let value = request.query["token"] {
            return matches(value.trimmingCharacters(in: .whitespaces))
        }
        return false
    }

    /// Compares in time that depends only on the lengths, so the answer time leaks nothing of
    /// how much of a guess was right.
    func matches(_ candidate: String) -> Bool {
        let given = Array(candidate.utf8)
        var difference = UInt8(given.count == secret.count ? 0 : 1)
        for i in 0..<given.count {
            difference |= given[i] ^ (secret.isEmpty ? 0 : secret[i % secret.count])
        }
        return difference == 0
    }
}
