import MediaSource

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
    /// A box claims bytes past the end of the file, or a header is malformed.
    public var damaged: String?

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
/// so a malicious size cannot cause a huge read or a loop.
public struct BoxWalker: Sendable {
    /// Default size of the first request: covers ftyp + moov of most clips under a minute.
    public static let defaultFirstRequest: Int64 = 64 << 10
    public var firstRequest: Int64 = BoxWalker.defaultFirstRequest
    public var tailLimit: Int64 = 16 << 20
    /// Bytes after the moov fetched with it when the moov needs a request of its own: the next box
    /// header and the first samples, which `avformat_find_stream_info` reads.
    public var afterMoov: Int64 = 64 << 10
    static let maxBoxes = 100_000

    static let topLevelTypes: Set<String> = [
        "ftyp", "styp", "moov", "mdat", "free", "skip", "wide", "pnot", "sidx", "ssix", "moof", "mfra",
        "uuid", "meta", "pdin", "emsg", "prft", "udta", "junk", "jP  ", "pict", "PICT", "mdia",
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
            guard let box = try readHeader(source, at: offset, fileSize: size, layout: &layout) else {
                if offset == 0 { return nil }
                break
            }
            layout.boxes.append(box)
            switch box.type {
            case "moov":
                layout.moov = box
                // One request for the rest of the moov, the next box header and the first samples
                // (what libavformat reads next); nothing when the first request already held it.
                if !source.isLocal(box.offset..<min(size, box.end + 16)) {
                    try source.prefetch(box.offset..<min(size, box.end + afterMoov))
                }
                if try containsChild("mvex", of: box, in: source) { layout.fragmented = true }
            case "moof", "sidx", "mfra":
                layout.fragmented = true
            default: break
            }
            offset = box.end
            if layout.moov == nil, offset < size, !source.isLocal(offset..<min(size, offset + 16)) {
                // Jumping over media data to an unknown box: take the rest in one go when small.
                let rest = size - offset
                try source.prefetch(offset..<(rest <= tailLimit ? size : offset + firstRequest))
            }
        }
        return layout
    }

    private func readHeader(_ source: any MediaSource, at offset: Int64, fileSize: Int64,
                            layout: inout MP4Layout) throws -> BoxHeader? {
        let bytes = try readUpTo(16, from: source, at: offset)
        guard bytes.count >= 8 else { return nil }
        let size32 = Int64(bytes[0]) << 24 | Int64(bytes[1]) << 16 | Int64(bytes[2]) << 8 | Int64(bytes[3])
        let typeBytes = bytes[4..<8]
        guard typeBytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            layout.damaged = "unreadable box header at offset \(offset)"
            return nil
        }
        let type = String(decoding: typeBytes, as: UTF8.self)
        if offset == 0 && !BoxWalker.topLevelTypes.contains(type) { return nil }
        var headerSize = 8
        var boxSize = size32
        if size32 == 1 {
            guard bytes.count >= 16 else { layout.damaged = "truncated 64-bit box header at offset \(offset)"; return nil }
            let large = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard large <= UInt64(Int64.max) else { layout.damaged = "box size overflows at offset \(offset)"; return nil }
            boxSize = Int64(large)
            headerSize = 16
        } else if size32 == 0 {
            boxSize = fileSize - offset // extends to the end of the file
        }
        guard boxSize >= Int64(headerSize) else {
            layout.damaged = "box '\(type)' at offset \(offset) has an impossible size \(boxSize)"
            return nil
        }
        if boxSize > fileSize - offset { // offset <= fileSize, so this cannot overflow
            layout.damaged = "box '\(type)' at offset \(offset) claims \(boxSize) bytes but the file ends at \(fileSize)"
            return BoxHeader(type: type, offset: offset, size: fileSize - offset, headerSize: headerSize)
        }
        return BoxHeader(type: type, offset: offset, size: boxSize, headerSize: headerSize)
    }

    /// True when `parent` has a direct child box of `type` (headers read from cached bytes).
    private func containsChild(_ type: String, of parent: BoxHeader, in source: any MediaSource) throws -> Bool {
        var offset = parent.offset + Int64(parent.headerSize)
        var count = 0
        while offset + 8 <= parent.end, count < 10_000 {
            let bytes = try readUpTo(8, from: source, at: offset)
            guard bytes.count == 8 else { return false }
            let size = Int64(bytes[0]) << 24 | Int64(bytes[1]) << 16 | Int64(bytes[2]) << 8 | Int64(bytes[3])
            if String(decoding: bytes[4..<8], as: UTF8.self) == type { return true }
            guard size >= 8 else { return false } // 64-bit or to-end children do not occur before mvex
            offset += size
            count += 1
        }
        return false
    }

    private func readUpTo(_ count: Int, from source: any MediaSource, at offset: Int64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = try bytes.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[done...]), at: offset + Int64(done))
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[0..<done])
    }
}
