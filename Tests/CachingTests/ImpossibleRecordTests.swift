import Caching
import Foundation
import TestSupport
import XCTest

/// Numbers in the index are not trusted either: a record no writer of ours could have made is
/// dropped with its data file, as if it had never been cached.
final class ImpossibleRecordTests: XCTestCase {
    private let damages: [(name: String, sql: String)] = [
        ("negative-size", "UPDATE resources SET size = -5 WHERE key = 'http://o.test/negative-size';"),
        ("absurd-size", "UPDATE resources SET size = 1125899906842625 WHERE key = 'http://o.test/absurd-size';"),
        ("text-size", "UPDATE resources SET size = 'big' WHERE key = 'http://o.test/text-size';"),
        ("generation-zero", "UPDATE resources SET generation = 0 WHERE key = 'http://o.test/generation-zero';"),
        // The next version would overflow it.
        (
            "generation-max",
            "UPDATE resources SET generation = 9223372036854775807 WHERE key = 'http://o.test/generation-max';"
        ),
        (
            "inverted-range",
            "INSERT INTO ranges SELECT id, 900, 850 FROM resources WHERE key = 'http://o.test/inverted-range';"
        ),
        (
            "empty-range",
            "INSERT INTO ranges SELECT id, 900, 900 FROM resources WHERE key = 'http://o.test/empty-range';"
        ),
        (
            "negative-range",
            "INSERT INTO ranges SELECT id, -100, -10 FROM resources WHERE key = 'http://o.test/negative-range';"
        ),
        (
            "overlapping-ranges",
            "INSERT INTO ranges SELECT id, 50, 700 FROM resources WHERE key = 'http://o.test/overlapping-ranges';"
        ),
        (
            "range-past-size",
            "UPDATE ranges SET end = 1500 WHERE start = 800 AND resource_id = (SELECT id FROM resources WHERE key = 'http://o.test/range-past-size');"
        ),
        // Without a size to compare with, and with a byte count to match: summing would overflow.
        (
            "huge-ranges",
            """
            UPDATE resources SET size = NULL, stored_bytes = 9223372036854775000 WHERE key = 'http://o.test/huge-ranges';
            INSERT INTO ranges SELECT id, 4611686018427387904, 9223372036854775807 FROM resources WHERE key = 'http://o.test/huge-ranges';
            INSERT INTO ranges SELECT id, 2000, 4611686018427387000 FROM resources WHERE key = 'http://o.test/huge-ranges';
            """
        ),
        (
            "wrong-stored-bytes",
            "UPDATE resources SET stored_bytes = 123456789 WHERE key = 'http://o.test/wrong-stored-bytes';"
        ),
    ]

    func testImpossibleRecordsAreDroppedWithTheirDataFiles() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        let names = ["good"] + damages.map(\.name)
        do {
            let cache = try ByteCache(directory: path)
            for name in names {
                let entry = try cache.entry(for: "http://o.test/\(name)")
                try entry.applyValidators(ResourceValidators(size: 1000, etag: "\"e\""), contentType: nil)
                try write(entry, [UInt8](repeating: 9, count: 100), at: 0)
                try write(entry, [UInt8](repeating: 9, count: 100), at: 800)
                try entry.commit()
            }
        }
        XCTAssertEqual(contents(of: path + "/data").count, names.count)
        try sqlite3(path + "/index.sqlite", damages.map(\.sql).joined(separator: "\n"))

        let cache = try ByteCache(directory: path)
        XCTAssertEqual(try cache.resources().map(\.url), ["http://o.test/good"])
        XCTAssertEqual(contents(of: path + "/data").count, 1, "data files of dropped records are removed")
        XCTAssertEqual(cache.warnings.count, damages.count, "\(cache.warnings)")
        for (name, _) in damages {
            XCTAssertTrue(
                cache.warnings.contains { $0.contains("http://o.test/\(name)") },
                "no warning for \(name): \(cache.warnings)")
            let entry = try cache.entry(for: "http://o.test/\(name)")
            XCTAssertTrue(entry.available.isEmpty, name)
            XCTAssertEqual(entry.validators, ResourceValidators(), name)
        }
        XCTAssertEqual(try cache.presentRanges(for: "http://o.test/good").ranges, [0..<100, 800..<900])
        XCTAssertEqual(try ByteCache(directory: path).warnings, [], "dropped once, not again")
    }

    /// Recorded ranges promise bytes in the data file: a file that is gone or shorter than the
    /// ranges (deleted or truncated by hand) makes the record impossible too.
    func testRecordWhoseDataFileIsMissingOrShortIsDropped() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        do {
            let cache = try ByteCache(directory: path)
            for name in ["missing", "short"] {
                let entry = try cache.entry(for: "http://o.test/\(name)")
                try write(entry, [UInt8](repeating: 9, count: 100), at: 1000)
                try entry.commit()
            }
        }
        XCTAssertEqual(unlink(path + "/data/1-1.bin"), 0)
        XCTAssertEqual(truncate(path + "/data/2-1.bin", 1050), 0)
        let cache = try ByteCache(directory: path)
        for name in ["missing", "short"] {
            let entry = try cache.entry(for: "http://o.test/\(name)")
            XCTAssertTrue(entry.available.isEmpty, name)
            XCTAssertEqual(try read(entry, at: 1000, count: 10), [], name)
        }
        XCTAssertEqual(cache.warnings.count, 2, "\(cache.warnings)")
    }

    /// A data file truncated while an entry is open, then extended by a later write of that entry:
    /// the truncated part would read back as zeros. The write notices first; the record goes.
    func testADataFileTruncatedUnderAWriterIsNotReadBackAsZeros() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.file("cache"))
        let entry = try cache.entry(for: "http://o.test/v")
        try write(entry, [UInt8](repeating: 7, count: 1000), at: 0)
        try entry.commit()
        XCTAssertEqual(truncate(dir.file("cache/data/1-1.bin"), 0), 0)
        let accepted = try [UInt8](repeating: 8, count: 100).withUnsafeBytes {
            try entry.write($0, at: 5000, generation: entry.generation)
        }
        XCTAssertFalse(accepted, "the write into a file that lost recorded bytes is refused")
        let reader = try ByteCache(directory: dir.file("cache")).entry(for: "http://o.test/v")
        XCTAssertEqual(
            try read(reader, at: 0, count: 1000), [], "nothing recorded at 0 any more: fetched again, never zeros")
        XCTAssertTrue(cache.warnings.contains { $0.contains("ends at byte 0") }, "\(cache.warnings)")
    }
}
