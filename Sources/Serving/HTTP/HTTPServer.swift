import CMicroHTTPD
import Foundation
import Support
import Synchronization

/// An embedded HTTP/1.1 server (libmicrohttpd): the single owner of the `MHD_Daemon`, stopped in
/// `deinit`.
///
/// Connections live in a few event loops (epoll, one thread each), so an idle keep-alive player
/// or a slow client costs a socket and a little memory, not a thread. The handler is asked first
/// on the event loop, where it must not wait: it answers what it can at once (a cached range,
/// `/healthz`) and nil for the rest, which is then asked again on a `WorkerPool` thread while the
/// connection is set aside (`SetAside`). A body from a file goes by `sendfile` when it fits one
/// call (else it is copied from the page cache: see `queue`); a streamed body is read on the loop
/// while bytes are ready and waited for on a worker when they are not.
/// `ConnectionTable` keeps any one client from holding all connections.
///
/// Handlers are Swift closures over `HTTPRequest`/`HTTPResponse`; no C pointer leaves this file.
public final class HTTPServer: Sendable {
    public struct Limits: Sendable {
        /// Longest request body accepted: a larger one is answered 413, before it is sent when its
        /// length is announced, else after it was read.
        public var maxBody = 1 << 20
        public var maxConnections = 16_384
        /// Event loops (threads), each holding its share of the connections.
        public var eventLoops = max(2, ProcessInfo.processInfo.activeProcessorCount)
        /// Threads at most for requests that wait (an origin, the job store): past this many at
        /// once, they wait their turn.
        public var workers = 512
        /// Connections one client address may hold at once (0: no limit).
        public var maxConnectionsPerClient = 64
        /// Seconds a new connection may take to send its first request's headers.
        public var headerTimeout: Double = 10
        /// Seconds a request's body may take to arrive (1 MiB at most).
        public var bodyTimeout: Double = 30
        /// Seconds a connection may sit idle before it is closed, and a kept-alive one may take to
        /// send its next request's headers (a byte at a time or not).
        public var idleTimeout = 60

        public init() {}
    }

    /// What happened to one request, for the access log and the metrics.
    public struct Completed: Sendable {
        public let method: String
        public let path: String
        public let query: [String: String]
        public let status: Int
        public let bodyBytes: Int64
        public let seconds: Double
    }

    public let port: Int
    public let host: String
    /// Connections past `maxConnections` libmicrohttpd still accepts, to answer them 503.
    public static let refusalRoom = 1024
    /// What libmicrohttpd sends in one sendfile call when it runs event loops.
    static let sendfileChunk: Int64 = 128 << 10
    /// The buffer each copied or streamed response holds (libmicrohttpd allocates it per
    /// response): 5,000 players stalled on such responses hold 320 MB of them.
    static let bodyBlock = 64 << 10
    private let daemon: DaemonHandle
    private let core: ServerCore

    static func tooLarge(_ limit: Int) -> HTTPResponse {
        HTTPResponse.text(
            413,
            #"{"error": {"code": "too_large", "message": "the request body is larger than \#(limit) bytes"}}"# + "\n",
            contentType: "application/json")
    }

    /// Binds `host:port` (port 0 picks a free one) and starts serving.
    public init(
        host: String, port: Int, limits: Limits = Limits(),
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse?,
        completed: @escaping @Sendable (Completed) -> Void = { _ in }
    ) throws {
        let address = try SocketAddress(host: host, port: port)
        let connections = ConnectionTable(
            limits: ConnectionTable.Limits(
                total: limits.maxConnections, perClient: limits.maxConnectionsPerClient,
                headerTimeout: limits.headerTimeout, keepAliveTimeout: Double(limits.idleTimeout),
                bodyTimeout: limits.bodyTimeout))
        let core = ServerCore(
            handler: handler, completed: completed, maxBody: limits.maxBody, connections: connections,
            workers: WorkerPool(limit: limits.workers))
        let opaque = Unmanaged.passUnretained(core).toOpaque()
        var flags = UInt32(mp_mhd_event_loop_flags().rawValue)
        if address.isIPv6 { flags |= UInt32(MHD_USE_IPv6.rawValue) }
        // Room past our limit for libmicrohttpd, so that a connection past it is still accepted
        // and answered (429/503, then shut down at once) instead of closed unanswered.
        let started = address.withSockaddr { sockaddr in
            mp_mhd_start(
                flags, sockaddr, UInt32(max(1, limits.eventLoops)),
                UInt32(limits.maxConnections + HTTPServer.refusalRoom), UInt32(limits.idleTimeout),
                serverAccessHandler, opaque, serverCompletedCallback, opaque, serverNotifyConnection, opaque)
        }
        guard let started else {
            connections.stop()
            core.workers.stop()
            throw ServiceError.listen(
                address: "\(host):\(port)", reason: "libmicrohttpd could not bind or start (address in use?)")
        }
        daemon = DaemonHandle(started)
        self.core = core
        self.host = host
        self.port = Int(mp_mhd_bound_port(started))
    }

