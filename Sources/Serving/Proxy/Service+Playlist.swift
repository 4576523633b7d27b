import ByteSources
import Containers
import Foundation
import MediaKit
import RangeFetch
import Support

/// HLS playlists and DASH manifests through `/v1/stream`: served rewritten so that every URI in
/// them points back at the proxy (`/v1/stream/NAME?url=URL`), so a player fetches every playlist, initialization section, key and segment through
/// the cache (and, after a prefetch, with the origin gone).
extension Service {
    /// An HLS playlist or a DASH manifest (`StreamingManifest.hls` or `.dash`), by its type, its
    /// name or (when the player reads it from its start) its first bytes; nil for anything else.
    func manifestKind(_ request: HTTPRequest, url: String, source: RemoteSource, size: Int64) throws -> String? {
        if let kind = declaredManifestKind(url: url, source: source) { return kind }
        guard Service.readsToTellManifest(request, size: size) else { return nil }
        return StreamingManifest.kind(
            ofText: String(decoding: try Service.read(source, count: Int(min(size, 1024))), as: UTF8.self))
    }

    /// Whether `manifestKind` takes the resource for a playlist or must read it to tell: both
    /// wait (on the origin, a rewrite), so the event loop hands such requests to a worker.
    func mayBeManifest(_ request: HTTPRequest, url: String, source: RemoteSource, size: Int64) -> Bool {
        declaredManifestKind(url: url, source: source) != nil || Service.readsToTellManifest(request, size: size)
    }

    /// The kind the origin's type or the URL's name says, remembered (every request of a player asks).
    private func declaredManifestKind(url: String, source: RemoteSource) -> String? {
        let type = source.contentType ?? ""
        return declaredKinds.value(for: type + "\n" + url) { _ in Service.declaredManifestKind(url: url, type: type) }
    }

    static func declaredManifestKind(url: String, type: String) -> String? {
        let type = type.lowercased()
        let beforeQuery = url.prefix { $0 != "?" && $0 != "#" }
        let path = (beforeQuery.contains("%") ? beforeQuery.removingPercentEncoding ?? "" : String(beforeQuery))
            .lowercased()
        if type.contains("mpegurl") || path.hasSuffix(".m3u8") || path.hasSuffix(".m3u") {
            return StreamingManifest.hls
        }
        if type.contains("dash+xml") || path.hasSuffix(".mpd") { return StreamingManifest.dash }
        return nil
    }

    /// A resource small enough to be a playlist, read from its start: its first bytes tell.
    private static func readsToTellManifest(_ request: HTTPRequest, size: Int64) -> Bool {
        size >= 7 && size <= HLSRewriter.maximumSize && (RangeHeader.firstByte(request.headers["range"]) ?? 0) == 0
    }

    /// The playlist, whole (a `Range` is not honoured: playlists are small and rewritten), with its
    /// URIs routed through the proxy. A media playlist that may still grow (live) is fetched
    /// again each time, not served from the cache, and marked not to be cached downstream.
    func playlist(
        _ request: HTTPRequest, url: String, kind: String, source: RemoteSource, size: Int64,
        token: Cancellation
    ) throws -> HTTPResponse {
        guard size <= HLSRewriter.maximumSize else {
            throw APIError(
                status: 502, code: "origin_error", message: "\(source.input) is \(size) bytes, more than a playlist is")
        }
        guard playlists.add(1, ordering: .relaxed).newValue <= config.limits.maxConcurrentPlaylists else {
            playlists.subtract(1, ordering: .relaxed)
            throw APIError.unavailable(
                "\(config.limits.maxConcurrentPlaylists) playlists are being rewritten already; try again shortly")
        }
        defer { playlists.subtract(1, ordering: .relaxed) }
        var text = String(decoding: try Service.read(source, count: Int(size)), as: UTF8.self)
        var base = source.location
        let dash = kind == StreamingManifest.dash
        let live = dash ? DASHRewriter.isLive(text) : HLSRewriter.isLive(text)
        if live { (text, base) = try freshPlaylist(url, token: token) }
        let accessToken = request.query["token"]
        let route = { (absolute: String) -> String in
            // Named as the origin's file: players (ffmpeg's hls demuxer) judge a segment by its
            // extension. Its last 64 characters at most: the URL is in the query already.
            let file =
                URL(string: absolute)?.lastPathComponent ?? absolute.split(separator: "?")[0].split(separator: "/").last
                .map(String.init) ?? ""
            let name = String(file.suffix(64))
            var routed =
                "/v1/stream/" + Service.queryValue(name.isEmpty || name == "/" ? "resource" : name)
                + "?url=" + Service.queryValue(absolute)
            if let accessToken { routed += "&token=" + Service.queryValue(accessToken) }
            return routed
        }
        let rewritten: String
        do {
            rewritten =
                dash
                ? try DASHRewriter.rewrite(text, base: base, route: route)
                : try HLSRewriter.rewrite(text, base: base, route: route)
        } catch let error as MediaError {
            throw APIError(status: 502, code: "origin_error", message: error.description)
        }
        let stated = source.contentType ?? (dash ? "application/dash+xml" : "application/vnd.apple.mpegurl")
        var headers: [(String, String)] = [
            ("Content-Type", Service.mediaType(stated)),
            ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", "sandbox; default-src 'none'"),
        ]
        if live { headers.append(("Cache-Control", "no-cache")) }
        return HTTPResponse(status: 200, headers: headers, body: .bytes(Array(rewritten.utf8)))
    }

    /// A live playlist as the origin has it now (and the URL that answered, after redirects).
    private func freshPlaylist(_ url: String, token: Cancellation) throws -> (String, String) {
        var tally = FetchCounters()
        var bytes: [UInt8] = []
        var location = url
        _ = try session.fetcher.fetch(
            url: url, range: 0..<HLSRewriter.maximumSize, cancellation: token, tally: &tally,
            onResponse: { location = $0.effectiveURL }
        ) { _, chunk in
            guard bytes.count + chunk.count <= Int(HLSRewriter.maximumSize) else {
                throw APIError(status: 502, code: "origin_error", message: "\(url) is larger than a playlist is")
            }
            bytes.append(contentsOf: chunk)
        }
        return (String(decoding: bytes, as: UTF8.self), location)
    }

    /// The first `count` bytes of `source`.
    private static func read(_ source: RemoteSource, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = try bytes.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[done...]), at: Int64(done))
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[..<done])
    }

    /// `value` escaped for a query string (everything but unreserved characters).
    static func queryValue(_ value: String) -> String {
        value.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(
                charactersIn:
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? value
    }
}
