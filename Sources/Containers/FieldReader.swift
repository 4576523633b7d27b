/// Big-endian fields of a box body, read in order; nil once the body runs out.
package struct FieldReader {
    private let bytes: [UInt8]
    private(set) var position = 0

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }

    package mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remaining else { return false }
        position += count
        return true
    }

    /// An unsigned integer of `width` bytes (at most 8).
    package mutating func uint(_ width: Int) -> UInt64? {
        guard width >= 0, width <= 8, width <= remaining else { return nil }
        let value = BigEndian.uint(bytes[position..<position + width])
        position += width
        return value
    }

    package mutating func u32() -> UInt32? { uint(4).map { UInt32($0) } }

    /// Version (one byte) and flags (three) of a full box.
    package mutating func versionAndFlags() -> (version: UInt8, flags: UInt32)? {
        guard let word = u32() else { return nil }
        return (UInt8(word >> 24), word & 0xFF_FFFF)
    }
}
