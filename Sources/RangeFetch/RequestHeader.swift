import Foundation
import URLSupport

/// A header the user asked to send to origins (`-H 'Name: value'`, a header file, the config
/// file), optionally only to hosts matching a pattern (`*.example.com`). Its value is a secret as
/// far as mprobe is concerned: it is sent, never shown or stored.
public struct RequestHeader: Sendable, Equatable {
    public let name: String
    public let value: String
    /// `HostPattern` of the hosts it goes to; nil for every origin.
    public let hostPattern: String?

    /// Headers mprobe sets itself: a user's would break closed ranges and version checks.
    static let reserved: Set<String> = [
        "range", "if-range", "accept-encoding", "content-length", "transfer-encoding", "connection",
    ]

    /// Parses `Name: value`; throws a sentence naming the problem.
    public init(parsing line: String, hostPattern: String? = nil) throws {
        guard let colon = line.firstIndex(of: ":") else {
            // Without a colon there is no telling the name from a secret value: show neither.
            throw InvalidRequestHeader(line: "(a header without ':')", problem: "it needs the form 'Name: value'")
        }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces)
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard !name.isEmpty, name.allSatisfy({ tokenCharacters.contains($0) }) else {
            throw InvalidRequestHeader(
                line: name, problem: "the name must be a token (letters, digits, - and the like)")
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
            throw InvalidRequestHeader(line: name, problem: "the value holds a control character")
        }
        guard !RequestHeader.reserved.contains(name.lowercased()) else {
            throw InvalidRequestHeader(line: name, problem: "mprobe sets \(name) itself")
        }
        self.name = name
        self.value = value
        self.hostPattern = hostPattern
    }

    /// Whether it goes to `url`.
    func applies(to url: String) -> Bool {
        guard let hostPattern else { return true }
        return URLText.host(of: url).map { HostPattern.matches(hostPattern, host: $0) } ?? false
    }

    /// Headers that carry credentials: an unscoped one stays with the host it was given for.
    var isCredential: Bool { ["authorization", "cookie", "proxy-authorization"].contains(name.lowercased()) }

    /// Which of `headers` go to `url`, a hop of a redirect chain that began at `first` and whose
    /// previous hop carried `previous` (nil for the first request).
    /// - A header for a host pattern goes where its pattern matches; after a redirect also to a
    ///   host `trustedHosts` names, if the hop before carried it. Never anywhere else: an origin
    ///   cannot send an operator's credential on to a host of its choosing.
    /// - An unscoped header goes everywhere, but credentials only to `first`'s host and port
    ///   (unless `locationTrusted`), as curl does.
    static func forHop(
        _ url: String, first: String, previous: [RequestHeader]?, of headers: [RequestHeader],
        locationTrusted: Bool, trustedHosts: [String]
    ) -> [RequestHeader] {
        guard let previous else { return headers.filter { $0.applies(to: url) } }
        let host = URLText.host(of: url) ?? ""
        let sameHost = host == URLText.host(of: first)
        let trusted = trustedHosts.contains { HostPattern.matches($0, host: host) }
        return headers.filter { header in
            if header.hostPattern != nil { return header.applies(to: url) || (trusted && previous.contains(header)) }
            return !header.isCredential || sameHost || locationTrusted
        }
    }

    var line: String { "\(name): \(value)" }
}

/// A request header that cannot be sent.
public struct InvalidRequestHeader: Error, Equatable, CustomStringConvertible {
    public let line: String
    public let problem: String
    /// Only the name is shown: the value may be a secret.
    public var description: String { "cannot send header \(line): \(problem)" }
}
