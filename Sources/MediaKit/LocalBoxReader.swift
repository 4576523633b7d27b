import MediaSource

/// Box headers and small fields read from bytes already local, within a budget of boxes.
struct LocalBoxReader {
    let source: any MediaSource
    var budget = LocalBoxReader.maxBoxes
    static let maxBoxes = 10_000

    /// The well-formed child boxes in `range`, each with its body (clipped to `range`); stops at
    /// bytes that are not local, at a malformed header, or when the budget is spent.
    mutating func children(of range: Range<Int64>) -> [(box: StatedBox, body: Range<Int64>)] {
        var found: [(StatedBox, Range<Int64>)] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound, budget > 0, source.isLocal(offset..<min(range.upperBound, offset + 16)) {
            budget -= 1
            guard let box = try? StatedBox.readIfWellFormed(from: source, at: offset) else { break }
            let end = box.size.map { $0 <= range.upperBound - offset ? offset + $0 : range.upperBound } ?? range.upperBound
            found.append((box, offset + Int64(box.headerSize)..<end))
            offset = end
        }
        return found
    }

    /// `count` bytes at `offset` when they are local, else nil.
    func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard offset >= 0, source.isLocal(offset..<offset + Int64(count)),
              let bytes = try? source.bytes(at: offset, count: count), bytes.count == count else { return nil }
        return bytes
    }
}

/// Big-endian fields of a box body, read in order; nil once the body runs out.
struct FieldReader {
    private let bytes: [UInt8]
    private(set) var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remaining else { return false }
        position += count
        return true
    }

    /// An unsigned integer of `width` bytes (at most 8).
    mutating func uint(_ width: Int) -> UInt64? {
        guard width >= 0, width <= 8, width <= remaining else { return nil }
        let value = bytes[position..<position + width].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        position += width
        return value
    }

    mutating func u32() -> UInt32? { uint(4).map { UInt32($0) } }

    /// Version (one byte) and flags (three) of a full box.
    mutating func versionAndFlags() -> (version: UInt8, flags: UInt32)? {
        guard let word = u32() else { return nil }
        return (UInt8(word >> 24), word & 0xFF_FFFF)
    }
}
