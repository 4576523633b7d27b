#if canImport(Glibc)
import Glibc
#endif

/// Cross-process fetch claims: write locks (Linux OFD byte-range locks) on the data file over
/// the bytes being fetched. Each claim is its own open file description, so claims conflict with
/// every other claim — in other processes, other entries of this process, other claims of this
/// entry — and a claim is released by closing its description, or by its process dying.
extension CacheEntry {
    /// How often a waiting claimer looks again (and consults `isCancelled`).
    static let claimPollMicroseconds: useconds_t = 10_000

    public func claimFetch(_ range: Range<Int64>, isCancelled: () -> Bool) throws -> FetchClaim? {
        let (file, refusal) = fileAndRefusal
        // Nothing can be stored here, so there is nothing to share: fetch it all.
        guard !range.isEmpty, refusal == nil, let file else { return FetchClaim(range: range) }
        let lock = try file.openLockDescription()
        var wanted = range
        while true {
            guard let conflict = try lock.conflict(in: wanted) else {
                if try lock.tryLock(wanted) { return FetchClaim(range: wanted, lock: lock) }
                continue  // another claim came between the test and the lock: look again
            }
            if conflict > wanted.lowerBound {
                // Someone else fetches from `conflict` on: claim the bytes before it (and look for
                // another holder in them).
                wanted = wanted.lowerBound..<conflict
                continue
            }
            // Someone else fetches the first byte: wait until they let go, then the caller
            // re-reads the index (the bytes are there, or that fetch failed and it claims again).
            let first = wanted.lowerBound..<wanted.lowerBound + 1
            while try lock.conflict(in: first) != nil {
                if isCancelled() { throw CancellationError() }
                usleep(CacheEntry.claimPollMicroseconds)
            }
            return nil
        }
    }
}
