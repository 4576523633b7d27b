import CCurl
import Foundation
import Support
import Synchronization
import URLSupport

/// Closed HTTP range requests through libcurl.
///
/// Thread-safe: each call takes an easy handle from a pool (creating one when all are busy), so
/// calls from several threads run in parallel, and consecutive calls reuse a handle and with it
/// the kept-alive connection. Knows nothing of caching: bytes go to the caller's `onData`.
public final class RangeFetcher: Sendable {
    public let options: FetchOptions
    /// Idle handles, the most recently used last. At most `maxIdleHandles` are kept: a burst of
    /// parallel transfers must not leave its handles, and their connections, open for good.
    private let pool = Mutex<[CurlEasy]>([])
    static let maxIdleHandles = 16
    /// Handles out of the pool, running a transfer.
    private let busy = Atomic<Int>(0)
    private let countersStore = Mutex(FetchCounters())

    public init(options: FetchOptions = FetchOptions()) {
        self.options = options
    }

    public var counters: FetchCounters { countersStore.withLock { $0 } }

    /// Easy handles alive, idle or busy: each holds at most a few connections to origins open.
    public var openHandles: Int { pool.withLock { $0.count } + busy.load(ordering: .relaxed) }

    /// Fetches `range` of `url` with `Range: bytes=a-b` and hands the body to `onData` with
    /// each piece's true offset.
    ///
    /// - `onResponse` sees each response's headers before its first body byte; throwing aborts.
    ///   With `rangeIgnored` the body starts at 0 and `onData` also gets the bytes before the range.
    /// - Transient failures are retried with backoff, resuming at the first missing byte with
    ///   `If-Range` set to the validator of the response that broke off. A timeout is retried once.
    /// - `pastEnd` means a `416` that did not contradict itself; whether the range really lies past
    ///   the end is for the caller to judge against the size it knows.
    /// - `ifRange` (an ETag or Last-Modified) makes the server send the whole new body instead
    ///   of a range if the resource changed.
    /// - `tally` gains this call's requests, new connections and received bytes.
    /// - `resumeOverlap`: a transfer resumed without a validator to guard it (the origin sent
    ///   neither ETag nor Last-Modified) starts up to this many bytes before where it broke off,
    ///   so that `onData` gets bytes it had already and can compare them (the resumed response may
    ///   be of another version). 0 resumes exactly where it broke off.
    public func fetch(
        url: String, range: Range<Int64>, ifRange: String? = nil, cancellation: Cancellation? = nil,
        resumeOverlap: Int64 = 0, tally: inout FetchCounters,
        onResponse: (ResponseInfo) throws -> Void = { _ in },
        onData: (Int64, UnsafeRawBufferPointer) throws -> Void
    ) throws -> FetchOutcome {
        precondition(!range.isEmpty && range.lowerBound >= 0, "fetch needs a non-empty range at a non-negative offset")
        var start = range.lowerBound
        var validator = ifRange
        var attempt = 0
        var timedOut = false
        while true {
            let outcome: Result<FetchOutcome, Error>
            let performed = try withoutActuallyEscaping(onResponse) { onResponse in
                try withoutActuallyEscaping(onData) { onData in
                    let t = RangeTransfer(
                        url: url, shownURL: options.urlRules.shown(url), requested: start..<range.upperBound,
                        cancellation: cancellation,
                        stallTimeout: options.timeout, lowSpeedLimit: options.lowSpeedLimit,
                        onResponse: onResponse, onData: onData)
                    return try perform(t, ifRange: validator)
                }
            }
            outcome = performed.outcome
            tally.requests += performed.requests
            tally.connections += performed.connections
            tally.bytesReceived += performed.bodyBytes
            switch outcome {
            case .success(let o):
                return o
            case .failure(let error):
                guard let fetchError = error as? FetchError, fetchError.isTransient, attempt < options.maxRetries,
                    cancellation?.isCancelled != true
                else { throw error }
                // A server that stalled or dripped twice will do it again: fail within ~2 timeouts.
                if case .timeout = fetchError {
                    if timedOut { throw error }
                    timedOut = true
                }
                if let info = performed.info, info.status == 206 {
                    start = max(start, performed.next)
                    validator = info.etag ?? info.lastModified ?? validator
                    // Every byte came before the connection broke: asking again would be an inverted range.
                    if start >= range.upperBound { return .delivered(info) }
                    if validator == nil { start = max(range.lowerBound, start - resumeOverlap) }
                }
                try backoff(
                    attempt: attempt, error: fetchError, cancellation: cancellation, url: options.urlRules.shown(url))
                attempt += 1
            }
        }
    }

    private struct Performed {
        let outcome: Result<FetchOutcome, Error>
        let info: ResponseInfo?
        let next: Int64
        /// Requests sent: one, and one more for each redirect followed.
        let requests: Int64
        let connections: Int64
        let bodyBytes: Int64
    }

