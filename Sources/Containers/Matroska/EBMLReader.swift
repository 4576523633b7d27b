/// EBML's variable-length integers over a byte array, each read nil past its end.
package struct EBMLReader {
    let bytes: [UInt8]
    var position: Int

    /// Length of a variable-length integer from its first byte (1 to 8), nil for a zero byte.
    private func width(_ first: UInt8) -> Int? { first == 0 ? nil : first.leadingZeroBitCount + 1 }

    /// An element ID, its length marker kept (as Matroska writes IDs: 0x1F43B675).
    mutating func id() -> UInt32? {
        guard position < bytes.count, let n = width(bytes[position]), n <= 4, position + n <= bytes.count else {
            return nil
        }
        let value = UInt32(BigEndian.uint(bytes[position..<position + n]))
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
        let value = BigEndian.uint(bytes[position..<position + count])
        position += count
        return value <= UInt64(Int64.max / 2) ? Int64(value) : nil
    }

    /// The bodies of the elements `id` among the children in `within` (a master element's body),
    /// each within `bytes`; the walk stops at an unknown size or one past the body.
    static func bodies(of id: UInt32, in bytes: [UInt8], within: Range<Int>) -> [Range<Int>] {
        var found: [Range<Int>] = []
        var reader = EBMLReader(bytes: bytes, position: within.lowerBound)
        let end = min(within.upperBound, bytes.count)
        while reader.position < end, let child = reader.id(), let size = reader.size(), let length = size,
            length <= end - reader.position
        {
            if child == id { found.append(reader.position..<reader.position + length) }
            reader.position += length
        }
        return found
    }
}
