import CCurl

/// Why a fetch failed, precise enough to decide on a retry and phrased for a person. URLs in it
/// are shown as `URLText.redacted` makes them: credentials never appear in an error.
public enum FetchError: Error, CustomStringConvertible, Equatable {
    /// The origin answered with an error status.
    case http(status: Int, url: String, retryAfter: Double?)
    case hostNotFound(url: String)
    case connectionRefused(url: String)
    case tls(url: String, detail: String)
    case timeout(url: String)
    /// The connection broke (reset, dropped mid-body, nothing received).
    case connectionLost(url: String, detail: String)
    case tooManyRedirects(url: String)
    case unsupportedScheme(url: String)
    /// The origin redirected to a URL mprobe does not follow (another scheme, such as `file://`).
    case redirectRefused(url: String, target: String)
    /// `FetchOptions.connectionPolicy` refused the address the URL (or a redirect) resolved to.
    case addressRefused(url: String, address: String)
    /// The answer does not fit the request (e.g. a Content-Range other than the one asked for).
    case badResponse(url: String, detail: String)
    case cancelled(url: String)
    case other(url: String, detail: String)

    /// Worth trying again: the same request may succeed in a moment.
    public var isTransient: Bool {
        switch self {
        // 501, 505 and 508 (not implemented, version not supported, loop detected) say the same
        // again however often they are asked.
        case .http(let status, _, _):
            return (status >= 500 && ![501, 505, 508].contains(status)) || status == 429 || status == 408
        case .timeout, .connectionLost: return true
        default: return false
        }
    }

    /// The origin cannot be reached or cannot serve now (a 5xx, its own or a gateway's): what a
    /// cache may answer from the bytes it holds, where any other failure (a 404, a refused
    /// address) is the answer to pass on.
    public var isOriginUnavailable: Bool {
        switch self {
        case .hostNotFound, .connectionRefused, .timeout, .connectionLost: return true
        case .http(let status, _, _): return status >= 500
        default: return false
        }
    }

    public var url: String {
        switch self {
        case .http(_, let u, _), .hostNotFound(let u), .connectionRefused(let u), .tls(let u, _), .timeout(let u),
            .connectionLost(let u, _), .tooManyRedirects(let u), .unsupportedScheme(let u),
            .redirectRefused(let u, _), .addressRefused(let u, _), .badResponse(let u, _), .cancelled(let u),
            .other(let u, _):
            return u
        }
    }

    public var description: String {
        switch self {
        case .http(let status, let url, _): return "HTTP \(status) (\(FetchError.reason(status))) for \(url)"
        case .hostNotFound(let url): return "cannot resolve the host name of \(url)"
        case .connectionRefused(let url): return "connection refused by the server of \(url)"
        case .tls(let url, let detail): return "TLS failure for \(url): \(detail)"
        case .timeout(let url): return "timed out waiting for \(url) (raise --timeout for slow servers)"
        case .connectionLost(let url, let detail): return "connection lost while fetching \(url): \(detail)"
        case .tooManyRedirects(let url): return "too many redirects for \(url)"
        case .unsupportedScheme(let url):
            return "unsupported URL scheme in \(url) (use http, https, file or a local path)"
        case .redirectRefused(let url, let target):
            return "\(url) redirects to \(target), which mprobe does not follow (only http and https)"
        case .addressRefused(let url, let address):
            return "\(url) leads to \(address), an address this server may not connect to (see --allow-host)"
        case .badResponse(let url, let detail): return "unexpected answer from \(url): \(detail)"
        case .cancelled(let url): return "fetch of \(url) was cancelled"
        case .other(let url, let detail): return "fetch of \(url) failed: \(detail)"
        }
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 400: return "bad request"
        case 401: return "authentication required"
        case 403: return "forbidden"
        case 404: return "not found"
        case 410: return "gone"
        case 429: return "too many requests"
        case 500: return "internal server error"
        case 502: return "bad gateway"
        case 503: return "service unavailable"
        case 504: return "gateway timeout"
        case 508: return "loop detected"
        default:
            if status >= 500 { return "server error" }
            return status >= 400 ? "client error" : "not the requested bytes"  // 204, 304 and the like
        }
    }

    /// Maps a libcurl result to the error a person can act on. `url` is the URL as shown (redacted).
    static func from(_ code: CURLcode, url: String, detail: String) -> FetchError {
        let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .hostNotFound(url: url)
        case CURLE_COULDNT_CONNECT: return .connectionRefused(url: url)
        case CURLE_OPERATION_TIMEDOUT: return .timeout(url: url)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            // A certificate refused or unreadable: trusting a private CA may be the answer. (A
            // broken handshake and a certificate for another name are told apart before this.)
            return .tls(url: url, detail: text + " (use --cacert FILE for a private CA)")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2,
            CURLE_HTTP2_STREAM:
            return .connectionLost(url: url, detail: text)
        case CURLE_TOO_MANY_REDIRECTS: return .tooManyRedirects(url: url)
        case CURLE_UNSUPPORTED_PROTOCOL: return .unsupportedScheme(url: url)
        case CURLE_ABORTED_BY_CALLBACK: return .cancelled(url: url)
        default: return .other(url: url, detail: text)
        }
    }
}
