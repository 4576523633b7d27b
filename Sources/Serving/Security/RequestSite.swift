import Foundation

/// Where a request comes from, as a browser declares it. Any page the user has open can make the
/// browser send requests to a loopback service — forms, `fetch(..., {mode: "no-cors"})`,
/// `sendBeacon`, `<img>`, `<script>`, `<video>` — and although it cannot read the answers, the
/// requests still act. Browsers say where a request comes from in `Sec-Fetch-Site` (sent to
/// loopback and https origins), `Origin` (on every POST, and on CORS requests) and `Referer`
/// (unless the page turns it off); a client that is not a browser (curl, players, scripts) sends
/// none of them.
enum RequestSite: Equatable {
    /// No browser markers: a program, not a page.
    case noBrowser
    /// A page of the service's own origin.
    case sameOrigin
    /// A navigation the browser says the user began (`Sec-Fetch-Site: none`: a typed address, a
    /// bookmark). The user began it, not necessarily here: a page the user opened can redirect
    /// such a navigation to the service, again and again (`history.back()`), and it stays `none`.
    /// So it reads, but does not make the service fetch anything.
    case userNavigation
    /// A page of another origin: `origin` as the request names it (from `Origin`, else the origin
    /// of `Referer`), nil when it names none (a page that sends no referrer).
    case otherOrigin(String?)

    /// `headers` (names lowercased) of a request whose `Host` has been checked already.
    init(headers: HTTPHeaders) {
        let origin = headers["origin"]
        let host = headers["host"]
        let referrer = headers["referer"].flatMap(RequestSite.origin(of:))
        switch headers["sec-fetch-site"]?.lowercased() {
        case "same-origin"?:
            // A page cannot forge Sec-Fetch-Site; an Origin beside it must agree all the same.
            self = origin.map { RequestSite.isOwn($0, host: host) ? .sameOrigin : .otherOrigin($0) } ?? .sameOrigin
        case "none"?:
            self = .userNavigation
        case .some:
            // same-site (another port of this host, another subdomain) and cross-site alike.
            self = .otherOrigin(origin ?? referrer)
        case nil:
            // A browser that sends no Sec-Fetch-Site (to a plain-http name that is not loopback,
            // or an old one): its Origin, else its Referer, says where the page is.
            if let origin {
                self = RequestSite.isOwn(origin, host: host) ? .sameOrigin : .otherOrigin(origin)
            } else if let referrer {
                self = RequestSite.isOwn(referrer, host: host) ? .sameOrigin : .otherOrigin(referrer)
            } else {
                self = .noBrowser
            }
        }
    }

    /// Whether `origin` (`scheme://host[:port]`, nothing more) is the service's own: http or https
    /// (a TLS front) to the very `Host` the request was sent to, a port left out meaning the
    /// origin scheme's default. `null` (a sandboxed frame, a file) is not.
    static func isOwn(_ origin: String, host: String?) -> Bool {
        guard let host = host.flatMap(HostCheck.parse), let components = URLComponents(string: origin),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let name = components.host, !name.isEmpty, components.path.isEmpty || components.path == "/",
            components.user == nil, components.password == nil, components.query == nil, components.fragment == nil
        else { return false }
        let defaultPort = scheme == "https" ? 443 : 80
        return HostCheck.normalized(name) == host.host && (components.port ?? defaultPort) == (host.port ?? defaultPort)
    }

    /// `scheme://host[:port]` of an http(s) URL as a browser writes an origin: lowercased, the
    /// scheme's default port left out.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return nil }
        let port = components.port.flatMap { $0 == (scheme == "https" ? 443 : 80) ? nil : $0 }
        return scheme + "://" + host.lowercased() + (port.map { ":\($0)" } ?? "")
    }
}
