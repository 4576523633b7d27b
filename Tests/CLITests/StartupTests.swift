import Foundation
import TestSupport
import XCTest

/// FFmpeg is opened on first use, not linked (CFFmpeg.h): commands that never demux start without
/// its ~110 libraries, and a machine without them still runs those commands.
final class StartupTests: CLITestCase {
    /// The shared objects the dynamic loader opened for a run, from `LD_DEBUG=files`.
    private func loadedObjects(_ args: [String], expect status: Int32 = 0) throws -> Set<String> {
        let result = try mprobe(args, environment: ["LD_DEBUG": "files"], expect: status)
        let names = result.stderr.split(separator: "\n").compactMap { line -> String? in
            guard let start = line.range(of: "file=") else { return nil }
            return line[start.upperBound...].split(separator: " ").first.map(String.init)
        }
        return Set(names)
    }

    func testCommandsThatNeverDemuxDoNotLoadFFmpeg() throws {
        let sample = samplePath("moov-at-end.mp4")
        let probing = try loadedObjects([sample, "--cache-dir", cacheDir])
        XCTAssertTrue(
            probing.contains { $0.hasPrefix("libavformat.so.") }, "a probe loads libavformat: \(probing.sorted())")
        for args in [
            ["--help"], ["cache", "--help"], ["cat", sample, "--cache-dir", cacheDir],
            ["cache", "ls", "--cache-dir", cacheDir],
        ] {
            let objects = try loadedObjects(args)
            let ffmpeg = objects.filter {
                ["libavformat.so.", "libavcodec.so.", "libavutil.so.", "libswscale.so."].contains(where: $0.hasPrefix)
            }
            XCTAssertEqual(ffmpeg, [], "mprobe \(args.joined(separator: " ")) loaded FFmpeg")
            XCTAssertLessThan(
                objects.count, probing.count / 2, "mprobe \(args.joined(separator: " ")): \(objects.count) objects")
        }
    }

    func testWithoutFFmpegsLibrariesOnlyDemuxingFailsAndSaysWhy() throws {
        let sample = samplePath("moov-at-end.mp4")
        // An unloadable file by the name of the libavutil this build opens shadows the real one.
        let avutil = try XCTUnwrap(
            try loadedObjects([sample, "--cache-dir", cacheDir]).first { $0.hasPrefix("libavutil.so.") })
        _ = try writeFile("libs/\(avutil)", [])
        let broken = ["LD_LIBRARY_PATH": dir.file("libs")]

        let help = try mprobe(["--help"], environment: broken)
        XCTAssertTrue(help.stdoutString.contains("Usage"), help.stdoutString)
        let cat = try mprobe(["cat", sample, "--cache-dir", cacheDir], environment: broken)
        XCTAssertTrue(cat.stdout == [UInt8](try Data(contentsOf: URL(fileURLWithPath: sample))))

        for args in [
            [sample], ["thumbs", sample, "--every", "1", "--out", dir.file("thumbs")],
            ["prefetch", sample, "--plan"], ["serve", "--listen", "127.0.0.1:0"],
        ] {
            let result = try mprobe(args + ["--cache-dir", cacheDir], environment: broken, expect: 6)
            XCTAssertTrue(result.stderr.contains("FFmpeg's libraries could not be loaded"), result.stderr)
            XCTAssertTrue(result.stderr.contains(avutil), "names the library: \(result.stderr)")
        }
    }
}