    /// Stops accepting connections; requests already being served go on.
    /// The corresponding libmicrohttpd function is `MHD_quiesce_daemon`.
    public func quiesce() { daemon.quiesce() }

    /// Stops the daemon. Requests still set aside are answered 503 (a body waiting for bytes
    /// ends short) first, as libmicrohttpd must not stop with connections suspended.
    public func stop() {
        core.setAside.takeBackAll()
        daemon.stop()
        core.connections.stop()
        core.workers.stop()
    }

    deinit { stop() }
}

/// The `MHD_Daemon*`: stopped exactly once, by `stop()` or `deinit`.
private final class DaemonHandle: Sendable {
    private struct State: @unchecked Sendable {  // the pointer is only used under the lock, or after it is taken out
        var daemon: OpaquePointer?
        var quiesced = false
    }
    private let state: BlockingLock<State>

    init(_ daemon: OpaquePointer) { state = BlockingLock(State(daemon: daemon)) }

    func quiesce() {
        state.withLock { s in
            guard let daemon = s.daemon, !s.quiesced else { return }
            s.quiesced = true
            let socket = MHD_quiesce_daemon(daemon)
            if socket >= 0 { close(socket) }  // the listening socket is ours once quiesced
        }
    }

    func stop() {
        let running: OpaquePointer? = state.withLock { s in
            defer { s.daemon = nil }
            return s.daemon
        }
        if let running { MHD_stop_daemon(running) }
    }

    deinit { stop() }
}

/// What the C callbacks reach through their `cls` pointer; `HTTPServer` keeps it alive.
private final class ServerCore: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse?
    let completed: @Sendable (HTTPServer.Completed) -> Void
    let maxBody: Int
    let connections: ConnectionTable
    let workers: WorkerPool
    let setAside = SetAside()

    init(
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse?,
        completed: @escaping @Sendable (HTTPServer.Completed) -> Void, maxBody: Int, connections: ConnectionTable,
        workers: WorkerPool
    ) {
        self.handler = handler
        self.completed = completed
        self.maxBody = maxBody
        self.connections = connections
        self.workers = workers
    }

    static let stopping = HTTPResponse.text(
        503, #"{"error": {"code": "unavailable", "message": "the service is stopping"}}"# + "\n",
        contentType: "application/json")
}

/// One request between its first and its completed callback; owned through `req_cls`
/// (retained when made, released in the completed callback).
private final class RequestContext: @unchecked Sendable {
    let started = ProcessInfo.processInfo.systemUptime
    var method = ""
    var path = ""
    var query: [String: String] = [:]
    var body: [UInt8] = []
    var bodyTooLarge = false
    var status = 0
    /// The streamed body, whose sent bytes are known only at the end.
    var stream: StreamBox?
    var bytesSent: Int64 = 0
    /// Handed to a worker, which leaves its answer in `answer`.
    var handedOff = false
    let answer = Mutex<HTTPResponse?>(nil)
}

/// A response body stream and what has been sent of it; the content reader's `cls`.
private final class StreamBox: Sendable {
    let stream: HTTPBodyStream
    let sent = Atomic<Int64>(0)
    /// Its wait failed (or the server stopped meanwhile): the body ends short at the next read.
    let failed = Atomic<Bool>(false)
    let connection: UInt
    let core: ServerCore

    init(_ stream: HTTPBodyStream, connection: OpaquePointer, core: ServerCore) {
        self.stream = stream
        self.connection = UInt(bitPattern: connection)
        self.core = core
    }
}

