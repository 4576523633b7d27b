import Foundation
import TestSupport
import XCTest

/// The offline-start promise with the built binary: prefetch, stop the origin, probe and check offline.
final class PrefetchCommandTests: CLITestCase {
    /// A 20 s H.264 + AAC MP4 with its moov at the end, `www/<name>`; returns the folder.
    @discardableResult
    func makeMedia(_ name: String = "v.mp4", pattern: String = "testsrc2=size=480x270:rate=25") throws -> String {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let r = try runProcess(
            "/usr/bin/ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                pattern, "-f", "lavfi", "-i", "sine=frequency=440",
                "-t", "20", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25",
                "-c:a", "aac", www + "/" + name,
            ], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        return www
    }

    func testPrefetchThenPlaybackStartsOffline() throws {
        let nginx = try NginxServer(root: try makeMedia())
        let url = nginx.url("/v.mp4")
        let plan = try json(
            try mprobe(["prefetch", url, "--start", "5", "--seconds", "4", "--plan", "--json", "--cache-dir", cacheDir])
        )
        XCTAssertEqual(plan["fetched"] as? Bool, false)
        XCTAssertGreaterThan((plan["missing"] as? [Any])?.count ?? 0, 0, "the plan lists what it would fetch")

        // libavformat's plan: VLC's 4 MiB from byte 0 would cache this small file whole, and the
        // window at 15 s below would play offline too.
        let result = try json(
            try mprobe([
                "prefetch", url, "--start", "5", "--seconds", "4", "--for", "ffmpeg", "--json", "--cache-dir", cacheDir,
            ]))
        let tracks = try XCTUnwrap(result["tracks"] as? [[String: Any]])
        XCTAssertEqual(tracks.map { $0["type"] as? String }, ["video", "audio"])
        for t in tracks {
            let buffered = try XCTUnwrap(t["buffered"] as? [[String: Double]])
            XCTAssertTrue(buffered.contains { $0["start"]! <= 5 && $0["end"]! >= 9 }, "\(buffered)")
        }
        let human = try mprobe([
            "prefetch", url, "--start", "5", "--seconds", "4", "--for", "ffmpeg", "--cache-dir", cacheDir,
        ])
        .stdoutString
        XCTAssertTrue(human.contains("0 missing ranges"), human)

        let ranges = try json(try mprobe(["cache", "ranges", url, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual((ranges["tracks"] as? [Any])?.count, 2, "buffered time ranges beside the byte ranges")

        nginx.stop()
        XCTAssertTrue(try mprobe(["probe", url, "--offline", "--cache-dir", cacheDir]).stdoutString.contains("h264"))
        let check = try json(
            try mprobe(["check", url, "--start", "5", "--seconds", "4", "--offline", "--json", "--cache-dir", cacheDir])
        )
        XCTAssertEqual(check["ok"] as? Bool, true)
        let miss = try mprobe(
            ["check", url, "--start", "15", "--seconds", "2", "--offline", "--cache-dir", cacheDir], expect: 4)
        XCTAssertTrue(miss.stderr.contains("offline: bytes"), miss.stderr)
    }

    func testBatchFromAListKeepsOrderAndReportsFailures() throws {
        let www = try makeMedia()
        try FileManager.default.copyItem(atPath: www + "/v.mp4", toPath: www + "/w.mp4")
        let nginx = try NginxServer(root: www)
        let inputs = [nginx.url("/v.mp4"), nginx.url("/nope.mp4"), nginx.url("/w.mp4")]
        let list = dir.file("list.txt")
        try inputs.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let r = try mprobe(
            ["prefetch", "-i", list, "-j", "2", "--seconds", "2", "--json", "--cache-dir", cacheDir], expect: 1)
        let lines = r.stdoutString.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        XCTAssertEqual(lines.map { $0["url"] as? String }, inputs)
        XCTAssertEqual(lines[1]["exit_code"] as? Int, 3)
        XCTAssertEqual(lines[0]["missing_bytes"] as? Int, lines[2]["missing_bytes"] as? Int, "same media, same plan")
        XCTAssertTrue(r.stderr.contains("HTTP 404"), r.stderr)
    }

    func testCheckOfADamagedFileFails() throws {
        let www = try makeMedia()
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: www + "/v.mp4")))
        // Overwrite a stretch of sample data in the middle with garbage: the moov stays valid.
        for i in stride(from: bytes.count / 2, to: bytes.count / 2 + 60_000, by: 1) {
            bytes[i] = UInt8(truncatingIfNeeded: i &* 7919)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: www + "/bad.mp4"))
        let nginx = try NginxServer(root: www)
        let good = try mprobe(["check", nginx.url("/v.mp4"), "--seconds", "20", "--cache-dir", cacheDir])
        XCTAssertTrue(good.stdoutString.contains("plays"), good.stdoutString)
        let bad = try mprobe(
            ["check", nginx.url("/bad.mp4"), "--seconds", "20", "--json", "--cache-dir", cacheDir], expect: 5)
        XCTAssertEqual(try json(bad)["ok"] as? Bool, false)
    }

    /// A file cut short: a window whose samples it still holds prefetches, one whose samples lie
    /// past its end is a media error naming the cut, the same for the file and its URL (fuzzing
    /// found the URL failing as "cannot keep ... in the cache" while the file said ok), and the
    /// time buffered ends where the file does.
    func testACutFileIsTheSameClearAnswerLocallyAndOverHTTP() throws {
        let whole = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))
        let cut = try writeFile("www/cut.mp4", Array(whole.prefix(whole.count * 6 / 10)))
        let nginx = try NginxServer(root: dir.file("www"))
        for input in [cut, nginx.url("/cut.mp4")] {
            let early = try json(try mprobe(["prefetch", input, "--seconds", "1", "--json", "--cache-dir", cacheDir]))
            let tracks = try XCTUnwrap(early["tracks"] as? [[String: Any]])
            for track in tracks {
                let buffered = try XCTUnwrap(track["buffered"] as? [[String: Double]])
                XCTAssertLessThan(
                    buffered.last?["end"] ?? 99, 3.5, "\(input): only what the file holds is buffered: \(buffered)")
            }
            let late = try mprobe(["prefetch", input, "--seconds", "4", "--cache-dir", cacheDir], expect: 5)
            XCTAssertTrue(
                late.stderr.contains("but the file ends at \(whole.count * 6 / 10): it is truncated"),
                "\(input): \(late.stderr)")
        }
    }

    func testAPrefetchThatCannotBeKeptSaysSoAndFails() throws {
        let nginx = try NginxServer(root: try makeMedia())
        let url = nginx.url("/v.mp4")
        // Bigger than the cache limit: streamed through memory, so nothing would remain for playback.
        let tooBig = try mprobe(
            ["prefetch", url, "--seconds", "4", "--max-cache-size", "100K", "--cache-dir", cacheDir], expect: 6)
        XCTAssertTrue(
            tooBig.stderr.contains("cache limit") && tooBig.stderr.contains("--max-cache-size"), tooBig.stderr)
        XCTAssertFalse(tooBig.stdoutString.contains("cached"), tooBig.stdoutString)
        let noCache = try mprobe(["prefetch", url, "--no-cache"], expect: 2)
        XCTAssertTrue(noCache.stderr.contains("--no-cache"), noCache.stderr)
    }

    func testJobsThatMeetAChangedOriginStartOverOnTheNewVersion() throws {
        let www = try makeMedia()
        try makeMedia("w.mp4", pattern: "testsrc2=size=960x540:rate=30")
        let v1 = Array(try Data(contentsOf: URL(fileURLWithPath: www + "/v.mp4")))
        let v2 = Array(try Data(contentsOf: URL(fileURLWithPath: www + "/w.mp4")))
        let server = try FaultServer()
        server.route("/v.mp4", .serve(body: v1, etag: "\"one\""))
        let url = server.url("/v.mp4")
        try mprobe(["probe", url, "--cache-dir", cacheDir])  // the header of v1 is cached
        server.route("/v.mp4", .serve(body: v2, etag: "\"two\""))
        // The plan comes from the cached moov of v1; its samples are asked for with If-Range "one",
        // the origin answers with v2: the job must start over on v2, not fetch v2's bytes at v1's offsets.
        let prefetch = try json(try mprobe(["prefetch", url, "--seconds", "2", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual((prefetch["tracks"] as? [[String: Any]])?.count, 2)
        let check = try json(
            try mprobe(["check", url, "--seconds", "2", "--offline", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(check["ok"] as? Bool, true, "\(check)")
        let probed = try json(try mprobe(["probe", url, "--json", "--offline", "--cache-dir", cacheDir]))
        XCTAssertEqual(probed["size"] as? Int, v2.count, "the cache holds v2 only")
    }
}
