import Synchronization

/// How many resources a session may hold in memory at once: those the cache refused
/// (a full disk, a read-only cache: `RemoteResource.streamThrough`) and those larger than its
/// limit (`RemoteResource.moveToMemory`). Each may hold up to 64 MiB while it is read, so a
/// service streaming many such URLs would otherwise grow without bound: on a full disk, ten slow
/// players of ten URLs took 712 MiB. Past the limit the reader is told to try again
/// (`SourceError.memoryFull`).
final class MemorySlots: Sendable {
    let limit: Int
    private let taken = Atomic<Int>(0)

    init(limit: Int = 16) { self.limit = limit }

    /// A slot, or nil when all are taken; it is given back when the value goes.
    func take() -> Slot? {
        var now = taken.load(ordering: .relaxed)
        while now < limit {
            let (exchanged, original) = taken.compareExchange(
                expected: now, desired: now + 1, ordering: .acquiringAndReleasing)
            if exchanged { return Slot(self) }
            now = original
        }
        return nil
    }

    final class Slot: Sendable {
        private let slots: MemorySlots
        fileprivate init(_ slots: MemorySlots) { self.slots = slots }
        deinit { slots.taken.subtract(1, ordering: .relaxed) }
    }
}
