import Caching
import Foundation
import Synchronization
import TestSupport
import URLSupport
import XCTest

final class ByteCacheTests: XCTestCase {
    func testWrittenRangesPersistAcrossReopen() throws {
        let dir = try TempDirectory()
        let data = randomBytes(200_000, seed: 1)
        do {
            let cache = try ByteCache(directory: dir.path)
            let entry = try cache.entry(for: "http://example.test/a.mp4")
            try entry.applyValidators(ResourceValidators(size: 200_000, etag: "\"x\""), contentType: "video/mp4")
            try write(entry, Array(data[1000..<5000]), at: 1000)
            try write(entry, Array(data[9000..<12000]), at: 9000)
            try entry.commit()
        }
        let cache = try ByteCache(directory: dir.path)
        let resource = try XCTUnwrap(try cache.resource(for: "http://example.test/a.mp4"))
        XCTAssertEqual(resource.ranges.ranges, [1000..<5000, 9000..<12000])
        XCTAssertEqual(resource.size, 200_000)
        XCTAssertEqual(resource.validators.etag, "\"x\"")
        XCTAssertEqual(resource.contentType, "video/mp4")
        XCTAssertEqual(
            try cache.missingRanges(for: "http://example.test/a.mp4", in: 0..<10000), [0..<1000, 5000..<9000])
        let entry = try cache.entry(for: "http://example.test/a.mp4")
        XCTAssertEqual(
            try read(entry, at: 2000, count: 10_000), Array(data[2000..<5000]),
            "a read stops at the end of the present run")
        XCTAssertEqual(try read(entry, at: 5000, count: 10), [], "nothing is read from a gap")
    }