    /// Runs one request on a pooled handle, following redirects itself (libcurl's own following
    /// would send every custom header to every hop): each hop gets the headers meant for its host.
    private func perform(_ transfer: RangeTransfer, ifRange: String?) throws -> Performed {
        let easy = try takeHandle()
        var reusable = false
        defer { returnHandle(easy, reusable: reusable) }
        transfer.easy = easy
        var url = transfer.url
        var sent: [RequestHeader]?
        var connections: Int64 = 0, requests: Int64 = 0
        var code = CURLE_OK
        for hop in 0... {
            let headers = RequestHeader.forHop(
                url, first: transfer.url, previous: sent, of: options.headers,
                locationTrusted: options.locationTrusted, trustedHosts: options.trustedRedirectHosts)
            sent = headers
            // Compressed bodies are not the file's bytes: ask for them as they are on disk.
            var lines = ["Accept-Encoding: identity"]
            if let ifRange { lines.append("If-Range: \(ifRange)") }
            let list = CurlStringList(lines + headers.map(\.line))
            try configure(easy, transfer: transfer, url: url, headers: list)
            code = withExtendedLifetime((transfer, list)) { easy.perform() }
            transfer.handOverRest()
            requests += 1
            connections += Int64(easy.info(CURLINFO_NUM_CONNECTS))
            // A transfer that failed below HTTP (no address, a refused connection) can leave state
            // that curl_easy_reset keeps, such as its receive buffer, after which setting the buffer
            // size fails: such a handle is closed, never pooled, so one bad URL cannot break later requests.
            reusable = code == CURLE_OK || (code == CURLE_WRITE_ERROR && transfer.stoppedEarly)
            guard code == CURLE_OK, RangeFetcher.redirectStatuses.contains(transfer.status),
                let target = easy.infoString(CURLINFO_REDIRECT_URL)
            else { break }
            guard let scheme = target.split(separator: ":").first?.lowercased(), scheme == "http" || scheme == "https"
            else {
                transfer.failure = FetchError.redirectRefused(
                    url: transfer.shownURL, target: options.urlRules.shown(target))
                break
            }
            guard hop < options.maxRedirects else {
                transfer.failure = FetchError.tooManyRedirects(url: transfer.shownURL)
                break
            }
            url = RangeFetcher.carryingUserinfo(of: transfer.url, to: target, always: options.locationTrusted)
        }
        countersStore.withLock {
            $0.requests += requests
            $0.connections += connections
            $0.bytesReceived += transfer.bodyBytes
        }
        return Performed(
            outcome: result(of: transfer, code: code), info: transfer.info, next: transfer.nextOffset,
            requests: requests, connections: connections, bodyBytes: transfer.bodyBytes)
    }

    /// The statuses libcurl would follow.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// `target` with the userinfo of `first` when it has none of its own and goes to the same
    /// host and port (or `always`): a password in the URL is for the host it names.
    static func carryingUserinfo(of first: String, to target: String, always: Bool) -> String {
        let userinfo = URLText.userinfo(of: first)
        guard let userinfo, URLText.userinfo(of: target) == nil,
            always || URLText.host(of: target) == URLText.host(of: first),
            let schemeEnd = target.range(of: "://")
        else { return target }
        return target[..<schemeEnd.upperBound] + userinfo + "@" + target[schemeEnd.upperBound...]
    }

    private func result(of transfer: RangeTransfer, code: CURLcode) -> Result<FetchOutcome, Error> {
        let url = transfer.shownURL
        if let failure = transfer.failure { return .failure(failure) }
        let finished = code == CURLE_OK || (code == CURLE_WRITE_ERROR && transfer.stoppedEarly)
        guard finished else {
            if let address = transfer.refusedAddress {
                return .failure(FetchError.addressRefused(url: url, address: address))
            }
            if transfer.stalled { return .failure(FetchError.timeout(url: url)) }
            // Of an http(s) URL, libcurl says "unsupported protocol" about the answer: no status
            // line (HTTP/0.9, garbage), or a status it cannot use as final (1xx).
            if code == CURLE_UNSUPPORTED_PROTOCOL, let scheme = transfer.url.split(separator: ":").first?.lowercased(),
                scheme == "http" || scheme == "https"
            {
                return .failure(
                    FetchError.badResponse(url: url, detail: "its answer is not an HTTP response mprobe can use"))
            }
            // A certificate made for another host name: trusting another CA would not help.
            if code == CURLE_PEER_FAILED_VERIFICATION, let words = transfer.easy?.errorText,
                words.contains("host name") || words.contains("hostname")
            {
                return .failure(FetchError.tls(url: url, detail: "the certificate is not for this host name"))
            }
            // A handshake that broke off (a reset, a server that does not speak TLS there) is
            // not about trusting certificates.
            if code == CURLE_SSL_CONNECT_ERROR {
                let words = transfer.easy?.errorText ?? ""
                return .failure(
                    FetchError.tls(url: url, detail: "the TLS handshake failed" + (words.isEmpty ? "" : " (\(words))")))
            }
            // libcurl says "malformed URL" about a Location it cannot parse, as if of ours.
            if code == CURLE_URL_MALFORMAT, let target = transfer.header("location") {
                return .failure(
                    FetchError.badResponse(
                        url: url, detail: "it redirects to a malformed URL (\(options.urlRules.shown(target)))"))
            }
            return .failure(FetchError.from(code, url: url, detail: ""))
        }
        switch transfer.status {
        case 200, 206:
            do {
                let info = try transfer.makeInfo()
                if transfer.endedShort {
                    let announced = transfer.announcedEnd ?? transfer.nextOffset
                    return .failure(
                        FetchError.connectionLost(
                            url: url,
                            detail:
                                "the body ended at byte \(transfer.nextOffset) of the \(info.bodyStart)-\(announced - 1) it announced"
                        ))
                }
                return .success(.delivered(info))
            } catch {
                return .failure(error)
            }
        case 416:
            guard let value = transfer.header("content-range") else { return .success(.pastEnd(totalSize: nil)) }
            guard let total = ContentRange(value)?.total else {
                return .failure(
                    FetchError.badResponse(url: url, detail: "416 with an impossible Content-Range \(value)"))
            }
            guard transfer.requested.lowerBound >= total else {
                return .failure(
                    FetchError.badResponse(
                        url: url,
                        detail:
                            "it refused bytes \(transfer.requested.lowerBound)-\(transfer.requested.upperBound - 1) (416) of a resource it says has \(total) bytes"
                    ))
            }
            return .success(.pastEnd(totalSize: total))
        default:
            return .failure(FetchError.http(status: transfer.status, url: url, retryAfter: transfer.retryAfter))
        }
    }

