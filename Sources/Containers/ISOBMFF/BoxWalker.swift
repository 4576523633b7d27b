import ByteSources

/// One top-level ISO-BMFF box: where it starts, its full size and its header length.
public struct BoxHeader: Sendable, Equatable {
    public let type: String
    public let offset: Int64
    public let size: Int64
    public let headerSize: Int
    public var end: Int64 { offset + size }
    public var range: Range<Int64> { offset..<end }
}

/// Where the boxes of an MP4/MOV file sit, learnt from headers only.
public struct MP4Layout: Sendable, Equatable {
    public enum MoovPosition: String, Sendable { case front, end }

    public var boxes: [BoxHeader] = []
    public var moov: BoxHeader?
    /// `mvex` inside the moov, or top-level `moof`/`sidx`/`mfra` boxes.
    public var fragmented = false
    /// The moov has an `mvex`: samples follow in movie fragments (`moof` boxes), which the moov
    /// does not index.
    public var movieExtends = false
    /// A box claims bytes past the end of the file, or a header is malformed.
    public var damaged: String?

    /// Fragments a file must have, by the first one's size, before jobs read its timeline from its
    /// index instead of letting libavformat read every fragment: below it, reading them all costs
    /// a few requests and gives libavformat's figures exactly (per-track bit rates, a duration an
    /// `mehd` states). For a probe, a file of `largeFile` bytes needs only `fewFragments`: there
    /// each fragment read is a request and a readahead window (a one-minute 4 Mbit/s recording in 31
    /// fragments: 33 requests and 9 MB for a probe that needs 0.35 MB). Seeking jobs keep the walk
    /// below `fragmentsWorthSkipping`: its small reads (`MoofChain`) cost less than searching a few
    /// large fragments without an index (8 fragments: 2.5 MB against 7.9 for ten thumbnails).
    public static let fragmentsWorthSkipping: Int64 = 32
    public static let fewFragments: Int64 = 4, largeFile: Int64 = 8 << 20

    /// A `sidx` among the first boxes: libavformat reads it and stops reading top-level boxes.
    public var hasSegmentIndex: Bool { boxes.contains { $0.type == "sidx" } }

    /// A fragmented file whose moov indexes no samples, with many fragments: reading each `moof`
    /// would cost a request each.
    public func manyFragments(fileSize: Int64?, probing: Bool) -> Bool {
        guard movieExtends, let fileSize, let moof = boxes.first(where: { $0.type == "moof" }) else { return false }
        let fragment = moof.size + (boxes.first { $0.offset == moof.end && $0.type == "mdat" }?.size ?? 0)
        let fragments = fileSize / max(fragment, 1)
        return fragments >= MP4Layout.fragmentsWorthSkipping
            || (probing && fragments >= MP4Layout.fewFragments && fileSize >= MP4Layout.largeFile)
    }

    /// `front` when the moov precedes the media data (faststart), `end` when a player must seek for it.
    public var moovPosition: MoovPosition? {
        guard let moov else { return nil }
        guard let mdat = boxes.first(where: { $0.type == "mdat" }) else { return .front }
        return moov.offset < mdat.offset ? .front : .end
    }
}

/// Walks the top-level boxes of an ISO-BMFF file reading only their headers, and fetches the
/// whole `moov` in one request as soon as its range is known — before libavformat asks.
///
/// Requests: the first `firstRequest` bytes (most short clips' moov fits); for a moov at the
/// end, one request for the rest of the file after the media data when that is at most
/// `tailLimit` (the moov is usually all that is there). Sizes are checked against the file size,
/// so a malicious size cannot cause a huge read or a loop: a moov that claims more than the file
/// holds, or more than `maxHeaderBox`, is a `MediaError` before any of its body is fetched.
public struct BoxWalker: Sendable {
    /// Default size of the first request: covers ftyp + moov of most clips under a minute.
    public static let defaultFirstRequest: Int64 = 64 << 10
    public var firstRequest: Int64 = BoxWalker.defaultFirstRequest
    public var tailLimit: Int64 = 16 << 20
    /// Bytes after the moov fetched with it when the moov needs a request of its own: the next box
    /// header and the first samples, which `avformat_find_stream_info` reads.
    public var afterMoov: Int64 = 64 << 10
    /// The largest moov fetched. A day of 60 fps video with audio has a moov of about 100 MB; a
    /// larger claim is taken for damage rather than downloaded.
    public var maxHeaderBox: Int64 = 256 << 20
    /// A moov cut short by the end of the file is noted in `MP4Layout.damaged` and taken to the
    /// end of the file, for libavformat to make of it what it can (ffprobe's drop-in mode answers
    /// what ffprobe answers: often the format, with no streams), instead of being an error.
    public var acceptsACutMoov = false
    static let maxBoxes = 100_000

