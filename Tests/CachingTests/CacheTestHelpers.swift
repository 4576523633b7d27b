import Caching
import Foundation
import TestSupport
import XCTest

/// Writes `bytes` at `offset` in the entry's current generation; the write must be accepted.
func write(
    _ entry: CacheEntry, _ bytes: [UInt8], at offset: Int64, file: StaticString = #filePath, line: UInt = #line
) throws {
    let version = entry.generation
    XCTAssertTrue(
        try bytes.withUnsafeBytes { try entry.write($0, at: offset, generation: version) }, file: file, line: line)
}

/// What a read of up to `count` bytes at `offset` returns.
func read(_ entry: CacheEntry, at offset: Int64, count: Int) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    let n = try out.withUnsafeMutableBytes { try entry.read(into: $0, at: offset).count }
    return Array(out[0..<n])
}

/// Runs SQL with Debian's `sqlite3` shell, as a person repairing (or breaking) a cache would.
@discardableResult
func sqlite3(_ database: String, _ sql: String) throws -> String {
    let result = try runProcess("sqlite3", ["-batch", database], stdin: Array(sql.utf8), timeout: 30)
    guard result.status == 0, result.stderr.isEmpty else {
        throw TestSupportError.processFailed(
            command: "sqlite3 \(database)", status: result.status, stderr: result.stderr)
    }
    return result.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// A `sqlite3` process holding the write lock of `database` (`BEGIN IMMEDIATE`) for `seconds`.
/// Returns once the lock is held; `wait()` returns when it has been released.
final class WriteLockHolder {
    private let process = Process()

    init(database: String, seconds: Double, scratch: TempDirectory) throws {
        let marker = scratch.file("locked-\(UUID().uuidString)")
        let script =
            "BEGIN IMMEDIATE;\nDELETE FROM stats WHERE 0;\n.shell touch \(marker)\n.shell sleep \(seconds)\nCOMMIT;\n"
        let scriptPath = scratch.file("hold-\(UUID().uuidString).sql")
        try Data(script.utf8).write(to: URL(fileURLWithPath: scriptPath))
        guard let sqlite = findExecutable("sqlite3") else {
            throw TestSupportError.missingExecutable(path: "sqlite3", hint: "apt-get install sqlite3 (scripts/deps.sh)")
        }
        process.executableURL = URL(fileURLWithPath: sqlite)
        process.arguments = ["-batch", "-init", scriptPath, database, ".quit"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: marker) {
            guard process.isRunning, Date() < deadline else {
                throw TestSupportError.processFailed(
                    command: "sqlite3 BEGIN IMMEDIATE", status: process.terminationStatus,
                    stderr: "the write lock was never taken")
            }
            usleep(5_000)
        }
    }

    func wait() { process.waitUntilExit() }
}

/// The permission bits of `path` (not following a final symlink).
func mode(_ path: String) throws -> mode_t {
    var st = stat()
    guard lstat(path, &st) == 0 else { throw TestSupportError.system(call: "lstat \(path)", errno: errno) }
    return st.st_mode & 0o7777
}

func contents(of directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}
