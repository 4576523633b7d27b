import ByteSources
import RangeFetch

/// A resource held in memory, every byte local: the parsers' input in the fast tier, with no
/// cache, network or file behind it. Counts the bytes read, so a test can say how much a parser
/// looked at.
final class BytesSource: MediaSource, @unchecked Sendable {
    let input: String
    private let data: [UInt8]
    /// Prefetches asked for, in order (all of them served from memory).
    private(set) var prefetched: [Range<Int64>] = []

    init(_ data: [UInt8], input: String = "memory.bin") {
        self.data = data
        self.input = input
    }

    func size() throws -> Int64? { Int64(data.count) }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset < Int64(data.count) else { return 0 }
        let count = min(buffer.count, data.count - Int(offset))
        data.withUnsafeBytes {
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[Int(offset)..<Int(offset) + count]))
        }
        return count
    }

    func prefetch(_ range: Range<Int64>) throws { prefetched.append(range) }
    func missingRanges(in range: Range<Int64>) -> [Range<Int64>] { [] }
    func limitReadahead(to end: Int64?) {}
    func makeDurable() throws {}
    var counters: SourceCounters { SourceCounters() }
    var versionChanged: Bool { false }
    var warnings: [String] { [] }
    var keepsBytes: Bool { true }
    var whyNotKept: String { "" }
}

/// Bytes written big-endian, for building boxes and elements in tests.
func be(_ value: UInt64, _ width: Int) -> [UInt8] {
    (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}

/// An ISO-BMFF box: 32-bit size, type, body.
func box(_ type: String, _ body: [UInt8] = []) -> [UInt8] { be(UInt64(8 + body.count), 4) + Array(type.utf8) + body }
