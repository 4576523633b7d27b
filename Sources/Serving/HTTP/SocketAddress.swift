import Foundation

/// An IPv4 or IPv6 socket address to listen on, resolved from a host and a port.
struct SocketAddress: Sendable {
    private let storage: [UInt8]
    let isIPv6: Bool

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
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        storage.withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }
}
