import Foundation
import TestSupport
import XCTest

/// A long fragmented MP4 is probed from its index and its last fragment (`FragmentTimeline`), and
/// thumbnailed from the key frames its `mfra` lists (`FragmentKeyFrames`), not by reading every
/// `moof` — with the same results as reading them all.
final class FragmentedMP4Tests: CLITestCase {
    /// 40 s cut every half second (80 fragments): with `mfra` at the end, and the same without it.
    private func makeFragmentedFiles(bFrames: Bool = false) throws -> (www: String, names: [String]) {
        let www = dir.file("www")
        try encodeRecording(
            www + "/with-mfra.mp4", muxing: ["-movflags", "frag_keyframe+empty_moov"], bFrames: bFrames)
        let remux = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-i", www + "/with-mfra.mp4", "-c", "copy",
                "-movflags", "frag_keyframe+empty_moov+skip_trailer", www + "/without-mfra.mp4",
            ])
        XCTAssertEqual(remux.status, 0, remux.stderr)
        return (www, ["with-mfra.mp4", "without-mfra.mp4"])
    }

    /// ffprobe's stream durations, then the file's.
    private func ffprobeDurations(_ path: String) throws -> [Double] {
        try ffprobeValues(path, entries: "stream=duration:format=duration")
    }

    private func ffprobeValues(_ path: String, entries: String) throws -> [Double] {
        let result = try FFprobeOracle.run(["-v", "error", "-show_entries", entries, "-of", "csv=p=0", path])
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdoutString.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }

    private func probeDurations(_ input: String) throws -> (tracks: [Double], file: Double, json: [String: Any]) {
        let object = try json(try mprobe([input, "--json", "--cache-dir", cacheDir]))
        let tracks = try XCTUnwrap(object["tracks"] as? [[String: Any]])
        return (tracks.compactMap { $0["duration"] as? Double }, try XCTUnwrap(object["duration"] as? Double), object)
    }

    func testALongFragmentedFileIsProbedInThreeRequestsWithFFprobesDurations() throws {
        let (www, names) = try makeFragmentedFiles()
        let nginx = try NginxServer(root: www)
        // With mfra: the head, the tail's mfro and mfra (a read sized by the fragments the first
        // suggests, at least 16 KiB), the last moof (4 KiB); 144 KiB when the tail read was 64 KiB
        // and the moof's 16. Without: the head, that tail, the tail up to twice the first fragment
        // (at least 256 KiB).
        for (name, byteLimit) in zip(names, [(64 + 20 + 4) << 10, 450_000] as [Int64]) {
            nginx.clearLog()
            let probed = try probeDurations(nginx.url("/" + name))
            let log = try nginx.accessLog()
            XCTAssertLessThanOrEqual(log.count, 3, "\(name): \(log.map { $0.range ?? "-" })")
            XCTAssertLessThanOrEqual(
                log.reduce(0) { $0 + $1.bodyBytesSent }, byteLimit, "\(name): \(log.map { $0.range ?? "-" })")
            let expected = try ffprobeDurations(www + "/" + name)
            XCTAssertEqual(expected.count, 3, "two streams and the file")
            XCTAssertEqual(probed.tracks.count, 2, name)
            for (mine, theirs) in zip(probed.tracks + [probed.file], expected) {
                XCTAssertEqual(
                    mine, theirs, accuracy: 0.0005,
                    "\(name): \(probed.tracks) \(probed.file) against ffprobe's \(expected)")
            }
            let start = try ffprobeValues(www + "/" + name, entries: "format=start_time")
            XCTAssertEqual(probed.json["start_time"] as? Double ?? -1, start.first ?? -2, accuracy: 0.0005, name)
            let tracks = try XCTUnwrap(probed.json["tracks"] as? [[String: Any]])
            XCTAssertEqual(tracks[0]["frame_rate"] as? Double ?? 0, 30, accuracy: 0.01, "the last fragment's rate")
            XCTAssertEqual(tracks[1]["profile"] as? String, "LC", "the AAC profile from its configuration")
            XCTAssertTrue(
                tracks.allSatisfy { $0["bit_rate"] is NSNull }, "per-track bit rates would need every fragment")
        }
    }

    /// Without an mfra, the last moof is read from a 256 KiB window where the first fragment's
    /// size places it (a whole fragment's media data follows it), not from a tail of twice a
    /// fragment; and a file of 8 MiB counts as having many fragments from 4 on (before: 20
    /// fragments were read one request each). A recording cut inside its last group of pictures
    /// puts its last moof after the window: what follows the window is read, one request more.
    func testWithoutAnMfraTheLastMoofIsReadWhereTheFirstFragmentPlacesIt() throws {
        let www = dir.file("www")
        let muxing = ["-qp", "2", "-g", "60", "-movflags", "frag_keyframe+empty_moov+skip_trailer", "-f", "mp4"]
        try encodeRecording(www + "/whole.mp4", muxing: muxing)  // 20 fragments of about 0.5 MB
        let cut = try runProcess(
            "ffmpeg",
            ["-v", "error", "-i", www + "/whole.mp4", "-c", "copy", "-t", "38.6"] + muxing.suffix(4)
                + [www + "/cut.mp4"])
        XCTAssertEqual(cut.status, 0, cut.stderr)
        let nginx = try NginxServer(root: www)
        for (name, requests) in [("whole.mp4", 3), ("cut.mp4", 4)] {
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: www + "/" + name)[.size] as? Int64)
            XCTAssertGreaterThan(size, 8 << 20, "a file large enough to count as many fragments")
            nginx.clearLog()
            let probed = try probeDurations(nginx.url("/" + name))
            let log = try nginx.accessLog()
            XCTAssertLessThanOrEqual(log.count, requests, "\(name): \(log.map { $0.range ?? "-" })")
            let sent = log.reduce(0) { $0 + $1.bodyBytesSent }
            // The head, the tail's mfro, the window, and for the cut file what follows the window.
            // (Before: the head, the mfro and a tail of twice the first fragment and 64 KiB.)
            let limit = Int64((64 + 24 + 256 + 8) << 10) + (name == "whole.mp4" ? 0 : size / 20)
            XCTAssertLessThanOrEqual(sent, limit, "\(name): \(log.map { $0.range ?? "-" })")
            let expected = try ffprobeDurations(www + "/" + name)
            for (mine, theirs) in zip(probed.tracks + [probed.file], expected) {
                XCTAssertEqual(
                    mine, theirs, accuracy: 0.0005,
                    "\(name): \(probed.tracks) \(probed.file) against ffprobe's \(expected)")
            }
        }
    }

    func testADamagedIndexFallsBackToTheTailAndFragmentsWithoutDecodeTimesToReadingThemAll() throws {
        let (www, names) = try makeFragmentedFiles()
        let expected = try ffprobeDurations(www + "/" + names[0])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: www + "/" + names[0])))
        // The mfro's size of the mfra now points nowhere: the tail is searched instead.
        bytes.replaceSubrange(bytes.count - 4..<bytes.count, with: [0xFF, 0xFF, 0xFF, 0xF0])
        _ = try writeFile("www/bad-index.mp4", bytes)
        // And fragments without their decode time (tfdt), as older muxers wrote them: the end cannot
        // be read from the last one, so libavformat reads them all, as before.
        let tfdt = Array("tfdt".utf8)
        var noTimes = bytes
        for p in 0..<noTimes.count - 4 where noTimes[p..<p + 4].elementsEqual(tfdt) {
            noTimes.replaceSubrange(p..<p + 4, with: Array("free".utf8))
        }
        _ = try writeFile("www/no-decode-times.mp4", noTimes)
        let nginx = try NginxServer(root: www)
        nginx.clearLog()
        let viaTail = try probeDurations(nginx.url("/bad-index.mp4"))
        XCTAssertLessThanOrEqual(try nginx.accessLog().count, 3)
        for (mine, theirs) in zip(viaTail.tracks + [viaTail.file], expected) {
            XCTAssertEqual(mine, theirs, accuracy: 0.0005)
        }

        nginx.clearLog()
        let walked = try probeDurations(nginx.url("/no-decode-times.mp4"))
        XCTAssertGreaterThan(try nginx.accessLog().count, 3, "every fragment read, as libavformat does")
        XCTAssertEqual(walked.file, expected.last ?? 0, accuracy: 0.1, "still a duration, from libavformat")
    }

    func testThumbnailsOfALongFragmentedFileFetchOnlyTheFragmentsTheyShow() throws {
        let (www, names) = try makeFragmentedFiles()
        let nginx = try NginxServer(root: www)
        var manifests: [[Double]] = []
        var pictures: [[Data]] = []
        for name in names {
            nginx.clearLog()
            let out = dir.file("thumbs-" + name)
            try mprobe(["thumbs", nginx.url("/" + name), "--count", "8", "--out", out, "--cache-dir", cacheDir])
            let log = try nginx.accessLog()
            if name == "with-mfra.mp4" {
                // The head, the mfra, the last moof; then per thumbnail its moof with the key frame
                // after it, and at most the rest of a key frame larger than the first one.
                XCTAssertLessThanOrEqual(log.count, 3 + 2 * 8, "\(log.map { $0.range ?? "-" })")
                let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: www + "/" + name)[.size] as? Int)
                XCTAssertLessThanOrEqual(
                    log.reduce(0) { $0 + $1.bodyBytesSent }, Int64(size / 4), "a quarter of the file at most")
            } else {
                // No index: the head, the tail with the last moof, then reads placed by time that
                // find each key frame's moof (FragmentScan), in one wave — not a request per moof (80).
                XCTAssertLessThanOrEqual(log.count, 3 + 8 + 4, "\(log.map { $0.range ?? "-" })")
            }
            let manifest =
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                as? [String: Any]
            let thumbnails = manifest?["thumbnails"] as? [[String: Any]] ?? []
            manifests.append(thumbnails.compactMap { $0["pts"] as? Double })
            pictures.append(
                try thumbnails.compactMap { $0["file"] as? String }.map {
                    try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0))
                })
        }
        XCTAssertEqual(manifests[0].count, 8)
        XCTAssertEqual(manifests[0], manifests[1], "the same key frames as reading every fragment")
        XCTAssertEqual(manifests[0].last ?? 0, 35, accuracy: 1, "spread over the whole 40 s, not the first fragment")
        XCTAssertEqual(pictures[0].count, 8)
        XCTAssertTrue(pictures[0] == pictures[1], "the same pictures")
    }

    /// Fragments shorter than a group of pictures (cut every half second, a key frame every two),
    /// without an index: a thumbnail's key frame is in a fragment before the one holding its time,
    /// found by going back (`FragmentScan`) and decoded from its bytes — the same pictures and times
    /// as the file with an `mfra`, through libavformat's seeks, in a few requests rather than one
    /// per fragment (80).
    func testFragmentsWithoutKeyFramesLeadBackToTheKeyFrameBeforeThem() throws {
        let www = dir.file("www")
        try encodeRecording(
            www + "/with-mfra.mp4",
            muxing: [
                "-g", "60", "-frag_duration", "500000",
                "-movflags", "empty_moov+default_base_moof",
            ])
        let remux = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-i", www + "/with-mfra.mp4", "-c", "copy", "-frag_duration", "500000",
                "-movflags", "empty_moov+default_base_moof+skip_trailer", www + "/without-mfra.mp4",
            ])
        XCTAssertEqual(remux.status, 0, remux.stderr)
        let nginx = try NginxServer(root: www)
        var sets: [(times: [Double], pts: [Double], pictures: [Data])] = []
        for name in ["with-mfra.mp4", "without-mfra.mp4"] {
            nginx.clearLog()
            let out = dir.file("t-" + name)
            try mprobe(["thumbs", nginx.url("/" + name), "--count", "8", "--out", out, "--cache-dir", cacheDir])
            if name == "without-mfra.mp4" { XCTAssertLessThan(try nginx.accessLog().count, 40) }
            let manifest =
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                as? [String: Any]
            let thumbnails = manifest?["thumbnails"] as? [[String: Any]] ?? []
            sets.append(
                (
                    thumbnails.compactMap { $0["time"] as? Double }, thumbnails.compactMap { $0["pts"] as? Double },
                    try thumbnails.compactMap { $0["file"] as? String }.map {
                        try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0))
                    }
                ))
        }
        // The key frames at or before each time, from the start (before: with the mfra, the last
        // key frame libavformat had read, 0 s for 5 s).
        let start = try XCTUnwrap(try ffprobeValues(www + "/without-mfra.mp4", entries: "format=start_time").first)
        let keys = try FFprobeOracle.run([
            "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
            www + "/without-mfra.mp4",
        ]).stdoutString.split(separator: "\n")
            .filter { $0.contains("K") }.compactMap { Double($0.split(separator: ",")[0]) }
        let expected = sets[0].times.map { time in (keys.last { $0 <= start + time + 1e-6 } ?? 0) - start }
        XCTAssertEqual(sets[0].times.count, 8)
        for (got, want) in zip(sets[0].pts + sets[1].pts, expected + expected) {
            XCTAssertEqual(got, want, accuracy: 0.001)
        }
        XCTAssertEqual(sets[1].pictures.count, 8)
        XCTAssertTrue(sets[1].pictures == sets[0].pictures, "the same pictures")
    }

    /// A recording cut short (an upload that stopped) inside a key frame: the times after it take
    /// the last whole key frame, said in a note. Before, they took the file's first frame (the
    /// last fallback decoded from the start), exit 0.
    func testACutRecordingGivesItsLastWholeKeyFrameNotTheFirstFrame() throws {
        let (www, names) = try makeFragmentedFiles()
        // Cut 100 bytes into the media data of the last fragment before 60 %: into its key frame.
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: www + "/" + names[1])))
        let moof = Array("moof".utf8)
        let at = try XCTUnwrap((8..<whole.count * 6 / 10).last { whole[$0..<$0 + 4].elementsEqual(moof) }) - 4
        let moofSize = whole[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
        try Data(whole.prefix(at + moofSize + 8 + 100)).write(to: URL(fileURLWithPath: www + "/cut.mp4"))
        let nginx = try NginxServer(root: www)
        let out = dir.file("cut")
        let duration = try XCTUnwrap(
            try json(try mprobe([nginx.url("/cut.mp4"), "--json", "--cache-dir", cacheDir]))["duration"] as? Double)
        let times = stride(from: 1.0, to: duration, by: 1).map { $0 } + [duration - 0.05]
        let made = try mprobe([
            "thumbs", nginx.url("/cut.mp4"), "--at", times.map { String(format: "%.2f", $0) }.joined(separator: ","),
            "--out", out, "--cache-dir", cacheDir,
        ])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
            as? [String: Any]
        let thumbnails = manifest?["thumbnails"] as? [[String: Any]] ?? []
        XCTAssertGreaterThan(thumbnails.count, 15)
        for thumbnail in thumbnails {
            let time = thumbnail["time"] as? Double ?? -1, pts = thumbnail["pts"] as? Double ?? -1
            // A key frame every half second: the one shown is at most a second before the time.
            XCTAssertTrue(pts <= time + 0.001 && pts >= time - 1.5, "\(time) s shows \(pts) s: \(made.stderr)")
        }
    }

    /// Sample flags that say "depends on others" without the non-sync bit: not a sync sample, as
    /// libavformat reads them (before, a P frame was decoded alone: a grey picture, exit 0).
    func testASampleThatDependsOnOthersIsNoKeyFrame() throws {
        let (www, names) = try makeFragmentedFiles()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: www + "/" + names[1])))
        let tfhd = Array("tfhd".utf8)
        var patched = 0
        for p in 4..<bytes.count - 32 where bytes[p..<p + 4].elementsEqual(tfhd) {
            let flags = Int(bytes[p + 5]) << 16 | Int(bytes[p + 6]) << 8 | Int(bytes[p + 7])
            guard flags & 0x20 != 0 else { continue }
            // After the track ID: base data offset, description index, duration and size, as flagged.
            var q = p + 8 + 4
            for (bit, width) in [(0x01, 8), (0x02, 4), (0x08, 4), (0x10, 4)] where flags & bit != 0 { q += width }
            guard bytes[q..<q + 4].elementsEqual([0x01, 0x01, 0x00, 0x00]) else { continue }
            bytes[q + 1] = 0  // depends on others, the non-sync bit cleared
            patched += 1
        }
        XCTAssertGreaterThan(patched, 10, "ffmpeg's fragments state their default sample flags")
        try Data(bytes).write(to: URL(fileURLWithPath: www + "/depends.mp4"))
        let nginx = try NginxServer(root: www)
        let out = dir.file("depends")
        try mprobe([
            "thumbs", nginx.url("/depends.mp4"), "--at", "5.3,12.2,31.4", "--out", out, "--cache-dir", cacheDir,
        ])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
            as? [String: Any]
        let pts = (manifest?["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        let keys = try FFprobeOracle.run([
            "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
            www + "/depends.mp4",
        ]).stdoutString.split(separator: "\n")
            .filter { $0.contains("K") }.compactMap { Double($0.split(separator: ",")[0]) }
        let expected = [5.3, 12.2, 31.4].map { time in keys.filter { $0 <= time }.max() ?? -1 }
        XCTAssertEqual(pts.count, 3)
        for (got, want) in zip(pts, expected) { XCTAssertEqual(got, want, accuracy: 0.001) }
    }

    func testAPrefetchOfALongFragmentedFileTakesTheFragmentsItsMfraPlacesAndPlaysOffline() throws {
        let (www, names) = try makeFragmentedFiles()
        let nginx = try NginxServer(root: www)
        let url = nginx.url("/" + names[0])
        let plan = try json(
            // libavformat's plan: what the mfra places, without what other players read besides.
            try mprobe([
                "prefetch", url, "--start", "20", "--seconds", "5", "--for", "ffmpeg", "--json", "--cache-dir",
                cacheDir,
            ]))
        XCTAssertEqual(plan["estimated"] as? Bool, false, "\(plan)")
        XCTAssertTrue((plan["note"] as? String ?? "").contains("mfra"), "\(plan)")
        let log = try nginx.accessLog()
        // The head, the mfra, the last moof, the window's fragments (19.5 s to 25 s of 40 s).
        XCTAssertLessThanOrEqual(log.count, 5, "\(log.map { $0.range ?? "-" })")
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: www + "/" + names[0])[.size] as? Int)
        XCTAssertLessThanOrEqual(log.reduce(0) { $0 + $1.bodyBytesSent }, Int64(Double(size) * 0.25))
        // Each track's buffered time, from the fragments now cached, covers the window.
        let buffered = (plan["tracks"] as? [[String: Any]] ?? []).map { $0["buffered"] as? [[String: Any]] ?? [] }
        XCTAssertEqual(buffered.count, 2, "both tracks: \(plan)")
        for spans in buffered {
            XCTAssertTrue(
                spans.contains { ($0["start"] as? Double ?? 99) <= 20 && ($0["end"] as? Double ?? 0) >= 25 }, "\(spans)"
            )
        }

        nginx.clearLog()
        let check = try mprobe(["check", url, "--start", "20", "--seconds", "5", "--offline", "--cache-dir", cacheDir])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
        XCTAssertEqual(try nginx.accessLog().count, 0)
    }

    /// Without an `mfra` (or with B-frames) libavformat reads every `moof` to seek: they are fetched
    /// one small range each (`MoofChain`), not with a readahead window per fragment that pulled in
    /// most of the file up to the window.
    func testWithoutAnMfraSeekingJobsFetchTheMoofsNotTheFragmentsAndPlayOffline() throws {
        let (www, names) = try makeFragmentedFiles()
        let nginx = try NginxServer(root: www)
        let url = nginx.url("/" + names[1])
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: www + "/" + names[1])[.size] as? Int64)
        try mprobe(["prefetch", url, "--start", "30", "--seconds", "5", "--for", "ffmpeg", "--cache-dir", cacheDir])
        // 80 fragments: the head, one small range per moof, the window (29.5–35.5 s of 40 s).
        let sent = try nginx.accessLog().reduce(0) { $0 + $1.bodyBytesSent }
        XCTAssertLessThanOrEqual(sent, size / 4, "the moofs and the window, not the fragments before it")
        nginx.clearLog()
        let check = try mprobe(["check", url, "--start", "30", "--seconds", "5", "--offline", "--cache-dir", cacheDir])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
        XCTAssertEqual(try nginx.accessLog().count, 0)

        nginx.clearLog()
        try mprobe(["thumbs", url, "--count", "8", "--out", dir.file("thumbs"), "--cache-dir", dir.file("cold")])
        XCTAssertLessThanOrEqual(try nginx.accessLog().reduce(0) { $0 + $1.bodyBytesSent }, size / 4)
    }

    /// A window that ends where a fragment starts: the audio sample after it is that fragment's
    /// first, behind its video, which the demuxer reads on its way there. Both the plan from the
    /// `mfra` and the one from libavformat's index (B-frames) take it, and the window plays offline.
    func testAWindowEndingWhereAFragmentStartsPlaysOffline() throws {
        for bFrames in [false, true] {
            let www = dir.file("www-\(bFrames)")
            try encodeRecording(
                www + "/long-fragments.mp4",
                muxing: ["-g", "30", "-b:v", "1M", "-movflags", "frag_keyframe+empty_moov"],
                bFrames: bFrames)
            // 40 fragments of 1 s (enough for the mfra to place them), each larger than the head of
            // the next one a window takes: the window ends where the one after 15 s starts.
            let keys = try FFprobeOracle.run([
                "-v", "error", "-select_streams", "v", "-skip_frame", "nokey", "-show_entries",
                "frame=pts_time", "-of", "csv=p=0", www + "/long-fragments.mp4",
            ])
            let boundary = try XCTUnwrap(
                keys.stdoutString.split(separator: "\n").compactMap { Double($0) }.first { $0 > 15 })
            let start = String(format: "%.6f", boundary - 4)
            let nginx = try NginxServer(root: www)
            let url = nginx.url("/long-fragments.mp4")
            let cache = dir.file("cache-\(bFrames)")
            try mprobe(["prefetch", url, "--start", start, "--seconds", "4", "--cache-dir", cache])
            nginx.clearLog()
            let check = try mprobe([
                "check", url, "--start", start, "--seconds", "4", "--offline", "--cache-dir", cache,
            ])
            XCTAssertTrue(check.stdoutString.contains("plays"), "B-frames \(bFrames): \(check.stdoutString)")
            XCTAssertEqual(try nginx.accessLog().count, 0)
        }
    }

    /// With B-frames, libavformat puts presentation times two frames apart depending on whether it
    /// read every fragment; jobs that seek read them all then, and agree with the files read so.
    func testSeekingJobsOnAFragmentedFileWithBFramesAgreeWithReadingEveryFragment() throws {
        let (www, names) = try makeFragmentedFiles(bFrames: true)
        var results: [[Double]] = []
        var checks: [String] = []
        for name in names {
            let out = dir.file("thumbs-" + name)
            let set = try json(
                try mprobe([
                    "thumbs", www + "/" + name, "--count", "6", "--out", out, "--json", "--cache-dir", cacheDir,
                ]))
            results.append((set["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double })
            checks.append(
                try mprobe(["check", www + "/" + name, "--start", "12", "--seconds", "4", "--cache-dir", cacheDir])
                    .stdoutString
                    .split(separator: "\n").dropFirst().joined(separator: "\n"))
        }
        XCTAssertEqual(results[0].count, 6)
        XCTAssertEqual(results[0], results[1])
        XCTAssertEqual(checks[0], checks[1])
        let durations = try probeDurations(www + "/" + names[0])
        for (mine, theirs) in zip(durations.tracks + [durations.file], try ffprobeDurations(www + "/" + names[0])) {
            XCTAssertEqual(mine, theirs, accuracy: 0.0005, "the probe still reads the timeline")
        }
    }

    /// libavformat stops reading ahead after a fragmented file's first `sidx`: a window past the
    /// samples it indexed is planned from the fragments there, not from the last ones it knows.
    func testAWindowPastTheFirstSidxIsPlannedFromItsOwnFragmentsAndPlaysOffline() throws {
        let name = "androidx-media__sample_fragmented_seekable_multiple_sidx.mp4"
        let nginx = try NginxServer(root: Media3OracleTests.corpus.appendingPathComponent("files").path)
        let plan = try json(
            try mprobe([
                "prefetch", nginx.url("/" + name), "--start", "18", "--seconds", "2", "--json",
                "--cache-dir", cacheDir,
            ]))
        let video = try XCTUnwrap((plan["tracks"] as? [[String: Any]])?.first)
        XCTAssertLessThanOrEqual(video["first_time"] as? Double ?? 99, 18)
        XCTAssertGreaterThanOrEqual(video["last_time"] as? Double ?? 0, 19.9, "\(video)")
        nginx.clearLog()
        let check = try mprobe([
            "check", nginx.url("/" + name), "--start", "18", "--seconds", "2", "--offline", "--cache-dir", cacheDir,
        ])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
        XCTAssertEqual(try nginx.accessLog().count, 0)
    }

    /// A DASH on-demand file: one `sidx` per track after the moov, after which libavformat stops
    /// reading. Thumbnails were all the first frame (its index held the first fragment); the sidx
    /// now places every fragment, as the mfra does.
    func testASegmentIndexPlacesThumbnailsAndPrefetchesAndANoSyncIndexFallsBackToSeeking() throws {
        let (www, names) = try makeFragmentedFiles()
        let remux = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-i", www + "/" + names[0], "-c", "copy",
                "-movflags", "dash+global_sidx", "-f", "mp4", www + "/sidx.mp4",
            ])
        XCTAssertEqual(remux.status, 0, remux.stderr)
        // The same file with every reference marked as not starting with a sync sample: no
        // timeline can come from it, and libavformat's index is the first fragment's only.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: www + "/sidx.mp4")))
        var p = 0
        while p + 32 < min(bytes.count, 1 << 20) {
            if bytes[p..<p + 4].elementsEqual(Array("sidx".utf8)) {
                let version = bytes[p + 4], fixed = version == 1 ? 28 : 20  // version/flags, ID, scale, two times, reserved
                let count = Int(bytes[p + 4 + fixed + 2]) << 8 | Int(bytes[p + 4 + fixed + 3])
                for r in 0..<count { bytes[p + 4 + fixed + 4 + r * 12 + 8] &= 0x7F }
            }
            p += 1
        }
        _ = try writeFile("www/sidx-no-sap.mp4", bytes)
        let nginx = try NginxServer(root: www)
        var pts: [String: [Double]] = [:]
        for name in [names[0], "sidx.mp4", "sidx-no-sap.mp4"] {
            nginx.clearLog()
            let set = try json(
                try mprobe([
                    "thumbs", nginx.url("/" + name), "--count", "6", "--out", dir.file("t-" + name),
                    "--json", "--cache-dir", cacheDir,
                ]))
            pts[name] = (set["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
            if name == "sidx.mp4" { XCTAssertLessThanOrEqual(try nginx.accessLog().count, 2 + 2 * 6) }
        }
        XCTAssertEqual(pts[names[0]]?.count, 6)
        XCTAssertEqual(pts["sidx.mp4"], pts[names[0]], "placed by the sidx")
        // Found by libavformat's seeks: a key frame at most a second before each time asked, not six
        // copies of the first frame.
        let sought = try XCTUnwrap(pts["sidx-no-sap.mp4"])
        XCTAssertEqual(sought.count, 6)
        for (got, asked) in zip(sought, (0..<6).map { Double($0) * 40 / 6 }) {
            XCTAssertTrue((asked - 1.05...asked + 0.05).contains(got), "\(sought)")
        }

        nginx.clearLog()
        let plan = try json(
            try mprobe([
                "prefetch", nginx.url("/sidx.mp4"), "--start", "20", "--seconds", "5", "--for", "ffmpeg", "--json",
                "--cache-dir", cacheDir,
            ]))
        XCTAssertTrue((plan["note"] as? String ?? "").contains("fragments"), "\(plan)")
        XCTAssertLessThanOrEqual(try nginx.accessLog().count, 4)
        nginx.clearLog()
        let check = try mprobe([
            "check", nginx.url("/sidx.mp4"), "--start", "20", "--seconds", "5", "--offline", "--cache-dir", cacheDir,
        ])
        XCTAssertTrue(check.stdoutString.contains("plays"), check.stdoutString)
        XCTAssertEqual(try nginx.accessLog().count, 0)
    }
}
