import Foundation
import TestSupport
import XCTest

/// Origins behind headers, cookies, basic auth, proxies and signed URLs, over real servers:
/// nginx locations that require them, tinyproxy, redirects across loopback ports.
final class OriginAccessTests: CLITestCase {
    let media = randomBytes(2_000_000, seed: 91)

    /// nginx with `/header/` (needs `X-Token: s3cret`), `/cookie/` (needs `session=abc`) and `/basic/`
    /// (basic auth alice:pw), each holding `v.bin`.
    func guardedNginx() throws -> NginxServer {
        for folder in ["header", "cookie", "basic"] { _ = try writeFile("www/\(folder)/v.bin", media) }
        let hash = try runProcess("openssl", ["passwd", "-apr1", "pw"]).stdoutString.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let passwords = try writeFile("htpasswd", Array("alice:\(hash)\n".utf8))
        return try NginxServer(
            root: dir.file("www"),
            locations: """
                location /header/ { if ($http_x_token != "s3cret") { return 403; } }
                location /cookie/ { if ($cookie_session != "abc") { return 403; } }
                location /basic/ { auth_basic "media"; auth_basic_user_file "\(passwords)"; }
                """)
    }

    func testHeadersCookiesAndBasicAuthReachTheOrigin() throws {
        let nginx = try guardedNginx()
        let header = nginx.url("/header/v.bin"), cookie = nginx.url("/cookie/v.bin")
        let basic = nginx.url("/basic/v.bin").replacingOccurrences(of: "http://", with: "http://alice:pw@")
        XCTAssertTrue(try mprobe(["cat", header, "-H", "X-Token: s3cret", "--cache-dir", cacheDir]).stdout == media)
        XCTAssertTrue(try mprobe(["cat", cookie, "--header", "Cookie: session=abc", "--no-cache"]).stdout == media)
        XCTAssertTrue(try mprobe(["cat", basic, "--no-cache"]).stdout == media)
        // Secrets kept off the command line: a header file.
        let file = try writeFile("headers.txt", Array("# for the media origin\nX-Token: s3cret\n".utf8))
        XCTAssertTrue(
            try mprobe(["cat", header, "--header-file", file, "--no-cache", "--range", "0-99"]).stdout
                == Array(media[0..<100]))
        // Without them the origin refuses, and mprobe says so.
        XCTAssertTrue(try mprobe(["cat", header, "--no-cache"], expect: 3).stderr.contains("HTTP 403"))
        XCTAssertTrue(
            try mprobe(["cat", nginx.url("/basic/v.bin"), "--no-cache"], expect: 3).stderr.contains("HTTP 401"))
        // Every request carried the header (the first window, the readahead ones, the retries).
        XCTAssertTrue(
            try nginx.accessLog().filter { $0.path.hasPrefix("/header/") && $0.status != 403 }.allSatisfy {
                $0.status == 206
            })
        XCTAssertEqual(
            try mprobe(["cat", header, "-H", "Range: bytes=0-1"], expect: 2).status, 2, "mprobe sets Range itself")
    }

    func testRedirectsToAnotherHostDropCredentialsUnlessTrusted() throws {
        let start = try FaultServer(), other = try FaultServer()
        other.route("/v.bin", .serve(body: media))
        start.route("/v.bin", .redirect(to: other.url("/v.bin")))
        let args = [
            "cat", start.url("/v.bin"), "-H", "Authorization: Bearer t", "-H", "Cookie: c=1", "-H", "X-Team: video",
            "--no-cache", "--range", "0-999",
        ]
        XCTAssertTrue(try mprobe(args).stdout == Array(media[0..<1000]))
        XCTAssertEqual(start.requests.first?.headers["authorization"], "Bearer t")
        let landed = try XCTUnwrap(other.requests.last)
        XCTAssertNil(landed.headers["authorization"], "no credentials for another host")
        XCTAssertNil(landed.headers["cookie"])
        XCTAssertEqual(landed.headers["x-team"], "video", "other headers follow the redirect")
        XCTAssertTrue(try mprobe(args + ["--location-trusted"]).stdout == Array(media[0..<1000]))
        XCTAssertEqual(other.requests.last?.headers["authorization"], "Bearer t", "--location-trusted keeps them")
    }

    func testAProxyFromTheFlagOrTheEnvironment() throws {
        _ = try writeFile("www/v.bin", media)
        let nginx = try NginxServer(root: dir.file("www"))
        let proxy = try TinyProxy()
        XCTAssertTrue(
            try mprobe(["cat", nginx.url("/v.bin"), "--proxy", proxy.url, "--cache-dir", cacheDir]).stdout == media)
        XCTAssertTrue(proxy.requests.contains { $0.hasPrefix("GET \(nginx.url("/v.bin"))") }, "\(proxy.requests)")
        let before = proxy.requests.count
        let viaEnvironment = try mprobe(
            ["cat", nginx.url("/v.bin"), "--no-cache", "--range", "0-999"],
            environment: ["http_proxy": proxy.url, "no_proxy": ""])
        XCTAssertTrue(viaEnvironment.stdout == Array(media[0..<1000]))
        XCTAssertGreaterThan(proxy.requests.count, before, "libcurl's http_proxy is honoured")
        try mprobe(["cat", nginx.url("/v.bin"), "--proxy", "not a url"], expect: 2)
    }