    private func configure(_ easy: CurlEasy, transfer: RangeTransfer, url: String, headers: CurlStringList) throws {
        easy.reset()
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        try easy.set(CURLOPT_URL, url)
        try easy.set(CURLOPT_RANGE, "\(transfer.requested.lowerBound)-\(transfer.requested.upperBound - 1)")
        try easy.set(CURLOPT_HTTPHEADER, list: headers)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        // Signals cannot be used for timeouts in a multi-threaded process.
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(options.timeout * 1000))
        try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        try easy.set(CURLOPT_BUFFERSIZE, 512 * 1024)
        try easy.set(CURLOPT_USERAGENT, options.userAgent)
        if let ca = options.caCertPath { try easy.set(CURLOPT_CAINFO, ca) }
        if options.connectionPolicy != nil {
            // Through a proxy the policy would only ever see the proxy's address, never the
            // origin's (or a redirect's): an empty string turns proxies off, the environment's too.
            try easy.set(CURLOPT_PROXY, "")
        } else if let proxy = options.proxy {
            try easy.set(CURLOPT_PROXY, proxy)
        }
        try easy.setWriteCallback(transferWriteCallback)
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.setHeaderCallback(transferHeaderCallback)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        try easy.setProgressCallback(transferProgressCallback)
        try easy.set(CURLOPT_XFERINFODATA, pointer: context)
        try easy.set(CURLOPT_NOPROGRESS, 0)
        if let policy = options.connectionPolicy {
            transfer.connectionPolicy = policy
            try easy.setOpenSocketCallback(transferOpenSocketCallback)
            try easy.set(CURLOPT_OPENSOCKETDATA, pointer: context)
        }
    }

    private func backoff(attempt: Int, error: FetchError, cancellation: Cancellation?, url: String) throws {
        var delay = options.retryDelay * pow(2, Double(attempt))
        if case .http(_, _, let retryAfter?) = error {
            guard retryAfter <= options.maxRetryAfter else { throw error }
            delay = retryAfter
        }
        let deadline = Date().addingTimeInterval(min(delay, options.maxRetryAfter))
        while Date() < deadline {
            if cancellation?.isCancelled == true { throw FetchError.cancelled(url: url) }
            Thread.sleep(forTimeInterval: min(0.05, deadline.timeIntervalSinceNow.clamped(0, 0.05)))
        }
    }

    private func takeHandle() throws -> CurlEasy {
        let easy = try pool.withLock({ $0.popLast() }) ?? CurlEasy()
        busy.add(1, ordering: .relaxed)
        return easy
    }

    /// Back to the pool, or closed (with its connections) when it is not `reusable`.
    private func returnHandle(_ easy: CurlEasy, reusable: Bool) {
        busy.subtract(1, ordering: .relaxed)
        guard reusable else { return }
        // Past the bound the least recently used goes; it is released (closing its connections)
        // when this function returns, outside the pool's lock.
        let evicted: CurlEasy? = pool.withLock { idle in
            idle.append(easy)
            return idle.count > RangeFetcher.maxIdleHandles ? idle.removeFirst() : nil
        }
        withExtendedLifetime(evicted) {}
    }
}

extension Double {
    fileprivate func clamped(_ lo: Double, _ hi: Double) -> Double { Swift.min(Swift.max(self, lo), hi) }
}
