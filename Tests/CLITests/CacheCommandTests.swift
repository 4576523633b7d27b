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
        try mprobe(["cat", b, "--cache-dir", cacheDir])  // served from the cache: hits

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

    /// The human output draws the cache: known ranges of a known file give exact lines.
    func testRangesDrawsTheBytesAndTracksOverTheTerminalWidth() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let url = nginx.url("/moov-at-end.mp4")  // 158106 bytes; the moov is 153391-158105
        try mprobe(["cat", url, "--range", "0-65535", "--cache-dir", cacheDir])
        try mprobe(["cat", url, "--range", "153391-", "--cache-dir", cacheDir])
        // 60 columns: labels 8 wide, suffixes 5, so 45 cells of 3513.5 bytes (and of 0.089 s).
        // 65536 bytes are 18.65 cells; the moov falls in cells 43 and 44, all of it cached.
        func bytes(_ full: String, _ partial: String, _ empty: String) -> String {
            "bytes    " + String(repeating: full, count: 18) + partial + String(repeating: empty, count: 24)
                + "MM 44.4%"
        }
        let expected = [
            bytes("#", "+", "."),
            // The index of this sample: video buffered to 1.92 s, audio to 1.834 s, of 4 s.
            "#0 video " + String(repeating: "#", count: 21) + "+" + String(repeating: ".", count: 23) + " 1.9 s",
            "#1 audio " + String(repeating: "#", count: 20) + "+" + String(repeating: ".", count: 24) + " 1.8 s",
        ]
        let piped = try mprobe(
            ["cache", "ranges", url, "--cache-dir", cacheDir], environment: ["COLUMNS": "60", "LANG": "C.UTF-8"])
        let lines = piped.stdoutString.split(separator: "\n").map(String.init)
        XCTAssertEqual(
            lines.first, "\(url): size 158106, 2 ranges, 70251 bytes cached, duration 4.000 s, moov 153391-158105")
        XCTAssertEqual(Array(lines.dropFirst().prefix(3)), expected, "ASCII into a pipe, whatever the locale")
        XCTAssertEqual(Array(lines.suffix(2)), ["  0-65535  (64.0 KiB)", "  153391-158105  (4.6 KiB)"])

        // On a terminal (a pseudo-terminal from script(1)): block characters when its locale is UTF-8.
        func onTerminal(locale: String) throws -> String {
            let command = [
                "COLUMNS=60", "LC_ALL=", "LC_CTYPE=", "LANG=\(locale)", try mprobeBinary(), "cache", "ranges", url,
                "--cache-dir", cacheDir,
            ].joined(separator: " ")
            let result = try runProcess("script", ["-qec", command, "/dev/null"])
            XCTAssertEqual(result.status, 0, result.stderr)
            return result.stdoutString
        }
        let unicode = try onTerminal(locale: "C.UTF-8")
        XCTAssertTrue(unicode.contains(bytes("█", "▒", "░") + "\r\n"), unicode)
        let latin = try onTerminal(locale: "C")
        XCTAssertTrue(latin.contains(expected[0] + "\r\n"), "ASCII on a terminal that is not UTF-8: \(latin)")

        // --json keeps its members and adds the duration, the moov and (null for a media file) the stream.
        let json = try json(try mprobe(["cache", "ranges", url, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(Set(json.keys), ["url", "size", "ranges", "tracks", "duration", "moov", "stream"])
        XCTAssertEqual(json["duration"] as? Double, 4.0)
        XCTAssertEqual(json["moov"] as? [String: Int], ["offset": 153391, "size": 4715])
    }

    func testCacheDirectoryResolutionOrder() throws {
        let data = randomBytes(1000, seed: 1)
        _ = try writeFile("www/x.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/x.bin")
        try mprobe(
            ["cat", url], environment: ["MPROBE_CACHE_DIR": dir.file("env-cache"), "XDG_CACHE_HOME": dir.file("xdg")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("env-cache/index.sqlite")))
        try mprobe(["cat", url], environment: ["MPROBE_CACHE_DIR": "", "XDG_CACHE_HOME": dir.file("xdg")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("xdg/mprobe/index.sqlite")))
        try mprobe(
            ["cat", url], environment: ["MPROBE_CACHE_DIR": "", "XDG_CACHE_HOME": "", "HOME": dir.file("home")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("home/.cache/mprobe/index.sqlite")))
        try mprobe(
            ["cat", url, "--cache-dir", dir.file("flag")], environment: ["MPROBE_CACHE_DIR": dir.file("env-cache")])
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
