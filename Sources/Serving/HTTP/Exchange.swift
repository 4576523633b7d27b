import Foundation
import Synchronization

/// One request on a connection, from its head to the end of its response.
///
/// Touched by its connection's event loop only, except `answer` and `failed`, which a worker
/// sets while the connection is set aside (the loop reads them once the worker posts back).
final class Exchange: @unchecked Sendable {
    enum Body {
        case none
        /// The bytes of `file` from `next` to its end, by sendfile.
        case file(FileBody, next: Int64)
        /// Read from `stream` into `buffer`, `remaining` bytes more (nil: to its end).
        case stream(HTTPBodyStream, remaining: Int64?)
    }

    let started = ProcessInfo.processInfo.systemUptime
    let method: String
    let target: String
    let path: String
    let query: [String: String]
    let isHead: Bool
    var keepAlive: Bool
    var status = 0
    /// The head (and a body given as bytes), and how much of it is sent.
    var out: [UInt8] = []
    var outSent = 0
    var body = Body.none
    /// A streamed body's bytes read and not yet sent: `buffer[pending]`, or a stored run of them
    /// being sent from its file (`piece`, from `next`).
    var buffer: UnsafeMutableRawBufferPointer?
    var pending = 0..<0
    var piece: (file: FileBody, next: Int64)?
    var bodySent: Int64 = 0
    /// Told when the response ends, sent or not.
    var stream: HTTPBodyStream?
    /// A worker's answer to a request that had to wait.
    let answer = Mutex<HTTPResponse?>(nil)
    /// A streamed body's wait failed: the response ends short.
    let failed = Atomic<Bool>(false)

    init(method: String, target: String, path: String, query: [String: String], keepAlive: Bool) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.isHead = method == "HEAD"
        self.keepAlive = keepAlive
    }

    /// Makes the response's head and body ready to send.
    func respond(_ response: HTTPResponse, date: ArraySlice<UInt8>) {
        status = response.status
        let hasBody = ResponseHead.hasBody(status)
        let length: Int64?
        switch response.body {
        case .bytes(let bytes):
            length = Int64(bytes.count)
        case .file(let file):
            length = file.length
            if !isHead && hasBody && file.length > 0 { body = .file(file, next: 0) }
        case .stream(let streamLength, let source):
            length = streamLength
            stream = source
            // Without a length, the body ends with the connection.
            if streamLength == nil { keepAlive = false }
            if !isHead && hasBody && streamLength != 0 { body = .stream(source, remaining: streamLength) }
        }
        out = ResponseHead.bytes(
            status: status, headers: response.headers, length: length, keepAlive: keepAlive, date: date)
        if case .bytes(let bytes) = response.body, !isHead, hasBody {
            out += bytes
            bodySent = Int64(bytes.count)
        }
    }

    /// The response is over: its stream is told, its buffer freed.
    func end() {
        stream?.close()
        stream = nil
        buffer?.deallocate()
        buffer = nil
        piece = nil
        body = .none
    }

    deinit { buffer?.deallocate() }
}
