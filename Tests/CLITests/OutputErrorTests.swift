import Foundation
import TestSupport
import XCTest

/// Output errors are errors: a closed pipe ends quietly, a full disk or a closed descriptor is
/// exit 6 with a message, and nothing crashes (before, `FileHandle.write` trapped with SIGILL).
final class OutputErrorTests: CLITestCase {
    /// Runs `script` with bash; `$MP` is the mprobe binary, `$D` the cache directory.
    func shell(_ script: String) throws -> ProcessResult {
        try runProcess("bash", ["-c", script], environment: ["MP": try mprobeBinary(), "D": cacheDir], timeout: 120)
    }

    func served(_ name: String, _ bytes: [UInt8]) throws -> (NginxServer, String) {
        _ = try writeFile("www/" + name, bytes)
        let nginx = try NginxServer(root: dir.file("www"))
        return (nginx, nginx.url("/" + name))
    }

    func testAFullDiskOnStdoutIsExitSixWithAMessage() throws {
        let (nginx, url) = try served("f.bin", randomBytes(3_000_000, seed: 41))
        defer { nginx.stop() }
        let cat = try shell("\"$MP\" cat '\(url)' --cache-dir \"$D\" > /dev/full; echo \"rc=$?\"")
        XCTAssertTrue(cat.stdoutString.contains("rc=6"), cat.stdoutString + cat.stderr)
        XCTAssertTrue(cat.stderr.contains("No space left on device"), cat.stderr)
        let probe = try shell("\"$MP\" '\(samplePath("faststart.mp4"))' --json > /dev/full; echo \"rc=$?\"")
        XCTAssertTrue(probe.stdoutString.contains("rc=6"), probe.stdoutString + probe.stderr)
    }

    func testAClosedPipeEndsQuietly() throws {
        let (nginx, url) = try served("p.bin", randomBytes(20_000_000, seed: 42))
        defer { nginx.stop() }
        let cat = try shell(
            "\"$MP\" cat '\(url)' --cache-dir \"$D\" | head -c 1000 > /dev/null; echo \"rc=${PIPESTATUS[0]}\"")
        XCTAssertTrue(cat.stdoutString.contains("rc=0"), cat.stdoutString + cat.stderr)
        XCTAssertFalse(cat.stderr.contains("mprobe:"), cat.stderr)
        let inputs = Array(repeating: "'\(samplePath("faststart.mp4"))'", count: 50).joined(separator: " ")
        let batch = try shell("\"$MP\" \(inputs) --json | head -1; echo \"rc=${PIPESTATUS[0]}\"")
        XCTAssertTrue(batch.stdoutString.contains("rc=0"), batch.stdoutString + batch.stderr)
        XCTAssertEqual(batch.stdoutString.split(separator: "\n").filter { $0.hasPrefix("{") }.count, 1)
    }

    func testClosedStandardDescriptorsNeverCrashNorReachTheCache() throws {
        let sample = samplePath("faststart.mp4")
        let noStdout = try shell("\"$MP\" '\(sample)' >&-; echo \"rc=$?\" >&2")
        XCTAssertTrue(noStdout.stderr.contains("rc=6"), noStdout.stderr)
        let noStderr = try shell("\"$MP\" /nope.mp4 2>&-; echo \"rc=$?\"")
        XCTAssertTrue(noStderr.stdoutString.contains("rc=6"), noStderr.stdoutString)
        // With stderr closed, a file the cache opens must not become descriptor 2 and take the
        // error message: the index still opens afterwards.
        let server = try FaultServer()
        server.route("/v", .status(500))
        let failing = try shell("\"$MP\" cat '\(server.url("/v"))' --cache-dir \"$D\" 2>&- >&-; echo \"rc=$?\"")
        XCTAssertTrue(failing.stdoutString.contains("rc=3"), failing.stdoutString)
        try mprobe(["cache", "ls", "--cache-dir", cacheDir])
    }
}
