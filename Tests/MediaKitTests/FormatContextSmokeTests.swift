import Foundation
import MediaKit
import MediaSource
import XCTest

/// libavformat opens the committed samples: the FFmpeg bindings link and work.
final class FormatContextSmokeTests: XCTestCase {

    func testOpensSamplesWithLibavformat() throws {
        let mp4 = try FormatContext(source: try LocalFileSource(input: "faststart.mp4", path: MediaFixtures.samples + "/faststart.mp4"))
        XCTAssertTrue(mp4.formatName.contains("mp4"))
        XCTAssertEqual(mp4.codecNames, ["h264", "aac"])

        let webm = try FormatContext(source: try LocalFileSource(input: "sample.webm", path: MediaFixtures.samples + "/sample.webm"))
        XCTAssertTrue(webm.formatName.contains("webm"))
        XCTAssertEqual(webm.codecNames, ["vp9", "opus"])
    }

    func testNonMediaIsAnFFmpegError() throws {
        let path = NSTemporaryDirectory() + "/mprobe-not-media-\(getpid()).txt"
        try Data("hello, this is not a video".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertThrowsError(try FormatContext(source: try LocalFileSource(input: path, path: path))) { error in
            XCTAssertEqual((error as? FFmpegError)?.function, "avformat_open_input")
        }
    }
}
