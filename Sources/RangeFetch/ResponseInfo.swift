import Foundation

/// What the origin said about the resource, from the headers of a range request.
public struct ResponseInfo: Sendable, Equatable {
    /// The largest size a resource may claim (1 PiB): larger totals and lengths from the network
    /// are lies or attacks, and offsets computed from them must never overflow.
    public static let maxResourceSize: Int64 = 1 << 50

    public var status: Int
    /// Total size of the resource (from `Content-Range`, or `Content-Length` of a `200`).
    public var totalSize: Int64?
    public var etag: String?
    public var lastModified: String?
    public var contentType: String?
    /// The URL after redirects.
    public var effectiveURL: String
    /// The server answered a range request with the whole body (`200`): it ignores ranges, or
    /// the `If-Range` validator no longer matched. The body then starts at offset 0.
    public var rangeIgnored: Bool { status == 200 }
    /// Offset of the first body byte.
    public var bodyStart: Int64
    /// The HTTP version of the response: "1.1" or "2".
    public var httpVersion: String
    /// The framing says where the body ends (chunked transfer coding, or an HTTP/2 stream), so a
    /// body that ended cleanly is whole — unlike an HTTP/1.0 body that ends when the connection
    /// closes, which a dropped connection also ends.
    public var framed = false
}

/// How a range request ended.
public enum FetchOutcome: Sendable, Equatable {
    /// Bytes were delivered; the last response's headers.
    case delivered(ResponseInfo)
    /// The range starts at or past the end (`416`); the size if the server said it.
    case pastEnd(totalSize: Int64?)
}

/// Parsing of `Content-Range: bytes a-b/total` (or `bytes */total` on a 416). Numbers from the
/// network are hostile: anything negative, inverted, past the total or beyond
/// `ResponseInfo.maxResourceSize` makes the whole header unusable (nil).
struct ContentRange: Equatable {
    var first: Int64?
    var last: Int64?
    var total: Int64?

    init?(_ value: String) {
        let v = value.trimmingCharacters(in: .whitespaces)
        guard v.lowercased().hasPrefix("bytes") else { return nil }
        let rest = v.dropFirst(5).trimmingCharacters(in: .whitespaces)
        let parts = rest.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        if parts[1] != "*" {
            guard let total = ContentRange.number(parts[1]) else { return nil }
            self.total = total
        }
        if parts[0] == "*" { return }
        // Empty pieces kept: "-1-5" is no range (split's default would read it as 1-5).
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let f = ContentRange.number(bounds[0]), let l = ContentRange.number(bounds[1]), f <= l
        else { return nil }
        if let total, l >= total { return nil }
        first = f
        last = l
    }

    /// A decimal byte count in 0...maxResourceSize ("+5", "-5", " 5" and overflow are refused).
    static func number<S: StringProtocol>(_ text: S) -> Int64? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int64(text),
            n <= ResponseInfo.maxResourceSize
        else { return nil }
        return n
    }
}
