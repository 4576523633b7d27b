import CSockets
import Foundation
import Synchronization

/// One event loop: a thread waiting in epoll on its share of the connections, which it reads,
/// answers and writes. It accepts from the shared listening socket (EPOLLEXCLUSIVE wakes one loop
/// per connection) and hands each new connection to the loop holding the fewest. Workers hand
/// results back with `post`. Everything but `posted` and `held` is touched on the loop's own
/// thread only.
final class EventLoop: @unchecked Sendable {
    /// Longest request head read (a URL of 8 KiB percent-encoded is 24 KiB): past it, 431.
    static let maxHead = 64 << 10
    /// What one read takes from a socket.
    private static let readBlock = 64 << 10
    /// The buffer a streamed body's bytes are read into when they cannot be sent from their
    /// file, per response that needs one; and the most of a stored run handed over at once.
    static let streamBlock = 64 << 10
    static let storedRunBlock = 1 << 20
    /// How long a response to the last requests may take to go out once the server stops.
    static let stopDrain = 1.0
    /// How long a closing connection's unread bytes are read and dropped.
    static let lingerSeconds = 2.0

    let core: ServerCore
    private let epoll: Int32
    private let wake: Int32
    /// Work posted by other threads, and whether the loop has ended (then posts are dropped: its
    /// wake-up descriptor is closed, and its number may be another file's).
    private let posted = Mutex<(queue: [@Sendable () -> Void], ended: Bool)>(([], false))

