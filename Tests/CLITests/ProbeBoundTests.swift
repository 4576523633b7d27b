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
            let remux = try runProcess("ffmpeg", ["-v", "error", "-i", dir.file("rec.mp4"), "-c", "copy"] + muxing + [www + "/" + name])
            XCTAssertEqual(remux.status, 0, remux.stderr)
        }
        // Written to a pipe, as a browser's MediaRecorder writes WebM: no Cues, no duration.
        let piped = try runProcess("/bin/sh", ["-c", "ffmpeg -v error -i \"$0\" -c copy -f matroska - > \"$1\"",
                                               dir.file("rec.mp4"), www + "/no-cues.mkv"])
        XCTAssertEqual(piped.status, 0, piped.stderr)
        let nginx = try NginxServer(root: www)
        for name in layouts.map(\.0) + ["no-cues.mkv"] {
            let path = www + "/" + name
            XCTAssertGreaterThan(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64), 8 << 20, name)
            nginx.clearLog()
            let probe = try json(try mprobe([nginx.url("/" + name), "--json", "--cache-dir", dir.file("cache-" + name)]))
            let log = try nginx.accessLog()
            let ranges = log.map { $0.range ?? "-" }
            XCTAssertLessThanOrEqual(log.count, 3, "\(name): \(ranges)")
            XCTAssertLessThanOrEqual(log.reduce(0) { $0 + $1.bodyBytesSent }, try headerAndIndex(path) + (256 << 10), "\(name): \(ranges)")
            // ffprobe states none for the piped file: the last Cluster's time, within a frame of the recording's.
            let peer = try ffprobeDuration(name == "no-cues.mkv" ? www + "/cues.mkv" : path)
            XCTAssertEqual(probe["duration"] as? Double ?? -1, peer, accuracy: name == "no-cues.mkv" ? 0.05 : 0.001, name)
        }
    }

    private func ffprobeDuration(_ path: String) throws -> Double {
        let r = try FFprobeOracle.run(["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return try XCTUnwrap(Double(r.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}
