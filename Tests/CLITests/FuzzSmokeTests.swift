import Foundation
import TestSupport
import XCTest

/// A short, fixed-seed run of the fuzz harness (bench/fuzz.sh) against the built binary: mutated
/// corpus files and samples through probe, thumbs, prefetch and check, locally and from nginx.
/// No run may crash, hang or blow up its memory. The long campaigns and their method are in
/// docs/reliability.md; a failure here names each case with the command line that replays it.
final class FuzzSmokeTests: XCTestCase {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    func testMutatedMediaNeverCrashesHangsOrBlowsUp() throws {
        let results = try TempDirectory(prefix: "mprobe-fuzz-smoke")
        // 24 inputs x 4 commands x local/HTTP = 192 runs: about 15 s with the debug binary on 2 cores.
        let args = [
            Self.repoRoot + "/bench/fuzz.sh", "--binary", try mprobeBinary(), "--inputs", "24", "--seed", "1",
            "--timeout", "10", "--jobs", "2", "--results", results.path,
        ]
        let run = try runProcess("/bin/bash", args, timeout: 600)
        let failures = (try? String(contentsOfFile: results.file("failures.md"), encoding: .utf8)) ?? ""
        let summary = (try? String(contentsOfFile: results.file("summary.md"), encoding: .utf8)) ?? run.stdoutString
        XCTAssertTrue(summary.contains("runs: 192"), "the harness did not run every case:\n\(summary)\n\(run.stderr)")
        XCTAssertEqual(
            run.status, 0,
            """
            bench/fuzz.sh found crashes, hangs or memory blow-ups (or could not run):
            \(summary)
            \(failures.components(separatedBy: "\n## unclear").first ?? failures)
            \(run.stderr.suffix(2000))
            """)
    }
}