    private var connections: [Int32: HTTPConnection] = [:]
    /// How many connections the loop holds (or has been handed and not yet taken up): read by the
    /// loop that accepts a new one, which gives it to the loop holding the fewest (`acceptOne`).
    let held = Atomic<Int>(0)
    private var listening = true
    private var pausedUntil: Double?
    private var stopDeadline: Double?
    /// Told when the loop has ended, once it was asked to stop.
    private var stopped: DispatchSemaphore?
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.readBlock, alignment: 16)
    private var date: [UInt8] = []
    private var dateSecond = -1
    private var now = ProcessInfo.processInfo.systemUptime
    private var lastSweep = 0.0

    private static let readable = UInt32(EPOLLIN.rawValue) | UInt32(HTTPConnection.peerClosedEvent)
    private static let writable = UInt32(EPOLLOUT.rawValue)

    init(core: ServerCore, index: Int) throws {
        self.core = core
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard epoll >= 0, wake >= 0 else {
            if epoll >= 0 { Glibc.close(epoll) }
            if wake >= 0 { Glibc.close(wake) }
            throw ServiceError.listen(address: "event loop", reason: String(cString: strerror(errno)))
        }
        control(EPOLL_CTL_ADD, wake, EventLoop.readable)
        addListener()
        refreshDate()
        let thread = Thread { [self] in run() }
        thread.name = "mprobe.http.loop.\(index)"
        thread.start()
    }

    /// Runs `work` on the loop's thread, soon; false, and it never runs, once the loop has ended.
    @discardableResult
    func post(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (taken, first) = posted.withLock { posted in
            guard !posted.ended else { return (false, false) }
            posted.queue.append(work)
            return (true, posted.queue.count == 1)
        }
        if first {
            var one: UInt64 = 1
            _ = write(wake, &one, 8)
        }
        return taken
    }

    /// Stops accepting; `done` is told once the loop has let the listening socket go.
    func stopListening(_ done: DispatchSemaphore) {
        post { [self] in
            removeListener()
            listening = false
            done.signal()
        }
    }

    /// Answers what is set aside with a 503 (or ends its body short), lets responses under way
    /// go out for a moment, closes the rest, and ends the thread; `done` is told when it has.
    func stop(_ done: DispatchSemaphore) {
        post { [self] in
            stopped = done
            beginStop()
        }
    }

    // MARK: The loop

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while true {
            let count = epoll_wait(epoll, &events, Int32(events.count), 250)
            now = ProcessInfo.processInfo.systemUptime
            if count > 0 {
                for event in events[0..<Int(count)] {
                    let fd = event.data.fd
                    if fd == wake {
                        drainPosted()
                    } else if fd == core.listener && listening {
                        acceptOne()
                    } else if let connection = connections[fd] {
                        ready(connection)
                    }
                }
            }
            if now - lastSweep >= 1 { sweep() }
            if let deadline = stopDeadline, connections.isEmpty || now >= deadline { break }
        }
        for connection in Array(connections.values) { hangUp(connection) }
        // Ended and drained in one step, so that no work (a connection handed over) is posted
        // after the last look and lost.
        for work in posted.withLock({ posted in
            posted.ended = true
            defer { posted.queue = [] }
            return posted.queue
        }) {
            work()
        }
        Glibc.close(epoll)
        Glibc.close(wake)
        scratch.deallocate()
        stopped?.signal()
    }

    private func drainPosted() {
        var value: UInt64 = 0
        _ = read(wake, &value, 8)
        for work in posted.withLock({ posted in
            defer { posted.queue = [] }; return posted.queue
        }) {
            work()
        }
    }

    private func control(_ op: Int32, _ fd: Int32, _ events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = epoll_ctl(epoll, op, fd, &event)
    }

    private func addListener() {
        control(EPOLL_CTL_ADD, core.listener, UInt32(EPOLLIN.rawValue) | (1 << 28))  // EPOLLEXCLUSIVE
    }

    private func removeListener() {
        control(EPOLL_CTL_DEL, core.listener, 0)
    }

    /// Once a second: the Date header, connections past their idle or linger deadline, a paused
    /// listener taken up again.
    private func sweep() {
        lastSweep = now
        refreshDate()
        if let until = pausedUntil, now >= until, listening, stopDeadline == nil {
            pausedUntil = nil
            addListener()
        }
        for connection in Array(connections.values) {
            switch connection.phase {
            case .writing where now - connection.lastActivity > Double(core.limits.idleTimeout):
                hangUp(connection)
            case .lingering(let until) where now >= until:
                hangUp(connection)
            default: break
            }
        }
    }

    private func refreshDate() {
        let second = Int(time(nil))
        guard second != dateSecond else { return }
        dateSecond = second
        date = ResponseHead.date(second)
    }

    // MARK: Accepting

    /// Takes one connection per wake-up: the listener stays readable while more wait, and the
    /// next wakes another loop (EPOLLEXCLUSIVE), so a burst of players is shared among the loops
    /// instead of landing on the one that woke first.
    private func acceptOne() {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                mp_accept_nonblocking(core.listener, $0, &length)
            }
        }
        guard fd >= 0 else {
            if errno == EMFILE || errno == ENFILE {
                // No descriptor for it: stop taking connections for a moment rather than spin.
                removeListener()
                pausedUntil = now + 0.1
                lastSweep = min(lastSweep, now - 0.9)
            }
            return
        }
        guard core.open.add(1, ordering: .relaxed).newValue <= core.limits.maxConnections + HTTPServer.refusalRoom
        else {
            core.open.subtract(1, ordering: .relaxed)
            Glibc.close(fd)
            return
        }
        let peer = numericHost(address)
        // Held by the loop that holds the fewest. The loop a connection wakes is one that was
        // waiting, so without this the idle loop took most of a burst: wrk's 200 connections
        // went 44 to 160 between two loops, and the 160 waited the longer (p99).
        let fewest = core.loops.withLock { loops in
            loops.min { $0.held.load(ordering: .relaxed) < $1.held.load(ordering: .relaxed) }
        }
        if let fewest, fewest !== self, fewest.held.load(ordering: .relaxed) < held.load(ordering: .relaxed) {
            fewest.held.add(1, ordering: .relaxed)  // counted now, so that a burst is shared as it comes
            if fewest.post({ fewest.adopt(fd, peer: peer) }) { return }
            fewest.held.subtract(1, ordering: .relaxed)  // it has ended (a stop): kept here
        }
        held.add(1, ordering: .relaxed)
        adopt(fd, peer: peer)
    }

    /// Takes up a connection accepted (by this loop or another), already counted in `held`; one
    /// handed over while the loop stops is closed.
    private func adopt(_ fd: Int32, peer: String) {
        guard stopDeadline == nil else {
            Glibc.close(fd)
            held.subtract(1, ordering: .relaxed)
            core.open.subtract(1, ordering: .relaxed)
            return
        }
        var on: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        let connection = HTTPConnection(
            fd: fd, id: core.nextID.add(1, ordering: .relaxed).newValue, peer: peer, now: now)
        connections[fd] = connection
        setInterest(connection, EventLoop.readable)
        core.connections.opened(connection.id, fd: fd, client: connection.peer)
    }

    private func setInterest(_ connection: HTTPConnection, _ events: UInt32?) {
        guard connection.interest != events else { return }
        switch (connection.interest, events) {
        case (nil, let new?): control(EPOLL_CTL_ADD, connection.fd, new)
        case (_?, nil): control(EPOLL_CTL_DEL, connection.fd, 0)
        case (_?, let new?): control(EPOLL_CTL_MOD, connection.fd, new)
        case (nil, nil): break
        }
        connection.interest = events
    }

    // MARK: A connection's events

    private func ready(_ connection: HTTPConnection) {
        switch connection.phase {
        case .head, .body, .lingering:
            readInput(connection)
            advance(connection)
        case .writing:
            flush(connection)
            advance(connection)  // requests pipelined behind it are in `input` already
        case .answering, .awaitingBytes:
            break  // out of epoll; a late event from before it was set aside
        }
    }

    /// One read's worth of what the client sent, or that it closed.
    private func readInput(_ connection: HTTPConnection) {
        let n = recv(connection.fd, scratch.baseAddress, scratch.count, 0)
        if n > 0 {
            if case .lingering = connection.phase { return }
            connection.input.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
        } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
            connection.peerClosed = true
        }
    }

    /// Moves the connection on as far as its input allows: heads parsed, bodies gathered,
    /// requests answered and written, one after another (pipelined requests included).
    private func advance(_ connection: HTTPConnection) {
        while connections[connection.fd] === connection {
            switch connection.phase {
            case .lingering:
                if connection.peerClosed { hangUp(connection) }
                return
            case .answering, .awaitingBytes, .writing:
                return
            case .head:
                // Empty lines before a request line are ignored (RFC 9112 §2.2).
                while connection.input.count >= 2 && connection.input[0] == 0x0D && connection.input[1] == 0x0A {
                    connection.input.removeFirst(2)
                }
                guard let found = headEnd(connection) else {
                    if connection.input.count > EventLoop.maxHead {
                        refuse(connection, RequestHead.Refusal(status: 431, message: "the request head is too long"))
                    } else if connection.peerClosed {
                        hangUp(connection)
                        return
                    } else {
                        return
                    }
                    continue
                }
                guard case .at(let end) = found else {
                    refuse(connection, RequestHead.Refusal(status: 400, message: "a line ends in LF, not CRLF"))
                    continue
                }
                let head: RequestHead
                do {
                    head = try RequestHead.parse(connection.input[0..<end + 2], previous: connection.lastTarget)
                } catch {
                    refuse(connection, error)
                    continue
                }
                connection.input.removeFirst(end + 4)
                connection.lastTarget = RequestHead.Target(text: head.target, path: head.path, query: head.query)
                connection.lastActivity = now
                let length = head.contentLength
                guard core.connections.requestArrived(connection.id, bodyFollows: length > 0, now: now) else {
                    hangUp(connection)
                    return
                }
                if length > core.limits.maxBody {
                    // Refused before the client sends it: it waits for "100 Continue" or is read no further.
                    refuse(
                        connection,
                        RequestHead.Refusal(
                            status: 413, message: "", method: head.method, target: head.target, path: head.path),
                        response: HTTPServer.tooLarge(core.limits.maxBody))
                    continue
                }
                // HTTP/1.0 knows no 1xx answers (RFC 9110 §15.2).
                if length > connection.input.count && head.expectsContinue && head.isHTTP11 {
                    _ = "HTTP/1.1 100 Continue\r\n\r\n".withCString { send(connection.fd, $0, 25, Int32(MSG_NOSIGNAL)) }
                }
                connection.phase = .body(head, needed: length)
            case .body(let head, let needed):
                guard connection.input.count >= needed else {
                    if connection.peerClosed { hangUp(connection) }
                    return
                }
                var body: [UInt8] = []
                if needed > 0 {
                    body = Array(connection.input[0..<needed])
                    connection.input.removeFirst(needed)
                    core.connections.requestReceived(connection.id)
                }
                if connection.input.isEmpty { connection.input = [] }  // an idle connection holds no buffer
                answer(connection, head: head, body: body)
            }
        }
    }

    private enum HeadEnd {
        /// The blank line starts here.
        case at(Int)
        /// A line ends in LF alone: refused at once, not waited on until the header timeout.
        case bareLineFeed
    }

    /// Where the head's blank line starts, if it has arrived. Each byte is looked at once however
    /// the head trickles in (`scanned` remembers where the last look stopped).
    private func headEnd(_ connection: HTTPConnection) -> HeadEnd? {
        let found = connection.input.withUnsafeBufferPointer { bytes -> HeadEnd? in
            let limit = min(bytes.count, EventLoop.maxHead + 4)
            var i = max(1, connection.scanned)
            while i < limit {
                defer { i += 1 }
                guard bytes[i] == 0x0A else { continue }
                guard bytes[i - 1] == 0x0D else { return .bareLineFeed }
                if i >= 3 && bytes[i - 2] == 0x0A && bytes[i - 3] == 0x0D { return .at(i - 3) }
            }
            connection.scanned = max(1, limit)
            return nil
        }
        if found != nil { connection.scanned = 0 }
        return found
    }

    /// A request refused before the handler sees it: logged, answered, and the connection closed
    /// after (what follows on it cannot be trusted to be a request).
    private func refuse(_ connection: HTTPConnection, _ refusal: RequestHead.Refusal, response: HTTPResponse? = nil) {
        connection.input = []
        let exchange = Exchange(
            method: refusal.method, target: refusal.target, path: refusal.path, query: [:], keepAlive: false)
        connection.exchange = exchange
        let code =
            switch refusal.status {
            case 411: "length_required"
            case 431: "header_too_large"
            case 505: "version_not_supported"
            default: "bad_request"
            }
        let answer =
            response
            ?? HTTPResponse.text(
                refusal.status,
                #"{"error": {"code": "\#(code)", "message": "\#(refusal.message)"}}"# + "\n",
                contentType: "application/json")
        start(connection, answer)
    }

    /// Asks the handler on the loop; a request that must wait is set aside and asked again on a worker.
    private func answer(_ connection: HTTPConnection, head: RequestHead, body: [UInt8]) {
        let exchange = Exchange(
            method: head.method, target: head.target, path: head.path, query: head.query,
            keepAlive: head.keepAlive && !connection.peerClosed && stopDeadline == nil)
        connection.exchange = exchange
        let socket = connection.socket
        var request = HTTPRequest(
            method: head.method, path: head.path, query: head.query, headers: head.headers, body: body,
            peer: connection.peer, mayWait: false, clientGone: { socket.gone() })
        if let response = core.handler(request) {
            start(connection, response)
            return
        }
        guard stopDeadline == nil else {
            start(connection, ServerCore.stopping)
            return
        }
        connection.phase = .answering
        setInterest(connection, nil)
        request.mayWait = true
        let handler = core.handler
        core.workers.run { [self, request] in
            let response = handler(request) ?? HTTPResponse.text(500, "the handler gave no answer\n")
            exchange.answer.withLock { $0 = response }
            post { [self] in
                // Unless the server answered it meanwhile (stopping).
                guard connection.exchange === exchange, case .answering = connection.phase,
                    let response = exchange.answer.withLock({ $0 })
                else { return }
                start(connection, response)
                advance(connection)
            }
        }
    }

    /// Starts sending `response` for the connection's exchange.
    private func start(_ connection: HTTPConnection, _ response: HTTPResponse) {
        guard let exchange = connection.exchange else { return }
        if stopDeadline != nil { exchange.keepAlive = false }
        exchange.respond(response, date: date[...])
        connection.phase = .writing
        flush(connection)
    }

    /// Sends what it can of the response: on until it is done, the socket is full (then on
    /// EPOLLOUT), or a streamed body has nothing ready (then set aside until a worker has it).
    private func flush(_ connection: HTTPConnection) {
        guard let exchange = connection.exchange else { return }
        while true {
            if exchange.outSent < exchange.out.count {
                // Sent at once, as nginx does. Held for the body with MSG_MORE it cost, at 200
                // connections of cached ranges, about 25 µs more kernel time per request and a
                // p99 of 30–58 ms against 25–34 ms (docs/benchmarks.md).
                let n = exchange.out.withUnsafeBytes { bytes in
                    send(
                        connection.fd, bytes.baseAddress! + exchange.outSent, bytes.count - exchange.outSent,
                        Int32(MSG_NOSIGNAL))
                }
                guard sent(n, connection) else { return }
                exchange.outSent += n
                if exchange.outSent == exchange.out.count { exchange.out = []; exchange.outSent = 0 }
                continue
            }
            if !exchange.pending.isEmpty, let buffer = exchange.buffer {
                let n = send(
                    connection.fd, buffer.baseAddress! + exchange.pending.lowerBound, exchange.pending.count,
                    Int32(MSG_NOSIGNAL))
                guard sent(n, connection) else { return }
                exchange.pending = exchange.pending.lowerBound + n..<exchange.pending.upperBound
                exchange.bodySent += Int64(n)
                continue
            }
            if let piece = exchange.piece {
                let n = piece.file.send(to: connection.fd, at: piece.next)
                if n == 0 {
                    hangUp(connection)  // the data file is shorter than its index said: end short
                    return
                }
                guard sent(n, connection) else { return }
                exchange.bodySent += Int64(n)
                let next = piece.next + Int64(n)
                exchange.piece = next < piece.file.length ? (piece.file, next) : nil
                continue
            }
            switch exchange.body {
            case .none:
                finish(connection)
                return
            case .file(let file, let next):
                let n = file.send(to: connection.fd, at: next)
                if n == 0 {
                    hangUp(connection)  // the file is shorter than promised: end short
                    return
                }
                guard sent(n, connection) else { return }
                exchange.bodySent += Int64(n)
                exchange.body = next + Int64(n) < file.length ? .file(file, next: next + Int64(n)) : .none
            case .stream(let stream, let remaining):
                guard readStream(connection, exchange, stream, remaining: remaining) else { return }
            }
        }
    }

    /// Whether a send of `n` made progress; if not, the connection waits for EPOLLOUT or is closed.
    private func sent(_ n: Int, _ connection: HTTPConnection) -> Bool {
        if n > 0 {
            connection.lastActivity = now
            return true
        }
        if n < 0 && (errno == EAGAIN || errno == EINTR) {
            setInterest(connection, EventLoop.writable)
        } else {
            hangUp(connection)
        }
        return false
    }

    /// Reads the stream's next bytes into the exchange's buffer; false when the connection is set
    /// aside (nothing ready) or closed (the body cannot be had).
    private func readStream(
        _ connection: HTTPConnection, _ exchange: Exchange, _ stream: HTTPBodyStream, remaining: Int64?
    ) -> Bool {
        if exchange.failed.load(ordering: .relaxed) {
            hangUp(connection)
            return false
        }
        do {
            let most = Int(min(Int64(EventLoop.storedRunBlock), remaining ?? Int64(EventLoop.storedRunBlock)))
            if let file = try stream.readyFile(max: most) {
                exchange.piece = (file, 0)
                let left = remaining.map { $0 - file.length }
                exchange.body = left == 0 ? .none : .stream(stream, remaining: left)
                return true
            }
        } catch {
            hangUp(connection)
            return false
        }
        let buffer =
            exchange.buffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.streamBlock, alignment: 16)
        exchange.buffer = buffer
        let want = Int(min(Int64(buffer.count), remaining ?? Int64(buffer.count)))
        let got: Int?
        do {
            got = try stream.readReady(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]))
        } catch {
            hangUp(connection)
            return false
        }
        guard let got else {
            connection.phase = .awaitingBytes
            setInterest(connection, nil)
            core.workers.run { [self] in
                do {
                    try stream.waitUntilReady(wanted: want)
                } catch {
                    exchange.failed.store(true, ordering: .relaxed)
                }
                post { [self] in
                    guard connection.exchange === exchange, case .awaitingBytes = connection.phase else { return }
                    connection.phase = .writing
                    flush(connection)
                    advance(connection)
                }
            }
            return false
        }
        if got == 0 {
            if let remaining, remaining > 0 {
                hangUp(connection)  // fewer bytes than the headers promised: end short
                return false
            }
            exchange.body = .none
            return true
        }
        exchange.pending = 0..<got
        exchange.body = .stream(stream, remaining: remaining.map { $0 - Int64(got) })
        if remaining.map({ $0 - Int64(got) }) == 0 { exchange.body = .none }
        return true
    }

    /// The response is sent: logged, and the connection waits for the next request (or closes).
    private func finish(_ connection: HTTPConnection) {
        guard let exchange = connection.exchange else { return }
        connection.exchange = nil
        exchange.end()
        report(exchange)
        core.connections.requestEnded(connection.id, now: now)
        if exchange.keepAlive && !connection.peerClosed {
            connection.phase = .head
            setInterest(connection, EventLoop.readable)
        } else {
            connection.input = []
            _ = shutdown(connection.fd, Int32(SHUT_WR))
            connection.phase = .lingering(until: now + EventLoop.lingerSeconds)
            setInterest(connection, EventLoop.readable)
        }
    }

    private func report(_ exchange: Exchange) {
        core.completed(
            HTTPServer.Completed(
                method: exchange.method, target: exchange.target, path: exchange.path, query: exchange.query,
                status: exchange.status,
                bodyBytes: exchange.bodySent, seconds: ProcessInfo.processInfo.systemUptime - exchange.started))
    }

    /// Ends the connection; a response under way ends short (and is logged as it went).
    private func hangUp(_ connection: HTTPConnection) {
        guard connections[connection.fd] === connection else { return }
        if let exchange = connection.exchange {
            connection.exchange = nil
            exchange.end()
            if exchange.status != 0 { report(exchange) }
        }
        setInterest(connection, nil)
        connections[connection.fd] = nil
        held.subtract(1, ordering: .relaxed)
        core.connections.closed(connection.id)
        connection.socket.close()
        core.open.subtract(1, ordering: .relaxed)
    }

    // MARK: Stopping

    private func beginStop() {
        stopDeadline = now + EventLoop.stopDrain
        if listening {
            removeListener()
            listening = false
        }
        for connection in Array(connections.values) {
            switch connection.phase {
            case .lingering:
                hangUp(connection)
            case .head where connection.input.isEmpty:
                hangUp(connection)
            case .answering:
                connection.exchange?.keepAlive = false
                start(connection, ServerCore.stopping)
            case .awaitingBytes:
                hangUp(connection)  // its body ends short
            default:
                connection.exchange?.keepAlive = false
            }
        }
    }
}

/// The numeric host of a peer's address ("127.0.0.1", "::1").
private func numericHost(_ address: sockaddr_storage) -> String {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    var copy = address
    let ok = withUnsafePointer(to: &copy) { pointer -> Bool in
        switch Int32(address.ss_family) {
        case AF_INET:
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var raw = v4.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)) != nil
            }
        case AF_INET6:
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var raw = v6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)) != nil
            }
        default: return false
        }
    }
    guard ok else { return "" }
    return String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
