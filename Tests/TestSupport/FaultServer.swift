import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The project's own HTTP/1.1 server for fault injection: real POSIX sockets on 127.0.0.1, a
/// thread per connection, keep-alive, and per-route `FaultBehavior`s (drops, stalls, lies,
/// errors). Every request is recorded with its connection number before it is answered, so
/// tests can assert on round trips and connection reuse.
public final class FaultServer: Sendable {
    public let port: Int
    private let core: FaultServerCore

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// `path` is appended to `baseURL`; pass it with its leading slash.
    public func url(_ path: String) -> String {
        baseURL + (path.hasPrefix("/") ? path : "/" + path)
    }

    /// Binds a free port on 127.0.0.1 and starts accepting connections. With `maxConnections`,
    /// a connection beyond that many open at once is reset as soon as it is accepted, as origins
    /// that limit connections per client do.
    public init(maxConnections: Int? = nil) throws {
        let (fd, port) = try LoopbackSocket.listen()
        self.port = port
        self.core = FaultServerCore(listenFD: fd, maxConnections: maxConnections)
        core.startAccepting()
    }

    deinit {
        core.stop()
    }

    /// Sets (or replaces) the behavior for `path` (matched without query string) and resets
    /// the route's request counter used by `.sequence`.
    public func route(_ path: String, _ behavior: FaultBehavior) {
        core.state.withLock { $0.routes[path] = FaultServerCore.Route(behavior: behavior, hits: 0) }
    }

    /// Every request received so far, in arrival order.
    public var requests: [RecordedRequest] { core.state.withLock { $0.requests } }

    /// Forgets the recorded requests (routes and their counters stay).
    public func clearRequests() {
        core.state.withLock { $0.requests.removeAll() }
    }

    /// How many connections the server has accepted so far.
    public var connectionCount: Int { core.state.withLock { $0.connectionCount } }

    /// Closes the listening socket and every connection, and waits (bounded) for the threads.
    /// Idempotent; also called by deinit.
    public func stop() {
        core.stop()
    }
}

/// The part of the server the threads share. Kept apart from `FaultServer` so that threads
/// never retain the public object and its deinit can still stop everything.
final class FaultServerCore: Sendable {
    struct Route {
        var behavior: FaultBehavior
        /// Requests seen so far, the index `.sequence` picks with.
        var hits: Int
    }

    struct State {
        var routes: [String: Route] = [:]
        var requests: [RecordedRequest] = []
        var connectionCount = 0
        /// Sockets of live connections, so `stop()` can wake threads blocked on them. A
        /// connection thread removes its fd under the lock before closing it, so stop() never
        /// shuts down a descriptor number that has been reused for something else.
        var openConnections: Set<Int32> = []
    }

    let listenFD: Int32
    let state = Mutex(State())
    /// Read by sleeping and accepting threads to notice shutdown promptly.
    let stopped = Atomic<Bool>(false)
    /// Entered by the accept thread and every connection thread.
    let threads = DispatchGroup()
    private let listenClosed = Mutex(false)

    let maxConnections: Int?

    init(listenFD: Int32, maxConnections: Int?) {
        self.listenFD = listenFD
        self.maxConnections = maxConnections
    }

    func startAccepting() {
        threads.enter()
        let thread = Thread { [self] in
            defer { threads.leave() }
            acceptLoop()
        }
        thread.name = "FaultServer.accept"
        thread.start()
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            // poll with a short timeout rather than a blocking accept: closing a socket does
            // not reliably wake a thread blocked in accept on Linux.
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 50)
            if ready <= 0 { continue }
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ECONNABORTED { continue }
                Thread.sleep(forTimeInterval: 0.01)
                continue
            }
            // accept4 is not visible from Swift's Glibc module; set CLOEXEC after the fact.
            // (Foundation's Process also closes stray descriptors in children.)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            // Headers and body go out in separate sends; without NODELAY, Nagle plus delayed
            // ACKs would add 40 ms stalls that look like server latency.
            var yes: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            if let maxConnections, state.withLock({ $0.openConnections.count }) >= maxConnections {
                var reset = linger(l_onoff: 1, l_linger: 0)  // close with a RST, not a FIN
                _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
                close(fd)
                continue
            }
            let number: Int? = state.withLock { state in
                guard !stopped.load(ordering: .acquiring) else { return nil }
                state.connectionCount += 1
                state.openConnections.insert(fd)
                return state.connectionCount
            }
            guard let number else {
                close(fd)
                break
            }
            threads.enter()
            let thread = Thread { [self] in
                defer { threads.leave() }
                FaultConnection(core: self, fd: fd, number: number).run()
                closeConnection(fd)
            }
            thread.name = "FaultServer.connection.\(number)"
            thread.start()
        }
    }

    func closeConnection(_ fd: Int32) {
        state.withLock { state in
            state.openConnections.remove(fd)
            close(fd)
        }
    }

    /// Records the request and picks the behavior that answers it, atomically, so
    /// `.sequence` counts are exact even with parallel connections.
    func recordAndResolve(_ request: RecordedRequest) -> (FaultBehavior, index: Int)? {
        let routePath = String(request.path.prefix { $0 != "?" && $0 != "#" })
        return state.withLock { state in
            state.requests.append(request)
            guard var route = state.routes[routePath] else { return nil }
            let index = route.hits
            route.hits += 1
            state.routes[routePath] = route
            return (route.behavior, index)
        }
    }

    /// Sleeps up to `seconds` in small slices; false if the server was stopped meanwhile.
    func sleep(_ seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if stopped.load(ordering: .acquiring) { return false }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return true }
            Thread.sleep(forTimeInterval: min(left, 0.01))
        }
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    func stop() {
        if stopped.exchange(true, ordering: .acquiringAndReleasing) == false {
            // Wake every connection thread: blocked recv returns 0, blocked send fails.
            state.withLock { state in
                for fd in state.openConnections { _ = shutdown(fd, Int32(SHUT_RDWR)) }
            }
        }
        // Threads notice within a poll/sleep slice; the bound only guards against surprises.
        _ = threads.wait(timeout: .now() + 5)
        listenClosed.withLock { closed in
            if !closed {
                close(listenFD)
                closed = true
            }
        }
    }
}
