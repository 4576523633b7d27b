import Foundation
import TestSupport
import XCTest

/// MPEG-TS has no index: a probe takes its streams from the head and its duration from the
/// timestamps at both ends — two reads, not libavformat's 5 s of analysis.
final class TransportStreamTests: CLITestCase {
    private func ffprobe(_ path: String) throws -> [String: Any] {
        let r = try runProcess("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdoutString.utf8)) as? [String: Any])
    }

    /// What a probe reports of each stream equals ffprobe's, and the duration is ffprobe's.
    private func assertDescribedAsFFprobe(
        _ probe: [String: Any], _ path: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let peer = try ffprobe(path)
        let format = try XCTUnwrap(peer["format"] as? [String: Any])
        XCTAssertEqual(
            probe["duration"] as? Double ?? 0, Double(format["duration"] as? String ?? "") ?? -1, accuracy: 0.001,
            file: file, line: line)
        let tracks = probe["tracks"] as? [[String: Any]] ?? []
        let streams = peer["streams"] as? [[String: Any]] ?? []
        XCTAssertEqual(tracks.count, streams.count, file: file, line: line)
        for (track, stream) in zip(tracks, streams) {
            XCTAssertEqual(track["codec"] as? String, stream["codec_name"] as? String, file: file, line: line)
            if stream["codec_type"] as? String == "video" {
                XCTAssertEqual(track["width"] as? Int, stream["width"] as? Int, file: file, line: line)
                XCTAssertEqual(track["height"] as? Int, stream["height"] as? Int, file: file, line: line)
                XCTAssertEqual(track["pixel_format"] as? String, stream["pix_fmt"] as? String, file: file, line: line)
                XCTAssertEqual(track["frame_rate"] as? Double, 30, file: file, line: line)
            } else {
                XCTAssertEqual(
                    track["sample_rate"] as? Int, Int(stream["sample_rate"] as? String ?? ""), file: file, line: line)
                XCTAssertEqual(track["channels"] as? Int, stream["channels"] as? Int, file: file, line: line)
            }
        }
    }

    func testAProbeReadsTheHeadAndTheTailOnly() throws {
        let www = dir.file("www")
        try encodeRecording(www + "/rec.ts", muxing: ["-b:v", "2M", "-f", "mpegts"])
        let nginx = try NginxServer(root: www)
        let probe = try json(try mprobe([nginx.url("/rec.ts"), "--json", "--cache-dir", cacheDir]))
        try assertDescribedAsFFprobe(probe, www + "/rec.ts")
        let log = try nginx.accessLog()
        // The head (the first request's 64 KiB and the rest of 128 KiB), then the last 128 KiB,
        // where the last timestamps are. Before: the head's 256 KiB and libavformat's last 250,000
        // bytes; before that 5 s of packets, 4 requests.
        XCTAssertLessThanOrEqual(log.count, 3, "\(log.map { $0.range ?? "-" })")
        XCTAssertLessThanOrEqual(log.reduce(0) { $0 + $1.bodyBytesSent }, 256 << 10)
    }

    /// The durations a probe reads from the tail's timestamps (`TransportStreamTail`) are
    /// ffprobe's — the file's and each stream's — with B-frames, 192-byte packets (M2TS), a file
    /// cut inside a packet, audio that ends 10 s before the video (its timestamps are further back
    /// than the first tail read), and AC-3 (a fixed frame of 1536 samples).
    func testDurationsFromTheTailAreFFprobesInEveryPacketLayout() throws {
        let www = dir.file("www")
        try encodeRecording(dir.file("b.ts"), muxing: ["-b:v", "2M", "-f", "mpegts"], bFrames: true)
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let variants: [(String, [String])] = [
            ("m2ts.m2ts", ["-c", "copy", "-f", "mpegts", "-mpegts_m2ts_mode", "1"]),
            ("audio-early.ts", ["-c:v", "copy", "-af", "atrim=0:30", "-c:a", "aac", "-f", "mpegts"]),
            ("ac3.ts", ["-c:v", "copy", "-c:a", "ac3", "-f", "mpegts"]),
        ]
        for (name, args) in variants {
            let r = try runProcess("ffmpeg", ["-v", "error", "-i", dir.file("b.ts")] + args + [www + "/" + name])
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        let whole = try Data(contentsOf: URL(fileURLWithPath: dir.file("b.ts")))
        try whole.write(to: URL(fileURLWithPath: www + "/b.ts"))
        try whole.prefix(whole.count * 2 / 3 + 100).write(to: URL(fileURLWithPath: www + "/cut.ts"))
        let nginx = try NginxServer(root: www)
        for name in ["b.ts", "cut.ts"] + variants.map(\.0) {
            let probe = try json(
                try mprobe([nginx.url("/" + name), "--json", "--cache-dir", dir.file("cache-" + name)]))
            let peer = try ffprobe(www + "/" + name)
            let format = try XCTUnwrap(peer["format"] as? [String: Any])
            XCTAssertEqual(
                probe["duration"] as? Double ?? 0, Double(format["duration"] as? String ?? "") ?? -1,
                accuracy: 0.000_01, name)
            let tracks = probe["tracks"] as? [[String: Any]] ?? []
            let streams = peer["streams"] as? [[String: Any]] ?? []
            XCTAssertEqual(tracks.count, streams.count, name)
            for (track, stream) in zip(tracks, streams) {
                XCTAssertEqual(
                    track["duration"] as? Double ?? 0, Double(stream["duration"] as? String ?? "") ?? -1,
                    accuracy: 0.000_01,
                    "\(name): \(stream["codec_name"] ?? "")")
            }
        }
    }

    /// The probe's and ffprobe's durations, file and streams (nil where ffprobe states none).
    private func assertDurationsAsFFprobe(
        _ probe: [String: Any], _ path: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let peer = try ffprobe(path)
        let format = try XCTUnwrap(peer["format"] as? [String: Any])
        XCTAssertEqual(
            probe["duration"] as? Double ?? 0, Double(format["duration"] as? String ?? "") ?? -1, accuracy: 0.000_01,
            path, file: file, line: line)
        let mine = (probe["tracks"] as? [[String: Any]] ?? []).map { $0["duration"] as? Double }
        let theirs = (peer["streams"] as? [[String: Any]] ?? []).map {
            ($0["duration"] as? String).flatMap(Double.init)
        }
        XCTAssertEqual(mine.count, theirs.count, path, file: file, line: line)
        for (a, b) in zip(mine, theirs) {
            XCTAssertEqual(a == nil, b == nil, "\(path): \(mine) against \(theirs)", file: file, line: line)
            if let a, let b {
                XCTAssertEqual(a, b, accuracy: 0.000_01, "\(path): \(mine) against \(theirs)", file: file, line: line)
            }
        }
    }

    /// Tails that found the timestamp reading wrong (helpers acting as hostile files): a start
    /// less than a minute before the 33-bit clock wraps (95,446 s for 3 s), a padding stream's PES
    /// planted on the video PID with a time a second past the end (it has no PTS field: 71 s for
    /// 70 s), and audio that stops 700 KB before the end (ffprobe states no duration for it:
    /// libavformat reads 500,000 bytes once a stream has one; the read grew to 16 MiB for it).
    func testHostileTailsGiveFFprobesDurations() throws {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        try encodeRecording(dir.file("rec.ts"), muxing: ["-b:v", "2M", "-f", "mpegts"])
        let wrap = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-i", dir.file("rec.ts"), "-t", "3", "-c", "copy", "-output_ts_offset", "95420",
                "-f", "mpegts", www + "/wrap.ts",
            ])
        XCTAssertEqual(wrap.status, 0, wrap.stderr)
        // The audio's packets (ffmpeg's second PID, 0x101) in the last 700 KB made null packets.
        var early = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.file("rec.ts"))))
        for at in stride(from: early.count / 188 * 188 - 188, to: early.count - 700_000, by: -188)
        where early[at] == 0x47 && Int(early[at + 1] & 0x1F) << 8 | Int(early[at + 2]) == 0x101 {
            (early[at + 1], early[at + 2]) = (early[at + 1] & 0xE0 | 0x1F, 0xFF)
        }
        try Data(early).write(to: URL(fileURLWithPath: www + "/early.ts"))
        // A 188-byte packet on the video PID (ffmpeg's first, 0x100): a padding stream's PES (0xBE)
        // whose bytes read as a header with a PTS one second after the recording's last.
        let last =
            try runProcess(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts", "-of", "csv=p=0",
                    dir.file("rec.ts"),
                ]
            ).stdoutString.split(separator: "\n").compactMap { Int64($0) }.max() ?? 0
        let pts = last + 90_000
        var packet: [UInt8] = [
            0x47, 0x41, 0x00, 0x10, 0, 0, 1, 0xBE, 0, 0, 0x80, 0x80, 5,
            UInt8(0x21 | (pts >> 29) & 0x0E), UInt8((pts >> 22) & 0xFF), UInt8((pts >> 14) & 0xFE | 1),
            UInt8((pts >> 7) & 0xFF), UInt8((pts << 1) & 0xFE | 1),
        ]
        packet += [UInt8](repeating: 0xFF, count: 188 - packet.count)
        try (Data(contentsOf: URL(fileURLWithPath: dir.file("rec.ts"))) + Data(packet)).write(
            to: URL(fileURLWithPath: www + "/padding.ts"))
        let nginx = try NginxServer(root: www)
        for name in ["wrap.ts", "padding.ts", "early.ts"] {
            nginx.clearLog()
            let probe = try json(
                try mprobe([nginx.url("/" + name), "--json", "--cache-dir", dir.file("cache-" + name)]))
            try assertDurationsAsFFprobe(probe, www + "/" + name)
            XCTAssertLessThanOrEqual(
                try nginx.accessLog().reduce(0) { $0 + $1.bodyBytesSent }, (256 << 10) + 500_000, name)
        }
    }

    /// A stream the head does not reach (audio starting 4 s, a megabyte, in) is analysed as
    /// ffprobe would: described, not left without a sample rate.
    func testAStreamStartingPastTheHeadIsStillDescribed() throws {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        try encodeRecording(dir.file("rec.ts"), muxing: ["-b:v", "2M", "-f", "mpegts"])
        let late = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-i", dir.file("rec.ts"), "-itsoffset", "4", "-i", dir.file("rec.ts"),
                "-map", "0:v", "-map", "1:a", "-c", "copy", "-f", "mpegts", www + "/late.ts",
            ])
        XCTAssertEqual(late.status, 0, late.stderr)
        let nginx = try NginxServer(root: www)
        let probe = try json(try mprobe([nginx.url("/late.ts"), "--json", "--cache-dir", cacheDir]))
        try assertDescribedAsFFprobe(probe, www + "/late.ts")
        XCTAssertGreaterThan(
            try nginx.accessLog().reduce(0) { $0 + $1.bodyBytesSent }, 1 << 20, "read past the head, to the audio")
    }
    /// A prefetch of an MPEG-TS is an estimate from the bit rate, and says so; it is then read as a
    /// player reads it (its seek, the packets to the window's end), so that it plays offline.
    /// Before, `check --offline` failed on the bytes the seek reads just before the guessed start.
    func testAnEstimatedPrefetchIsReadAsAPlayerReadsItAndPlaysOffline() throws {
        let www = dir.file("www")
        try encodeRecording(www + "/rec.ts", muxing: ["-b:v", "2M", "-f", "mpegts"])
        let nginx = try NginxServer(root: www)
        for start in ["12", "20", "31"] {
            let cache = dir.file("cache-" + start)
            let r = try mprobe([
                "prefetch", nginx.url("/rec.ts"), "--start", start, "--seconds", "5", "--for", "ffmpeg", "--cache-dir",
                cache,
            ])
            XCTAssertTrue(r.stderr.contains("estimated from the bit rate"), r.stderr)
            let check = try mprobe(
                [
                    "check", nginx.url("/rec.ts"), "--start", start, "--seconds", "5", "--offline",
                    "--cache-dir", cache,
                ], expect: nil)
            XCTAssertEqual(check.status, 0, "at \(start) s: \(check.stderr)")
        }
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: www + "/rec.ts")[.size] as? Int64)
        XCTAssertLessThan(
            try nginx.accessLog().reduce(0) { $0 + $1.bodyBytesSent }, size, "windows, not the file three times")
    }

    /// Without an index a thumbnail's frame is found by seeking, and a seek to the last second(s)
    /// lands past the last key frame (its timestamps, not key frames, place it): a time there, or
    /// past the end, still gets the last key frame, as `--at` says. (It was exit 5, "no picture".)
    func testATimePastTheLastKeyFrameGetsTheLastKeyFrame() throws {
        let www = dir.file("www")
        try encodeRecording(www + "/rec.ts", muxing: ["-g", "60", "-f", "mpegts"])  // a key frame every 2 s
        let keys = try runProcess(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v", "-skip_frame", "nokey", "-show_entries", "frame=pts_time",
                "-of", "csv=p=0", www + "/rec.ts",
            ])
        let start = try XCTUnwrap(
            Double(
                try runProcess(
                    "ffprobe",
                    [
                        "-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0",
                        www + "/rec.ts",
                    ]
                ).stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)))
        let last = try XCTUnwrap(keys.stdoutString.split(separator: "\n").compactMap { Double($0) }.last) - start
        let nginx = try NginxServer(root: www)
        let r = try mprobe([
            "thumbs", nginx.url("/rec.ts"), "--at", "39.9,100", "--json", "--out", dir.file("t"), "--cache-dir",
            dir.file("cache"),
        ])
        let thumbs = try XCTUnwrap(json(r)["thumbnails"] as? [[String: Any]])
        XCTAssertEqual(thumbs.count, 2)
        for thumb in thumbs { XCTAssertEqual(thumb["pts"] as? Double ?? -1, last, accuracy: 0.01, "\(thumb)") }
    }
}
