import Foundation
import TestSupport
import XCTest

/// The inputs the fuzz campaigns (docs/reliability.md) found, as byte patches of shipped files:
/// each must end in a clear error or a result, through the built binary, never a crash.
final class FuzzFindingsTests: CLITestCase {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Corpus/files").path

    /// `source` with `bytes` written at `offset`.
    private func patched(_ source: String, at offset: Int, _ bytes: [UInt8], as name: String) throws -> String {
        var data = Array(try Data(contentsOf: URL(fileURLWithPath: source)))
        data.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        return try writeFile(name, data)
    }

    /// F1: a `tfhd` base data offset near 2^63 made a sample's byte range overflow in the planner.
    func testASampleOffsetNearTheLargestIntegerDoesNotCrashPrefetch() throws {
        let file = try patched(
            Self.corpus + "/mp4parse-rust__opus_audioinit_two_desc.mp4", at: 785,
            [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00], as: "f1.mp4")
        let r = try mprobe(["prefetch", file, "--seconds", "2", "--json", "--cache-dir", cacheDir], expect: nil)
        XCTAssertTrue([0, 5].contains(r.status), "exit \(r.status): \(r.stderr)")
        if r.status == 0 {
            // Nothing past the file is planned: every range lies inside it.
            let size = Int64(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0)
            let ranges = try XCTUnwrap(try json(r)["sample_ranges"] as? [[String: Any]])
            XCTAssertTrue(ranges.allSatisfy { (($0["end"] as? NSNumber)?.int64Value ?? .max) <= size }, "\(ranges)")
        }
    }

    /// F2: a version-1 `tfdt` of -2^63 made the decode delay overflow in check and prefetch.
    func testADecodeTimeNearTheSmallestIntegerDoesNotCrashCheckOrPrefetch() throws {
        let file = try patched(samplePath("fragmented.mp4"), at: 1629, [0x80, 0, 0, 0, 0, 0, 0, 0], as: "f2.mp4")
        for command in [
            ["check", "--seconds", "1"], ["prefetch", "--seconds", "1"],
            ["thumbs", "--count", "2", "--out", dir.file("t")],
        ] {
            let r = try mprobe(command + [file, "--cache-dir", cacheDir], expect: nil)
            XCTAssertTrue([0, 5].contains(r.status), "\(command): exit \(r.status): \(r.stderr)")
        }
    }

    /// U1: a WebM with one byte duplicated: thumbs used to say only "av_seek_frame: Operation not
    /// permitted" (FFmpeg's generic -1), then that its seek failed, exit 5. Its Cues now point a
    /// byte off, so its key frames are found where its Clusters are, as in a file without Cues:
    /// the one key frame it has stands for each time, as ffmpeg's seek gives, and a note says why.
    func testAWebMWhoseCuesPointAByteOffStillGivesItsKeyFrame() throws {
        var data = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("sample.webm"))))
        data.insert(data[37920], at: 37921)
        let file = try writeFile("u1.webm", data)
        let r = try mprobe(["thumbs", file, "--count", "3", "--out", dir.file("u1"), "--no-cache", "--json"])
        let object = try json(r)
        let pts = (object["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        let keys = try runProcess(
            "ffprobe",
            [
                "-v", "quiet", "-select_streams", "v", "-show_entries", "packet=pts_time,flags",
                "-of", "csv=p=0", file,
            ]
        ).stdoutString.split(separator: "\n").filter { $0.contains("K") }
        XCTAssertEqual(keys.count, 1, "the sample has one key frame")
        XCTAssertEqual(pts.count, 3)
        XCTAssertTrue(pts.allSatisfy { $0 < 0.1 }, "\(pts)")
        XCTAssertTrue(
            (object["notes"] as? [String] ?? []).contains { $0.contains("Cues that do not place its key frames") },
            "\(object)")
        XCTAssertFalse(r.stderr.contains("Operation not permitted"), r.stderr)
    }

    /// F3: a 20-byte `trun` claiming 67 million samples (no per-sample fields, so nothing stops the
    /// reader) made libavformat allocate a 1.6 GiB index in one piece: 2.1 GiB of memory for a
    /// 110 KB file, exit 0. FFmpeg's limit for one allocation is lowered to 512 MiB, so such a
    /// claim fails at once as what it is.
    func testAFragmentClaimingMillionsOfSamplesIsRefusedNotAllocated() throws {
        let file = try patched(Self.corpus + "/mp4ff__main_1.mp4", at: 21237, [0x04, 0, 0, 0], as: "f3.mp4")
        for command in [["probe"], ["check", "--seconds", "1"]] {
            let r = try mprobe(command + [file, "--cache-dir", cacheDir], expect: 5)
            XCTAssertTrue(r.stderr.contains("more memory than FFmpeg allows"), "\(command): \(r.stderr)")
        }
    }
}
