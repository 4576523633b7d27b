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

    /// A 720p recording, whose stream analysis reads past the first request: its head is read in
    /// 256 KiB (the first request and one more), not a readahead window doubled past what the
    /// analysis reads (576 KiB), and `check --offline` still finds what its own analysis reads.
    func testAMatroskaHeadIsReadInAQuarterMegabyteAndThePrefetchPlaysOffline() throws {
        let path = dir.file("www/hd.mkv")
        try FileManager.default.createDirectory(atPath: dir.file("www"), withIntermediateDirectories: true)
        let encode = try runProcess("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi",
                                               "-i", "sine=frequency=440:sample_rate=48000", "-t", "12", "-c:v", "libx264",
                                               "-preset", "ultrafast", "-b:v", "3M", "-g", "60", "-pix_fmt", "yuv420p", "-c:a", "aac",
                                               "-f", "matroska", path])
        XCTAssertEqual(encode.status, 0, encode.stderr)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/hd.mkv")
        try mprobe(["prefetch", url, "--start", "6", "--seconds", "2", "--cache-dir", cacheDir])
        let log = try nginx.accessLog()
        // What was read of the first 4 s (the window starts at 6 s, 2.2 MB in).
        func first(_ range: String?) -> Int64 {
            guard let spec = range?.split(separator: "=").last, let from = spec.split(separator: "-").first else { return 0 }
            return Int64(from) ?? 0
        }
        let head = log.filter { first($0.range) < 1 << 20 }.reduce(Int64(0)) { $0 + $1.bodyBytesSent }
        XCTAssertLessThanOrEqual(head, 256 << 10, "\(log.map { $0.range ?? "-" })")
        nginx.clearLog()
        let check = try mprobe(["check", url, "--start", "6", "--seconds", "2", "--offline", "--cache-dir", cacheDir])
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
        // Past the first request: from the point at or before 60 s (every 1.2 s) to where 65 s
        // falls between the points around it, and a few kilobytes — not to the next point and 64
        // KiB past it (184 KB for 100 KB of packets).
        let log = try nginx.accessLog()
        let sent = log.dropFirst().reduce(Int64(0)) { $0 + $1.bodyBytesSent }
        let packets = try runProcess("ffprobe", ["-v", "error", "-show_entries", "packet=pts_time,size", "-of", "csv=p=0", path])
            .stdoutString.split(separator: "\n").reduce(Int64(0)) { sum, line in
                let fields = line.split(separator: ",")
                guard fields.count == 2, let time = Double(fields[0]), let size = Int64(fields[1]), time >= 59, time < 65 else { return sum }
                return sum + size
            }
        XCTAssertLessThanOrEqual(sent, packets * 6 / 5 + (8 << 10), "\(log.map { $0.range ?? "-" }), packets 59-65 s: \(packets)")
        nginx.clearLog()
        let check = try mprobe(["check", url, "--start", "60", "--seconds", "5", "--offline", "--cache-dir", cacheDir])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
        XCTAssertEqual(try nginx.accessLog().count, 0)
    }
}
