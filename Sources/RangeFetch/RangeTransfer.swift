import CCurl
import Foundation
import Support
import URLSupport

/// The state of one HTTP range request while libcurl runs it: what was asked, the headers seen
/// so far, and where the next body byte belongs. libcurl's C callbacks reach it through an
/// unretained pointer; `RangeFetcher.perform` keeps it alive for the whole transfer.
final class RangeTransfer {
    /// Response headers past this size are an attack or a broken server, not a media origin.
    static let maxHeaderBytes = 64 << 10

    /// The URL requested (it may carry credentials) and as errors show it.
    let url: String
    let shownURL: String
    let requested: Range<Int64>
    let onResponse: (ResponseInfo) throws -> Void
    let onData: (Int64, UnsafeRawBufferPointer) throws -> Void
    let cancellation: Cancellation?
    /// Seconds without progress after which the transfer counts as stalled (`FetchOptions.timeout`).
    let stallTimeout: Double
    /// Bytes per second a transfer must average over `stallTimeout` (`FetchOptions.lowSpeedLimit`).
    let lowSpeedLimit: Double
    weak var easy: CurlEasy?
    /// When the last header or body byte arrived (uptime seconds).
    private var lastActivity = ProcessInfo.processInfo.systemUptime
    /// The current low-speed window: when it began and the bytes received in it.
    private var windowStart = ProcessInfo.processInfo.systemUptime
    private var windowBytes = 0
    /// Set when the progress callback aborted a stalled or dripping transfer.
    private(set) var stalled = false
    /// Header bytes of every response of this transfer (interim 1xx ones, redirects and the last):
    /// an origin cannot reset the bound by sending another status line.
    private var headerBytes = 0
    /// Interim (1xx) answers so far; a few are normal (`100 Continue`), endless ones an attack.
    private var interimAnswers = 0
    static let maxInterimAnswers = 8

    /// "2" for an HTTP/2 response, else "1.1" (from the status line).
    private(set) var httpVersion = "1.1"
    /// Status and headers of the latest response (redirect responses are replaced by the next).
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    private(set) var info: ResponseInfo?
    /// Offset the next body byte belongs at.
    private(set) var nextOffset: Int64 = 0
    /// End of the bytes a `206` announced in its `Content-Range`: a body must reach it exactly.
    private(set) var announcedEnd: Int64?
    private(set) var bodyBytes: Int64 = 0
    /// Set when a callback failed; libcurl only sees "abort".
    var failure: Error?
    /// Whether a connection to an address may be opened (`FetchOptions.connectionPolicy`).
    var connectionPolicy: (@Sendable (String, Int) -> Bool)?
    /// The address the policy refused, which ended the transfer.
    private(set) var refusedAddress: String?
    /// We stopped the transfer on purpose: a `200` body passed the end of what we need.
    private(set) var stoppedEarly = false
    /// Body bytes received and not yet handed to `onData`, from `heldStart`. libcurl hands a body
    /// over in 16 KiB pieces, and each hand-over is a write to the cache and a wake-up of every
    /// reader waiting for it; so pieces are gathered, and handed over once `handOverSize` are
    /// held, whenever libcurl polls the progress callback (after each batch it has read from the
    /// socket, so a slow origin's bytes are not held back), and when the transfer ends.
    private var held: [UInt8] = []
    private var heldStart: Int64 = 0
    static let handOverSize = 256 << 10

    init(
        url: String, shownURL: String, requested: Range<Int64>, cancellation: Cancellation?, stallTimeout: Double,
        lowSpeedLimit: Double, onResponse: @escaping (ResponseInfo) throws -> Void,
        onData: @escaping (Int64, UnsafeRawBufferPointer) throws -> Void
    ) {
        self.url = url
        self.shownURL = shownURL
        self.requested = requested
        self.cancellation = cancellation
        self.stallTimeout = stallTimeout
        self.lowSpeedLimit = lowSpeedLimit
        self.onResponse = onResponse
        self.onData = onData
    }

    var isSuccessStatus: Bool { status == 200 || status == 206 }

    func header(_ name: String) -> String? { headers[name] }

    /// One header line from libcurl. A status line starts a new response (after a redirect or
    /// a `100 Continue`), so it clears what the previous response said. Returns false to abort
    /// (headers beyond `maxHeaderBytes`).
    func receiveHeaderLine(_ line: String, byteCount: Int) -> Bool {
        // Header bytes keep a transfer from looking stalled, but are no progress towards the body.
        lastActivity = ProcessInfo.processInfo.systemUptime
        headerBytes += byteCount
        guard headerBytes <= RangeTransfer.maxHeaderBytes else {
            failure = FetchError.badResponse(
                url: shownURL,
                detail:
                    "its response headers exceed \(RangeTransfer.maxHeaderBytes >> 10) KiB")
            return false
        }
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("HTTP/") {
            let parts = trimmed.split(separator: " ")
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            httpVersion = String(parts[0].dropFirst("HTTP/".count))
            headers = [:]
            if (100..<200).contains(status) {
                interimAnswers += 1
                guard interimAnswers <= RangeTransfer.maxInterimAnswers else {
                    failure = FetchError.badResponse(
                        url: shownURL,
                        detail:
                            "it sent more than \(RangeTransfer.maxInterimAnswers) interim (1xx) answers before its answer"
                    )
                    return false
                }
            }
            return true
        }
        guard let colon = trimmed.firstIndex(of: ":") else { return true }
        let name = trimmed[..<colon].lowercased()
        let value = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        // Two answers in one: which length, range or version the body is of cannot be known.
        if RangeTransfer.singular.contains(name), let earlier = headers[name], earlier != value {
            failure = FetchError.badResponse(url: shownURL, detail: "it sent two different \(name) headers")
            return false
        }
        headers[name] = value
        return true
    }

