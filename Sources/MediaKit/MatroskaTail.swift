import MediaSource

/// The duration of a Matroska file that states none (written as a stream, as a browser's
/// MediaRecorder writes WebM: no Duration in its Info, no Cues), from its last Cluster: the
/// Cluster's Timecode plus the largest relative timecode of its blocks. libavformat, without Cues
/// or a Duration, would have to read every Cluster to know it; ffprobe reports none.
///
/// A bounded read of the tail (1 MiB, then 16 MiB), searched backwards for a Cluster ID whose
/// size fits the file and whose first child (after a CRC-32 or Void) is a Timecode; its blocks are read up to its end (or
/// the end of the file, for the unknown size a live writer leaves). The time lacks the last
/// frame's own duration (a frame, 20–40 ms), which nothing in the file states.
enum MatroskaTail {
    static let scans: [Int64] = [1 << 20, 16 << 20]
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

/// EBML's variable-length integers over a byte array, each read nil past its end.
private struct EBMLReader {
    let bytes: [UInt8]
    var position: Int

    /// Length of a variable-length integer from its first byte (1 to 8), nil for a zero byte.
    private func width(_ first: UInt8) -> Int? { first == 0 ? nil : first.leadingZeroBitCount + 1 }

    /// An element ID, its length marker kept (as Matroska writes IDs: 0x1F43B675).
    mutating func id() -> UInt32? {
        guard position < bytes.count, let n = width(bytes[position]), n <= 4, position + n <= bytes.count else { return nil }
        let value = bytes[position..<position + n].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        position += n
        return value
    }

    /// An element size: nil when unreadable, `.some(nil)` for the unknown size (all ones).
    mutating func size() -> Int?? {
        guard position < bytes.count, let n = width(bytes[position]), position + n <= bytes.count else { return nil }
        var value = UInt64(bytes[position]) & (0xFF >> UInt64(n))
        for byte in bytes[position + 1..<position + n] { value = value << 8 | UInt64(byte) }
        position += n
        if value == (UInt64(1) << (7 * UInt64(n))) - 1 { return .some(nil) }
        return value <= UInt64(Int32.max) ? .some(Int(value)) : nil
    }

    mutating func uint(_ count: Int) -> Int64? {
        guard count >= 1, count <= 8, position + count <= bytes.count else { return nil }
        let value = bytes[position..<position + count].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        position += count
        return value <= UInt64(Int64.max / 2) ? Int64(value) : nil
    }

    /// The relative timecode of the block whose body starts at `body`: after its track number
    /// (a variable-length integer), a signed 16-bit value.
    func blockTimecode(at body: Int) -> Int16? {
        guard body < bytes.count, let n = width(bytes[body]), body + n + 2 <= bytes.count else { return nil }
        return Int16(bitPattern: UInt16(bytes[body + n]) << 8 | UInt16(bytes[body + n + 1]))
    }
}
