import Foundation
import TestSupport
import XCTest

/// Storyboards for streaming players beside the WebVTT one, and thumbnails that skip blank key frames.
final class StoryboardTests: CLITestCase {
    private func text(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    func testHLSAndDASHStoryboardsDescribeTheSameUniformSheets() throws {
        let out = dir.file("thumbs")
        try mprobe([
            "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--every", "1", "--width", "160",
            "--storyboard", "vtt,hls,dash", "--out", out,
        ])
        let playlist = try text(out + "/thumbs.m3u8")
        let lines = playlist.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "#EXTM3U")
        XCTAssertTrue(lines.contains("#EXT-X-IMAGES-ONLY"), playlist)
        XCTAssertTrue(lines.contains("#EXT-X-TILES:RESOLUTION=160x90,LAYOUT=10x10,DURATION=1.000"), playlist)
        XCTAssertEqual(lines.filter { $0 == "sprite.jpg" }.count, 1)
        XCTAssertEqual(lines.last, "#EXT-X-ENDLIST")
        let master = try text(out + "/thumbs-master.m3u8")
        XCTAssertTrue(master.contains("#EXT-X-IMAGE-STREAM-INF:BANDWIDTH="), master)
        XCTAssertTrue(master.contains(#"RESOLUTION=160x90,CODECS="jpeg",URI="thumbs.m3u8""#), master)

        let adaptationSet = try text(out + "/thumbs-adaptationset.xml")
        XCTAssertTrue(
            adaptationSet.contains(
                #"<EssentialProperty schemeIdUri="http://dashif.org/guidelines/thumbnail_tile" value="10x10"/>"#))
        XCTAssertTrue(
            adaptationSet.contains(#"media="sprite-$Number$.jpg""#) && adaptationSet.contains(#"duration="100000""#),
            adaptationSet)
        XCTAssertTrue(
            adaptationSet.contains(#"width="1600" height="900""#),
            "the whole grid, though 4 tiles are used: \(adaptationSet)")
        XCTAssertEqual(
            try Data(contentsOf: URL(fileURLWithPath: out + "/sprite-1.jpg")),
            try Data(contentsOf: URL(fileURLWithPath: out + "/sprite.jpg")), "the template's first sheet")
        let size = try FFprobeOracle.run([
            "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", out + "/sprite.jpg",
        ])
        XCTAssertEqual(
            size.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines), "1600,900", "every sheet the same grid")
        XCTAssertTrue(FileManager.default.fileExists(atPath: out + "/thumbs.vtt"))

        // Tiles at irregular times, or sheets larger than TV players decode, are refused before any work.
        let irregular = try mprobe(
            [
                "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--at", "1,3", "--storyboard", "hls",
                "--out", dir.file("x"),
            ], expect: 2)
        XCTAssertTrue(irregular.stderr.contains("give --every or --count"), irregular.stderr)
        let wide = try mprobe(
            [
                "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--sprite", "40x1", "--storyboard", "dash",
                "--out", dir.file("y"),
            ], expect: 2)
        XCTAssertTrue(wide.stderr.contains("at most 4096 pixels a side"), wide.stderr)
        try mprobe(
            ["thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--storyboard", "gif", "--out", dir.file("z")],
            expect: 2)
    }

    /// Two black seconds before the picture, a key frame every second.
    func testSkipBlackTakesTheNextKeyFrameThatShowsSomethingAndSaysWhichItReplaced() throws {
        let video = dir.file("black-start.mp4")
        let encode = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "6", "-vf",
                "drawbox=x=0:y=0:w=iw:h=ih:color=black:t=fill:enable='lt(t,2)'",
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", video,
            ])
        XCTAssertEqual(encode.status, 0, encode.stderr)
        func shown(_ extra: [String]) throws -> [[Double?]] {
            let out = dir.file("t\(extra.count)")
            let set = try json(try mprobe(["thumbs", video, "--at", "0,3", "--out", out, "--json"] + extra))
            return (set["thumbnails"] as? [[String: Any]] ?? []).map {
                [$0["pts"] as? Double, $0["skipped_blank_pts"] as? Double]
            }
        }
        XCTAssertEqual(try shown([]), [[0, nil], [3, nil]])
        XCTAssertEqual(
            try shown(["--skip-black"]), [[2, 0], [3, nil]], "the first key frame that shows something, 2 s on")
    }

    /// In a stream the next key frame that shows something can be in the next segment: MPEG-TS
    /// segments have no index to look inside, so the segments after are tried, their first key frame.
    func testSkipBlackLooksIntoTheNextSegmentsOfAStream() throws {
        let www = dir.file("hls")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let encode = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "12", "-vf",
                "drawbox=x=0:y=0:w=iw:h=ih:color=black:t=fill:enable='lt(t,5)'", "-c:v", "libx264",
                "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-f", "hls", "-hls_time", "2",
                "-hls_playlist_type", "vod", www + "/index.m3u8",
            ])
        XCTAssertEqual(encode.status, 0, encode.stderr)
        for extra in [[], ["--sprite"]] {
            let set = try json(
                try mprobe(
                    [
                        "thumbs", www + "/index.m3u8", "--at", "0,8", "--skip-black", "--out",
                        dir.file("t\(extra.count)"),
                        "--json",
                    ] + extra))
            let shown = (set["thumbnails"] as? [[String: Any]] ?? []).map {
                [$0["pts"] as? Double, $0["skipped_blank_pts"] as? Double]
            }
            XCTAssertEqual(shown, [[6, 0], [8, nil]], "\(extra): the first segment after the black ones")
        }
    }
}
