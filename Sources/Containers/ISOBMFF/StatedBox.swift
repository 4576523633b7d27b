import ByteSources

/// A box header as the file states it, before its size is checked against what contains it.
/// ISO-BMFF sizes are 32-bit, or 1 followed by a 64-bit size, or 0 for "to the end of the
/// enclosing box (at the top level: of the file)".
package struct StatedBox {
    let type: String
    let offset: Int64
    let headerSize: Int
    /// The full size, header included; nil for size 0.
    let size: Int64?

    /// A malformed header, in words.
    package struct Problem: Error {
        let text: String
    }

    /// Reads the header at `offset` from `source`: nil when fewer than 8 bytes are there.
    /// Throws `Problem` for a header that cannot be a box's.
    static func read(from source: any MediaSource, at offset: Int64) throws -> StatedBox? {
        let bytes = try source.bytes(at: offset, count: 16)
        guard bytes.count >= 8 else { return nil }
        let size32 = Int64(BigEndian.uint(bytes[0..<4]))
        let typeBytes = bytes[4..<8]
        guard typeBytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            throw Problem(text: "unreadable box header at offset \(offset)")
        }
        let type = String(decoding: typeBytes, as: UTF8.self)
        switch size32 {
        case 0:
            return StatedBox(type: type, offset: offset, headerSize: 8, size: nil)
        case 1:
            guard bytes.count >= 16 else { throw Problem(text: "truncated 64-bit box header at offset \(offset)") }
            let large = BigEndian.uint(bytes[8..<16])
            guard large <= UInt64(Int64.max) else { throw Problem(text: "box size overflows at offset \(offset)") }
            guard large >= 16 else {
                throw Problem(text: "box '\(type)' at offset \(offset) has an impossible size \(large)")
            }
            return StatedBox(type: type, offset: offset, headerSize: 16, size: Int64(large))
        default:
            guard size32 >= 8 else {
                throw Problem(text: "box '\(type)' at offset \(offset) has an impossible size \(size32)")
            }
            return StatedBox(type: type, offset: offset, headerSize: 8, size: size32)
        }
    }

    /// Like `read`, but a malformed header is nil too: for walks that stop where boxes stop making
    /// sense. Errors of the source (network, offline) still throw.
    static func readIfWellFormed(from source: any MediaSource, at offset: Int64) throws -> StatedBox? {
        do { return try read(from: source, at: offset) } catch is Problem { return nil }
    }
}

extension MediaSource {
    /// Up to `count` bytes at `offset` (fewer at the end of the resource).
    package func bytes(at offset: Int64, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = try bytes.withUnsafeMutableBytes {
                try read(into: UnsafeMutableRawBufferPointer(rebasing: $0[done...]), at: offset + Int64(done))
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[0..<done])
    }
}
