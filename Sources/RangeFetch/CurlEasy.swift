import CCurl

/// libcurl's process-wide setup, done once before the first handle. `curl_global_init` is not
/// thread-safe in the libcurl Debian ships, so it runs inside a lazily initialised static,
/// which Swift guarantees to run exactly once.
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

/// A failed libcurl call: the code and the C function that returned it.
struct CurlCallError: Error, CustomStringConvertible {
    let code: CURLcode
    let function: String
    var description: String { "\(function): \(String(cString: curl_easy_strerror(code)))" }
}

/// One `CURL*` easy handle; the only owner, cleaned up in `deinit`. A handle keeps its own
/// connection cache, so reusing one handle for a sequence of requests to an origin reuses
/// the kept-alive TCP (and TLS) connection.
// Unchecked: the fetcher's pool hands a handle to one thread at a time.
final class CurlEasy: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    /// Where libcurl writes the words of its last failure (`CURLOPT_ERRORBUFFER`, set by
    /// `reset`): more than `curl_easy_strerror` says, such as why a certificate was refused.
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws {
        guard CurlGlobal.initialized, let h = curl_easy_init() else {
            throw CurlCallError(code: CURLE_FAILED_INIT, function: "curl_easy_init")
        }
        handle = h
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        _ = mp_curl_set_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    private func check(_ code: CURLcode, _ option: String) throws {
        guard code == CURLE_OK else { throw CurlCallError(code: code, function: "curl_easy_setopt(\(option))") }
    }

    /// The corresponding libcurl function is `curl_easy_setopt` with a `long` argument.
    func set(_ option: CURLoption, _ value: Int) throws {
        try check(mp_curl_set_long(handle, option, value), "\(option.rawValue)")
    }

    /// `curl_easy_setopt` with a string; libcurl copies it.
    func set(_ option: CURLoption, _ value: String) throws {
        try check(mp_curl_set_str(handle, option, value), "\(option.rawValue)")
    }

    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws {
        try check(mp_curl_set_ptr(handle, option, pointer), "\(option.rawValue)")
    }

    func set(_ option: CURLoption, list: CurlStringList) throws {
        try check(mp_curl_set_slist(handle, option, list.head), "\(option.rawValue)")
    }

    func setWriteCallback(
        _ cb: @escaping @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int
    ) throws {
        try check(mp_curl_set_write_cb(handle, cb), "WRITEFUNCTION")
    }

    func setReadCallback(
        _ cb: @escaping @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int
    ) throws {
        try check(mp_curl_set_read_cb(handle, cb), "READFUNCTION")
    }

    func setHeaderCallback(
        _ cb: @escaping @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int
    ) throws {
        try check(mp_curl_set_header_cb(handle, cb), "HEADERFUNCTION")
    }

    func setProgressCallback(
        _ cb:
            @escaping @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> Int32
    ) throws {
        try check(mp_curl_set_xferinfo_cb(handle, cb), "XFERINFOFUNCTION")
    }

    func setOpenSocketCallback(
        _ cb:
            @escaping @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) ->
            curl_socket_t
    ) throws {
        try check(mp_curl_set_opensocket_cb(handle, cb), "OPENSOCKETFUNCTION")
    }

    /// Clears options but keeps the connection cache, so the next request can reuse a connection.
    func reset() {
        curl_easy_reset(handle)
        errorBuffer[0] = 0
        _ = mp_curl_set_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    /// libcurl's words for the last failure, or "" when it left none.
    var errorText: String { String(cString: errorBuffer) }

    func perform() -> CURLcode { curl_easy_perform(handle) }

    func info(_ info: CURLINFO) -> Int {
        var v = 0
        _ = mp_curl_get_long(handle, info, &v)
        return v
    }

    func infoString(_ info: CURLINFO) -> String? {
        var p: UnsafeMutablePointer<CChar>?
        guard mp_curl_get_str(handle, info, &p) == CURLE_OK, let p else { return nil }
        return String(cString: p)
    }
}

/// A `curl_slist` of request headers; the only owner, freed in `deinit`. Must outlive the transfer.
final class CurlStringList {
    private(set) var head: UnsafeMutablePointer<curl_slist>?

    init(_ lines: [String]) {
        for line in lines { head = curl_slist_append(head, line) }
    }

    deinit { curl_slist_free_all(head) }
}
