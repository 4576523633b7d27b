import Foundation
import TestSupport
import XCTest

/// Issue 14's bound for a probe: at most 3 requests, and no more bytes than the file's header and
/// index and 256 KiB, in every layout people serve, with ffprobe's duration.
final class ProbeBoundTests: CLITestCase {
    /// The header and index of `path`: for an MP4 its ftyp, moov and sidx boxes, and the mfra and
    /// the last moof that give a fragmented file's duration; for Matroska what precedes the first
    /// Cluster; nothing for an MPEG-TS (its tables are a few packets).
    private func headerAndIndex(_ path: String) throws -> Int64 {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        if bytes.count > 8, bytes[4..<8].elementsEqual(Array("ftyp".utf8)) {
            var boxes: [(String, Int64)] = []
            var at = 0
            while at + 8 <= bytes.count {
                let size = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
                guard size >= 8 else { break }
                boxes.append((String(decoding: bytes[at + 4..<at + 8], as: UTF8.self), Int64(size)))
                at += size
            }
            let kept = boxes.filter { ["ftyp", "moov", "sidx", "mfra"].contains($0.0) }.reduce(0) { $0 + $1.1 }
            let mfra = boxes.contains { $0.0 == "mfra" }
            return kept + (mfra ? boxes.last { $0.0 == "moof" }?.1 ?? 0 : 0)
        }
        if bytes.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) {
            let cluster: [UInt8] = [0x1F, 0x43, 0xB6, 0x75]
            return Int64(try XCTUnwrap((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual(cluster) }))
        }
        return 0
    }

    func testEveryLayoutIsProbedInThreeRequestsWithinItsHeaderAndIndexAnd256KiB() throws {
        let www = dir.file("www")
        try encodeRecording(dir.file("rec.mp4"), muxing: ["-b:v", "2M"])
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let layouts: [(String, [String])] = [
            ("frag-mfra.mp4", ["-movflags", "frag_keyframe+empty_moov", "-f", "mp4"]),
            ("frag-no-mfra.mp4", ["-movflags", "frag_keyframe+empty_moov+skip_trailer", "-f", "mp4"]),
            ("frag-sidx.mp4", ["-movflags", "dash+global_sidx", "-f", "mp4"]),
            ("cues.mkv", ["-f", "matroska"]),
            ("stream.ts", ["-f", "mpegts"]),
        ]
        for (name, muxing) in layouts {
            let remux = try runProcess(
                "ffmpeg", ["-v", "error", "-i", dir.file("rec.mp4"), "-c", "copy"] + muxing + [www + "/" + name])
            XCTAssertEqual(remux.status, 0, remux.stderr)
        }
        // Written to a pipe, as a browser's MediaRecorder writes WebM: no Cues, no duration.
        let piped = try runProcess(
            "/bin/sh",
            [
                "-c", "ffmpeg -v error -i \"$0\" -c copy -f matroska - > \"$1\"",
                dir.file("rec.mp4"), www + "/no-cues.mkv",
            ])
        XCTAssertEqual(piped.status, 0, piped.stderr)
        let nginx = try NginxServer(root: www)
        for name in layouts.map(\.0) + ["no-cues.mkv"] {
            let path = www + "/" + name
            XCTAssertGreaterThan(
                try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64), 8 << 20, name)
            nginx.clearLog()
            let probe = try json(
                try mprobe([nginx.url("/" + name), "--json", "--cache-dir", dir.file("cache-" + name)]))
            let log = try nginx.accessLog()
            let ranges = log.map { $0.range ?? "-" }
            XCTAssertLessThanOrEqual(log.count, 3, "\(name): \(ranges)")
            XCTAssertLessThanOrEqual(
                log.reduce(0) { $0 + $1.bodyBytesSent }, try headerAndIndex(path) + (256 << 10), "\(name): \(ranges)")
            // ffprobe states none for the piped file: the last Cluster's time, within a frame of the recording's.
            let peer = try ffprobeDuration(name == "no-cues.mkv" ? www + "/cues.mkv" : path)
            XCTAssertEqual(
                probe["duration"] as? Double ?? -1, peer, accuracy: name == "no-cues.mkv" ? 0.05 : 0.001, name)
        }
    }

    private func ffprobeDuration(_ path: String) throws -> Double {
        let r = try FFprobeOracle.run(["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return try XCTUnwrap(Double(r.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// What a helper's round found in the probes within the bound, each failing before its fix:
    /// a 1080p Matroska file analysed from 32 KiB of packets lost its start time and its AC-3
    /// track's channel layout and bit rate (libavformat's own analysis is kept: it stops within
    /// the 128 KiB head); a DASH file with B-frames took its start from the `sidx` (0, where the
    /// first presentation is a frame later).
    func testProbesWithinTheBoundKeepFFprobesFields() throws {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let mkv = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=1920x1080:r=25:d=6", "-f", "lavfi",
                "-i", "sine=f=440:r=48000:d=6", "-ac", "6", "-c:v", "libx264", "-preset", "ultrafast",
                "-c:a", "ac3", www + "/b.mkv",
            ])
        XCTAssertEqual(mkv.status, 0, mkv.stderr)
        // 11 MB in 15 fragments: many enough for the probe to read the timeline, not libavformat.
        let dash = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=30,noise=alls=40:allf=t",
                "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "60", "-b:v", "3M",
                "-movflags", "dash+global_sidx", www + "/a.mp4",
            ])
        XCTAssertEqual(dash.status, 0, dash.stderr)
        let nginx = try NginxServer(root: www)
        for name in ["b.mkv", "a.mp4"] {
            let probe = try json(
                try mprobe([nginx.url("/" + name), "--json", "--cache-dir", dir.file("cache-" + name)]))
            let peer = try FFprobeOracle.run([
                "-v", "error", "-show_entries", "format=start_time:stream=channel_layout,bit_rate",
                "-of", "json", www + "/" + name,
            ])
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(peer.stdout)) as? [String: Any])
            let start = Double((object["format"] as? [String: Any])?["start_time"] as? String ?? "")
            XCTAssertEqual(probe["start_time"] as? Double ?? -1, try XCTUnwrap(start, name), accuracy: 0.000_01, name)
            guard name == "b.mkv" else { continue }
            let audio = try XCTUnwrap((probe["tracks"] as? [[String: Any]])?.last)
            let stream = try XCTUnwrap((object["streams"] as? [[String: Any]])?.last)
            XCTAssertEqual(audio["channel_layout"] as? String, stream["channel_layout"] as? String)
            XCTAssertEqual(audio["bit_rate"] as? Int, Int(stream["bit_rate"] as? String ?? ""))
        }
    }
}
