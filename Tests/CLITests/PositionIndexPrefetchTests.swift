import Foundation
import TestSupport
import XCTest

/// Indexes that give positions but no sample sizes place a prefetch window instead of a guess from
/// the bit rate: a Matroska file's Cues (the clusters from the key frame before the start to the
/// first one after the end) and an MP3's Xing table of contents.
final class PositionIndexPrefetchTests: CLITestCase {
    func testAPrefetchTakesTheWindowsClustersFromTheCuesAndPlaysOffline() throws {
        let path = dir.file("www/recording.mkv")
        try encodeRecording(path, muxing: ["-f", "matroska"])
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/recording.mkv")

        let plan = try json(try mprobe(["prefetch", url, "--start", "20", "--seconds", "5", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(plan["estimated"] as? Bool, false, "\(plan)")
        XCTAssertTrue((plan["note"] as? String ?? "").contains("Cues"), "\(plan)")
        let log = try nginx.accessLog()
        XCTAssertLessThanOrEqual(log.count, 5, "\(log.map { $0.range ?? "-" })")
        // 5 s from the key frame at or before 20 s (every 0.5 s) to the cluster after 25 s, of 40 s.
        XCTAssertLessThanOrEqual(log.reduce(0) { $0 + $1.bodyBytesSent }, Int64(Double(size) * 0.25))

        nginx.clearLog()
        let check = try mprobe(["check", url, "--start", "20", "--seconds", "5", "--offline", "--cache-dir", cacheDir])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
        XCTAssertEqual(try nginx.accessLog().count, 0)
    }

    func testAnMP3PrefetchTakesItsWindowFromTheTableOfContentsAndPlaysOffline() throws {
        let path = dir.file("www/talk.mp3")
        try FileManager.default.createDirectory(atPath: dir.file("www"), withIntermediateDirectories: true)
        let encode = try runProcess("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "anoisesrc=d=120:c=pink:a=0.3", "-ac", "2",
                                               "-c:a", "libmp3lame", "-q:a", "4", path])
        XCTAssertEqual(encode.status, 0, encode.stderr)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/talk.mp3")
        let plan = try json(try mprobe(["prefetch", url, "--start", "60", "--seconds", "5", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(plan["estimated"] as? Bool, false, "\(plan)")
        XCTAssertTrue((plan["note"] as? String ?? "").contains("table of contents"), "\(plan)")
        nginx.clearLog()
        let check = try mprobe(["check", url, "--start", "60", "--seconds", "5", "--offline", "--cache-dir", cacheDir])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
        XCTAssertEqual(try nginx.accessLog().count, 0)
    }
}
