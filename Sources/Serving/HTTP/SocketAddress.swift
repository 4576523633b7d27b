import Foundation

/// An IPv4 or IPv6 socket address to listen on, resolved from a host and a port.
struct SocketAddress: Sendable {
    private let storage: [UInt8]
    let isIPv6: Bool
    /// host:port as given.
    let description: String

    /// `host` is an address literal (`127.0.0.1`, `::1`) or a name resolved with getaddrinfo.
    init(host: String, port: Int) throws {
        guard (0...65535).contains(port) else {
            throw ServiceError.listen(address: "\(host):\(port)", reason: "the port must be 0-65535")
        }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result, let address = first.pointee.ai_addr else {
            throw ServiceError.listen(address: "\(host):\(port)", reason: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(result) }
        storage = Array(UnsafeRawBufferPointer(start: address, count: Int(first.pointee.ai_addrlen)))
        isIPv6 = first.pointee.ai_family == AF_INET6
        description = "\(host):\(port)"
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        storage.withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    /// A non-blocking socket listening on this address, and the port it got (port 0 picks one).
    func listen() throws -> (fd: Int32, port: Int) {
        let family = isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        let bound = storage.withUnsafeBytes {
            bind(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))
        }
        guard bound == 0, Glibc.listen(fd, 4096) == 0 else {
            let error = failure("bind")
            Glibc.close(fd)
            throw error
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        return (fd, port)
    }

    private func failure(_ call: String) -> ServiceError {
        let reason = errno == EADDRINUSE ? "the address is in use" : "\(call): \(String(cString: strerror(errno)))"
        return ServiceError.listen(address: description, reason: reason)
    }
}
