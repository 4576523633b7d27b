import Foundation
import TestSupport
import XCTest

/// `mprobe URL` / `mprobe probe` with the built binary: output, batches and bad input.
final class ProbeCommandTests: CLITestCase {
    func sample(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: CLITestCase.samplesDirectory + "/" + name)))
    }

    func testBareURLProbesWithHumanOutput() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let out = try mprobe([nginx.url("/moov-at-end.mp4"), "--cache-dir", cacheDir, "-v"]).stdoutString
        XCTAssertTrue(out.contains("moov at end"), out)
        XCTAssertTrue(out.contains("h264 (High)  320x180  25 fps  yuv420p"), out)
        XCTAssertTrue(out.contains("aac (LC)  44100 Hz  stereo  eng"), out)
        XCTAssertTrue(out.contains("fetched: 2 requests"), out)
    }

    func testJSONHasTheDocumentedShape() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let url = nginx.url("/faststart.mp4")
        let j = try json(try mprobe(["probe", url, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(j["url"] as? String, url)
        XCTAssertEqual(j["size"] as? Int, 158_106)
        XCTAssertEqual(j["format"] as? String, "mov,mp4,m4a,3gp,3g2,mj2")
        XCTAssertEqual(j["duration"] as? Double ?? 0, 4.0, accuracy: 0.001)
        XCTAssertNotNil(j["bit_rate"] as? Int)
        XCTAssertNotNil(j["start_time"] as? Double)
        let moov = try XCTUnwrap(j["moov"] as? [String: Any])
        XCTAssertEqual(moov["position"] as? String, "front")
        XCTAssertEqual(moov["offset"] as? Int, 32)
        XCTAssertEqual(j["fragmented"] as? Bool, false)
        let tracks = try XCTUnwrap(j["tracks"] as? [[String: Any]])
        XCTAssertEqual(tracks.map { $0["type"] as? String }, ["video", "audio"])
        for key in [
            "index", "type", "codec", "profile", "width", "height", "frame_rate", "pixel_format", "sample_rate",
            "channels", "channel_layout", "language", "bit_rate", "duration", "frames", "rotation", "default",
        ] {
            XCTAssertTrue(tracks[0].keys.contains(key), key)
        }
        XCTAssertEqual(tracks[1]["language"] as? String, "eng")
        XCTAssertNotNil(j["tags"] as? [String: String])
        let fetch = try XCTUnwrap(j["fetch"] as? [String: Any])
        XCTAssertEqual(fetch["requests"] as? Int, 1)
        XCTAssertEqual(fetch["bytes_fetched"] as? Int, 65_536)
        // Probing again comes from the cache.
        let again = try json(try mprobe(["probe", url, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual((again["fetch"] as? [String: Any])?["requests"] as? Int, 0)
    }

    func testBatchKeepsInputOrderAndReportsEachFailure() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let inputs = [
            nginx.url("/faststart.mp4"), nginx.url("/missing.mp4"), CLITestCase.samplesDirectory + "/sample.webm",
            nginx.url("/moov-at-end.mp4"), CLITestCase.samplesDirectory + "/sample.mp3",
        ]
        let result = try mprobe(["probe", "--json", "-j", "3", "--cache-dir", cacheDir] + inputs, expect: 1)
        let lines = result.stdoutString.split(separator: "\n").map {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        XCTAssertEqual(lines.map { $0?["url"] as? String }, inputs, "JSON Lines in input order")
        XCTAssertNotNil(lines[1]?["error"])
        XCTAssertEqual(lines[1]?["exit_code"] as? Int, 3)
        XCTAssertTrue(result.stderr.contains("HTTP 404") && result.stderr.contains(inputs[1]), result.stderr)
        // The same list from a file and from stdin.
        let list = dir.file("list.txt")
        try (["# inputs", inputs[0], "", inputs[2]].joined(separator: "\n")).write(
            toFile: list, atomically: true, encoding: .utf8)
        let fromFile = try mprobe(["probe", "--json", "-i", list, "--cache-dir", cacheDir])
        XCTAssertEqual(fromFile.stdoutString.split(separator: "\n").count, 2)
        let fromStdin = try runProcess(
            try mprobeBinary(), ["probe", "--json", "-i", "-", "--cache-dir", cacheDir],
            stdin: Array((inputs[2] + "\n" + inputs[4] + "\n").utf8))
        XCTAssertEqual(fromStdin.status, 0, fromStdin.stderr)
        XCTAssertEqual(fromStdin.stdoutString.split(separator: "\n").count, 2)
    }

    func testBadInputsGetAClearErrorAndTheirOwnExitCode() throws {
        let server = try FaultServer()
        let mp4 = try sample("moov-at-end.mp4")
        server.route("/text.mp4", .serve(body: Array(String(repeating: "hello, not a video\n", count: 500).utf8)))
        server.route("/truncated.mp4", .serve(body: Array(mp4[0..<100_000])))
        server.route("/forbidden.mp4", .status(403))
        server.route("/stalled.mp4", .stall(afterBytes: 10, seconds: 30, then: .serve(body: mp4)))
        server.route("/norange.mp4", .ignoreRanges(body: mp4))
        func check(_ args: [String], _ status: Int32, _ text: String, line: UInt = #line) throws {
            let r = try mprobe(args + ["--cache-dir", cacheDir, "--timeout", "1"], expect: status, line: line)
            XCTAssertTrue(r.stderr.contains(text), "expected '\(text)' in: \(r.stderr)", line: line)
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line: \(r.stderr)", line: line)
        }
        try check([server.url("/text.mp4")], 5, "not a media file")
        try check([server.url("/truncated.mp4")], 5, "no moov box found")
        try check([server.url("/forbidden.mp4")], 3, "HTTP 403")
        try check([server.url("/stalled.mp4")], 3, "timed out")
        try check(["http://127.0.0.1:1/x.mp4"], 3, "connection refused")
        try check(["ftp://127.0.0.1/x.mp4"], 2, "unsupported")
        try check(["http://127.0.0.1:99999999999999999999/x.mp4"], 2, "outside 1-65535")
        try check([dir.file("nothing-here.mp4")], 6, "no such file")
        let truncatedLocal = try writeFile("cut.mp4", Array(try sample("faststart.mp4")[0..<3000]))
        try check([truncatedLocal], 5, "cut.mp4")
        // A server without range support still gives the right answer, with a warning.
        let r = try mprobe([server.url("/norange.mp4"), "--json", "--cache-dir", cacheDir])
        XCTAssertEqual((try json(r)["tracks"] as? [Any])?.count, 2)
        XCTAssertTrue(r.stderr.contains("ignores range requests"), r.stderr)
    }

    /// An empty file is the same answer, exit 5, locally and from nginx (which answers a range
    /// request for it with an empty 200; that used to be taken for a lying server, exit 3), for
    /// every command that reads media.
    func testAnEmptyFileIsTheSameClearErrorLocallyAndOverHTTP() throws {
        let empty = try writeFile("www/empty.mp4", [])
        _ = try writeFile("www/empty.mp3", [])
        let nginx = try NginxServer(root: dir.file("www"))
        for input in [empty, nginx.url("/empty.mp4"), nginx.url("/empty.mp3")] {
            for command in [
                ["probe"], ["check"], ["prefetch", "--seconds", "1"],
                ["thumbs", "--count", "1", "--out", dir.file("t")],
            ] {
                let r = try mprobe(command + [input, "--cache-dir", cacheDir], expect: 5)
                XCTAssertTrue(r.stderr.contains("empty (0 bytes)"), "\(command) \(input): \(r.stderr)")
            }
        }
    }

    /// HLS and DASH where a command does not read them are named as what they are (a master
    /// playlist once printed `hls · 227 B` with no tracks and exit 0; a media playlist "not a
    /// media file").
    func testPlaylistsAndManifestsAreNamedNotProbedAsDamagedMedia() throws {
        let files = [
            "master.m3u8": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360\nlow/index.m3u8\n",
            "media.m3u8": "\u{FEFF}#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nseg0.ts\n#EXT-X-ENDLIST\n",
            "a.mpd":
                #"<?xml version="1.0"?><!-- made by a packager --><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><Period/></MPD>"#,
        ]
        for (name, text) in files { _ = try writeFile("www/" + name, Array(text.utf8)) }
        let nginx = try NginxServer(root: dir.file("www"))
        for name in files.keys.sorted() {
            let kind = name.hasSuffix(".mpd") ? "a DASH manifest" : "an HLS playlist"
            for input in [dir.file("www/" + name), nginx.url("/" + name)] {
                let r = try mprobe(["probe", "--of", "ffprobe", input, "--cache-dir", cacheDir], expect: 5)
                XCTAssertTrue(
                    r.stderr.contains(kind + "; this command does not read HLS or DASH"), "\(input): \(r.stderr)")
            }
        }
        // A manifest without a Representation is said to be one, not media.
        let empty = try mprobe([dir.file("www/a.mpd"), "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(
            empty.stderr.contains("not a usable playlist or manifest: no video or audio Representation"), empty.stderr)
        // Text that only mentions a playlist is not one.
        _ = try writeFile("www/notes.txt", Array("see #EXTM3U and <MPD> below".utf8))
        let r = try mprobe(["probe", dir.file("www/notes.txt"), "--cache-dir", cacheDir], expect: 5)
        XCTAssertFalse(r.stderr.contains("not supported yet"), r.stderr)
    }

    func testOfflineProbeAfterAnOnlineOne() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let url = nginx.url("/moov-at-end.mp4")
        try mprobe([url, "--cache-dir", cacheDir])
        nginx.stop()
        XCTAssertTrue(try mprobe([url, "--offline", "--cache-dir", cacheDir]).stdoutString.contains("moov at end"))
        let miss = try mprobe([nginx.url("/faststart.mp4"), "--offline", "--cache-dir", cacheDir], expect: 4)
        XCTAssertTrue(miss.stderr.contains("bytes 0-"), miss.stderr)
    }
}
