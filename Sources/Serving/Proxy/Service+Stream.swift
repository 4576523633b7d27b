import ByteSources
import Foundation
import RangeFetch
import Support
import Synchronization

/// `GET|HEAD /v1/stream?url=URL`: a caching range proxy that answers like a good static file
/// server. Cached bytes come from disk; gaps are fetched (shared with every other reader of the
/// URL) and streamed to the player as they arrive. One response reads one version: if the
/// origin changes or fails after bytes were sent, the response ends short — the player sees a
/// short read and asks again — never with wrong bytes. An origin that cannot be reached gets the
/// player what is cached and no promise more (`promisable`): a range from a cached byte is
/// answered to the end of its cached run, one from a byte not cached with a 502 or 504.
///
/// A range wholly cached is answered on the server's event loop and sent from the data file
/// (`FileBody`); anything that may wait (a fetch, a probe, a playlist) throws `MustWait` there and
/// is answered again on a worker (`HTTPRequest.mayWait`).
extension Service {
    func stream(_ request: HTTPRequest) throws -> HTTPResponse {
        let url = try originURL(request)
        guard streams.add(1, ordering: .relaxed).newValue <= config.limits.maxStreams else {
            streams.subtract(1, ordering: .relaxed)
            throw APIError.unavailable("\(config.limits.maxStreams) streams are open already; try again shortly")
        }
        var handedOver = false
        defer { if !handedOver { streams.subtract(1, ordering: .relaxed) } }

        // The response's own token, cancelled when it ends, the player leaves (also before the
        // headers: a player that hung up must not hold a thread and a slot until the origin
        // times out) or the service stops.
        let stopping = self.stopping
        let token = Cancellation(when: { stopping.isCancelled || request.clientGone() })
        guard let source = try session.open(url, cancellation: token) as? RemoteSource else {
            throw APIError.forbidden("only http and https origins may be streamed")
        }
        // The first byte the player wants tells the size, and pins the version the headers name.
        let asked = request.headers["range"].flatMap(RangeHeader.Spec.init)
        let size = try sizeAndFirstByte(request, asked: asked, source: source)
        // Told apart without reading first (this runs on every request), then on a worker.
        if mayBeManifest(request, url: url, source: source, size: size) {
            guard request.mayWait else { throw MustWait() }
            if let kind = try manifestKind(request, url: url, source: source, size: size) {
                return try playlist(request, url: url, kind: kind, source: source, size: size, token: token)
            }
        }
        // What the body will be of: its first byte's version (a changed origin makes the body end
        // short, never carry bytes of another version than these headers name).
        let validators = source.version ?? source.validators
        // The proxy shares its origin with the dashboard (which keeps the token in the page):
        // an origin's HTML or script must never run here. Only media types pass; the rest is
        // served as bytes, unsniffed and sandboxed.
        var headers: [(String, String)] = [
            ("Accept-Ranges", "bytes"),
            ("Content-Type", checkedMediaType(source.contentType)),
            ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", "sandbox; default-src 'none'"),
        ]
        if let etag = validators.etag { headers.append(("ETag", etag)) }
        if let lastModified = validators.lastModified { headers.append(("Last-Modified", lastModified)) }

        var wanted = RangeHeader(asked, size: size)
        // If-Range that no longer matches asks for the whole (new) resource.
        if let ifRange = request.headers["if-range"], ifRange != validators.etag, ifRange != validators.lastModified {
            wanted = .whole
        }
        var part: Range<Int64>
        switch wanted {
        case .unsatisfiable:
            headers.append(("Content-Range", "bytes */\(size)"))
            return HTTPResponse(status: 416, headers: headers, body: .bytes([]))
        case .whole: part = 0..<size
        case .part(let range): part = range
        }
        // The player said where it stops: readahead goes no further.
        source.limitReadahead(to: part.upperBound)
        part = try promisable(part, of: source, url: url, token: token, mayWait: request.mayWait)
        let status = wanted == .whole && part.count == size ? 200 : 206
        if status == 206 {
            headers.append(("Content-Range", "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(size)"))
        }
        if request.method != "HEAD", !part.isEmpty, let stored = try source.storedFile(part) {
            // Cached whole: sent from the data file, which the response holds open (and so
            // locked against eviction) until it is sent.
            let body = FileBody(stored, offset: part.lowerBound, length: Int64(part.count))
            return HTTPResponse(status: status, headers: headers, body: .file(body))
        }
        // A body read from an origin waits; HEAD's is never read.
        if !request.mayWait && request.method != "HEAD" { throw MustWait() }
        // For HEAD the server sends the length of a body it does not read.
        let body = ProxyStream(
            source: request.method == "HEAD" ? nil : source, range: part, token: token,
            onClose: { [self] in streamEnded($0) })
        handedOver = true
        return HTTPResponse(status: status, headers: headers, body: .stream(length: Int64(part.count), body))
    }

