import MediaSource

/// Whether a Matroska file has Cues, from the head libavformat has already read: its SeekHead
/// names them, or they sit among the Segment's first elements. libavformat says no such thing,
/// and its index cannot tell: without Cues it holds the key frames of the Clusters it has read,
/// which look like Cues that stop early.
enum MatroskaHead {
    private static let ebml: UInt32 = 0x1A45_DFA3, segment: UInt32 = 0x1853_8067, seekHead: UInt32 = 0x114D_9B74
    private static let seek: UInt32 = 0x4DBB, seekID: UInt32 = 0x53AB, cues: UInt32 = 0x1C53_BB6B, cluster: UInt32 = 0x1F43_B675
    /// The head searched: the Segment's elements before its first Cluster are kilobytes.
    static let searched = 256 << 10

    /// True when the file has Cues, false when its head holds none up to the first Cluster, nil
    /// when the local head ends before either, or is not Matroska enough to tell.
    static func hasCues(_ source: any MediaSource) throws -> Bool? {
        guard let size = try source.size() else { return nil }
        let head = 0..<min(size, Int64(searched))
        let count = Int(source.missingRanges(in: head).first?.lowerBound ?? head.upperBound) // what is local of it
        var reader = EBMLReader(bytes: try source.bytes(at: 0, count: count), position: 0)
        guard reader.id() == ebml, let headerSize = reader.size() ?? nil else { return nil }
        reader.position += headerSize
        guard reader.id() == segment, reader.size() != nil else { return nil }
        while let id = reader.id(), let elementSize = reader.size() {
            if id == cues { return true }
            if id == cluster { return false }
            guard let length = elementSize, length <= reader.bytes.count - reader.position else { return nil }
            if id == seekHead, lists(cues, in: reader.bytes, from: reader.position, count: length) { return true }
            reader.position += length
        }
        return nil
    }

    /// Whether the SeekHead whose body is `count` bytes at `start` has a Seek for `target`.
    private static func lists(_ target: UInt32, in bytes: [UInt8], from start: Int, count: Int) -> Bool {
        var entries = EBMLReader(bytes: bytes, position: start)
        while entries.position < start + count, let id = entries.id(), let entrySize = entries.size(), let length = entrySize {
            let end = entries.position + length
            if id == seek {
                var fields = EBMLReader(bytes: bytes, position: entries.position)
                while fields.position < end, let field = fields.id(), let fieldSize = fields.size(), let n = fieldSize {
                    if field == seekID, n <= 4, fields.position + n <= bytes.count,
                       bytes[fields.position..<fields.position + n].reduce(UInt32(0), { $0 << 8 | UInt32($1) }) == target {
                        return true
                    }
                    fields.position += n
                }
            }
            entries.position = end
        }
        return false
    }
}
