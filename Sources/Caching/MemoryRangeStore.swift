import Synchronization

/// A bounded in-memory `RangeStore` for reads that must not touch the disk cache
/// (`--no-cache`, or a resource larger than the cache limit). Keeps the most recently written
/// bytes up to `capacity` and forgets the oldest block first.
///
/// Writes that continue the previous one are appended to the same block (up to `blockSize`), so a
/// long sequential transfer makes a few large blocks rather than thousands of small ones.
public final class MemoryRangeStore: RangeStore {
    public let capacity: Int
    /// Largest block; a quarter of the capacity at most, so eviction has something to drop.
    private let blockSize: Int

    private struct Block {
        let offset: Int64
        var bytes: [UInt8]
        var end: Int64 { offset + Int64(bytes.count) }
        var range: Range<Int64> { offset..<end }
    }
    private struct State {
        var blocks: [Block] = []
        var total = 0
        var validators = ResourceValidators()
        var available = ByteRangeSet()
        var generation: Int64 = 0
    }
    private let state: Mutex<State>
    /// The row of the generations it gives: 0, or the cache entry's it took over from.
    private let row: Int64

    /// `continuing`: the generation of the store whose place this one takes for the same version
    /// (a cache entry that can no longer write), so that readers who pinned it read on here.
    public init(capacity: Int = 64 << 20, continuing: StoreGeneration? = nil) {
        self.capacity = capacity
        blockSize = min(4 << 20, max(1, capacity / 4))
        row = continuing?.row ?? 0
        state = Mutex(State(generation: continuing?.number ?? 0))
    }

    public var validators: ResourceValidators { state.withLock { $0.validators } }
    public var available: ByteRangeSet { state.withLock { $0.available } }

    public func refresh() throws {}

    @discardableResult
    public func applyValidators(_ incoming: ResourceValidators, contentType: String?, replacing: Bool) throws -> Bool {
        state.withLock { s in
            let dropped = replacing || s.validators.conflicts(with: incoming)
            if dropped { s = State(generation: s.generation + 1) }
            s.validators = s.validators.merged(with: incoming)
            return dropped
        }
    }

    public func dropVersion(_ generation: StoreGeneration) throws {
        state.withLock { s in
            if s.generation == generation.number { s = State(validators: s.validators, generation: s.generation + 1) }
        }
    }

    public var generation: StoreGeneration { state.withLock { StoreGeneration(row: row, number: $0.generation) } }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, generation: StoreGeneration) throws -> Bool {
        state.withLock { s in
            guard s.generation == generation.number else { return false }
            if let last = s.blocks.indices.last, s.blocks[last].end == offset,
                s.blocks[last].bytes.count + bytes.count <= blockSize
            {
                s.blocks[last].bytes.append(contentsOf: bytes)
            } else {
                var block = Block(offset: offset, bytes: [])
                block.bytes.reserveCapacity(max(bytes.count, blockSize))
                block.bytes.append(contentsOf: bytes)
                s.blocks.append(block)
            }
            s.total += bytes.count
            s.available.insert(offset..<offset + Int64(bytes.count))
            var evicted = false
            while s.total > capacity, s.blocks.count > 1 {
                s.total -= s.blocks.removeFirst().bytes.count
                evicted = true
            }
            if evicted { s.available = ByteRangeSet(s.blocks.map(\.range)) }
            return true
        }
    }

    public func commit() throws {}

    public func releaseAfterCommit(_ claim: FetchClaim) { claim.release() }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> StoredRead {
        state.withLock { s in
            var copied = 0
            // Blocks may overlap; walk forward from `offset` taking the newest block covering each position.
            while copied < buffer.count {
                let position = offset + Int64(copied)
                guard let block = s.blocks.last(where: { $0.range.contains(position) }) else { break }
                let start = Int(position - block.offset)
                let n = min(buffer.count - copied, block.bytes.count - start)
                block.bytes.withUnsafeBytes { src in
                    (buffer.baseAddress! + copied).copyMemory(from: src.baseAddress! + start, byteCount: n)
                }
                copied += n
            }
            return StoredRead(
                count: copied, generation: StoreGeneration(row: row, number: s.generation), validators: s.validators)
        }
    }

    public func peek(at offset: Int64) -> StoredRead {
        state.withLock { s in
            StoredRead(
                count: Int(min(s.available.coveredLength(from: offset), Int64(Int.max))),
                generation: StoreGeneration(row: row, number: s.generation), validators: s.validators)
        }
    }

    public func recordRead(fromCache: Int64, miss: Bool) {}

    public func recordFetched(_ bytes: Int64) {}

    /// Memory has no file for the kernel to send from.
    public func openStored(_ range: Range<Int64>) throws -> StoredFile? { nil }

    /// No other process sees this store: the whole range, without a lock.
    public func claimFetch(_ range: Range<Int64>, isCancelled: () -> Bool) throws -> FetchClaim? {
        FetchClaim(range: range)
    }
}
