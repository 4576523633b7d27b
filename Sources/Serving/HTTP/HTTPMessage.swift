import CSockets
import Caching
import Foundation
import Synchronization

/// One HTTP request as the service's handlers see it: no C pointers, everything copied.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The path without the query string, percent-decoded.
    public let path: String
    /// Query arguments (decoded); a repeated name keeps its first value.
    public let query: [String: String]
    /// Header names lowercased.
    public let headers: HTTPHeaders
    public let body: [UInt8]
    /// The peer's address, e.g. "127.0.0.1".
    public let peer: String
    /// True once the client has closed its side: work for it (a fetch it waits on) can stop.
    public let clientGone: @Sendable () -> Bool
    /// False while the server's event loop asks (the handler must not wait: it answers nil if it
    /// would); true on the worker thread the request was then handed to, where waiting is fine.
    public internal(set) var mayWait: Bool

    public init(
        method: String, path: String, query: [String: String] = [:], headers: HTTPHeaders = [:],
        body: [UInt8] = [], peer: String = "", mayWait: Bool = true,
        clientGone: @escaping @Sendable () -> Bool = { false }
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
        self.clientGone = clientGone
        self.mayWait = mayWait
    }
}

/// A response body produced while it is sent: the range proxy streams bytes as they arrive.
///
/// Bytes that are in a file already (fetched and stored) the server asks for first with
/// `readyFile`, and sends by sendfile, never through its own memory; the rest with `readReady`.
///
/// The server's event loop asks for bytes with `readReady`, which never waits; when nothing is
/// ready it sets the connection aside and a worker thread calls `waitUntilReady`, which may block
/// (on an origin), then the loop asks again. Calls come in order, never two at once. Throwing
/// from either ends the connection at once, so a client sees a short body, never wrong bytes.
public protocol HTTPBodyStream: AnyObject, Sendable {
    /// Copies what is ready now into `buffer`: the count, 0 at the end of the body, nil when
    /// nothing is ready yet.
    func readReady(into buffer: UnsafeMutableRawBufferPointer) throws -> Int?
    /// Waits until `readReady` has bytes (or the end) to give; `wanted` is how many it will ask for.
    func waitUntilReady(wanted: Int) throws
    /// The response is over (sent, or the client went away): stop what only it needed.
    func close()
    /// The next bytes, up to `max`, if they are stored in a file now: the server sends them from
    /// it, and asks again after. Nil: `readReady` gives them (or tells there are none yet).
    func readyFile(max: Int) throws -> FileBody?
}

extension HTTPBodyStream {
    public func readyFile(max: Int) throws -> FileBody? { nil }
}

/// `length` bytes of a stored file from `offset`, sent by the kernel (`sendfile`): the bytes go
/// from the page cache to the socket without passing through the process. The file stays open
/// (and so safe from eviction) while the response holds it.
public final class FileBody: Sendable {
    private let file: StoredFile
    public let offset: Int64
    public let length: Int64

    public init(_ file: StoredFile, offset: Int64, length: Int64) {
        self.file = file
        self.offset = offset
        self.length = length
    }

    /// Sends what the socket takes of the body from `position` on: the count, 0 if the file
    /// ended first, -1 with `errno` set (EAGAIN: the socket is full).
    func send(to socket: Int32, at position: Int64) -> Int {
        var from = off_t(offset + position)
        return sendfile(socket, file.fd, &from, Int(length - position))
    }
}

public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// `length` bytes (nil: unknown, chunked) read from the stream.
        case stream(length: Int64?, HTTPBodyStream)
        /// Bytes of an open file (`FileBody`).
        case file(FileBody)
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
