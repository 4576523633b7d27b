import Foundation
import Synchronization

/// A connection's socket as the requests on it see it: whether the client has gone, asked from
/// any thread. Closed under the lock that `gone` takes, so it never polls a descriptor reused since.
final class ClientSocket: Sendable {
    private let fd: Mutex<Int32?>

    init(_ fd: Int32) { self.fd = Mutex(fd) }

    /// True once the client closed its side (or the connection is over), without reading.
    func gone() -> Bool {
        fd.withLock { fd in
            guard let fd else { return true }
            var p = pollfd(fd: fd, events: Int16(HTTPConnection.peerClosedEvent), revents: 0)
            guard poll(&p, 1, 0) >= 0 else { return true }
            return Int32(p.revents) & (HTTPConnection.peerClosedEvent | Int32(POLLHUP | POLLERR | POLLNVAL)) != 0
        }
    }

    func close() {
        fd.withLock { fd in
            if let open = fd { _ = Glibc.close(open) }
            fd = nil
        }
    }
}

/// One client connection, owned by one event loop and touched only on its thread.
final class HTTPConnection: @unchecked Sendable {
    enum Phase {
        /// Reading a request's head (or waiting for the next one).
        case head
        /// Reading `needed` bytes of body for `head`.
        case body(RequestHead, needed: Int)
        /// Set aside while a worker answers the request.
        case answering
        /// Sending the response.
        case writing
        /// Set aside while a worker waits for the streamed body's next bytes.
        case awaitingBytes
        /// Its response sent and its side shut: what the client still sends is read and dropped
        /// until it closes (a close with unread bytes would reset the connection, and could
        /// destroy the response before the client read it).
        case lingering(until: Double)
    }

    /// POLLRDHUP / EPOLLRDHUP (Linux): the peer shut its side.
    static let peerClosedEvent: Int32 = 0x2000

    let fd: Int32
    let id: UInt
    let peer: String
    let socket: ClientSocket
    var phase = Phase.head
    /// Bytes read and not yet parsed: the next request's head or body, or pipelined requests.
    var input: [UInt8] = []
    /// How much of `input` was searched for the head's end without finding it.
    var scanned = 0
    /// The last request's target, decoded (the next one is often the same).
    var lastTarget: RequestHead.Target?
    /// The client closed its side: no more requests will come.
    var peerClosed = false
    var exchange: Exchange?
    /// The epoll events it is registered for; nil while out of epoll (set aside).
    var interest: UInt32?
    /// When a write last made progress (or a request last arrived), for the idle timeout.
    var lastActivity: Double

    init(fd: Int32, id: UInt, peer: String, now: Double) {
        self.fd = fd
        self.id = id
        self.peer = peer
        socket = ClientSocket(fd)
        lastActivity = now
    }

    /// Whether a worker holds it (the loop must neither read, write nor close it meanwhile).
    var isSetAside: Bool {
        switch phase {
        case .answering, .awaitingBytes: true
        default: false
        }
    }
}