    /// `mediaType(type)`, remembered.
    private func checkedMediaType(_ type: String?) -> String {
        guard let type else { return Service.mediaType(nil) }
        return mediaTypes.value(for: type) { Service.mediaType($0) }
    }

    /// The media type of `type`, exactly parsed (`MediaType`), if it names media a player reads
    /// (video, audio, raster images, playlists, subtitles), else `application/octet-stream`. The
    /// origin's text is never passed on: only the type this check approved.
    static func mediaType(_ type: String?) -> String {
        guard let type, let media = MediaType(type) else { return "application/octet-stream" }
        let listed = [
            "application/mp4", "application/vnd.apple.mpegurl", "application/x-mpegurl", "application/dash+xml",
            "text/vtt", "application/octet-stream",
        ]
        // XML (`image/svg+xml`, `video/x+xml`, `image/xml`) is a document a browser may render,
        // scripts and all; the DASH manifest, rewritten by the proxy, is listed by name.
        let xml = media.subtype == "xml" || media.subtype.hasSuffix("+xml") || media.subtype.contains("svg")
        let isMedia =
            ((media.type == "video" || media.type == "audio" || media.type == "image") && !xml)
            || listed.contains(media.description)
        return isMedia ? media.description : "application/octet-stream"
    }

    /// The size, after reading the first byte the `Range` header asks for (byte 0 without one, or
    /// when the size is unknown and the header counts from the end): so that the request's own
    /// first bytes are what the first fetch brings, and the version of that byte is pinned.
    private func sizeAndFirstByte(
        _ request: HTTPRequest, asked: RangeHeader.Spec?, source: RemoteSource
    ) throws -> Int64 {
        var first = asked?.first ?? 0
        if let known = source.knownSize {
            switch RangeHeader(asked, size: known) {
            case .part(let part): first = part.lowerBound
            case .whole: first = 0
            case .unsatisfiable: return known  // a 416: no body to pin a version for
            }
            if known == 0 { return 0 }
        } else if !request.mayWait {
            throw MustWait()
        }
        // A stored byte's version is pinned without reading it (the range is sent from the file).
        if try !source.pinStored(at: first) { try readByte(at: first, of: source, mayWait: request.mayWait) }
        if let size = try source.size() { return size }
        throw APIError(status: 502, code: "origin_error", message: "\(source.input) did not say how long it is")
    }

    /// What of `part` (whose first byte is here) the response can promise: all of it while the
    /// origin answers, else the cached run it starts with — a `206` whose `Content-Range` ends
    /// where the cached bytes end, which players follow with a new request, never a length the
    /// body cannot fill. Unless a running fetch covers it or the origin answered a probe of this
    /// URL a moment ago (`RecentAnswers`), the origin is asked for the first byte past the cached
    /// run before the headers go out: one small request and one round trip more for a range that
    /// is partly cached, the price of knowing.
    private func promisable(
        _ part: Range<Int64>, of source: RemoteSource, url: String, token: Cancellation, mayWait: Bool
    ) throws -> Range<Int64> {
        guard let gap = source.missingRanges(in: part).first?.lowerBound, gap > part.lowerBound,
            !source.isFetching(gap), !recentAnswers.isFresh(url)
        else { return part }
        if !mayWait { throw MustWait() }
        switch probe(url, at: gap, token: token) {
        case .answered:
            recentAnswers.answered(url)
            return part
        case .unavailable:
            recentAnswers.failed(url)
            return part.lowerBound..<gap
        case .unknown:
            return part
        }
    }

    private enum ProbeAnswer {
        /// The origin answered (any status but a 5xx).
        case answered
        /// Unreachable, timed out, or a 5xx.
        case unavailable
        /// The player left, or the request failed on this side: nothing learned of the origin.
        case unknown
    }

