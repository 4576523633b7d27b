/// URL strings as mprobe shows and stores them: credentials never leave the request.
///
/// Works on the text of absolute `scheme://authority/...` URLs without normalising anything else,
/// so a shown URL is the given one minus its secrets.
public enum URLText {
    /// The URL with its userinfo (`user:password@`) replaced by `***@`: what output, logs, error
    /// messages and the cache index show. A user name alone can be a token, so it goes too.
    public static func redacted(_ url: String) -> String {
        guard let userinfo = userinfoRange(url) else { return url }
        var shown = url
        shown.replaceSubrange(userinfo, with: "***")
        return shown
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
    static func userinfoRange(_ url: String) -> Range<String.Index>? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let authorityStart = url.index(colon, offsetBy: 3)
        let rest = url[authorityStart...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? url.endIndex
        guard let at = url[authorityStart..<authorityEnd].lastIndex(of: "@") else { return nil }
        return authorityStart..<at
    }
}
