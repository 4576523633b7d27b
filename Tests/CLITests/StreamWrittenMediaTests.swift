import Foundation
import TestSupport
import XCTest

/// Media written as a stream (a browser's MediaRecorder WebM: no Cues, no Duration in its Info):
/// the duration comes from the last Cluster; where even that cannot be found, jobs that need a
/// duration say so instead of making ten copies of the first frame.
final class StreamWrittenMediaTests: CLITestCase {
    /// Matroska written to a pipe, as a recorder writes it.
    private func recorded() throws -> String {
        let path = dir.file("recorded.mkv")
        let written = try runProcess("/bin/sh", ["-c", "ffmpeg -v error -i '\(samplePath("faststart.mp4"))' -c copy -f matroska - > '\(path)'"])
        XCTAssertEqual(written.status, 0, written.stderr)
        return path
    }

    func testTheDurationComesFromTheLastClusterAndThumbnailsSpreadOverIt() throws {
        let input = try recorded()
        let stated = try runProcess("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", input])
        XCTAssertEqual(stated.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines), "N/A", "the file states none")
        // The last packet's time (without its own duration, which the file does not state).
        let packets = try runProcess("ffprobe", ["-v", "error", "-show_entries", "packet=pts_time", "-of", "csv=p=0", input])
        let last = try XCTUnwrap(packets.stdoutString.split(separator: "\n").compactMap { Double($0) }.max())
        let probe = try json(try mprobe([input, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(probe["duration"] as? Double ?? 0, last, accuracy: 0.001)

        try mprobe(["thumbs", input, "--count", "3", "--out", dir.file("a"), "--cache-dir", cacheDir])
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("a/manifest.json")))) as? [String: Any]
        let pts = (manifest?["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        XCTAssertEqual(pts.count, 3)
        XCTAssertGreaterThan(pts.last ?? 0, 2, "spread over the whole file: \(pts)")

        // Seeking in it means reading from the start: no window is promised.
        let prefetch = try mprobe(["prefetch", input, "--start", "2", "--seconds", "1", "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(prefetch.stderr.contains("no window can be prefetched"), prefetch.stderr)
    }

    func testJobsThatNeedADurationSayItIsMissingWhenNoClusterIsFound() throws {
        // 17 MiB of padding after the media: the last Cluster is past the bounded tail read.
        let input = try recorded()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: input))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(count: 17 << 20))
        try handle.close()

        let spread = try mprobe(["thumbs", input, "--count", "3", "--out", dir.file("a"), "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(spread.stderr.contains("give times with --at"), spread.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("a/manifest.json")), "nothing written")
        try mprobe(["thumbs", input, "--at", "0.5,3", "--out", dir.file("b"), "--cache-dir", cacheDir])
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("b/manifest.json")))) as? [String: Any]
        let pts = (manifest?["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        XCTAssertEqual(pts.count, 2)
        XCTAssertGreaterThan(pts.last ?? 0, 1.5, "the frame for 3 s is not the first one: \(pts)")
    }
}
