import Foundation
import CCurl
import Synchronization

/// TCP connections opened before the requests that will use them. A request that needs a new
/// connection to the same address takes an established one instead of connecting, so a parallel
/// wave, or a second request sent while the first response is still arriving, pays no handshake.
///
/// The only owner of the descriptors it holds: a spare handed to libcurl is libcurl's from then
/// on (it closes it with the connection); spares never taken are closed with this object.
final class SpareConnections: Sendable {
    private struct Spare: Sendable {
        let fd: Int32
        /// The `sockaddr` connected to, byte for byte, as libcurl will name it.
        let address: [UInt8]
        /// `host:port` as the URL named it.
        let origin: String
        /// When it was opened (uptime, seconds).
        let opened: Double
    }
    private let spares = Mutex<[Spare]>([])
    /// More would only hold sockets at origins that nobody is about to use.
    static let limit = 16
    /// Spares are for requests about to be sent; an older one may have been dropped by the server
    /// or a middlebox without a word, and a request on it would fail and be retried.
    static let maxAge = 10.0

    private static var now: Double { ProcessInfo.processInfo.systemUptime }

    /// All spares held, for any origin.
    var count: Int { spares.withLock { $0.count } }

    /// Spares to `host`:`port` that can still be used, after closing those too old or closed by
    /// the server (a connection nothing was asked on has nothing to read unless it was closed).
    func usable(host: String, port: Int) -> Int {
        let origin = "\(host):\(port)"
        let dropped: [Int32] = spares.withLock { list in
            let stale = list.filter { SpareConnections.now - $0.opened > SpareConnections.maxAge || SpareConnections.wasClosed($0.fd) }
            list.removeAll { spare in stale.contains { $0.fd == spare.fd } }
            return stale.map(\.fd)
        }
        for fd in dropped { close(fd) }
        return spares.withLock { $0.filter { $0.origin == origin }.count }
    }

    deinit {
        for spare in spares.withLock({ $0 }) { close(spare.fd) }
    }

    /// Starts connecting up to `count` sockets to the first address of `host`:`port` without
    /// waiting for them (at most `limit` are held). `allowed` is the connection policy, checked
    /// on the address as for any other connection.
    func open(host: String, port: Int, count: Int, allowed: (@Sendable (String, Int) -> Bool)?) {
        let wanted = min(count, SpareConnections.limit - self.count)
        guard wanted > 0 else { return }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return }
        defer { freeaddrinfo(list) }
        let info = first.pointee
        guard let address = info.ai_addr else { return }
        if let allowed {
            let (ip, port) = RangeTransfer.numericAddress(address, length: info.ai_addrlen)
            guard allowed(ip, port) else { return }
        }
        let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(info.ai_addrlen)))
        for _ in 0..<wanted {
            let flags = Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
            let fd = socket(info.ai_family, info.ai_socktype | flags, info.ai_protocol)
            guard fd >= 0 else { break }
            // Only a connect still in progress is kept. libcurl 7.88 (Debian 12's) calls connect()
            // again on a socket its sockopt callback says is connected (fixed in 8.0, curl PR
            // 10648); Linux answers 0 to that once when the first connect() had returned
            // EINPROGRESS, but EISCONN when it had succeeded at once, which would fail the request.
            guard connect(fd, address, info.ai_addrlen) != 0, errno == EINPROGRESS else {
                close(fd)
                break
            }
            spares.withLock { $0.append(Spare(fd: fd, address: bytes, origin: "\(host):\(port)", opened: SpareConnections.now)) }
        }
    }

    /// An established spare connected to `address`, waiting up to `waiting` seconds for one still
    /// connecting; nil when there is none. Spares that failed to connect, or that the server has
    /// closed meanwhile, are dropped on the way.
    func take(to address: UnsafePointer<sockaddr>, length: socklen_t, waiting: Double) -> Int32? {
        let wanted = Array(UnsafeRawBufferPointer(start: address, count: Int(length)))
        while let spare = spares.withLock({ list -> Spare? in
            guard let i = list.firstIndex(where: { $0.address == wanted }) else { return nil }
            return list.remove(at: i)
        }) {
            if SpareConnections.now - spare.opened <= SpareConnections.maxAge,
               SpareConnections.isEstablished(spare.fd, waiting: waiting) { return spare.fd }
            close(spare.fd)
        }
        return nil
    }

    private static func isEstablished(_ fd: Int32, waiting: Double) -> Bool {
        var writable = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&writable, 1, Int32(max(0, min(waiting, 3600)) * 1000)) == 1 else { return false }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else { return false }
        return !wasClosed(fd)
    }

    /// Nothing was asked on a spare yet, so anything to read (or an error) is the server closing it.
    private static func wasClosed(_ fd: Int32) -> Bool {
        var readable = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&readable, 1, 0) != 0
    }
}
