import Foundation
import TestSupport
import XCTest

/// Runs the built `mprobe` binary, as a user would.
class CLITestCase: XCTestCase {
    var dir: TempDirectory!

    override func setUpWithError() throws {
        dir = try TempDirectory()
    }

    /// XCTest keeps every test case object until the run ends: the folder (up to hundreds of MB of
    /// media and cache) is removed now, not never.
    override func tearDown() {
        dir = nil
        super.tearDown()
    }

    var cacheDir: String { dir.file("cache") }

    /// The project's `Samples/` folder, and a file in it.
    static let samplesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples").path

    func samplePath(_ name: String) -> String { CLITestCase.samplesDirectory + "/" + name }

    @discardableResult
    func mprobe(
        _ args: [String], environment: [String: String]? = nil, expect status: Int32? = 0,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProcessResult {
        let result = try runProcess(try mprobeBinary(), args, environment: environment, timeout: 300)
        if let status {
            XCTAssertEqual(
                result.status, status, "mprobe \(args.joined(separator: " ")): \(result.stderr)", file: file, line: line
            )
        }
        return result
    }

    func json(_ result: ProcessResult) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout))
        return try XCTUnwrap(object as? [String: Any], "not a JSON object: \(result.stdoutString)")
    }

    /// `(start, end)` pairs, end exclusive, from `mprobe cache ranges URL --json`.
    func cachedRanges(_ url: String) throws -> [(Int64, Int64)] {
        let object = try json(try mprobe(["cache", "ranges", url, "--json", "--cache-dir", cacheDir]))
        let ranges = try XCTUnwrap(object["ranges"] as? [[String: Any]])
        return ranges.map { (($0["start"] as? NSNumber)?.int64Value ?? -1, ($0["end"] as? NSNumber)?.int64Value ?? -1) }
    }

    /// A 40 s 320x180 H.264 + AAC recording with a key frame every half second (no B-frames unless
    /// `bFrames`), encoded by ffmpeg into `path` with `muxing` options (`-movflags`, `-f matroska`).
    func encodeRecording(_ path: String, muxing: [String], bFrames: Bool = false) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let encode = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi",
                "-i", "sine=frequency=440:sample_rate=48000", "-t", "40", "-c:v", "libx264",
                "-preset", bFrames ? "veryfast" : "ultrafast", "-bf", bFrames ? "2" : "0",
                "-g", "15", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k",
            ] + muxing + [path])
        XCTAssertEqual(encode.status, 0, encode.stderr)
    }

    func writeFile(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = dir.file(name)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