    func testSignedURLsOfOneObjectShareOneCacheEntry() throws {
        let server = try FaultServer()
        server.route("/bucket/v.bin", .serve(body: media, etag: "\"one\""))
        func signed(_ signature: String) -> String {
            server.url(
                "/bucket/v.bin?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261130&X-Amz-Signature=\(signature)&versionId=3"
            )
        }
        let half = ["--range", "0-999999"]
        XCTAssertTrue(
            try mprobe(["cat", signed("aaaa"), "--cache-key", "s3", "--cache-dir", cacheDir] + half).stdout
                == Array(media[0..<1_000_000]))
        let requests = server.requests.count
        XCTAssertTrue(
            try mprobe(["cat", signed("bbbb"), "--cache-key", "s3", "--cache-dir", cacheDir] + half).stdout
                == Array(media[0..<1_000_000]))
        XCTAssertEqual(server.requests.count, requests, "a new signature of the same object is a cache hit")
        let listed = try mprobe(["cache", "ls", "--json", "--cache-dir", cacheDir, "--cache-key", "s3"]).stdoutString
        XCTAssertEqual(listed.components(separatedBy: "\"key\"").count - 1, 1, listed)
        XCTAssertFalse(listed.contains("aaaa") || listed.contains("bbbb"), "signatures are never shown: \(listed)")
        // The object changes: safety comes from the ETag, not the key. Reading the rest asks the
        // origin (If-Range: "one"), which answers with the new object: the old ranges go.
        let changed = randomBytes(2_000_000, seed: 92)
        server.route("/bucket/v.bin", .serve(body: changed, etag: "\"two\""))
        let whole = try mprobe(["cat", signed("cccc"), "--cache-key", "s3", "--cache-dir", cacheDir])
        XCTAssertTrue(whole.stdout == changed)
        XCTAssertTrue(whole.stderr.contains("changed on the server"), whole.stderr)
        XCTAssertTrue(
            try mprobe(["cat", signed("dddd"), "--cache-key", "s3", "--offline", "--cache-dir", cacheDir]).stdout
                == changed,
            "the old bytes were dropped, the new ones kept")
        // The same with names given one by one, and with the whole query ignored.
        let ignored = try mprobe([
            "cat", signed("eeee"), "--cache-key-ignore-query", "X-Amz-*", "--offline", "--cache-dir", cacheDir,
        ])
        XCTAssertTrue(ignored.stdout == changed)
    }

    func testTheConfigFileGivesDefaultsThatFlagsOverride() throws {
        let nginx = try guardedNginx()
        let host = "127.0.0.1:\(nginx.port)"
        let config = try writeFile(
            "config.json",
            Array(
                """
                {
                  "cache_dir": "\(cacheDir)",
                  "timeout": 10,
                  "hosts": { "\(host)": { "headers": ["X-Token: s3cret"], "cache_key_ignore_query": ["sig"] } }
                }
                """.utf8))
        XCTAssertTrue(try mprobe(["cat", nginx.url("/header/v.bin?sig=1"), "--config", config]).stdout == media)
        XCTAssertTrue(
            try mprobe(["cat", nginx.url("/header/v.bin?sig=2"), "--config", config, "--offline"]).stdout == media,
            "the per-host key rule made both signatures one entry, in the config's cache directory")
        // The config file of the user's XDG_CONFIG_HOME is read without --config.
        _ = try writeFile("xdg/mprobe/config.json", Array(try Data(contentsOf: URL(fileURLWithPath: config))))
        XCTAssertTrue(
            try mprobe(
                ["cat", nginx.url("/header/v.bin?sig=3"), "--offline"],
                environment: ["XDG_CONFIG_HOME": dir.file("xdg")]
            ).stdout == media)
        // A flag wins over the config.
        try mprobe(
            [
                "cat", nginx.url("/header/v.bin?sig=4"), "--config", config, "--cache-dir", dir.file("other"),
                "--offline",
            ], expect: 4)
        // A typo is an error naming the key and the file, never silently ignored.
        let typo = try writeFile("typo.json", Array(#"{"cache_dri": "/tmp"}"#.utf8))
        let refused = try mprobe(["cache", "ls", "--config", typo], expect: 2)
        XCTAssertTrue(refused.stderr.contains("cache_dri") && refused.stderr.contains(typo), refused.stderr)
        let nested = try writeFile("nested.json", Array(#"{"hosts": {"a.test": {"header": ["X: y"]}}}"#.utf8))
        XCTAssertTrue(
            try mprobe(["cache", "ls", "--config", nested], expect: 2).stderr.contains("'header' in hosts.a.test"))
    }
}
