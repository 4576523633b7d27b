import Foundation

/// The bearer token every endpoint but `/healthz` requires, when one is configured.
struct AccessToken: Sendable {
    private let secret: [UInt8]

    /// Refuses a token that is empty once spaces are trimmed: `Bearer ` with nothing after it
    /// would match it.
    init(_ secret: String) throws {
        guard !secret.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ServiceError.configuration("the access token is empty")
        }
        self.secret = Array(secret.utf8)
    }

    /// True when `request` carries the token: `Authorization: Bearer T`, or `?token=T` where
    /// `queryAllowed` (players and `<video>` elements cannot set headers).
    func admits(_ request: HTTPRequest, queryAllowed: Bool) -> Bool {
        if let header = request.headers["authorization"], header.lowercased().hasPrefix("bearer ") {
            return matches(String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces))
        }
        if queryAllowed, let value = request.query["token"] { return matches(value) }
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
