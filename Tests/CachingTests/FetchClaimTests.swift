import Caching
import Foundation
import Synchronization
import TestSupport
import XCTest

/// Cross-process fetch claims. OFD locks conflict between two open file descriptions even in
/// one process, so two caches on one directory stand for two processes; one test uses a real
/// second process too.
final class FetchClaimTests: XCTestCase {
    private let url = "http://o.test/shared.mp4"

    /// Two entries for one resource, each through its own `ByteCache` (own descriptors).
    private func twoEntries(_ dir: TempDirectory) throws -> (CacheEntry, CacheEntry) {
        let path = dir.file("cache")
        let first = try ByteCache(directory: path).entry(for: url)
        try first.applyValidators(ResourceValidators(size: 10_000, etag: "\"v\""), contentType: nil)
        return (first, try ByteCache(directory: path).entry(for: url))
    }

    private func claim(
        _ entry: CacheEntry, _ range: Range<Int64>, cancelled: @escaping () -> Bool = { false }
    ) throws -> FetchClaim? {
        try entry.claimFetch(range, isCancelled: cancelled)
    }

    func testAClaimStopsWhereAnotherHoldersClaimBegins() throws {
        let dir = try TempDirectory()
        let (a, b) = try twoEntries(dir)
        let held = try XCTUnwrap(try claim(a, 1000..<2000))
        XCTAssertEqual(held.range, 1000..<2000)
        XCTAssertEqual(try claim(b, 0..<5000)?.range, 0..<1000, "trimmed to stop where the other claim begins")
        XCTAssertEqual(try claim(b, 2000..<3000)?.range, 2000..<3000, "bytes after it are free")
        // Claims of one entry are separate descriptions too: they conflict with each other.
        let first = try XCTUnwrap(try claim(b, 5000..<6000))
        XCTAssertEqual(try claim(b, 4000..<7000)?.range, 4000..<5000)
        first.release()
        first.release()  // twice is harmless
        XCTAssertEqual(try claim(b, 4000..<7000)?.range, 4000..<7000)
    }

    func testAClaimOnTheFirstByteIsWaitedForThenTheCallerLooksAgain() throws {
        let dir = try TempDirectory()
        let (a, b) = try twoEntries(dir)
        let held = try XCTUnwrap(try claim(a, 0..<1000))
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { held.release() }
        let started = Date()
        XCTAssertNil(try claim(b, 500..<2000), "waited, then nil: re-read the index")
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.25)
        XCTAssertEqual(try claim(b, 500..<2000)?.range, 500..<2000, "released: free now")
    }

    func testDroppingAClaimReleasesIt() throws {
        let dir = try TempDirectory()
        let (a, b) = try twoEntries(dir)
        do {
            let held = try claim(a, 0..<1000)
            XCTAssertEqual(held?.range, 0..<1000)
            XCTAssertThrowsError(try claim(b, 0..<2000, cancelled: { true }), "held: b must wait (and is told to stop)")
        }
        XCTAssertEqual(try claim(b, 0..<2000)?.range, 0..<2000, "a's claim went with its object")
    }

    func testWaitingHonoursCancellation() throws {
        let dir = try TempDirectory()
        let (a, b) = try twoEntries(dir)
        let held = try XCTUnwrap(try claim(a, 0..<1000))
        let started = Date()
        XCTAssertThrowsError(try claim(b, 0..<1000, cancelled: { Date().timeIntervalSince(started) > 0.1 })) { error in
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
        withExtendedLifetime(held) {}
    }

    /// A fetch that ends hands its claim to the store: the bytes are committed soon after without
    /// anyone asking, and only then is the claim let go, so another process that waited for it
    /// finds the bytes in the index instead of fetching them again.
    func testAClaimHandedToTheStoreIsReleasedOnlyOnceItsBytesAreRecorded() throws {
        let dir = try TempDirectory()
        let (a, b) = try twoEntries(dir)
        let held = try XCTUnwrap(try claim(a, 0..<4000))
        let bytes = randomBytes(4000, seed: 5)
        try write(a, bytes, at: 0)
        a.releaseAfterCommit(held)
        XCTAssertNil(try claim(b, 0..<4000), "b waits for the claim, then looks again")
        try b.refresh()
        XCTAssertEqual(b.committedRanges.ranges, [0..<4000], "recorded before the claim was let go")
        XCTAssertEqual(try read(b, at: 0, count: 4000), bytes)
        XCTAssertEqual(a.committedRanges.ranges, [0..<4000])
    }

    /// Bytes written and never committed by their writer are committed by the store itself.
    func testWrittenBytesAreCommittedWithoutAsking() throws {
        let dir = try TempDirectory()
        let (a, _) = try twoEntries(dir)
        try write(a, randomBytes(1000, seed: 6), at: 500)
        let other = try ByteCache(directory: dir.file("cache"))
        XCTAssertTrue(
            waitUntil { (try? other.presentRanges(for: self.url).ranges) == [500..<1500] },
            "never recorded in the index")
        withExtendedLifetime(a) {}
    }

    func testMemoryStoreClaimsEverythingAtOnce() throws {
        let store = MemoryRangeStore()
        XCTAssertEqual(try store.claimFetch(0..<100, isCancelled: { false })?.range, 0..<100)
        XCTAssertEqual(try store.claimFetch(0..<100, isCancelled: { false })?.range, 0..<100)
    }

    // MARK: Another process

    /// A real `mprobe cat` holds the claim while its origin stalls; this process waits for it, and
    /// the kernel releases the claim when that process is killed.
    func testAClaimOfAnotherProcessIsWaitedForAndDiesWithIt() throws {
        let dir = try TempDirectory()
        let server = try FaultServer()
        server.route("/slow", .stall(afterBytes: 0, seconds: 60, then: .serve(body: randomBytes(10_000, seed: 3))))
        let url = server.url("/slow")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: try mprobeBinary())
        child.arguments = ["cat", url, "--cache-dir", dir.file("cache"), "--timeout", "120"]
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
        // The request reaches the origin only after its range was claimed.
        let deadline = Date().addingTimeInterval(30)
        while server.requests.isEmpty && child.isRunning && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(server.requests.isEmpty, "the other process never asked the origin")
        let entry = try ByteCache(directory: dir.file("cache")).entry(for: url)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { kill(child.processIdentifier, SIGKILL) }
        let started = Date()
        XCTAssertNil(try claim(entry, 100..<5000), "waited for the other process")
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.4)
        child.waitUntilExit()
        XCTAssertEqual(try claim(entry, 100..<5000)?.range, 100..<5000, "its death released the claim")
    }
}
