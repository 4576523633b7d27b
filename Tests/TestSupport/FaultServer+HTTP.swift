import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A parsed HTTP/1.x request head.
struct HTTPRequestHead {
    var method: String
    var target: String
    var version: String
    /// Lowercased names; repeated headers joined with ", ".
    var headers: [String: String]

    /// HTTP/1.1 keeps the connection open unless told to close; HTTP/1.0 only when asked.
    var wantsKeepAlive: Bool {
        let connection = headers["connection"]?.lowercased() ?? ""
        if connection.contains("close") { return false }
        if version == "HTTP/1.0" { return connection.contains("keep-alive") }
        return true
    }

    /// Parses the bytes before the blank line; nil when it is not an HTTP request.
    init?(_ bytes: ArraySlice<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: true)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/") else { return nil }
        method = String(requestLine[0])
        target = String(requestLine[1])
        version = String(requestLine[2])
        headers = [:]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let existing = headers[name] {
                headers[name] = existing + ", " + value
            } else {
                headers[name] = value
            }
        }
    }
}

/// Buffered reading of requests from one connection. Owned by that connection's thread only.
struct HTTPRequestReader {
    let fd: Int32
    /// Bytes received but not yet consumed (a pipelined next request may already be here).
    private var buffer: [UInt8] = []
    private static let maxHeadSize = 64 * 1024

    init(fd: Int32) {
        self.fd = fd
    }

    enum ReadResult {
        case request(HTTPRequestHead)
        /// The peer closed (or the server is stopping) between requests.
        case closed
        /// Garbage or an oversized head: answer 400 and close.
        case malformed
    }

    /// Reads the next request head, and discards its body (Content-Length bodies only;
    /// our clients never upload).
    mutating func next() -> ReadResult {
        var searchFrom = 0
        while true {
            if let end = Self.findHeadEnd(buffer, from: searchFrom) {
                let head = HTTPRequestHead(buffer[0..<end])
                buffer.removeSubrange(0..<(end + 4))
                guard let head else { return .malformed }
                if let length = head.headers["content-length"].flatMap({ Int($0) }), length > 0 {
                    guard discard(length) else { return .closed }
                } else if head.headers["transfer-encoding"] != nil {
                    return .malformed
                }
                return .request(head)
            }
            if buffer.count > Self.maxHeadSize { return .malformed }
            searchFrom = max(0, buffer.count - 3)
            guard receive() else { return .closed }
        }
    }

    private mutating func discard(_ count: Int) -> Bool {
        var left = count
        while true {
            let take = min(left, buffer.count)
            buffer.removeFirst(take)
            left -= take
            if left == 0 { return true }
            guard receive() else { return false }
        }
    }

    /// Appends whatever the socket has; false on EOF or error.
    private mutating func receive() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n < 0 && errno == EINTR { continue }
            return false
        }
    }

    private static func findHeadEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var i = start
        while i + 3 < bytes.count {
            if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }
}

enum HTTPStatus {
    static func reason(_ code: Int) -> String {
        switch code {
        case 200: return "OK"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 408: return "Request Timeout"
        case 410: return "Gone"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status \(code)"
        }
    }
}