    /// Headers an answer has at most once (or repeats unchanged).
    static let singular: Set<String> = [
        "content-length", "content-range", "content-encoding", "transfer-encoding",
        "etag", "last-modified", "content-type", "location",
    ]

    /// Builds and checks the response description before the first body byte is used: an encoded
    /// body, a Content-Range other than the one asked for, or lengths that disagree are refused.
    func makeInfo() throws -> ResponseInfo {
        if let info { return info }
        let effective = easy?.infoString(CURLINFO_EFFECTIVE_URL) ?? url
        var result = ResponseInfo(
            status: status, totalSize: nil, etag: RangeTransfer.validator(header("etag")),
            lastModified: RangeTransfer.validator(header("last-modified")), contentType: header("content-type"),
            effectiveURL: effective, bodyStart: 0, httpVersion: httpVersion)
        result.framed = httpVersion == "2" || header("transfer-encoding")?.lowercased().contains("chunked") == true
        if let encoding = header("content-encoding"), encoding.lowercased() != "identity" {
            // We ask for identity; a compressed body is not the file's bytes at any offset.
            throw FetchError.badResponse(
                url: shownURL,
                detail:
                    "the body came encoded (Content-Encoding: \(encoding)) although identity was asked for")
        }
        let length = header("content-length")
        if status == 206 {
            guard let value = header("content-range"), let range = ContentRange(value),
                let first = range.first, let last = range.last
            else {
                throw FetchError.badResponse(url: shownURL, detail: "206 without a usable Content-Range")
            }
            let wantedLast = requested.upperBound - 1
            // The server may end early only at the end of the resource.
            let endsWhereAsked = last == wantedLast || (last < wantedLast && range.total == last + 1)
            guard first == requested.lowerBound, endsWhereAsked else {
                throw FetchError.badResponse(
                    url: shownURL,
                    detail:
                        "asked for bytes \(requested.lowerBound)-\(wantedLast), got Content-Range \(value)")
            }
            if let length, ContentRange.number(length) != last - first + 1 {
                throw FetchError.badResponse(
                    url: shownURL,
                    detail:
                        "Content-Length \(length) disagrees with Content-Range \(value)")
            }
            result.totalSize = range.total
            result.bodyStart = first
            announcedEnd = last + 1
        } else if status == 200, let length {
            guard let size = ContentRange.number(length) else {
                throw FetchError.badResponse(url: shownURL, detail: "impossible Content-Length \(length)")
            }
            result.totalSize = size
        }
        info = result
        nextOffset = result.bodyStart
        try onResponse(result)
        return result
    }

