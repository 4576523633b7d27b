/// How the URLs of some origins are keyed and shown: which query parameters are secrets (signed
/// URLs change them on every signing), so that they are left out of cache keys and hidden
/// wherever a URL is shown. Rules can differ by host.
///
/// Content safety does not come from the key: the cache still checks ETag, Last-Modified and size,
/// so two signings of one object share an entry, and a changed object replaces its bytes.
public struct URLRules: Sendable, Equatable {
    /// Query parameter names, compared without case. A name ending in `*` is a prefix (`X-Amz-*`);
    /// `*` alone is the whole query.
    public struct QueryNames: Sendable, Equatable {
        public var names: [String]

        public init(_ names: [String] = []) { self.names = names }

        public func contains(_ name: String) -> Bool {
            let lower = name.lowercased()
            return names.contains { pattern in
                let p = pattern.lowercased()
                return p.hasSuffix("*") ? lower.hasPrefix(p.dropLast()) : lower == p
            }
        }

        public var isEmpty: Bool { names.isEmpty }
    }

    /// Names of the presets `--cache-key NAME` accepts, and what each leaves out of the key.
    public static let presets: [String: QueryNames] = [
        "s3": QueryNames(["X-Amz-*"]),
        "cloudfront": QueryNames(["Expires", "Signature", "Key-Pair-Id", "Policy"]),
        "gcs": QueryNames(["X-Goog-*"]),
    ]

    /// Parameters that are credentials wherever they appear: always hidden when a URL is shown
    /// (they stay in the key unless a rule leaves them out).
    public static let alwaysHidden = QueryNames([
        "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "X-Goog-Signature", "X-Goog-Credential",
        "Signature", "Policy", "Key-Pair-Id", "sig", "signature", "token", "access_token", "auth", "api_key", "apikey",
        // CDN tokens (Akamai, nginx secure_link, Wowza, ...).
        "__token__", "hdnts", "hdntl", "md5", "hmac", "wmsAuthSign", "jwt",
    ])

    /// Rules for every host, then overrides for host patterns (`*.example.com`, `cdn.example.com`),
    /// the last matching one winning.
    public var ignoredQuery: QueryNames
    public var hosts: [(pattern: String, ignoredQuery: QueryNames)]

    public init(ignoredQuery: QueryNames = QueryNames(), hosts: [(pattern: String, ignoredQuery: QueryNames)] = []) {
        self.ignoredQuery = ignoredQuery
        self.hosts = hosts
    }

    public static let standard = URLRules()

    public static func == (a: URLRules, b: URLRules) -> Bool {
        a.ignoredQuery == b.ignoredQuery && a.hosts.map(\.pattern) == b.hosts.map(\.pattern)
            && a.hosts.map(\.ignoredQuery) == b.hosts.map(\.ignoredQuery)
    }

    /// The names left out of the key of `url`.
    public func ignored(for url: String) -> QueryNames {
        guard let host = URLText.host(of: url) else { return ignoredQuery }
        return hosts.last { HostPattern.matches($0.pattern, host: host) }?.ignoredQuery ?? ignoredQuery
    }

    /// The cache key of `url`: no userinfo, none of the ignored query parameters, and the values of
    /// the always-hidden ones as digests (`sha256:...`): two signatures stay two entries, but no
    /// signature is stored.
    public func key(_ url: String) -> String {
        let ignored = ignored(for: url)
        return URLText.mapQuery(URLText.withoutUserinfo(url)) { name, value in
            if ignored.contains(name) { return nil }
            guard let value, URLRules.alwaysHidden.contains(name) else { return (name, value) }
            return (name, "sha256:" + SHA256.hex(value))
        }
    }

    /// `url` as output, logs and the cache index show it: userinfo as `***`, and the values of the
    /// ignored and always-hidden parameters as `***`.
    public func shown(_ url: String) -> String {
        let ignored = ignored(for: url)
        return URLText.mapQuery(URLText.hidingUserinfo(url)) { name, value in
            (name, value.map { ignored.contains(name) || URLRules.alwaysHidden.contains(name) ? "***" : $0 })
        }
    }
}

extension URLRules {
    /// `text` (an error, a warning) with every URL in it as `shown` makes it: a message built from
    /// a URL that was not shown first (a playlist's segment, a manifest's BaseURL) still hides its
    /// userinfo and signatures when it is printed, logged or stored. A URL runs from its scheme to
    /// the first space, quote, angle bracket or parenthesis.
    public func scrubbed(_ text: String) -> String {
        let ends: Set<Character> = [" ", "\t", "\n", "\r", "\"", "'", "<", ">", "(", ")"]
        var out = "", rest = Substring(text)
        func separator(in text: Substring) -> Range<Substring.Index>? {
            var i = text.startIndex
            while i < text.endIndex {
                if text[i...].hasPrefix("://") { return i..<text.index(i, offsetBy: 3) }
                i = text.index(after: i)
            }
            return nil
        }
        while let separator = separator(in: rest) {
            // The scheme: the letters, digits, + - . just before "://".
            var start = separator.lowerBound
            while start > rest.startIndex, let c = rest[rest.index(before: start)].unicodeScalars.first,
                c.properties.isAlphabetic || ("0"..."9").contains(Character(c)) || "+-.".unicodeScalars.contains(c)
            {
                start = rest.index(before: start)
            }
            let end = rest[separator.upperBound...].firstIndex(where: ends.contains) ?? rest.endIndex
            out += rest[..<start]
            out += start < separator.lowerBound ? shown(String(rest[start..<end])) : String(rest[start..<end])
            rest = rest[end...]
        }
        return out + rest
    }
}

/// Host patterns of rules and headers: `example.com` (that host), `*.example.com` (its subdomains
/// and itself), optionally with `:PORT`.
public enum HostPattern {
    /// Whether `host` (`name` or `name:port`, as `URLText.host` gives it) matches `pattern`:
    /// `name`, `*.name` (the name and every name below it), either with `:port` to match that
    /// port only.
    public static func matches(_ pattern: String, host: String) -> Bool {
        let (patternName, patternPort) = split(pattern.lowercased())
        let (name, port) = split(host.lowercased())
        if let patternPort, patternPort != port { return false }
        if patternName.hasPrefix("*.") {
            let parent = patternName.dropFirst(2)
            return name == parent || name.hasSuffix("." + parent)
        }
        return name == patternName
    }

    /// `name` and `port` of `name[:port]` or `[v6][:port]`.
    private static func split(_ authority: String) -> (Substring, Substring?) {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            let rest = authority[authority.index(after: close)...]
            return (authority[...close], rest.hasPrefix(":") ? rest.dropFirst() : nil)
        }
        guard let colon = authority.lastIndex(of: ":") else { return (authority[...], nil) }
        return (authority[..<colon], authority[authority.index(after: colon)...])
    }
}
