import Foundation
import MediaSource

/// Fetches HLS playlists through the session (so they are cached like any byte, and offline jobs
/// read them from the cache) and makes the sources of their segments.
struct StreamPlaylists {
    let session: MediaSession
    /// Every source opened, to report what the job cost.
    private(set) var sources: [any MediaSource] = []

    /// `opened`: a source the caller has read already, counted with the rest.
    init(session: MediaSession, opened: (any MediaSource)? = nil) {
        self.session = session
        sources = opened.map { [$0] } ?? []
    }

    /// The most of a segment or an initialization section fetched in one request when the playlist
    /// does not give its length: segments are seconds of media, a few megabytes.
    static let wholePartLimit: Int64 = 64 << 20

    /// The playlist at `url`, parsed with its URIs made absolute against where it was served from.
    mutating func load(_ url: String) throws -> HLSPlaylist {
        let source = try session.open(url)
        sources.append(source)
        // One request for the whole playlist; its size is known after it.
        try source.prefetch(0..<HLSPlaylist.maximumSize)
        guard let size = try source.size() else {
            throw MediaError.malformedPlaylist(input: url, detail: "the server did not say its size")
        }
        guard size <= HLSPlaylist.maximumSize else {
            throw MediaError.malformedPlaylist(input: url, detail: "\(size) bytes, more than a playlist is (\(HLSPlaylist.maximumSize))")
        }
        let text = String(decoding: try source.bytes(at: 0, count: Int(size)), as: UTF8.self)
        return try HLSPlaylist.parse(text, url: StreamPlaylists.location(of: source, input: url))
    }

    /// A media playlist, as a variant or rendition URI names it.
    mutating func loadMedia(_ url: String) throws -> HLSMedia {
        guard case .media(let media) = try load(url) else {
            throw MediaError.malformedPlaylist(input: url, detail: "a variant's playlist lists variants itself")
        }
        return media
    }

    /// The bytes a demuxer opens for `segment`: its initialization section (if any) and the
    /// segment, each fetched in one request.
    mutating func source(of segment: HLSSegment) throws -> SpanSource {
        var pieces: [(source: any MediaSource, range: Range<Int64>?)] = []
        if let map = segment.initSection { pieces.append(try part(map.uri, range: map.byteRange)) }
        pieces.append(try part(segment.uri, range: segment.byteRange))
        return try SpanSource(input: segment.uri, pieces: pieces)
    }

    /// A segment opened for demuxing. A segment that is itself a playlist (one that names itself,
    /// or a variant's playlist where a segment belongs) is the playlist's fault, said so.
    static func open(_ span: SpanSource, session: MediaSession, findStreamInfo: Bool,
                     fragments: FormatContext.Fragments = .every) throws -> OpenedInput {
        do {
            return try OpenedInput(source: span, session: session, findStreamInfo: findStreamInfo, fragments: fragments)
        } catch MediaError.streamingManifest(_, let kind) {
            throw MediaError.malformedPlaylist(input: span.input, detail: "a segment that is \(kind) itself, not media")
        }
    }

    private mutating func part(_ uri: String, range: Range<Int64>?) throws -> (source: any MediaSource, range: Range<Int64>?) {
        let source = try session.open(uri)
        sources.append(source)
        try source.prefetch(range ?? 0..<StreamPlaylists.wholePartLimit)
        if range == nil, let size = try source.size(), size > StreamPlaylists.wholePartLimit {
            throw MediaError.malformedPlaylist(input: uri, detail: "a segment of \(size) bytes, more than a segment is "
                                               + "(\(StreamPlaylists.wholePartLimit))")
        }
        return (source, range)
    }

    /// Sources the job opened itself, to count with the rest.
    mutating func add(_ more: [any MediaSource]) { sources += more }

    /// What the job cost: every source's counters, once each.
    var counters: SourceCounters {
        sources.reduce(into: SourceCounters()) { sum, source in
            let c = source.counters
            sum.requests += c.requests
            sum.connections += c.connections
            sum.bytesFetched += c.bytesFetched
            sum.bytesFromCache += c.bytesFromCache
        }
    }

    /// Where relative URIs in the resource point from: the URL that answered (after redirects), or
    /// the absolute file URL of a local path.
    static func location(of source: any MediaSource, input: String) -> String {
        if let remote = source as? RemoteSource { return remote.location }
        if input.hasPrefix("file:") { return input }
        return URL(fileURLWithPath: input).standardizedFileURL.absoluteString
    }
}
