import Foundation
import Support
import Synchronization

/// An embedded HTTP/1.1 server of our own: the owner of the listening socket and the event loops,
/// stopped in `deinit`.
///
/// Connections live in a few event loops (`EventLoop`: epoll, one thread each), so an idle
/// keep-alive player or a slow client costs a socket and a little memory, not a thread. The
/// handler is asked first on the event loop, where it must not wait: it answers what it can at
/// once (a cached range, `/healthz`) and nil for the rest, which is then asked again on a
/// `WorkerPool` thread while the connection is set aside (out of epoll). A body from a file goes
/// by one `sendfile` per socket's worth, after the head (sent on its own, as nginx does: held for
/// the body with MSG_MORE it cost more CPU and latency); a streamed body is read on the loop while
/// bytes are ready and waited for on a worker when they are not. `ConnectionTable` keeps any one
/// client from holding all connections.
///
/// Why not libmicrohttpd, which served here before: it sends files in 128 KiB sendfile calls
/// with TCP_CORK toggled between them, which halved the throughput of cached ranges on
/// loopback (docs/benchmarks.md), and it has no way to hand a body's bytes over without a copy.
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
        /// The request target as the client sent it (path and query, not decoded): the same
        /// target always decodes to the same `path` and `query`.
        public let target: String
        public let path: String
        public let query: [String: String]
        public let status: Int
        public let bodyBytes: Int64
        public let seconds: Double
    }

    public let port: Int
    public let host: String
    /// Connections past `maxConnections` still accepted, to answer them 503 instead of leaving
    /// them unanswered in the backlog.
    public static let refusalRoom = 1024
    private let core: ServerCore
    private let loops: [EventLoop]
    private let state = Mutex((quiesced: false, stopped: false))

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
        let listener = try address.listen()
        let connections = ConnectionTable(
            limits: ConnectionTable.Limits(
                total: limits.maxConnections, perClient: limits.maxConnectionsPerClient,
                headerTimeout: limits.headerTimeout, keepAliveTimeout: Double(limits.idleTimeout),
                bodyTimeout: limits.bodyTimeout))
        let core = ServerCore(
            handler: handler, completed: completed, limits: limits, listener: listener.fd,
            connections: connections, workers: WorkerPool(limit: limits.workers))
        var loops: [EventLoop] = []
        do {
            for index in 0..<max(1, limits.eventLoops) { loops.append(try EventLoop(core: core, index: index)) }
        } catch {
            let stopped = DispatchSemaphore(value: 0)
            for loop in loops { loop.stop(stopped) }
            for _ in loops { stopped.wait() }
            connections.stop()
            core.workers.stop()
            Glibc.close(listener.fd)
            throw error
        }
        core.loops.withLock { $0 = loops }
        self.core = core
        self.loops = loops
        self.host = host
        self.port = listener.port
    }

    /// Stops accepting connections (the port is let go); requests already being served go on.
    public func quiesce() {
        let first = state.withLock { s in
            defer { s.quiesced = true }
            return !s.quiesced
        }
        guard first else { return }
        let done = DispatchSemaphore(value: 0)
        for loop in loops { loop.stopListening(done) }
        for _ in loops { done.wait() }
        Glibc.close(core.listener)
    }

    /// Stops the loops. Requests still waiting for a worker are answered 503, bodies waiting for
    /// bytes end short; responses under way have a moment to go out, then every connection closes.
    public func stop() {
        let first = state.withLock { s in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        quiesce()
        // Every loop drains at once, so a stop takes one drain however many loops there are.
        let stopped = DispatchSemaphore(value: 0)
        for loop in loops { loop.stop(stopped) }
        for _ in loops { stopped.wait() }
        core.loops.withLock { $0 = [] }
        core.connections.stop()
        core.workers.stop()
    }

    deinit { stop() }
}

/// What the event loops share: the handler, the limits, the listening socket and the counts.
final class ServerCore: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse?
    let completed: @Sendable (HTTPServer.Completed) -> Void
    let limits: HTTPServer.Limits
    let listener: Int32
    let connections: ConnectionTable
    let workers: WorkerPool
    /// Open connections, refused ones included.
    let open = Atomic<Int>(0)
    /// Connection ids, for `ConnectionTable`.
    let nextID = Atomic<UInt>(0)
    /// The loops, once all are made, among which a new connection goes to the one holding the
    /// fewest (`EventLoop.acceptOne`); let go at the stop, since each holds the core too.
    let loops = Mutex<[EventLoop]>([])

    init(
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse?,
        completed: @escaping @Sendable (HTTPServer.Completed) -> Void, limits: HTTPServer.Limits, listener: Int32,
        connections: ConnectionTable, workers: WorkerPool
    ) {
        self.handler = handler
        self.completed = completed
        self.limits = limits
        self.listener = listener
        self.connections = connections
        self.workers = workers
    }

    static let stopping = HTTPResponse.text(
        503, #"{"error": {"code": "unavailable", "message": "the service is stopping"}}"# + "\n",
        contentType: "application/json")
}