private let serverAccessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadSize, reqCls in
    guard let cls, let connection, let reqCls, let uploadSize else { return .NO }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    guard let existing = reqCls.pointee else {
        // First call: only the headers are known. A connection answered 429/503 when it opened
        // is closed; else keep a context and ask for the body.
        guard core.connections.requestArrived(UInt(bitPattern: connection)) else { return .NO }
        let context = RequestContext()
        context.method = method.map { String(cString: $0) } ?? "GET"
        context.path = url.map { String(cString: $0) } ?? "/"
        reqCls.pointee = Unmanaged.passRetained(context).toOpaque()
        // A body announced larger than the limit is refused now, before a client that waits for
        // "100 Continue" sends it, and before it is read.
        let announced = connectionValues(connection, mp_mhd_header_kind(), lowercased: true)["content-length"]
        if let announced, announced.count > 18 || (Int(announced) ?? 0) > core.maxBody {
            context.status = 413
            return queue(HTTPServer.tooLarge(core.maxBody), on: connection, context: context, core: core)
        }
        return .YES
    }
    let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        if let uploadData, !context.bodyTooLarge {
            if context.body.count + uploadSize.pointee > core.maxBody {
                context.bodyTooLarge = true
                context.body = []
            } else {
                context.body += UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
            }
        }
        uploadSize.pointee = 0
        return .YES
    }
    if context.handedOff {
        // Taken back from the worker, which left its answer.
        guard
            let answer = context.answer.withLock({ a in
                defer { a = nil }; return a
            })
        else { return .YES }
        context.status = answer.status
        return queue(answer, on: connection, context: context, core: core)
    }
    // The whole request is here.
    core.connections.requestReceived(UInt(bitPattern: connection))
    context.query = connectionValues(connection, mp_mhd_argument_kind(), lowercased: false)
    // Asked while the handler or the response's body waits on an origin. The socket stays this
    // connection's until the response ends, and a closed one reads as gone.
    let fd = mp_mhd_connection_fd(connection)
    var request = HTTPRequest(
        method: context.method, path: context.path, query: context.query,
        headers: connectionValues(connection, mp_mhd_header_kind(), lowercased: true),
        body: context.body, peer: peerAddress(connection), mayWait: false,
        clientGone: { mp_socket_peer_closed(fd) != 0 })
    if let response = context.bodyTooLarge ? HTTPServer.tooLarge(core.maxBody) : core.handler(request) {
        context.status = response.status
        return queue(response, on: connection, context: context, core: core)
    }
    // It must wait: a worker answers it, the connection set aside meanwhile.
    guard core.setAside.setAside(connection, onStop: { context.answer.withLock { $0 = ServerCore.stopping } }) else {
        context.status = 503
        return queue(ServerCore.stopping, on: connection, context: context, core: core)
    }
    context.handedOff = true
    request.mayWait = true
    let handler = core.handler
    let address = UInt(bitPattern: connection)
    core.workers.run { [request] in
        let answer = handler(request) ?? HTTPResponse.text(500, "the handler gave no answer\n")
        context.answer.withLock { $0 = $0 ?? answer }
        core.setAside.takeBack(OpaquePointer(bitPattern: address)!)
    }
    return .YES
}

private let serverCompletedCallback: MHD_RequestCompletedCallback = { cls, connection, reqCls, _ in
    guard let cls, let reqCls, let existing = reqCls.pointee else { return }
    reqCls.pointee = nil
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    if let connection { core.connections.requestEnded(UInt(bitPattern: connection)) }
    let context = Unmanaged<RequestContext>.fromOpaque(existing).takeRetainedValue()
    let bytes = context.stream?.sent.load(ordering: .relaxed) ?? context.bytesSent
    core.completed(
        HTTPServer.Completed(
            method: context.method, path: context.path, query: context.query,
            status: context.status, bodyBytes: bytes,
            seconds: ProcessInfo.processInfo.systemUptime - context.started))
}

/// A connection opened or closed: the table counts it by client and times its headers.
private let serverNotifyConnection: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls, let connection else { return }
    let table = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().connections
    if mp_mhd_notify_started(code) != 0 {
        table.opened(
            UInt(bitPattern: connection), fd: mp_mhd_connection_fd(connection), client: peerAddress(connection))
    } else {
        table.closed(UInt(bitPattern: connection))
    }
}

