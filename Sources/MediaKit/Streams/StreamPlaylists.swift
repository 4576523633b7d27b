import ByteSources
import Containers
import FFmpeg
import Foundation

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

    /// The largest whole segment or initialization section (one the playlist gives no byte range
    /// of): segments are seconds of media, a few megabytes.
    static let wholePartLimit: Int64 = 64 << 20
    /// An initialization range at most this much larger than the index comes in the index's request.
    static let nearInitialization: Int64 = 1 << 20

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
            throw MediaError.malformedPlaylist(
                input: url, detail: "\(size) bytes, more than a playlist is (\(HLSPlaylist.maximumSize))")
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

    /// The most variants and renditions a master may list: real ones list a few dozen.
    static let maximumEntries = 256

    /// Fetches the playlists `uris` name in parallel, so that loading them one by one afterwards
    /// costs no round trips (a master's variants are otherwise a round trip each).
    mutating func prefetchPlaylists(_ uris: [String], connections: Int = 8) throws {
        var pieces: [Prefetcher.Piece] = []
        for uri in Set(uris).sorted() where representation[uri] == nil {
            let source = try session.open(uri)
            sources.append(source)
            pieces.append(Prefetcher.Piece(source: source, range: 0..<HLSPlaylist.maximumSize))
        }
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        try prefetcher.fetch(pieces, cancellation: session.cancellation)
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

    /// Segments read in a row as one file, as a demuxer reads them: the first one's
    /// initialization section (if any), then each segment or its byte range, each part from a
    /// source of its own (counted with the job's). `checkingMedia`: each segment must start as
    /// media does (`checkIsMedia`), so an error page served with 200 is named, not demuxed.
    mutating func span(_ segments: [HLSSegment], input: String, checkingMedia: Bool = false) throws -> SpanSource {
        var pieces: [(source: any MediaSource, range: Range<Int64>?)] = []
        if let map = segments.first?.initSection { pieces.append((try session.open(map.uri), map.byteRange)) }
        for segment in segments { pieces.append((try session.open(segment.uri), segment.byteRange)) }
        // Made first: it fetches each part of unknown size exactly, so the check below reads what is here.
        // Named as shown: what is made of it (a probe of the first segment) is output.
        let span = try SpanSource(input: session.shown(input), pieces: pieces)
        sources += span.parts.map(\.source)
        if checkingMedia {
            for part in span.parts.suffix(segments.count) {
                try StreamPlaylists.checkIsMedia(part.source, range: part.range)
            }
        }
        return span
    }

    /// The bytes a demuxer opens for `segment`, fetched at once: each part in one request.
    mutating func source(of segment: HLSSegment) throws -> SpanSource {
        let span = try self.span([segment], input: segment.uri)
        try span.prefetch(0..<(try span.size() ?? 0))
        return span
    }

    /// The segments of a one-file Representation, from its `sidx`: each reference a byte range of
    /// the file, after the initialization range. The index comes with the initialization in one
    /// request when they are adjacent (as packagers write them).
    private mutating func segments(indexedBy file: DASHManifest.IndexedFile) throws -> HLSMedia {
        func malformed(_ detail: String) -> MediaError {
            .malformedPlaylist(input: file.url, detail: "its sidx " + detail)
        }
        guard file.index.count <= HLSPlaylist.maximumSize else { throw malformed("is larger than an index is") }
        let source = try session.open(file.url)
        sources.append(source)
        // The initialization range too when it is near (they are adjacent as packagers write them).
        let head = file.initialization.map {
            min($0.lowerBound, file.index.lowerBound)..<max($0.upperBound, file.index.upperBound)
        }
        try source.prefetch(
            head.map { $0.count <= Int64(file.index.count) + StreamPlaylists.nearInitialization ? $0 : file.index }
                ?? file.index)
        _ = try SpanSource.bytes(of: source, range: file.index)
        let bytes = try source.bytes(at: file.index.lowerBound, count: file.index.count)
        var fields = FieldReader(bytes)
        guard let size = fields.u32(), fields.skip(4), Array(bytes.dropFirst(4).prefix(4)) == Array("sidx".utf8),
            let (version, _) = fields.versionAndFlags(), fields.skip(4), let timescale = fields.u32(), timescale > 0,
            let earliest = fields.uint(version == 0 ? 4 : 8), let first = fields.uint(version == 0 ? 4 : 8),
            fields.skip(2),
            let count = fields.uint(2), earliest < UInt64(Int64.max / 4), first < UInt64(Int64.max / 4)
        else {
            throw malformed("at \(file.index.lowerBound) is not a segment index box")
        }
        var media = HLSMedia()
        var offset = file.index.lowerBound + Int64(size) + Int64(first)
        var time = 0.0
        for _ in 0..<count {
            guard let reference = fields.u32(), let duration = fields.u32(), fields.skip(4) else {
                throw malformed("is cut short")
            }
            guard reference & 0x8000_0000 == 0 else {
                throw malformed("points at other indexes, which mprobe does not follow")
            }
            let length = Int64(reference & 0x7FFF_FFFF)
            let seconds = Double(duration) / Double(timescale)
            media.segments.append(
                HLSSegment(
                    uri: file.url, start: time, duration: seconds, byteRange: offset..<offset + length,
                    initSection: file.initialization.map { HLSInitSection(uri: file.url, byteRange: $0) },
                    encrypted: false))
            (offset, time) = (offset + length, time + seconds)
        }
        media.ended = !file.live
        media.playlistType = file.live ? nil : "VOD"
        media.targetDuration = media.segments.map(\.duration).max()
        return media
    }

    /// Throws when the first bytes of a segment (or of its byte range) are no media container a
    /// segment is made of: MPEG-TS, ISO-BMFF boxes, ADTS or MP3 audio (after an ID3 tag or not),
    /// WebVTT, WebM. An HTML error page answered with 200 stops here, named.
    static func checkIsMedia(_ source: any MediaSource, range: Range<Int64>?) throws {
        let start = range?.lowerBound ?? 0
        let head = try source.bytes(at: start, count: 12)
        guard !StreamPlaylists.isMedia(head) else { return }
        if let kind = StreamingManifest.kind(ofText: String(decoding: head, as: UTF8.self)) {
            throw MediaError.malformedPlaylist(
                input: source.input, detail: "a segment that is \(kind) itself, not media")
        }
        let shown = String(decoding: head.map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
        throw MediaError.malformedPlaylist(
            input: source.input, detail: "a segment that is not media (it starts with \"\(shown)\")")
    }

    static func isMedia(_ b: [UInt8]) -> Bool {
        guard b.count >= 4 else { return false }
        if b[0] == 0x47 { return true }  // MPEG-TS sync byte
        if b.starts(with: Array("ID3".utf8)) || b.starts(with: Array("WEBVTT".utf8)) { return true }
        if b[0] == 0xFF && b[1] & 0xE0 == 0xE0 { return true }  // ADTS / MPEG audio frame sync
        if b.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) { return true }  // EBML (WebM)
        guard b.count >= 8 else { return false }
        let boxes = [
            "ftyp", "styp", "moof", "moov", "sidx", "ssix", "emsg", "prft", "free", "skip", "mdat", "uuid", "wide",
        ]
        return boxes.contains(String(decoding: b[4..<8], as: UTF8.self))
    }

    /// A segment opened for demuxing. A segment that is itself a playlist (one that names itself,
    /// or a variant's playlist where a segment belongs) is the playlist's fault, said so.
    static func open(
        _ span: SpanSource, session: MediaSession, findStreamInfo: Bool,
        fragments: FormatContext.Fragments = .every
    ) throws -> OpenedInput {
        switch try OpenedInput.open(
            source: span, session: session, findStreamInfo: findStreamInfo, fragments: fragments)
        {
        case .media(let opened): return opened
        case .stream(_, let kind):
            throw MediaError.malformedPlaylist(input: span.input, detail: "a segment that is \(kind) itself, not media")
        }
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
