import Synchronization

/// A bounded in-memory `RangeStore` for reads that must not touch the disk cache
/// (`--no-cache`, or a resource larger than the cache limit). Keeps the most recently written
/// chunks up to `capacity` bytes and forgets the oldest first.
public final class MemoryRangeStore: RangeStore {
    public let capacity: Int

    private struct Chunk {
        let offset: Int64
        let bytes: [UInt8]
        var range: Range<Int64> { offset..<offset + Int64(bytes.count) }
    }
    private struct State {
        var chunks: [Chunk] = []
        var total = 0
        var validators = ResourceValidators()
        var available = RangeSet()
    }
    private let state = Mutex(State())

    public init(capacity: Int = 64 << 20) { self.capacity = capacity }

    public var validators: ResourceValidators { state.withLock { $0.validators } }
    public var available: RangeSet { state.withLock { $0.available } }

    public func refresh() throws {}

    @discardableResult
    public func applyValidators(_ incoming: ResourceValidators, contentType: String?) throws -> Bool {
        state.withLock { s in
            let dropped = s.validators.conflicts(with: incoming)
            if dropped { s = State() }
            s.validators = s.validators.merged(with: incoming)
            return dropped
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        state.withLock { s in
            s.chunks.append(Chunk(offset: offset, bytes: Array(bytes)))
            s.total += bytes.count
            while s.total > capacity, s.chunks.count > 1 {
                s.total -= s.chunks.removeFirst().bytes.count
            }
            s.available = RangeSet(s.chunks.map(\.range))
        }
    }

    public func commit() throws {}

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        state.withLock { s in
            var copied = 0
            // Chunks may overlap; walk forward from `offset` taking the newest chunk that covers each position.
            while copied < buffer.count {
                let position = offset + Int64(copied)
                guard let chunk = s.chunks.last(where: { $0.range.contains(position) }) else { break }
                let start = Int(position - chunk.offset)
                let n = min(buffer.count - copied, chunk.bytes.count - start)
                chunk.bytes.withUnsafeBytes { src in
                    (buffer.baseAddress! + copied).copyMemory(from: src.baseAddress! + start, byteCount: n)
                }
                copied += n
            }
            return copied
        }
    }

    public func recordRead(fromCache: Int64, fetched: Int64) {}
}
