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
        let written = try runProcess(
            "/bin/sh",
            [
                "-c",
                "ffmpeg -v error -stream_loop \(loops) -i '\(samplePath("faststart.mp4"))' -c copy "
                    + "-f matroska - > '\(path)'",
            ])
        XCTAssertEqual(written.status, 0, written.stderr)
        return path
    }

    func testTheDurationComesFromTheLastClusterAndThumbnailsSpreadOverIt() throws {
        let input = try recorded()
        let stated = try runProcess(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", input])
        XCTAssertEqual(
            stated.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines), "N/A", "the file states none")
        // The last packet's time (without its own duration, which the file does not state).
        let packets = try runProcess(
            "ffprobe", ["-v", "error", "-show_entries", "packet=pts_time", "-of", "csv=p=0", input])
        let last = try XCTUnwrap(packets.stdoutString.split(separator: "\n").compactMap { Double($0) }.max())
        let probe = try json(try mprobe([input, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(probe["duration"] as? Double ?? 0, last, accuracy: 0.001)

        try mprobe(["thumbs", input, "--count", "3", "--out", dir.file("a"), "--cache-dir", cacheDir])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("a/manifest.json"))))
            as? [String: Any]
        let pts = (manifest?["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        XCTAssertEqual(pts.count, 3)
        XCTAssertGreaterThan(pts.last ?? 0, 2, "spread over the whole file: \(pts)")

        // Seeking in it means reading from the start: no window is promised.
        let prefetch = try mprobe(
            ["prefetch", input, "--start", "2", "--seconds", "1", "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(
            prefetch.stderr.contains("without Cues")
                && prefetch.stderr.contains("no window at 2.0 s can be prefetched"),
            prefetch.stderr)
    }

    /// Thumbnails of a recording without Cues: each key frame is found where the Clusters place
    /// its time, not by libavformat reading every Cluster before it (a 10-minute recording: 150 MB
    /// then, 8 MB now); the pictures are the key frames at or before each time.
    func testThumbnailsFindTheirKeyFramesWithoutReadingThroughTheFile() throws {
        let path = try recorded(loops: 74)  // 300 s, a key frame each second
        let nginx = try NginxServer(root: dir.path)
        let input = nginx.url("/" + URL(fileURLWithPath: path).lastPathComponent)
        let made = try mprobe(["thumbs", input, "--count", "6", "--out", dir.file("t"), "--cache-dir", cacheDir])
        XCTAssertTrue(made.stderr.contains("no Cues: each key frame was found"), made.stderr)
        let manifest = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("t/manifest.json"))))
                as? [String: Any])
        let thumbnails = manifest["thumbnails"] as? [[String: Any]] ?? []
        let packets = try runProcess(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,flags",
                "-of", "csv=p=0", path,
            ])
        let keys = packets.stdoutString.split(separator: "\n").filter { $0.contains("K") }.compactMap {
            Double($0.split(separator: ",")[0])
        }
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

    /// A recording's key frames at or before each time, from ffprobe, as the manifest counts (from
    /// the container's start).
    private func expectedKeyFrames(_ path: String, times: [Double]) throws -> [Double] {
        let start = try runProcess(
            "ffprobe", ["-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0", path])
        let origin = Double(start.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        let packets = try runProcess(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,flags",
                "-of", "csv=p=0", path,
            ])
        let keys = packets.stdoutString.split(separator: "\n").filter { $0.contains("K") }.compactMap {
            Double($0.split(separator: ",")[0])
        }
        return times.map { time in (keys.filter { $0 <= origin + time + 1e-6 }.max() ?? keys.min() ?? -1) - origin }
    }

    private func thumbnails(
        _ input: String, _ options: [String]
    ) throws -> (times: [Double], pts: [Double], stderr: String) {
        let out = dir.file("t\(UUID().uuidString)")
        let made = try mprobe(["thumbs", input, "--out", out, "--cache-dir", cacheDir] + options)
        let manifest = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                as? [String: Any])
        let list = manifest["thumbnails"] as? [[String: Any]] ?? []
        return (list.compactMap { $0["time"] as? Double }, list.compactMap { $0["pts"] as? Double }, made.stderr)
    }

    /// Found by attacking the Cluster search: Clusters longer than a read (3 s at 2 Mb/s), with
    /// times between one Cluster's last block and the next one's start, made it give up and read
    /// the whole file; video starting 60 s after the audio made it, then libavformat's seek, fail
    /// (exit 5); a Cluster whose Timecode goes back made it answer a key frame 10 s early. Now the
    /// search grows its read towards the time, video that starts late gives its first key frame,
    /// and times that go back leave the search to libavformat.
    func testTheClusterSearchHoldsOnLongClustersLateVideoAndTimesThatGoBack() throws {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let long = try runProcess(
            "/bin/sh",
            [
                "-c",
                "ffmpeg -v error -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi "
                    + "-i sine=frequency=440:sample_rate=48000 -t 40 -c:v libx264 -preset ultrafast -b:v 2M -g 150 -sc_threshold 0 -c:a aac "
                    + "-cluster_time_limit 3000 -cluster_size_limit 10000000 -f matroska - > '\(www)/long.mkv'",
            ])
        XCTAssertEqual(long.status, 0, long.stderr)
        let late = try runProcess(
            "/bin/sh",
            [
                "-c",
                "ffmpeg -v error -f lavfi -i sine=frequency=440:sample_rate=48000:duration=90 "
                    + "-itsoffset 60 -f lavfi -i testsrc2=size=320x180:rate=30:duration=30 -map 1:v -map 0:a -c:v libx264 -preset ultrafast "
                    + "-g 60 -c:a aac -f matroska - > '\(www)/late.mkv'",
            ])
        XCTAssertEqual(late.status, 0, late.stderr)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: www + "/long.mkv")))
        try zeroTimecode(ofCluster: 10, in: &bytes)  // 25 s, which holds the key frame of 25.021 s
        try Data(bytes).write(to: URL(fileURLWithPath: www + "/back.mkv"))
        let nginx = try NginxServer(root: www)

        let every = try thumbnails(nginx.url("/long.mkv"), ["--at", "9.995,19.995,32.995"])  // between two Clusters
        XCTAssertEqual(every.pts, try expectedKeyFrames(www + "/long.mkv", times: every.times))
        XCTAssertTrue(every.stderr.contains("no Cues: each key frame was found"), every.stderr)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: www + "/long.mkv")[.size] as? Int)
        XCTAssertLessThan(try nginx.accessLog().reduce(Int64(0)) { $0 + $1.bodyBytesSent }, Int64(size) * 4 / 5)

        let fromLate = try thumbnails(nginx.url("/late.mkv"), ["--at", "0,75"])
        XCTAssertEqual(
            fromLate.pts, try expectedKeyFrames(www + "/late.mkv", times: [0, 75]),
            "the first key frame, at 60 s, for 0 s")

        let back = try thumbnails(nginx.url("/back.mkv"), ["--at", "12,29.5"])
        XCTAssertEqual(back.pts, try expectedKeyFrames(www + "/back.mkv", times: [12, 29.5]))
    }

    /// Sets the Timecode of the `n`-th Cluster (from 0) to zero, in place.
    private func zeroTimecode(ofCluster n: Int, in bytes: inout [UInt8]) throws {
        var seen = -1
        var p = 0
        while p + 16 < bytes.count {
            defer { p += 1 }
            guard bytes[p] == 0x1F, bytes[p + 1] == 0x43, bytes[p + 2] == 0xB6, bytes[p + 3] == 0x75 else { continue }
            var q = p + 4 + (bytes[p + 4].leadingZeroBitCount + 1)  // past the ID and the size
            if bytes[q] == 0xBF { q += 6 }  // a CRC-32 first
            guard bytes[q] == 0xE7 else { continue }
            seen += 1
            guard seen == n else { continue }
            let width = Int(bytes[q + 1] & 0x7F)
            for i in 0..<width { bytes[q + 2 + i] = 0 }
            return
        }
        XCTFail("no Cluster \(n)")
    }

    /// From the start a window can be prefetched: estimated from the bit rate over the last
    /// Cluster's duration, and said to be. Before, the key frames libavformat indexed while
    /// reading the first Clusters placed it, running to the end of the file: a 10 s window of a
    /// 10-minute recording fetched all 160 MB.
    func testAWindowFromTheStartIsEstimatedNotTheWholeFile() throws {
        let path = try recorded(loops: 14)  // 60 s
        let nginx = try NginxServer(root: dir.path)
        let input = nginx.url("/" + URL(fileURLWithPath: path).lastPathComponent)
        let fromStart = try json(
            try mprobe(["prefetch", input, "--start", "0", "--seconds", "10", "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(fromStart["estimated"] as? Bool, true)
        XCTAssertTrue((fromStart["note"] as? String ?? "").contains("no Cues"), "\(fromStart)")
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let ends = (fromStart["sample_ranges"] as? [[String: Any]] ?? []).compactMap { $0["end"] as? Int }
        XCTAssertEqual(ends.count, 1)
        XCTAssertLessThan(ends.first ?? size, size / 3, "10 s of a 60 s file, +25%")
        try mprobe(["check", input, "--offline", "--start", "0", "--seconds", "10", "--cache-dir", cacheDir])
    }

    /// Cluster-looking bytes inside an attachment after the last Cluster are not the last Cluster:
    /// what follows a Cluster taken for the last must be the Segment's own elements, to the end
    /// (before: an attached file holding a Cluster ID with Timecode 3,000,000 made the duration 50 min).
    func testClusterBytesInsideAnAttachmentDoNotMakeTheDuration() throws {
        let input = try recorded()
        let packets = try runProcess(
            "ffprobe", ["-v", "error", "-show_entries", "packet=pts_time", "-of", "csv=p=0", input])
        let last = try XCTUnwrap(packets.stdoutString.split(separator: "\n").compactMap { Double($0) }.max())
        func element(_ id: [UInt8], _ body: [UInt8]) -> [UInt8] {
            precondition(body.count < 0x3FFF)
            return id + [0x40 | UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        }
        let block = element([0xA3], [0x81, 0x00, 0x00, 0x80] + [UInt8](repeating: 0, count: 26))
        let fake = element([0x1F, 0x43, 0xB6, 0x75], element([0xE7], [0x00, 0x2D, 0xC6, 0xC0]) + block)  // Timecode 3,000,000
        let file =
            element([0x46, 0x6E], Array("b.bin".utf8)) + element([0x46, 0x60], Array("application/octet-stream".utf8))
            + element([0x46, 0x5C], fake) + element([0x46, 0xAE], [0, 0, 0, 0, 0, 0, 0x04, 0xD3])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: input))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(element([0x19, 0x41, 0xA4, 0x69], element([0x61, 0xA7], file))))
        try handle.close()
        let probe = try json(try mprobe([input, "--json", "--cache-dir", cacheDir]))
        XCTAssertEqual(probe["duration"] as? Double ?? 0, last, accuracy: 0.001)
    }

    func testJobsThatNeedADurationSayItIsMissingWhenNoClusterIsFound() throws {
        // 17 MiB of padding after the media: the last Cluster is past the bounded tail read.
        let input = try recorded()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: input))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(count: 17 << 20))
        try handle.close()

        let spread = try mprobe(
            ["thumbs", input, "--count", "3", "--out", dir.file("a"), "--cache-dir", cacheDir], expect: 5)
        XCTAssertTrue(spread.stderr.contains("give times with --at"), spread.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("a/manifest.json")), "nothing written")
        try mprobe(["thumbs", input, "--at", "0.5,3", "--out", dir.file("b"), "--cache-dir", cacheDir])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("b/manifest.json"))))
            as? [String: Any]
        let pts = (manifest?["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        XCTAssertEqual(pts.count, 2)
        XCTAssertGreaterThan(pts.last ?? 0, 1.5, "the frame for 3 s is not the first one: \(pts)")
    }
}
