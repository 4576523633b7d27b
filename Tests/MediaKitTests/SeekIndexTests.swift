import ByteSources
import Caching
import FFmpeg
import Foundation
import TestSupport
import XCTest

@testable import MediaKit

/// Each container gets its seek index when the input is opened, and the indexes' pure parts place
/// windows as a player's seek would.
final class SeekIndexTests: XCTestCase {
    private func entry(_ position: Int64, _ size: Int64, _ time: Double, key: Bool) -> IndexEntry {
        IndexEntry(
            position: position, size: size, time: time, timestamp: Int64(time * 1000), decodeTime: time,
            isKeyframe: key)
    }

    /// Ten samples of 100 bytes, one every second, a key frame every fourth.
    private var samples: [IndexEntry] { (0..<10).map { entry(Int64($0) * 100, 100, Double($0), key: $0 % 4 == 0) } }

    func testAVideoWindowStartsAtTheKeyFrameBeforeItAndTakesOneSamplePastItsEnd() {
        let chosen = SampleTableIndex.window(samples, from: 5.5, to: 7, fromKeyframe: true)
        XCTAssertEqual(chosen.map(\.time), [4, 5, 6, 7])
        // Another track starts one sample before the one containing the start (a seek may round down).
        XCTAssertEqual(
            SampleTableIndex.window(samples, from: 5.5, to: 7, fromKeyframe: false).map(\.time), [4, 5, 6, 7])
        XCTAssertEqual(SampleTableIndex.window(samples, from: 8.5, to: 20, fromKeyframe: false).map(\.time), [7, 8, 9])
        XCTAssertEqual(SampleTableIndex.window([], from: 0, to: 1, fromKeyframe: true).count, 0)
    }

    func testASampleThePlayedWindowNeedsPastTheFileIsADamagedIndex() throws {
        var played = ByteRangeSet()
        played.insert(900..<1000)
        XCTAssertThrowsError(
            try SampleTableIndex.withinFile(played, played: played, size: 950, input: "x.mp4")
        ) { error in XCTAssertTrue("\(error)".contains("truncated or its index is damaged"), "\(error)") }
        // The sample after the window may lie past the end: the demuxer meets the end instead.
        var after = ByteRangeSet()
        after.insert(800..<1000)
        var firstPart = ByteRangeSet()
        firstPart.insert(800..<900)
        let inside = try SampleTableIndex.withinFile(after, played: firstPart, size: 950, input: "x.mp4")
        XCTAssertEqual(inside.ranges, [800..<950])
    }

    func testPointsPlaceAWindowFromThePointBeforeItToThePointAfterIt() throws {
        let points = (0..<10).map { (time: Double($0) * 10, position: Int64($0) * 10_000) }
        let window = try XCTUnwrap(
            PointWindow(points, from: 25, to: 41, size: 100_000, startTime: 0, placedBy: "the points"))
        XCTAssertEqual(window.range.lowerBound, 20_000)
        XCTAssertEqual(window.stop, 50_000)
        // What follows: a fiftieth of the window, at least 4 KiB.
        XCTAssertEqual(window.range.upperBound, 50_000 + max(4096, 30_000 / 50))
        XCTAssertEqual(window.first, 20)
        XCTAssertEqual(window.last, 50)
        XCTAssertFalse(window.walksFrames)
        XCTAssertTrue(window.why.contains("from 20.000 s to 50.000 s"), window.why)
        // A first point past the file places nothing.
        XCTAssertNil(PointWindow(points, from: 95, to: 99, size: 80_000, startTime: 0, placedBy: "the points"))
    }

    func testProportionalPointsEndTheWindowWhereItsEndFallsBetweenThem() throws {
        let points = (0...100).map { (time: Double($0) * 6, position: Int64($0) * 24_000) }
        let size: Int64 = 2_400_000
        let window = try XCTUnwrap(
            PointWindow(
                points, from: 300, to: 310, size: size, startTime: 0, placedBy: "the table", proportional: true))
        XCTAssertTrue(window.walksFrames)
        // From 4 KiB before the point at 300 s (the seek searches for a frame), to 310 s's share of
        // the stretch between 306 s and 312 s, less a 256th of the size.
        XCTAssertEqual(window.range.lowerBound, 50 * 24_000 - 4096)
        XCTAssertEqual(window.range.upperBound, 51 * 24_000 + 24_000 * 4 / 6 - size / 256)
    }

    /// Opened as a prefetch opens it, each layout's index is the one its container places seeks by.
    func testEachContainerIsOpenedWithItsSeekIndex() throws {
        let dir = try TempDirectory()
        func make(_ name: String, _ args: [String]) throws -> String {
            let out = dir.file(name)
            let result = try runProcess(
                "ffmpeg",
                ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-t", "40"] + args + [out])
            XCTAssertEqual(result.status, 0, result.stderr)
            return out
        }
        let h264 = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "25"]
        let inputs: [(String, String)] = [
            (TestMedia.path("Samples/faststart.mp4"), "SampleTableIndex"),
            (TestMedia.path("Samples/sample.mp3"), "MP3TableOfContents"),
            (try make("cues.mkv", h264 + ["-f", "matroska"]), "MatroskaCuesIndex"),
            (
                try make("no-cues.webm", ["-c:v", "libvpx", "-deadline", "realtime", "-f", "webm", "-live", "1"]),
                "MatroskaClusterIndex"
            ),
            (
                try make(
                    "fragments.mp4", h264 + ["-movflags", "frag_keyframe+empty_moov", "-frag_duration", "500000"]),
                "FragmentIndex"
            ),
            (try make("stream.ts", h264 + ["-f", "mpegts"]), "BitRateIndex"),
        ]
        let session = try MediaFixtures.session(cacheDir: nil)
        for (path, expected) in inputs {
            let opened = try PrefetchPlanner.open(session.open(path), session: session).media()
            XCTAssertEqual("\(type(of: opened.seekIndex))", expected, path)
        }
    }
}
