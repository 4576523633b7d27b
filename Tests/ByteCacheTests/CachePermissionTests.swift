import ByteCache
import Foundation
import TestSupport
import XCTest

/// The cache holds redacted URLs and the bytes of possibly private media: only its owner may read
/// it, and nothing planted in it may redirect a write elsewhere.
final class CachePermissionTests: XCTestCase {
    func testDirectoryIsPrivateAndEveryFileOwnerOnlyWhateverTheUmask() throws {
        let dir = try TempDirectory()
        let path = dir.file("nested/cache")
        let previous = umask(0)
        defer { umask(previous) }
        let cache = try ByteCache(directory: path)
        let entry = try cache.entry(for: "http://o.test/a")
        try write(entry, [1, 2, 3], at: 0)
        try entry.commit()
        XCTAssertEqual(try mode(path), 0o700)
        XCTAssertEqual(try mode(path + "/data"), 0o700)
        // While a connection is open the WAL and its shared-memory file exist too.
        for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] + contents(of: path + "/data").map({ "data/" + $0 }) {
            XCTAssertEqual(try mode(path + "/" + name), 0o600, name)
        }
    }

    func testLooseModesOfAnExistingCacheAreTightened() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        do {
            let entry = try ByteCache(directory: path).entry(for: "http://o.test/a")
            try write(entry, [1], at: 0)
            try entry.commit()
        }
        chmod(path, 0o755)
        chmod(path + "/data", 0o755)
        chmod(path + "/index.sqlite", 0o644)
        for name in contents(of: path + "/data") { chmod(path + "/data/" + name, 0o644) }
        let entry = try ByteCache(directory: path).entry(for: "http://o.test/a")
        XCTAssertEqual(try read(entry, at: 0, count: 1), [1])
        XCTAssertEqual(try mode(path), 0o700)
        XCTAssertEqual(try mode(path + "/data"), 0o700)
        XCTAssertEqual(try mode(path + "/index.sqlite"), 0o600)
        for name in contents(of: path + "/data") { XCTAssertEqual(try mode(path + "/data/" + name), 0o600) }
    }

    func testPlantedSymlinkToADataFileIsNeverWrittenThrough() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        _ = try ByteCache(directory: path)
        let victim = dir.file("victim")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        // The first resource of a fresh index is row 1, generation 1.
        XCTAssertEqual(symlink(victim, path + "/data/1-1.bin"), 0)
        let cache = try ByteCache(directory: path)
        XCTAssertThrowsError(try {
            let entry = try cache.entry(for: "http://o.test/a")
            try write(entry, Array("overwritten".utf8), at: 0)
            try entry.commit()
        }()) { error in
            XCTAssertTrue(error is CacheError, "\(error)")
            XCTAssertTrue("\(error)".contains(path + "/data/1-1.bin"), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "precious")
    }

    func testSymlinkedDataDirectoryIsRefused() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        let elsewhere = dir.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        XCTAssertEqual(symlink(elsewhere, path + "/data"), 0)
        XCTAssertThrowsError(try ByteCache(directory: path).entry(for: "http://o.test/a")) { error in
            XCTAssertTrue(error is CacheError, "\(error)")
            XCTAssertTrue("\(error)".contains(path + "/data"), "\(error)")
        }
        XCTAssertEqual(contents(of: elsewhere), [])
    }

    func testDirectoryOwnedByAnotherUserIsRefused() throws {
        guard geteuid() == 0 else { return XCTFail("needs root to give a directory away") }
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        XCTAssertEqual(chown(path, 65534, 65534), 0)
        XCTAssertThrowsError(try ByteCache(directory: path)) { error in
            XCTAssertTrue(error is CacheError, "\(error)")
            XCTAssertTrue("\(error)".contains(path), "\(error)")
        }
        XCTAssertEqual(contents(of: path), [], "nothing is created in someone else's directory")
    }

    func testRegularFileInPlaceOfTheDirectoryIsAClearError() throws {
        let dir = try TempDirectory()
        let path = dir.file("cache")
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: path))
        for target in [path, path + "/below"] {
            XCTAssertThrowsError(try ByteCache(directory: target)) { error in
                XCTAssertTrue(error is CacheError, "\(error)")
                XCTAssertTrue("\(error)".contains(path), "\(error)")
                XCTAssertFalse("\(error)".contains("NSCocoaErrorDomain"), "\(error)")
            }
        }
    }
}