/// Hands `response` to libmicrohttpd. The MHD response object is reference counted: queueing
/// takes a reference, so ours is dropped right after.
private func queue(
    _ response: HTTPResponse, on connection: OpaquePointer, context: RequestContext, core: ServerCore
) -> MHD_Result {
    let made: OpaquePointer?
    switch response.body {
    case .bytes(let bytes):
        made = bytes.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(
                raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress),
                mp_mhd_respmem_copy())
        }
        context.bytesSent = context.method == "HEAD" ? 0 : Int64(bytes.count)
    case .stream(let length, let stream):
        let box = StreamBox(stream, connection: connection, core: core)
        context.stream = box
        made = MHD_create_response_from_callback(
            length.map { UInt64($0) } ?? mp_mhd_size_unknown(), HTTPServer.bodyBlock,
            streamReader, Unmanaged.passRetained(box).toOpaque(), streamFree)
        if made == nil { stream.close() }
    case .file(let file):
        // libmicrohttpd sends a file response by sendfile in 128 KiB calls, with TCP_CORK on
        // between them; on loopback that halves the throughput of 256 KiB ranges (nginx set up
        // the same way, `sendfile_max_chunk 128k; tcp_nopush on`, drops as far), and copying
        // through its buffer is faster. So one call's worth goes by sendfile, more by pread.
        if file.length <= HTTPServer.sendfileChunk {
            guard let fd = file.take() else { return .NO }
            made = MHD_create_response_from_fd_at_offset64(UInt64(file.length), fd, UInt64(file.offset))
            if made == nil { close(fd) }  // the response closes it otherwise
        } else {
            made = MHD_create_response_from_callback(
                UInt64(file.length), HTTPServer.bodyBlock, fileReader, Unmanaged.passRetained(file).toOpaque(),
                fileFree)
        }
        context.bytesSent = context.method == "HEAD" ? 0 : file.length
    }
    guard let made else { return .NO }
    defer { MHD_destroy_response(made) }
    for (name, value) in response.headers { _ = MHD_add_response_header(made, name, value) }
    return MHD_queue_response(connection, UInt32(response.status), made)
}

/// On the event loop: what is ready now, else the connection is set aside while a worker waits
/// for more (returning 0 then is how libmicrohttpd is told to ask again once it is taken back).
private let streamReader: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer else { return mp_mhd_reader_end_with_error() }
    let box = Unmanaged<StreamBox>.fromOpaque(cls).takeUnretainedValue()
    guard !box.failed.load(ordering: .relaxed) else { return mp_mhd_reader_end_with_error() }
    do {
        if let n = try box.stream.readReady(into: UnsafeMutableRawBufferPointer(start: buffer, count: max)) {
            guard n > 0 else { return mp_mhd_reader_end_of_stream() }
            box.sent.add(Int64(n), ordering: .relaxed)
            return n
        }
    } catch {
        return mp_mhd_reader_end_with_error()
    }
    guard let connection = OpaquePointer(bitPattern: box.connection),
        box.core.setAside.setAside(connection, onStop: { box.failed.store(true, ordering: .relaxed) })
    else { return mp_mhd_reader_end_with_error() }
    box.core.workers.run {
        do {
            try box.stream.waitUntilReady(wanted: max)
        } catch {
            box.failed.store(true, ordering: .relaxed)
        }
        box.core.setAside.takeBack(OpaquePointer(bitPattern: box.connection)!)
    }
    return 0
}

private let streamFree: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    let box = Unmanaged<StreamBox>.fromOpaque(cls).takeRetainedValue()
    box.stream.close()
}

/// Headers or query arguments of a connection, decoded by libmicrohttpd.
private func connectionValues(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool) -> [String: String]
{
    final class Collector { var values: [String: String] = [:]; var lowercased = false }
    let collector = Collector()
    collector.lowercased = lowercased
    _ = MHD_get_connection_values(
        connection, kind,
        { cls, _, key, value in
            guard let cls, let key else { return .YES }
            let collector = Unmanaged<Collector>.fromOpaque(cls).takeUnretainedValue()
            var name = String(cString: key)
            if collector.lowercased { name = name.lowercased() }
            if collector.values[name] == nil { collector.values[name] = value.map { String(cString: $0) } ?? "" }
            return .YES
        }, Unmanaged.passUnretained(collector).toOpaque())
    return withExtendedLifetime(collector) { collector.values }
}

private func peerAddress(_ connection: OpaquePointer) -> String {
    guard let address = mp_mhd_client_address(connection) else { return "" }
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    let length = socklen_t(
        address.pointee.sa_family == sa_family_t(AF_INET6)
            ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return "" }
    return String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// On the event loop: the next bytes of a cached range, copied from the data file (the page
/// cache, in practice; a page that must come from the disk waits as sendfile would).
private let fileReader: MHD_ContentReaderCallback = { cls, pos, buffer, max in
    guard let cls, let buffer else { return mp_mhd_reader_end_with_error() }
    let file = Unmanaged<FileBody>.fromOpaque(cls).takeUnretainedValue()
    let n = file.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max), at: Int64(pos))
    return n > 0 ? n : mp_mhd_reader_end_with_error()
}

private let fileFree: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<FileBody>.fromOpaque(cls).release()
}
