import ByteSources

/// Box headers and small fields read from bytes already local, within a budget of boxes.
package struct LocalBoxReader {
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
            let end =
                box.size.map { $0 <= range.upperBound - offset ? offset + $0 : range.upperBound } ?? range.upperBound
            found.append((box, offset + Int64(box.headerSize)..<end))
            offset = end
        }
        return found
    }

    /// `count` bytes at `offset` when they are local, else nil.
    func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard offset >= 0, source.isLocal(offset..<offset + Int64(count)),
            let bytes = try? source.bytes(at: offset, count: count), bytes.count == count
        else { return nil }
        return bytes
    }
}
