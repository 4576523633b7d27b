import Foundation

/// A request's line and headers, parsed from the bytes before the blank line (RFC 9112), or the
/// reason they are refused. Pure: the server's event loop calls it, and tests call it on bytes.
struct RequestHead: Sendable, Equatable {
    var method: String
    /// The target as sent (path and query, encoded).
    var target: String
    /// The path, percent-decoded, without the query.
    var path: String
    /// Query arguments, `+` read as a space and percent-decoded; a repeated name keeps its first
    /// value, a name without `=` has "".
    var query: [String: String]
    /// Header names lowercased; a repeated header keeps its first value (two different
    /// `Content-Length` or two `Host` are refused instead).
    var headers: HTTPHeaders
    /// HTTP/1.1 (else 1.0).
    var isHTTP11: Bool

    /// What the connection does with the body and after the response.
    var contentLength: Int { headers["content-length"].flatMap { Int($0) } ?? 0 }
    var keepAlive: Bool {
        guard isHTTP11 else { return false }
        let tokens = headers["connection"]?.lowercased().split(separator: ",") ?? []
        return !tokens.contains { $0.trimmingCharacters(in: .whitespaces) == "close" }
    }
    var expectsContinue: Bool { headers["expect"]?.lowercased() == "100-continue" }

    /// Why a head is refused: the status, and what was read of it (for the access log).
    struct Refusal: Error, Equatable {
        var status: Int
        var message: String
        var method = ""
        var target = ""
        var path = ""
    }

    /// The target as sent and what it decodes to.
    struct Target: Sendable, Equatable {
        var text: String
        var path: String
        var query: [String: String]
    }

