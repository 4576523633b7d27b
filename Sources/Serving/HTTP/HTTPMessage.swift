import Foundation

/// One HTTP request as the service's handlers see it: no C pointers, everything copied.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The path without the query string, percent-decoded by libmicrohttpd.
    public let path: String
    /// Query arguments (decoded); a repeated name keeps its first value.
    public let query: [String: String]
    /// Header names lowercased.
    public let headers: [String: String]
    public let body: [UInt8]
    /// The peer's address, e.g. "127.0.0.1".
    public let peer: String
    /// True once the client has closed its side: work for it (a fetch it waits on) can stop.
    public let clientGone: @Sendable () -> Bool

    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: [UInt8] = [], peer: String = "", clientGone: @escaping @Sendable () -> Bool = { false }
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
        self.clientGone = clientGone
    }
}

/// A response body produced while it is sent: the range proxy streams bytes as they arrive.
/// `read` is called on the connection's thread, in order; it may block. Returning 0 ends the
/// body; throwing ends the connection at once, so a client sees a short body, never wrong bytes.
public protocol HTTPBodyStream: AnyObject, Sendable {
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// The response is over (sent, or the client went away): stop what only it needed.
    func close()
}

public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// `length` bytes (nil: unknown, chunked) read from the stream.
        case stream(length: Int64?, HTTPBodyStream)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(
        _ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }
}
