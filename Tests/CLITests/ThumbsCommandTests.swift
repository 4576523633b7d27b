import Foundation
import TestSupport
import XCTest

/// `mprobe thumbs` with the built binary: files, manifest, sprite + WebVTT, batches.
final class ThumbsCommandTests: CLITestCase {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples").path

    func testThumbnailsManifestSpriteAndStoryboard() throws {
        let nginx = try NginxServer(root: Self.samples)
        let out = dir.file("out")
        let r = try mprobe(["thumbs", nginx.url("/moov-at-end.mp4"), "--every", "1", "--width", "160", "--sprite", "2x2",
                            "--out", out, "--json", "--cache-dir", cacheDir])
        let j = try json(r)
        let thumbs = try XCTUnwrap(j["thumbnails"] as? [[String: Any]])
        XCTAssertEqual(thumbs.map { $0["time"] as? Double }, [0, 1, 2, 3])
        XCTAssertEqual(thumbs.map { $0["file"] as? String }, ["thumb-000000.000.jpg", "thumb-000001.000.jpg",
                                                              "thumb-000002.000.jpg", "thumb-000003.000.jpg"])
        XCTAssertEqual(thumbs.first?["width"] as? Int, 160)
        XCTAssertEqual(thumbs.first?["height"] as? Int, 90)
        XCTAssertEqual(j["sprite"] as? String, "sprite.jpg")
        XCTAssertEqual(j["vtt"] as? String, "thumbs.vtt")
        for t in thumbs {
            let data = try Data(contentsOf: URL(fileURLWithPath: out + "/" + (t["file"] as! String)))
            XCTAssertEqual(Array(data.prefix(2)), [0xFF, 0xD8])
        }
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json"))) as? [String: Any]
        XCTAssertEqual((manifest?["thumbnails"] as? [Any])?.count, 4)
        XCTAssertEqual(manifest?["url"] as? String, nginx.url("/moov-at-end.mp4"))
        let vtt = try String(contentsOfFile: out + "/thumbs.vtt", encoding: .utf8)
        XCTAssertTrue(vtt.hasPrefix("WEBVTT\n"))
        XCTAssertTrue(vtt.contains("00:00:01.000 --> 00:00:02.000\nsprite.jpg#xywh=160,0,160,90\n"), vtt)
        XCTAssertTrue(vtt.contains("00:00:03.000 --> 00:00:04.000\nsprite.jpg#xywh=160,90,160,90\n"), vtt)
        let probe = try runProcess("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                                                        out + "/sprite.jpg"])
        XCTAssertEqual(probe.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines), "320,180", "a 2x2 grid of 160x90")
    }

    func testBatchWritesAFolderPerInputAndReportsFailures() throws {
        let nginx = try NginxServer(root: Self.samples)
        let out = dir.file("batch")
        let inputs = [nginx.url("/faststart.mp4"), nginx.url("/audio-only.m4a"), Self.samples + "/sample.webm",
                      nginx.url("/missing.mp4")]
        let r = try mprobe(["thumbs"] + inputs + ["--count", "2", "--format", "png", "--out", out, "-j", "2", "--cache-dir", cacheDir],
                           expect: 1)
        XCTAssertTrue(r.stderr.contains("no video track"), r.stderr)
        XCTAssertTrue(r.stderr.contains("HTTP 404"), r.stderr)
        for folder in ["faststart", "sample"] {
            let files = try FileManager.default.contentsOfDirectory(atPath: out + "/" + folder)
            XCTAssertEqual(files.filter { $0.hasSuffix(".png") }.count, 2, "\(folder): \(files)")
            XCTAssertTrue(files.contains("manifest.json"))
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + "/audio-only"))
    }

    func testUsageErrors() throws {
        try mprobe(["thumbs", "x.mp4", "--every", "2", "--count", "3"], expect: 2)
        try mprobe(["thumbs", "x.mp4", "--format", "gif"], expect: 2)
        try mprobe(["thumbs", "x.mp4", "--at", "1,two"], expect: 2)
        try mprobe(["thumbs", "x.mp4", "--sprite=3y3"], expect: 2)
    }
}
