import Caching
import Foundation
import TestSupport
import XCTest

/// A broken index never locks the user out: it is moved aside and rebuilt, or reset without SQLite.
final class IndexRecoveryTests: XCTestCase {
    /// A cache with `count` resources of 1000 bytes each, closed again.
    private func populate(_ path: String, count: Int) throws {
        let cache = try ByteCache(directory: path)
        for i in 0..<count {
            let entry = try cache.entry(for: "http://o.test/\(i)")
            try entry.applyValidators(ResourceValidators(size: 1000, etag: "\"\(i)\""), contentType: "video/mp4")
            try write(entry, [UInt8](repeating: UInt8(i & 0xff), count: 500), at: 0)
            try write(entry, [UInt8](repeating: 1, count: 100), at: 800)
            try entry.commit()
        }
    }

    private func assertRecovered(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let cache = try ByteCache(directory: path)
        XCTAssertEqual(try cache.resources().count, 0, file: file, line: line)
        let aside = contents(of: path).filter { $0.hasPrefix("index.sqlite.corrupt-") }
        XCTAssertEqual(
            aside.count, 1, "the broken index is kept for inspection: \(contents(of: path))", file: file, line: line)
        XCTAssertEqual(
            contents(of: path + "/data"), [], "data files of the old index are removed", file: file, line: line)
        XCTAssertEqual(cache.warnings.count, 1, "\(cache.warnings)", file: file, line: line)
        XCTAssertTrue(
            cache.warnings.first?.contains(path + "/index.sqlite") ?? false, "\(cache.warnings)", file: file, line: line
        )
        // And it works again.
        let entry = try cache.entry(for: "http://o.test/again")
        try write(entry, [7, 7], at: 0)
        try entry.commit()
        XCTAssertEqual(
            try ByteCache(directory: path).presentRanges(for: "http://o.test/again").ranges, [0..<2], file: file,
            line: line)
    }

    func testGarbageIndexIsMovedAsideAndRebuiltEmpty() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try populate(path, count: 3)
        try Data(randomBytes(20_000, seed: 5)).write(to: URL(fileURLWithPath: path + "/index.sqlite"))
        try assertRecovered(path)
    }

    func testTruncatedIndexIsMovedAsideAndRebuiltEmpty() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try populate(path, count: 400)  // several pages of rows and ranges
        let size = try XCTUnwrap(
            try FileManager.default.attributesOfItem(atPath: path + "/index.sqlite")[.size] as? Int)
        XCTAssertGreaterThan(size, 40_000)
        XCTAssertEqual(truncate(path + "/index.sqlite", off_t(size / 2)), 0)
        try assertRecovered(path)
    }

    func testIndexOfTheWrongShapeIsMovedAside() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try populate(path, count: 1)
        try sqlite3(path + "/index.sqlite", "DROP TABLE ranges;")
        try assertRecovered(path)
    }

    func testResetEmptiesACacheWhoseIndexCannotBeOpened() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try populate(path, count: 2)
        let victim = dir.file("victim.sqlite")
        try sqlite3(victim, "CREATE TABLE t(a); INSERT INTO t VALUES(1);")
        try FileManager.default.removeItem(atPath: path + "/index.sqlite")
        XCTAssertEqual(symlink(victim, path + "/index.sqlite"), 0)
        XCTAssertThrowsError(try ByteCache(directory: path), "a symlinked index is refused")
        try ByteCache.reset(directory: path)
        XCTAssertEqual(contents(of: path).sorted(), ["CACHEDIR.TAG", "data"], "still a cache, an empty one")
        XCTAssertEqual(contents(of: path + "/data"), [])
        XCTAssertEqual(try sqlite3(victim, "SELECT a FROM t;"), "1", "the link's target is untouched")
        XCTAssertEqual(try ByteCache(directory: path).resources().count, 0)
    }

    /// Opening writes nothing when the schema is there, so another process's long write
    /// transaction (or a full disk) does not stop reads of what is cached.
    func testOpeningAndReadingDoNotWaitForAnotherProcessesWriteLock() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try populate(path, count: 1)
        let holder = try WriteLockHolder(database: path + "/index.sqlite", seconds: 4, scratch: dir)
        defer { holder.wait() }
        let started = Date()
        let cache = try ByteCache(directory: path)
        let entry = try cache.entry(for: "http://o.test/0")
        XCTAssertEqual(try read(entry, at: 0, count: 600), [UInt8](repeating: 0, count: 500))
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "opening waited for the write lock")
    }
}
