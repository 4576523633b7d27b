import Foundation
import TestSupport
import XCTest

/// Media written as a stream (a browser's MediaRecorder WebM: no Cues, no Duration in its Info):
/// the duration comes from the last Cluster; where even that cannot be found, jobs that need a
/// duration say so instead of making ten copies of the first frame.
final class StreamWrittenMediaTests: CLITestCase {
    /// Matroska written to a pipe, as a recorder writes it.
    private func recorded(loops: Int = 0) throws -> String {
        let path = dir.file("recorded\(loops).mkv")
        let written = try runProcess("/bin/sh", ["-c", "ffmpeg -v error -stream_loop \(loops) -i '\(samplePath("faststart.mp4"))' -c copy "
                                                 + "-f matroska - > '\(path)'"])
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
        XCTAssertTrue(prefetch.stderr.contains("without Cues") && prefetch.stderr.contains("no window at 2.0 s can be prefetched"),
                      prefetch.stderr)
    }

    /// Thumbnails of a recording without Cues: each key frame is found where the Clusters place
    /// its time, not by libavformat reading every Cluster before it (a 10-minute recording: 150 MB
    /// then, 8 MB now); the pictures are the key frames at or before each time.
    func testThumbnailsFindTheirKeyFramesWithoutReadingThroughTheFile() throws {
        let path = try recorded(loops: 74) // 300 s, a key frame each second
        let nginx = try NginxServer(root: dir.path)
        let input = nginx.url("/" + URL(fileURLWithPath: path).lastPathComponent)
        let made = try mprobe(["thumbs", input, "--count", "6", "--out", dir.file("t"), "--cache-dir", cacheDir])
        XCTAssertTrue(made.stderr.contains("no Cues: each key frame was found"), made.stderr)
        let manifest = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("t/manifest.json"))))
            as? [String: Any])
        let thumbnails = manifest["thumbnails"] as? [[String: Any]] ?? []
        let packets = try runProcess("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,flags",
                                                 "-of", "csv=p=0", path])
        let keys = packets.stdoutString.split(separator: "\n").filter { $0.contains("K") }.compactMap { Double($0.split(separator: ",")[0]) }
        XCTAssertEqual(thumbnails.count, 6)
        for thumbnail in thumbnails {
            let time = thumbnail["time"] as? Double ?? -1
            let key = try XCTUnwrap(keys.last { $0 <= time + 1e-6 } ?? keys.first)
            XCTAssertEqual(thumbnail["pts"] as? Double ?? -1, key, accuracy: 0.0005, "at \(time) s")
        }
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let sent = try nginx.accessLog().reduce(Int64(0)) { $0 + $1.bodyBytesSent }
        XCTAssertLessThan(sent, Int64(size / 3), "before: the whole file (every Cluster up to 250 s, and readahead)")
    }

    /// From the start a window can be prefetched: estimated from the bit rate over the last
    /// Cluster's duration, and said to be. Before, the key frames libavformat indexed while
    /// reading the first Clusters placed it, running to the end of the file: a 10 s window of a
    /// 10-minute recording fetched all 160 MB.
    func testAWindowFromTheStartIsEstimatedNotTheWholeFile() throws {
        let path = try recorded(loops: 14) // 60 s
        let nginx = try NginxServer(root: dir.path)
        let input = nginx.url("/" + URL(fileURLWithPath: path).lastPathComponent)
        let fromStart = try json(try mprobe(["prefetch", input, "--start", "0", "--seconds", "10", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(fromStart["estimated"] as? Bool, true)
        XCTAssertTrue((fromStart["note"] as? String ?? "").contains("no Cues"), "\(fromStart)")
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let ends = (fromStart["sample_ranges"] as? [[String: Any]] ?? []).compactMap { $0["end"] as? Int }
        XCTAssertEqual(ends.count, 1)
        XCTAssertLessThan(ends.first ?? size, size / 3, "10 s of a 60 s file, +25%")
        try mprobe(["check", input, "--offline", "--start", "0", "--seconds", "10", "--cache-dir", cacheDir])
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