    /// A piece of body. Error bodies are read and dropped so the connection stays usable.
    /// Returns false to make libcurl abort.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        noteProgress(bytes.count)
        bodyBytes += Int64(bytes.count)
        guard isSuccessStatus else { return true }
        do {
            _ = try makeInfo()
            let start = nextOffset
            if let announcedEnd, start + Int64(bytes.count) > announcedEnd {
                throw FetchError.badResponse(
                    url: shownURL,
                    detail:
                        "the body runs past the end of its Content-Range (byte \(announcedEnd - 1))")
            }
            nextOffset += Int64(bytes.count)
            // A 200 body starts at 0: keep what lies before the end of the request, so the
            // cache gains it, and stop once the requested range is complete.
            let usable = Int(max(0, min(Int64(bytes.count), requested.upperBound - start)))
            if usable > 0 { try hold(start, UnsafeRawBufferPointer(rebasing: bytes[0..<usable])) }
            if nextOffset >= requested.upperBound && status == 200 {
                try handOverHeld()
                stoppedEarly = true
                return false
            }
            return true
        } catch {
            failure = error
            return false
        }
    }

    private func hold(_ start: Int64, _ bytes: UnsafeRawBufferPointer) throws {
        if !held.isEmpty && heldStart + Int64(held.count) != start { try handOverHeld() }
        if held.isEmpty {
            heldStart = start
            held.reserveCapacity(RangeTransfer.handOverSize)
        }
        held.append(contentsOf: bytes)
        if held.count >= RangeTransfer.handOverSize { try handOverHeld() }
    }

    private func handOverHeld() throws {
        guard !held.isEmpty else { return }
        defer { held.removeAll(keepingCapacity: true) }
        try held.withUnsafeBytes { try onData(heldStart, $0) }
    }

    /// libcurl is done with a response: what is still held goes to `onData` (its failure is the
    /// transfer's).
    func handOverRest() {
        do {
            try handOverHeld()
        } catch {
            if failure == nil { failure = error }
        }
    }

    /// A `206` body that ended cleanly before its Content-Range did: the bytes that came are
    /// right, the rest must be fetched again.
    var endedShort: Bool {
        guard status == 206, let announcedEnd else { return false }
        return nextOffset < announcedEnd
    }

    private func noteProgress(_ count: Int) {
        lastActivity = ProcessInfo.processInfo.systemUptime
        windowBytes += count
    }

    /// Polled by libcurl about once a second or more, and after each batch of body it reads:
    /// hands over the bytes held; true stops the transfer. libcurl's own low-speed check averages
    /// over several seconds, so stalls are detected here instead: no byte for `stallTimeout`, or
    /// fewer than `lowSpeedLimit` bytes per second over a window of that length (a drip that would
    /// otherwise hold the job forever).
    func shouldAbort() -> Bool {
        do {
            try handOverHeld()
        } catch {
            failure = error
            return true
        }
        if cancellation?.isCancelled == true { return true }
        let now = ProcessInfo.processInfo.systemUptime
        if now - lastActivity > stallTimeout {
            stalled = true
            return true
        }
        let window = now - windowStart
        if window >= stallTimeout {
            if Double(windowBytes) < lowSpeedLimit * window {
                stalled = true
                return true
            }
            windowStart = now
            windowBytes = 0
        }
        return false
    }

    /// libcurl is about to connect to `address`: open the socket if the policy allows it.
    func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let (fd, refused) = RangeTransfer.openSocket(address, policy: connectionPolicy)
        if let refused { refusedAddress = refused }
        return fd
    }

    /// Opens the socket libcurl asks for, if `policy` allows its address; else a bad socket and
    /// the address refused, as shown in errors. Shared by every kind of transfer.
    static func openSocket(
        _ address: UnsafeMutablePointer<curl_sockaddr>, policy: ((String, Int) -> Bool)?
    ) -> (curl_socket_t, refused: String?) {
        let a = address.pointee
        if let policy {
            let (ip, port) = withUnsafePointer(to: &address.pointee.addr) {
                RangeTransfer.numericAddress($0, length: a.addrlen)
            }
            guard policy(ip, port) else {
                return (mp_curl_socket_bad(), a.family == AF_INET6 ? "[\(ip)]:\(port)" : "\(ip):\(port)")
            }
        }
        let fd = socket(a.family, a.socktype | Int32(SOCK_CLOEXEC.rawValue), a.protocol)
        return (fd >= 0 ? fd : mp_curl_socket_bad(), nil)
    }

    /// The numeric IP and port of a socket address.
    static func numericAddress(_ address: UnsafePointer<sockaddr>, length: UInt32) -> (String, Int) {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST)),
            service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        guard
            getnameinfo(
                address, socklen_t(length), &host, socklen_t(host.count), &service, socklen_t(service.count),
                NI_NUMERICHOST | NI_NUMERICSERV) == 0
        else { return ("", 0) }
        let text = { (chars: [CChar]) in
            String(decoding: chars.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return (text(host), Int(text(service)) ?? 0)
    }

    /// An ETag or Last-Modified as it can be kept, compared and sent back (`If-Range`, the proxy's
    /// own headers): printable ASCII of at most 256 bytes. Anything else is no validator at all,
    /// and the resource is then told apart as one without (`OverlapCheck`).
    static func validator(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 256,
            value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F })
        else { return nil }
        return value
    }

    /// Seconds from a `Retry-After: N` header, if any.
    var retryAfter: Double? { header("retry-after").flatMap { Double($0) } }
}

// MARK: C callbacks

let transferWriteCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<RangeTransfer>.fromOpaque(context).takeUnretainedValue()
    let n = size * count
    guard n > 0, let data else { return n }
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: n)) ? n : 0
}

let transferHeaderCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<RangeTransfer>.fromOpaque(context).takeUnretainedValue()
    let n = size * count
    guard let data, n > 0 else { return n }
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    return transfer.receiveHeaderLine(line, byteCount: n) ? n : 0
}

/// libcurl asks for a socket for each new connection (the first, and redirect hops).
let transferOpenSocketCallback:
    @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t = {
        context, _, address in
        guard let context, let address else { return mp_curl_socket_bad() }
        return Unmanaged<RangeTransfer>.fromOpaque(context).takeUnretainedValue().openSocket(address)
    }

/// libcurl polls this during the transfer; a non-zero answer aborts it (cancellation, stall).
let transferProgressCallback:
    @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> Int32 = {
        context, _, _, _, _ in
        guard let context else { return 0 }
        let transfer = Unmanaged<RangeTransfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.shouldAbort() ? 1 : 0
    }
