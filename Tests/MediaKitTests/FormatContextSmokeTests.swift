import Foundation
import MediaKit
import XCTest

/// libavformat opens the committed samples: the FFmpeg bindings link and work.
final class FormatContextSmokeTests: XCTestCase {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")

    func testOpensSamplesWithLibavformat() throws {
        let mp4 = try FormatContext(path: Self.samples.appendingPathComponent("faststart.mp4").path)
        XCTAssertTrue(mp4.formatName.contains("mp4"))
        XCTAssertEqual(try XCTUnwrap(mp4.duration), 4.0, accuracy: 0.1)
        XCTAssertEqual(mp4.codecNames, ["h264", "aac"])

        let webm = try FormatContext(path: Self.samples.appendingPathComponent("sample.webm").path)
        XCTAssertTrue(webm.formatName.contains("webm"))
        XCTAssertEqual(webm.codecNames, ["vp9", "opus"])
    }

    func testNonMediaIsAnFFmpegError() throws {
        let path = NSTemporaryDirectory() + "/mprobe-not-media-\(getpid()).txt"
        try Data("hello, this is not a video".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertThrowsError(try FormatContext(path: path)) { error in
            XCTAssertEqual((error as? FFmpegError)?.function, "avformat_open_input")
        }
    }
}
