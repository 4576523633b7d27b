import Foundation

/// The status line and headers of a response, as bytes. The server adds `Date`,
/// `Content-Length` and `Connection`; a header the handler made with a CR, LF or NUL in it is
/// left out rather than let it start a header of its own.
enum ResponseHead {
    /// `length` nil: the body ends when the connection closes (no Content-Length).
    static func bytes(
        status: Int, headers: [(String, String)], length: Int64?, keepAlive: Bool, date: ArraySlice<UInt8>
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(384)
        out += "HTTP/1.1 \(status) \(reason(status))\r\nDate: ".utf8
        out += date
        out += "\r\n".utf8
        for (name, value) in headers {
            guard !name.utf8.contains(where: isForbidden), !value.utf8.contains(where: isForbidden) else { continue }
            out += name.utf8
            out += ": ".utf8
            out += value.utf8
            out += "\r\n".utf8
        }
        if let length, hasBody(status) { out += "Content-Length: \(length)\r\n".utf8 }
        out += (keepAlive ? "\r\n" : "Connection: close\r\n\r\n").utf8
        return out
    }

    /// 1xx, 204 and 304 have no body, and say no length.
    static func hasBody(_ status: Int) -> Bool { status >= 200 && status != 204 && status != 304 }

    private static func isForbidden(_ byte: UInt8) -> Bool { byte == 0x0D || byte == 0x0A || byte == 0 }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        case 507: "Insufficient Storage"
        case 508: "Loop Detected"
        default: "Status"
        }
    }

    /// The `Date` header's value for `seconds` since 1970 (RFC 9110's IMF-fixdate).
    static func date(_ seconds: Int) -> [UInt8] {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let text =
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        return Array(text.utf8)
    }
}