    static let topLevelTypes: Set<String> = [
        "ftyp", "styp", "moov", "mdat", "free", "skip", "wide", "pnot", "sidx", "ssix", "moof", "mfra",
        "uuid", "meta", "pdin", "emsg", "prft", "udta", "junk", "jP  ", "pict", "PICT", "mdia",
    ]
    /// Boxes a moov holds (ISO/IEC 14496-12 and QuickTime): where these stop, a size-0 moov ends.
    static let moovChildTypes: Set<String> = [
        "mvhd", "trak", "udta", "meta", "mvex", "iods", "pssh", "cmov", "rmra", "ipmc", "prfl", "clip", "ctab",
        "htka", "free", "skip", "wide", "uuid",
    ]

    public init() {}

    /// Returns nil when the source does not start like an ISO-BMFF file.
    public func walk(_ source: any MediaSource) throws -> MP4Layout? {
        // The first request also tells the size (from Content-Range): no separate HEAD.
        try source.prefetch(0..<firstRequest)
        guard let size = try source.size(), size >= 8 else { return nil }
        var layout = MP4Layout()
        var offset: Int64 = 0
        while offset + 8 <= size, layout.boxes.count < BoxWalker.maxBoxes {
            // After the moov, keep walking only through bytes we already hold: no extra requests.
            if layout.moov != nil && !source.isLocal(offset..<min(size, offset + 16)) { break }
            let stated: StatedBox
            do {
                guard let header = try StatedBox.read(from: source, at: offset) else { break }
                stated = header
            } catch let problem as StatedBox.Problem {
                if offset == 0 { return nil }
                layout.damaged = problem.text
                break
            }
            if offset == 0 && !BoxWalker.topLevelTypes.contains(stated.type) { return nil }
            let box: BoxHeader
            if stated.type == "moov" {
                box = try fetchMoov(stated, from: source, fileSize: size, layout: &layout)
                layout.moov = box
                if try containsChild("mvex", of: box, in: source) {
                    layout.fragmented = true
                    layout.movieExtends = true
                }
            } else {
                box = BoxWalker.clipped(stated, fileSize: size, layout: &layout)
                if ["moof", "sidx", "mfra"].contains(box.type) { layout.fragmented = true }
            }
            layout.boxes.append(box)
            offset = box.end
            if layout.moov == nil, offset < size, !source.isLocal(offset..<min(size, offset + 16)) {
                // Jumping over media data to an unknown box: take the rest in one go when small.
                let rest = size - offset
                try source.prefetch(offset..<(rest <= tailLimit ? size : offset + firstRequest))
            }
        }
        return layout
    }

    /// A box other than the moov, its size checked against the file: one running past the end (a
    /// truncated download, usually) is kept to the end and noted; its body is never fetched here.
    private static func clipped(_ stated: StatedBox, fileSize: Int64, layout: inout MP4Layout) -> BoxHeader {
        let room = fileSize - stated.offset  // offset < fileSize, so this cannot overflow
        let size = stated.size ?? room  // size 0: to the end of the file
        if size > room {
            layout.damaged =
                "box '\(stated.type)' at offset \(stated.offset) claims \(size) bytes but the file ends at \(fileSize)"
        }
        return BoxHeader(type: stated.type, offset: stated.offset, size: min(size, room), headerSize: stated.headerSize)
    }

