import ByteSources

/// Whether a Matroska file has Cues, where its first Cluster starts and its track numbers, from
/// the head libavformat has already read (no request): its SeekHead names the Cues, or they sit
/// among the Segment's first elements. libavformat says no such thing, and its index cannot tell:
/// without Cues it holds the key frames of the Clusters it has read, which look like Cues that
/// stop early. Read once per job and handed to those that need it.
public struct MatroskaHead: Sendable {
    private static let ebml: UInt32 = 0x1A45_DFA3, segment: UInt32 = 0x1853_8067, seekHead: UInt32 = 0x114D_9B74
    private static let seek: UInt32 = 0x4DBB, seekID: UInt32 = 0x53AB, cuesID: UInt32 = 0x1C53_BB6B,
        cluster: UInt32 = 0x1F43_B675
    private static let tracksID: UInt32 = 0x1654_AE6B, trackEntry: UInt32 = 0xAE, trackNumber: UInt32 = 0xD7,
        codecID: UInt32 = 0x86
    /// The head searched: the Segment's elements before its first Cluster are kilobytes.
    public static let searched = 256 << 10

    /// True when the file has Cues, false when its head holds none up to the first Cluster, nil
    /// when the local head ends before either.
    public let cues: Bool?
    /// Where the first Cluster starts, when the local head reaches it.
    public let firstCluster: Int64?
    /// The TrackNumber of each TrackEntry with a CodecID, in order: libavformat makes a stream of
    /// each such entry in that order (it keeps no track numbers), its attachments after them.
    public let tracks: [Int64]

    /// The TrackNumber of the demuxer's `stream`, given the demuxer's streams that are not
    /// attachments; nil when the entries and the streams do not pair up (an entry libavformat
    /// refused for another reason).
    public func trackNumber(ofStream stream: Int, mediaStreams streams: [Int]) -> Int64? {
        guard streams.count == tracks.count, streams == Array(0..<tracks.count), tracks.indices.contains(stream) else {
            return nil
        }
        return tracks[stream]
    }

    /// The Segment's elements in the local head, up to its first Cluster; nil for a head that does
    /// not start like Matroska.
    public init?(source: any MediaSource) throws {
        guard let size = try source.size() else { return nil }
        let head = 0..<min(size, Int64(MatroskaHead.searched))
        let count = Int(source.missingRanges(in: head).first?.lowerBound ?? head.upperBound)  // what is local of it
        var reader = EBMLReader(bytes: try source.bytes(at: 0, count: count), position: 0)
        guard reader.id() == MatroskaHead.ebml, let headerSize = reader.size() ?? nil else { return nil }
        reader.position += headerSize
        guard reader.id() == MatroskaHead.segment, reader.size() != nil else { return nil }
        var cues: Bool?
        var tracks: [Int64] = []
        var firstCluster: Int64?
        while true {
            let start = reader.position
            guard let id = reader.id(), let elementSize = reader.size() else { break }
            if id == MatroskaHead.cluster {
                firstCluster = Int64(start)
                cues = cues ?? false
                break
            }
            if id == MatroskaHead.cuesID { cues = true }
            guard let length = elementSize, length <= reader.bytes.count - reader.position else { break }
            if id == MatroskaHead.seekHead,
                MatroskaHead.lists(MatroskaHead.cuesID, in: reader.bytes, from: reader.position, count: length)
            {
                cues = true
            }
            if id == MatroskaHead.tracksID {
                tracks = MatroskaHead.numbers(in: reader.bytes, from: reader.position, count: length)
            }
            reader.position += length
        }
        self.cues = cues
        self.firstCluster = firstCluster
        self.tracks = tracks
    }

    /// Whether the local head starts with an EBML header (Matroska, WebM), before libavformat
    /// has said what the file is.
    public static func startsAMatroskaFile(_ source: any MediaSource) -> Bool {
        guard source.isLocal(0..<4), let first = try? source.bytes(at: 0, count: 4) else { return false }
        var reader = EBMLReader(bytes: first, position: 0)
        return reader.id() == ebml
    }

    /// The TrackNumber of each TrackEntry with a CodecID of the Tracks whose body is `count` bytes at `start`.
    private static func numbers(in bytes: [UInt8], from start: Int, count: Int) -> [Int64] {
        EBMLReader.bodies(of: trackEntry, in: bytes, within: start..<start + count).compactMap { entry in
            guard !EBMLReader.bodies(of: codecID, in: bytes, within: entry).isEmpty else { return nil }
            return EBMLReader.bodies(of: trackNumber, in: bytes, within: entry).first.flatMap { number in
                var reader = EBMLReader(bytes: bytes, position: number.lowerBound)
                return reader.uint(number.count)
            }
        }
    }

    /// Whether the SeekHead whose body is `count` bytes at `start` has a Seek for `target`.
    private static func lists(_ target: UInt32, in bytes: [UInt8], from start: Int, count: Int) -> Bool {
        EBMLReader.bodies(of: seek, in: bytes, within: start..<start + count).contains { entry in
            EBMLReader.bodies(of: seekID, in: bytes, within: entry).contains { id in
                id.count <= 4 && BigEndian.uint(bytes[id]) == UInt64(target)
            }
        }
    }
}
