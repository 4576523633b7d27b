import Foundation
import TestSupport
import XCTest

final class CacheCommandTests: CLITestCase {
    func testStatsLsRangesRmClear() throws {
        let data = randomBytes(2_000_000, seed: 12)
        _ = try writeFile("www/a.bin", data)
        _ = try writeFile("www/b.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let a = nginx.url("/a.bin"), b = nginx.url("/b.bin")
        try mprobe(["cat", a, "--range", "0-99999", "--cache-dir", cacheDir])
        try mprobe(["cat", a, "--range", "1000000-1099999", "--cache-dir", cacheDir])
        try mprobe(["cat", b, "--cache-dir", cacheDir])
        try mprobe(["cat", b, "--cache-dir", cacheDir]) // served from the cache: hits

        let ranges = try json(try mprobe(["cache", "ranges", a, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(ranges["url"] as? String, a)
        XCTAssertEqual(ranges["size"] as? Int, 2_000_000)
        let list = try XCTUnwrap(ranges["ranges"] as? [[String: Int]])
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.first?["start"], 0)
        XCTAssertEqual(list.last?["start"], 1_000_000)
        for r in list { XCTAssertGreaterThan(r["end"]!, r["start"]!) }
        XCTAssertTrue(try mprobe(["cache", "ranges", a, "--cache-dir", cacheDir]).stdoutString.contains("0-"))

        let stats = try json(try mprobe(["cache", "stats", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(stats["resources"] as? Int, 2)
        XCTAssertGreaterThanOrEqual(stats["bytes"] as? Int ?? 0, 2_200_000)
        XCTAssertGreaterThan(stats["misses"] as? Int ?? 0, 0)
        XCTAssertGreaterThan(stats["hits"] as? Int ?? 0, 0)

        let lsOutput = try mprobe(["cache", "ls", "--json", "--cache-dir", cacheDir])
        let ls = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lsOutput.stdout)) as? [[String: Any]])
        XCTAssertEqual(Set(ls.compactMap { $0["url"] as? String }), [a, b])
        XCTAssertTrue(try mprobe(["cache", "ls", "--cache-dir", cacheDir]).stdoutString.contains(b))

        let rm = try json(try mprobe(["cache", "rm", a, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(rm["removed"] as? Bool, true)
        XCTAssertEqual(try cachedRanges(a).count, 0)
        XCTAssertEqual(try cachedRanges(b).map { [$0.0, $0.1] }, [[0, 2_000_000]])

        try mprobe(["cache", "clear", "--cache-dir", cacheDir])
        let after = try json(try mprobe(["cache", "stats", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(after["resources"] as? Int, 0)
        XCTAssertEqual(after["bytes"] as? Int, 0)
    }

    func testCacheDirectoryResolutionOrder() throws {
        let data = randomBytes(1000, seed: 1)
        _ = try writeFile("www/x.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/x.bin")
        try mprobe(["cat", url], environment: ["MPROBE_CACHE_DIR": dir.file("env-cache"), "XDG_CACHE_HOME": dir.file("xdg")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("env-cache/index.sqlite")))
        try mprobe(["cat", url], environment: ["MPROBE_CACHE_DIR": "", "XDG_CACHE_HOME": dir.file("xdg")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("xdg/mprobe/index.sqlite")))
        try mprobe(["cat", url], environment: ["MPROBE_CACHE_DIR": "", "XDG_CACHE_HOME": "", "HOME": dir.file("home")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("home/.cache/mprobe/index.sqlite")))
        try mprobe(["cat", url, "--cache-dir", dir.file("flag")], environment: ["MPROBE_CACHE_DIR": dir.file("env-cache")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("flag/index.sqlite")))
    }

    func testMaxCacheSizeEvictsLeastRecentlyUsed() throws {
        let data = randomBytes(400_000, seed: 3)
        for name in ["1", "2", "3"] { _ = try writeFile("www/\(name).bin", data) }
        let nginx = try NginxServer(root: dir.file("www"))
        for name in ["1", "2", "3"] {
            try mprobe(["cat", nginx.url("/\(name).bin"), "--cache-dir", cacheDir, "--max-cache-size", "1M"])
        }
        let lsOutput = try mprobe(["cache", "ls", "--json", "--cache-dir", cacheDir])
        let ls = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lsOutput.stdout)) as? [[String: Any]])
        XCTAssertEqual(Set(ls.compactMap { $0["url"] as? String }), [nginx.url("/2.bin"), nginx.url("/3.bin")])
    }
}
