import Foundation
import TestSupport
import XCTest

final class CatCommandTests: CLITestCase {
    func testCatOfA100MBFileIsByteIdenticalAndARepeatMakesNoRequests() throws {
        let data = randomBytes(100_000_000, seed: 100)
        _ = try writeFile("www/big.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/big.bin")
        let first = try mprobe(["cat", url, "--cache-dir", cacheDir])
        XCTAssertEqual(first.stdout.count, data.count)
        XCTAssertTrue(first.stdout == data, "cat output differs from the origin file")
        let log = try nginx.accessLog()
        XCTAssertGreaterThan(log.count, 0)
        XCTAssertLessThanOrEqual(log.count, 20, "readahead keeps the request count low")
        XCTAssertTrue(
            log.allSatisfy {
                $0.status == 206 && $0.range?.hasPrefix("bytes=") == true && $0.range?.hasSuffix("-") == false
            },
            "only closed range requests: \(log.map { $0.range ?? "-" })")
        XCTAssertEqual(Set(log.map(\.connection)).count, 1, "one kept-alive connection")
        XCTAssertEqual(log.reduce(0) { $0 + $1.bodyBytesSent }, 100_000_000, "no byte sent twice")

        let second = try mprobe(["cat", url, "--cache-dir", cacheDir, "-v"])
        XCTAssertTrue(second.stdout == data)
        XCTAssertEqual(try nginx.accessLog().count, log.count, "the repeat is served from the cache: zero requests")
        XCTAssertTrue(second.stderr.contains("0 requests"), second.stderr)
        XCTAssertEqual(try cachedRanges(url).map { [$0.0, $0.1] }, [[0, 100_000_000]])
    }

    func testAfterCachingTheMiddleOnlyTheGapsAreRequested() throws {
        let data = randomBytes(20_000_000, seed: 5)
        _ = try writeFile("www/m.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/m.bin")
        let middle = try mprobe(["cat", url, "--range", "8000000-11999999", "--cache-dir", cacheDir])
        XCTAssertTrue(middle.stdout == Array(data[8_000_000..<12_000_000]))
        XCTAssertEqual(try cachedRanges(url).map { [$0.0, $0.1] }, [[8_000_000, 12_000_000]])
        nginx.clearLog()
        let whole = try mprobe(["cat", url, "--cache-dir", cacheDir])
        XCTAssertTrue(whole.stdout == data)
        let log = try nginx.accessLog()
        var sent: Int64 = 0
        for entry in log {
            let bounds = entry.range!.dropFirst("bytes=".count).split(separator: "-").map { Int64($0)! }
            XCTAssertTrue(
                bounds[1] < 8_000_000 || bounds[0] >= 12_000_000, "re-requested cached bytes: \(entry.range!)")
            sent += entry.bodyBytesSent
        }
        XCTAssertEqual(sent, 16_000_000, "exactly the two gaps")
    }

    func testRangeIsInclusiveAndClippedAtTheEnd() throws {
        let data = randomBytes(1000, seed: 2)
        _ = try writeFile("www/s.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        XCTAssertEqual(
            try mprobe(["cat", nginx.url("/s.bin"), "--range", "10-19", "--cache-dir", cacheDir]).stdout,
            Array(data[10..<20]))
        XCTAssertEqual(
            try mprobe(["cat", nginx.url("/s.bin"), "--range", "990-5000", "--cache-dir", cacheDir]).stdout,
            Array(data[990...]))
        XCTAssertEqual(
            try mprobe(["cat", nginx.url("/s.bin"), "--range", "995-", "--cache-dir", cacheDir]).stdout,
            Array(data[995...]))
        XCTAssertEqual(
            try mprobe(["cat", nginx.url("/s.bin"), "--range", "2000-3000", "--cache-dir", cacheDir]).stdout, [])
    }

    func testLocalPathsAndFileURLsBypassTheCache() throws {
        let data = randomBytes(300_000, seed: 8)
        let path = try writeFile("local.bin", data)
        XCTAssertTrue(try mprobe(["cat", path, "--cache-dir", cacheDir]).stdout == data)
        XCTAssertTrue(
            try mprobe(["cat", "file://" + path, "--cache-dir", cacheDir, "--range", "5-9"]).stdout
                == Array(data[5...9]))
        let stats = try json(try mprobe(["cache", "stats", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(stats["resources"] as? Int, 0)
    }

    func testNoCacheLeavesTheCacheAlone() throws {
        let data = randomBytes(500_000, seed: 3)
        _ = try writeFile("www/n.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        XCTAssertTrue(try mprobe(["cat", nginx.url("/n.bin"), "--no-cache", "--cache-dir", cacheDir]).stdout == data)
        XCTAssertFalse(FileManager.default.fileExists(atPath: cacheDir + "/index.sqlite"))
    }

    func testServerIgnoringRangesWarnsOnceAndStillWorks() throws {
        let data = randomBytes(3_000_000, seed: 4)
        let server = try FaultServer()
        server.route("/v", .ignoreRanges(body: data))
        let result = try mprobe(["cat", server.url("/v"), "--range", "1000000-1999999", "--cache-dir", cacheDir])
        XCTAssertTrue(result.stdout == Array(data[1_000_000..<2_000_000]))
        XCTAssertEqual(result.stderr.components(separatedBy: "ignores range requests").count - 1, 1, result.stderr)
    }

    func testHTTPSWithCacert() throws {
        let data = randomBytes(100_000, seed: 6)
        _ = try writeFile("www/t.bin", data)
        let tls = try TLSMaterial.generate(in: dir.file(""))
        let nginx = try NginxServer(root: dir.file("www"), tls: tls)
        XCTAssertTrue(
            try mprobe(["cat", nginx.url("/t.bin"), "--cacert", tls.caCertPath, "--cache-dir", cacheDir]).stdout == data
        )
        let refused = try mprobe(["cat", nginx.url("/t.bin"), "--no-cache"], expect: 3)
        XCTAssertTrue(refused.stderr.contains("TLS"), refused.stderr)
    }
}
