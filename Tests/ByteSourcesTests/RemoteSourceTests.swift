import ByteSources
import Caching
import Foundation
import RangeFetch
import TestSupport
import XCTest

/// The read path over real servers: readahead, gap-only fetching, shared fetches, offline mode.
final class RemoteSourceTests: XCTestCase {
    var dir: TempDirectory!
    var data: [UInt8] = []
    var nginx: NginxServer!

    override func setUpWithError() throws {
        dir = try TempDirectory()
        data = randomBytes(8_000_000, seed: 21)
        try FileManager.default.createDirectory(atPath: dir.file("www"), withIntermediateDirectories: true)
        try Data(data).write(to: URL(fileURLWithPath: dir.file("www/m.bin")))
        nginx = try NginxServer(root: dir.file("www"))
    }

    override func tearDown() {
        nginx.stop()
        dir = nil  // XCTest keeps every test case object: free the folder now
    }

    func session(
        offline: Bool = false, cache: Bool = true, maxBytes: Int64 = ByteCache.defaultMaxBytes
    ) throws -> MediaSession {
        var options = FetchOptions()
        options.timeout = 5
        let byteCache = cache ? try ByteCache(directory: dir.file("cache"), maxBytes: maxBytes) : nil
        return MediaSession(cache: byteCache, fetchOptions: options, offline: offline)
    }

