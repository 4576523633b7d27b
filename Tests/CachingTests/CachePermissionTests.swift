import Caching
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
        for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"]
            + contents(of: path + "/data").map({ "data/" + $0 })
        {
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
        XCTAssertThrowsError(
            try {
                let entry = try cache.entry(for: "http://o.test/a")
                try write(entry, Array("overwritten".utf8), at: 0)
                try entry.commit()
            }()
        ) { error in
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
        do { _ = try ByteCache(directory: path) }  // a cache, whose data/ is then replaced by a link
        try FileManager.default.removeItem(atPath: path + "/data")
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

    /// A mistyped --cache-dir naming a project or home directory: refused, and nothing in it changes
    /// (its mode, its files, the files of its own `data/`), for opening and for `cache clear` alike.
    func testADirectoryThatIsNotACacheIsLeftAlone() throws {
        let dir = try TempDirectory()
        let project = dir.file("project")
        try FileManager.default.createDirectory(atPath: project + "/data/results", withIntermediateDirectories: true)
        try Data("three years of work".utf8).write(to: URL(fileURLWithPath: project + "/data/thesis.txt"))
        try Data("1,2".utf8).write(to: URL(fileURLWithPath: project + "/data/1-1.bin"))
        chmod(project, 0o755)
        for attempt in [{ _ = try ByteCache(directory: project) }, { try ByteCache.reset(directory: project) }] {
            XCTAssertThrowsError(try attempt()) { error in
                XCTAssertTrue("\(error)".contains("is not an mprobe cache"), "\(error)")
                XCTAssertTrue("\(error)".contains("data"), "names what is there: \(error)")
            }
        }
        XCTAssertEqual(try mode(project), 0o755)
        XCTAssertEqual(contents(of: project), ["data"])
        XCTAssertEqual(contents(of: project + "/data").sorted(), ["1-1.bin", "results", "thesis.txt"])
        // Another tool's CACHEDIR.TAG does not make it ours either.
        try Data("Signature: 8a477f597d28d172789f06886806bc55\n".utf8).write(
            to: URL(fileURLWithPath: project + "/CACHEDIR.TAG"))
        XCTAssertThrowsError(try ByteCache(directory: project))
    }

    /// An empty directory becomes a cache, tagged so that the next open (even before an index
    /// exists) and backup tools know it; files in `data/` that are not data files survive a new index.
    func testAnEmptyDirectoryBecomesATaggedCacheAndOnlyDataFilesAreEverRemoved() throws {
        let dir = try TempDirectory()
        let path = dir.file("empty")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        do { _ = try ByteCache(directory: path) }
        let tag = try String(contentsOfFile: path + "/CACHEDIR.TAG", encoding: .utf8)
        XCTAssertTrue(tag.hasPrefix("Signature: 8a477f597d28d172789f06886806bc55"), tag)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: path + "/data/notes.txt"))
        for file in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] { unlink(path + "/" + file) }
        let entry = try ByteCache(directory: path).entry(for: "http://o.test/a")  // a new index, by the tag
        try write(entry, [7], at: 0)
        try entry.commit()
        try ByteCache.reset(directory: path)
        XCTAssertEqual(contents(of: path + "/data"), ["notes.txt"])
    }

    /// `~/.cache` is often a symbolic link, and so may the cache directory be: SQLite refuses a
    /// database path through a link, so every command failed with "unable to open database file".
    func testACacheReachedThroughSymbolicLinksWorks() throws {
        let dir = try TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.file("real/cache"), withIntermediateDirectories: true)
        XCTAssertEqual(symlink(dir.file("real"), dir.file("dotcache")), 0)
        XCTAssertEqual(symlink(dir.file("real/cache"), dir.file("linked")), 0)
        do {
            let entry = try ByteCache(directory: dir.file("dotcache/cache")).entry(for: "http://o.test/a")
            try write(entry, [1, 2, 3], at: 0)
            try entry.commit()
        }
        let cache = try ByteCache(directory: dir.file("linked"))
        XCTAssertEqual(try read(try cache.entry(for: "http://o.test/a"), at: 0, count: 3), [1, 2, 3])
        XCTAssertNoThrow(try cache.openDatabase(named: "jobs.sqlite"))
        XCTAssertEqual(
            contents(of: dir.file("real/cache")).filter { !$0.hasPrefix("index.sqlite-") }.sorted(),
            ["CACHEDIR.TAG", "data", "index.sqlite", "jobs.sqlite"])
    }
}