    /// Parses `bytes`, the head's lines, each ending in CRLF, without the blank line after them;
    /// `previous` is the last target decoded on the connection, taken as it is
    /// when this one is the same (a player asks for the same URL, range after range).
    static func parse(_ bytes: ArraySlice<UInt8>, previous: Target? = nil) throws(Refusal) -> RequestHead {
        // Scanned by hand, not split: this runs on every request of every player, and splitting
        // into arrays of slices cost a fifth of a cached range's time in user space.
        var lines = Lines(bytes)
        guard let first = lines.next(), first.last == UInt8(ascii: "\r") else {
            throw Refusal(status: 400, message: "the request line does not end in CRLF")
        }
        let line = first.dropLast()
        guard let space = line.firstIndex(of: UInt8(ascii: " ")),
            let second = line[(space + 1)...].firstIndex(of: UInt8(ascii: " ")),
            !line[(second + 1)...].contains(UInt8(ascii: " "))
        else {
            throw Refusal(status: 400, message: "the request line is not METHOD TARGET VERSION")
        }
        let methodBytes = line[line.startIndex..<space]
        let target = line[(space + 1)..<second]
        let version = line[(second + 1)...]
        let method = String(decoding: methodBytes, as: UTF8.self)
        let decoded: Target
        if let previous, sameBytes(previous.text, target) {
            decoded = previous
        } else {
            let (path, query) = splitTarget(target)
            decoded = Target(text: String(decoding: target, as: UTF8.self), path: path, query: query)
        }
        var head = RequestHead(
            method: method, target: decoded.text, path: decoded.path, query: decoded.query,
            headers: HTTPHeaders(minimumCapacity: 8), isHTTP11: true)
        func refuse(_ status: Int, _ message: String) -> Refusal {
            Refusal(status: status, message: message, method: head.method, target: head.target, path: head.path)
        }
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(isTokenByte) else {
            throw refuse(400, "the method is not a token")
        }
        guard target.first == UInt8(ascii: "/") else { throw refuse(400, "the target is not a path") }
        if version.elementsEqual("HTTP/1.1".utf8) {
            head.isHTTP11 = true
        } else if version.elementsEqual("HTTP/1.0".utf8) {
            head.isHTTP11 = false
        } else {
            throw refuse(505, "only HTTP/1.0 and HTTP/1.1 are spoken here")
        }
        var fields = 0
        while let line = lines.next(), !line.isEmpty {
            // Headers are looked up in a list (`HTTPHeaders`): a bound keeps a head of thousands
            // of names from costing the loop a quadratic search.
            fields += 1
            guard fields <= maxFields else { throw refuse(431, "a request may send \(maxFields) header lines at most") }
            guard line.last == UInt8(ascii: "\r") else { throw refuse(400, "a header line does not end in CRLF") }
            let text = line.dropLast()
            guard let colon = text.firstIndex(of: UInt8(ascii: ":")) else {
                throw refuse(400, "a header line has no colon")
            }
            let name = text[text.startIndex..<colon]
            // No whitespace before the colon, no folded lines: both have smuggled requests past
            // servers that read them differently (RFC 9112 §5).
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else { throw refuse(400, "a header name is not a token") }
            let value = trimmed(text[(colon + 1)...])
            guard !value.contains(where: { $0 == 0 || $0 == UInt8(ascii: "\r") }) else {
                throw refuse(400, "a header value holds a control character")
            }
            let key = lowercased(name)
            let valueText = String(decoding: value, as: UTF8.self)
            if let existing = head.headers[key] {
                if key == "host" { throw refuse(400, "two Host headers") }
                if key == "content-length" && existing != valueText { throw refuse(400, "two Content-Length headers") }
                continue
            }
            head.headers[key] = valueText
        }
        if head.isHTTP11 && head.headers["host"] == nil { throw refuse(400, "HTTP/1.1 needs a Host header") }
        if let length = head.headers["content-length"] {
            guard !length.isEmpty, length.utf8.count <= 18, length.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw refuse(400, "Content-Length is not a number")
            }
        }
        if head.headers["transfer-encoding"] != nil {
            // JSON bodies are small and every client announces their length; a chunked body is
            // refused rather than read by a second, rarely used path.
            throw refuse(411, "send the body with a Content-Length, not Transfer-Encoding")
        }
        return head
    }

    /// Header lines a request may send (Apache's default limit; players send a handful).
    static let maxFields = 100

    /// The lines of a head: what lies between line feeds, the last one included however it ends.
    private struct Lines {
        private let bytes: ArraySlice<UInt8>
        private var start: Int?

        init(_ bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            start = bytes.startIndex
        }

        mutating func next() -> ArraySlice<UInt8>? {
            guard let from = start else { return nil }
            guard let feed = bytes[from...].firstIndex(of: UInt8(ascii: "\n")) else {
                start = nil
                return bytes[from...]
            }
            start = feed + 1
            return bytes[from..<feed]
        }
    }

    /// Whether `text` is the bytes `bytes`.
    private static func sameBytes(_ text: String, _ bytes: ArraySlice<UInt8>) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            guard utf8.count == bytes.count else { return false }
            guard let start = utf8.baseAddress, !utf8.isEmpty else { return true }
            return bytes.withUnsafeBufferPointer { memcmp(start, $0.baseAddress!, utf8.count) == 0 }
        }
    }

    /// A token (ASCII), lowercased byte by byte.
    private static func lowercased(_ name: ArraySlice<UInt8>) -> String {
        String(unsafeUninitializedCapacity: name.count) { out in
            var i = 0
            for byte in name {
                out[i] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                i += 1
            }
            return i
        }
    }

    /// The path and query of a request target (`/p%20th?a=1&b`), decoded.
    static func splitTarget(_ target: ArraySlice<UInt8>) -> (String, [String: String]) {
        guard let mark = target.firstIndex(of: UInt8(ascii: "?")) else { return (percentDecoded(target), [:]) }
        var query: [String: String] = [:]
        for pair in target[(mark + 1)...].split(separator: UInt8(ascii: "&")) {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = percentDecoded(pair[pair.startIndex..<(equals ?? pair.endIndex)], plusIsSpace: true)
            let value = equals.map { percentDecoded(pair[($0 + 1)...], plusIsSpace: true) } ?? ""
            if query[name] == nil { query[name] = value }
        }
        return (percentDecoded(target[target.startIndex..<mark]), query)
    }

    /// `%XX` decoded (a `%` not followed by two hex digits stays as it is); invalid UTF-8 becomes U+FFFD.
    static func percentDecoded(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool = false) -> String {
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(decoding: bytes, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let byte = bytes[i]
            if byte == UInt8(ascii: "%"), i + 2 < bytes.endIndex, let high = hexValue(bytes[i + 1]),
                let low = hexValue(bytes[i + 2])
            {
                out.append(high << 4 | low)
                i += 3
                continue
            }
            out.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// RFC 9110's `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

/// `bytes` without leading and trailing spaces and tabs.
private func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    var start = bytes.startIndex, end = bytes.endIndex
    while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
    while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
    return bytes[start..<end]
}
