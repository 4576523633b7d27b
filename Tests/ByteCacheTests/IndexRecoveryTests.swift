import ByteCache
import Foundation
import TestSupport
import XCTest

/// A broken index never locks the user out.
final class IndexRecoveryTests: XCTestCase {
    /// A cache with `count` resources of 1000 bytes each, closed again.
    private func populate(_ path: String, count: Int) throws {
        let cache = try ByteCache(directory: path)
        for i in 0..<count {
            let entry = try cache.entry(for: "http://o.test/\(i)")
            try entry.applyValidators(ResourceValidators(size: 1000, etag: "\"\(i)\""), contentType: "video/mp4")
            try write(entry, [UInt8](repeating: UInt8(i & 0xff), count: 500), at: 0)
            try write(entry, [UInt8](repeating: 1, count: 100), at: 800)
            try entry.commit()
        }
    }

    /// Opening writes nothing when the schema is there, so another process's long write
    /// transaction (or a full disk) does not stop reads of what is cached.
    func testOpeningAndReadingDoNotWaitForAnotherProcessesWriteLock() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try populate(path, count: 1)
        let holder = try WriteLockHolder(database: path + "/index.sqlite", seconds: 4, scratch: dir)
        defer { holder.wait() }
        let started = Date()
        let cache = try ByteCache(directory: path)
        let entry = try cache.entry(for: "http://o.test/0")
        XCTAssertEqual(try read(entry, at: 0, count: 600), [UInt8](repeating: 0, count: 500))
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "opening waited for the write lock")
    }
}
