import ByteSources
import Containers
import FFmpeg
import Foundation
import MediaKit
import TestSupport
import XCTest

/// Thumbnails over nginx: only the key frames are fetched, in one wave, and they look like
/// ffmpeg's decode of the same frame.
final class ThumbnailTests: XCTestCase {
    var cache: TempDirectory!
    var nginx: NginxServer!
    var media: TempDirectory!

    override func setUpWithError() throws {
        media = try XCTUnwrap(LongMedia.directory)
        XCTAssertTrue(FileManager.default.fileExists(atPath: media.file("long.mp4")), "ffmpeg made the test media")
        cache = try TempDirectory()
        nginx = try NginxServer(root: media.path)
    }

    override func tearDown() {
        nginx.stop()
        (media, cache) = (nil, nil)  // XCTest keeps every test case object: free the folders now
    }

    func make(_ path: String, _ configure: (inout ThumbnailOptions) -> Void = { _ in }) throws -> ThumbnailSet {
        var thumbnailer = Thumbnailer()
        configure(&thumbnailer.options)
        return try thumbnailer.make(path, session: try MediaFixtures.session(cacheDir: cache.path))
    }

    func testTenThumbnailsFetchTheMoovAndTheKeyFramesInOneWave() throws {
        let set = try make(nginx.url("/long.mp4")) { $0.times = .count(10) }
        XCTAssertEqual(set.thumbnails.map(\.time), (0..<10).map { Double($0) * 3 })
        for t in set.thumbnails {
            XCTAssertLessThanOrEqual(t.pts, t.time + 0.001, "the key frame at or before the time")
            XCTAssertGreaterThan(t.pts, t.time - 2.01, "key frames are 2 s apart")
            XCTAssertEqual(t.pts.truncatingRemainder(dividingBy: 2), 0, accuracy: 0.001)
            XCTAssertEqual(t.width, 320)
            XCTAssertEqual(t.height, 180)
            XCTAssertEqual(Array(t.encoded.prefix(2)), [0xFF, 0xD8], "a JPEG")
        }
        let log = try nginx.waitForAccessLog(count: Int(set.fetch.requests))
        XCTAssertLessThanOrEqual(log.count, 12)
        let sent = log.reduce(0) { $0 + $1.bodyBytesSent }
        // The floor counts what is decoded and read; the fixed 64 KiB first request that finds the
        // moov is mostly unread on this 2 MB file (on the 160 MB benchmark file it is 1.04x in all).
        XCTAssertLessThanOrEqual(
            Double(sent), 1.2 * Double(set.floorBytes) + Double(BoxWalker.defaultFirstRequest),
            "sent \(sent), floor \(set.floorBytes)")
        // Everything is cached now: the same thumbnails offline cost nothing.
        var thumbnailer = Thumbnailer()
        thumbnailer.options.times = .count(10)
        let again = try thumbnailer.make(
            nginx.url("/long.mp4"), session: try MediaFixtures.session(cacheDir: cache.path, offline: true))
        XCTAssertEqual(again.fetch.requests, 0)
    }

