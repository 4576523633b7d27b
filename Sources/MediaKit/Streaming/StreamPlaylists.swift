import Foundation
import MediaSource

/// Fetches HLS playlists through the session (so they are cached like any byte, and offline jobs
/// read them from the cache) and makes the sources of their segments.
struct StreamPlaylists {
    let session: MediaSession
    /// Every source opened, to report what the job cost.
    private(set) var sources: [any MediaSource] = []
    /// The Representations of the DASH manifests loaded, by the URI their variant or rendition has.
    private var representation: [String: DASHManifest.Media] = [:]
    /// "dash" once a DASH manifest was loaded, else "hls".
    private(set) var format = "hls"

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
        let location = StreamPlaylists.location(of: source, input: url)
        if StreamingManifest.kind(ofText: text) == StreamingManifest.dash {
            let (master, representations) = try DASHManifest.parse(text, url: location)
            representations.forEach { representation[$0] = $1 }
            format = "dash"
            return .master(master)
        }
        return try HLSPlaylist.parse(text, url: location)
    }

    /// A media playlist, as a variant or rendition URI names it (a DASH Representation's: the
    /// segments its manifest lists, or its `sidx` says).
    mutating func loadMedia(_ url: String) throws -> HLSMedia {
        switch representation[url] {
        case .listed(let media)?: return media
        case .indexed(let file)?: return try segments(indexedBy: file)
        case nil: break
        }
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

    /// The segments of a one-file Representation, from its `sidx`: each reference a byte range of
    /// the file, after the initialization range. The index comes with the initialization in one
    /// request when they are adjacent (as packagers write them).
    private mutating func segments(indexedBy file: DASHManifest.IndexedFile) throws -> HLSMedia {
        let source = try session.open(file.url)
        sources.append(source)
        let head = file.initialization.map { min($0.lowerBound, file.index.lowerBound)..<max($0.upperBound, file.index.upperBound) }
        try source.prefetch(head.map { $0.count <= 4 * file.index.count + (1 << 20) ? $0 : file.index } ?? file.index)
        func malformed(_ detail: String) -> MediaError { .malformedPlaylist(input: file.url, detail: "its sidx " + detail) }
        guard file.index.count <= HLSPlaylist.maximumSize else { throw malformed("is larger than an index is") }
        let bytes = try source.bytes(at: file.index.lowerBound, count: file.index.count)
        var fields = FieldReader(bytes)
        guard let size = fields.u32(), fields.skip(4), Array(bytes.dropFirst(4).prefix(4)) == Array("sidx".utf8),
              let (version, _) = fields.versionAndFlags(), fields.skip(4), let timescale = fields.u32(), timescale > 0,
              let earliest = fields.uint(version == 0 ? 4 : 8), let first = fields.uint(version == 0 ? 4 : 8), fields.skip(2),
              let count = fields.uint(2), earliest < UInt64(Int64.max / 4), first < UInt64(Int64.max / 4) else {
            throw malformed("at \(file.index.lowerBound) is not a segment index box")
        }
        var media = HLSMedia()
        var offset = file.index.lowerBound + Int64(size) + Int64(first)
        var time = 0.0
        for _ in 0..<count {
            guard let reference = fields.u32(), let duration = fields.u32(), fields.skip(4) else { throw malformed("is cut short") }
            guard reference & 0x8000_0000 == 0 else { throw malformed("points at other indexes, which mprobe does not follow") }
            let length = Int64(reference & 0x7FFF_FFFF)
            let seconds = Double(duration) / Double(timescale)
            media.segments.append(HLSSegment(uri: file.url, start: time, duration: seconds, byteRange: offset..<offset + length,
                                             initSection: file.initialization.map { HLSInitSection(uri: file.url, byteRange: $0) },
                                             encrypted: false))
            (offset, time) = (offset + length, time + seconds)
        }
        media.ended = !file.live
        media.playlistType = file.live ? nil : "VOD"
        media.targetDuration = media.segments.map(\.duration).max()
        return media
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
