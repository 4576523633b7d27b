import Foundation
import TestSupport
import XCTest

/// Media written as a stream (a browser's MediaRecorder WebM: no Cues, no duration) gives a job
/// nothing to place times by: a clear error, not ten copies of the first frame.
final class StreamWrittenMediaTests: CLITestCase {
    func testJobsThatNeedADurationSayItIsMissingAndTimesGivenStillWork() throws {
        // Matroska written to a pipe, as a recorder writes it: no Cues, no duration in its Info.
        let written = try runProcess("/bin/sh", ["-c", "ffmpeg -v error -i '\(samplePath("faststart.mp4"))' -c copy -f matroska - > '\(dir.file("recorded.mkv"))'"])
        XCTAssertEqual(written.status, 0, written.stderr)
        let input = dir.file("recorded.mkv")

        let spread = try mprobe(["thumbs", input, "--count", "3", "--out", dir.file("a"), "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(spread.stderr.contains("give times with --at"), spread.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("a/manifest.json")), "nothing written")

        try mprobe(["thumbs", input, "--at", "0.5,3", "--out", dir.file("b"), "--cache-dir", cacheDir])
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("b/manifest.json")))) as? [String: Any]
        let pts = (manifest?["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        XCTAssertEqual(pts.count, 2)
        XCTAssertGreaterThan(pts.last ?? 0, 1.5, "the frame for 3 s is not the first one: \(pts)")

        let prefetch = try mprobe(["prefetch", input, "--start", "2", "--seconds", "1", "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(prefetch.stderr.contains("no window can be prefetched"), prefetch.stderr)
    }
}
