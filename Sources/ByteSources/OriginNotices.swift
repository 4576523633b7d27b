import Synchronization
import URLSupport

/// What a session has said about origins, so that a fact about an origin is said once however
/// many of its resources are read (a batch over one server, a service's thousands of requests):
/// added to the first resource's warnings, and told to `onNotice` (the service's log).
final class OriginNotices: Sendable {
    private let said = Mutex<Set<String>>([])
    private let onNotice: (@Sendable (String) -> Void)?

    init(onNotice: (@Sendable (String) -> Void)?) { self.onNotice = onNotice }

    /// `text` about the origin of `url`, if it has not been said for that origin (and `kind`)
    /// before: told to `onNotice` and returned, else nil.
    func note(_ kind: String, url: String, _ text: (String) -> String) -> String? {
        let origin = OriginNotices.origin(of: url)
        guard said.withLock({ $0.insert(kind + " " + origin).inserted }) else { return nil }
        let notice = text(origin)
        onNotice?(notice)
        return notice
    }

    /// `scheme://host[:port]` of a URL, without its userinfo.
    static func origin(of url: String) -> String {
        let scheme = url.split(separator: ":").first.map { $0.lowercased() } ?? "http"
        return scheme + "://" + (URLText.host(of: url) ?? "")
    }
}
