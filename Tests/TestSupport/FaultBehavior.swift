/// How `FaultServer` answers requests to one route. Each case models a way real servers and
/// networks misbehave, so client code can be tested against it over a real socket.
public indirect enum FaultBehavior: Sendable {
    /// Correct HTTP/1.1 for a static resource: single byte ranges (`a-b`, `a-`, `-n`) get 206
    /// with `Content-Range`, unsatisfiable ones 416, `If-Range` that matches neither `etag` nor
    /// `lastModified` gets the full 200, HEAD gets headers only.
    case serve(
        body: [UInt8], etag: String? = "\"v1\"", lastModified: String? = nil,
        contentType: String = "application/octet-stream")
    /// A server without range support: always 200 with the whole body, no `Accept-Ranges`.
    case ignoreRanges(body: [UInt8])
    /// Like `.ignoreRanges`, but HTTP/1.0 style: no Content-Length, the body ends when the
    /// connection closes, so the client cannot know the size in advance.
    case ignoreRangesWithoutLength(body: [UInt8])
    /// Just this status with a short text body, plus `Retry-After` when given.
    case status(Int, retryAfter: Int? = nil)
    /// The i-th request (0-based) to the route uses element min(i, count-1): "500 twice then serve".
    case sequence([FaultBehavior])
    /// Same status and headers as `then` (full Content-Length), but the connection is closed
    /// after `bytes` body bytes: a connection dropped mid-body.
    case dropAfter(bytes: Int, then: FaultBehavior)
    /// Like `then`, but pauses `seconds` after `afterBytes` body bytes: a stalled transfer.
    case stall(afterBytes: Int, seconds: Double, then: FaultBehavior)
    /// A redirect with a `Location` header.
    case redirect(to: String, status: Int = 302)
    /// A lying server: answers a range request with 206 and the bytes of a range whose start
    /// (and end) is one byte later than asked, with a matching `Content-Range`.
    case wrongContentRange(body: [UInt8])
    /// Like `.serve`, but the last `missing` bytes of the announced range are never sent before
    /// the connection closes: a truncated response.
    case shortBody(body: [UInt8], missing: Int)
    /// Waits `seconds` before sending anything: a slow server.
    case delay(seconds: Double, then: FaultBehavior)
    /// Exactly this response whatever was asked: `status`, `headers`, `body`, and a
    /// `Content-Length` of `contentLength` (the body's length when nil, none with -1; the
    /// connection closes after the body when the announced length differs from it). A lying or
    /// broken server: a hostile Content-Range, an encoded body, a length that is not the body's.
    case fixed(status: Int, headers: [(String, String)], body: [UInt8], contentLength: Int? = nil)
    /// Like `then`, but the body trickles out at `bytesPerSecond`: a server that is not stalled,
    /// only too slow to be useful.
    case drip(bytesPerSecond: Int, then: FaultBehavior)
}
