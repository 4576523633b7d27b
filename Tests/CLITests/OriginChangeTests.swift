import Foundation
import TestSupport
import XCTest

/// What `mprobe` prints is the origin's bytes of one version, or an error: never old and new
/// bytes mixed, never an empty success.
final class OriginChangeTests: CLITestCase {
    /// Replaces `name` under the nginx root with `bytes` (a new inode, and an mtime 10 s later so
    /// nginx's ETag changes even for the same size), as a deploy would.
    func replace(_ name: String, with bytes: [UInt8]) throws {
        let path = dir.file("www/" + name)
        let old = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date ?? Date()
        let temp = dir.file("www/." + name + ".new")
        try Data(bytes).write(to: URL(fileURLWithPath: temp))
        try FileManager.default.setAttributes([.modificationDate: old.addingTimeInterval(10)], ofItemAtPath: temp)
        XCTAssertEqual(rename(temp, path), 0)
    }

    func testACatAfterTheOriginChangedGivesTheWholeNewVersion() throws {
        let v1 = randomBytes(30_000_000, seed: 51), v2 = randomBytes(30_000_000, seed: 52)
        _ = try writeFile("www/m.bin", v1)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/m.bin")
        XCTAssertTrue(
            try mprobe(["cat", url, "--range", "0-14999999", "--cache-dir", cacheDir]).stdout
                == Array(v1[0..<15_000_000]))
        try replace("m.bin", with: v2)
        let whole = try mprobe(["cat", url, "--cache-dir", cacheDir])
        XCTAssertEqual(whole.stdout.count, v2.count)
        XCTAssertTrue(whole.stdout == v2, "all of the new version, none of the old")
        XCTAssertTrue(whole.stderr.contains("changed on the server"), whole.stderr)
        XCTAssertFalse(
            whole.stderr.contains("ignores range"), "a changed file is not a server ignoring ranges: \(whole.stderr)")
    }

    func testAChangeAfterBytesWereWrittenIsExitThreeNotMixedOutput() throws {
        let v1 = randomBytes(8_000_000, seed: 53), v2 = randomBytes(8_000_000, seed: 54)
        let server = try FaultServer()
        // The first request (one readahead window) is v1; from then on the file is v2.
        server.route("/v", .sequence([.serve(body: v1, etag: "\"v1\""), .serve(body: v2, etag: "\"v2\"")]))
        let result = try mprobe(["cat", server.url("/v"), "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(result.stderr.contains("changed on the server"), result.stderr)
        XCTAssertGreaterThan(result.stdout.count, 0)
        XCTAssertTrue(result.stdout == Array(v1[0..<result.stdout.count]), "what was written is v1 only")
    }

    func testA416InsideTheFileIsAnErrorNotAnEmptySuccess() throws {
        let body = randomBytes(5000, seed: 55)
        let server = try FaultServer()
        // Content-Length claims more than the body: the transfer breaks after its last byte.
        server.route(
            "/long",
            .fixed(
                status: 206, headers: [("Content-Range", "bytes 1000-1999/5000")],
                body: Array(body[1000..<2000]), contentLength: 2000))
        server.route("/refuse", .fixed(status: 416, headers: [("Content-Range", "bytes */5000")], body: []))
        for path in ["/long", "/refuse"] {
            let result = try mprobe(
                ["cat", server.url(path), "--range", "1000-1999", "--cache-dir", cacheDir], expect: 3)
            XCTAssertTrue(result.stdout.isEmpty, path)
            XCTAssertTrue(result.stderr.contains(server.url(path)), result.stderr)
        }
        XCTAssertFalse(server.requests.contains { $0.range == "bytes=2000-1999" }, "never an inverted range")
    }

    func testAnEncodedBodyIsNeverStoredAsTheFile() throws {
        let server = try FaultServer()
        server.route(
            "/gz", .fixed(status: 200, headers: [("Content-Encoding", "gzip")], body: randomBytes(3000, seed: 56)))
        let result = try mprobe(["cat", server.url("/gz"), "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(result.stderr.contains("Content-Encoding: gzip"), result.stderr)
        XCTAssertTrue(try cachedRanges(server.url("/gz")).isEmpty)
    }

    func testAHostileSizeDoesNotPoisonTheCache() throws {
        let server = try FaultServer()
        server.route(
            "/v",
            .fixed(status: 206, headers: [("Content-Range", "bytes 0-65535/-5")], body: randomBytes(65_536, seed: 57)))
        for _ in 0..<2 {  // a probe asks for exactly bytes 0-65535: before, it stored the size -5 and trapped
            let result = try mprobe([server.url("/v"), "--cache-dir", cacheDir], expect: 3)
            XCTAssertTrue(result.stderr.contains("Content-Range"), result.stderr)
        }
        XCTAssertTrue(try cachedRanges(server.url("/v")).isEmpty)
    }
}