    /// Checks the moov's size, then fetches its body, the next box header and the first samples
    /// (what libavformat reads next) in one request — nothing when the first request held them.
    ///
    /// Size 0 means "to the end of the file", and libavformat reads it so; but a moov in front of
    /// the media data with size 0 would make that the whole file. Its children are walked instead
    /// (their headers, fetching each child as it is met) up to the first box that cannot be a moov's
    /// child — the `mdat`, usually — and only that much is the moov.
    private func fetchMoov(
        _ stated: StatedBox, from source: any MediaSource, fileSize: Int64,
        layout: inout MP4Layout
    ) throws -> BoxHeader {
        let room = fileSize - stated.offset
        guard let size = stated.size else {
            let end = try childrenEnd(of: stated, in: source, fileSize: fileSize)
            if end < fileSize {
                layout.damaged =
                    "the moov box at offset \(stated.offset) has size 0 (to the end of the file) "
                    + "but its boxes end at \(end)"
            }
            return BoxHeader(
                type: "moov", offset: stated.offset, size: end - stated.offset, headerSize: stated.headerSize)
        }
        if size > room, acceptsACutMoov {
            layout.damaged =
                "the moov box at offset \(stated.offset) claims \(size) bytes but the file ends at \(fileSize)"
            if !source.isLocal(stated.offset..<fileSize) { try source.prefetch(stated.offset..<fileSize) }
            return BoxHeader(type: "moov", offset: stated.offset, size: room, headerSize: stated.headerSize)
        }
        if size > room {
            throw MediaError.malformed(
                input: source.input,
                detail: "the moov box at offset \(stated.offset) claims \(size) "
                    + "bytes but the file ends at \(fileSize): it is truncated or damaged")
        }
        try checkLimit(size, of: stated, input: source.input)
        let box = BoxHeader(type: "moov", offset: stated.offset, size: size, headerSize: stated.headerSize)
        if !source.isLocal(box.offset..<min(fileSize, box.end + 16)) {
            try source.prefetch(box.offset..<min(fileSize, box.end + afterMoov))
        }
        return box
    }

    /// Where the plausible children of a size-0 moov stop, fetching each child's body and the
    /// `afterMoov` bytes after it as the walk reaches it.
    private func childrenEnd(of moov: StatedBox, in source: any MediaSource, fileSize: Int64) throws -> Int64 {
        var offset = moov.offset + Int64(moov.headerSize)
        var count = 0
        while offset + 8 <= fileSize, count < 10_000 {
            if !source.isLocal(offset..<min(fileSize, offset + 16)) {
                try source.prefetch(offset..<min(fileSize, offset + afterMoov))
            }
            guard let child = try StatedBox.readIfWellFormed(from: source, at: offset),
                BoxWalker.moovChildTypes.contains(child.type),
                let size = child.size, size <= fileSize - offset
            else { break }
            try checkLimit(offset + size - moov.offset, of: moov, input: source.input)
            if !source.isLocal(offset..<min(fileSize, offset + size + 16)) {
                try source.prefetch(offset..<min(fileSize, offset + size + afterMoov))
            }
            offset += size
            count += 1
        }
        return offset
    }

    private func checkLimit(_ size: Int64, of moov: StatedBox, input: String) throws {
        guard size > maxHeaderBox else { return }
        throw MediaError.malformed(
            input: input,
            detail: "the moov box at offset \(moov.offset) claims \(size) bytes, "
                + "more than the \(maxHeaderBox)-byte limit for a header")
    }

    /// True when `parent` has a direct child box of `type` (headers read from cached bytes).
    private func containsChild(_ type: String, of parent: BoxHeader, in source: any MediaSource) throws -> Bool {
        var offset = parent.offset + Int64(parent.headerSize)
        var count = 0
        while offset + 8 <= parent.end, count < 10_000 {
            guard let child = try StatedBox.readIfWellFormed(from: source, at: offset) else { return false }
            if child.type == type { return true }
            guard let size = child.size, size <= parent.end - offset else { return false }
            offset += size
            count += 1
        }
        return false
    }
}
