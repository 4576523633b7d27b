import ByteSources
import Caching
import Foundation
import MediaKit
import RangeFetch
import TestSupport
import XCTest

/// Paths and helpers shared by the MediaKit tests.
enum MediaFixtures {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let samples = repoRoot.appendingPathComponent("Samples").path
    /// The real-world corpus, in the repository: `Tests/Corpus` (see its README and NOTICE).
    static let corpus = repoRoot.appendingPathComponent("Tests/Corpus").path

    /// `corpus/MANIFEST.tsv` as rows keyed by column name. A missing or unreadable corpus throws,
    /// so every test that needs it fails loudly: the corpus ships with the repository, and a
    /// checkout without it is broken, never a reason to skip.
    static func corpusManifest() throws -> [[String: String]] {
        let path = corpus + "/MANIFEST.tsv"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CorpusMissing(detail: "cannot read \(path): the corpus (Tests/Corpus) must be in the checkout")
        }
        var lines = text.split(whereSeparator: \.isNewline).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        guard !lines.isEmpty else { throw CorpusMissing(detail: "\(path) is empty") }
        let header = lines.removeFirst()
        let rows = lines.map { Dictionary(zip(header, $0), uniquingKeysWith: { first, _ in first }) }
        guard rows.count >= 80, header.contains("local_file") else {
            throw CorpusMissing(
                detail: "\(path) lists \(rows.count) files (expected 83) or lacks the local_file column")
        }
        return rows
    }

    static func session(cacheDir: String?, offline: Bool = false) throws -> MediaSession {
        var options = FetchOptions()
        options.timeout = 5
        options.retryDelay = 0.05
        return MediaSession(
            cache: try cacheDir.map { try ByteCache(directory: $0) }, fetchOptions: options, offline: offline)
    }

    /// ffprobe's view of a file, the oracle: `-show_format -show_streams` as JSON.
    static func ffprobe(_ path: String) throws -> (format: [String: Any], streams: [[String: Any]]) {
        let result = try runProcess(
            "/usr/bin/ffprobe", ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", path])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any],
            let format = object["format"] as? [String: Any]
        else {
            throw TestSupportError.processFailed(
                command: "ffprobe \(path)", status: result.status, stderr: result.stderr)
        }
        return (format, object["streams"] as? [[String: Any]] ?? [])
    }
}

/// Asserts that a probe agrees with ffprobe on the fields both report.
func assertAgreesWithFFprobe(
    _ r: ProbeResult, _ path: String, file: StaticString = #filePath, line: UInt = #line
) throws {
    let oracle = try MediaFixtures.ffprobe(path)
    XCTAssertEqual(r.format, oracle.format["format_name"] as? String, file: file, line: line)
    if let d = (oracle.format["duration"] as? String).flatMap(Double.init) {
        XCTAssertEqual(r.duration ?? -1, d, accuracy: 0.0015, "duration", file: file, line: line)
    }
    XCTAssertEqual(r.tracks.count, oracle.streams.count, "track count", file: file, line: line)
    for (t, s) in zip(r.tracks, oracle.streams) {
        XCTAssertEqual(t.codec, s["codec_name"] as? String ?? "none", "codec of #\(t.index)", file: file, line: line)
        if let w = s["width"] as? Int, w > 0 {
            XCTAssertEqual(t.width, w, "width of #\(t.index)", file: file, line: line)
        }
        if let h = s["height"] as? Int, h > 0 {
            XCTAssertEqual(t.height, h, "height of #\(t.index)", file: file, line: line)
        }
        if let rate = s["sample_rate"] as? String, let r = Int(rate), r > 0 {
            XCTAssertEqual(t.sampleRate, r, file: file, line: line)
        }
        if let ch = s["channels"] as? Int, ch > 0 { XCTAssertEqual(t.channels, ch, file: file, line: line) }
        if let pf = s["pix_fmt"] as? String { XCTAssertEqual(t.pixelFormat, pf, file: file, line: line) }
        if let p = s["profile"] as? String, p != "unknown" { XCTAssertEqual(t.profile, p, file: file, line: line) }
        let tags = s["tags"] as? [String: String] ?? [:]
        XCTAssertEqual(t.language, tags["language"], "language of #\(t.index)", file: file, line: line)
        if let fr = s["avg_frame_rate"] as? String, fr != "0/0" {
            let parts = fr.split(separator: "/").compactMap { Double($0) }
            if parts.count == 2, parts[1] > 0, parts[0] > 0 {
                XCTAssertEqual(
                    t.frameRate ?? -1, parts[0] / parts[1], accuracy: 0.001, "frame rate of #\(t.index)", file: file,
                    line: line)
            }
        }
        let sideData = s["side_data_list"] as? [[String: Any]] ?? []
        if let rotation = sideData.compactMap({ $0["rotation"] as? Int }).first {
            XCTAssertEqual(
                t.rotation ?? 0, Double(rotation), accuracy: 0.01, "rotation of #\(t.index)", file: file, line: line)
        }
    }
}

/// 30 s of 640x360 H.264 (key frame every 2 s, B-frames) + AAC, moov at the end and faststart,
/// made once per test run with ffmpeg, plus copies of the small samples: long enough that a
/// window or a key frame is a small part of the file.
enum LongMedia {
    static let directory: TempDirectory? = {
        guard let dir = try? TempDirectory(prefix: "mprobe-media") else { return nil }
        let args = [
            "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", "30", "-c:v", "libx264",
            "-preset", "ultrafast", "-g", "50", "-bf", "2", "-b:v", "600k", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-b:a", "64k",
        ]
        _ = try? runProcess("/usr/bin/ffmpeg", args + [dir.file("long.mp4")], timeout: 120)
        _ = try? runProcess(
            "/usr/bin/ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-y", "-i", dir.file("long.mp4"),
                "-c", "copy", "-movflags", "+faststart", dir.file("long-faststart.mp4"),
            ])
        for name in ["fragmented.mp4", "audio-only.m4a", "two-audio.mp4", "sample.webm"] {
            try? FileManager.default.copyItem(atPath: MediaFixtures.samples + "/" + name, toPath: dir.file(name))
        }
        return dir
    }()
}

/// The corpus is not where the tests expect it, or not whole.
struct CorpusMissing: Error, CustomStringConvertible {
    let detail: String
    var description: String { "corpus missing or incomplete: \(detail)" }
}
