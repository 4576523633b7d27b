import Foundation

/// The names the service answers to, against DNS rebinding: a page on `evil.example` whose name
/// the attacker re-points at 127.0.0.1 reaches the service with `Host: evil.example`, and only
/// that header tells such a request apart from one the user made. Answered are the listen address
/// as an IP literal (any IP literal when listening on all addresses: a page's origin is then that
/// address, which no attacker controls), `localhost`, and the names given with `--public-host`;
/// each with the port the service listens on or none; a public name given without a port stands
/// for any (a front such as nginx on 443 sends its own). Everything else is 421.
struct HostCheck: Sendable {
    /// One `--public-host NAME[:PORT]`; `port` nil for any.
    struct Name: Sendable, Equatable {
        let host: String
        let port: Int?
    }

    private let listenHost: String
    private let listenPort: Int
    private let publicHosts: [Name]
    /// The last `Host` header admitted: players send the same one on every request, so it is
    /// answered without parsing it again.
    private var lastAdmitted: String?

    /// `publicHosts` are `NAME`, `NAME:PORT` or `[v6]:PORT`; a malformed one is a configuration error.
    init(listenHost: String, port: Int, publicHosts: [String]) throws {
        self.listenHost = HostCheck.normalized(listenHost)
        listenPort = port
        self.publicHosts = try publicHosts.map { text in
            guard let name = HostCheck.parse(text), !name.host.isEmpty,
                name.port.map({ (1...65535).contains($0) }) ?? true
            else {
                throw ServiceError.configuration(
                    "--public-host needs NAME or NAME:PORT (e.g. media.example.com:443), got '\(text)'")
            }
            return name
        }
    }

    /// Whether a request with this `Host` header is answered. A request without one is HTTP/1.0
    /// (the server refuses HTTP/1.1 without it), which no browser sends.
    mutating func admits(_ header: String?) -> Bool {
        guard let header else { return true }
        if header == lastAdmitted { return true }
        guard isAdmitted(header) else { return false }
        lastAdmitted = header
        return true
    }

    private func isAdmitted(_ header: String) -> Bool {
        guard let name = HostCheck.parse(header) else { return false }
        if publicHosts.contains(where: { $0.host == name.host && ($0.port == nil || $0.port == name.port) }) {
            return true
        }
        // An attacker's page brings its own name whatever the port; a port that is given must be ours.
        if let port = name.port, port != listenPort { return false }
        let wildcard = listenHost == "0.0.0.0" || listenHost == "::"
        if name.host == "localhost" { return wildcard || HostCheck.isLoopback(listenHost) || listenHost == "localhost" }
        if HostCheck.isIPLiteral(name.host) { return wildcard || name.host == listenHost }
        return name.host == listenHost
    }

    /// `host[:port]` or `[v6][:port]`, lowercased; nil for anything else (a second colon outside
    /// brackets, a port that is not 1-5 digits, characters no host name has).
    static func parse(_ text: String) -> Name? {
        let text = text.lowercased()
        var host = text, portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
            guard isIPLiteral(host), host.contains(":") else { return nil }
        } else {
            let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count <= 2 else { return nil }
            host = String(pieces[0])
            if pieces.count == 2 { portText = pieces[1] }
            let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-_")
            guard !host.isEmpty, host.allSatisfy({ allowed.contains($0) }) else { return nil }
        }
        var port: Int?
        if let portText {
            guard (1...5).contains(portText.count), portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let p = Int(portText)
            else { return nil }
            port = p
        }
        return Name(host: host, port: port)
    }

    static func normalized(_ host: String) -> String {
        host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    }

    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "::1" || (host.hasPrefix("127.") && isIPLiteral(host))
    }
}
