import Foundation

/// The guard against server-side request forgery: which origins `mprobe serve` may fetch from.
///
/// Only http and https. An address that is loopback, private, link-local, unique-local,
/// multicast or unspecified is refused unless `--allow-host` names it; public addresses are
/// allowed. The fetcher applies `allows(ip:port:)` to the address each connection actually uses
/// (every redirect hop included), so a name that resolves differently later cannot slip past.
public struct OriginGuard: Sendable {
    /// One `--allow-host HOST[:PORT]`: the addresses HOST resolved to at start, and the port if given.
    struct Allowance: Sendable {
        let addresses: Set<String>
        let port: Int?
    }

    private let allowances: [Allowance]

    /// `allowHosts` are `HOST[:PORT]` (`[v6]:PORT` for IPv6 with a port); names are resolved now.
    public init(allowHosts: [String]) throws {
        allowances = try allowHosts.map(OriginGuard.allowance)
    }

    /// Whether a connection to `ip` (numeric) on `port` may be opened.
    public func allows(ip: String, port: Int) -> Bool {
        if !OriginGuard.isInternal(ip) { return true }
        let normalized = OriginGuard.normalize(ip)
        return allowances.contains { $0.addresses.contains(normalized) && ($0.port == nil || $0.port == port) }
    }

    /// Checks a URL before any work: the scheme, and the addresses its host resolves to now.
    /// Returns the reason it is refused, or nil.
    public func refusal(for url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else {
            return "only http and https origins may be fetched"
        }
        guard let host = components.host?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), !host.isEmpty else {
            return "the URL names no host"
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        // A name that does not resolve is the fetch's error to report (404-like), not a refusal.
        for ip in OriginGuard.resolve(host) where !allows(ip: ip, port: port) {
            return "\(host) resolves to \(ip), an internal address (allow it with --allow-host \(host):\(port))"
        }
        return nil
    }

    private static func allowance(_ text: String) throws -> Allowance {
        var host = text, port: Int?
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {  // [v6] or [v6]:port
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.hasPrefix(":") { port = Int(rest.dropFirst()); if port == nil { throw bad(text) } }
        } else if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon {
            host = String(text[..<colon])
            guard let p = Int(text[text.index(after: colon)...]) else { throw bad(text) }
            port = p
        }
        if let port, !(1...65535).contains(port) { throw bad(text) }
        let addresses = Set(resolve(host).map(normalize))
        guard !host.isEmpty, !addresses.isEmpty else {
            throw ServiceError.configuration("--allow-host \(text): \(host) does not resolve")
        }
        return Allowance(addresses: addresses, port: port)
    }

    private static func bad(_ text: String) -> ServiceError {
        .configuration("--allow-host needs HOST, HOST:PORT or [IPv6]:PORT, got '\(text)'")
    }

    /// The numeric addresses `host` resolves to (itself when it is an address).
    static func resolve(_ host: String) -> [String] {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 { return [host] }  // no lookup needed
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0 else { return [] }
        defer { freeaddrinfo(result) }
        var addresses: [String] = []
        var node = result
        while let current = node {
            if let address = current.pointee.ai_addr {
                var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                if getnameinfo(
                    address, current.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0
                {
                    addresses.append(
                        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                }
            }
            node = current.pointee.ai_next
        }
        return addresses
    }

    /// An IPv4-mapped IPv6 address is its IPv4 address.
    static func normalize(_ ip: String) -> String {
        let lower = ip.lowercased()
        if lower.hasPrefix("::ffff:"), lower.dropFirst(7).contains(".") { return String(lower.dropFirst(7)) }
        return lower
    }

    /// Loopback, private, shared (CGNAT), link-local, unique-local, multicast, reserved or unspecified.
    static func isInternal(_ ip: String) -> Bool {
        let address = normalize(ip)
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            let a = UInt32(bigEndian: v4.s_addr)
            func within(_ base: UInt32, _ bits: UInt32) -> Bool { bits == 0 || a >> (32 - bits) == base >> (32 - bits) }
            return within(0x0000_0000, 8) || within(0x0A00_0000, 8) || within(0x7F00_0000, 8) || within(0x6440_0000, 10)
                || within(0xA9FE_0000, 16) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16)
                || within(0xC000_0000, 24)
                || within(0xE000_0000, 4) || within(0xF000_0000, 4)
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return true }  // not an address: refuse
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes.allSatisfy({ $0 == 0 }) { return true }  // ::
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }  // ::1
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return true }  // fe80::/10
        if bytes[0] & 0xFE == 0xFC { return true }  // fc00::/7
        if bytes[0] == 0xFF { return true }  // multicast
        if bytes[0..<12] == [0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] {  // NAT64: the IPv4 inside
            return isInternal(bytes[12..<16].map(String.init).joined(separator: "."))
        }
        return false
    }
}
