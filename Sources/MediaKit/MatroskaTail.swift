import MediaSource

/// The duration of a Matroska file that states none (written as a stream, as a browser's
/// MediaRecorder writes WebM: no Duration in its Info, no Cues), from its last Cluster: the
/// Cluster's Timecode plus the largest relative timecode of its blocks. libavformat, without Cues
/// or a Duration, would have to read every Cluster to know it; ffprobe reports none.
///
/// A bounded read of the tail (256 KiB, then 4 and 16 MiB: a writer to a pipe closes a Cluster
/// every 32 KiB or so, a recorder at each key frame), searched backwards for a Cluster ID whose
/// size fits the file and whose first child (after a CRC-32 or Void) is a Timecode; its blocks are read up to its end (or
/// the end of the file, for the unknown size a live writer leaves). The time lacks the last
/// frame's own duration (a frame, 20–40 ms), which nothing in the file states.
enum MatroskaTail {
    static let scans: [Int64] = [256 << 10, 4 << 20, 16 << 20]
    private static let cluster: [UInt8] = [0x1F, 0x43, 0xB6, 0x75]

    /// For a Matroska `context` that states no duration: seconds from its start to its last block.
    /// Nil for other containers, or when no Cluster is found.
    static func duration(of context: FormatContext, source: any MediaSource) throws -> Double? {
        guard context.formatName.hasPrefix("matroska"), context.durationSeconds == nil, context.streamCount > 0 else { return nil }
        // The streams' time base is TimecodeScale ÷ 10⁹: the seconds of one timecode unit.
        return try duration(source: source, tick: context.seconds(1, stream: 0), start: context.startTime)
    }

    /// Seconds from `start` to the last block, with `tick` seconds per timecode unit.
    static func duration(source: any MediaSource, tick: Double, start: Double) throws -> Double? {
        guard tick > 0, let size = try source.size(), size > 0 else { return nil }
        var scanned: Int64 = 0
        for wanted in scans where wanted > scanned {
            scanned = min(size, wanted)
            try source.prefetch(size - scanned..<size)
            let bytes = try source.bytes(at: size - scanned, count: Int(scanned))
            if let last = lastBlockTimecode(in: bytes) {
                let seconds = Double(last) * tick - start
                return seconds > 0 && seconds.isFinite ? seconds : nil
            }
            if scanned == size { break }
        }
        return nil
    }

    /// The largest block timecode of the last well-formed Cluster in `bytes`.
    static func lastBlockTimecode(in bytes: [UInt8]) -> Int64? {
        var p = bytes.count - 4
        while p >= 0 {
            if bytes[p] == cluster[0], bytes[p + 1..<p + 4].elementsEqual(cluster[1...]), let time = blocks(in: bytes, cluster: p) {
                return time
            }
            p -= 1
        }
        return nil
    }

    /// The largest timecode of the blocks of the Cluster at `start`, nil when it is not one.
    private static func blocks(in bytes: [UInt8], cluster start: Int) -> Int64? {
        var reader = EBMLReader(bytes: bytes, position: start + 4)
        guard let size = reader.size() else { return nil }
        let end = size.map { reader.position + $0 } ?? bytes.count // unknown size: to the end of the file
        guard end <= bytes.count else { return nil }
        var first = reader.id()
        while first == 0xBF || first == 0xEC { // a CRC-32 or Void element may come before the Timecode
            guard let skip = reader.size() ?? nil else { return nil }
            reader.position += skip
            first = reader.id()
        }
        guard first == 0xE7, let timecodeSize = reader.size() ?? nil, let timecode = reader.uint(timecodeSize) else { return nil }
        var last: Int64?
        while reader.position < min(end, bytes.count) {
            guard let id = reader.id(), let childSize = reader.size(), let length = childSize else { break }
            let body = reader.position
            guard length <= min(end, bytes.count) - body else { break }
            switch id {
            case 0xA3: // SimpleBlock
                last = max(last ?? .min, timecode + Int64(reader.blockTimecode(at: body) ?? 0))
            case 0xA0: // BlockGroup: its Block
                var group = EBMLReader(bytes: bytes, position: body)
                while group.position < body + length, let inner = group.id(), let innerSize = group.size(), let n = innerSize {
                    if inner == 0xA1, let relative = group.blockTimecode(at: group.position) {
                        last = max(last ?? .min, timecode + Int64(relative))
                    }
                    group.position += n
                }
            default:
                break
            }
            reader.position = body + length
        }
        return last
    }
}
