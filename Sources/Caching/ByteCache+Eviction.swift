#if canImport(Glibc)
import Glibc
#endif

/// Size limit: least recently used whole resources go first; one that any process holds open
/// (shared `flock` on its data file) is skipped, so eviction never pulls bytes from under a reader.
extension ByteCache {
    /// Evicts until the stored total is within the limit. When it cannot, because what would go
    /// next is held open, the holder that keeps idle entries open (`onHeldOverLimit`) lets them go
    /// and eviction passes once more: an entry kept open only to be reopened faster must not hold
    /// the cache past its limit.
    func enforceLimit(keeping keptID: Int64) throws {
        guard try evict(keeping: keptID), let release = idleHolder.withLock({ $0 }) else { return }
        release()
        _ = try evict(keeping: keptID)
    }

    /// Names what to call when the cache is over its limit and held entries are in the way: it
    /// should close the entries it keeps open without a reader (see `enforceLimit`). One holder per
    /// cache (the service's session); it is called outside the cache's locks.
    public func onHeldOverLimit(_ release: @escaping @Sendable () -> Void) {
        idleHolder.withLock { $0 = release }
    }

    /// One pass, least recently used first: true when the total is still over the limit because
    /// resources held open were passed by.
    private func evict(keeping keptID: Int64) throws -> Bool {
        try index.withLock { db in
            var total = try ByteCache.totalStoredBytes(db: db)
            guard total > maxBytes else { return false }
            var passedBy = false
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
                if evicted { total -= bytes } else { passedBy = true }
            }
            return total > maxBytes && passedBy
        }
    }
}
