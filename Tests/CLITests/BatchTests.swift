import Foundation
import TestSupport
import XCTest

/// Batches read their input list as they go and hold only the results waiting for their turn.
final class BatchTests: CLITestCase {
    func shell(_ script: String) throws -> ProcessResult {
        try runProcess("bash", ["-c", script], environment: ["MP": try mprobeBinary(), "D": cacheDir], timeout: 600)
    }

    func testAnInputListFromAProcessSubstitutionWorksLikeStdin() throws {
        let sample = samplePath("faststart.mp4"), other = samplePath("sample.mp3")
        let result = try shell("\"$MP\" probe --json -i <(printf '%s\\n' '# two inputs' '\(sample)' '' '\(other)')")
        XCTAssertEqual(result.status, 0, result.stderr)
        let urls = result.stdoutString.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.compactMap { $0["url"] as? String }
        XCTAssertEqual(urls, [sample, other], "in input order, comments and blank lines skipped")
        let missing = try shell("\"$MP\" probe -i /nonexistent/list")
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.stderr.contains("/nonexistent/list"), missing.stderr)
        XCTAssertEqual(try shell("\"$MP\" probe -i /dev/null").status, 2, "an empty list is a usage error")
    }

    /// Peak RSS in KiB of probing `count` local inputs (JSON to /dev/null).
    func peakKiB(probes count: Int) throws -> Int {
        let list = dir.file("list-\(count).txt")
        try Array(repeating: samplePath("faststart.mp4"), count: count).joined(separator: "\n")
            .write(toFile: list, atomically: true, encoding: .utf8)
        let result = try shell("/usr/bin/time -f '%M' \"$MP\" probe --fast --json -j 4 -i '\(list)' > /dev/null")
        XCTAssertEqual(result.status, 0, result.stderr)
        return try XCTUnwrap(Int(result.stderr.split(separator: "\n").last ?? ""), result.stderr)
    }

    func testMemoryStaysFlatInTheNumberOfInputs() throws {
        let few = try peakKiB(probes: 200)
        let many = try peakKiB(probes: 10_000)
        // Before, every result was kept until the end: ~2 KiB per input, ~20 MiB more here.
        XCTAssertLessThan(many - few, 4 << 10, "peak RSS grew from \(few) KiB to \(many) KiB")
    }
}
