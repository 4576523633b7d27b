import Foundation
import Synchronization

/// The server's open connections, so that no client can take all of them: a client address (an
/// IPv6 client's /64, which one host is given whole) holds at most `perClient` at once, all
/// clients `total`; a new connection waiting for its first request's headers gets `headerTimeout`
/// seconds, a kept-alive one `keepAliveTimeout` for its next request (an idle player between
/// segments costs no thread, so it may wait long), and one whose request body is on its way
/// `bodyTimeout` (a client trickling them a byte at a
/// time resets any idle timeout, but not these). A connection past a limit is answered 429 or 503
/// at once and closed, not left hanging.
///
/// The event loops own the sockets; this table only sees their descriptors between `opened` and
/// `closed` (told before the descriptor is closed), and shuts one down (never closes it) under its
/// lock, which those calls also take, so it never touches a descriptor reused since.
final class ConnectionTable: Sendable {
    struct Limits: Sendable {
        var total: Int
        var perClient: Int
        var headerTimeout: Double
        var keepAliveTimeout: Double
        var bodyTimeout: Double

        func seconds(for waiting: Waiting) -> Double {
            switch waiting {
            case .firstRequest: headerTimeout
            case .nextRequest: keepAliveTimeout
            case .body: bodyTimeout
            }
        }
    }

    enum Waiting {
        case firstRequest, nextRequest, body
    }

    private struct Entry {
        let fd: Int32
        let client: String
        /// Since when it waits for a request's headers (opened, or its last response ended), or
        /// for its body; nil while a request is answered.
        var waitingSince: Double?
        /// What it waits for, which says how long it may.
        var waitingFor = Waiting.firstRequest
        /// Answered 429/503 when it opened: its request, if one comes, is not served.
        var refused: Bool

        mutating func wait(for what: Waiting, since: Double?) {
            waitingFor = what
            waitingSince = since
        }
    }

    private struct State {
        var entries: [UInt: Entry] = [:]
        var perClient: [String: Int] = [:]
        /// Entries not refused.
        var served = 0
        var stopped = false
    }

    private let limits: Limits
    private let state = Mutex(State())
    private let watchdogDone = DispatchSemaphore(value: 0)

    init(limits: Limits) {
        self.limits = limits
        let thread = Thread { [self] in watch() }
        thread.name = "mprobe.http.deadlines"
        thread.start()
    }

    /// Ends the watchdog thread (it holds the table until then); once, however often it is called.
    func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        if first { watchdogDone.wait() }
    }

    /// A connection opened on `fd` from `client` (numeric address). Past a limit it is answered
    /// at once, and marked so its request is not served.
    func opened(_ connection: UInt, fd: Int32, client address: String) {
        let client = ConnectionTable.clientKey(address)
        let refusal: (status: Int, message: String)? = state.withLock { s in
            let count = s.perClient[client, default: 0]
            var refusal: (Int, String)?
            if limits.perClient > 0, count >= limits.perClient {
                refusal = (429, "this address holds \(limits.perClient) connections to the service already")
            } else if s.served >= limits.total {
                refusal = (503, "the service holds \(limits.total) connections already; try again shortly")
            }
            s.entries[connection] = Entry(
                fd: fd, client: client,
                waitingSince: refusal == nil ? ProcessInfo.processInfo.systemUptime : nil,
                refused: refusal != nil)
            if refusal == nil {
                s.perClient[client] = count + 1
                s.served += 1
            }
            return refusal
        }
        if let refusal { ConnectionTable.answer(fd, status: refusal.status, message: refusal.message) }
    }

    func closed(_ connection: UInt) {
        state.withLock { s in
            guard let entry = s.entries.removeValue(forKey: connection), !entry.refused else { return }
            s.served -= 1
            let left = s.perClient[entry.client, default: 1] - 1
            s.perClient[entry.client] = left > 0 ? left : nil
        }
    }

    /// A request's headers have arrived at `now`: its body is awaited, if one follows, else it is
    /// answered with no deadline. False for a refused connection.
    func requestArrived(_ connection: UInt, bodyFollows: Bool, now: Double) -> Bool {
        state.withLock { s in
            s.entries[connection]?.wait(for: .body, since: bodyFollows ? now : nil)
            return s.entries[connection].map { !$0.refused } ?? true
        }
    }

    /// The body is here too: the request is being answered, with no deadline (a response may
    /// stream for hours).
    func requestReceived(_ connection: UInt) {
        state.withLock { $0.entries[connection]?.waitingSince = nil }
    }

    /// A response ended at `now` and the connection stays open: the next request's headers are awaited.
    func requestEnded(_ connection: UInt, now: Double) {
        state.withLock { $0.entries[connection]?.wait(for: .nextRequest, since: now) }
    }

    /// The address limits count by: the address itself, or an IPv6 address's /64 (an
    /// IPv4-mapped one is its IPv4 address).
    static func clientKey(_ address: String) -> String {
        var bytes = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        let octets = withUnsafeBytes(of: bytes) { Array($0) }
        if octets[0..<10].allSatisfy({ $0 == 0 }) && octets[10] == 0xFF && octets[11] == 0xFF {
            return octets[12..<16].map(String.init).joined(separator: ".")
        }
        return octets[0..<8].map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    /// Every quarter second: a connection past its header deadline is shut down, which its event
    /// loop sees as the client gone, and ends it.
    private func watch() {
        defer { watchdogDone.signal() }
        while true {
            Thread.sleep(forTimeInterval: 0.25)
            let stopped = state.withLock { s -> Bool in
                let now = ProcessInfo.processInfo.systemUptime
                for (key, entry) in s.entries {
                    guard let since = entry.waitingSince,
                        now - since > limits.seconds(for: entry.waitingFor)
                    else { continue }
                    _ = shutdown(entry.fd, Int32(SHUT_RDWR))
                    s.entries[key]?.waitingSince = nil
                }
                return s.stopped
            }
            if stopped { return }
        }
    }

    /// Writes a whole small response on a connection nothing has written to yet, then shuts it
    /// down, so that its event loop ends it at once (thousands may come in a burst, and each
    /// holds a place under the server's own limit until then). What does not fit in
    /// the socket's buffer at once is dropped (it always fits).
    private static func answer(_ fd: Int32, status: Int, message: String) {
        let body =
            "{\"error\": {\"code\": \"\(status == 429 ? "too_many_connections" : "unavailable")\", \"message\": \"\(message)\"}}\n"
        let reason = status == 429 ? "Too Many Requests" : "Service Unavailable"
        let text =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Retry-After: 1\r\nConnection: close\r\n\r\n" + body
        _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }
}
