import Synchronization

/// A byte range that one fetcher has claimed, visible to every other process (and every other
/// entry) on the same cache: while it is held, others that want its first byte wait instead of
/// fetching it too. Returned by `RangeStore.claimFetch`.
///
/// The holder fetches `range`, writes and commits it, then calls `release()` (or lets the claim
/// go: dropping it releases too). A process that dies releases its claims with it.
public final class FetchClaim: Sendable {
    /// The claimed bytes: a prefix of what was asked, ending where another holder's claim begins.
    public let range: Range<Int64>
    /// nil for stores that nothing else shares (memory), and once released.
    private let lock: Mutex<ByteRangeLock?>

    init(range: Range<Int64>, lock: ByteRangeLock? = nil) {
        self.range = range
        self.lock = Mutex(lock)
    }

    /// Lets others fetch (or, having waited, read) the range. Call after `commit()`, so a waiter
    /// that re-reads the index finds the bytes. Releasing twice is harmless; a claim that is
    /// dropped unreleased is released by the lock's `deinit` (closing its descriptor).
    public func release() {
        lock.withLock { $0 = nil }
    }
}
