import Foundation
import TestSupport
import XCTest

/// `prefetch --for`: what each player reads besides libavformat is added to the plan, said with
/// who reads it and why (`player_ranges`), and fetched.
final class PlayerProfileTests: CLITestCase {
    private struct Part {
        let range: Range<Int64>
        let players: [String]
    }

    private func plan(_ url: String, _ extra: [String]) throws -> (plan: [String: Any], parts: [Part]) {
        let plan = try json(
            try mprobe(
                ["prefetch", url, "--start", "20", "--seconds", "5", "--plan", "--json", "--cache-dir", cacheDir]
                    + extra))
        let parts = (plan["player_ranges"] as? [[String: Any]] ?? []).map {
            Part(
                range: (($0["start"] as? NSNumber)?.int64Value ?? -1)..<(($0["end"] as? NSNumber)?.int64Value ?? -1),
                players: $0["players"] as? [String] ?? [])
        }
        return (plan, parts)
    }

    private func ranges(_ plan: [String: Any], _ key: String) -> [Range<Int64>] {
        (plan[key] as? [[String: Any]] ?? []).map {
            (($0["start"] as? NSNumber)?.int64Value ?? -1)..<(($0["end"] as? NSNumber)?.int64Value ?? -1)
        }
    }

    func testEachPlayerAddsWhatItReadsAndLibavformatsPlanStaysItsOwn() throws {
        let www = dir.file("www")
        try encodeRecording(www + "/rec.mp4", muxing: ["-b:v", "2M", "-movflags", "+faststart"])
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: www + "/rec.mp4")[.size] as? Int64)
        XCTAssertGreaterThan(size, 8 << 20, "larger than VLC's head")
        let nginx = try NginxServer(root: www)
        let url = nginx.url("/rec.mp4")

        let (base, none) = try plan(url, ["--for", "ffmpeg"])
        XCTAssertTrue(none.isEmpty, "libavformat's plan is the base")
        let samples = ranges(base, "sample_ranges")
        let window = try XCTUnwrap(samples.first)
        XCTAssertNotEqual(window.lowerBound % (32 << 10), 0, "the window starts off a block boundary")

        // Chromium reads in 32 KiB blocks: back to the boundary before each range, nothing else.
        let (_, chromium) = try plan(url, ["--for", "chromium"])
        XCTAssertTrue(chromium.allSatisfy { $0.players == ["chromium"] })
        let aligned = try XCTUnwrap(chromium.first { $0.range.upperBound == window.lowerBound })
        XCTAssertEqual(aligned.range.lowerBound, window.lowerBound / (32 << 10) * (32 << 10))

        // All of them: VLC's head from byte 0 too, and the floor counts what they add.
        let (all, parts) = try plan(url, [])
        let vlc = parts.filter { $0.players.contains("vlc") }
        XCTAssertEqual(vlc.first?.range.upperBound, 4 << 20, "\(parts)")
        var covered = ranges(all, "header_ranges") + ranges(all, "sample_ranges") + parts.map(\.range)
        covered.sort { $0.lowerBound < $1.lowerBound }
        var reach: Int64 = 0
        for range in covered where range.lowerBound <= reach { reach = max(reach, range.upperBound) }
        XCTAssertGreaterThanOrEqual(reach, 4 << 20, "the first 4 MiB are planned: \(covered)")
        let added = parts.reduce(Int64(0)) { $0 + Int64($1.range.count) }
        XCTAssertEqual(
            (all["floor_bytes"] as? NSNumber)?.int64Value, ((base["floor_bytes"] as? NSNumber)?.int64Value ?? 0) + added
        )

        // What a prefetch for all of them fetches is what the plan said.
        nginx.clearLog()
        try mprobe(["prefetch", url, "--start", "20", "--seconds", "5", "--cache-dir", cacheDir])
        let cached = try json(try mprobe(["cache", "ranges", url, "--json", "--cache-dir", cacheDir]))
        let stored = ranges(cached, "ranges")
        for part in parts {
            XCTAssertTrue(
                stored.contains { $0.lowerBound <= part.range.lowerBound && $0.upperBound >= part.range.upperBound },
                "\(part.range) is cached: \(stored)")
        }
    }

    func testAPlayerNoProfileHasIsAUsageErrorOnTheCommandLineAndA400ForAJob() throws {
        let r = try mprobe(["prefetch", samplePath("faststart.mp4"), "--for", "chromium,winamp", "--plan"], expect: 2)
        XCTAssertTrue(r.stderr.contains("not 'winamp'") && r.stderr.contains("gstreamer"), r.stderr)
        let server = try ServeCommandTests.Server(["--cache-dir", cacheDir], log: dir.file("serve.log"))
        defer { server.stop() }
        let reply = try HTTPClient.request(
            "POST", server.base + "/v1/jobs",
            body: Array(#"{"type": "prefetch", "url": "http://127.0.0.1:1/v.mp4", "for": "winamp"}"#.utf8))
        XCTAssertEqual(reply.status, 400, reply.text)
        XCTAssertTrue(reply.text.contains("winamp") && reply.text.contains("for"), reply.text)
    }
}
