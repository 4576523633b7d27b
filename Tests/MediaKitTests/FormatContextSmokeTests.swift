import ByteSources
import FFmpeg
import Foundation
import MediaKit
import TestSupport
import XCTest

/// libavformat opens the committed samples: the FFmpeg bindings link and work.
final class FormatContextSmokeTests: XCTestCase {

    func testOpensSamplesWithLibavformat() throws {
        let mp4 = try FormatContext(
            source: try LocalFileSource(input: "faststart.mp4", path: MediaFixtures.samples + "/faststart.mp4"))
        XCTAssertTrue(mp4.formatName.contains("mp4"))
        XCTAssertEqual(mp4.codecNames, ["h264", "aac"])

        let webm = try FormatContext(
            source: try LocalFileSource(input: "sample.webm", path: MediaFixtures.samples + "/sample.webm"))
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

    /// libavformat never opens a URL itself: an HLS playlist handed to it directly (as a file of
    /// bytes) names a segment on a server, and its demuxer's open is refused, so the server sees
    /// no request; everything mprobe reads goes through its own cache.
    func testADemuxerCannotOpenURLsAroundTheCache() throws {
        let www = try TempDirectory(prefix: "mprobe-nested")
        let nginx = try NginxServer(root: www.path)
        defer { nginx.stop() }
        try Data(repeating: 0x47, count: 188 * 10).write(to: URL(fileURLWithPath: www.file("seg.ts")))
        let playlist = www.file("index.m3u8")
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n\(nginx.url("/seg.ts"))\n#EXT-X-ENDLIST\n".utf8)
            .write(to: URL(fileURLWithPath: playlist))
        let context = try? FormatContext(source: try LocalFileSource(input: playlist, path: playlist))
        XCTAssertEqual(context?.codecNames ?? [], [], "no stream came from the segment")
        XCTAssertEqual(try nginx.accessLog().count, 0, "the segment was never requested")
    }
}
