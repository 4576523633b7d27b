import Caching
import Foundation
import TestSupport
import XCTest

/// The cache's promises across processes: SIGKILL never leaves garbage claimed, and several
/// processes filling one resource leave it consistent.
final class CacheConcurrencyTests: CLITestCase {
    /// Every range the index claims matches the origin byte for byte.
    func assertCachedBytesMatch(
        _ url: String, _ data: [UInt8], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let cache = try ByteCache(directory: cacheDir)
        let entry = try cache.entry(for: url)
        let ranges = entry.committedRanges
        for (a, b) in zip(ranges.ranges, ranges.ranges.dropFirst()) {
            XCTAssertLessThan(a.upperBound, b.lowerBound, "ranges are sorted and disjoint", file: file, line: line)
        }
        XCTAssertEqual(try cache.resource(for: url)?.storedBytes, ranges.byteCount, file: file, line: line)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for range in ranges.ranges {
            var offset = range.lowerBound
            while offset < range.upperBound {
                let want = Int(min(Int64(buffer.count), range.upperBound - offset))
                let n = try buffer.withUnsafeMutableBytes {
                    try entry.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: offset).count
                }
                XCTAssertEqual(n, want, "claimed bytes are readable", file: file, line: line)
                if buffer[0..<n] != data[Int(offset)..<Int(offset) + n] {
                    return XCTFail("cached bytes at \(offset) differ from the origin", file: file, line: line)
                }
                offset += Int64(n)
            }
        }
    }

    func testSIGKILLAtRandomMomentsNeverLeavesGarbageInTheIndex() throws {
        let data = randomBytes(40_000_000, seed: 77)
        _ = try writeFile("www/k.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/k.bin")
        let binary = try mprobeBinary()
        var rng = SystemRandomNumberGenerator()
        var killed = 0
        for round in 0..<25 {
            let start = Int64.random(in: 0..<30_000_000, using: &rng)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["cat", url, "--range", "\(start)-\(start + 10_000_000)", "--cache-dir", cacheDir]
            process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            // A cat of 10 MB from loopback takes 20–60 ms after a 10 ms start; most kills land inside it.
            usleep(UInt32.random(in: 1_000...40_000, using: &rng))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            }
            process.waitUntilExit()
            if round % 5 == 4 { try assertCachedBytesMatch(url, data) }
        }
        XCTAssertGreaterThan(killed, 5, "most runs must actually be killed mid-way (\(killed) of 25 were)")
        try assertCachedBytesMatch(url, data)
        // And the cache still works for a full read afterwards.
        XCTAssertTrue(try mprobe(["cat", url, "--cache-dir", cacheDir]).stdout == data)
    }

    func testSeveralProcessesFillingOverlappingRangesStayConsistent() throws {
        let data = randomBytes(30_000_000, seed: 78)
        _ = try writeFile("www/c.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/c.bin")
        let binary = try mprobeBinary()
        let ranges: [ClosedRange<Int>] = [
            0...19_999_999, 5_000_000...24_999_999, 10_000_000...29_999_999, 2_000_000...27_999_999,
        ]
        let outputs = dir.file("out")
        try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: true)
        var processes: [Process] = []
        for (i, r) in ranges.enumerated() {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["cat", url, "--range", "\(r.lowerBound)-\(r.upperBound)", "--cache-dir", cacheDir]
            XCTAssertTrue(FileManager.default.createFile(atPath: outputs + "/\(i)", contents: nil))
            process.standardOutput = FileHandle(forWritingAtPath: outputs + "/\(i)")
            try process.run()
            processes.append(process)
        }
        for (i, process) in processes.enumerated() {
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0)
            let out = try Data(contentsOf: URL(fileURLWithPath: outputs + "/\(i)"))
            XCTAssertTrue(Array(out) == Array(data[ranges[i]]), "process \(i) got the right bytes")
        }
        try assertCachedBytesMatch(url, data)
        XCTAssertEqual(try cachedRanges(url).map { [$0.0, $0.1] }, [[0, 30_000_000]])
    }

    func testProcessesReadingOneUncachedURLFetchItOnce() throws {
        let data = randomBytes(100_000_000, seed: 79)
        _ = try writeFile("www/s.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let url = nginx.url("/s.bin")
        let binary = try mprobeBinary()
        var processes: [Process] = []
        for i in 0..<4 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["cat", url, "--cache-dir", cacheDir]
            XCTAssertTrue(FileManager.default.createFile(atPath: dir.file("out-\(i)"), contents: nil))
            process.standardOutput = FileHandle(forWritingAtPath: dir.file("out-\(i)"))
            try process.run()
            processes.append(process)
        }
        for (i, process) in processes.enumerated() {
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0)
            XCTAssertTrue(
                Array(try Data(contentsOf: URL(fileURLWithPath: dir.file("out-\(i)")))) == data, "process \(i)")
        }
        // Before, each process fetched what it did not find cached yet: 4 processes, 172 MiB.
        let sent = try nginx.accessLog().reduce(Int64(0)) { $0 + $1.bodyBytesSent }
        XCTAssertLessThanOrEqual(
            sent, Int64(Double(data.count) * 1.05), "a range in flight in one process is awaited by the others")
    }
}