    /// Asks for the byte at `offset` alone, not kept: the body fetches it through the source,
    /// which compares versions as it always does (a changed origin still ends a response short
    /// after the cached bytes, never mixes them).
    private func probe(_ url: String, at offset: Int64, token: Cancellation) -> ProbeAnswer {
        struct Answered: Error {}
        var tally = FetchCounters()
        do {
            // Its response is the answer: the transfer stops there (an origin that ignores
            // ranges would send the whole body).
            _ = try session.fetcher.fetch(
                url: url, range: offset..<offset + 1, cancellation: token, tally: &tally,
                onResponse: { _ in throw Answered() }, onData: { _, _ in })
            return .answered
        } catch is Answered {
            return .answered
        } catch let error as FetchError {
            return error.isOriginUnavailable ? .unavailable : token.isCancelled ? .unknown : .answered
        } catch {
            return .unknown
        }
    }

    /// Reads the byte at `offset`, fetching it if it must and may (`MustWait` if it may not).
    private func readByte(at offset: Int64, of source: RemoteSource, mayWait: Bool) throws {
        var byte: UInt8 = 0
        try withUnsafeMutableBytes(of: &byte) { buffer in
            if mayWait {
                _ = try source.read(into: buffer, at: offset)
            } else if try source.readStored(into: buffer, at: offset) == nil {
                throw MustWait()
            }
        }
    }

    fileprivate func streamEnded(_ stream: ProxyStream) {
        streams.subtract(1, ordering: .relaxed)
    }
}

/// The body of one proxied response: `range` of the source, read in order. The source's
/// reader token is this response's: when the player goes away, fetches only it needed stop.
final class ProxyStream: HTTPBodyStream, @unchecked Sendable {
    // `next` is touched by one call at a time: the event loop's, or the worker's while the
    // connection is set aside (the server's suspend and resume order them).
    private let source: RemoteSource?
    private let range: Range<Int64>
    private var next: Int64
    private let token: Cancellation
    private let closed = Atomic<Bool>(false)
    private let onClose: @Sendable (ProxyStream) -> Void

    /// `source` nil: a body that is never read (HEAD). `onClose` is told once, when the response ends.
    init(
        source: RemoteSource?, range: Range<Int64>, token: Cancellation,
        onClose: @escaping @Sendable (ProxyStream) -> Void
    ) {
        self.source = source
        self.range = range
        next = range.lowerBound
        self.token = token
        self.onClose = onClose
    }

    func readReady(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        guard let source, next < range.upperBound else { return 0 }
        try checkOpen(source)
        let want = Int(min(Int64(buffer.count), range.upperBound - next))
        guard let n = try source.readStored(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: next)
        else { return nil }
        // The resource ended before the range the headers promised: end short, never pad.
        guard n > 0 else { throw SourceError.inconsistentOrigin(input: source.input, detail: "ended at byte \(next)") }
        next += Int64(n)
        return n
    }

    /// The stored run from `next` (up to `max` bytes, and where a fetch still compares bytes),
    /// as the data file's bytes: sent from the page cache by the kernel, not read back out of it.
    func readyFile(max: Int) throws -> FileBody? {
        guard let source, next < range.upperBound else { return nil }
        try checkOpen(source)
        let wanted = next..<min(range.upperBound, next + Int64(max))
        let end = source.missingRanges(in: wanted).first?.lowerBound ?? wanted.upperBound
        guard end > next, let stored = try source.storedFile(next..<end) else { return nil }
        let body = FileBody(stored, offset: next, length: end - next)
        next = end
        return body
    }

    func waitUntilReady(wanted: Int) throws {
        guard let source, next < range.upperBound else { return }
        try checkOpen(source)
        let want = Int(min(Int64(wanted), range.upperBound - next))
        guard try source.awaitBytes(at: next, count: want) else {
            throw SourceError.inconsistentOrigin(input: source.input, detail: "ended at byte \(next)")
        }
    }

    private func checkOpen(_ source: RemoteSource) throws {
        if closed.load(ordering: .relaxed) || token.isCancelled { throw FetchError.cancelled(url: source.input) }
    }

    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        token.cancel()
        onClose(self)
    }
}

/// Thrown by a handler asked on the event loop (`HTTPRequest.mayWait` false) at the point where
/// it would wait: the request is then answered on a worker.
struct MustWait: Error {}
