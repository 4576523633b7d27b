import Caching
import Foundation
import Synchronization
import TestSupport
import XCTest

/// `fdatasync` and index transactions run outside the entry's lock: a reader of present bytes
/// never waits for a commit that waits for another process.
final class EntryLockingTests: XCTestCase {
    func testReadsOfPresentBytesDoNotStallBehindACommitWaitingForAnotherProcess() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        let cache = try ByteCache(directory: path)
        let entry = try cache.entry(for: "http://o.test/a")
        let data = randomBytes(1 << 20, seed: 9)
        try write(entry, data, at: 0)
        try entry.commit()
        try write(entry, [UInt8](repeating: 4, count: 65_536), at: 1 << 20)  // pending, to be committed below

        let holder = try WriteLockHolder(database: path + "/index.sqlite", seconds: 2, scratch: dir)
        let committed = DispatchSemaphore(value: 0)
        let commitError = Mutex<String?>(nil)
        Thread {
            do { try entry.commit() } catch { commitError.withLock { $0 = "\(error)" } }
            committed.signal()
        }.start()
        // The commit has taken the pending bytes; it syncs them, then waits for SQLite's write lock.
        XCTAssertTrue(waitUntil { !entry.committingRanges.isEmpty }, "the commit never started")

        var longest = 0.0
        let until = Date().addingTimeInterval(1.2)
        while Date() < until {
            let started = Date()
            let bytes = try read(entry, at: 4096, count: 32_768)
            longest = max(longest, Date().timeIntervalSince(started))
            XCTAssertTrue(bytes == Array(data[4096..<4096 + 32_768]))
            // Bytes written but not yet committed stay readable meanwhile.
            XCTAssertEqual(try read(entry, at: 1 << 20, count: 10), [UInt8](repeating: 4, count: 10))
        }
        XCTAssertLessThan(longest, 0.3, "a read waited \(longest) s for the entry's lock")

        holder.wait()
        XCTAssertEqual(committed.wait(timeout: .now() + 30), .success)
        XCTAssertNil(commitError.withLock { $0 })
        XCTAssertEqual(try cache.presentRanges(for: "http://o.test/a").ranges, [0..<(1 << 20) + 65_536])
        XCTAssertEqual(entry.committedRanges.ranges, [0..<(1 << 20) + 65_536])
    }

    /// A commit that finds nothing pending while another is under way waits for it: its caller
    /// (a prefetch about to end the process) counts on every byte stored before the call being
    /// recorded. Before, it returned at once, and a process that then exited lost the bytes of the
    /// commit under way (a prefetch said a window was cached; `check --offline` found 2 MB missing).
    func testACommitWaitsForTheCommitUnderWay() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        let cache = try ByteCache(directory: path)
        let entry = try cache.entry(for: "http://o.test/a")
        try write(entry, [UInt8](repeating: 7, count: 65_536), at: 0)

        let holder = try WriteLockHolder(database: path + "/index.sqlite", seconds: 1, scratch: dir)
        defer { holder.wait() }
        Thread { try? entry.commit() }.start()
        // That commit has taken the pending bytes and waits for SQLite's write lock.
        XCTAssertTrue(waitUntil { !entry.committingRanges.isEmpty }, "the commit never started")
        try entry.commit()
        XCTAssertEqual(
            try ByteCache(directory: path).presentRanges(for: "http://o.test/a").ranges, [0..<65_536],
            "recorded when the second commit returned")
    }
}