    func testChangedValidatorsDropOldRanges() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path)
        let entry = try cache.entry(for: "http://o.test/v")
        XCTAssertFalse(try entry.applyValidators(ResourceValidators(size: 100, etag: "\"1\""), contentType: nil))
        try write(entry, [UInt8](repeating: 1, count: 100), at: 0)
        try entry.commit()
        // Same validators, or a field the origin did not send: nothing dropped.
        XCTAssertFalse(try entry.applyValidators(ResourceValidators(size: 100, etag: nil), contentType: nil))
        XCTAssertEqual(entry.available.ranges, [0..<100])
        // New ETag: the old bytes go before any new ones arrive.
        XCTAssertTrue(try entry.applyValidators(ResourceValidators(size: 100, etag: "\"2\""), contentType: nil))
        XCTAssertTrue(entry.available.isEmpty)
        XCTAssertTrue(try cache.presentRanges(for: "http://o.test/v").isEmpty)
        try write(entry, [UInt8](repeating: 2, count: 10), at: 0)
        try entry.commit()
        XCTAssertEqual(try read(entry, at: 0, count: 100), [UInt8](repeating: 2, count: 10))
        // A size change alone also counts.
        XCTAssertTrue(try entry.applyValidators(ResourceValidators(size: 99), contentType: nil))
        XCTAssertTrue(try cache.presentRanges(for: "http://o.test/v").isEmpty)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/data")
        XCTAssertEqual(files.count, 1, "data files of old versions are removed: \(files)")
    }

    func testWritesOfAReplacedVersionAreRefused() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path)
        let entry = try cache.entry(for: "http://o.test/r")
        try entry.applyValidators(ResourceValidators(size: 10, etag: "\"1\""), contentType: nil)
        let old = entry.generation
        // Another transfer learns that the content changed...
        XCTAssertTrue(try entry.applyValidators(ResourceValidators(size: 10, etag: "\"2\""), contentType: nil))
        XCTAssertNotEqual(entry.generation, old)
        // ...so a transfer still streaming the old version cannot add its bytes.
        XCTAssertFalse(
            try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try entry.write($0, at: 0, generation: old) })
        try entry.commit()
        XCTAssertTrue(entry.available.isEmpty)
        let store = MemoryRangeStore()
        let memoryOld = store.generation
        try store.applyValidators(ResourceValidators(etag: "a"), contentType: nil)
        try store.applyValidators(ResourceValidators(etag: "b"), contentType: nil)
        XCTAssertFalse(
            try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try store.write($0, at: 0, generation: memoryOld) })
    }

    func testPluggableKeyLetsSignedURLsShareAnEntry() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path, urlRules: URLRules(ignoredQuery: URLRules.QueryNames(["token"])))
        do {
            let entry = try cache.entry(for: "http://cdn.test/v.mp4?token=aaa")
            try write(entry, [1, 2, 3], at: 0)
            try entry.commit()
        }
        XCTAssertEqual(try cache.presentRanges(for: "http://cdn.test/v.mp4?token=bbb").ranges, [0..<3])
        XCTAssertEqual(try cache.resources().count, 1)
    }

    func testLRUEvictionSkipsOpenResources() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path, maxBytes: 250_000)
        let chunk = [UInt8](repeating: 7, count: 100_000)
        let pinned = try cache.entry(for: "http://o.test/pinned")
        try write(pinned, chunk, at: 0)
        try pinned.commit()
        for name in ["a", "b"] {
            let e = try cache.entry(for: "http://o.test/\(name)")
            try write(e, chunk, at: 0)
            try e.commit()
            // Distinct access times: the next one is taken once the clock has passed this one.
            let accessed = try XCTUnwrap(try cache.resources().first { $0.url == "http://o.test/\(name)" }).lastAccess
            while Date().timeIntervalSince1970 <= accessed {}
        }
        // 300 KB > 250 KB: the oldest resource is "pinned", but it is open, so "a" goes instead.
        let urls = Set(try cache.resources().map(\.url))
        XCTAssertEqual(urls, ["http://o.test/pinned", "http://o.test/b"])
        XCTAssertLessThanOrEqual(try cache.stats().storedBytes, 250_000)
        XCTAssertEqual(try cache.presentRanges(for: "http://o.test/pinned").ranges, [0..<100_000])
    }

    func testAHolderOfIdleEntriesLetsThemGoWhenTheyKeepTheCacheOverItsLimit() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path, maxBytes: 250_000)
        let chunk = [UInt8](repeating: 7, count: 100_000)
        // Entries kept open after their last use, as the service keeps its warm resources.
        let idle = Mutex<[CacheEntry]>([])
        let asked = Mutex<[(passedBy: [ByteCache.HeldResource], excess: Int64)]>([])
        cache.onHeldOverLimit { passedBy, excess in
            asked.withLock { $0.append((passedBy, excess)) }
            let released = idle.withLock { list in
                defer { list = [] }
                return list
            }
            return !released.isEmpty
        }
        for name in ["a", "b"] {
            let e = try cache.entry(for: "http://o.test/\(name)")
            try write(e, chunk, at: 0)
            try e.commit()
            idle.withLock { $0.append(e) }
        }
        XCTAssertEqual(asked.withLock { $0.count }, 0, "within the limit, nothing is asked")
        let reading = try cache.entry(for: "http://o.test/c")
        try write(reading, chunk, at: 0)
        try reading.commit()
        // 300 KB > 250 KB with "a" and "b" held: they are let go and one of them is evicted;
        // "c", still open, stays.
        let questions = asked.withLock { $0 }
        XCTAssertEqual(questions.count, 1)
        XCTAssertEqual(questions.first?.passedBy.map(\.bytes), [100_000, 100_000], "a and b, held")
        XCTAssertEqual(questions.first?.excess, 50_000)
        let urls = try cache.resources().map(\.url)
        XCTAssertEqual(urls.count, 2)
        XCTAssertTrue(urls.contains("http://o.test/c"))
        XCTAssertLessThanOrEqual(try cache.stats().storedBytes, 250_000)
    }

    func testCanStoreReportsResourcesBiggerThanTheLimit() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path, maxBytes: 1000)
        XCTAssertTrue(cache.canStore(size: 1000))
        XCTAssertFalse(cache.canStore(size: 1001))
    }

    func testStatsRemoveAndClear() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path)
        for name in ["a", "b"] {
            let e = try cache.entry(for: "http://o.test/\(name)")
            try write(e, [UInt8](repeating: 1, count: 1000), at: 0)
            try e.commit()
        }
        cache.recordRead(fromCache: 1000, miss: false)
        cache.recordFetched(500)
        cache.recordRead(fromCache: 0, miss: true)
        var stats = try cache.stats()
        XCTAssertEqual(stats.resources, 2)
        XCTAssertEqual(stats.storedBytes, 2000)
        XCTAssertEqual(stats.hits, 1)
        XCTAssertEqual(stats.misses, 1)
        XCTAssertEqual(stats.bytesFetched, 500)
        XCTAssertTrue(try cache.remove(url: "http://o.test/a"))
        XCTAssertFalse(try cache.remove(url: "http://o.test/a"))
        XCTAssertEqual(try cache.resources().map(\.url), ["http://o.test/b"])
        try cache.clear()
        stats = try cache.stats()
        XCTAssertEqual(stats.resources, 0)
        XCTAssertEqual(stats.hits, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/data"), [])
    }

    func testUncommittedBytesAreReadableButNotRecorded() throws {
        let dir = try TempDirectory()
        let cache = try ByteCache(directory: dir.path)
        let entry = try cache.entry(for: "http://o.test/p")
        try write(entry, [9, 9, 9], at: 10)
        XCTAssertEqual(try read(entry, at: 10, count: 3), [9, 9, 9])
        XCTAssertTrue(try cache.presentRanges(for: "http://o.test/p").isEmpty, "not in the index before commit")
        try entry.commit()
        XCTAssertEqual(try cache.presentRanges(for: "http://o.test/p").ranges, [10..<13])
    }

    func testMemoryStoreIsBounded() throws {
        let store = MemoryRangeStore(capacity: 1000)
        for i in 0..<5 {
            _ = try [UInt8](repeating: UInt8(i), count: 400).withUnsafeBytes {
                try store.write($0, at: Int64(i * 400), generation: store.generation)
            }
        }
        XCTAssertEqual(store.available.ranges, [1200..<2000], "only the newest bytes that fit are kept")
        var out = [UInt8](repeating: 0, count: 500)
        let n = try out.withUnsafeMutableBytes { try store.read(into: $0, at: 1500).count }
        XCTAssertEqual(n, 500)
        XCTAssertEqual(out[0], 3)
        XCTAssertEqual(out[499], 4)
    }
}
