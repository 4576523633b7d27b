import Foundation
import TestSupport
import XCTest

/// Each kind of failure has its own exit status and a sentence naming the input.
final class ExitCodeTests: CLITestCase {
    func testHelpDocumentsCommandsAndExitCodes() throws {
        let help = try mprobe(["--help"]).stdoutString
        for text in ["cat", "cache", "Exit status", "offline"] { XCTAssertTrue(help.contains(text), text) }
        XCTAssertTrue(try mprobe(["cat", "--help"]).stdoutString.contains("--range A-B"))
        XCTAssertTrue(try mprobe(["help", "cache"]).stdoutString.contains("ranges"))
    }

    func testUsageErrorsExitTwo() throws {
        XCTAssertTrue(try mprobe(["cat", "x", "--bogus"], expect: 2).stderr.contains("unknown option --bogus"))
        try mprobe(["frobnicate"], expect: 2)
        try mprobe(["cat"], expect: 2)
        XCTAssertTrue(try mprobe(["cat", "x", "--range", "9-3"], expect: 2).stderr.contains("--range"))
        XCTAssertTrue(try mprobe(["cat", "gopher://127.0.0.1/x"], expect: 2).stderr.contains("unsupported"))
        try mprobe(["cache", "explode", "--cache-dir", cacheDir], expect: 2)
        let bare = try mprobe([], expect: 2)
        XCTAssertTrue(bare.stdout.isEmpty && bare.stderr.contains("Usage:"), "usage goes to stderr: \(bare.stderr)")
        // Malformed URLs are the user's to fix (2), not network errors (3).
        for url in ["http://127.0.0.1/a b.mp4", "http://127.0.0.1:99999/x.mp4", "http:///x.mp4"] {
            XCTAssertTrue(
                try mprobe(["cat", url, "--cache-dir", cacheDir], expect: 2).stderr.contains("invalid URL"), url)
        }
        // Extreme values are usage errors, not crashes.
        try mprobe(["cat", "x", "--max-cache-size", "1e30G"], expect: 2)
        try mprobe(["cat", "x", "--timeout", "1e300"], expect: 2)
        try mprobe(["cat", "x", "--range", "0-9223372036854775807"], expect: 2)
        try mprobe(["check", "x", "--start", "1e300"], expect: 2)
        try mprobe(["thumbs", "x", "--at", "1e300"], expect: 2)
        try mprobe(["thumbs", "x", "--every", "0.0000001"], expect: 2)
    }

    func testNetworkErrorsExitThree() throws {
        let server = try FaultServer()
        server.route("/forbidden", .status(403))
        let r404 = try mprobe(["cat", server.url("/missing"), "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(r404.stderr.contains("HTTP 404") && r404.stderr.contains(server.url("/missing")), r404.stderr)
        let ls = try mprobe(["cache", "ls", "--json", "--cache-dir", cacheDir])
        XCTAssertEqual(
            ls.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines), "[]", "a 404 leaves no cache entry")
        XCTAssertTrue(
            try mprobe(["cat", server.url("/forbidden"), "--cache-dir", cacheDir], expect: 3).stderr.contains(
                "HTTP 403"))
        let port = server.port
        server.stop()
        let refused = try mprobe(["cat", "http://127.0.0.1:\(port)/x", "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(refused.stderr.contains("connection refused"), refused.stderr)
    }

    func testRedirectsToOtherSchemesAndHugeHeadersAreSaidClearly() throws {
        let server = try FaultServer()
        server.route("/r", .redirect(to: "file:///etc/passwd"))
        let padding = (0..<4000).map { ("X-Pad-\($0)", String(repeating: "a", count: 100)) }
        server.route("/h", .fixed(status: 200, headers: padding, body: [1, 2, 3]))
        let redirect = try mprobe(["cat", server.url("/r"), "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(redirect.stderr.contains("redirects to file:///etc/passwd"), redirect.stderr)
        let headers = try mprobe(["cat", server.url("/h"), "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(headers.stderr.contains("headers exceed"), headers.stderr)
        XCTAssertEqual(server.requests.filter { $0.path == "/h" }.count, 1, "not retried as a lost connection")
    }

    func testADrippingOriginEndsWithinAboutTwiceTheTimeout() throws {
        let server = try FaultServer()
        server.route("/drip", .drip(bytesPerSecond: 2, then: .serve(body: randomBytes(100_000, seed: 58))))
        let started = Date()
        let result = try mprobe(["cat", server.url("/drip"), "--timeout", "2", "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(result.stderr.contains("timed out"), result.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 9)
    }

    func testTimeoutExitsThreeQuickly() throws {
        let server = try FaultServer()
        server.route("/slow", .delay(seconds: 30, then: .serve(body: [1, 2, 3])))
        let started = Date()
        let result = try mprobe(["cat", server.url("/slow"), "--timeout", "1", "--cache-dir", cacheDir], expect: 3)
        XCTAssertTrue(result.stderr.contains("timed out"), result.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20)
    }

    func testOfflineMissExitsFour() throws {
        let data = randomBytes(1_000_000, seed: 1)
        _ = try writeFile("www/o.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/o.bin")
        try mprobe(["cat", url, "--range", "0-999", "--cache-dir", cacheDir])
        XCTAssertEqual(
            try mprobe(["cat", url, "--range", "0-999", "--offline", "--cache-dir", cacheDir]).stdout,
            Array(data[0..<1000]))
        nginx.clearLog()
        let miss = try mprobe(
            ["cat", url, "--range", "500000-500999", "--offline", "--cache-dir", cacheDir], expect: 4)
        XCTAssertTrue(miss.stderr.contains("offline") && miss.stderr.contains("bytes 500000-"), miss.stderr)
        XCTAssertEqual(try nginx.accessLog().count, 0)
        try mprobe(["cat", url, "--offline", "--no-cache"], expect: 2)
    }

    func testMissingLocalFileExitsSix() throws {
        XCTAssertTrue(try mprobe(["cat", dir.file("nope.mp4")], expect: 6).stderr.contains("no such file"))
    }
}
