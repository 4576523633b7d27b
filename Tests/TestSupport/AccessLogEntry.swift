import Foundation

/// One line of the nginx access log written by `NginxServer`, in the format
/// `$connection $connection_requests "$request" $status $body_bytes_sent "$http_range" "$http_if_range"`.
/// Tests count requests, connections and bytes the server sent with it — the yardsticks of
/// the project — from the server's own point of view rather than the client's.
public struct AccessLogEntry: Sendable, Equatable {
    /// nginx's connection serial number (`$connection`): equal numbers mean a reused connection.
    public let connection: Int
    /// The request's position on its connection, 1-based (`$connection_requests`).
    public let connectionRequests: Int
    public let method: String
    /// The request target as sent, query string included.
    public let path: String
    public let status: Int
    /// Body bytes nginx handed to the socket (`$body_bytes_sent`).
    public let bodyBytesSent: Int64
    /// The `Range` request header, nil when absent.
    public let range: String?
    /// The `If-Range` request header, nil when absent.
    public let ifRange: String?

    public init(
        connection: Int, connectionRequests: Int, method: String, path: String, status: Int,
        bodyBytesSent: Int64, range: String?, ifRange: String?
    ) {
        self.connection = connection
        self.connectionRequests = connectionRequests
        self.method = method
        self.path = path
        self.status = status
        self.bodyBytesSent = bodyBytesSent
        self.range = range
        self.ifRange = ifRange
    }

    /// Parses one log line; nil for lines that do not follow the format.
    public init?(line: String) {
        let fields = Self.split(line)
        guard fields.count == 7,
            let connection = Int(fields[0]), let connectionRequests = Int(fields[1]),
            let status = Int(fields[3]), let bytes = Int64(fields[4])
        else { return nil }
        // "$request" is "GET /path HTTP/1.1"; a garbage request line may lack parts.
        let request = fields[2].split(separator: " ", omittingEmptySubsequences: true)
        self.init(
            connection: connection, connectionRequests: connectionRequests,
            method: request.count > 0 ? String(request[0]) : "",
            path: request.count > 1 ? String(request[1]) : "",
            status: status, bodyBytesSent: bytes,
            range: fields[5] == "-" ? nil : fields[5],
            ifRange: fields[6] == "-" ? nil : fields[6])
    }

    /// Splits on spaces outside double quotes and undoes nginx's `\xHH` escaping, which it
    /// applies to quotes, backslashes and control characters inside variables.
    static func split(_ line: String) -> [String] {
        var fields: [String] = []
        var current: [UInt8] = []
        var inQuotes = false
        var hasField = false
        let bytes = Array(line.utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                inQuotes.toggle()
                hasField = true
            } else if b == UInt8(ascii: " ") && !inQuotes {
                if hasField { fields.append(String(decoding: current, as: UTF8.self)) }
                current.removeAll(keepingCapacity: true)
                hasField = false
            } else if b == UInt8(ascii: "\\"), i + 3 < bytes.count, bytes[i + 1] == UInt8(ascii: "x"),
                let value = UInt8(String(decoding: bytes[(i + 2)...(i + 3)], as: UTF8.self), radix: 16)
            {
                current.append(value)
                hasField = true
                i += 3
            } else {
                current.append(b)
                hasField = true
            }
            i += 1
        }
        if hasField { fields.append(String(decoding: current, as: UTF8.self)) }
        return fields
    }
}
