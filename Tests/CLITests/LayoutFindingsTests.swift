import Foundation
import TestSupport
import XCTest

/// What an attack on the paths that read Matroska Cues, a fragmented MP4's tail and prefetch
/// windows found (hostile and damaged files behind nginx); each test failed before its fix.
final class LayoutFindingsTests: CLITestCase {
    private func ffmpeg(_ arguments: [String]) throws {
        let r = try runProcess("ffmpeg", ["-v", "error", "-y"] + arguments)
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    private func recording(_ path: String, seconds: Int = 40, video: [String], muxing: [String]) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try ffmpeg(
            [
                "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000",
                "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
            ] + video
                + ["-c:a", "aac"] + muxing + [path])
    }

    /// The pts of each video key frame ffprobe finds in the local file, from the file's start.
    private func keyFrames(_ path: String) throws -> [Double] {
        let out = try runProcess(
            "ffprobe",
            [
                "-v", "quiet", "-select_streams", "v", "-show_entries", "packet=pts_time,flags",
                "-of", "csv=p=0", path,
            ]
        ).stdoutString
        return out.split(separator: "\n").filter { $0.contains("K") }.compactMap { Double($0.split(separator: ",")[0]) }
    }

    private func manifest(_ out: String) throws -> [String: Any] {
        try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                as? [String: Any])
    }

    /// A Matroska file cut short (an upload that stopped). Its Cues at the front point past the
    /// new end: thumbs crashed ("Range requires lowerBound <= upperBound"). At the end they are
    /// lost: the key frames libavformat had met in the first Cluster were taken for Cue points,
    /// and every time from 4 s on got the 2 s picture, exit 0. Now each time gets the key frame
    /// at or before it that the file still holds, and a note says where the file ends.
    func testAMatroskaFileCutShortGivesTheKeyFrameAtOrBeforeEachTime() throws {
        let www = dir.file("www")
        for (name, cues) in [("front.mkv", ["-reserve_index_space", "20000"]), ("end.mkv", [])] {
            let whole = dir.file("whole-" + name)
            try recording(whole, video: ["-g", "60"], muxing: ["-f", "matroska"] + cues)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
            try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
            try bytes.prefix(bytes.count * 6 / 10).write(to: URL(fileURLWithPath: www + "/" + name))
        }
        let nginx = try NginxServer(root: www)
        for name in ["front.mkv", "end.mkv"] {
            let out = dir.file("t-" + name)
            let r = try mprobe([
                "thumbs", nginx.url("/" + name), "--count", "10", "--out", out, "--cache-dir", cacheDir, "--json",
            ])
            let keys = try keyFrames(www + "/" + name)  // times from the container's start, 0 here
            let pictures = (try manifest(out)["thumbnails"] as? [[String: Any]] ?? [])
            XCTAssertEqual(pictures.count, 10, name)
            for picture in pictures {
                let time = picture["time"] as? Double ?? -1, pts = picture["pts"] as? Double ?? -1
                let expected = keys.last { $0 <= time + 0.001 } ?? keys.first ?? -1  // (0 s: the first, 21 ms in)
                // Past the last key frame ffprobe lists, the end may cut that one: the one before.
                let cut = expected == keys.last ? keys.dropLast().last : nil
                XCTAssertTrue(
                    abs(pts - expected) < 0.01 || cut.map { abs(pts - $0) < 0.01 } == true,
                    "\(name) at \(time) s: \(pts), key frames \(keys)")
            }
            if name == "front.mkv" {
                XCTAssertTrue(r.stdoutString.contains("ends inside or before the key frame"), r.stdoutString)
            }
        }
    }

    /// A fragmented MP4 whose `mfra` lists a quarter of its fragments (a `tfra` may list some
    /// only): the moof with the largest listed offset was taken for the last, and the probe said
    /// 10 s for a 40 s file. The listed moof's chain of boxes must now run through the `mfra` to
    /// the end of the file, or the `mfra` is not used.
    func testAnMfraListingSomeFragmentsIsNotTakenForTheLastOne() throws {
        let path = dir.file("www/few.mp4")
        try recording(path, video: ["-g", "30"], muxing: ["-movflags", "frag_keyframe+empty_moov", "-f", "mp4"])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let tfra = Array("tfra".utf8)
        var edited = 0
        for p in stride(from: bytes.count - 8, to: max(0, bytes.count - (1 << 20)), by: -1)
        where bytes[p..<p + 4].elementsEqual(tfra) {
            let count = p + 16  // after the type: version and flags, track ID, field lengths, then the entry count
            let listed = bytes[count..<count + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let kept = listed / 4
            bytes.replaceSubrange(
                count..<count + 4,
                with: [UInt8(kept >> 24), UInt8(kept >> 16 & 0xFF), UInt8(kept >> 8 & 0xFF), UInt8(kept & 0xFF)])
            edited += 1
        }
        XCTAssertEqual(edited, 2, "a tfra per track")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let nginx = try NginxServer(root: dir.file("www"))
        let probe = try json(try mprobe([nginx.url("/few.mp4"), "--json", "--cache-dir", cacheDir]))
        let truth = try runProcess(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]
        ).stdoutString
        XCTAssertEqual(
            probe["duration"] as? Double ?? 0, Double(truth.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1,
            accuracy: 0.001)
    }

    /// A prefetch that exits 0 plays offline: it is read as `check` reads it after its fetch.
    /// Before, `check --offline` failed after a prefetch of a fragmented file with two audio
    /// tracks (the second's run lay past the plan), and of one cut into fragments by duration,
    /// whose `mfra` lists fragments that start without a key frame.
    func testEveryPrefetchPlaysOffline() throws {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        try ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=30", "-f", "lavfi", "-i",
            "sine=frequency=440:duration=30",
            "-f", "lavfi", "-i", "sine=frequency=660:duration=30", "-map", "0:v", "-map", "1:a", "-map", "2:a",
            "-c:v", "libx264", "-preset", "ultrafast", "-qp", "2", "-g", "60", "-c:a", "aac",
            "-movflags", "frag_keyframe+empty_moov+skip_trailer", www + "/two-audio.mp4",
        ])
        try recording(
            www + "/by-duration.mp4", video: ["-qp", "2", "-g", "300", "-sc_threshold", "0"],
            muxing: ["-movflags", "empty_moov", "-frag_duration", "1000000", "-f", "mp4"])
        let nginx = try NginxServer(root: www)
        for (name, start) in [("two-audio.mp4", "7"), ("by-duration.mp4", "25")] {
            let cache = dir.file("cache-" + name)
            try mprobe(["prefetch", nginx.url("/" + name), "--start", start, "--seconds", "10", "--cache-dir", cache])
            let check = try mprobe(
                [
                    "check", nginx.url("/" + name), "--start", start, "--seconds", "10", "--offline", "--cache-dir",
                    cache,
                ],
                expect: nil)
            XCTAssertEqual(check.status, 0, "\(name): \(check.stderr)")
        }
    }

    /// A window past the end: check said "plays" with no frame, exit 0, and a prefetch fetched
    /// the last fragment. Both now say so, exit 5.
    func testAWindowPastTheEndIsRefused() throws {
        let path = dir.file("www/flat.mp4")
        try recording(path, video: [], muxing: ["-f", "mp4"])
        let nginx = try NginxServer(root: dir.file("www"))
        for command in ["prefetch", "check"] {
            let r = try mprobe(
                [command, nginx.url("/flat.mp4"), "--start", "500", "--seconds", "10", "--cache-dir", cacheDir],
                expect: 5)
            XCTAssertTrue(
                r.stderr.contains("the window starts at 500.000 s, at or past the end (40."), "\(command): \(r.stderr)")
        }
    }
    /// A fragmented MP4 with B-frames, which libavformat reads every moof of: its index holds
    /// decode times, and thumbnails took the key frame shown after the time (--at 4 gave the
    /// picture of 4.067 s, the next group of pictures). The first video packet now says how far
    /// presentation runs ahead.
    func testBFramesInFragmentsGiveTheKeyFrameShownAtOrBeforeTheTime() throws {
        let www = dir.file("www")
        for (name, flags) in [
            ("with-mfra.mp4", "frag_keyframe+empty_moov"), ("without.mp4", "frag_keyframe+empty_moov+skip_trailer"),
        ] {
            try recording(
                www + "/" + name, video: ["-g", "60", "-bf", "2"], muxing: ["-movflags", flags, "-f", "mp4"])
        }
        let nginx = try NginxServer(root: www)
        for name in ["with-mfra.mp4", "without.mp4"] {
            let out = dir.file("t-" + name)
            try mprobe(["thumbs", nginx.url("/" + name), "--at", "4,10,20.03", "--out", out, "--cache-dir", cacheDir])
            let keys = try keyFrames(www + "/" + name)
            let pts = (try manifest(out)["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
            let expected = [4, 10, 20.03].map { time in keys.last { $0 <= time + 0.001 } ?? -1 }
            XCTAssertEqual(pts.count, 3, name)
            for (mine, theirs) in zip(pts, expected) {
                XCTAssertEqual(mine, theirs, accuracy: 0.01, "\(name): \(pts), key frames \(keys)")
            }
        }
    }
    /// Cues whose times are half a second before their key frames (a hostile or broken muxer):
    /// points were chosen by those times, so --at 7.7 gave the key frame of 8 s, after the time,
    /// and a time 0.5 s past each key frame the one two before. Cues off by more than a rounding
    /// are not chosen by: the key frames are found where the Clusters are, as without Cues.
    func testCuesWhoseTimesAreOffAreNotChosenBy() throws {
        let path = dir.file("www/early.mkv")
        try recording(path, video: ["-g", "60"], muxing: ["-f", "matroska"])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func vint(_ at: Int, keepMarker: Bool) -> (value: UInt64, end: Int) {
            let width = bytes[at].leadingZeroBitCount + 1
            var value = UInt64(keepMarker ? bytes[at] : bytes[at] & (0xFF >> width))
            for b in bytes[(at + 1)..<(at + width)] { value = value << 8 | UInt64(b) }
            return (value, at + width)
        }
        let cues: [UInt8] = [0x1C, 0x53, 0xBB, 0x6B]
        let start = try XCTUnwrap((0..<bytes.count - 4).last { bytes[$0..<$0 + 4].elementsEqual(cues) })
        let (cuesSize, cuesBody) = vint(start + 4, keepMarker: false)
        var at = cuesBody, shifted = 0
        while at < cuesBody + Int(cuesSize) {
            let (id, sizeAt) = vint(at, keepMarker: true)
            let (size, body) = vint(sizeAt, keepMarker: false)
            if id == 0xBB {  // a CuePoint: its CueTime, in milliseconds, moved 500 earlier
                let (childID, childSizeAt) = vint(body, keepMarker: true)
                let (n, value) = vint(childSizeAt, keepMarker: false)
                if childID == 0xB3 {
                    let time = bytes[value..<value + Int(n)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    if time >= 500 {
                        let moved = time - 500
                        for k in 0..<Int(n) {
                            bytes[value + k] = UInt8(truncatingIfNeeded: moved >> (8 * UInt64(Int(n) - 1 - k)))
                        }
                        shifted += 1
                    }
                }
            }
            at = body + Int(size)
        }
        XCTAssertGreaterThan(shifted, 10)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let nginx = try NginxServer(root: dir.file("www"))
        let out = dir.file("t")
        try mprobe(["thumbs", nginx.url("/early.mkv"), "--at", "7.7,16.6,38", "--out", out, "--cache-dir", cacheDir])
        let keys = try keyFrames(path)
        let pts = (try manifest(out)["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        let expected = [7.7, 16.6, 38].map { time in keys.last { $0 <= time + 0.001 } ?? -1 }
        XCTAssertEqual(pts.count, 3)
        for (mine, theirs) in zip(pts, expected) {
            XCTAssertEqual(mine, theirs, accuracy: 0.01, "\(pts), key frames \(keys)")
        }
    }
    /// Smooth Streaming's ISMV: a moof per track, and no tfdt (a tfxd box gives each fragment's
    /// time). Its probe read every fragment (11 requests, 15 MB of 16); now the last moof the mfra
    /// lists for each track, and the tfxd: 3 requests. The audio ends one AAC frame (23 ms) before
    /// the sum of its sample durations, which ffprobe reports: ffmpeg's muxer writes it so.
    func testAnISMVIsProbedFromItsMfraAndTfxdBoxes() throws {
        let path = dir.file("www/a.ismv")
        try FileManager.default.createDirectory(atPath: dir.file("www"), withIntermediateDirectories: true)
        try ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=60", "-f", "lavfi", "-i", "sine=duration=60",
            "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "2M", "-g", "30", "-bf", "0", "-c:a", "aac", "-f",
            "ismv", path,
        ])
        let nginx = try NginxServer(root: dir.file("www"))
        let probe = try json(try mprobe([nginx.url("/a.ismv"), "--json", "--cache-dir", cacheDir]))
        let log = try nginx.accessLog()
        XCTAssertLessThanOrEqual(log.count, 3, "\(log.map { $0.range ?? "-" })")
        XCTAssertLessThan(log.reduce(0) { $0 + $1.bodyBytesSent }, 256 << 10)
        let truth = try runProcess(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]
        ).stdoutString
        XCTAssertEqual(
            probe["duration"] as? Double ?? 0, Double(truth.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1,
            accuracy: 0.03)
    }
}
