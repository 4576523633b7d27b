import CCurl
import Foundation
import Support

/// One `PUT` of a file held in memory to an HTTP destination (a presigned object-store URL, a
/// WebDAV folder): what a job does to deliver its files where the caller asked. The same options
/// as fetches apply — timeouts, CA bundle, the connection policy on every address connected to,
/// headers for the destination's host — but no redirect is followed (a body is not sent twice,
/// and a redirect could point a presigned upload anywhere).
public struct FileUpload: Sendable {
    public var options: FetchOptions

    public init(options: FetchOptions) {
        self.options = options
    }

    /// Sends `body` to `url`; returns once the destination answered 2xx. Throws `FetchError`.
    public func put(url: String, body: [UInt8], contentType: String, cancellation: Cancellation?) throws {
        let shown = options.urlRules.shown(url)
        let easy = try CurlEasy()
        let upload = UploadState(body: body, policy: options.connectionPolicy, cancellation: cancellation)
        let headers = CurlStringList(
            ["Content-Type: " + contentType, "Expect:"]
                + options.headers.filter { $0.hostPattern != nil && $0.applies(to: url) }.map(\.line))
        try withExtendedLifetime((upload, headers)) {
            let context = Unmanaged.passUnretained(upload).toOpaque()
            try easy.set(CURLOPT_URL, url)
            try easy.set(CURLOPT_UPLOAD, 1)
            try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            try easy.set(CURLOPT_NOSIGNAL, 1)
            try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(options.timeout * 1000))
            // Stalled: under 1 byte/s for `timeout` seconds, as a fetch; and all of it, answer
            // included, within four times that (a destination that drips its answer holds a worker).
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
            try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(options.timeout)))
            try easy.set(CURLOPT_TIMEOUT_MS, Int(max(10, options.timeout * 4) * 1000))
            try easy.set(CURLOPT_USERAGENT, options.userAgent)
            try easy.set(CURLOPT_HTTPHEADER, list: headers)
            if let ca = options.caCertPath { try easy.set(CURLOPT_CAINFO, ca) }
            if options.connectionPolicy != nil { try easy.set(CURLOPT_PROXY, "") }
            try easy.set(CURLOPT_INFILESIZE_LARGE, body.count)
            try easy.setReadCallback(uploadReadCallback)
            try easy.set(CURLOPT_READDATA, pointer: context)
            try easy.setProgressCallback(uploadProgressCallback)
            try easy.set(CURLOPT_XFERINFODATA, pointer: context)
            try easy.set(CURLOPT_NOPROGRESS, 0)
            try easy.setWriteCallback(uploadDiscardCallback)
            try easy.setOpenSocketCallback(uploadOpenSocketCallback)
            try easy.set(CURLOPT_OPENSOCKETDATA, pointer: context)
            let code = easy.perform()
            if let refused = upload.refusedAddress { throw FetchError.addressRefused(url: shown, address: refused) }
            guard code == CURLE_OK else {
                if upload.cancellation?.isCancelled == true { throw FetchError.cancelled(url: shown) }
                throw FetchError.from(code, url: shown, detail: easy.errorText)
            }
            let status = easy.info(CURLINFO_RESPONSE_CODE)
            guard (200..<300).contains(status) else {
                throw FetchError.http(status: status, url: shown, retryAfter: nil)
            }
        }
    }
}

/// What the callbacks of one upload share; used by libcurl's thread only, during `perform`.
private final class UploadState {
    let body: [UInt8]
    var sent = 0
    let policy: (@Sendable (String, Int) -> Bool)?
    let cancellation: Cancellation?
    var refusedAddress: String?

    init(body: [UInt8], policy: (@Sendable (String, Int) -> Bool)?, cancellation: Cancellation?) {
        self.body = body
        self.policy = policy
        self.cancellation = cancellation
    }
}

private let uploadReadCallback:
    @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let upload = Unmanaged<UploadState>.fromOpaque(context).takeUnretainedValue()
        let n = min(size * count, upload.body.count - upload.sent)
        upload.body.withUnsafeBytes { bytes in
            UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + upload.sent, byteCount: n)
        }
        upload.sent += n
        return n
    }

/// The destination's answer body is not needed.
private let uploadDiscardCallback:
    @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { _, size, count, _ in
        size * count
    }

private let uploadProgressCallback:
    @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> Int32 = {
        context, _, _, _, _ in
        guard let context else { return 0 }
        return Unmanaged<UploadState>.fromOpaque(context).takeUnretainedValue().cancellation?.isCancelled == true
            ? 1 : 0
    }

private let uploadOpenSocketCallback:
    @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t = {
        context, _, address in
        guard let context, let address else { return mp_curl_socket_bad() }
        let upload = Unmanaged<UploadState>.fromOpaque(context).takeUnretainedValue()
        let (fd, refused) = RangeTransfer.openSocket(address, policy: upload.policy)
        if let refused { upload.refusedAddress = refused }
        return fd
    }
