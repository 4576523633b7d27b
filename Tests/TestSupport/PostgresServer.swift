import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL (Debian's `postgresql`) in a temporary directory, on 127.0.0.1 and a free
/// port, with trust authentication for the user `mprobe`: made by `initdb`, run in the foreground
/// by the test, removed with it. As root (CI), the server runs as the `postgres` user, since
/// PostgreSQL refuses to run as root.
public final class PostgresServer: @unchecked Sendable {
    public let port: Int
    private let directory: TempDirectory
    private let bin: String
    private let lock = NSLock()
    private var process: Process?  // guarded by lock
    private var databases = 0  // guarded by lock

    public init() throws {
        bin = try PostgresServer.binDirectory()
        directory = try TempDirectory(prefix: "mprobe-postgres")
        // The server's user must reach its data directory inside ours.
        chmod(directory.path, 0o755)
        let data = directory.file("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: false)
        try PostgresServer.handToServerUser(data)
        let initdb = try runProcess(
            "/usr/bin/env",
            PostgresServer.asServerUser + [
                bin + "/initdb", "-D", data, "-U", "mprobe", "-A", "trust", "-E", "UTF8", "--no-sync",
            ], timeout: 120)
        guard initdb.status == 0 else {
            throw TestSupportError.processFailed(command: "initdb", status: initdb.status, stderr: initdb.stderr)
        }
        port = try LoopbackSocket.freePort()
        try start()
    }

    deinit { stop() }

    /// `postgres://mprobe@127.0.0.1:PORT/NAME`.
    public func url(database: String) -> String { "postgres://mprobe@127.0.0.1:\(port)/\(database)" }

    /// A new, empty database; returns its URL.
    public func newDatabase() throws -> String {
        let name = lock.withLock {
            databases += 1
            return "test\(databases)"
        }
        try sql("CREATE DATABASE \(name)", database: "postgres")
        return url(database: name)
    }

    /// Runs `statement` with psql; returns its output, unaligned, tuples only.
    @discardableResult
    public func sql(_ statement: String, database: String) throws -> String {
        let result = try runProcess(
            bin + "/psql",
            ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(database: database), "-c", statement],
            timeout: 60)
        guard result.status == 0 else {
            throw TestSupportError.processFailed(
                command: "psql -c \(statement)", status: result.status, stderr: result.stderr)
        }
        return result.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts the server and returns once it answers.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            PostgresServer.asServerUser + [
                bin + "/postgres", "-D", directory.file("data"), "-h", "127.0.0.1", "-p", String(port),
                "-k", "", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                "-c", "max_connections=200",
            ]
        let log = directory.file("postgres.log")
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        lock.withLock { self.process = process }
        let ready = waitUntil(seconds: 30) {
            (try? runProcess(bin + "/pg_isready", ["-q", "-h", "127.0.0.1", "-p", String(port)], timeout: 10).status)
                == 0
        }
        guard ready, process.isRunning else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw TestSupportError.serverFailedToStart("PostgreSQL did not start: \(text.suffix(2000))")
        }
    }

    /// Stops the server (fast shutdown: open connections are cut, as in a restart) and waits.
    public func stop() {
        guard let process = lock.withLock({ self.process.take() }) else { return }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
    }

    /// Stops the server and starts it again on the same port and data.
    public func restart() throws {
        stop()
        try start()
    }

    private static func binDirectory() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init)
            .sorted()
        guard let newest = versions.last, FileManager.default.isExecutableFile(atPath: "\(root)/\(newest)/bin/initdb")
        else {
            throw TestSupportError.missingExecutable(
                path: root + "/*/bin/initdb", hint: "install Debian's postgresql (apt-get install postgresql)")
        }
        return "\(root)/\(newest)/bin"
    }

    /// Run as root, commands are run as `postgres` (setpriv execs them, so a signal reaches the server).
    private static var asServerUser: [String] {
        getuid() == 0 ? ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] : []
    }

    private static func handToServerUser(_ path: String) throws {
        guard getuid() == 0 else { return }
        guard let user = getpwnam("postgres") else {
            throw TestSupportError.missingExecutable(
                path: "user postgres", hint: "install Debian's postgresql, which creates it")
        }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw TestSupportError.system(call: "chown", errno: errno)
        }
    }
}
