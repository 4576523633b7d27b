/// URL strings as mprobe shows and stores them: credentials never leave the request.
///
/// Works on the text of absolute `scheme://authority/...` URLs without normalising anything else,
/// so a shown URL is the given one minus its secrets.
public enum URLText {
    /// The URL as output, logs, error messages and the cache index show it when no rules are at
    /// hand: userinfo (`user:password@`) as `***@` (a user name alone can be a token, so it goes
    /// too), and the values of well-known signature parameters as `***` (`URLRules.shown`).
    public static func redacted(_ url: String) -> String {
        URLRules.standard.shown(url)
    }

    /// The URL with its userinfo replaced by `***`.
    static func hidingUserinfo(_ url: String) -> String {
        guard let userinfo = userinfoRange(url, forDisplay: true) else { return url }
        var shown = url
        shown.replaceSubrange(userinfo, with: "***")
        return shown
    }

    /// `host[:port]` of an absolute URL, lowercased, without userinfo.
    public static func host(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let start = url.index(colon, offsetBy: 3)
        let end = url[start...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? url.endIndex
        var authority = url[start..<end]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return authority.isEmpty ? nil : authority.lowercased()
    }

    /// The URL with each query parameter passed through `transform` (name and value as written,
    /// value nil for a bare `name`); nil drops the parameter. Order, the fragment and everything
    /// else stay as they are; a query left empty goes with its `?`.
    static func mapQuery(_ url: String, _ transform: (String, String?) -> (String, String?)?) -> String {
        guard let question = url.firstIndex(of: "?") else { return url }
        let fragmentStart = url[question...].firstIndex(of: "#") ?? url.endIndex
        let query = url[url.index(after: question)..<fragmentStart]
        let kept = query.split(separator: "&", omittingEmptySubsequences: false).compactMap { part -> String? in
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(pieces[0]), value = pieces.count > 1 ? String(pieces[1]) : nil
            guard let (newName, newValue) = transform(removingPercentEncoding(name), value) else { return nil }
            let written = newName == removingPercentEncoding(name) ? name : newName
            return newValue.map { written + "=" + $0 } ?? written
        }
        let head = url[..<question]
        let tail = url[fragmentStart...]
        return kept.isEmpty ? String(head + tail) : String(head) + "?" + kept.joined(separator: "&") + tail
    }

    /// `%XX` sequences decoded, for comparing parameter names; invalid ones are left as they are.
    private static func removingPercentEncoding(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            if utf8[i] == UInt8(ascii: "%"), let h = utf8.index(i, offsetBy: 1, limitedBy: utf8.endIndex),
                h < utf8.endIndex,
                let l = utf8.index(i, offsetBy: 2, limitedBy: utf8.endIndex), l < utf8.endIndex,
                let value = UInt8(String(decoding: [utf8[h], utf8[l]], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                i = utf8.index(after: l)
            } else {
                bytes.append(utf8[i])
                i = utf8.index(after: i)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The userinfo of an absolute URL (`user:password`), as written; nil when it has none.
    public static func userinfo(of url: String) -> String? {
        userinfoRange(url).map { String(url[$0]) }
    }

    /// The URL without its userinfo: the same resource for any credential, as the cache keys it.
    public static func withoutUserinfo(_ url: String) -> String {
        guard let userinfo = userinfoRange(url) else { return url }
        // Drop the "@" after the userinfo too.
        var bare = url
        bare.removeSubrange(userinfo.lowerBound...userinfo.upperBound)
        return bare
    }

    /// The userinfo of `scheme://userinfo@host...`, without the "@". The authority ends at the
    /// first "/", "?" or "#"; an "@" after that belongs to the path or query.
    static func userinfoRange(_ url: String, forDisplay: Bool = false) -> Range<String.Index>? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let authorityStart = url.index(colon, offsetBy: 3)
        let rest = url[authorityStart...]
        // For display, a `?` before the last `@` of the authority counts as part of a password
        // (`http://u:pa?ss@host`, which no parser accepts), so that it is hidden, not shown —
        // at the price of hiding the query of a URL that has no path and an `@` in its query.
        let authorityEnd =
            rest.firstIndex(where: { $0 == "/" || $0 == "#" || (!forDisplay && $0 == "?") }) ?? url.endIndex
        guard let at = url[authorityStart..<authorityEnd].lastIndex(of: "@") else { return nil }
        return authorityStart..<at
    }
}