    /// Reads `range` in `chunk`-sized reads, as a demuxer would.
    func read(_ source: any MediaSource, _ range: Range<Int64>, chunk: Int = 32 << 10) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        var offset = range.lowerBound
        while offset < range.upperBound {
            let want = Int(min(Int64(chunk), range.upperBound - offset))
            let n = try buffer.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: offset)
            }
            if n == 0 { break }
            out += buffer[0..<n]
            offset += Int64(n)
        }
        return out
    }

    func testSequentialSmallReadsGrowTheFetchWindow() throws {
        let source = try session().open(nginx.url("/m.bin"))
        XCTAssertEqual(try read(source, 0..<8_000_000), data)
        // 244 reads of 32 KB; windows 256K, 512K, 1M, 2M, 4M, then the rest: about 6 requests.
        XCTAssertLessThanOrEqual(source.counters.requests, 7, "readahead must not turn each read into a request")
        XCTAssertEqual(source.counters.bytesFetched, 8_000_000, "no byte fetched twice")
        XCTAssertEqual(try source.size(), 8_000_000)
    }

    func testSeekResetsTheWindow() throws {
        let source = try session().open(nginx.url("/m.bin"))
        // Exactly the first two windows (256 KB + 512 KB), both finished before the seek.
        _ = try read(source, 0..<786_432)
        _ = try nginx.waitForAccessLog(count: 2)
        nginx.clearLog()
        XCTAssertEqual(try read(source, 6_000_000..<6_010_000), Array(data[6_000_000..<6_010_000]))
        let log = try nginx.waitForAccessLog(count: 1)
        XCTAssertEqual(
            log.map(\.range), ["bytes=6000000-6262143"], "a seek starts again at the initial window (256 KB)")
    }

    func testOnlyGapsAreFetchedAroundACachedMiddle() throws {
        let s1 = try session()
        XCTAssertEqual(
            try read(try s1.open(nginx.url("/m.bin")), 3_000_000..<5_000_000, chunk: 1 << 20),
            Array(data[3_000_000..<5_000_000]))
        nginx.clearLog()
        let source = try session().open(nginx.url("/m.bin"))
        XCTAssertEqual(try read(source, 0..<8_000_000), data)
        let log = try nginx.waitForAccessLog(count: Int(source.counters.requests))
        for entry in log {
            let parts = entry.range!.dropFirst("bytes=".count).split(separator: "-").map { Int64($0)! }
            let fetched = parts[0]...parts[1]
            XCTAssertFalse(fetched.overlaps(3_000_000...4_999_999), "re-fetched cached bytes: \(entry.range!)")
        }
        XCTAssertEqual(source.counters.bytesFetched, 6_000_000)
        XCTAssertEqual(source.counters.bytesFromCache, 2_000_000 + 0, "the cached middle is served locally")
    }

    func testRepeatedReadIsServedFromTheCacheWithoutRequests() throws {
        _ = try read(try session().open(nginx.url("/m.bin")), 0..<8_000_000, chunk: 1 << 20)
        let source = try session().open(nginx.url("/m.bin"))
        XCTAssertEqual(try read(source, 0..<8_000_000, chunk: 1 << 20), data)
        XCTAssertEqual(source.counters.requests, 0)
        XCTAssertEqual(source.counters.bytesFromCache, 8_000_000)
    }

    /// A reader opened before another process stored the bytes finds them in the index, and the
    /// size with them: it has no answer of its own to learn it from (`mprobe serve` answered
    /// such a player 502, "did not say how long it is").
    func testTheSizeAnotherProcessRecordedIsKnownWithoutAskingTheOrigin() throws {
        let late = try XCTUnwrap(try session().open(nginx.url("/m.bin")) as? RemoteSource)  // opened while nothing is cached
        XCTAssertNil(late.knownSize)
        _ = try read(try session().open(nginx.url("/m.bin")), 0..<100_000, chunk: 100_000)  // another "process"
        nginx.clearLog()
        XCTAssertEqual(try read(late, 0..<100_000), Array(data[0..<100_000]))
        XCTAssertEqual(try late.size(), 8_000_000)
        XCTAssertEqual(late.counters.requests, 0, "the bytes and the size came from the index")
    }

    func testConcurrentReadersOfTheSameMissShareOneFetch() throws {
        let source = try session().open(nginx.url("/m.bin"))
        let results = LockedResults(count: 8)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            var buffer = [UInt8](repeating: 0, count: 1000)
            let n = try? buffer.withUnsafeMutableBytes { try source.read(into: $0, at: 1_000_000) }
            results.set(i, Array(buffer[0..<(n ?? 0)]))
        }
        for r in results.values { XCTAssertEqual(r, Array(data[1_000_000..<1_001_000])) }
        XCTAssertEqual(source.counters.requests, 1, "eight readers, one fetch")
    }

    func testOfflineMissNamesTheRange() throws {
        _ = try read(try session().open(nginx.url("/m.bin")), 0..<100_000, chunk: 100_000)
        let offline = try session(offline: true)
        let source = try offline.open(nginx.url("/m.bin"))
        XCTAssertEqual(try read(source, 0..<100_000), Array(data[0..<100_000]), "cached bytes work offline")
        XCTAssertEqual(try source.size(), 8_000_000, "the size is known from the index")
        nginx.clearLog()
        XCTAssertThrowsError(try read(source, 7_000_000..<7_000_100)) { error in
            guard case .offlineMiss(_, let range) = error as? SourceError else { return XCTFail("got \(error)") }
            XCTAssertEqual(range.lowerBound, 7_000_000)
            XCTAssertTrue("\(error)".contains("bytes 7000000-"), "\(error)")
        }
        XCTAssertEqual(try nginx.accessLog().count, 0, "offline never touches the network")
    }

    func testResourceBiggerThanTheLimitIsStreamedThrough() throws {
        let source = try session(maxBytes: 1_000_000).open(nginx.url("/m.bin"))
        XCTAssertEqual(try read(source, 0..<8_000_000, chunk: 1 << 20), data)
        let cache = try ByteCache(directory: dir.file("cache"))
        XCTAssertNil(try cache.resource(for: nginx.url("/m.bin")), "nothing stored for a resource over the limit")
    }

    func testWithoutCacheNothingIsWritten() throws {
        let source = try session(cache: false).open(nginx.url("/m.bin"))
        XCTAssertEqual(try read(source, 0..<8_000_000), data)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("cache")))
    }

    func testAFinishedSourceNoLongerPinsItsCacheEntry() throws {
        // Both fit the limit alone, not together; an open entry is never evicted.
        try Data(randomBytes(600_000, seed: 2)).write(to: URL(fileURLWithPath: dir.file("www/a.bin")))
        try Data(randomBytes(600_000, seed: 3)).write(to: URL(fileURLWithPath: dir.file("www/b.bin")))
        let session = try session(maxBytes: 1_000_000)
        do {
            let first = try session.open(nginx.url("/a.bin"))
            _ = try read(first, 0..<600_000, chunk: 100_000)
            let cache = try ByteCache(directory: dir.file("cache"))
            XCTAssertEqual(try cache.resources().map(\.url), [nginx.url("/a.bin")], "the first job's bytes were stored")
        }
        // The first job is over: the session does not keep its entry open, so reading another
        // resource evicts it to stay under the limit.
        _ = try read(try session.open(nginx.url("/b.bin")), 0..<600_000, chunk: 100_000)
        let cache = try ByteCache(directory: dir.file("cache"))
        XCTAssertEqual(try cache.resources().map(\.url), [nginx.url("/b.bin")])
    }

    func testLocalFilesAreReadDirectly() throws {
        let s = try session()
        for input in [dir.file("www/m.bin"), "file://" + dir.file("www/m.bin")] {
            let source = try s.open(input)
            XCTAssertEqual(try source.size(), 8_000_000)
            XCTAssertEqual(try read(source, 7_999_000..<8_000_000), Array(data[7_999_000..<8_000_000]))
        }
        XCTAssertThrowsError(try s.open(dir.file("nope.mp4"))) { error in
            XCTAssertEqual(error as? SourceError, .fileNotFound(path: dir.file("nope.mp4")))
        }
        XCTAssertThrowsError(try s.open("rtmp://127.0.0.1/live")) { error in
            XCTAssertEqual(error as? SourceError, .unsupportedInput("rtmp://127.0.0.1/live"))
        }
    }
}

final class LockedResults: @unchecked Sendable {
    private var storage: [[UInt8]]
    private let lock = NSLock()
    init(count: Int) { storage = Array(repeating: [], count: count) }
    func set(_ i: Int, _ value: [UInt8]) { lock.lock(); storage[i] = value; lock.unlock() }
    var values: [[UInt8]] { lock.lock(); defer { lock.unlock() }; return storage }
}
