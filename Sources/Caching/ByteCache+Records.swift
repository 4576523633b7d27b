/// Stored numbers are not trusted either. A record no writer of ours could have made — a size
/// that is negative or absurd, ranges that are empty, inverted, negative, overlapping or past the
/// size, a generation below 1 or absurdly high, a stored byte count that disagrees with the
/// ranges, or ranges in a data file that is missing or shorter — is deleted with its data file,
/// as if never cached.
extension ByteCache {
    /// Larger than any real resource (1 PiB) or generation count; a bigger number is damage, and
    /// would overflow sums and increments.
    static let largestPlausibleValue: Int64 = 1 << 50

    struct ImpossibleRecord {
        let row: Int64
        let url: String
        let reason: String

        func warning(dropped: Bool) -> String {
            "\(dropped ? "dropped" : "ignoring") the cached copy of \(url): \(reason)"
        }
    }

    /// Every impossible record, from one pass over both tables (which also makes SQLite read every
    /// page of them: the open-time query that finds a damaged index).
    static func impossibleRecords(db: SQLiteDatabase) throws -> [ImpossibleRecord] {
        var found: [ImpossibleRecord] = []
        try db.query(
            """
            SELECT id, url, CASE
                WHEN typeof(generation) != 'integer' OR generation < 1 OR generation > ?1
                    THEN 'its generation ' || quote(generation) || ' is impossible'
                WHEN typeof(size) NOT IN ('integer', 'null') OR size < 0 OR size > ?1
                    THEN 'its size ' || quote(size) || ' is impossible'
                WHEN range_problem IS NOT NULL THEN range_problem
                WHEN size IS NOT NULL AND last_end > size
                    THEN 'a range ends at byte ' || last_end || ', past its size ' || size
                WHEN typeof(stored_bytes) != 'integer' OR stored_bytes != COALESCE(covered, 0)
                    THEN 'its stored byte count ' || quote(stored_bytes) || ' disagrees with its ranges'
                END AS reason
            FROM resources LEFT JOIN (
                SELECT resource_id, TOTAL(end - start) AS covered, MAX(end) AS last_end, MIN(problem) AS range_problem
                FROM (SELECT resource_id, start, end, CASE
                        WHEN typeof(start) != 'integer' OR typeof(end) != 'integer' THEN 'a range bound is not an integer'
                        WHEN start < 0 THEN 'a range starts before byte 0'
                        WHEN end > ?1 THEN 'a range ends past any plausible size'
                        WHEN end <= start THEN 'a range is empty or inverted'
                        WHEN start < LAG(end) OVER (PARTITION BY resource_id ORDER BY start) THEN 'two of its ranges overlap'
                        END AS problem
                      FROM ranges)
                GROUP BY resource_id
            ) ON resource_id = id
            WHERE reason IS NOT NULL
            """, [.int(largestPlausibleValue)]
        ) {
            found.append(ImpossibleRecord(row: $0.int(0), url: $0.text(1) ?? "?", reason: $0.text(2) ?? "?"))
        }
        return found
    }

    /// Deletes the record and every data file of its row. False when the index cannot be
    /// written now (a full disk): the caller must then ignore the record instead.
    static func drop(_ record: ImpossibleRecord, db: SQLiteDatabase, layout: CacheDirectory) throws -> Bool {
        do {
            try deleteRow(db: db, id: record.row)
        } catch let error as SQLiteError where error.isStorageFailure {
            return false
        }
        try layout.removeDataFiles { $0.hasPrefix("\(record.row)-") }
        return true
    }

    /// Drops `record` from the cache's own index (see `drop`), with a warning either way.
    func drop(_ record: ImpossibleRecord) throws -> Bool {
        let dropped = try readOnly == nil && index.withLock { try ByteCache.drop(record, db: $0, layout: layout) }
        warn(record.warning(dropped: dropped))
        return dropped
    }

    /// Why `ranges` cannot be in `file`, if they cannot: the file had to be made (it was missing)
    /// or ends before the last range does (it was truncated).
    static func missingBytes(_ ranges: ByteRangeSet, in file: DataFile) throws -> String? {
        guard !ranges.isEmpty else { return nil }
        if file.created { return "its data file \(file.path) was missing" }
        return try truncation(of: ranges, in: file)
    }

    /// Why `ranges` cannot be in `file` any more, if the file ends before the last one does.
    static func truncation(of ranges: ByteRangeSet, in file: DataFile) throws -> String? {
        guard let end = ranges.ranges.last?.upperBound else { return nil }
        let size = try file.size()
        return size < end ? "its data file \(file.path) ends at byte \(size), before its ranges end (\(end))" : nil
    }
}
