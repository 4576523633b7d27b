#if canImport(Glibc)
import Glibc
#endif

/// Size limit: least recently used whole resources go first; one that any process holds open
/// (shared `flock` on its data file) is skipped, so eviction never pulls bytes from under a reader.
extension ByteCache {
    /// A resource eviction passed by because it is held open, and the bytes it stores.
    public struct HeldResource: Sendable, Equatable {
        public let row: Int64
        public let bytes: Int64
    }

    /// Evicts until the stored total is within the limit. When it cannot, because what would go
    /// next is held open, the holder of idle open entries (`onHeldOverLimit`) is asked to close
    /// enough of them, and if it did, eviction passes once more: an entry kept open only to be
    /// reopened faster must not hold the cache past its limit.
    func enforceLimit(keeping keptID: Int64) throws {
        let pass = try evict(keeping: keptID)
        guard pass.excess > 0, !pass.passedBy.isEmpty, let release = idleHolder.withLock({ $0 }),
            release(pass.passedBy, pass.excess)
        else { return }
        _ = try evict(keeping: keptID)
    }

    /// Names the holder of idle open entries: `release` is given the resources eviction passed by
    /// because they are held open (least recently used first, as eviction met them) and how many
    /// bytes the cache is over its limit; it closes those it keeps open without a reader, enough
    /// to cover the excess, and says whether it closed any. One holder per cache (the service's
    /// session). It is called after the index lock is let go, from the commit that found the cache
    /// over its limit.
    public func onHeldOverLimit(_ release: @escaping @Sendable (_ passedBy: [HeldResource], _ excess: Int64) -> Bool) {
        idleHolder.withLock { $0 = release }
    }

    /// One pass, least recently used first: by how much the total is still over the limit, and
    /// the resources passed by because they are held open.
    private func evict(keeping keptID: Int64) throws -> (excess: Int64, passedBy: [HeldResource]) {
        try index.withLock { db in
            var total = try ByteCache.totalStoredBytes(db: db)
            guard total > maxBytes else { return (0, []) }
            var passedBy: [HeldResource] = []
            for (row, bytes) in try ByteCache.evictionCandidates(db: db) where row.row != keptID {
                guard total > maxBytes else { break }
                let path = dataPath(row)
                let evicted = try DataFile.lockExclusivelyIfUnused(path: path) {
                    try db.writeTransaction {
                        try db.query(
                            "DELETE FROM resources WHERE id = ? AND generation = ?",
                            [.int(row.row), .int(row.number)])
                    }
                    unlink(path)
                }
                if evicted { total -= bytes } else { passedBy.append(HeldResource(row: row.row, bytes: bytes)) }
            }
            return (max(0, total - maxBytes), passedBy)
        }
    }
}
