import ByteSources
import Containers
import Foundation

extension Thumbnailer {
    /// Thumbnails of an HLS VOD stream, from the lowest variant at least as wide as the pictures
    /// (the least to fetch for the size asked), a segment per thumbnail: the segment holding each
    /// time, fetched in one parallel wave (each one request), then each read as a file of its own
    /// from its start. `opened`: a source of `input` already read (its cost counts here).
    func makeStream(
        _ input: String, session: MediaSession, opened: any MediaSource, progress: (Int) -> Void
    ) throws -> ThumbnailSet {
        var playlists = StreamPlaylists(session: session, opened: opened)
        let media: HLSMedia
        switch try playlists.load(input) {
        case .media(let m):
            media = m
        case .master(let master):
            guard let variant = Thumbnailer.variant(for: options, in: master.variants) else {
                throw MediaError.malformedPlaylist(input: input, detail: "a master playlist without variants")
            }
            media = try playlists.loadMedia(variant.uri)
        }
        if media.isLive && media.playlistType == nil {
            throw MediaError.unsupportedStream(
                input: input,
                detail:
                    "a live stream (a playlist without #EXT-X-ENDLIST, or a dynamic MPD): its segments are replaced "
                    + "as it plays; thumbnails need a VOD playlist")
        }
        guard !media.segments.isEmpty else {
            throw MediaError.malformedPlaylist(input: input, detail: "a media playlist without segments")
        }
        if media.segments.contains(where: \.encrypted) {
            throw MediaError.unsupportedStream(
                input: input,
                detail: "its segments are encrypted "
                    + "(\(media.encryption.sorted().joined(separator: ", "))): mprobe does not fetch keys")
        }
        let duration = media.duration
        let times = options.requestedTimes(duration: duration)
        var notes = options.limitNote(duration: duration).map { [$0] } ?? []
        for time in times where time >= duration {
            notes.append(String(format: "%.3f s is past the end (%.3f s): using the last segment", time, duration))
        }
        // The segment holding each time (the last for times past the end), in time order.
        let holding = times.map { time in media.segments.lastIndex { $0.start <= max(0, time) } ?? 0 }
        let needed = Set(holding).sorted()

        // One wave: every segment the pictures come from; of a fragmented MP4 segment (after an
        // initialization section) only its head, where its moof and, usually, its first key frame
        // are: the moof indexes the samples, and the thumbnailer fetches a larger key frame itself.
        var pieces: [Prefetcher.Piece] = []
        var seen = Set<String>()
        for i in needed {
            let s = media.segments[i]
            var wanted: [(uri: String, range: Range<Int64>)] = [
                (s.uri, s.byteRange ?? 0..<StreamPlaylists.wholePartLimit)
            ]
            if let map = s.initSection {
                let start = s.byteRange?.lowerBound ?? 0
                wanted = [
                    (map.uri, map.byteRange ?? 0..<StreamPlaylists.wholePartLimit),
                    (s.uri, start..<min(s.byteRange?.upperBound ?? Int64.max, start + Thumbnailer.segmentHead)),
                ]
            }
            for w in wanted where seen.insert("\(w.uri)#\(w.range)").inserted {
                let source = try session.open(w.uri)
                playlists.add([source])
                pieces.append(Prefetcher.Piece(source: source, range: w.range))
            }
        }
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        try prefetcher.fetch(pieces, cancellation: session.cancellation)

        var sheets: SpriteSheets?
        var made: [Int: Thumbnail] = [:]  // by the time's place in `times`
        var floor: Int64 = 0
        /// The thumbnails of segment `i` at `within` (seconds into it), onto `into`.
        func pass(_ i: Int, _ within: [Double], into: inout SpriteSheets?) throws -> Pass {
            if session.cancellation.isCancelled { throw MediaError.interrupted }
            let segment = media.segments[i]
            let span = try playlists.span([segment], input: segment.uri)
            let opened = try StreamPlaylists.open(
                span, session: session, findStreamInfo: false, fragments: .throughIndex(oneStream: true))
            let done = made.count
            // A segment opened through its index never has its key frames found from their bytes.
            guard
                case .made(let result) = try thumbnails(
                    opened, session: session, times: within, shift: segment.start,
                    total: times.count, sheets: &into, progress: { progress(done + $0) })
            else {
                throw MediaError.malformed(input: segment.uri, detail: "its key frames could not be found")
            }
            floor += result.floor
            return result
        }
        /// Named and reported by the time asked for (past the end: that time, the last picture).
        func place(_ thumbnail: Thumbnail, at place: Int, replacing blank: Double? = nil) {
            var kept = Thumbnail(
                time: times[place], pts: thumbnail.pts, width: thumbnail.width, height: thumbnail.height,
                encoded: thumbnail.encoded, fileName: Thumbnailer.fileName(time: times[place], format: options.format),
                sprite: thumbnail.sprite, skippedBlank: blank ?? thumbnail.skippedBlank)
            kept.blank = blank == nil && thumbnail.blank
            made[place] = kept
        }
        // With --skip-black a picture can still change after its segment (to the next segment's
        // first key frame), so the sheets are drawn once the pictures are final.
        let deferSheets = options.skipBlack && options.sprite != nil
        var chosen: [Int: (segment: Int, within: Double)] = [:]
        for i in needed {
            let mine = holding.indices.filter { holding[$0] == i }
            let within = mine.map { min(max(0, times[$0] - media.segments[i].start), media.segments[i].duration) }
            var none: SpriteSheets?
            let result = deferSheets ? try pass(i, within, into: &none) : try pass(i, within, into: &sheets)
            notes += result.notes
            for (n, thumbnail) in zip(mine, result.made) {
                place(thumbnail, at: n)
                chosen[n] = (i, within[mine.firstIndex(of: n)!])
            }
        }
        if options.skipBlack {
            // A blank picture its own segment could not replace: the first key frame of the
            // segments after it, as many and as far as the thumbnailer looks within one.
            for n in times.indices where made[n]?.blank == true {
                guard let blank = made[n], let from = chosen[n]?.segment else { continue }
                var next = from + 1
                while next < media.segments.count, next - from <= BlankFrames.candidates,
                    media.segments[next].start <= blank.pts + BlankFrames.reach
                {
                    var none: SpriteSheets?
                    let result = try pass(next, [0], into: &none)
                    if let picture = result.made.first, !picture.blank {
                        place(picture, at: n, replacing: blank.pts)
                        chosen[n] = (next, 0)
                        break
                    }
                    next += 1
                }
            }
        }
        if deferSheets {
            for i in Set(chosen.values.map(\.segment)).sorted() {
                let mine = times.indices.filter { chosen[$0]?.segment == i }
                let result = try pass(i, mine.map { chosen[$0]!.within }, into: &sheets)
                for (n, thumbnail) in zip(mine, result.made) {
                    if var kept = made[n] { kept.sprite = thumbnail.sprite; made[n] = kept }
                }
            }
        }
        // The segments' notes of blank pictures were said before the segments after them were
        // tried: one note per picture that stayed blank instead.
        notes.removeAll { $0.contains("nearly black or flat") }
        for n in times.indices where made[n]?.blank == true {
            notes.append(
                String(
                    format: "%.3f s: the key frame is nearly black or flat, and so are the ones after it "
                        + "within %.0f s: kept", times[n], BlankFrames.reach))
        }
        notes = notes.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }  // said once, not per segment
        try sheets?.finish()
        var set = ThumbnailSet(
            input: session.shown(input), duration: duration, thumbnails: times.indices.compactMap { made[$0] },
            sprites: sheets?.sheets ?? [], notes: notes, floorBytes: floor, fetch: playlists.counters)
        set.storyboards = options.storyboards
        return set
    }

    /// The head of a fragmented MP4 segment fetched for a thumbnail: its moof and a key frame of a
    /// few hundred kilobits.
    static let segmentHead: Int64 = 96 << 10

    /// The lowest-bandwidth variant at least as wide (or tall) as the thumbnails, else the widest.
    static func variant(for options: ThumbnailOptions, in variants: [HLSVariant]) -> HLSVariant? {
        let byBandwidth = variants.sorted { $0.bandwidth < $1.bandwidth }
        let wide = byBandwidth.first { v in
            if let w = options.width { return (v.width ?? 0) >= w }
            if let h = options.height { return (v.height ?? 0) >= h }
            return (v.width ?? 0) >= 320  // the default thumbnail width
        }
        return wide ?? variants.max { ($0.width ?? 0, $0.bandwidth) < ($1.width ?? 0, $1.bandwidth) }
    }
}