    /// PSNR of the luma (BT.601) of two RGB24 pictures of the same size, as video tools report it.
    func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return 0 }
        var sum = 0.0
        for i in stride(from: 0, to: a.count, by: 3) {
            let ya = 0.299 * Double(a[i]) + 0.587 * Double(a[i + 1]) + 0.114 * Double(a[i + 2])
            let yb = 0.299 * Double(b[i]) + 0.587 * Double(b[i + 1]) + 0.114 * Double(b[i + 2])
            sum += (ya - yb) * (ya - yb)
        }
        let mse = sum / Double(a.count / 3)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }

    func ffmpegRGB(_ args: [String]) throws -> [UInt8] {
        let r = try runProcess(
            "/usr/bin/ffmpeg",
            ["-hide_banner", "-loglevel", "error"] + args + ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout
    }

    func testThumbnailsAndSpriteCellsMatchFFmpegsDecodeOfTheSameKeyFrame() throws {
        // PNG is lossless: it is the decoded picture itself. The JPEGs and the sprite cells (drawn
        // into the sheet's YUV frame at their offsets) must look the same.
        let png = try make(nginx.url("/long.mp4")) {
            $0.times = .at([0, 7, 21.5]); $0.format = .png
        }
        let jpg = try make(nginx.url("/long.mp4")) {
            $0.times = .at([0, 7, 21.5]); $0.sprite = .grid(columns: 2, rows: 1)
        }
        XCTAssertEqual(jpg.sprites.map(\.fileName), ["sprite.jpg", "sprite-2.jpg"])
        let dir = try TempDirectory()
        for sheet in jpg.sprites { try Data(sheet.encoded).write(to: URL(fileURLWithPath: dir.file(sheet.fileName))) }
        for (p, t) in zip(png.thumbnails, jpg.thumbnails) {
            let reference = try ffmpegRGB([
                "-ss", String(t.pts), "-i", media.file("long.mp4"), "-frames:v", "1",
                "-vf", "scale=\(t.width):\(t.height):flags=bicubic",
            ])
            let decoded = dir.file(p.fileName), jpeg = dir.file(t.fileName)
            try Data(p.encoded).write(to: URL(fileURLWithPath: decoded))
            try Data(t.encoded).write(to: URL(fileURLWithPath: jpeg))
            XCTAssertGreaterThan(psnr(try ffmpegRGB(["-i", decoded]), reference), 30, "decoded picture at \(t.pts) s")
            XCTAssertGreaterThan(psnr(try ffmpegRGB(["-i", jpeg]), reference), 30, "JPEG at \(t.pts) s")
            let cell = try XCTUnwrap(t.sprite)
            let cropped = try ffmpegRGB([
                "-i", dir.file(cell.sheet), "-vf", "crop=\(cell.width):\(cell.height):\(cell.x):\(cell.y)",
            ])
            XCTAssertGreaterThan(psnr(cropped, reference), 30, "sprite cell \(cell.fragment) at \(t.pts) s")
        }
        let vtt = try XCTUnwrap(jpg.storyboard)
        XCTAssertTrue(vtt.contains("00:00:21.500 --> 00:00:30.000\nsprite-2.jpg#xywh=0,0,320,180\n"), vtt)
        // A key frame met again after another (0 and 0.5 s share one) is decoded again for its cell.
        let repeated = try make(media.file("long.mp4")) {
            $0.times = .at([0, 7, 0.5]); $0.sprite = .automatic
        }
        XCTAssertEqual(
            repeated.thumbnails.compactMap(\.sprite).map(\.fragment),
            ["sprite.jpg#xywh=0,0,320,180", "sprite.jpg#xywh=320,0,320,180", "sprite.jpg#xywh=0,180,320,180"])
        XCTAssertEqual(repeated.thumbnails[0].encoded, repeated.thumbnails[2].encoded)
    }

    func testSheetsTooLargeForTheRealThumbnailSizeSplitIntoMoreSheets() throws {
        // 4096x2304 thumbnails: a 4x4 grid would be a 151 MP sheet; each sheet takes one row of 4.
        let set = try make(media.file("long.mp4")) {
            $0.times = .count(6); $0.width = 4096; $0.sprite = .grid(columns: 4, rows: 4)
        }
        XCTAssertEqual(set.sprites.map(\.fileName), ["sprite.jpg", "sprite-2.jpg"])
        XCTAssertEqual(set.sprites.map(\.width), [4 * 4096, 2 * 4096])
        XCTAssertEqual(set.sprites.map(\.height), [2304, 2304])
        for sheet in set.sprites { XCTAssertLessThanOrEqual(sheet.width * sheet.height, SpriteLayout.maxPixels) }
        XCTAssertEqual(
            set.thumbnails.map { $0.sprite?.fragment },
            [
                "sprite.jpg#xywh=0,0,4096,2304", "sprite.jpg#xywh=4096,0,4096,2304", "sprite.jpg#xywh=8192,0,4096,2304",
                "sprite.jpg#xywh=12288,0,4096,2304", "sprite-2.jpg#xywh=0,0,4096,2304",
                "sprite-2.jpg#xywh=4096,0,4096,2304",
            ])
    }

    func testAccurateDecodesUpToTheExactTime() throws {
        let set = try make(nginx.url("/long.mp4")) {
            $0.times = .at([3.32, 7.72]); $0.accurate = true; $0.format = .png
        }
        for t in set.thumbnails {
            XCTAssertEqual(t.pts, t.time, accuracy: 0.041, "within a frame of the time")
            XCTAssertEqual(Array(t.encoded.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "a PNG")
        }
    }

    func testEdgeCases() throws {
        let session = try MediaFixtures.session(cacheDir: nil)
        XCTAssertThrowsError(try Thumbnailer().make(media.file("audio-only.m4a"), session: session)) { error in
            XCTAssertTrue("\(error)".contains("no video track"), "\(error)")
        }
        var past = Thumbnailer()
        past.options.times = .at([500])
        past.options.format = .webp
        let clamped = try past.make(media.file("long.mp4"), session: session)
        XCTAssertEqual(clamped.thumbnails.first?.pts ?? 0, 28, accuracy: 0.001, "the last key frame")
        XCTAssertTrue(clamped.notes.contains { $0.contains("past the end") }, "\(clamped.notes)")
        XCTAssertEqual(String(decoding: clamped.thumbnails[0].encoded[8..<12], as: UTF8.self), "WEBP")

        var two = Thumbnailer()
        two.options.times = .count(2)
        let corpus = MediaFixtures.corpus + "/files/"
        let rotated = try two.make(
            corpus + "androidx-media__internal_emulator_transformer_output_270_rotated.mp4", session: session)
        XCTAssertGreaterThan(rotated.thumbnails[0].height, rotated.thumbnails[0].width, "rotation applied: portrait")
        let wide = try two.make(corpus + "mediabunny__sar_2x1.mp4", session: session)
        XCTAssertEqual(wide.thumbnails[0].width, 320)
        XCTAssertEqual(wide.thumbnails[0].height, 90, "640x360 with 2:1 pixels displays as 32:9")
        let late = try two.make(corpus + "androidx-media__edit_list_positive_shift.mp4", session: session)
        XCTAssertEqual(late.thumbnails.count, 2, "a video track that starts late still gives pictures")
        let preroll = try two.make(corpus + "androidx-media__iibbibb_editlist_videoonly.mp4", session: session)
        XCTAssertEqual(preroll.thumbnails.count, 2, "a discarded pre-roll key frame falls back to the first picture")

        let tenBit = try TempDirectory()
        let r = try runProcess(
            "/usr/bin/ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
                "-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p10le", tenBit.file("10bit.mp4"),
            ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try two.make(tenBit.file("10bit.mp4"), session: session).thumbnails.count, 2, "10-bit video")

        // A very large frame (8K): decoded one at a time, scaled down, the picture is the output size.
        let big = try runProcess(
            "/usr/bin/ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                "testsrc2=size=7680x4320:rate=5", "-t", "0.4", "-c:v", "libx264",
                "-preset", "ultrafast", tenBit.file("8k.mp4"),
            ], timeout: 120)
        XCTAssertEqual(big.status, 0, big.stderr)
        let huge = try two.make(tenBit.file("8k.mp4"), session: session)
        XCTAssertEqual(huge.thumbnails.first?.width, 320)
        XCTAssertEqual(huge.thumbnails.first?.height, 180)
    }

    func testCorpusVideoFilesGiveThumbnailsOrAClearError() throws {
        let rows = try MediaFixtures.corpusManifest().map { [$0["local_file"] ?? "", $0["ffprobe_rc"] ?? ""] }
        var thumbnailer = Thumbnailer()
        thumbnailer.options.times = .count(2)
        thumbnailer.options.width = 64
        let session = try MediaFixtures.session(cacheDir: nil)
        var made = 0
        for row in rows where row[1] == "0" {
            let file = MediaFixtures.corpus + "/" + row[0]
            do {
                let set = try thumbnailer.make(file, session: session)
                XCTAssertEqual(set.thumbnails.count, 2, String(row[0]))
                made += 1
            } catch {
                XCTAssertTrue(error is MediaError || error is FFmpegError, "\(row[0]): \(error)")
            }
        }
        XCTAssertGreaterThan(made, 40, "most corpus files have video")
    }
}
