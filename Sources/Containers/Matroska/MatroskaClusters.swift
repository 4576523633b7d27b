/// Clusters of a Matroska file and their blocks, read from a run of its bytes without Cues or
/// libavformat: the last Cluster of a file (`MatroskaTail`) and the key frames near a time
/// (`MatroskaKeyFrames`). A Cluster is found by its ID and taken only when its first child (after
/// a CRC-32, Void, Position or PrevSize) is its Timecode and its size fits; a live writer's unknown size ends where an
/// element no Cluster holds begins.
package enum MatroskaClusters {
    static let clusterID: UInt32 = 0x1F43_B675
    private static let idBytes: [UInt8] = [0x1F, 0x43, 0xB6, 0x75]
    private static let timecodeID: UInt32 = 0xE7, simpleBlock: UInt32 = 0xA3, blockGroup: UInt32 = 0xA0
    private static let block: UInt32 = 0xA1, referenceBlock: UInt32 = 0xFB, crc32: UInt32 = 0xBF, void: UInt32 = 0xEC
    private static let position: UInt32 = 0xA7, prevSize: UInt32 = 0xAB
    /// What a Cluster holds besides its Timecode and blocks (Position, PrevSize, SilentTracks,
    /// EncryptedBlock): skipped; any other ID ends a Cluster of unknown size.
    private static let otherChildren: Set<UInt32> = [position, prevSize, 0x5854, 0xAF, crc32, void]

    /// One block: where its element starts in the bytes read, its size with header, its track
    /// number, its absolute timecode (the Cluster's plus its own), and whether it is a key frame.
    package struct Block: Equatable {
        let position: Int
        let size: Int
        let track: Int64
        let timecode: Int64
        let keyframe: Bool
    }

    package struct Cluster {
        let position: Int
        let timecode: Int64
        /// Where the Cluster ends in the bytes, nil when it runs past them.
        let end: Int?
        /// The blocks that lie whole within the bytes.
        let blocks: [Block]
        /// A SimpleBlock or BlockGroup whose block header lies within the bytes and whose body runs
        /// past them (within the Cluster): where a key frame ends, known from the first bytes of it.
        let cut: Block?
    }

    /// The Cluster whose ID starts at `start`, nil when it is not one. With `whole`, a Cluster
    /// that runs past `bytes` is not one either (the last Cluster of a file must end in it).
    static func cluster(in bytes: [UInt8], at start: Int, whole: Bool) -> Cluster? {
        guard start >= 0, start + 4 <= bytes.count, bytes[start..<start + 4].elementsEqual(idBytes) else { return nil }
        var reader = EBMLReader(bytes: bytes, position: start + 4)
        guard let size = reader.size() else { return nil }
        let stated = size.map { reader.position + $0 }
        if whole, let stated, stated > bytes.count { return nil }
        let limit = min(stated ?? bytes.count, bytes.count)
        var first = reader.id()
        while first == crc32 || first == void || first == position || first == prevSize {
            guard let skip = reader.size() ?? nil else { return nil }
            reader.position += skip
            first = reader.id()
        }
        guard first == timecodeID, let timecodeSize = reader.size() ?? nil, let timecode = reader.uint(timecodeSize)
        else { return nil }
        var blocks: [Block] = []
        var cut: Block?
        var end = stated
        while reader.position < limit {
            let element = reader.position
            guard let id = reader.id(), let childSize = reader.size() else { break }
            guard id == simpleBlock || id == blockGroup || otherChildren.contains(id) else {
                if stated == nil { end = element }  // an unknown size ends at the next element of the Segment
                break
            }
            guard let length = childSize, length <= limit - reader.position else {
                let head =
                    id == simpleBlock
                    ? blockHeader(bytes, at: reader.position).map { ($0.track, $0.relative, $0.flags & 0x80 != 0) }
                    : id == blockGroup ? groupHead(bytes, body: reader.position) : nil
                if let length = childSize, stated.map({ reader.position + length <= $0 }) ?? true,
                    let (track, relative, keyframe) = head
                {
                    cut = Block(
                        position: element, size: reader.position + length - element, track: track,
                        timecode: timecode + Int64(relative), keyframe: keyframe)
                }
                break
            }
            let body = reader.position
            if id == simpleBlock, let header = blockHeader(bytes, at: body) {
                blocks.append(
                    Block(
                        position: element, size: body + length - element, track: header.track,
                        timecode: timecode + Int64(header.relative), keyframe: header.flags & 0x80 != 0))
            } else if id == blockGroup, let grouped = group(bytes, body: body, length: length) {
                blocks.append(
                    Block(
                        position: element, size: body + length - element, track: grouped.track,
                        timecode: timecode + Int64(grouped.relative), keyframe: grouped.keyframe))
            }
            reader.position = body + length
        }
        return Cluster(
            position: start, timecode: timecode, end: end.flatMap { $0 <= bytes.count ? $0 : nil }, blocks: blocks,
            cut: cut)
    }

    /// The Clusters of `bytes` from the first one at or after `from`, each followed to the next
    /// (searched for again where something else follows one).
    static func clusters(in bytes: [UInt8], from: Int = 0) -> [Cluster] {
        var found: [Cluster] = []
        var p = max(0, from)
        while p + 4 <= bytes.count {
            guard let cluster = cluster(in: bytes, at: p, whole: false) else {
                p += 1
                continue
            }
            found.append(cluster)
            guard let end = cluster.end, end > p else { break }
            p = end
        }
        return found
    }

    /// The last Cluster of `bytes`, the tail of a file: whole, and followed only by elements of the
    /// Segment that lead exactly to the end (Cluster-like bytes inside an attachment do not).
    static func lastWholeCluster(in bytes: [UInt8]) -> Cluster? {
        var p = bytes.count - 4
        while p >= 0 {
            if bytes[p] == idBytes[0], let cluster = cluster(in: bytes, at: p, whole: true), !cluster.blocks.isEmpty,
                endsTheFile(bytes, from: cluster.end)
            {
                return cluster
            }
            p -= 1
        }
        return nil
    }

    /// Top-level elements a Segment holds after its Clusters.
    private static let segmentChildren: Set<UInt32> = [
        clusterID, 0x1C53_BB6B, 0x1254_C367, 0x1941_A469, 0x1043_A770, void,
        0x114D_9B74, 0x1549_A966, 0x1654_AE6B,
    ]

    /// Whether the elements from `start` (nil: a Cluster of unknown size, running to the end) are
    /// Segment elements that end exactly where `bytes` does — or a Cluster the end cuts short (a
    /// truncated download), or of unknown size.
    private static func endsTheFile(_ bytes: [UInt8], from start: Int?) -> Bool {
        guard var position = start else { return true }
        while position < bytes.count {
            var reader = EBMLReader(bytes: bytes, position: position)
            guard let id = reader.id(), segmentChildren.contains(id), let stated = reader.size() else { return false }
            guard let size = stated, size <= bytes.count - reader.position else { return id == clusterID }
            position = reader.position + size
        }
        return position == bytes.count
    }

    /// A block's track number (a variable-length integer), relative timecode (signed 16 bits) and flags.
    private static func blockHeader(_ bytes: [UInt8], at body: Int) -> (track: Int64, relative: Int16, flags: UInt8)? {
        var reader = EBMLReader(bytes: bytes, position: body)
        guard let track = reader.size() ?? nil, reader.position + 3 <= bytes.count else { return nil }
        let p = reader.position
        return (Int64(track), Int16(bitPattern: UInt16(bytes[p]) << 8 | UInt16(bytes[p + 1])), bytes[p + 2])
    }

    /// The Block of a BlockGroup whose body runs past `bytes`: a key frame unless a ReferenceBlock
    /// comes before it (one after it is past the bytes; a Cue point names key frames).
    private static func groupHead(_ bytes: [UInt8], body: Int) -> (track: Int64, relative: Int16, keyframe: Bool)? {
        var reader = EBMLReader(bytes: bytes, position: body)
        var references = false
        while let id = reader.id(), let size = reader.size(), let n = size {
            if id == block {
                return blockHeader(bytes, at: reader.position).map { ($0.track, $0.relative, !references) }
            }
            if id == referenceBlock { references = true }
            reader.position += n
        }
        return nil
    }

    /// A BlockGroup's Block, a key frame when the group references no other block.
    private static func group(
        _ bytes: [UInt8], body: Int, length: Int
    ) -> (track: Int64, relative: Int16, keyframe: Bool)? {
        var reader = EBMLReader(bytes: bytes, position: body)
        var header: (track: Int64, relative: Int16, flags: UInt8)?
        var references = false
        while reader.position < body + length, let id = reader.id(), let size = reader.size(), let n = size {
            if id == block { header = blockHeader(bytes, at: reader.position) }
            if id == referenceBlock { references = true }
            reader.position += n
        }
        return header.map { ($0.track, $0.relative, !references) }
    }
}
