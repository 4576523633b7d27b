#if canImport(Glibc)
import Glibc
#endif

/// Size limit: least recently used whole resources go first; one that any process holds open
/// (shared `flock` on its data file) is skipped, so eviction never pulls bytes from under a reader.
extension ByteCache {
    func enforceLimit(keeping keptID: Int64) throws {
        try index.withLock { db in
            var total = try ByteCache.totalStoredBytes(db: db)
            guard total > maxBytes else { return }
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
                if evicted { total -= bytes }
            }
        }
    }
}
