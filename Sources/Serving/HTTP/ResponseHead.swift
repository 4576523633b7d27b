import Foundation

/// The status line and headers of a response, as bytes. The server adds `Date`,
/// `Content-Length` and `Connection`; a header the handler made with a CR, LF or NUL in it is
/// left out rather than let it start a header of its own.
enum ResponseHead {
    /// `length` nil: the body ends when the connection closes (no Content-Length).
    static func bytes(
        status: Int, headers: [(String, String)], length: Int64?, keepAlive: Bool, date: ArraySlice<UInt8>
    ) -> [UInt8] {
        // Each string's bytes appended from its own storage: this runs on every response, and
        // string interpolation and `+= text.utf8` were a tenth of a cached range's user time.
        var out: [UInt8] = []
        out.reserveCapacity(512)
        append("HTTP/1.1 ", to: &out)
        appendDecimal(Int64(status), to: &out)
        out.append(UInt8(ascii: " "))
        append(reason(status), to: &out)
        append("\r\nDate: ", to: &out)
        out += date
        append("\r\n", to: &out)
        for (name, value) in headers {
            let start = out.count
            append(name, to: &out)
            append(": ", to: &out)
            append(value, to: &out)
            if out[start...].contains(where: isForbidden) {
                out.removeSubrange(start...)
                continue
            }
            append("\r\n", to: &out)
        }
        if let length, hasBody(status) {
            append("Content-Length: ", to: &out)
            appendDecimal(length, to: &out)
            append("\r\n", to: &out)
        }
        append(keepAlive ? "\r\n" : "Connection: close\r\n\r\n", to: &out)
        return out
    }

    private static func append(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// `value` (not negative) in decimal digits.
    private static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for any Int64
        withUnsafeMutableBytes(of: &digits) { buffer in
            var rest = UInt64(max(0, value))
            var at = buffer.count
            repeat {
                at -= 1
                buffer[at] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: buffer[at...])
        }
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
