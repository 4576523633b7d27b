import ByteSources

/// Parts of other sources read as one file: an HLS segment that is a byte range of a larger file,
/// or a fragmented MP4 segment after its initialization section (`EXT-X-MAP`), which together
/// are what a demuxer opens. Each part keeps its own source (and its cache entry): nothing is
/// copied, and a part's readahead stops at its end, so reading a segment of a file never fetches
/// the next one.
final class SpanSource: MediaSource {
    struct Part {
        let source: any MediaSource
        /// The bytes of `source` this part is.
        let range: Range<Int64>
    }

    let input: String
    let parts: [Part]
    /// Where each part starts in the span.
    private let starts: [Int64]

    /// `pieces` with a nil range are their whole resource (its size is asked for). A range past
    /// the end of its resource is the playlist's fault, said before anything is read.
    init(input: String, pieces: [(source: any MediaSource, range: Range<Int64>?)]) throws {
        self.input = input
        var parts: [Part] = []
        var starts: [Int64] = [0]
        for piece in pieces {
            let range = try SpanSource.bytes(of: piece.source, range: piece.range)
            piece.source.limitReadahead(to: range.upperBound)
            parts.append(Part(source: piece.source, range: range))
            // Ranges are bounded by ResponseInfo.maxResourceSize (2^50): their sum cannot overflow.
            starts.append(starts[starts.count - 1] + Int64(range.count))
        }
        self.parts = parts
        self.starts = starts
    }

    /// The bytes `range` names in `source` (all of it for nil), checked against its size.
    static func bytes(of source: any MediaSource, range: Range<Int64>?) throws -> Range<Int64> {
        // A resource no response has told the size of yet: its part is fetched first, in one exact
        // request (the whole of a segment without a range, as a player would), which tells it —
        // rather than a readahead window that asks for more than the part.
        if let remote = source as? RemoteSource, remote.knownSize == nil {
            try source.prefetch(range ?? 0..<StreamPlaylists.wholePartLimit)
        }
        guard let size = try source.size() else {
            throw SourceError.inconsistentOrigin(
                input: source.input,
                detail: "the server did not say how long it is "
                    + "(no Content-Length or Content-Range), so a segment of it cannot be read whole")
        }
        guard let range else {
            guard size <= StreamPlaylists.wholePartLimit else {
                throw MediaError.malformedPlaylist(
                    input: source.input,
                    detail: "a segment of \(size) bytes, more than a segment is "
                        + "(\(StreamPlaylists.wholePartLimit))")
            }
            return 0..<size
        }
        guard range.upperBound <= size else {
            throw MediaError.malformedPlaylist(
                input: source.input,
                detail: "its byte range \(range.lowerBound)-\(range.upperBound - 1) "
                    + "lies past its end (\(size) bytes)")
        }
        return range
    }

    private var total: Int64 { starts.last ?? 0 }

    func size() throws -> Int64? { total }

    /// The part holding `offset` and where in its source that offset is.
    private func locate(_ offset: Int64) -> (part: Int, at: Int64)? {
        guard offset >= 0, offset < total, let index = starts.lastIndex(where: { $0 <= offset }), index < parts.count
        else { return nil }
        return (index, parts[index].range.lowerBound + offset - starts[index])
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard let (index, at) = locate(offset) else { return 0 }
        let part = parts[index]
        let count = min(buffer.count, Int(part.range.upperBound - at))
        let n = try part.source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), at: at)
        if n == 0 {
            throw SourceError.inconsistentOrigin(
                input: input,
                detail: "a part ends at byte \(at) of \(part.source.input), "
                    + "before the \(part.range.upperBound) the playlist states")
        }
        return n
    }

    /// `range` of the span, as ranges of each part's source.
    private func pieces(of range: Range<Int64>) -> [(source: any MediaSource, range: Range<Int64>, start: Int64)] {
        parts.indices.compactMap { i in
            let span = starts[i]..<starts[i + 1]
            let overlap = range.clamped(to: span)
            guard !overlap.isEmpty else { return nil }
            let shift = parts[i].range.lowerBound - span.lowerBound
            return (
                parts[i].source, overlap.lowerBound + shift..<overlap.upperBound + shift,
                span.lowerBound - parts[i].range.lowerBound
            )
        }
    }

    func prefetch(_ range: Range<Int64>) throws {
        for piece in pieces(of: range) { try piece.source.prefetch(piece.range) }
    }

    func missingRanges(in range: Range<Int64>) -> [Range<Int64>] {
        pieces(of: range).flatMap { piece in
            piece.source.missingRanges(in: piece.range).map {
                $0.lowerBound + piece.start..<$0.upperBound + piece.start
            }
        }
    }

    /// Each part's own readahead already stops at its end.
    func limitReadahead(to end: Int64?) {}

    func makeDurable() throws {
        for part in parts { try part.source.makeDurable() }
    }

    var counters: SourceCounters {
        var seen: [ObjectIdentifier] = []
        return parts.reduce(into: SourceCounters()) { sum, part in
            guard !seen.contains(ObjectIdentifier(part.source)) else { return }
            seen.append(ObjectIdentifier(part.source))
            let c = part.source.counters
            sum.requests += c.requests
            sum.connections += c.connections
            sum.bytesFetched += c.bytesFetched
            sum.bytesFromCache += c.bytesFromCache
        }
    }

    var versionChanged: Bool { parts.contains { $0.source.versionChanged } }
    var warnings: [String] {
        parts.flatMap { $0.source.warnings }.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
    }
    var keepsBytes: Bool { parts.allSatisfy { $0.source.keepsBytes } }
    var whyNotKept: String { parts.first { !$0.source.keepsBytes }?.source.whyNotKept ?? "" }
}
