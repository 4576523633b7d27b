import MediaSource

/// Whether a Matroska file has Cues, and where its first Cluster starts, from the head libavformat
/// has already read: its SeekHead names the Cues, or they sit among the Segment's first elements.
/// libavformat says no such thing, and its index cannot tell: without Cues it holds the key frames
/// of the Clusters it has read, which look like Cues that stop early.
enum MatroskaHead {
    private static let ebml: UInt32 = 0x1A45_DFA3, segment: UInt32 = 0x1853_8067, seekHead: UInt32 = 0x114D_9B74
    private static let seek: UInt32 = 0x4DBB, seekID: UInt32 = 0x53AB, cues: UInt32 = 0x1C53_BB6B, cluster: UInt32 = 0x1F43_B675
    private static let tracksID: UInt32 = 0x1654_AE6B, trackEntry: UInt32 = 0xAE, trackNumber: UInt32 = 0xD7
    /// The head searched: the Segment's elements before its first Cluster are kilobytes.
    static let searched = 256 << 10

    /// True when the file has Cues, false when its head holds none up to the first Cluster, nil
    /// when the local head ends before either, or is not Matroska enough to tell.
    static func hasCues(_ source: any MediaSource) throws -> Bool? { try walk(source).cues }

    /// Where the first Cluster starts and the track numbers of the TrackEntries in order (as
    /// libavformat numbers its streams), when the local head reaches the first Cluster.
    static func layout(_ source: any MediaSource) throws -> (firstCluster: Int64, tracks: [Int64])? {
        let walked = try walk(source)
        return walked.firstCluster.map { ($0, walked.tracks) }
    }

    /// The Segment's elements in the local head, up to its first Cluster.
    private static func walk(_ source: any MediaSource) throws -> (cues: Bool?, firstCluster: Int64?, tracks: [Int64]) {
        guard let size = try source.size() else { return (nil, nil, []) }
        let head = 0..<min(size, Int64(searched))
        let count = Int(source.missingRanges(in: head).first?.lowerBound ?? head.upperBound) // what is local of it
        var reader = EBMLReader(bytes: try source.bytes(at: 0, count: count), position: 0)
        guard reader.id() == ebml, let headerSize = reader.size() ?? nil else { return (nil, nil, []) }
        reader.position += headerSize
        guard reader.id() == segment, reader.size() != nil else { return (nil, nil, []) }
        var cues: Bool?
        var tracks: [Int64] = []
        while true {
            let start = reader.position
            guard let id = reader.id(), let elementSize = reader.size() else { break }
            if id == cluster { return (cues ?? false, Int64(start), tracks) }
            if id == MatroskaHead.cues { cues = true }
            guard let length = elementSize, length <= reader.bytes.count - reader.position else { break }
            if id == seekHead, lists(MatroskaHead.cues, in: reader.bytes, from: reader.position, count: length) { cues = true }
            if id == tracksID { tracks = numbers(in: reader.bytes, from: reader.position, count: length) }
            reader.position += length
        }
        return (cues, nil, tracks)
    }

    /// The TrackNumber of each TrackEntry of the Tracks whose body is `count` bytes at `start`.
    private static func numbers(in bytes: [UInt8], from start: Int, count: Int) -> [Int64] {
        EBMLReader.bodies(of: trackEntry, in: bytes, within: start..<start + count).compactMap { entry in
            EBMLReader.bodies(of: trackNumber, in: bytes, within: entry).first.flatMap { number in
                var reader = EBMLReader(bytes: bytes, position: number.lowerBound)
                return reader.uint(number.count)
            }
        }
    }

    /// Whether the SeekHead whose body is `count` bytes at `start` has a Seek for `target`.
    private static func lists(_ target: UInt32, in bytes: [UInt8], from start: Int, count: Int) -> Bool {
        EBMLReader.bodies(of: seek, in: bytes, within: start..<start + count).contains { entry in
            EBMLReader.bodies(of: seekID, in: bytes, within: entry).contains { id in
                id.count <= 4 && bytes[id].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } == target
            }
        }
    }
}
